/**
 * The published state of the agent: the current {@link Snapshot}, its sequence number, and the
 * journal of recent deltas that event streams resume from.
 *
 * Change notifications (the volume manager's and the runtime's `onChange`, audit appends) only
 * mark the state dirty. While an event stream is subscribed, a rebuild follows on the runtime
 * clock, at most one per `minIntervalMs` (bursts of notifications during a reconciler pass
 * coalesce into one), and never more often than keeps rebuilding under {@link MAX_PUBLISH_DUTY}
 * of the time (on a large node under constant change the interval stretches instead of the agent
 * spending its time diffing). While none is, nothing is rebuilt until a reader asks
 * ({@link SnapshotFeed.publishIfDue}, {@link SnapshotFeed.publishIfOlderThan},
 * {@link SnapshotFeed.flush}) or a stream subscribes: an agent that nobody watches (a restart
 * confirming thousands of volumes, before any dashboard reconnects) does not build snapshots for
 * nobody. The deltas stay a gapless series either way: one rebuild covers every change since the
 * last. A rebuild that changed nothing visible publishes nothing, so `seq` grows by exactly one
 * per published delta. Every part of the snapshot has an owner that notifies its changes, so
 * nothing is polled: with no change, the feed has no timer scheduled and costs nothing.
 */
import { encodeDeltaEvent, SNAPSHOT_EVENT, streamEventId } from '../../lib/api/agent-stream.ts';
import { CompactSnapshotEncoder, type SnapshotEncoding } from '../../lib/api/compact-snapshot.ts';
import { computeDelta, type Delta } from '../../lib/api/delta.ts';
import type { Snapshot } from '../../lib/api/snapshot.ts';
import { formatSseEvent } from '../../lib/api/sse.ts';
import type { Clock, TimerHandle } from '../../lib/clock/clock.ts';
import type { Logger } from '../../lib/volume/logger.ts';
import type { BuiltSnapshot, SnapshotBuilder } from './snapshot-builder.ts';

/** Defaults of {@link SnapshotFeedOptions}. */
export const DEFAULT_JOURNAL_SIZE = 256;
export const DEFAULT_MIN_REBUILD_INTERVAL_MS = 50;
/**
 * The largest share of time rebuilding may take under constant change: after a rebuild that took
 * `d` ms the next one waits at least `d / MAX_PUBLISH_DUTY` ms (12 ms at 10k volumes → 120 ms).
 */
export const MAX_PUBLISH_DUTY = 0.1;
/**
 * The most bytes of encoded deltas the journal keeps, whatever its entry count: a node whose
 * deltas are large (thousands of volumes changing at once, long error texts) cannot make the
 * journal hold 256 × megabytes. The newest delta is always kept. About one compact snapshot at
 * 10k volumes (~3.2 MB): a stream resuming across more delta bytes than that is sent more than a
 * fresh snapshot would be, so holding more only costs the agent memory (issue "Performance",
 * requirement 3: while 10k volumes come up the deltas are megabytes each).
 */
export const DEFAULT_MAX_JOURNAL_BYTES = 4 * 1024 * 1024;

/** One form of the snapshot as sent: its seq, JSON text and `event: snapshot` text (made on first use). */
interface EncodedSnapshot {
  seq: number;
  json: string;
  event: string | null;
}

/**
 * A published delta: its sequence numbers and its encoded `event: delta` text (encoded once,
 * written to every stream). The delta's objects are not kept: streams only ever send the text,
 * and on a large node a delta's objects weigh several times its text.
 */
export interface JournalEntry {
  delta: Pick<Delta, 'fromSeq' | 'seq'>;
  event: string;
}

/** Receives each published delta, in order. */
export type FeedListener = (entry: JournalEntry) => void;

export interface SnapshotFeedOptions {
  builder: SnapshotBuilder;
  clock: Clock;
  logger: Logger;
  /** How many deltas a reconnecting stream can resume across (default 256). */
  journalSize?: number;
  /** The shortest time between two rebuilds caused by notifications (default 50 ms). */
  minIntervalMs?: number;
  /** The most bytes of encoded deltas the journal keeps (default {@link DEFAULT_MAX_JOURNAL_BYTES}). */
  maxJournalBytes?: number;
}

function hasChanges(delta: Delta): boolean {
  for (const key of Object.keys(delta)) {
    if (key !== 'fromSeq' && key !== 'seq') return true;
  }
  return false;
}

