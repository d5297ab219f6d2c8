import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ActualVolume, OperationHistory, RecentEvent } from '../api/index.ts';
import { emptySnapshot, exampleSnapshot, FIXTURE_T0 } from '../api/testing/snapshot-fixtures.ts';
import {
  aggregateEvents,
  eventGroupResolution,
  eventGroupSummary,
  eventsByVolume,
  eventVolume,
  formatSpan,
  historyByOperationKey,
  historyTiming,
  sortHistory,
  volumeNameLookup,
} from './incident-history.ts';

const PG = 'kubernetes.io/csi/csi-loop.volumescope.dev^vol-pg';
const DATA = 'kubernetes.io/csi/csi-loop.volumescope.dev^vol-data';
const DB = 'a7d9e3b1-6c45-4b8a-8f2d-0e1c9b7a5d33';

function failedMount(time: number, over: Partial<RecentEvent> = {}): RecentEvent {
  return { time, type: 'Warning', reason: 'FailedMount', podUid: DB, message: `MountVolume.MountDevice failed for volume "pgdata" : attempt at ${time}`, volume: PG, ...over };
}

function actualVolume(name: string, pods: { podUid: string; mounted: boolean }[]): ActualVolume {
  return {
    uniqueVolumeName: name,
    pluginName: 'kubernetes.io/csi',
    attachState: 'attached',
    devicePath: '',
    deviceMountState: 'mounted',
    deviceMountPath: '',
    pods: pods.map((p) => ({ podUid: p.podUid, podName: p.podUid, outerVolumeName: 'pgdata', mountState: p.mounted ? 'mounted' : 'uncertain', remountRequired: false })),
  };
}

function history(over: Partial<OperationHistory> = {}): OperationHistory {
  return { operationName: 'volume_mount', volume: PG, podUid: DB, nodeName: null, firstFailureAt: FIXTURE_T0, attemptsTotal: 9, attempts: [], succeededAt: null, ...over };
}

describe('aggregateEvents', () => {
  it('folds nine FailedMount events of one volume into one group with count, span, pods and the last message', () => {
    const events = Array.from({ length: 9 }, (_, i) => failedMount(FIXTURE_T0 + i * 7_625));

    const [group, ...rest] = aggregateEvents(events);

    expect(rest).toEqual([]);
    expect(group).toMatchObject({ volume: PG, reason: 'FailedMount', type: 'Warning', count: 9, firstAt: FIXTURE_T0, lastAt: FIXTURE_T0 + 61_000, podUids: [DB] });
    expect(group?.lastMessage).toContain(`attempt at ${FIXTURE_T0 + 61_000}`);
  });

  it('counts an event read from the API server (observe mode) as often as the API server saw it', () => {
    const [group] = aggregateEvents([failedMount(FIXTURE_T0, { count: 7 })]);
    expect(group).toMatchObject({ count: 7, firstAt: FIXTURE_T0, lastAt: FIXTURE_T0 });
    expect(group === undefined ? null : eventGroupSummary(group, FIXTURE_T0 + 3_000)).toBe('FailedMount ×7, last 3 s ago');
  });

  it('keeps volumes, reasons and types apart, newest group first', () => {
    const groups = aggregateEvents([
      failedMount(FIXTURE_T0),
      failedMount(FIXTURE_T0 + 1_000, { volume: DATA }),
      failedMount(FIXTURE_T0 + 2_000, { reason: 'FailedMapVolume' }),
      failedMount(FIXTURE_T0 + 3_000, { type: 'Normal', reason: 'SuccessfulAttachVolume' }),
    ]);

    expect(groups.map((g) => [g.volume, g.type, g.reason, g.count])).toEqual([
      [PG, 'Normal', 'SuccessfulAttachVolume', 1],
      [PG, 'Warning', 'FailedMapVolume', 1],
      [DATA, 'Warning', 'FailedMount', 1],
      [PG, 'Warning', 'FailedMount', 1],
    ]);
  });

  it('counts every event in exactly one group, with the group bounds around its events (property)', () => {
    const event = fc.record({
      time: fc.integer({ min: FIXTURE_T0, max: FIXTURE_T0 + 600_000 }),
      type: fc.constantFrom('Normal' as const, 'Warning' as const),
      reason: fc.constantFrom('FailedMount', 'FailedAttachVolume', 'SuccessfulAttachVolume'),
      podUid: fc.option(fc.constantFrom('p1', 'p2'), { nil: null }),
      message: fc.constantFrom('a', 'b'),
      volume: fc.constantFrom(PG, DATA),
    });
    fc.assert(
      fc.property(fc.array(event, { maxLength: 60 }), (events) => {
        const groups = aggregateEvents(events);
        expect(groups.reduce((n, g) => n + g.count, 0)).toBe(events.length);
        expect(new Set(groups.map((g) => g.key)).size).toBe(groups.length);
        for (const g of groups) {
          const mine = events.filter((e) => e.volume === g.volume && e.type === g.type && e.reason === g.reason);
          expect(mine).toHaveLength(g.count);
          expect(g.firstAt).toBe(Math.min(...mine.map((e) => e.time)));
          expect(g.lastAt).toBe(Math.max(...mine.map((e) => e.time)));
          expect([...g.podUids].sort()).toEqual([...new Set(mine.flatMap((e) => (e.podUid === null ? [] : [e.podUid])))].sort());
        }
        for (let i = 1; i < groups.length; i++) expect((groups[i - 1]?.lastAt ?? 0) >= (groups[i]?.lastAt ?? 0)).toBe(true);
      }),
    );
  });
});

