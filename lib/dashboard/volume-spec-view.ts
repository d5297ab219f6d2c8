/**
 * The volume page's "Spec" section and its attach fact, derived from a snapshot: the volume as
 * each pod's spec writes it (source fields, the containers' mounts), the claim → PV →
 * VolumeAttachment chain and the CSI driver, and whether the plugin attaches at all. Pure.
 */
import type { ActualVolume, DesiredVolumeSpec, Snapshot } from '../api/index.ts';
import { podDisplayName } from './pipeline.ts';

/** One pod's spec of the volume. */
export interface PodVolumeSpec {
  readonly podUid: string;
  /** `namespace/name` of the pod. */
  readonly podName: string;
  /** The pod's name for the volume. */
  readonly volumeName: string;
  /** `null` from an agent that predates the spec. */
  readonly spec: DesiredVolumeSpec | null;
}

/** The "Spec" section of one volume. */
export interface VolumeSpecView {
  readonly pluginName: string | null;
  /**
   * The plugin attaches the volume (the desired state's answer, for CSI the CSIDriver's
   * `attachRequired`); without a desired pod, whether the actual state has a device path.
   * `null` when the snapshot says nothing about the volume.
   */
  readonly attachable: boolean | null;
  /** Every desired pod's spec of the volume, in pod order. */
  readonly pods: readonly PodVolumeSpec[];
}

/** The spec section of the unique volume `volume`. */
export function volumeSpecView(snapshot: Snapshot, volume: string, actual: ActualVolume | null): VolumeSpecView {
  const pods: PodVolumeSpec[] = [];
  let pluginName: string | null = actual?.pluginName ?? null;
  let attachable: boolean | null = null;
  for (const pod of snapshot.desired.pods) {
    for (const v of pod.volumes) {
      if (v.uniqueVolumeName !== volume) continue;
      pluginName ??= v.pluginName;
      // One volume has one plugin: any desired pair answers for all.
      attachable ??= v.attachable;
      pods.push({ podUid: pod.uid, podName: podDisplayName(pod), volumeName: v.name, spec: v.spec ?? null });
    }
  }
  if (attachable === null && actual !== null) attachable = actual.devicePath !== '';
  return { pluginName, attachable, pods };
}

/**
 * The "attach" fact of the volume page: never "attached" for a plugin that is not attachable
 * (the kubelet's actual state lists such volumes after verifying them, without any attach).
 */
export function attachFact(actual: Pick<ActualVolume, 'attachState'>, attachable: boolean | null): string {
  if (attachable === false) return actual.attachState === 'uncertain' ? '? not verified yet (not attachable)' : '– not attachable (verified on the node)';
  return actual.attachState === 'uncertain' ? '? uncertain' : '✓ attached';
}

/** `readOnly` as the spec page shows it. */
export function mountAccess(readOnly: boolean): string {
  return readOnly ? 'read-only' : 'read-write';
}
