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

/**
 * The delay from now to the next multiple of `periodMs` on `clock`'s time, skipping a multiple
 * closer than the tolerance below: in [tolerance, periodMs + tolerance).
 *
 * For background loops that only poll (safety nets, housekeeping): a loop that re-arms with it
 * fires on the clock's period grid, so loops of the same period, or of multiples of it, wake the
 * process together instead of each at its own phase. On an idle agent the wake-ups are most of
 * the CPU it uses (each costs the process 0.2–0.9 ms on a 2-core VM, whatever the timer does),
 * and five 1 s loops at five phases are five wake-ups a second where one would do.
 */
export function delayToNextTick(clock: Clock, periodMs: number): number {
  const delay = periodMs - (((clock.now() % periodMs) + periodMs) % periodMs);
  // A timer may fire a little before its instant on this clock (Node measures timers from the
  // event loop's cached time): re-armed then, it must take the next instant, not fire again now.
  return delay < Math.min(tickToleranceMs, periodMs / 10) ? delay + periodMs : delay;
}

/** How early a loop may wake for a tick and still count as on it (see delayToNextTick). */
const tickToleranceMs = 50;
