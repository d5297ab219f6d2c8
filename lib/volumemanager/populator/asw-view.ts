/**
 * The part of the actual state of world the populator reads and writes. Kept as an interface so
 * the populator can be tested against a hand-built actual state.
 */
import type { MountedVolume } from '../../operationexecutor/types.ts';
import type { UniquePodName, UniqueVolumeName } from '../../volume/types.ts';

export type MountedVolumeView = MountedVolume;

export interface ActualStateOfWorld {
  /** The pod's entries in state Mounted (not Uncertain). */
  getMountedVolumesForPod(podName: UniquePodName): MountedVolume[];
  markRemountRequired(podName: UniquePodName): void;
  initializeClaimSize(volumeName: UniqueVolumeName, claimSize: number | null): void;
  podRemovedFromVolume(podName: UniquePodName, volumeName: UniqueVolumeName): boolean;
}
