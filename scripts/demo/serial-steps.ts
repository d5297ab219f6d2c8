/**
 * Timed steps of a demo workload (scripts/demo/workload.ts, scripts/cluster/demo.ts): each step
 * runs once after its delay, never two at once (a step waits for the one before), and a failing
 * step is reported through `onError` while the later ones still run. {@link SerialSteps.stop}
 * cancels what has not started and waits for the step in flight.
 */
export class SerialSteps {
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();
  private inFlight: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(private readonly onError: (err: unknown) => void) {}

  /** Runs `step` once after `ms`; nothing after {@link stop}. */
  after(ms: number, step: () => Promise<void>): void {
    if (this.stopped) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (this.stopped) return;
      this.inFlight = this.inFlight.then(step).catch(this.onError);
    }, ms);
    this.timers.add(timer);
  }

  /** Runs `step` after `firstMs` and then every `periodMs`. */
  every(periodMs: number, firstMs: number, step: () => Promise<void>): void {
    this.after(firstMs, async () => {
      await step();
      this.every(periodMs, periodMs, step);
    });
  }

  /** Cancels every timer and waits for the step in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    await this.inFlight;
  }
}
