import { describe, expect, it } from 'vitest';
import type { ContainerState } from '../api/index.ts';
import { containerLine, containerSinceTitle, containerStateText, podStatusLine, podStatusOf } from './pod-status-view.ts';

const now = Date.parse('2026-12-02T06:00:00Z');
const creating: ContainerState = { name: 'app', kind: 'container', state: 'waiting', reason: 'ContainerCreating', since: now - 65_000, sinceObserved: true, ready: false, restartCount: 0 };

describe('containerStateText', () => {
  it('says a waiting container’s reason and for how long: ContainerCreating since 1 min', () => {
    expect(containerStateText(creating, now)).toBe('ContainerCreating since 1 min 5 s');
    expect(containerStateText({ ...creating, since: now - 60_000 }, now)).toBe('ContainerCreating since 1 min');
    expect(containerStateText({ ...creating, reason: 'CrashLoopBackOff', restartCount: 4 }, now)).toBe('CrashLoopBackOff since 1 min 5 s, 4 restarts');
  });

  it('says running since, not ready, and a terminated container’s reason, exit code and time', () => {
    expect(containerStateText({ ...creating, state: 'running', since: now - 180_000, sinceObserved: false, ready: true }, now)).toBe('Running since 3 min');
    expect(containerStateText({ ...creating, state: 'running', since: null, sinceObserved: false }, now)).toBe('Running, not ready');
    const completed: ContainerState = { ...creating, kind: 'init', name: 'init-db', state: 'terminated', reason: 'Completed', exitCode: 0, since: now - 120_000, sinceObserved: false };
    expect(containerLine(completed, now)).toBe('init-db (init): Completed, exit 0, 2 min ago');
    expect(containerStateText({ ...creating, state: 'unknown', since: null, sinceObserved: false }, now)).toBe('no state reported yet');
  });

  it('says where the time comes from: the agent’s first sight of a waiting state, else the kubelet’s', () => {
    expect(containerSinceTitle(creating)).toBe('first seen in this state by the agent at 2026-12-02 05:58:55 UTC (the API has no time for a waiting state)');
    expect(containerSinceTitle({ ...creating, state: 'running', sinceObserved: false })).toBe('started at 2026-12-02 05:58:55 UTC (the kubelet’s time)');
    expect(containerSinceTitle({ ...creating, since: null })).toBeUndefined();
  });
});

describe('podStatusLine', () => {
  it('puts the phase and every container on one line', () => {
    expect(podStatusLine({ phase: 'Pending', containers: [creating] }, now)).toBe('phase Pending · app: ContainerCreating since 1 min 5 s');
  });

  it('shows nothing where the source has no status: a manifest pod, a pod no longer desired', () => {
    expect(podStatusLine({}, now)).toBeNull();
    expect(podStatusLine(undefined, now)).toBeNull();
    expect(podStatusLine({ phase: 'Running' }, now)).toBe('phase Running');
    expect(podStatusOf([{ uid: 'u1', namespace: 'ns', name: 'p', volumes: [] }], 'u2')).toBeUndefined();
  });
});
