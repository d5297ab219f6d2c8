import { describe, expect, it } from 'vitest';
import { emptySnapshot, FIXTURE_T0 } from '../api/testing/snapshot-fixtures.ts';
import { BACKOFF_CAP_MS, backoffWindowMs, buildTimeline } from './volume-timeline.ts';

const V = 'kubernetes.io/csi/d^vol-1';
const OTHER = 'kubernetes.io/empty-dir/uid-2-cache';

describe('backoffWindowMs', () => {
  it('doubles from 500 ms to the cap of 2m2s', () => {
    expect([1, 2, 3, 8, 9, 10, 30].map(backoffWindowMs)).toEqual([500, 1_000, 2_000, 64_000, BACKOFF_CAP_MS, BACKOFF_CAP_MS, BACKOFF_CAP_MS]);
  });
});

describe('buildTimeline', () => {
  const snapshot = emptySnapshot({
    operationLog: [
      { operationName: 'volume_unmount', volume: V, podUid: 'uid-1', startedAt: FIXTURE_T0 + 9_000, finishedAt: FIXTURE_T0 + 9_100, outcome: 'success', error: null },
      { operationName: 'volume_attach', volume: V, podUid: null, startedAt: FIXTURE_T0, finishedAt: FIXTURE_T0 + 300, outcome: 'success', error: null },
      { operationName: 'volume_mount', volume: V, podUid: null, startedAt: FIXTURE_T0 + 400, finishedAt: FIXTURE_T0 + 1_400, outcome: 'failure', error: 'rpc error: code = Internal desc = boom' },
      { operationName: 'volume_mount', volume: OTHER, podUid: 'uid-2', startedAt: FIXTURE_T0, finishedAt: FIXTURE_T0 + 1, outcome: 'success', error: null },
    ],
    operations: [
      { operationName: 'volume_mount', volume: V, podUid: null, nodeName: null, state: 'running', failures: 1, lastError: 'x', lastErrorAt: FIXTURE_T0 + 1_400, retryAt: FIXTURE_T0 + 1_900, durationBeforeRetryMs: 500, startedAt: FIXTURE_T0 + 2_000 },
    ],
    operationHistory: [
      {
        operationName: 'volume_mount',
        volume: V,
        podUid: null,
        nodeName: null,
        firstFailureAt: FIXTURE_T0 + 1_400,
        attemptsTotal: 3,
        attempts: [
          { startedAt: FIXTURE_T0 + 400, durationMs: 1_000, error: 'boom' },
          { startedAt: FIXTURE_T0 + 2_000, durationMs: 100, error: 'boom' },
        ],
        succeededAt: null,
      },
    ],
    recentEvents: [
      { time: FIXTURE_T0 + 1_400, type: 'Warning', reason: 'FailedMount', podUid: 'uid-1', message: 'MountVolume.MountDevice failed', volume: V },
      { time: FIXTURE_T0 + 5, type: 'Normal', reason: 'SuccessfulMountVolume', podUid: 'uid-2', message: 'ok', volume: OTHER },
    ],
    actual: { volumes: [{ uniqueVolumeName: V, pluginName: 'kubernetes.io/csi', attachState: 'attached', devicePath: '', deviceMountState: 'uncertain', deviceMountPath: '/g', pods: [{ podUid: 'uid-1', podName: 'p', outerVolumeName: 'data', mountState: 'uncertain', remountRequired: false }] }] },
  });

  it('puts the volume’s operations on lanes in lifecycle order, with the running attempt up to now', () => {
    const t = buildTimeline(snapshot, { volume: V }, FIXTURE_T0 + 10_000);

    expect(t.lanes.map((l) => l.operationName)).toEqual(['volume_attach', 'volume_mount', 'volume_unmount']);
    expect(t.lanes[1]?.bars.map((b) => [b.outcome, b.start - FIXTURE_T0, b.end - FIXTURE_T0])).toEqual([
      ['failure', 400, 1_400],
      ['running', 2_000, 10_000],
    ]);
    expect(t.lanes[1]?.bars[0]?.title).toContain('rpc error: code = Internal desc = boom');
    expect(t.from).toBe(FIXTURE_T0);
    expect(t.to).toBe(FIXTURE_T0 + 10_000);
    expect(t.marks.map((m) => m.label)).toEqual(['FailedMount: MountVolume.MountDevice failed']);
  });

  it('draws each failed attempt’s retry deadline with the window of its place in the series (attempts left out count)', () => {
    const t = buildTimeline(snapshot, { volume: V }, FIXTURE_T0 + 10_000);

    // attemptsTotal 3 with 2 kept: the kept ones are failures 2 and 3.
    expect(t.backoff.map((b) => [b.failure, b.windowMs, b.retryAt - FIXTURE_T0])).toEqual([
      [2, 1_000, 2_400],
      [3, 2_000, 4_100],
    ]);
  });

  it('gives a pod its own operations and the volume-wide ones of its volumes, and nothing of other pods', () => {
    const t = buildTimeline(snapshot, { podUid: 'uid-1' }, FIXTURE_T0 + 10_000);

    expect(t.lanes.map((l) => l.operationName)).toEqual(['volume_attach', 'volume_mount', 'volume_unmount']);
    expect(t.lanes.flatMap((l) => l.bars).some((b) => b.start === FIXTURE_T0 && b.end === FIXTURE_T0 + 1)).toBe(false);
    expect(buildTimeline(snapshot, { podUid: 'uid-2' }, FIXTURE_T0 + 10).lanes.map((l) => l.operationName)).toEqual(['volume_mount']);
  });

  it('is empty, not broken, for a subject with nothing recorded', () => {
    const t = buildTimeline(snapshot, { volume: 'kubernetes.io/host-path/none' }, FIXTURE_T0);
    expect(t).toEqual({ from: FIXTURE_T0, to: FIXTURE_T0 + 1, lanes: [], backoff: [], marks: [] });
  });
});
