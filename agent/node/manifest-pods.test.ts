import { describe, expect, it } from 'vitest';
import type { Pod, PodPhase } from '../../lib/volume/k8s-types.ts';
import { podUID } from '../../lib/volume/types.ts';
import { ManifestPods, type PodSource } from './manifest-pods.ts';

function pod(uid: string, phase?: PodPhase): Pod {
  return { metadata: { name: uid, namespace: 'default', uid }, spec: { containers: [{ name: 'c' }] }, ...(phase === undefined ? {} : { status: { phase } }) };
}

function source(pods: Pod[], synced = true): PodSource {
  return {
    listPods: () => pods,
    getPodByUID: (uid) => pods.find((p) => p.metadata.uid === uid),
    isSynced: () => synced,
  };
}

describe('ManifestPods', () => {
  it('lists running and pending pods and hides terminated ones from the pod manager', () => {
    // Arrange
    const pods = new ManifestPods(source([pod('run', 'Running'), pod('new'), pod('ok', 'Succeeded'), pod('bad', 'Failed')]));

    // Act / Assert
    expect(pods.getPods().map((p) => p.metadata.uid)).toEqual(['run', 'new']);
    expect(pods.getPodByUID(podUID('ok'))).toBeUndefined();
    expect(pods.getPodByUID(podUID('run'))?.metadata.name).toBe('run');
  });

  it.each([
    ['a listed pod', 'run', false],
    ['a terminated pod', 'ok', true],
    ['a pod whose file was removed', 'gone', true],
  ])('treats %s as containers terminating and runtime removed = %s', (_what, uid, removed) => {
    const pods = new ManifestPods(source([pod('run', 'Running'), pod('ok', 'Succeeded')]));
    expect(pods.shouldPodContainersBeTerminating(podUID(uid))).toBe(removed);
    expect(pods.shouldPodRuntimeBeRemoved(podUID(uid))).toBe(removed);
  });

  it('reports sources ready once the source has synced', () => {
    expect(new ManifestPods(source([], false)).allReady()).toBe(false);
    expect(new ManifestPods(source([], true)).allReady()).toBe(true);
  });
});
