/**
 * Exponential backoff for failed volume operations (kubelet
 * `pkg/util/goroutinemap/exponentialbackoff`, v1.34 behaviour). One {@link ExponentialBackoff}
 * belongs to one entry of the nested pending operations table; it remembers the last failure and
 * how long a new attempt with the same operation name is refused.
 *
 * Time is passed in explicitly (epoch milliseconds from the injected Clock), so this module
 * never reads the wall clock.
 */

import { formatGoDuration, formatGoTime, goQuote } from '../volume/util/go-format.ts';

/**
 * The time after an error during which a new operation with the same target is refused (when
 * exponential backoff on error is enabled). Each successive error doubles the wait.
 */
export const initialDurationBeforeRetryMs = 500;

/**
 * The largest value the wait grows to through exponential backoff. The value is slightly offset
 * from 2 minutes to make timeouts due to this constant recognizable.
 */
export const maxDurationBeforeRetryMs = 122_000;

/**
 * Go's `%q` of an error value: the quoted `Error()` text, or `%!q(<nil>)` for a nil error (the
 * refusal message quotes its last error; the failure log line does not).
 */
function quoteError(err: Error | null): string {
  return err === null ? '%!q(<nil>)' : goQuote(err.message);
}

/**
 * The last failure of an operation and how long retries are not permitted after it.
 *
 * A fresh instance (no failure yet) always permits a retry. Each {@link update} records a
 * failure: the first sets the wait to 500 ms, every further one doubles it, capped at 2m2s.
 * The state is only reset by replacing the instance (the table deletes the entry on success, or
 * replaces the backoff when a different operation name runs on the same key).
 */
export class ExponentialBackoff {
  /** The error of the last failure; `null` before the first failure. */
  lastError: Error | null = null;
  /** When the last failure was recorded, in epoch milliseconds; `0` means never. */
  lastErrorTime = 0;
  /** How long after {@link lastErrorTime} retries are refused, in ms; `0` before the first failure. */
  durationBeforeRetry = 0;

  /**
   * Returns an {@link ExponentialBackoffError} while the backoff window has not expired, i.e.
   * while `now - lastErrorTime <= durationBeforeRetry`; a retry is allowed only when strictly
   * past the window. Returns `null` when a retry is permitted (always before the first failure).
   * `operationName` only labels the error message.
   */
  safeToRetry(operationName: string, now: number): ExponentialBackoffError | null {
    // Go's zero time.Time lies far in the past, so a backoff that never failed always permits.
    if (this.durationBeforeRetry === 0 && this.lastError === null) return null;
    if (now - this.lastErrorTime <= this.durationBeforeRetry) {
      return new ExponentialBackoffError(operationName, this);
    }
    return null;
  }

  /**
   * Records a failure at `now`: the wait becomes 500 ms if none was set, else twice the previous
   * wait capped at 2m2s. Sets {@link lastError} and {@link lastErrorTime}.
   */
  update(err: Error, now: number): void {
    if (this.durationBeforeRetry === 0) {
      this.durationBeforeRetry = initialDurationBeforeRetryMs;
    } else {
      this.durationBeforeRetry = Math.min(2 * this.durationBeforeRetry, maxDurationBeforeRetryMs);
    }
    this.lastError = err;
    this.lastErrorTime = now;
  }

  /**
   * The end of the backoff window (`lastErrorTime + durationBeforeRetry`), or `null` before the
   * first failure. A retry is permitted strictly after this instant.
   */
  retryAt(): number | null {
    if (this.durationBeforeRetry === 0 && this.lastError === null) return null;
    return this.lastErrorTime + this.durationBeforeRetry;
  }

  /**
   * The log line written when an operation fails:
   * `Operation for %q failed. No retries permitted until <time> (durationBeforeRetry <duration>). Error: %v`.
   * The error is printed as is (`%v`), not quoted: a v1.34 kubelet logs
   * `… (durationBeforeRetry 2m2s). Error: MountVolume.SetUp failed for volume "data" (UniqueName: …) …`,
   * so searches and parsers written against kubelet logs match this line too.
   */
  generateNoRetriesPermittedMsg(operationName: string): string {
    return (
      `Operation for ${goQuote(operationName)} failed. ` +
      `No retries permitted until ${formatGoTime(this.lastErrorTime + this.durationBeforeRetry)} ` +
      `(durationBeforeRetry ${formatGoDuration(this.durationBeforeRetry)}). ` +
      `Error: ${this.lastError === null ? '<nil>' : this.lastError.message}`
    );
  }
}

/**
 * Returned by {@link ExponentialBackoff.safeToRetry} (and thrown by the pending operations table)
 * when a new operation can not start because a previous operation with the same name failed
 * within the backoff window. It carries a snapshot of the backoff at the time of the refusal.
 */
export class ExponentialBackoffError extends Error {
  override readonly name = 'ExponentialBackoffError';
  /** The label of the refused operation (the table uses the `%+v` of the operation key). */
  readonly operationName: string;
  /** When the previous attempt failed, in epoch milliseconds. */
  readonly lastErrorTime: number;
  /** The backoff window in ms; retries are permitted strictly after `lastErrorTime + durationBeforeRetry`. */
  readonly durationBeforeRetry: number;
  /** The error of the previous attempt. */
  readonly lastError: Error | null;

  constructor(operationName: string, backoff: ExponentialBackoff) {
    const retryAt = backoff.lastErrorTime + backoff.durationBeforeRetry;
    super(
      `Failed to create operation with name ${goQuote(operationName)}. ` +
        `An operation with that name failed at ${formatGoTime(backoff.lastErrorTime)}. ` +
        `No retries permitted until ${formatGoTime(retryAt)} (${formatGoDuration(backoff.durationBeforeRetry)}). ` +
        `Last error: ${quoteError(backoff.lastError)}.`,
    );
    this.operationName = operationName;
    this.lastErrorTime = backoff.lastErrorTime;
    this.durationBeforeRetry = backoff.durationBeforeRetry;
    this.lastError = backoff.lastError;
  }

  /** The end of the backoff window in epoch milliseconds. */
  get retryAt(): number {
    return this.lastErrorTime + this.durationBeforeRetry;
  }
}

/**
 * `IsExponentialBackoff`: true when a new operation could not start because a previous one with
 * the same name failed within its backoff window. Callers treat it as an expected, quiet state.
 */
export function isExponentialBackoff(err: unknown): err is ExponentialBackoffError {
  return err instanceof ExponentialBackoffError;
}
