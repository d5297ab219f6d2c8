/**
 * Gives the heap pages a burst left behind back to the operating system.
 *
 * A burst (a restart confirming 10,000 volumes, a scale-up) grows V8's heap to a peak; the
 * mark-compacts after it shrink the heap again, but V8 keeps the freed pages in its page pool,
 * resident, and releases them only in a memory-reducing GC, which its memory reducer starts once
 * the process allocates almost nothing. An idle agent still runs its loops (the reconciler and
 * the populator every 100 ms, the mount health checks), so at 10,000 volumes that moment never
 * comes: measured 142 MB pooled (1,125 resident 256 KB pages against a 104 MB heap) a minute
 * after the burst, in a 320–380 MB process.
 *
 * Contract: every `periodMs` the trimmer reads the heap's committed size and keeps its peak.
 * Once the peak has grown at least `minGrowthBytes` above the size after the last trim (or at
 * start), and the volume manager has been quiet for `quietMs` ({@link noteActivity} on each of
 * its changes: the burst is over), it runs one full GC (`gc`) and starts over from the size
 * after it. Without `gc` (the process was started without `--expose-gc`) it does nothing. At
 * most one trim per `minIntervalMs`.
 *
 * The GC is V8's last-resort collection, the only one that empties the page pool: synchronous
 * and compacting, measured about 130 ms (two passes) at 10,000 volumes with 75 MB live, once
 * after a burst. With it the agent was 168–177 MB resident 5 s after a scale-up to 10,000
 * volumes when the trim had run by then (325 MB in a run where it had not yet), and 227 MB 30 s
 * later; 334–373 MB without it (`npm run bench:agent -- --only memory`).
 */
import { delayToNextTick, type Clock, type TimerHandle } from '../../lib/clock/clock.ts';
import type { Logger } from '../../lib/volume/logger.ts';

/** Defaults: look every second; trim after 64 MB of growth and 1.5 s without a change, at most every 10 s. */
export const HEAP_TRIM_DEFAULTS = { periodMs: 1_000, minGrowthBytes: 64 * 1024 * 1024, quietMs: 1_500, minIntervalMs: 10_000 } as const;

export interface HeapTrimOptions {
  clock: Clock;
  logger: Logger;
  /** The heap's committed size in bytes now (`v8.getHeapStatistics().total_heap_size`). */
  heapTotal: () => number;
  /** Runs a full GC; null when the process has none (no `--expose-gc`). */
  gc: (() => void) | null;
  periodMs?: number;
  minGrowthBytes?: number;
  quietMs?: number;
  minIntervalMs?: number;
}

export class HeapTrimmer {
  private timer: TimerHandle | null = null;
  /** The committed size after the last trim (or at start). */
  private base = 0;
  /** The largest committed size seen since then. */
  private peak = 0;
  private lastActivityAt = Number.NEGATIVE_INFINITY;
  private lastTrimAt = Number.NEGATIVE_INFINITY;
  /** How many trims ran (for tests and the log). */
  trims = 0;

  constructor(private readonly opts: HeapTrimOptions) {}

  start(): void {
    if (this.opts.gc === null || this.timer !== null) return;
    this.base = this.peak = this.opts.heapTotal();
    this.schedule();
  }

  stop(): void {
    if (this.timer !== null) this.opts.clock.clearTimeout(this.timer);
    this.timer = null;
  }

  /** The volume manager changed: a burst may still be going on. */
  noteActivity(): void {
    this.lastActivityAt = this.opts.clock.now();
  }

  /** One look (what each period runs). */
  check(): void {
    const gc = this.opts.gc;
    if (gc === null) return;
    const now = this.opts.clock.now();
    const total = this.opts.heapTotal();
    if (total > this.peak) this.peak = total;
    if (this.peak - this.base < (this.opts.minGrowthBytes ?? HEAP_TRIM_DEFAULTS.minGrowthBytes)) return;
    if (now - this.lastActivityAt < (this.opts.quietMs ?? HEAP_TRIM_DEFAULTS.quietMs)) return;
    if (now - this.lastTrimAt < (this.opts.minIntervalMs ?? HEAP_TRIM_DEFAULTS.minIntervalMs)) return;
    this.lastTrimAt = now;
    this.trims++;
    this.opts.logger.debug('heap trim: a full GC to release the pages of a burst', { peakMB: Math.round(this.peak / 1048576), heapMB: Math.round(total / 1048576) });
    gc();
    this.base = this.peak = this.opts.heapTotal();
  }

  private schedule(): void {
    this.timer = this.opts.clock.setTimeout(() => {
      this.timer = null;
      this.check();
      this.schedule();
    }, delayToNextTick(this.opts.clock, this.opts.periodMs ?? HEAP_TRIM_DEFAULTS.periodMs));
  }
}

/**
 * The process's last-resort full GC (`gc({ flavor: 'last-resort' })`, which also releases V8's
 * pooled pages), when it was started with `--expose-gc`; null otherwise.
 */
export function exposedGc(): (() => void) | null {
  const gc: unknown = (globalThis as { gc?: unknown }).gc;
  if (typeof gc !== 'function') return null;
  return () => {
    (gc as (options?: { type: string; execution: string; flavor: string }) => unknown)({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  };
}
