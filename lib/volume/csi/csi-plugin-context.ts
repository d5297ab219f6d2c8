/**
 * What the CSI plugin's attacher, mounter and expander share: the injected dependencies and the
 * per-plugin state (standalone attachments and their publish contexts). {@link CsiPlugin}
 * implements it; the other parts depend only on this interface.
 */
import type { Clock } from '../../clock/clock.ts';
import type { Mounter as HostMounter } from '../../mount-utils/mounter.ts';
import type { CSIDriver } from '../k8s-types.ts';
import type { Logger } from '../logger.ts';
import type { VolumeObjectGetter } from '../object-getter.ts';
import type { NodeName } from '../types.ts';
import type { CallOptions, CsiClient } from './csi-client.ts';
import type { CsiDriverRegistry } from './csi-driver-registry.ts';
import type { NodeCapability, StringMap } from './csi-types.ts';

/** A volume this agent attached itself (standalone ControllerPublishVolume). */
export interface StandaloneAttachment {
  driverName: string;
  volumeHandle: string;
  /** ControllerPublishVolume `publish_context`, handed to NodeStage/NodePublish. */
  publishContext: StringMap;
  /** The PV's controllerPublishSecretRef, reused for ControllerUnpublishVolume. */
  controllerPublishSecretRef?: { name: string; namespace?: string };
}

export interface CsiPluginContext {
  readonly objects: VolumeObjectGetter;
  readonly registry: CsiDriverRegistry;
  readonly nodeName: NodeName;
  readonly rootDir: string;
  readonly mounter: HostMounter;
  readonly clock: Clock;
  readonly log: Logger;
  /** Options for every CSI call (the plugin's deadline, when it has its own). */
  callOptions(): CallOptions;
  /**
   * The client of a registered driver; throws a TransientOperationFailure
   * `kubernetes.io/csi: <what>: driver name X not found in the list of registered CSI drivers`.
   */
  client(driverName: string, what: string): CsiClient;
  /** The CSIDriver object, or undefined (optional in Kubernetes). */
  csiDriver(driverName: string): CSIDriver | undefined;
  /** `skipAttach`: the CSIDriver object says `attachRequired: false` (no object: attach). */
  skipAttach(driverName: string): boolean;
  /** NodeGetCapabilities now (as the kubelet before every stage/publish/expand), cache updated. */
  nodeCapabilities(driverName: string): Promise<ReadonlySet<NodeCapability>>;
  /**
   * The publish context of an attached volume: from memory, else from the staging
   * vol_data.json (after a restart), else `{}` when the driver needs no controller publish.
   * Null when none is known: the volume is not attached by this agent.
   */
  publishContextFor(driverName: string, volumeHandle: string): Promise<StringMap | null>;
  rememberAttachment(attachment: StandaloneAttachment): void;
  forgetAttachment(driverName: string, volumeHandle: string): void;
  attachment(driverName: string, volumeHandle: string): StandaloneAttachment | undefined;
}
