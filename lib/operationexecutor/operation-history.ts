/**
 * The history of failing volume operations, per operation key (operation name, volume, pod,
 * node: the key the executor runs the operation under): when it first failed, how many attempts
 * it took in all, the last attempts with their duration and outcome, and when it succeeded.
 *
 * The pending operations table forgets an operation on success and on "retry now" (which clears
 * the backoff by deleting the entry, exactly as a success would), so an operator looking at a
 * stuck volume would see the attempt count restart at every retry. This history is fed from the
 * executor's finished-operation records instead and is never touched by a backoff reset: a retry
 * resets the backoff, not the count.
 *
 * An episode starts with the first failed attempt of a key (a key that only ever succeeds has no
 * history: nothing to investigate, nothing to pay for at 10k volumes) and ends with the next
 * success, which is kept so the operator sees when it came right. A failure after that success
 * starts a new episode. Bounded: {@link OperationHistoryOptions.maxAttempts} attempts per key (the
 * total is still counted), {@link OperationHistoryOptions.maxEntries} keys (ended episodes are
 * evicted first, oldest first), and ended episodes are dropped after
 * {@link OperationHistoryOptions.retainSucceededMs}.
 *
 * Times come from the records (the executor's injected clock); this module reads no clock.
 */
import type { OperationRecord } from './operation-executor.ts';

/** How many attempts of one key are kept by default (the total counts all of them). */
export const DEFAULT_HISTORY_ATTEMPTS = 20;
/** How many keys the history keeps by default. */
export const DEFAULT_HISTORY_ENTRIES = 512;
/** How long an episode that ended in success is kept by default (1 h). */
export const DEFAULT_HISTORY_RETAIN_SUCCEEDED_MS = 60 * 60 * 1000;

/** One attempt of an operation. */
export interface OperationAttempt {
  /** When the operation function started (epoch ms). */
  startedAt: number;
  /** How long it ran, in ms. */
  durationMs: number;
  /** The detailed error text; `null` for the attempt that succeeded. */
  error: string | null;
}

/** A read-only copy of one key's history. */
export interface OperationHistoryView {
  operationName: string;
  /** The unique volume name of the key; `''` for operations without one. */
  volume: string;
  /** The pod of the key; `''` for volume-wide operations. */
  pod: string;
  /** The node of the key; `''` when not keyed by node. */
  node: string;
  /** When the first failed attempt of the episode finished (epoch ms). */
  firstFailureAt: number;
  /** Every attempt of the episode, also those before a "retry now" and those no longer kept. */
  attemptsTotal: number;
  /** The last attempts, oldest first, at most `maxAttempts`. */
  attempts: readonly OperationAttempt[];
  /** When the attempt that succeeded finished; `null` while still failing. */
  succeededAt: number | null;
}

export interface OperationHistoryOptions {
  maxAttempts?: number;
  maxEntries?: number;
  retainSucceededMs?: number;
  /**
   * Histories to start from, oldest first (what an agent kept from before its restart): an
   * ongoing one goes on counting with the next attempt of its key. The bounds apply to them.
   */
  initial?: readonly OperationHistoryView[];
}

/** The history key of a record: the operation name and the executor's key. */
export function operationHistoryKey(k: { operationName: string; volume: string; pod: string; node: string }): string {
  return `${k.operationName}|${k.volume}|${k.pod}|${k.node}`;
}

export class OperationHistory {
  private readonly maxAttempts: number;
  private readonly maxEntries: number;
  private readonly retainSucceededMs: number;
  /** Views by key, in insertion order; a view is replaced (never mutated) when it changes. */
  private readonly entries = new Map<string, OperationHistoryView>();

  constructor(opts: OperationHistoryOptions = {}) {
    this.maxAttempts = Math.max(1, opts.maxAttempts ?? DEFAULT_HISTORY_ATTEMPTS);
    this.maxEntries = Math.max(1, opts.maxEntries ?? DEFAULT_HISTORY_ENTRIES);
    this.retainSucceededMs = opts.retainSucceededMs ?? DEFAULT_HISTORY_RETAIN_SUCCEEDED_MS;
    for (const view of opts.initial ?? []) {
      const attempts = view.attempts.slice(Math.max(0, view.attempts.length - this.maxAttempts));
      const key = operationHistoryKey(view);
      this.entries.delete(key);
      this.entries.set(key, { ...view, attempts, attemptsTotal: Math.max(view.attemptsTotal, attempts.length) });
    }
    this.evict();
  }

  /** Adds one finished attempt. Returns true when the history changed. */
  record(record: OperationRecord): boolean {
    const k = { operationName: record.operationName, volume: record.volume, pod: record.pod, node: record.node };
    const key = operationHistoryKey(k);
    const attempt: OperationAttempt = {
      startedAt: record.startedAt,
      durationMs: Math.max(0, record.finishedAt - record.startedAt),
      error: record.outcome === 'failure' ? (record.error ?? '') : null,
    };
    const before = this.entries.get(key);
    const ongoing = before !== undefined && before.succeededAt === null ? before : undefined;
    let changed = this.expire(record.finishedAt);
    if (ongoing === undefined) {
      if (attempt.error === null) return changed;
      // A new episode; a previous, ended one of the same key is replaced.
      this.entries.delete(key);
      this.entries.set(key, { ...k, firstFailureAt: record.finishedAt, attemptsTotal: 1, attempts: [attempt], succeededAt: null });
      this.evict();
      return true;
    }
    const attempts = [...ongoing.attempts, attempt];
    if (attempts.length > this.maxAttempts) attempts.splice(0, attempts.length - this.maxAttempts);
    this.entries.set(key, {
      ...ongoing,
      attemptsTotal: ongoing.attemptsTotal + 1,
      attempts,
      succeededAt: attempt.error === null ? record.finishedAt : null,
    });
    changed = true;
    return changed;
  }

  /** The history of one key, or undefined. */
  get(k: { operationName: string; volume: string; pod: string; node: string }): OperationHistoryView | undefined {
    return this.entries.get(operationHistoryKey(k));
  }

  /** Every key's history (the views themselves: they are never mutated). */
  list(): OperationHistoryView[] {
    return [...this.entries.values()];
  }

  /** Drops ended episodes older than the retention; true when any was dropped. */
  private expire(now: number): boolean {
    let dropped = false;
    for (const [key, view] of this.entries) {
      if (view.succeededAt !== null && now - view.succeededAt > this.retainSucceededMs) {
        this.entries.delete(key);
        dropped = true;
      }
    }
    return dropped;
  }

  /** Keeps at most maxEntries keys: the oldest ended episode goes first, else the oldest key. */
  private evict(): void {
    while (this.entries.size > this.maxEntries) {
      let victim: string | undefined;
      let victimAt = Infinity;
      for (const [key, view] of this.entries) {
        if (view.succeededAt !== null && view.succeededAt < victimAt) {
          victim = key;
          victimAt = view.succeededAt;
        }
      }
      victim ??= this.entries.keys().next().value;
      if (victim === undefined) return;
      this.entries.delete(victim);
    }
  }
}