describe('eventVolume', () => {
  it('takes the event volume, else the volume its message names for its pod, else none', () => {
    const lookup = volumeNameLookup(exampleSnapshot());
    const { volume: _volume, ...old } = failedMount(FIXTURE_T0);

    expect(eventVolume(failedMount(FIXTURE_T0, { volume: DATA }), lookup)).toBe(DATA);
    expect(eventVolume(old, lookup)).toBe(PG);
    expect(eventVolume({ ...old, podUid: 'other-pod' }, lookup)).toBeNull();
    expect(eventVolume({ ...old, message: 'no volume named' }, lookup)).toBeNull();
  });
});

describe('volumeNameLookup', () => {
  it('is built once per desired pods and actual volumes, and again when either changes', () => {
    const snapshot = exampleSnapshot();
    const lookup = volumeNameLookup(snapshot);
    expect(volumeNameLookup({ ...snapshot })).toBe(lookup);
    const fewer = volumeNameLookup({ ...snapshot, actual: { ...snapshot.actual, volumes: [] } });
    expect(fewer).not.toBe(lookup);
    expect(fewer.size).toBeLessThanOrEqual(lookup.size);
  });
});

describe('eventGroupSummary', () => {
  it.each([
    { count: 9, firstAt: 0, lastAt: 61_000, now: 64_000, text: 'FailedMount ×9 over 61 s, last 3 s ago' },
    { count: 2, firstAt: 0, lastAt: 300_000, now: 300_200, text: 'FailedMount ×2 over 5 min, last just now' },
    { count: 1, firstAt: 5_000, lastAt: 5_000, now: 17_000, text: 'FailedMount, 12 s ago' },
  ])('$text', ({ text, now, ...group }) => {
    expect(eventGroupSummary({ reason: 'FailedMount', ...group }, now)).toBe(text);
  });

  it('spells spans in seconds up to two minutes', () => {
    expect([formatSpan(61_900), formatSpan(119_000), formatSpan(125_000), formatSpan(-5)]).toEqual(['61 s', '119 s', '2 min 5 s', '0 s']);
  });
});

