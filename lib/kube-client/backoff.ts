/**
 * The backoff of Kubernetes API retries: an informer's restart after a failed list or watch, a
 * failed GET of a referenced object, discovery's relist. Not the kubelet's operation backoff
 * (lib/operationexecutor/exponential-backoff.ts, 500 ms doubling to 2 min 2 s per volume
 * operation), which belongs to the engine and stays there.
 */

/**
 * Exponential backoff settings: the first delay, doubled after each further failure up to a cap,
 * and back to the first delay after a success.
 */
export interface Backoff {
  readonly initialMs: number;
  readonly maxMs: number;
}

/** The delay after `previousMs` (0 = no failure yet): initial, then doubling up to the cap. */
export function nextBackoffMs(backoff: Backoff, previousMs: number): number {
  if (previousMs <= 0) return Math.min(backoff.initialMs, backoff.maxMs);
  return Math.min(previousMs * 2, backoff.maxMs);
}
