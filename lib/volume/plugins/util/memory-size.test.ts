import { describe, expect, it } from 'vitest';
import type { Container, Pod } from '../../k8s-types.ts';
import { emptyDirMemorySizeBytes, nodeAllocatableMemoryBytes, podMemoryLimitBytes } from './memory-size.ts';

const Mi = 1024 * 1024;
const c = (memory?: string): Container => ({ name: 'c', image: 'i', ...(memory === undefined ? {} : { resources: { limits: { memory } } }) });
const pod = (containers: Container[], extra: Partial<Pod['spec']> = {}): Pod => ({ metadata: { name: 'p', uid: 'u' }, spec: { containers, ...extra } });

describe("the size of a memory-backed emptyDir (kubelet calculateEmptyDirMemorySize)", () => {
  it("the pod's memory limit only when every container has one: containers summed, the largest init container if more, plus overhead", () => {
    expect(podMemoryLimitBytes(pod([c('64Mi'), c('32Mi')]))).toBe(96 * Mi);
    expect(podMemoryLimitBytes(pod([c('64Mi'), c()]))).toBeNull();
    expect(podMemoryLimitBytes(pod([c('64Mi')], { initContainers: [c('128Mi')] }))).toBe(128 * Mi);
    expect(podMemoryLimitBytes(pod([c('64Mi')], { overhead: { memory: '8Mi' } }))).toBe(72 * Mi);
    expect(podMemoryLimitBytes(pod([c('not a quantity')]))).toBeNull();
  });

  it('node allocatable, lowered to the pod limit, then to sizeLimit; larger values do not raise it', () => {
    const unlimited = pod([c()]);
    expect(emptyDirMemorySizeBytes(1024 * Mi, null, unlimited)).toBe(1024 * Mi);
    expect(emptyDirMemorySizeBytes(1024 * Mi, null, pod([c('64Mi')]))).toBe(64 * Mi);
    expect(emptyDirMemorySizeBytes(1024 * Mi, 16 * Mi, pod([c('64Mi')]))).toBe(16 * Mi);
    expect(emptyDirMemorySizeBytes(32 * Mi, 64 * Mi, pod([c('128Mi')]))).toBe(32 * Mi);
    expect(emptyDirMemorySizeBytes(null, 16 * Mi, unlimited)).toBe(16 * Mi);
    expect(emptyDirMemorySizeBytes(null, null, unlimited)).toBeNull();
    expect(emptyDirMemorySizeBytes(0, 0, unlimited)).toBeNull();
  });

  it("reads the Node's status.allocatable.memory", () => {
    expect(nodeAllocatableMemoryBytes({ metadata: { name: 'n' }, status: { allocatable: { memory: '2Gi', cpu: '2' } } })).toBe(2048 * Mi);
    expect(nodeAllocatableMemoryBytes({ metadata: { name: 'n' }, status: {} })).toBeNull();
    expect(nodeAllocatableMemoryBytes(undefined)).toBeNull();
  });
});
