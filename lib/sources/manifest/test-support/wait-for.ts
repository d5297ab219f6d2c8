/**
 * Test support: wait for a condition on real time with a deadline, instead of sleeping. Polls
 * every few milliseconds; resolves with the elapsed time so tests can report latencies.
 */
import { realClock } from '../../../clock/clock.ts';

export class WaitTimeoutError extends Error {
  override readonly name = 'WaitTimeoutError';
}

export function isWaitTimeoutError(err: unknown): err is WaitTimeoutError {
  return err instanceof WaitTimeoutError;
}

/**
 * Resolves with the elapsed milliseconds once `condition()` is true; rejects with
 * {@link WaitTimeoutError} (mentioning `what`) if it is still false after `timeoutMs`.
 */
export async function waitFor(condition: () => boolean, timeoutMs: number, what = 'condition', pollMs = 2): Promise<number> {
  const start = realClock.monotonic();
  for (;;) {
    if (condition()) return realClock.monotonic() - start;
    const elapsed = realClock.monotonic() - start;
    if (elapsed >= timeoutMs) throw new WaitTimeoutError(`${what} not met within ${timeoutMs} ms`);
    await new Promise<void>((resolve) => realClock.setTimeout(resolve, pollMs));
  }
}
