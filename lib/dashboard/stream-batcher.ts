/**
 * Folds the agent's stream events into a snapshot with the shared pure reducer
 * (`reduceAgentStream` → `applyDelta`) and hands the result on at most once per interval, so a
 * burst of deltas costs one render. Stale deltas are ignored; a gap (a delta that does not
 * follow) is reported once so the connection can reconnect with its `Last-Event-ID`.
 *
 * Deltas are not applied one by one: each `applyDelta` copies the arrays it changes (at 10,000
 * volumes a network chunk of a few dozen deltas was once a task of hundreds of ms, when it also
 * normalized the whole snapshot). Accepted deltas are composed (perf-delta-composer.ts) and
 * applied once, when the state is flushed or read; the result equals folding them one by one. Sequence
 * checks still run per delta, on arrival, with the reducer's rules and errors.
 */
import { DeltaSequenceError, applyDelta, isDeltaSequenceError, reduceAgentStream, type AgentStreamEvent, type Delta, type Snapshot } from '../api/index.ts';
import type { Clock, TimerHandle } from '../clock/clock.ts';
import { canCompose, createDeltaComposer, type DeltaComposer } from './perf-delta-composer.ts';

/**
 * The default flush interval: at most one render per 32 ms (about two frames). A change on an
 * idle stream flushes on the next timer turn (no wait); during a burst the deltas that arrive
 * within one interval coalesce into one render, so the page keeps up with a burst without
 * delaying the single change an operator is looking at (issue "Performance", requirement 2:
 * change on screen within 100 ms).
 */
export const STREAM_FLUSH_INTERVAL_MS = 32;

/** What a batcher needs. */
export interface StreamBatcherOptions {
  /** Time and timers (the real clock in the browser, a fake one in tests). */
  readonly clock: Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'>;
  /** The state to start from (e.g. a prefetched snapshot); `null` for none. */
  readonly initial: Snapshot | null;
  /** Receives the folded state, at most once per `intervalMs`, only when it changed. */
  readonly onFlush: (state: Snapshot) => void;
  /**
   * Called once when a delta does not follow the state (missed deltas). Later deltas are
   * dropped until {@link StreamBatcher.resume} or a snapshot arrives.
   */
  readonly onGap: (error: DeltaSequenceError) => void;
  readonly intervalMs?: number;
}

/** A reducer plus throttle for one agent's stream. */
export interface StreamBatcher {
  /** Applies one event to the pending state and schedules a flush. */
  push(event: AgentStreamEvent): void;
  /**
   * The folded state (possibly not flushed yet); its `seq` is the `Last-Event-ID` to resume from.
   * Reading it applies the deltas accepted since the last read or flush.
   */
  readonly state: Snapshot | null;
  /** True after a gap until {@link resume} or a snapshot. */
  readonly gapped: boolean;
  /** Accepts deltas again (call when reconnecting after a gap). */
  resume(): void;
  /** Flushes pending changes now. */
  flush(): void;
  /** Cancels a scheduled flush; pending changes are dropped from the output (the state is kept). */
  dispose(): void;
}

/** A new batcher; see {@link StreamBatcherOptions}. */
export function createStreamBatcher(options: StreamBatcherOptions): StreamBatcher {
  const interval = options.intervalMs ?? STREAM_FLUSH_INTERVAL_MS;
  const { clock } = options;
  /** The folded state without the deltas in `pending`. */
  let base = options.initial;
  /** Accepted deltas that follow `base`, not applied yet; `null` when none. */
  let pending: DeltaComposer | null = null;
  let flushed = options.initial;
  let lastFlushAt = Number.NEGATIVE_INFINITY;
  let timer: TimerHandle | null = null;
  let gapped = false;

  /** `base` with the pending deltas applied (once). */
  const materialize = (): Snapshot | null => {
    const delta = pending?.compose() ?? null;
    pending = null;
    if (base !== null && delta !== null) base = applyDelta(base, delta);
    return base;
  };

  const flush = (): void => {
    if (timer !== null) {
      clock.clearTimeout(timer);
      timer = null;
    }
    const state = materialize();
    if (state === null || state === flushed) return;
    flushed = state;
    lastFlushAt = clock.now();
    options.onFlush(state);
  };

  const schedule = (): void => {
    if (timer !== null) return;
    const delay = Math.max(0, lastFlushAt + interval - clock.now());
    // Even with no wait, flush on a timer: events of the same network chunk land in one flush.
    timer = clock.setTimeout(() => {
      timer = null;
      flush();
    }, delay);
  };

  /**
   * Queues a delta, with `applyDeltaIfNewer`'s rules on the state it would apply to: stale
   * (`seq` not newer) → ignored; not following or not advancing → a DeltaSequenceError.
   */
  const pushDelta = (delta: Delta): void => {
    const seq = pending?.seq ?? base?.seq ?? null;
    if (base === null || seq === null) throw new DeltaSequenceError(null, delta.fromSeq, delta.seq);
    if (delta.seq <= seq) return;
    if (delta.seq <= delta.fromSeq || delta.fromSeq !== seq) throw new DeltaSequenceError(seq, delta.fromSeq, delta.seq);
    if (!canCompose(delta)) {
      base = applyDelta(materialize() ?? base, delta);
    } else {
      pending ??= createDeltaComposer(base);
      pending.add(delta);
    }
    schedule();
  };

  return {
    push(event) {
      if (gapped && event.type === 'delta') return;
      try {
        if (event.type === 'delta') {
          pushDelta(event.delta);
          return;
        }
        pending = null;
        gapped = false;
        const next = reduceAgentStream(base, event);
        if (next === base) return;
        base = next;
        schedule();
      } catch (err) {
        if (!isDeltaSequenceError(err)) throw err;
        gapped = true;
        options.onGap(err);
      }
    },
    get state() {
      return materialize();
    },
    get gapped() {
      return gapped;
    },
    resume() {
      gapped = false;
    },
    flush,
    dispose() {
      if (timer !== null) clock.clearTimeout(timer);
      timer = null;
    },
  };
}
