/**
 * Shared fresh reads: every caller gets the result of a read that *started after its call*
 * (so "read now" holds exactly as with one read per call), but callers that arrive while a read
 * is running share the next one instead of starting one each. Many concurrent mount-table reads
 * (a reconstruction over thousands of volume directories asks the table for each of them) thus
 * cost a few reads rather than one per caller.
 */
export class FreshRead<T> {
  private running: Promise<T> | null = null;
  private queued: Promise<T> | null = null;

  constructor(private readonly read: () => Promise<T>) {}

  /** A result read after this call began. */
  get(): Promise<T> {
    if (this.queued !== null) return this.queued;
    if (this.running === null) return this.start();
    // The running read may have begun before this call: wait for it, then share the next one.
    const queued = this.running.then(
      () => this.startQueued(),
      () => this.startQueued(),
    );
    this.queued = queued;
    return queued;
  }

  private startQueued(): Promise<T> {
    this.queued = null;
    return this.start();
  }

  private start(): Promise<T> {
    const running = this.read().finally(() => {
      if (this.running === running) this.running = null;
    });
    this.running = running;
    return running;
  }
}
