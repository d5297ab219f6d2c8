/**
 * A sliding-window rate limit on the agent's clock: at most `limit` acquisitions in any
 * `windowMs`. One per node for "retry now" and for clearing a forced TearDown's backoff
 * (`POST /api/v1/unmount`): clearing back-off is low risk, but a storm of retries must not hammer
 * a struggling driver or API server. It satisfies the engine's `OperatorRateLimiter`.
 */
import type { Clock } from '../../lib/clock/clock.ts';

/** The outcome of {@link SlidingWindowRateLimiter.tryAcquire}. */
export type RateLimitDecision = { ok: true } | { ok: false; retryAfterMs: number };

/** A limit or window that is not a positive number. */
export class RateLimiterOptionsError extends Error {
  override readonly name = 'RateLimiterOptionsError';
}

/** True for a {@link RateLimiterOptionsError}. */
export function isRateLimiterOptionsError(err: unknown): err is RateLimiterOptionsError {
  return err instanceof RateLimiterOptionsError;
}

export class SlidingWindowRateLimiter {
  /** Monotonic times of the acquisitions inside the current window, oldest first. */
  private readonly taken: number[] = [];

  /** Throws a {@link RateLimiterOptionsError} unless `limit` and `windowMs` are positive. */
  constructor(
    private readonly clock: Clock,
    readonly limit: number,
    readonly windowMs: number,
  ) {
    if (!(Number.isInteger(limit) && limit > 0 && windowMs > 0)) {
      throw new RateLimiterOptionsError(`a rate limit needs a positive integer limit and a positive window (got ${limit} per ${windowMs} ms)`);
    }
  }

  /** Takes one slot if the window has one; otherwise says how long until the oldest one frees. */
  tryAcquire(): RateLimitDecision {
    const now = this.clock.monotonic();
    while (this.taken.length > 0 && (this.taken[0] ?? now) <= now - this.windowMs) this.taken.shift();
    if (this.taken.length >= this.limit) {
      const oldest = this.taken[0] ?? now;
      return { ok: false, retryAfterMs: Math.max(1, Math.ceil(oldest + this.windowMs - now)) };
    }
    this.taken.push(now);
    return { ok: true };
  }
}