export class SnapshotFeed {
  private built: BuiltSnapshot;
  /** The current snapshot serialized once: its JSON text and its `event: snapshot` text. */
  /** The last encoding of each form, by seq (a form is encoded only when asked for). */
  private readonly encoded = new Map<SnapshotEncoding, EncodedSnapshot>();
  /** Keeps each unchanged item's compact encoding between rebuilds. */
  private readonly compactEncoder = new CompactSnapshotEncoder();
  private readonly journal: JournalEntry[] = [];
  private readonly listeners = new Set<FeedListener>();
  private readonly builder: SnapshotBuilder;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly journalSize: number;
  private readonly maxJournalBytes: number;
  private journalBytes = 0;
  private readonly minIntervalMs: number;
  private dirty = false;
  private rebuildTimer: TimerHandle | null = null;
  private lastRebuildAt = Number.NEGATIVE_INFINITY;
  /** The gap the last rebuild asks for before the next one (min interval, stretched by its duration). */
  private nextGapMs: number;
  private stopped = false;

  constructor(opts: SnapshotFeedOptions) {
    this.builder = opts.builder;
    this.clock = opts.clock;
    this.logger = opts.logger;
    this.journalSize = Math.max(0, opts.journalSize ?? DEFAULT_JOURNAL_SIZE);
    this.maxJournalBytes = opts.maxJournalBytes ?? DEFAULT_MAX_JOURNAL_BYTES;
    this.minIntervalMs = opts.minIntervalMs ?? DEFAULT_MIN_REBUILD_INTERVAL_MS;
    this.nextGapMs = this.minIntervalMs;
    this.built = this.builder.initial();
  }

  /** Cancels the pending rebuild; later notifications are ignored and listeners are dropped. */
  stop(): void {
    this.stopped = true;
    if (this.rebuildTimer !== null) this.clock.clearTimeout(this.rebuildTimer);
    this.rebuildTimer = null;
    this.listeners.clear();
  }

  /**
   * Something may have changed: rebuild soon (coalesced) while a stream is subscribed, otherwise
   * when a reader or a new stream asks. Safe to call from inside engine callbacks.
   */
  markChanged(): void {
    this.dirty = true;
    if (this.listeners.size > 0) this.scheduleRebuild();
  }

  /** A rebuild once the pacing allows it, unless one is scheduled already. */
  private scheduleRebuild(): void {
    if (this.stopped || this.rebuildTimer !== null) return;
    const delay = Math.max(0, this.lastRebuildAt + this.nextGapMs - this.clock.monotonic());
    this.rebuildTimer = this.clock.setTimeout(() => {
      this.rebuildTimer = null;
      this.rebuild();
    }, delay);
  }

  /**
   * The last published snapshot: it may lag the engine by one coalescing interval while a stream
   * is subscribed, and until the next reader publishes while none is.
   */
  current(): Snapshot {
    return this.built.snapshot;
  }

  /** Publishes pending changes now (if any) and returns the current snapshot. */
  flush(): Snapshot {
    if (this.dirty && !this.stopped) {
      if (this.rebuildTimer !== null) this.clock.clearTimeout(this.rebuildTimer);
      this.rebuildTimer = null;
      this.rebuild();
    }
    return this.built.snapshot;
  }

  /**
   * What readers (`GET /snapshot`, `GET /summary`, a new event stream) are served: pending
   * changes are published now only when the feed's own pacing would allow a rebuild now anyway
   * (the minimum interval, stretched by the last build's duration, has passed); otherwise the
   * last build is returned, and the change is published by the rebuild scheduled for a
   * subscribed stream or, with none subscribed, by the next reader once the pacing allows. So
   * readers see current state whenever it costs nothing extra, and no number of readers can make
   * the agent rebuild more often than that pacing.
   */
  publishIfDue(): Snapshot {
    return this.publishIfOlderThan(0);
  }

  /**
   * {@link publishIfDue} for readers that may be `maxAgeMs` behind: pending changes are published
   * only once the last build is at least that old (and the pacing allows it). The metrics'
   * summary gauges read this way, so that a scrape every few milliseconds cannot make the agent
   * rebuild its snapshot more than once per `maxAgeMs` while nobody else watches.
   */
  publishIfOlderThan(maxAgeMs: number): Snapshot {
    if (this.dirty && !this.stopped && this.clock.monotonic() >= this.lastRebuildAt + Math.max(this.nextGapMs, maxAgeMs)) return this.flush();
    return this.built.snapshot;
  }

