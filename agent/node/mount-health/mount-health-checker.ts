/**
 * The periodic mount health check: statfs + stat of every pod volume path and staging path the
 * actual state knows, made through an {@link FsProbe} child process so a hung mount can never
 * block the agent (fs-probe.ts says why a child process).
 *
 * Cost is bounded per period, not per volume: every `periodMs` one batch of at most `batchSize`
 * paths is checked, the ones checked longest ago first (never-checked first), so the checks are
 * spread over time instead of all at once: with the defaults (10 s, 250 paths) 1,000 mounts are
 * each checked every 40 s. A volume with an operation running (mount, unmount, expansion…) is
 * skipped that period: the operation owns the path, and a check would race it. Within a batch a
 * path with no answer within `timeoutMs` is `hung`; at most `maxHungPerBatch` hung paths are
 * waited for per batch (each costs a timeout), the rest wait for the next period.
 *
 * The checker notifies (`onChange`) only when an entry's state changes or an entry comes or
 * goes, not after every batch: `checkedAt` in a published snapshot is as of the last rebuild.
 *
 * Every healthy answer carries the path's statfs numbers; the checker keeps the latest per path
 * ({@link MountHealthChecker.usage}) so the volume stats can use them instead of calling statfs
 * again, and answers found by others (the volume stats' own calls, {@link MountHealthChecker.absorb})
 * update the entries as a batch would: one view of which mounts hang.
 */
import type { MountHealth, MountHealthState } from '../../../lib/api/mount-health.ts';
import { delayToNextTick, type Clock, type TimerHandle } from '../../../lib/clock/clock.ts';
import type { Logger } from '../../../lib/volume/logger.ts';
import type { PathCheck, StatfsUsage } from '../fs-probe/fs-probe.ts';

/** Defaults: a batch every 10 s, 250 paths per batch, 5 s per path, 2 hung paths waited for per batch. */
export const MOUNT_HEALTH_DEFAULTS = { periodMs: 10_000, batchSize: 250, timeoutMs: 5_000, maxHungPerBatch: 2 } as const;

/** A path to check. */
export interface HealthTarget {
  path: string;
  /** The pod of a pod volume path; null for a staging path. */
  podUid: string | null;
  /** The unique volume name. */
  volume: string;
  kind: 'pod' | 'staging';
}

/** What checks paths (an {@link FsProbe}). */
export interface PathChecker {
  check(paths: readonly string[], opts: { perPathTimeoutMs: number; maxHungPerCall: number }): Promise<PathCheck[]>;
}

export interface MountHealthCheckerOptions {
  clock: Clock;
  logger: Logger;
  probe: PathChecker;
  /**
   * Every path to keep checked, read at each batch. May answer the same array (never changed
   * afterwards) as long as the paths are the same: the checker then reuses its index of it.
   */
  targets: () => readonly HealthTarget[];
  /** True while an operation on the volume runs: its paths are skipped this period. */
  busy: (volume: string) => boolean;
  periodMs?: number;
  batchSize?: number;
  timeoutMs?: number;
  maxHungPerBatch?: number;
  /** A check found an entry in a new state (`previous` null: its first check). */
  onStateChange?: (entry: MountHealth, previous: MountHealth | null) => void;
  /** An entry changed state, or entries came or went. */
  onChange?: () => void;
}

/** errno → state; every other errno is `error`. */
const stateOfErrno: Readonly<Record<string, MountHealthState>> = { ENOTCONN: 'not-connected', EIO: 'io-error', ESTALE: 'stale' };

/**
 * The kernel's words for the errnos of a dead mount (`strerror`), which operators grep for; libuv
 * says "socket is not connected" for ENOTCONN.
 */
const kernelText: Readonly<Record<string, string>> = {
  ENOTCONN: 'transport endpoint is not connected',
  EIO: 'input/output error',
  ESTALE: 'stale file handle',
};

/** The state and error text of one answer. */
export function classifyCheck(check: Exclude<PathCheck, { outcome: 'skipped' }>, timeoutMs: number): { state: MountHealthState; error: string | null } {
  switch (check.outcome) {
    case 'ok':
      return { state: 'healthy', error: null };
    case 'hung':
      return { state: 'hung', error: `statfs ${check.path}: no answer within ${String(timeoutMs)} ms (the file system does not respond)` };
    case 'error': {
      const words = kernelText[check.code];
      return { state: stateOfErrno[check.code] ?? 'error', error: words === undefined ? check.message : `${check.code}: ${words}: ${check.path}` };
    }
  }
}

export class MountHealthChecker {
  private readonly opts: MountHealthCheckerOptions;
  /** The last `targets()` array and its index by path (see {@link targetsByPath}). */
  private targetIndex: { list: readonly HealthTarget[]; byPath: Map<string, HealthTarget> } | null = null;
  private readonly periodMs: number;
  private readonly batchSize: number;
  private readonly timeoutMs: number;
  private readonly maxHung: number;
  private readonly entries = new Map<string, MountHealth>();
  /** The latest statfs numbers of each path that answered healthy, with when (epoch ms) and how long the answer took. */
  private readonly usages = new Map<string, { usage: StatfsUsage; at: number; durationMs: number }>();
  private sorted: MountHealth[] = [];
  private sortedValid = true;
  private timer: TimerHandle | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(opts: MountHealthCheckerOptions) {
    this.opts = opts;
    this.periodMs = opts.periodMs ?? MOUNT_HEALTH_DEFAULTS.periodMs;
    this.batchSize = opts.batchSize ?? MOUNT_HEALTH_DEFAULTS.batchSize;
    this.timeoutMs = opts.timeoutMs ?? MOUNT_HEALTH_DEFAULTS.timeoutMs;
    this.maxHung = opts.maxHungPerBatch ?? MOUNT_HEALTH_DEFAULTS.maxHungPerBatch;
  }

