import { describe, expect, it } from 'vitest';
import { uniquePodName } from '../../volume/types.ts';
import { UnresolvedPodVolumes } from './unresolved-pod-volumes.ts';

const pod1 = uniquePodName('pod1uid');
const pod2 = uniquePodName('pod2uid');

describe('UnresolvedPodVolumes', () => {
  it('describes a pod’s unresolved volumes by volume name, the latest reason of each, joined by "; "', () => {
    const u = new UnresolvedPodVolumes();
    u.markUnresolved(pod1, 'logs', 'error processing PVC ns/logs: PVC is not bound');
    u.markUnresolved(pod1, 'data', 'error processing PVC ns/data: failed to fetch PVC from API server: 500');
    u.markUnresolved(pod1, 'data', 'error processing PVC ns/data: failed to fetch PVC from API server: 403');

    expect(u.describe(pod1)).toBe('data: error processing PVC ns/data: failed to fetch PVC from API server: 403; logs: error processing PVC ns/logs: PVC is not bound');
    expect(u.hasUnresolved(pod1)).toBe(true);
    expect(u.describe(pod2)).toBeNull();
    expect(u.get(pod2)).toEqual([]);
  });

  it('forgets a volume once resolved and the pod with its last volume, or all at once', () => {
    const u = new UnresolvedPodVolumes();
    u.markUnresolved(pod1, 'a', 'x');
    u.markUnresolved(pod1, 'b', 'y');
    u.markUnresolved(pod2, 'c', 'z');

    u.markResolved(pod1, 'a');
    expect(u.get(pod1)).toEqual([{ outerVolumeSpecName: 'b', reason: 'y' }]);
    u.markResolved(pod1, 'b');
    u.markResolved(pod1, 'never-recorded');
    expect(u.hasUnresolved(pod1)).toBe(false);
    expect(u.pods()).toEqual([pod2]);
    u.forgetPod(pod2);
    expect(u.pods()).toEqual([]);
  });
});
