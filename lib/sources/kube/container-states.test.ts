import { describe, expect, it } from 'vitest';
import { containerStatesOf, ContainerStateTracker } from './container-states.ts';

/** A pod as the informer delivers it, with the kubelet's status lists. */
function podWith(status: Record<string, unknown>): unknown {
  return { metadata: { name: 'web-0', namespace: 'shop', uid: 'uid-1' }, spec: { containers: [{ name: 'app' }] }, status: { phase: 'Pending', ...status } };
}

const creating = { name: 'app', state: { waiting: { reason: 'ContainerCreating' } }, ready: false, restartCount: 0 };

describe('containerStatesOf', () => {
  it('maps waiting, running and terminated states with their reasons and times, init containers first', () => {
    // Arrange
    const pod = podWith({
      initContainerStatuses: [{ name: 'init-db', state: { terminated: { reason: 'Completed', exitCode: 0, finishedAt: '2026-12-02T05:00:10Z' } }, ready: false, restartCount: 0 }],
      containerStatuses: [
        { name: 'app', state: { running: { startedAt: '2026-12-02T05:00:11Z' } }, ready: true, restartCount: 2 },
        { name: 'sidecar', state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 40s restarting failed container' } }, ready: false, restartCount: 5 },
      ],
    });

    // Act
    const states = containerStatesOf(pod);

    // Assert
    expect(states).toEqual([
      { name: 'init-db', kind: 'init', state: 'terminated', reason: 'Completed', exitCode: 0, since: Date.parse('2026-12-02T05:00:10Z'), sinceObserved: false, ready: false, restartCount: 0 },
      { name: 'app', kind: 'container', state: 'running', since: Date.parse('2026-12-02T05:00:11Z'), sinceObserved: false, ready: true, restartCount: 2 },
      { name: 'sidecar', kind: 'container', state: 'waiting', reason: 'CrashLoopBackOff', message: 'back-off 40s restarting failed container', since: null, sinceObserved: true, ready: false, restartCount: 5 },
    ]);
  });

  it('reads client-node model objects (Date timestamps) like watch JSON', () => {
    const pod = podWith({ containerStatuses: [{ name: 'app', state: { running: { startedAt: new Date('2026-12-02T05:00:11Z') } }, ready: true, restartCount: 0 }] });
    expect(containerStatesOf(pod)[0]?.since).toBe(Date.parse('2026-12-02T05:00:11Z'));
  });

  it('invents nothing: no status lists (a pod the kubelet has not reported on, a manifest) give no states', () => {
    expect(containerStatesOf({ metadata: { name: 'web-0' }, spec: { containers: [] } })).toEqual([]);
    expect(containerStatesOf(podWith({}))).toEqual([]);
  });

  it('skips a container status that does not fit, keeps the others; a status without a state is unknown', () => {
    const pod = podWith({ containerStatuses: [{ state: { running: {} } }, { name: 'app', ready: false, restartCount: 0 }] });
    expect(containerStatesOf(pod)).toEqual([{ name: 'app', kind: 'container', state: 'unknown', since: null, sinceObserved: false, ready: false, restartCount: 0 }]);
  });
});

describe('ContainerStateTracker', () => {
  it('dates a waiting state from when it was first seen, and keeps that time while the reason stays', () => {
    // Arrange
    let now = 1_000;
    const tracker = new ContainerStateTracker(() => now);

    // Act
    const first = tracker.update('uid-1', podWith({ containerStatuses: [creating] }));
    now = 61_000;
    const again = tracker.update('uid-1', podWith({ containerStatuses: [creating] }));

    // Assert: ContainerCreating since 1 000 (60 s ago at the second read), no change reported
    expect(first).toBe(true);
    expect(again).toBe(false);
    expect(tracker.get('uid-1')).toEqual([{ name: 'app', kind: 'container', state: 'waiting', reason: 'ContainerCreating', since: 1_000, sinceObserved: true, ready: false, restartCount: 0 }]);
  });

  it('restarts the time when the waiting reason changes, and takes the kubelet’s time once running', () => {
    let now = 1_000;
    const tracker = new ContainerStateTracker(() => now);
    tracker.update('uid-1', podWith({ containerStatuses: [creating] }));
    const before = tracker.get('uid-1');

    now = 5_000;
    expect(tracker.update('uid-1', podWith({ containerStatuses: [{ ...creating, state: { waiting: { reason: 'CreateContainerConfigError' } } }] }))).toBe(true);
    expect(tracker.get('uid-1')?.[0]).toMatchObject({ reason: 'CreateContainerConfigError', since: 5_000 });
    expect(tracker.get('uid-1')).not.toBe(before);

    now = 9_000;
    tracker.update('uid-1', podWith({ containerStatuses: [{ ...creating, state: { running: { startedAt: '1970-01-01T00:00:08Z' } }, ready: true }] }));
    expect(tracker.get('uid-1')?.[0]).toMatchObject({ state: 'running', since: 8_000, sinceObserved: false, ready: true });
  });

  it('forgets a pod that lost its statuses or was removed', () => {
    const tracker = new ContainerStateTracker(() => 0);
    tracker.update('uid-1', podWith({ containerStatuses: [creating] }));
    expect(tracker.update('uid-1', podWith({}))).toBe(true);
    expect(tracker.get('uid-1')).toBeUndefined();
    tracker.update('uid-2', podWith({ containerStatuses: [creating] }));
    expect(tracker.remove('uid-2')).toBe(true);
    expect(tracker.remove('uid-2')).toBe(false);
  });
});
