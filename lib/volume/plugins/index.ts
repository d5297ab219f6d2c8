/**
 * VolumeScope's in-tree volume plugins, with the kubelet's plugin names:
 *
 * | plugin | volumes | on disk |
 * |---|---|---|
 * | `kubernetes.io/empty-dir` | `emptyDir` | directory; `medium: Memory` → tmpfs |
 * | `kubernetes.io/host-path` | `hostPath` (inline or PV) | type check only; an empty record dir |
 * | `kubernetes.io/configmap` | `configMap` | atomic writer in a directory |
 * | `kubernetes.io/secret` | `secret` | atomic writer on a tmpfs |
 * | `kubernetes.io/projected` | `projected` | atomic writer on a tmpfs |
 * | `kubernetes.io/downward-api` | `downwardAPI` | atomic writer on a tmpfs |
 * | `kubernetes.io/local-volume` | PV `local` | bind mount |
 *
 * All of them build the volume dir as `<root>/pods/<uid>/volumes/<escaped plugin>/<spec name>`,
 * make SetUp idempotent, remove only what they created (through `safeRemove`), and rebuild a
 * spec from disk for reconstruction.
 */
import type { VolumePlugin } from '../plugins.ts';
import { ConfigMapPlugin } from './configmap/configmap.ts';
import { DownwardAPIPlugin } from './downward-api/downward-api.ts';
import { EmptyDirPlugin } from './empty-dir/empty-dir.ts';
import { HostPathPlugin, type HostPathPluginDeps } from './host-path/host-path.ts';
import { LocalVolumePlugin } from './local-volume/local-volume.ts';
import { ProjectedPlugin } from './projected/projected.ts';
import { SecretPlugin } from './secret/secret.ts';

export { CONFIGMAP_PLUGIN_NAME, ConfigMapPlugin, makeConfigMapPayload } from './configmap/configmap.ts';
export { collectDownwardAPIData, DOWNWARD_API_PLUGIN_NAME, DownwardAPIPlugin } from './downward-api/downward-api.ts';
export { EMPTY_DIR_PLUGIN_NAME, EmptyDirMounter, EmptyDirPlugin } from './empty-dir/empty-dir.ts';
export { checkHostPathType, HOST_PATH_PLUGIN_NAME, HostPathPlugin, HostPathTypeCheckError, isHostPathTypeCheckError } from './host-path/host-path.ts';
export type { HostPathPluginDeps, HostPathType } from './host-path/host-path.ts';
export { nodeHostUtil } from './host-path/file-type.ts';
export type { FileType, HostUtil } from './host-path/file-type.ts';
export { isLocalVolumePathError, LOCAL_VOLUME_PLUGIN_NAME, LocalVolumePathError, LocalVolumePlugin } from './local-volume/local-volume.ts';
export { PROJECTED_PLUGIN_NAME, ProjectedPlugin, SERVICE_ACCOUNT_TOKEN_PLACEHOLDER } from './projected/projected.ts';
export { makeSecretPayload, SECRET_PLUGIN_NAME, SecretPlugin } from './secret/secret.ts';
export { AtomicWriter, DATA_DIR_NAME, isAtomicWriterConflictError, isInvalidPayloadPathError } from './util/atomic-writer.ts';
export type { FileProjection, Payload } from './util/atomic-writer.ts';
export {
  AggregateVolumeError,
  isAggregateVolumeError,
  isNonExistentKeyError,
  isObjectNotFoundError,
  isPluginNotInitializedError,
  isTearDownRefusedError,
  NonExistentKeyError,
  ObjectNotFoundError,
  TearDownRefusedError,
} from './util/errors.ts';
export type { VolumePluginDeps } from './util/plugin-deps.ts';

/**
 * Every in-tree plugin, built from `deps` (`ProbeVolumePlugins` of each kubelet package). Hand
 * the list to `VolumePluginMgr`, which calls `init(host)` on each.
 */
export function probeVolumePlugins(deps: HostPathPluginDeps): VolumePlugin[] {
  return [
    new EmptyDirPlugin(deps),
    new HostPathPlugin(deps),
    new ConfigMapPlugin(deps),
    new SecretPlugin(deps),
    new ProjectedPlugin(deps),
    new DownwardAPIPlugin(deps),
    new LocalVolumePlugin(deps),
  ];
}
