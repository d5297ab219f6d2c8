/**
 * The size of a memory-backed emptyDir (kubelet `calculateEmptyDirMemorySize`,
 * kubernetes/kubernetes pkg/volume/emptydir/empty_dir.go@v1.34, with `SizeMemoryBackedVolumes`
 * GA): the node's allocatable memory, lowered to the pod's memory limit and then to the volume's
 * `sizeLimit` when those are positive and smaller. The same size goes to the emptyDir that
 * secret, downward API and projected volumes wrap (their spec has no `sizeLimit`).
 */
import type { Node, Pod, ResourceList } from '../../k8s-types.ts';
import { parseQuantity } from '../../quantity.ts';

const memoryOf = (limits: ResourceList | undefined): number => {
  const value = limits?.memory;
  if (value === undefined) return 0;
  try {
    return parseQuantity(value);
  } catch {
    return 0;
  }
};

/**
 * The pod's memory limit as the kubelet's pod cgroup gets it (`ResourceConfigForPod`): only when
 * every container declares one; then the sum of the containers' limits, or the largest init
 * container's when that is more, plus the pod overhead. Null otherwise. (Restartable init
 * containers, i.e. sidecars, are counted as init containers here.)
 */
export function podMemoryLimitBytes(pod: Pod): number | null {
  const containers = pod.spec.containers;
  if (containers.length === 0 || containers.some((c) => memoryOf(c.resources?.limits) <= 0)) return null;
  const sum = containers.reduce((total, c) => total + memoryOf(c.resources?.limits), 0);
  const init = Math.max(0, ...(pod.spec.initContainers ?? []).map((c) => memoryOf(c.resources?.limits)));
  return Math.max(sum, init) + memoryOf(pod.spec.overhead);
}

/** Null when nothing bounds it (no allocatable known, no pod limit, no sizeLimit): the tmpfs then gets no size option. */
export function emptyDirMemorySizeBytes(nodeAllocatableBytes: number | null, sizeLimitBytes: number | null, pod: Pod): number | null {
  let size = nodeAllocatableBytes !== null && nodeAllocatableBytes > 0 ? nodeAllocatableBytes : null;
  const podLimit = podMemoryLimitBytes(pod);
  if (podLimit !== null && podLimit > 0 && (size === null || podLimit <= size)) size = podLimit;
  if (sizeLimitBytes !== null && sizeLimitBytes > 0 && (size === null || sizeLimitBytes <= size)) size = sizeLimitBytes;
  return size;
}

/** A Node's `status.allocatable.memory` in bytes; null when the Node, the field or a valid quantity is missing. */
export function nodeAllocatableMemoryBytes(node: Node | undefined): number | null {
  const bytes = memoryOf(node?.status?.allocatable);
  return bytes > 0 ? bytes : null;
}
