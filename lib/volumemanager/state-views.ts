/**
 * Read-only views of the two worlds, as the volume manager hands them out
 * (`VolumeManager.desiredState()`, `VolumeManager.actualState()`): the questions the kubelet's
 * `DesiredStateOfWorld` and `ActualStateOfWorld` interfaces answer, without any method that
 * changes a world. Only the populator and the reconciler (through the operation executor)
 * change the worlds; everything outside the engine reads them through these views.
 */
import type { ActualStateOfWorld } from './cache/actual-state-of-world.ts';
import type { DesiredStateOfWorld } from './cache/desired-state-of-world.ts';

/** What the desired state of world answers: the volumes pods want, and the pods' errors. */
export type DesiredStateView = Pick<
  DesiredStateOfWorld,
  | 'volumeExists'
  | 'podExistsInVolume'
  | 'volumeExistsWithSpecName'
  | 'getVolumesToMount'
  | 'countVolumesToMount'
  | 'getPods'
  | 'getVolumes'
  | 'getPodErrors'
  | 'getPodsWithErrors'
>;

/** What the actual state of world answers: what is attached, mounted, uncertain, and how it got there. */
export type ActualStateView = Pick<
  ActualStateOfWorld,
  | 'isVolumeAttached'
  | 'isVolumeFoundDetached'
  | 'isVolumeMountedElsewhere'
  | 'volumeExists'
  | 'volumeExistsWithSpecName'
  | 'isVolumeReconstructed'
  | 'isVolumeDeviceReconstructed'
  | 'getDeviceMountState'
  | 'getVolumeMountState'
  | 'getAttachability'
  | 'getClaimSize'
  | 'getMountedVolumes'
  | 'getMountedVolumesForPod'
  | 'getAllMountedVolumes'
  | 'getPossiblyMountedVolumesForPod'
  | 'getGloballyMountedVolumes'
  | 'getUnmountedVolumes'
  | 'getAttachedVolumes'
  | 'getAttachedVolume'
  | 'countMountedVolumes'
  | 'getVolumes'
>;
