import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { OperationRecord } from './operation-executor.ts';
import { OperationHistory } from './operation-history.ts';
import { uniqueVolumeName } from '../volume/types.ts';

const T0 = Date.UTC(2026, 11, 1, 18, 51, 20);

/** A finished attempt of `volume_mount` on volume `v` that started at `at` and ran `ms`. */
function attempt(at: number, ms: number, error: string | null, volume = 'kubernetes.io/csi/loop^v'): OperationRecord {
  return {
    operationName: 'volume_mount',
    volume: uniqueVolumeName(volume),
    pod: '',
    node: '',
    plugin: 'kubernetes.io/csi:loop',
    migrated: false,
    generatedAt: at,
    startedAt: at,
    finishedAt: at + ms,
    outcome: error === null ? 'success' : 'failure',
    error,
  };
}

describe('OperationHistory', () => {
  it('records nothing for an operation that only succeeds', () => {
    const history = new OperationHistory();

    const changed = history.record(attempt(T0, 10, null));

    expect(changed).toBe(false);
    expect(history.list()).toEqual([]);
  });

  it('keeps the first failure, every attempt with its duration and outcome, and the success time', () => {
    const history = new OperationHistory();

    history.record(attempt(T0, 100, 'rpc error: code = Unavailable'));
    history.record(attempt(T0 + 600, 200, 'rpc error: code = Unavailable'));
    history.record(attempt(T0 + 2_000, 50, null));

    expect(history.list()).toEqual([
      {
        operationName: 'volume_mount',
        volume: 'kubernetes.io/csi/loop^v',
        pod: '',
        node: '',
        firstFailureAt: T0 + 100,
        attemptsTotal: 3,
        attempts: [
          { startedAt: T0, durationMs: 100, error: 'rpc error: code = Unavailable' },
          { startedAt: T0 + 600, durationMs: 200, error: 'rpc error: code = Unavailable' },
          { startedAt: T0 + 2_000, durationMs: 50, error: null },
        ],
        succeededAt: T0 + 2_050,
      },
    ]);
  });

  it('keeps the last attempts only, but counts them all', () => {
    const history = new OperationHistory({ maxAttempts: 3 });

    for (let i = 0; i < 9; i++) history.record(attempt(T0 + i * 1_000, 10, `failure ${i}`));

    const [view] = history.list();
    expect(view?.attemptsTotal).toBe(9);
    expect(view?.attempts.map((a) => a.error)).toEqual(['failure 6', 'failure 7', 'failure 8']);
    expect(view?.firstFailureAt).toBe(T0 + 10);
  });

  it('starts a new episode when a key fails again after its success', () => {
    const history = new OperationHistory();
    history.record(attempt(T0, 10, 'first'));
    history.record(attempt(T0 + 1_000, 10, null));

    history.record(attempt(T0 + 5_000, 10, 'second'));

    expect(history.list()).toMatchObject([{ firstFailureAt: T0 + 5_010, attemptsTotal: 1, succeededAt: null }]);
  });

  it('replaces a view when it changes and never mutates one it handed out', () => {
    const history = new OperationHistory();
    history.record(attempt(T0, 10, 'first'));
    const [before] = history.list();

    history.record(attempt(T0 + 1_000, 10, 'again'));

    expect(before?.attemptsTotal).toBe(1);
    expect(before?.attempts).toHaveLength(1);
    expect(history.list()[0]).not.toBe(before);
  });

  it('drops ended episodes after the retention', () => {
    const history = new OperationHistory({ retainSucceededMs: 60_000 });
    history.record(attempt(T0, 10, 'first', 'a'));
    history.record(attempt(T0 + 1_000, 10, null, 'a'));

    history.record(attempt(T0 + 62_000, 10, 'other', 'b'));

    expect(history.list().map((v) => v.volume)).toEqual(['b']);
  });

  it('evicts ended episodes before ongoing ones when full', () => {
    const history = new OperationHistory({ maxEntries: 2 });
    history.record(attempt(T0, 10, 'x', 'ongoing'));
    history.record(attempt(T0 + 100, 10, 'x', 'ended'));
    history.record(attempt(T0 + 200, 10, null, 'ended'));

    history.record(attempt(T0 + 300, 10, 'x', 'new'));

    expect(history.list().map((v) => v.volume).sort()).toEqual(['new', 'ongoing']);
  });

  it('goes on counting a history it started from (an agent restart), within its bounds', () => {
    const before = new OperationHistory();
    before.record(attempt(T0, 10, 'other', 'b'));
    for (let i = 0; i < 4; i++) before.record(attempt(T0 + i * 1_000, 10, 'failed'));

    const after = new OperationHistory({ initial: before.list(), maxAttempts: 3, maxEntries: 1 });
    after.record(attempt(T0 + 10_000, 10, null));

    expect(after.list()).toMatchObject([{ volume: 'kubernetes.io/csi/loop^v', firstFailureAt: T0 + 10, attemptsTotal: 5, succeededAt: T0 + 10_010 }]);
    expect(after.list()[0]?.attempts.map((a) => a.error)).toEqual(['failed', 'failed', null]);
  });

  it('keeps its bounds and counts every attempt of an ongoing episode, whatever the records (property)', () => {
    const records = fc.array(
      fc.record({ volume: fc.constantFrom('a', 'b', 'c', 'd'), ms: fc.nat(5_000), ok: fc.boolean() }),
      { maxLength: 200 },
    );
    fc.assert(
      fc.property(records, (script) => {
        // As many keys as volumes: nothing is evicted, so the count can be checked against a model.
        const history = new OperationHistory({ maxAttempts: 5, maxEntries: 4 });
        const sinceFailure = new Map<string, number>();
        let now = T0;
        for (const { volume, ms, ok } of script) {
          history.record(attempt(now, ms, ok ? null : 'failed', volume));
          now += ms + 1;
          const n = sinceFailure.get(volume);
          if (!ok && (n === undefined || n < 0)) sinceFailure.set(volume, 1);
          else if (n !== undefined && n > 0) sinceFailure.set(volume, ok ? -1 : n + 1);
        }
        const views = history.list();
        expect(views.length).toBeLessThanOrEqual(4);
        for (const view of views) {
          expect(view.attempts.length).toBeLessThanOrEqual(5);
          expect(view.attempts.length).toBe(Math.min(5, view.attemptsTotal));
          expect(view.attempts[0]?.error === null && view.attemptsTotal === 1).toBe(false);
          if (view.succeededAt === null) expect(view.attemptsTotal).toBe(sinceFailure.get(view.volume));
        }
      }),
    );
  });
});