  /** Schedules the first batch one period from now, then one per period. */
  start(): void {
    this.stopped = false;
    this.schedule();
  }

  /** Stops scheduling and waits for a running batch (bounded by its timeouts). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) this.opts.clock.clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  /** Every entry, sorted by path; the same array until something changes. */
  list(): MountHealth[] {
    if (!this.sortedValid) {
      this.sorted = [...this.entries.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
      this.sortedValid = true;
    }
    return this.sorted;
  }

  /** The entry of `path`, if it was checked. */
  entry(path: string): MountHealth | undefined {
    return this.entries.get(path);
  }

  /** The latest statfs numbers of `path` (from a healthy answer), if any. */
  usage(path: string): { usage: StatfsUsage; at: number; durationMs: number } | undefined {
    return this.usages.get(path);
  }

  /**
   * Answers for paths that someone else checked through the same probe: each updates its entry
   * (state, `checkedAt`, events) as a batch's answer would. Paths with no entry yet (never
   * checked) only keep their numbers: their first check makes the entry.
   */
  absorb(results: readonly PathCheck[]): void {
    const now = Math.floor(this.opts.clock.now());
    let changed = false;
    for (const result of results) {
      if (result.outcome === 'skipped') continue;
      const previous = this.entries.get(result.path);
      this.keepUsage(result, now);
      if (previous === undefined || this.stopped) continue;
      if (this.apply({ path: previous.path, podUid: previous.podUid, volume: previous.volume, kind: previous.kind }, result, now)) changed = true;
    }
    if (changed) {
      this.sortedValid = false;
      this.opts.onChange?.();
    }
  }

  /** Runs one batch now (also what each period runs); a batch already running is awaited instead. */
  checkNow(): Promise<void> {
    this.running ??= this.batch().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = this.opts.clock.setTimeout(() => {
      this.timer = null;
      void this.checkNow().then(() => {
        this.schedule();
      });
    }, delayToNextTick(this.opts.clock, this.periodMs));
  }

  private async batch(): Promise<void> {
    const { clock, logger } = this.opts;
    let changed = false;
    const targets = this.targetsByPath(this.opts.targets());
    for (const path of this.entries.keys()) {
      if (!targets.has(path)) {
        this.entries.delete(path);
        changed = true;
      }
    }
    const due = [...targets.values()]
      .filter((t) => !this.opts.busy(t.volume))
      .sort((a, b) => (this.entries.get(a.path)?.checkedAt ?? -1) - (this.entries.get(b.path)?.checkedAt ?? -1))
      .slice(0, this.batchSize);
    if (due.length > 0) {
      let results: PathCheck[];
      try {
        results = await this.opts.probe.check(
          due.map((t) => t.path),
          { perPathTimeoutMs: this.timeoutMs, maxHungPerCall: this.maxHung },
        );
      } catch (err) {
        logger.warn('mount health: the batch could not run', { err: err instanceof Error ? err.message : String(err) });
        results = [];
      }
      const now = Math.floor(clock.now());
      results.forEach((result, i) => {
        const target = due[i];
        if (target === undefined || result.outcome === 'skipped') return;
        // The mount may have gone while the batch ran (an unmount finished): keep no entry for it.
        if (this.stopped) return;
        this.keepUsage(result, now);
        if (this.apply(target, result, now)) changed = true;
      });
    }
    for (const path of this.usages.keys()) if (!targets.has(path)) this.usages.delete(path);
    this.sortedValid = false;
    if (changed) this.opts.onChange?.();
  }

  /**
   * `list` by path. The index is kept while `targets()` answers the same array (its owner may
   * return one array until the targets change), so an idle node's batch builds no map of every
   * path.
   */
  private targetsByPath(list: readonly HealthTarget[]): ReadonlyMap<string, HealthTarget> {
    if (this.targetIndex?.list !== list) this.targetIndex = { list, byPath: new Map(list.map((t) => [t.path, t])) };
    return this.targetIndex.byPath;
  }

  private keepUsage(result: Exclude<PathCheck, { outcome: 'skipped' }>, now: number): void {
    if (result.outcome === 'ok' && result.usage !== undefined) this.usages.set(result.path, { usage: result.usage, at: now, durationMs: result.durationMs ?? 0 });
    else this.usages.delete(result.path);
  }

  /** Sets the entry of `target` from one answer; true when its state (or volume) changed or it is new. */
  private apply(target: HealthTarget, result: Exclude<PathCheck, { outcome: 'skipped' }>, now: number): boolean {
    const { state, error } = classifyCheck(result, this.timeoutMs);
    const previous = this.entries.get(target.path) ?? null;
    const entry: MountHealth = {
      path: target.path,
      podUid: target.podUid,
      volume: target.volume,
      kind: target.kind,
      state,
      error,
      checkedAt: now,
      since: previous !== null && previous.state === state ? previous.since : now,
    };
    this.entries.set(target.path, entry);
    if (previous?.state !== state) this.opts.onStateChange?.(entry, previous);
    return previous === null || previous.state !== state || previous.volume !== target.volume;
  }
}
