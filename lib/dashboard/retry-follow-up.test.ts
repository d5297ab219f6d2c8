import { describe, expect, it } from 'vitest';
import type { Operation, OperationHistory } from '../api/index.ts';
import { exampleSnapshot, FIXTURE_T0 } from '../api/testing/snapshot-fixtures.ts';
import { appendFollowUp, FOLLOW_UP_STEPS, retryFollowUp, retryTargetText, volumeShortName, type RetryFollowUp } from './retry-follow-up.ts';

const example = exampleSnapshot();
const before = example.operations[0] as Operation;
const history = example.operationHistory[0] as OperationHistory;
const SAME_ERROR = before.lastError;

describe('retryTargetText', () => {
  it('names the operation, the volume and the pod in words', () => {
    expect(retryTargetText(before, { podName: 'default/db-0', volumeName: 'pgdata' })).toBe('mount volume pgdata for pod default/db-0');
  });

  it('shortens the unique volume name and falls back to the pod UID when no names are known', () => {
    expect(retryTargetText(before)).toBe(`mount volume vol-pg for pod uid ${before.podUid ?? ''}`);
    expect(retryTargetText({ ...before, operationName: 'unmount_device', podUid: null })).toBe('unmount the device of volume vol-pg');
    expect(retryTargetText({ ...before, operationName: 'some_new_operation' })).toMatch(/^some_new_operation of volume vol-pg/);
  });

  it.each([
    { unique: 'kubernetes.io/csi/csi-loop.volumescope.dev^vol-pg', short: 'vol-pg' },
    { unique: 'kubernetes.io/configmap/5c0a4c2e-0d3b-4f0e-9a51-2f6f1f3c7e10-config', short: 'config' },
    { unique: 'kubernetes.io/host-path/data', short: 'data' },
  ])('volumeShortName($unique) is $short', ({ unique, short }) => {
    expect(volumeShortName(unique)).toBe(short);
  });
});

describe('retryFollowUp', () => {
  const after = (operations: Operation[], operationHistory: OperationHistory[] = [history]) => retryFollowUp(before, { operations, operationHistory });

  it('waits while the cleared operation is not back in the table, or is still the failure of before', () => {
    expect(after([])).toEqual({ kind: 'waiting' });
    expect(after([before])).toEqual({ kind: 'waiting' });
  });

  it('says retrying while an attempt runs', () => {
    expect(after([{ ...before, state: 'running', startedAt: FIXTURE_T0 + 62_000 }])).toEqual({ kind: 'retrying' });
  });

  it('says failed again with the same error, with the new operation (its next retry), after a later failure', () => {
    const again: Operation = { ...before, failures: 1, lastErrorAt: FIXTURE_T0 + 63_000, retryAt: FIXTURE_T0 + 63_500, durationBeforeRetryMs: 500 };
    expect(after([again])).toEqual({ kind: 'failed-again', sameError: true, op: again });
    const other: Operation = { ...again, lastError: 'MountVolume.MountDevice failed for volume "pgdata" : permission denied' };
    expect(after([other])).toEqual({ kind: 'failed-again', sameError: false, op: other });
  });

  it('says mounted once the history records a success after the last failure', () => {
    const done: OperationHistory = { ...history, succeededAt: FIXTURE_T0 + 64_000 };
    expect(after([], [done])).toEqual({ kind: 'succeeded', text: 'mounted', at: FIXTURE_T0 + 64_000 });
    // A success older than the failure the dialog showed is an earlier episode, not this retry's.
    expect(after([], [{ ...history, succeededAt: FIXTURE_T0 + 1_000 }])).toEqual({ kind: 'waiting' });
  });
});

describe('appendFollowUp', () => {
  const failed = (at: number, retryAt: number): RetryFollowUp => ({ kind: 'failed-again', sameError: true, op: { ...before, lastErrorAt: at, retryAt, lastError: SAME_ERROR } });

  it('keeps the steps of one retry in order: waiting → retrying → failed again → retrying → mounted', () => {
    let steps: readonly RetryFollowUp[] = [];
    const seen: RetryFollowUp[] = [
      { kind: 'waiting' },
      { kind: 'waiting' },
      { kind: 'retrying' },
      failed(FIXTURE_T0 + 63_000, FIXTURE_T0 + 63_500),
      { kind: 'retrying' },
      { kind: 'succeeded', text: 'mounted', at: FIXTURE_T0 + 64_000 },
    ];
    for (const s of seen) steps = appendFollowUp(steps, s);
    expect(steps.map((s) => s.kind)).toEqual(['waiting', 'retrying', 'failed-again', 'retrying', 'succeeded']);
  });

  it('returns the same array for the same step, and a new failure as a new step', () => {
    const one = appendFollowUp([], failed(FIXTURE_T0 + 63_000, FIXTURE_T0 + 63_500));
    expect(appendFollowUp(one, one[0] as RetryFollowUp)).toBe(one);
    expect(appendFollowUp(one, failed(FIXTURE_T0 + 64_000, FIXTURE_T0 + 65_000))).toHaveLength(2);
  });

  it(`keeps at most the latest ${FOLLOW_UP_STEPS} steps`, () => {
    let steps: readonly RetryFollowUp[] = [];
    for (let i = 0; i < 20; i++) steps = appendFollowUp(steps, i % 2 === 0 ? { kind: 'retrying' } : failed(FIXTURE_T0 + i * 1_000, FIXTURE_T0 + i * 1_000 + 500));
    expect(steps).toHaveLength(FOLLOW_UP_STEPS);
    expect(steps[steps.length - 1]).toEqual(failed(FIXTURE_T0 + 19_000, FIXTURE_T0 + 19_500));
  });
});
