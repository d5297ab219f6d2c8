/**
 * Test support: wait for a state on real time with a deadline, instead of sleeping. For the
 * waits that depend on real I/O (sockets, files, child processes); code on the fake clock
 * advances the clock instead.
 */
import { realClock } from '../clock.ts';

/** The wait's deadline passed before its condition held. */
export class WaitTimeoutError extends Error {
  override readonly name = 'WaitTimeoutError';
}

export function isWaitTimeoutError(err: unknown): err is WaitTimeoutError {
  return err instanceof WaitTimeoutError;
}

/** Ten seconds: generous, so a loaded machine slows a test down instead of failing it. */
export const defaultWaitTimeoutMs = 10_000;

export interface WaitOptions {
  /** What is awaited, for the failure message. */
  what: string;
  /** Default {@link defaultWaitTimeoutMs}. */
  timeoutMs?: number;
  /** How often the probe runs; default 20 ms. */
  pollMs?: number;
  /** The state seen last, appended to the failure message. */
  describe?: () => string;
}

/**
 * Runs `probe` until it returns a value other than undefined or false and resolves with that
 * value. A probe that throws counts as not yet (the state may be reachable only later, as an
 * agent's socket before it listens). Rejects with {@link WaitTimeoutError} after `timeoutMs`:
 * `<what>: not reached within <timeoutMs> ms`, then what `describe` says or the last error.
 */
export async function waitFor<T>(probe: () => T | undefined | false | Promise<T | undefined | false>, options: WaitOptions): Promise<T> {
  const timeoutMs = options.timeoutMs ?? defaultWaitTimeoutMs;
  const deadline = realClock.monotonic() + timeoutMs;
  for (;;) {
    let lastError: unknown = null;
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      lastError = err;
    }
    if (realClock.monotonic() >= deadline) {
      const detail = options.describe?.() ?? (lastError instanceof Error ? lastError.message : '');
      throw new WaitTimeoutError(`${options.what}: not reached within ${timeoutMs} ms${detail === '' ? '' : `; last: ${detail}`}`);
    }
    await new Promise<void>((resolve) => realClock.setTimeout(resolve, options.pollMs ?? 20));
  }
}
