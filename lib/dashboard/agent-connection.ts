/**
 * The browser's live connection to one agent through the dashboard's relay
 * (`/api/agents/<name>/events`). It reads the event stream with `fetch` and the shared
 * `createSseParser` (not `EventSource`, so it can send `Last-Event-ID` itself on every reconnect,
 * read the relay's error body, and be tested without a browser), folds events through a
 * {@link StreamBatcher}, and reconnects with jittered exponential backoff.
 *
 * Lifecycle: `start()` → live; a broken or silent stream → `reconnecting` (backoff);
 * the relay's error answer → `unavailable` (backoff); `pause()` closes on purpose (hidden tab);
 * `resume()` reconnects at once with `Last-Event-ID` (a resync: the agent resumes with deltas or
 * sends a fresh snapshot); `stop()` ends it.
 */
import {
  createSseParser,
  decodeAgentStreamEvent,
  isInvalidStreamEventError,
  streamEventId,
  type Snapshot,
  type SseMessage,
} from '../api/index.ts';
import type { Clock, TimerHandle } from '../clock/clock.ts';
import { errorFromDashboardResponse, isAgentUnavailableError } from './dashboard-error.ts';
import { INITIAL_CONNECTION_STATE, type AgentConnectionState, type ConnectionPhase } from './queries.ts';
import { createStreamBatcher, type StreamBatcher } from './stream-batcher.ts';

/** Reconnect delays: the first retry after about `initialMs`, doubling, capped at `maxMs`. */
export interface ReconnectPolicy {
  readonly initialMs: number;
  readonly maxMs: number;
}

/** 1 s doubling to 30 s. */
const DEFAULT_RECONNECT_POLICY: ReconnectPolicy = { initialMs: 1_000, maxMs: 30_000 };

/** No bytes (not even a keepalive, sent every 15 s) for this long means the stream is dead. */
const STREAM_IDLE_TIMEOUT_MS = 45_000;

/**
 * The delay before reconnect attempt `attempt` (1 for the first): `min(max, initial·2^(attempt−1))`
 * scaled by a jitter factor in [0.5, 1) from `random()` (in [0, 1)), so many tabs that lost the
 * same agent do not reconnect in lockstep.
 */
export function reconnectDelay(attempt: number, random: () => number, policy: ReconnectPolicy = DEFAULT_RECONNECT_POLICY): number {
  const base = Math.min(policy.maxMs, policy.initialMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (0.5 + random() / 2));
}

/** The relay URL of an agent's event stream. */
function agentEventsUrl(agent: string): string {
  return `/api/agents/${encodeURIComponent(agent)}/events`;
}

/** What a connection needs. */
export interface AgentConnectionOptions {
  readonly agent: string;
  readonly fetch: typeof fetch;
  readonly clock: Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'>;
  /** Uniform in [0, 1): the jitter source. */
  readonly random: () => number;
  /** The snapshot already in the cache (prefetched), resumed from with `Last-Event-ID`; `null` if none. */
  readonly initial: Snapshot | null;
  /** Receives the folded snapshot, batched (at most one call per flush interval). */
  readonly onSnapshot: (snapshot: Snapshot) => void;
  /** Receives every change of the connection state. */
  readonly onStatus: (state: AgentConnectionState) => void;
  readonly policy?: ReconnectPolicy;
  readonly idleTimeoutMs?: number;
  readonly flushIntervalMs?: number;
}

/** After this many gaps in a row, reconnect without `Last-Event-ID` to get a fresh snapshot. */
const MAX_GAPS_BEFORE_SNAPSHOT = 3;

/** One agent's live stream; see the module comment. */
export class AgentConnection {
  private readonly options: AgentConnectionOptions;
  private readonly batcher: StreamBatcher;
  private status: AgentConnectionState = INITIAL_CONNECTION_STATE;
  /** Increments per attempt; callbacks of older attempts are ignored. */
  private generation = 0;
  private abort: AbortController | null = null;
  private retryTimer: TimerHandle | null = null;
  private idleTimer: TimerHandle | null = null;
  private stopped = false;
  private paused = false;
  private gaps = 0;
  private forceSnapshot = false;
  private gotBytes = false;

  constructor(options: AgentConnectionOptions) {
    this.options = options;
    this.batcher = createStreamBatcher({
      clock: options.clock,
      initial: options.initial,
      ...(options.flushIntervalMs !== undefined ? { intervalMs: options.flushIntervalMs } : {}),
      onFlush: (snapshot) => {
        this.gaps = 0;
        options.onSnapshot(snapshot);
      },
      onGap: () => {
        this.gaps++;
        if (this.gaps >= MAX_GAPS_BEFORE_SNAPSHOT) this.forceSnapshot = true;
        // Reconnect at once with Last-Event-ID = our seq: the agent resumes or sends a snapshot.
        this.connect();
      },
    });
  }

  /** The folded snapshot (including changes not flushed yet); `null` before the first. */
  get snapshot(): Snapshot | null {
    return this.batcher.state;
  }

  /** The current connection state. */
  get state(): AgentConnectionState {
    return this.status;
  }

  /** Opens the stream (no-op when already started, paused or stopped). */
  start(): void {
    if (this.stopped || this.paused || this.abort !== null) return;
    this.publish({ ...this.status, phase: 'connecting' });
    this.connect();
  }

  /** Closes the stream on purpose until {@link resume} (hidden tab). */
  pause(): void {
    if (this.stopped || this.paused) return;
    this.paused = true;
    this.teardown();
    this.batcher.flush();
    this.publish({ ...this.status, phase: 'paused', disconnectedSince: this.status.disconnectedSince ?? this.options.clock.now(), nextAttemptAt: null });
  }

