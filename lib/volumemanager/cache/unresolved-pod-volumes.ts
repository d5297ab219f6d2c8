/**
 * The volumes of listed pods that the populator could not turn into desired volumes: the claim
 * or PV GET failed (500, timeout, 403, not found), the claim is not bound, the PV file is missing
 * or invalid, no plugin matches yet… Not a kubelet structure: the kubelet only records the error
 * text on the pod (`AddErrorToPod`), so its reconciler cannot tell "this pod no longer wants the
 * volume" from "this pod's volumes could not be read", and after a restart it unmounts a volume
 * that a running pod still uses (kubernetes#120150).
 *
 * Contract: the populator records a pod volume here when `processPodVolumes` fails for it, forgets
 * it when the volume is added to the desired state, and forgets the whole pod once the pod
 * releases its volumes (its runtime may be removed: gone from its source, or terminated). While a
 * pod has an entry here the reconciler unmounts none of its volumes, and volumes of it that failed
 * reconstruction are not cleaned up.
 */
import type { UniquePodName } from '../../volume/types.ts';

/** One pod volume that could not be resolved, and why. */
export interface UnresolvedPodVolume {
  /** The pod's name for the volume (`spec.volumes[].name`). */
  outerVolumeSpecName: string;
  /** The populator's error, as recorded on the pod (`DSW.AddErrorToPod`). */
  reason: string;
}

export class UnresolvedPodVolumes {
  private readonly byPod = new Map<UniquePodName, Map<string, string>>();

  /** Records (or replaces) why the pod's volume could not be resolved. */
  markUnresolved(podName: UniquePodName, outerVolumeSpecName: string, reason: string): void {
    let volumes = this.byPod.get(podName);
    if (volumes === undefined) {
      volumes = new Map();
      this.byPod.set(podName, volumes);
    }
    volumes.set(outerVolumeSpecName, reason);
  }

  /** The volume was added to the desired state. */
  markResolved(podName: UniquePodName, outerVolumeSpecName: string): void {
    const volumes = this.byPod.get(podName);
    if (volumes === undefined) return;
    volumes.delete(outerVolumeSpecName);
    if (volumes.size === 0) this.byPod.delete(podName);
  }

  /** Forgets every volume of the pod (all resolved, or the pod released its volumes). */
  forgetPod(podName: UniquePodName): void {
    this.byPod.delete(podName);
  }

  hasUnresolved(podName: UniquePodName): boolean {
    return this.byPod.has(podName);
  }

  /** The pod's unresolved volumes, by outer volume name. */
  get(podName: UniquePodName): UnresolvedPodVolume[] {
    const volumes = this.byPod.get(podName);
    if (volumes === undefined) return [];
    return [...volumes]
      .map(([outerVolumeSpecName, reason]) => ({ outerVolumeSpecName, reason }))
      .sort((a, b) => (a.outerVolumeSpecName < b.outerVolumeSpecName ? -1 : a.outerVolumeSpecName > b.outerVolumeSpecName ? 1 : 0));
  }

  /**
   * Why the pod's mounts are kept: `<volume>: <reason>` per unresolved volume, joined by `"; "`
   * (as the kubelet joins pod errors); null when the pod has none.
   */
  describe(podName: UniquePodName): string | null {
    const volumes = this.get(podName);
    if (volumes.length === 0) return null;
    return volumes.map((v) => `${v.outerVolumeSpecName}: ${v.reason}`).join('; ');
  }

  pods(): UniquePodName[] {
    return [...this.byPod.keys()];
  }
}
