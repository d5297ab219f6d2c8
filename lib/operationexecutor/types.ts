/**
 * Records exchanged between the volume manager's caches, its reconciler and the operation
 * executor (kubelet `operationexecutor` types). They are plain data: the executor never holds a
 * cache entry by reference.
 */
import type { Pod } from '../volume/k8s-types.ts';
import type { BlockVolumeMapper, Mounter } from '../volume/plugins.ts';
import type { Spec } from '../volume/spec.ts';
import type { NodeName, PluginName, PodUID, UniquePodName, UniqueVolumeName } from '../volume/types.ts';

/** Device (global) mount state of an attached volume. */
export type DeviceMountState = 'DeviceGloballyMounted' | 'DeviceMountUncertain' | 'DeviceNotMounted';
/** Mount state of a volume for one pod. `VolumeNotMounted` is never stored: unmount deletes the entry. */
export type VolumeMountState = 'VolumeMounted' | 'VolumeMountUncertain' | 'VolumeNotMounted';

/** One (volume, pod) pair of the desired state of world, handed to MountVolume. */
export interface VolumeToMount {
  volumeName: UniqueVolumeName;
  podName: UniquePodName;
  volumeSpec: Spec;
  /** `pod.spec.volumes[i].name`. */
  outerVolumeSpecName: string;
  pod: Pod;
  pluginIsAttachable: boolean;
  pluginIsDeviceMountable: boolean;
  /** PV annotation `pv.beta.kubernetes.io/gid`, "" when none. */
  volumeGidValue: string;
  /** Filled by the reconciler from the actual state before an operation starts. */
  devicePath: string;
  reportedInUse: boolean;
  /** Bytes, or null when no size limit applies (only local ephemeral volumes have one). */
  desiredSizeLimit: number | null;
  /** When the mount was requested (epoch ms); the overall_volume_mount metric runs from here. */
  mountRequestTime: number;
  /** PV capacity in bytes, 0 when not a PV or unknown. */
  desiredPersistentVolumeSize: number;
  /** `effectiveSELinuxMountFileLabel`: "" when no `-o context` mount applies. */
  seLinuxLabel: string;
}

/** One volume to attach (kubelet-managed attach). */
export interface VolumeToAttach {
  volumeName: UniqueVolumeName;
  volumeSpec: Spec;
  nodeName: NodeName;
  scheduledPods: Pod[];
}

/** A (volume, pod) entry of the actual state of world. */
export interface MountedVolume {
  podName: UniquePodName;
  volumeName: UniqueVolumeName;
  /** `spec.Name()` of the pod's entry. */
  innerVolumeSpecName: string;
  outerVolumeSpecName: string;
  pluginName: PluginName;
  podUID: PodUID;
  mounter: Mounter | null;
  blockVolumeMapper: BlockVolumeMapper | null;
  volumeGidValue: string;
  volumeSpec: Spec;
  /** From the volume: its global mount / map path. */
  deviceMountPath: string;
  /** From the volume: the context it was mounted with; null = not mounted yet, "" = without `-o context`. */
  seLinuxMountContext: string | null;
  volumeMountState: VolumeMountState;
}

/** A volume of the actual state of world (attached, or at least known to the node). */
export interface AttachedVolume {
  volumeName: UniqueVolumeName;
  volumeSpec: Spec;
  nodeName: NodeName;
  /** True only when attachability is known to be true ("Uncertain" reads as false). */
  pluginIsAttachable: boolean;
  devicePath: string;
  deviceMountPath: string;
  pluginName: PluginName;
  seLinuxMountContext: string | null;
  deviceMountState: DeviceMountState;
}

/** `DeviceMayBeMounted()`: globally mounted or uncertain. */
export function deviceMayBeMounted(av: Pick<AttachedVolume, 'deviceMountState'>): boolean {
  return av.deviceMountState === 'DeviceGloballyMounted' || av.deviceMountState === 'DeviceMountUncertain';
}

/** Options of `MarkVolumeAsMounted` / `MarkVolumeMountAsUncertain`. */
export interface MarkVolumeOpts {
  podName: UniquePodName;
  podUID: PodUID;
  volumeName: UniqueVolumeName;
  mounter: Mounter | null;
  blockVolumeMapper: BlockVolumeMapper | null;
  outerVolumeSpecName: string;
  volumeGidValue: string;
  volumeSpec: Spec;
  volumeMountState: VolumeMountState;
  seLinuxMountContext: string;
}

/** The actual-state mutations that mount and unmount operations make. */
export interface ActualStateOfWorldMounterUpdater {
  markVolumeAsMounted(opts: MarkVolumeOpts): void;
  markVolumeMountAsUncertain(opts: MarkVolumeOpts): void;
  markVolumeAsUnmounted(podName: UniquePodName, volumeName: UniqueVolumeName): void;
  markDeviceAsMounted(volumeName: UniqueVolumeName, devicePath: string, deviceMountPath: string, seLinuxMountContext: string): void;
  markDeviceAsUncertain(volumeName: UniqueVolumeName, devicePath: string, deviceMountPath: string, seLinuxMountContext: string): void;
  markDeviceAsUnmounted(volumeName: UniqueVolumeName): void;
  getDeviceMountState(volumeName: UniqueVolumeName): DeviceMountState;
  getVolumeMountState(volumeName: UniqueVolumeName, podName: UniquePodName): VolumeMountState;
  isVolumeMountedElsewhere(volumeName: UniqueVolumeName, podName: UniquePodName): boolean;
  /** Another pod has the PersistentVolume mounted or possibly mounted, under any unique volume name. */
  isPersistentVolumeMountedElsewhere(pvName: string, pluginName: PluginName, podName: UniquePodName): boolean;
  markForInUseExpansionError(volumeName: UniqueVolumeName): void;
  markVolumeAsResized(volumeName: UniqueVolumeName, claimSize: number): boolean;
  isVolumeReconstructed(volumeName: UniqueVolumeName, podName: UniquePodName): boolean;
  isVolumeDeviceReconstructed(volumeName: UniqueVolumeName): boolean;
  getClaimSize(volumeName: UniqueVolumeName): number | null;
  initializeClaimSize(volumeName: UniqueVolumeName, claimSize: number | null): void;
}

/** The actual-state mutations that attach and detach operations make. */
export interface ActualStateOfWorldAttacherUpdater {
  /** `volumeName` "" = computed from the spec. */
  markVolumeAsAttached(volumeName: UniqueVolumeName | '', spec: Spec, nodeName: NodeName, devicePath: string): void;
  /** A no-op in the kubelet; kept for parity. */
  markVolumeAsUncertain(volumeName: UniqueVolumeName, spec: Spec, nodeName: NodeName): void;
  markVolumeAsDetached(volumeName: UniqueVolumeName, nodeName: NodeName): void;
}

/** The actual-state mutation of the batched attach verification (`VolumesAreAttached`). */
export interface ActualStateOfWorldVerifierUpdater {
  /**
   * The volume was found detached from the node. Pod entries and device mounts recorded on it
   * must never be dropped: they stay until torn down, or are set up again after a re-attach.
   */
  markVolumeAsFoundDetached(volumeName: UniqueVolumeName, nodeName: NodeName): void;
}

export type ActualStateOfWorldUpdater = ActualStateOfWorldMounterUpdater & ActualStateOfWorldAttacherUpdater;
