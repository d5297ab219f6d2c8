/** Helpers that read pod status the way the kubelet's pod workers interpret it. */
import type { Pod } from '../../volume/k8s-types.ts';

/**
 * A pod in phase Succeeded or Failed is terminated: its containers will not run again, so its
 * volumes may be torn down although the pod object still exists. This is only data on the pod;
 * a terminated pod stays listed until its manifest is removed.
 */
export function isPodTerminated(pod: Pod): boolean {
  const phase = pod.status?.phase;
  return phase === 'Succeeded' || phase === 'Failed';
}