  /** Reconnects at once after {@link pause}, resuming from the current `seq` (a resync). */
  resume(): void {
    if (this.stopped || !this.paused) return;
    this.paused = false;
    this.publish({ ...this.status, phase: 'connecting', nextAttemptAt: null });
    this.connect();
  }

  /** Closes the stream for good. */
  stop(): void {
    this.stopped = true;
    this.teardown();
    this.batcher.dispose();
  }

  private publish(next: AgentConnectionState): void {
    this.status = next;
    this.options.onStatus(next);
  }

  private teardown(): void {
    this.generation++;
    this.abort?.abort();
    this.abort = null;
    if (this.retryTimer !== null) this.options.clock.clearTimeout(this.retryTimer);
    if (this.idleTimer !== null) this.options.clock.clearTimeout(this.idleTimer);
    this.retryTimer = null;
    this.idleTimer = null;
  }

  private connect(): void {
    this.teardown();
    if (this.stopped || this.paused) return;
    const generation = this.generation;
    const abort = new AbortController();
    this.abort = abort;
    this.gotBytes = false;
    this.batcher.resume();
    const state = this.forceSnapshot ? undefined : this.batcher.state;
    this.forceSnapshot = false;
    const headers: Record<string, string> = { Accept: 'text/event-stream' };
    // `<startedAt>.<seq>`: an agent that restarted meanwhile answers with a fresh snapshot.
    if (state != null) headers['Last-Event-ID'] = streamEventId(state.agent.startedAt, state.seq);
    this.armIdleTimer(generation);
    void this.run(generation, abort, headers);
  }

  private armIdleTimer(generation: number): void {
    if (this.idleTimer !== null) this.options.clock.clearTimeout(this.idleTimer);
    const ms = this.options.idleTimeoutMs ?? STREAM_IDLE_TIMEOUT_MS;
    this.idleTimer = this.options.clock.setTimeout(() => {
      this.idleTimer = null;
      if (generation === this.generation) this.fail(generation, 'reconnecting', `no data from the agent for ${Math.round(ms / 1000)} s`, null);
    }, ms);
  }

  private async run(generation: number, abort: AbortController, headers: Record<string, string>): Promise<void> {
    try {
      const response = await this.options.fetch(agentEventsUrl(this.options.agent), {
        headers,
        signal: abort.signal,
        cache: 'no-store',
      });
      if (generation !== this.generation) return;
      if (!response.ok || response.body === null) {
        const body: unknown = await response.json().catch(() => null);
        if (generation !== this.generation) return;
        const err = errorFromDashboardResponse(response.status, body);
        const seenAt = isAgentUnavailableError(err) ? err.lastSeenAt : null;
        const slow = isAgentUnavailableError(err) && (err.code === 'agent-unauthorized' || err.code === 'unknown-agent' || err.code === 'agent-misconfigured');
        this.fail(generation, 'unavailable', err.message, seenAt, slow);
        return;
      }
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      const parser = createSseParser((message) => {
        this.onMessage(generation, message);
      });
      for (;;) {
        const { done, value } = await reader.read();
        if (generation !== this.generation) {
          await reader.cancel().catch(() => undefined);
          return;
        }
        if (done) break;
        this.onBytes(generation);
        parser.push(decoder.decode(value, { stream: true }));
      }
      parser.end();
      this.fail(generation, 'reconnecting', 'the event stream ended', null);
    } catch (err) {
      if (generation !== this.generation || abort.signal.aborted) return;
      this.fail(generation, 'reconnecting', err instanceof Error ? err.message : String(err), null);
    }
  }

  private onBytes(generation: number): void {
    const now = this.options.clock.now();
    this.armIdleTimer(generation);
    if (!this.gotBytes || this.status.phase !== 'live') {
      this.gotBytes = true;
      this.publish({ phase: 'live', disconnectedSince: null, lastSeenAt: now, error: null, attempt: 0, nextAttemptAt: null });
    } else {
      // Kept without publishing: a cache write per chunk would re-render the indicator for nothing.
      this.status = { ...this.status, lastSeenAt: now };
    }
  }

  private onMessage(generation: number, message: SseMessage): void {
    if (generation !== this.generation) return;
    try {
      const event = decodeAgentStreamEvent(message);
      if (event !== null) this.batcher.push(event);
    } catch (err) {
      if (!isInvalidStreamEventError(err)) throw err;
      // A malformed event: start over from a fresh snapshot rather than guess.
      this.forceSnapshot = true;
      this.fail(generation, 'reconnecting', err.message, null);
    }
  }

  private fail(generation: number, phase: Extract<ConnectionPhase, 'reconnecting' | 'unavailable'>, error: string, serverSeenAt: number | null, slow = false): void {
    if (generation !== this.generation) return;
    this.teardown();
    this.batcher.flush();
    const now = this.options.clock.now();
    const attempt = this.status.attempt + 1;
    const policy = this.options.policy ?? DEFAULT_RECONNECT_POLICY;
    const delay = slow ? reconnectDelay(Number.POSITIVE_INFINITY, this.options.random, policy) : reconnectDelay(attempt, this.options.random, policy);
    const lastSeenAt = Math.max(this.status.lastSeenAt ?? Number.NEGATIVE_INFINITY, serverSeenAt ?? Number.NEGATIVE_INFINITY);
    this.publish({
      phase,
      disconnectedSince: this.status.disconnectedSince ?? now,
      lastSeenAt: Number.isFinite(lastSeenAt) ? lastSeenAt : null,
      error,
      attempt,
      nextAttemptAt: now + delay,
    });
    this.retryTimer = this.options.clock.setTimeout(() => {
      this.retryTimer = null;
      this.connect();
    }, delay);
  }
}
