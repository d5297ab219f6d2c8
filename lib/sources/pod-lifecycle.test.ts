import { describe, expect, it } from 'vitest';
import type { Pod, PodPhase } from '../volume/k8s-types.ts';
import { podUID } from '../volume/types.ts';
import { isPodDeleting, isPodTerminated, isTerminalPodPhase, SourcePods, type PodListSource } from './pod-lifecycle.ts';

function pod(uid: string, phase?: PodPhase): Pod {
  return { metadata: { name: uid, namespace: 'default', uid }, spec: { containers: [{ name: 'c' }] }, ...(phase === undefined ? {} : { status: { phase } }) };
}

/** A source whose pods and sync state the test changes between calls. */
class StubSource implements PodListSource {
  constructor(
    readonly pods: Pod[],
    public synced = true,
  ) {}

  listPods(): Pod[] {
    return this.pods;
  }

  getPodByUID(uid: string): Pod | undefined {
    return this.pods.find((p) => p.metadata.uid === uid);
  }

  isSynced(): boolean {
    return this.synced;
  }
}

describe('isPodTerminated', () => {
  it.each<{ phase: PodPhase | undefined; terminated: boolean }>([
    { phase: undefined, terminated: false },
    { phase: 'Pending', terminated: false },
    { phase: 'Running', terminated: false },
    { phase: 'Unknown', terminated: false },
    { phase: 'Succeeded', terminated: true },
    { phase: 'Failed', terminated: true },
  ])('says a pod in phase $phase is terminated: $terminated', ({ phase, terminated }) => {
    expect(isPodTerminated(pod('web', phase))).toBe(terminated);
    expect(isTerminalPodPhase(phase)).toBe(terminated);
  });

  it('does not treat a phase the API server did not send as terminal', () => {
    expect(isTerminalPodPhase(null)).toBe(false);
    expect(isTerminalPodPhase('')).toBe(false);
  });
});

describe('SourcePods', () => {
  it('lists running and pending pods and hides terminated ones from the pod manager', () => {
    // Arrange
    const pods = new SourcePods(new StubSource([pod('run', 'Running'), pod('new'), pod('ok', 'Succeeded'), pod('bad', 'Failed')]));

    // Act / Assert
    expect(pods.getPods().map((p) => p.metadata.uid)).toEqual(['run', 'new']);
    expect(pods.getPodByUID(podUID('ok'))).toBeUndefined();
    expect(pods.getPodByUID(podUID('bad'))).toBeUndefined();
    expect(pods.getPodByUID(podUID('run'))?.metadata.name).toBe('run');
  });

  it.each([
    { what: 'a running pod', uid: 'run', released: false },
    { what: 'a pod without a phase yet', uid: 'new', released: false },
    { what: 'a pod in phase Succeeded', uid: 'ok', released: true },
    { what: 'a pod in phase Failed', uid: 'bad', released: true },
    { what: 'a pod the source no longer lists', uid: 'gone', released: true },
  ])('treats $what as containers terminating and runtime removed = $released', ({ uid, released }) => {
    const pods = new SourcePods(new StubSource([pod('run', 'Running'), pod('new'), pod('ok', 'Succeeded'), pod('bad', 'Failed')]));
    expect(pods.shouldPodContainersBeTerminating(podUID(uid))).toBe(released);
    expect(pods.shouldPodRuntimeBeRemoved(podUID(uid))).toBe(released);
  });

  it('releases a pod at the first call after its source reports it terminated (nothing is cached)', () => {
    // Arrange
    const source = new StubSource([pod('job', 'Running')]);
    const pods = new SourcePods(source);
    expect(pods.shouldPodRuntimeBeRemoved(podUID('job'))).toBe(false);

    // Act: the pod's status moves to Succeeded in the source.
    source.pods[0] = pod('job', 'Succeeded');

    // Assert
    expect(pods.shouldPodContainersBeTerminating(podUID('job'))).toBe(true);
    expect(pods.shouldPodRuntimeBeRemoved(podUID('job'))).toBe(true);
    expect(pods.getPods()).toEqual([]);
  });

  it('reports sources ready once the source has synced', () => {
    const source = new StubSource([], false);
    const pods = new SourcePods(source);
    expect(pods.allReady()).toBe(false);
    source.synced = true;
    expect(pods.allReady()).toBe(true);
  });
});

describe('SourcePods with a pod being deleted', () => {
  it('stops the containers of a pod with a deletionTimestamp at once: hidden from the pod manager, runtime removed', () => {
    const deleting: Pod = { ...pod('old', 'Running'), metadata: { name: 'old', namespace: 'default', uid: 'old', deletionTimestamp: '2026-01-01T00:00:00Z' } };
    const source = new StubSource([pod('web', 'Running'), deleting]);
    const pods = new SourcePods(source);

    expect(isPodDeleting(deleting)).toBe(true);
    expect(isPodDeleting(pod('web', 'Running'))).toBe(false);
    expect(pods.getPods().map((p) => p.metadata.uid)).toEqual(['web']);
    expect(pods.getPodByUID(podUID('old'))).toBeUndefined();
    expect(pods.shouldPodContainersBeTerminating(podUID('old'))).toBe(true);
    expect(pods.shouldPodRuntimeBeRemoved(podUID('old'))).toBe(true);
    expect(pods.shouldPodRuntimeBeRemoved(podUID('web'))).toBe(false);
  });
});
