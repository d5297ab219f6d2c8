/**
 * The CSI side of VolumeScope: the gRPC client, the driver registry (with `--csi-driver` parsing
 * and the plugins_registry watcher) and the `kubernetes.io/csi` volume plugin. See README.md.
 */
export { CsiClient, PluginRegistrationClient, DEFAULT_CSI_TIMEOUT_MS, DEADLINE_EXCEEDED_DETAILS, unixEndpoint } from './csi-client.ts';
export type { CallOptions } from './csi-client.ts';
export {
  classifyCsiError,
  CsiRpcError,
  CsiTransportError,
  goCodeName,
  isCsiRpcError,
  isCsiTransportError,
  isFinalCsiError,
  NON_FINAL_CODES,
} from './csi-errors.ts';
export {
  CsiDriverNotRegisteredError,
  CsiDriverRegistry,
  InvalidCsiDriverFlagError,
  isCsiDriverNotRegisteredError,
  isInvalidCsiDriverFlagError,
  parseCsiDriverFlag,
} from './csi-driver-registry.ts';
export type { CsiDriverDetails, CsiDriverRegistryOptions, CsiDriverSource, CsiDriverStatus } from './csi-driver-registry.ts';
export type { CsiNodeDriverInfo, CsiNodeInfoManager } from './csi-node-info.ts';
export { CsiPlugin, VolumeAttachmentNotAttachedError, isVolumeAttachmentNotAttachedError } from './csi-plugin.ts';
export type { CsiPluginOptions, VolumeAttachmentReader, VolumeAttachmentStatus } from './csi-plugin.ts';
export { PLUGINS_REGISTRATION_DIR_NAME, PluginWatcher, pluginsRegistrationDir } from './plugin-watcher.ts';
export type { PluginSocketStatus, PluginWatcherOptions } from './plugin-watcher.ts';
export { redactSecrets, scrubSecretValues, STRIPPED } from './redact.ts';
export { attachmentName, CSI_PLUGIN_NAME, deviceMountPath, makeVolumeHandle, podVolumeDir, publishTargetPath } from './vol-data.ts';
export { CSI_OPERATION_BUCKETS_SECONDS, CsiCallStats } from './csi-call-stats.ts';
export type { CsiCallView, CsiDriverCallsView, CsiMethodStatsView, CsiProbeView } from './csi-call-stats.ts';
export type { CsiCallRecord } from './csi-driver-registry.ts';
export type { CsiCallSample } from './csi-client.ts';
export { UNKNOWN_NON_GRPC } from './csi-client.ts';
