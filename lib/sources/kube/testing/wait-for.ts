/**
 * Test support: wait for a condition on real time with a deadline, instead of sleeping. Polls
 * every `pollMs` (≤ 50 ms); rejects with {@link WaitTimeoutError} naming `what` after
 * `timeoutMs`, so a test fails with a reason instead of hanging.
 */
import { realClock } from '../../../clock/clock.ts';

export class WaitTimeoutError extends Error {
  override readonly name = 'WaitTimeoutError';
}

export function isWaitTimeoutError(err: unknown): err is WaitTimeoutError {
  return err instanceof WaitTimeoutError;
}

export interface WaitOptions {
  /** What is awaited, for the failure message. */
  what: string;
  timeoutMs?: number;
  pollMs?: number;
}

/** Resolves with the elapsed milliseconds once `condition()` holds. */
export async function waitFor(condition: () => boolean, options: WaitOptions): Promise<number> {
  const timeoutMs = options.timeoutMs ?? 4000;
  const pollMs = Math.min(options.pollMs ?? 10, 50);
  const start = realClock.monotonic();
  for (;;) {
    if (condition()) return realClock.monotonic() - start;
    if (realClock.monotonic() - start >= timeoutMs) throw new WaitTimeoutError(`${options.what}: not reached within ${timeoutMs} ms`);
    await new Promise<void>((resolve) => realClock.setTimeout(resolve, pollMs));
  }
}
