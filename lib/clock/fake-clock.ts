import type { Clock, Millis, TimerHandle } from './clock.ts';

interface FakeTimer {
  id: number;
  due: Millis;
  fn: () => void;
}

/** Lets pending promise callbacks and I/O callbacks run (one macrotask turn). */
export function flushMicrotasks(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** How {@link FakeClock.runUntil} treats work that runs on real I/O. */
export interface RunUntilOptions {
  /** While true, the clock stands still and real time passes (see `waitRealTimeWhile`). */
  holdWhile?: () => boolean;
  /** Real-time limit of one hold (default 60 s). */
  holdLimitRealMs?: number;
}

/**
 * A manually advanced clock for tests. Time moves only through {@link advance} (or
 * {@link runUntil}); timers fire in due-time order, and between timers the pending promise
 * work is flushed so asynchronous operations complete as they would on a real clock.
 */
export class FakeClock implements Clock {
  private current: Millis;
  private nextId = 1;
  private timers: FakeTimer[] = [];

  constructor(start: Millis = Date.UTC(2024, 0, 1, 12, 0, 0)) {
    this.current = start;
  }

  now(): Millis {
    return this.current;
  }

  monotonic(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const timer: FakeTimer = { id: this.nextId++, due: this.current + Math.max(0, ms), fn };
    this.timers.push(timer);
    return timer.id as unknown as TimerHandle;
  }

  clearTimeout(handle: TimerHandle): void {
    const id = handle as unknown as number;
    this.timers = this.timers.filter((t) => t.id !== id);
  }

  /** Number of armed timers (for tests that assert nothing is left scheduled). */
  pendingTimers(): number {
    return this.timers.length;
  }

  /** Runs timers that are due now, and the promise work they trigger, until none is due. */
  async flush(): Promise<void> {
    await flushMicrotasks();
    for (;;) {
      const due = this.popDue(this.current);
      if (due === undefined) break;
      due.fn();
      await flushMicrotasks();
    }
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way, in order. */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    await this.flush();
    for (;;) {
      const next = this.popDue(target);
      if (next === undefined) break;
      this.current = Math.max(this.current, next.due);
      next.fn();
      await flushMicrotasks();
    }
    this.current = target;
    await this.flush();
  }

  /**
   * Advances time in `stepMs` steps until `condition` holds, failing after `limitMs` of fake time.
   * This is the fake-time form of "wait for a condition with a deadline".
   */
  async runUntil(condition: () => boolean, limitMs = 60_000, stepMs = 10, options: RunUntilOptions = {}): Promise<void> {
    await this.flush();
    let elapsed = 0;
    while (!condition()) {
      if (elapsed >= limitMs) {
        throw new Error(`condition not met within ${limitMs} ms of fake time`);
      }
      if (options.holdWhile !== undefined && options.holdWhile()) {
        await this.waitRealTimeWhile(options.holdWhile, options.holdLimitRealMs ?? 60_000);
        continue;
      }
      await this.advance(stepMs);
      elapsed += stepMs;
    }
  }

  /**
   * Waits in real time, without moving the clock, while `hold` is true: work on real I/O (a
   * mount, a disk write) then takes no fake time however slow the machine is. Fails after
   * `limitRealMs` of real time so a hang is reported, not waited for forever.
   */
  private async waitRealTimeWhile(hold: () => boolean, limitRealMs: number): Promise<void> {
    // Each round waits for a real 1 ms timer, so the rounds count a lower bound of real time
    // (the clock module itself may not read the wall clock).
    for (let waitedMs = 0; hold(); waitedMs++) {
      if (waitedMs >= limitRealMs) {
        throw new Error(`work on real I/O still running after ${limitRealMs} ms of real time`);
      }
      await new Promise<void>((resolve) => {
        setTimeout(resolve, 1);
      });
      await this.flush();
    }
  }

  private popDue(limit: Millis): FakeTimer | undefined {
    let best: FakeTimer | undefined;
    for (const t of this.timers) {
      if (t.due <= limit && (best === undefined || t.due < best.due || (t.due === best.due && t.id < best.id))) {
        best = t;
      }
    }
    if (best !== undefined) {
      const id = best.id;
      this.timers = this.timers.filter((t) => t.id !== id);
    }
    return best;
  }
}
