import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../lib/clock/fake-clock.ts';
import { discardLogger } from '../lib/volume/logger.ts';
import { uniqueVolumeName } from '../lib/volume/types.ts';
import { OperationHistory, type OperationRecord } from '../lib/volumemanager/index.ts';
import { OperationHistoryStore, type OperationHistorySource } from './operation-history-store.ts';

const T0 = Date.UTC(2026, 11, 1, 18, 51, 20);

function failure(at: number, pod = 'pod-1'): OperationRecord {
  return {
    operationName: 'volume_mount',
    volume: uniqueVolumeName('kubernetes.io/csi/loop^v'),
    pod: pod as OperationRecord['pod'],
    node: '',
    plugin: 'kubernetes.io/csi:loop',
    migrated: false,
    generatedAt: at,
    startedAt: at,
    finishedAt: at + 100,
    outcome: 'failure',
    error: 'rpc error: code = Unavailable',
  };
}

/** An engine stand-in: the real history, fed by hand, with the VolumeManager's record listeners. */
function engine(initial: OperationHistory): OperationHistorySource & { finish(record: OperationRecord): void } {
  const listeners = new Set<(record: OperationRecord) => void>();
  return {
    getOperationHistory: () => initial.list(),
    onOperationRecord: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    finish: (record) => {
      initial.record(record);
      for (const l of listeners) l(record);
    },
  };
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'history-store-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('OperationHistoryStore', () => {
  it('keeps a failing operation across a restart, and its attempts go on counting after it', async () => {
    const file = join(dir, 'volumescope', 'operation-history.jsonl');
    const clock = new FakeClock(T0);
    const store = new OperationHistoryStore({ file, clock, logger: discardLogger });
    const before = engine(new OperationHistory({ initial: store.loaded() }));
    store.follow(before);
    for (let i = 0; i < 3; i++) before.finish(failure(T0 + i * 1_000));
    await store.flush(before);

    const restarted = new OperationHistoryStore({ file, clock, logger: discardLogger });
    const after = engine(new OperationHistory({ initial: restarted.loaded() }));
    after.finish(failure(T0 + 10_000));

    expect(after.getOperationHistory()).toMatchObject([{ pod: 'pod-1', node: '', firstFailureAt: T0 + 100, attemptsTotal: 4, succeededAt: null }]);
  });

  it('saves at stop what finished after it stopped following (the grace period)', async () => {
    const file = join(dir, 'operation-history.jsonl');
    const clock = new FakeClock(T0);
    const store = new OperationHistoryStore({ file, clock, logger: discardLogger });
    const source = engine(new OperationHistory());
    const unfollow = store.follow(source);
    unfollow();
    source.finish(failure(T0, 'late'));

    await store.flush(source);

    expect(new OperationHistoryStore({ file, clock, logger: discardLogger }).loaded().map((v) => v.pod)).toEqual(['late']);
  });
});
