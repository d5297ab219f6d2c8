/**
 * Folds the agent's stream events into a snapshot with the shared pure reducer
 * (`reduceAgentStream` → `applyDelta`) and hands the result on at most once per interval, so a
 * burst of deltas costs one render. Stale deltas are ignored by the reducer; a gap (a delta that
 * does not follow) is reported once so the connection can reconnect with its `Last-Event-ID`.
 */
import { isDeltaSequenceError, reduceAgentStream, type AgentStreamEvent, type DeltaSequenceError, type Snapshot } from '../api/index.ts';
import type { Clock, TimerHandle } from '../clock/clock.ts';

/** The default flush interval: at most one render per 250 ms. */
export const STREAM_FLUSH_INTERVAL_MS = 250;

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
  /** The folded state (possibly not flushed yet); its `seq` is the `Last-Event-ID` to resume from. */
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
  let state = options.initial;
  let flushed = options.initial;
  let lastFlushAt = Number.NEGATIVE_INFINITY;
  let timer: TimerHandle | null = null;
  let gapped = false;

  const flush = (): void => {
    if (timer !== null) {
      clock.clearTimeout(timer);
      timer = null;
    }
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

  return {
    push(event) {
      if (gapped && event.type === 'delta') return;
      try {
        const next = reduceAgentStream(state, event);
        if (event.type === 'snapshot') gapped = false;
        if (next === state) return;
        state = next;
        schedule();
      } catch (err) {
        if (!isDeltaSequenceError(err)) throw err;
        gapped = true;
        options.onGap(err);
      }
    },
    get state() {
      return state;
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