describe('eventGroupResolution', () => {
  const group = aggregateEvents([failedMount(FIXTURE_T0), failedMount(FIXTURE_T0 + 61_000)])[0];
  if (group === undefined) throw new Error('no group');

  it('is not resolved while the volume is not mounted for the pod', () => {
    const actual = new Map([[PG, actualVolume(PG, [{ podUid: DB, mounted: false }])]]);
    const desired = new Set([DB]);

    expect(eventGroupResolution(group, actual, [history()], desired)).toEqual({ state: 'open' });
    expect(eventGroupResolution(group, new Map(), [history()], desired)).toEqual({ state: 'open' });
  });

  it('is resolved once mounted, at the success time of the mount in the history', () => {
    const actual = new Map([[PG, actualVolume(PG, [{ podUid: DB, mounted: true }])]]);
    const older = history({ operationName: 'volume_attach', podUid: null, succeededAt: FIXTURE_T0 - 5_000 });

    const resolution = eventGroupResolution(group, actual, [older, history({ succeededAt: FIXTURE_T0 + 62_000 })]);

    expect(resolution).toEqual({ state: 'mounted', mountedAt: FIXTURE_T0 + 62_000 });
  });

  it('is resolved without a time when the history does not have the success', () => {
    const actual = new Map([[PG, actualVolume(PG, [{ podUid: DB, mounted: true }])]]);

    expect(eventGroupResolution(group, actual, [])).toEqual({ state: 'mounted', mountedAt: null });
  });

  it('is over (pods gone) once none of its pods is wanted or has the volume, and open while one is still wanted', () => {
    expect(eventGroupResolution(group, new Map(), [], new Set())).toEqual({ state: 'pods-gone' });
    expect(eventGroupResolution(group, new Map(), [], new Set([DB]))).toEqual({ state: 'open' });
  });

  it('never resolves other reasons, nor Normal events', () => {
    const actual = new Map([[PG, actualVolume(PG, [{ podUid: DB, mounted: true }])]]);

    expect(eventGroupResolution({ ...group, reason: 'VolumeResizeFailed' }, actual, [])).toEqual({ state: 'open' });
    expect(eventGroupResolution({ ...group, type: 'Normal' }, actual, [])).toEqual({ state: 'open' });
  });
});

describe('eventsByVolume', () => {
  it('groups per volume, unresolved volumes first, node events last', () => {
    const snapshot = {
      ...emptySnapshot(),
      desired: { pods: [{ uid: DB, namespace: 'default', name: 'db', volumes: [] }] },
      actual: { volumes: [actualVolume(DATA, [{ podUid: DB, mounted: true }])] },
      operationHistory: [history({ volume: DATA, succeededAt: FIXTURE_T0 + 9_000 })],
    };
    const events = [
      failedMount(FIXTURE_T0, { volume: DATA }),
      failedMount(FIXTURE_T0 + 1_000),
      failedMount(FIXTURE_T0 + 8_000, { volume: DATA }),
      { time: FIXTURE_T0 + 9_500, type: 'Normal' as const, reason: 'NodeReady', podUid: null, message: 'node is ready' },
    ];

    const volumes = eventsByVolume(events, snapshot);

    expect(volumes.map((v) => [v.volume, v.settled, v.groups.map((g) => g.count)])).toEqual([
      [PG, false, [1]],
      [DATA, true, [2]],
      [null, true, [1]],
    ]);
    expect(volumes[1]?.groups[0]?.resolution).toEqual({ state: 'mounted', mountedAt: FIXTURE_T0 + 9_000 });
  });
});

describe('operation history', () => {
  it('shows "stuck for" live while failing and the time it took once it succeeded', () => {
    expect(historyTiming(history(), FIXTURE_T0 + 61_000)).toEqual({ text: 'stuck for 61 s', stuckMs: 61_000, succeeded: false });
    expect(historyTiming(history(), FIXTURE_T0 + 62_000).text).toBe('stuck for 62 s');
    expect(historyTiming(history({ succeededAt: FIXTURE_T0 + 300_000 }), FIXTURE_T0 + 900_000)).toEqual({ text: 'recovered after 5 min', stuckMs: 300_000, succeeded: true });
  });

  it('finds the history of an operation by its key, and sorts failing (longest first) before recovered', () => {
    const failingLong = history({ firstFailureAt: FIXTURE_T0 - 10_000 });
    const failing = history({ volume: DATA });
    const recovered = history({ podUid: 'p', succeededAt: FIXTURE_T0 + 5 });
    const byKey = historyByOperationKey([failing, recovered]);

    expect(byKey.get(`volume_mount|${DATA}|${DB}|`)).toBe(failing);
    expect(sortHistory([recovered, failing, failingLong])).toEqual([failingLong, failing, recovered]);
  });
});
