/**
 * The engine never reads the wall clock or arms timers directly: everything time-related goes
 * through a Clock so tests run on fake time and benchmarks on real time.
 */

/** Milliseconds since the Unix epoch. */
export type Millis = number;

/** An opaque timer handle returned by {@link Clock.setTimeout}. */
export interface TimerHandle {
  readonly __timer: unique symbol;
}

export interface Clock {
  /** Current time in milliseconds since the epoch. */
  now(): Millis;
  /** Calls `fn` once after `ms` milliseconds (0 = as soon as possible, after current work). */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer; a no-op for a timer that already fired or was cleared. */
  clearTimeout(handle: TimerHandle): void;
  /** A high-resolution monotonic reading in milliseconds, for measuring durations. */
  monotonic(): number;
}

/** The process clock. */
export const realClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms) as unknown as TimerHandle,
  clearTimeout: (handle) => {
    clearTimeout(handle as unknown as ReturnType<typeof setTimeout>);
  },
  monotonic: () => performance.now(),
};
