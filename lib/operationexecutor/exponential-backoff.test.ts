import { describe, expect, it } from 'vitest';
import {
  ExponentialBackoff,
  ExponentialBackoffError,
  initialDurationBeforeRetryMs,
  isExponentialBackoff,
  maxDurationBeforeRetryMs,
} from './exponential-backoff.ts';

const t0 = Date.UTC(2024, 0, 1, 12, 0, 0);

function failedTimes(n: number, at = t0): ExponentialBackoff {
  const backoff = new ExponentialBackoff();
  for (let i = 0; i < n; i++) backoff.update(new Error(`failure ${i + 1}`), at);
  return backoff;
}

describe('ExponentialBackoff', () => {
  it('uses the upstream constants: 500ms initially and at most 2m2s', () => {
    expect(initialDurationBeforeRetryMs).toBe(500);
    expect(maxDurationBeforeRetryMs).toBe(2 * 60_000 + 2_000);
  });

  it.each([{ now: 0 }, { now: t0 }])('a backoff that never failed permits a retry at $now', ({ now }) => {
    // Arrange
    const backoff = new ExponentialBackoff();
    // Act / Assert
    expect(backoff.safeToRetry('op', now)).toBeNull();
    expect(backoff.retryAt()).toBeNull();
    expect(backoff.lastError).toBeNull();
    expect(backoff.lastErrorTime).toBe(0);
    expect(backoff.durationBeforeRetry).toBe(0);
  });

  it('doubles the wait on each failure and caps it at 2m2s', () => {
    // Arrange
    const backoff = new ExponentialBackoff();
    const seen: number[] = [];
    // Act
    for (let i = 0; i < 10; i++) {
      backoff.update(new Error('boom'), t0 + i);
      seen.push(backoff.durationBeforeRetry);
    }
    // Assert
    expect(seen).toEqual([500, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 122_000, 122_000]);
  });

  it('records the last error and when it happened', () => {
    const backoff = new ExponentialBackoff();
    const first = new Error('first');
    const second = new Error('second');
    backoff.update(first, t0);
    backoff.update(second, t0 + 700);
    expect(backoff.lastError).toBe(second);
    expect(backoff.lastErrorTime).toBe(t0 + 700);
    expect(backoff.retryAt()).toBe(t0 + 700 + 1_000);
  });

  it.each([
    { failures: 1, offset: 0, refused: true },
    { failures: 1, offset: 499, refused: true },
    { failures: 1, offset: 500, refused: true },
    { failures: 1, offset: 501, refused: false },
    { failures: 3, offset: 2_000, refused: true },
    { failures: 3, offset: 2_001, refused: false },
    { failures: 20, offset: 122_000, refused: true },
    { failures: 20, offset: 122_001, refused: false },
  ])(
    'after $failures failures a retry $offset ms later is refused: $refused',
    ({ failures, offset, refused }) => {
      // Arrange
      const backoff = failedTimes(failures);
      // Act
      const err = backoff.safeToRetry('op', t0 + offset);
      // Assert
      expect(err !== null).toBe(refused);
    },
  );

  it('GenerateNoRetriesPermittedMsg prints the error unquoted (%v), as a v1.34 kubelet logs it', () => {
    const backoff = failedTimes(1);
    backoff.lastError = new Error('MountVolume.SetUp failed for volume "data" : mount failed: "x"');
    expect(backoff.generateNoRetriesPermittedMsg('{volumeName:kubernetes.io/csi/d^h podName: nodeName:}')).toBe(
      'Operation for "{volumeName:kubernetes.io/csi/d^h podName: nodeName:}" failed. ' +
        'No retries permitted until 2024-01-01 12:00:00.5 +0000 UTC (durationBeforeRetry 500ms). ' +
        'Error: MountVolume.SetUp failed for volume "data" : mount failed: "x"',
    );
  });

  it('GenerateNoRetriesPermittedMsg prints a nil error as Go %v does', () => {
    const backoff = new ExponentialBackoff();
    expect(backoff.generateNoRetriesPermittedMsg('op')).toMatch(/\. Error: <nil>$/);
  });

  it('formats the 2m2s cap in the log line', () => {
    const backoff = failedTimes(12);
    expect(backoff.generateNoRetriesPermittedMsg('op')).toBe(
      'Operation for "op" failed. No retries permitted until 2024-01-01 12:02:02 +0000 UTC ' +
        '(durationBeforeRetry 2m2s). Error: failure 12',
    );
  });
});

describe('ExponentialBackoffError', () => {
  it('carries a snapshot of the backoff and formats its message like Go', () => {
    // Arrange
    const backoff = failedTimes(2);
    // Act
    const err = backoff.safeToRetry('{volumeName:v podName:p nodeName:}', t0 + 10);
    backoff.update(new Error('later'), t0 + 5_000);
    // Assert
    expect(err).toBeInstanceOf(ExponentialBackoffError);
    expect(err?.message).toBe(
      'Failed to create operation with name "{volumeName:v podName:p nodeName:}". ' +
        'An operation with that name failed at 2024-01-01 12:00:00 +0000 UTC. ' +
        'No retries permitted until 2024-01-01 12:00:01 +0000 UTC (1s). Last error: "failure 2".',
    );
    expect(err?.operationName).toBe('{volumeName:v podName:p nodeName:}');
    expect(err?.lastErrorTime).toBe(t0);
    expect(err?.durationBeforeRetry).toBe(1_000);
    expect(err?.lastError?.message).toBe('failure 2');
    expect(err?.retryAt).toBe(t0 + 1_000);
    expect(err?.name).toBe('ExponentialBackoffError');
  });

  it.each([
    { name: 'an exponential backoff error', err: failedTimes(1).safeToRetry('op', t0), want: true },
    { name: 'a plain error', err: new Error('Failed to create operation with name'), want: false },
    { name: 'a string', err: 'ExponentialBackoffError', want: false },
    { name: 'null', err: null, want: false },
  ])('isExponentialBackoff recognises $name: $want', ({ err, want }) => {
    expect(isExponentialBackoff(err)).toBe(want);
  });
});