  /**
   * The current snapshot as JSON text in `encoding` (default compact; serialized once per seq and
   * encoding: at 10k volumes ~4 MB compact, ~17 MB full).
   */
  snapshotJson(encoding: SnapshotEncoding = 'compact'): string {
    return this.encodedSnapshot(encoding).json;
  }

  /** The current snapshot as an `event: snapshot` (`encodeSnapshotEvent`, from the same JSON text). */
  snapshotEvent(encoding: SnapshotEncoding = 'compact'): string {
    const encoded = this.encodedSnapshot(encoding);
    encoded.event ??= formatSseEvent({ event: SNAPSHOT_EVENT, id: streamEventId(this.built.snapshot.agent.startedAt, encoded.seq), data: encoded.json });
    return encoded.event;
  }

  private encodedSnapshot(encoding: SnapshotEncoding): EncodedSnapshot {
    const { snapshot } = this.built;
    let encoded = this.encoded.get(encoding);
    if (encoded?.seq !== snapshot.seq) {
      const json = encoding === 'full' ? JSON.stringify(snapshot) : this.compactEncoder.encodeJson(snapshot);
      encoded = { seq: snapshot.seq, json, event: null };
      this.encoded.set(encoding, encoded);
    }
    return encoded;
  }

  /**
   * The deltas that take a client from `seq` to the current snapshot: `[]` when `seq` is
   * current, null when the journal no longer holds them all (or `seq` was never published by
   * this process, e.g. it is ahead, or `startedAt` is another process's): the client needs a
   * fresh snapshot.
   */
  deltasSince(seq: number, startedAt: number = this.built.snapshot.agent.startedAt): JournalEntry[] | null {
    // Another process's series (the agent restarted): its seq numbers name other states.
    if (startedAt !== this.built.snapshot.agent.startedAt) return null;
    const current = this.built.snapshot.seq;
    if (seq === current) return [];
    if (seq > current) return null;
    const first = this.journal.findIndex((entry) => entry.delta.fromSeq === seq);
    return first < 0 ? null : this.journal.slice(first);
  }

  /** Registers a listener for published deltas; returns its unsubscribe function. */
  subscribe(listener: FeedListener): () => void {
    this.listeners.add(listener);
    // Changes made while nobody was subscribed are published on the usual pacing from now on.
    if (this.dirty) this.scheduleRebuild();
    return () => this.listeners.delete(listener);
  }

  private rebuild(): void {
    this.dirty = false;
    this.lastRebuildAt = this.clock.monotonic();
    const prev = this.built.snapshot;
    let next: BuiltSnapshot;
    let delta: Delta;
    try {
      next = this.builder.build(this.built, prev.seq + 1);
      delta = computeDelta(prev, next.snapshot);
    } catch (err) {
      // A bug in building; keep serving the last good snapshot. The next change retries.
      this.logger.error('snapshot build failed', { err: err instanceof Error ? err.message : String(err) });
      return;
    }
    const buildMs = this.clock.monotonic() - this.lastRebuildAt;
    this.nextGapMs = Math.max(this.minIntervalMs, buildMs / MAX_PUBLISH_DUTY);
    if (!hasChanges(delta)) return;
    this.built = next;
    const entry: JournalEntry = { delta: { fromSeq: delta.fromSeq, seq: delta.seq }, event: encodeDeltaEvent(delta, next.snapshot.agent.startedAt) };
    this.journal.push(entry);
    this.journalBytes += entry.event.length;
    // Oldest first out: by count, then by bytes (a client behind the cut gets a fresh snapshot).
    let drop = Math.max(0, this.journal.length - this.journalSize);
    let bytes = this.journalBytes;
    for (let i = 0; i < drop; i++) bytes -= this.journal[i]?.event.length ?? 0;
    while (bytes > this.maxJournalBytes && drop < this.journal.length - 1) bytes -= this.journal[drop++]?.event.length ?? 0;
    if (drop > 0) {
      this.journal.splice(0, drop);
      this.journalBytes = bytes;
    }
    this.logger.debug('snapshot published', {
      seq: delta.seq,
      deltaBytes: entry.event.length,
      buildMs: Math.round(buildMs * 1000) / 1000,
    });
    for (const listener of [...this.listeners]) {
      try {
        listener(entry);
      } catch (err) {
        this.logger.error('snapshot listener failed', { err: err instanceof Error ? err.message : String(err) });
      }
    }
  }
}
