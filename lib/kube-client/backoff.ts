/**
 * Exponential backoff settings: the first delay, doubled after each further failure up to a cap,
 * and back to the first delay after a success.
 */
export interface Backoff {
  initialMs: number;
  maxMs: number;
}

/** The delay after `previousMs` (0 = no failure yet): initial, then doubling up to the cap. */
export function nextBackoffMs(backoff: Backoff, previousMs: number): number {
  if (previousMs <= 0) return Math.min(backoff.initialMs, backoff.maxMs);
  return Math.min(previousMs * 2, backoff.maxMs);
}
