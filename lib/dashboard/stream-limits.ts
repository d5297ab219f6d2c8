/**
 * Caps on the event streams the dashboard relays (`GET /api/agents/<name>/events`): at most
 * `perAgent` open streams to one agent and at most `perUser` open streams for one user (all
 * agents together). Each open relay holds a socket to the agent and one to the browser, and the
 * agent keeps a subscriber per stream: without a cap one client could open thousands. A refused
 * stream gets 503 with `Retry-After`; a browser's EventSource-like reconnect backs off and
 * retries. Server-only, no I/O: the relay asks, and releases when the stream ends.
 */

/** Defaults: a tab keeps one stream per agent it shows (stream-hub.ts), a user a few tabs. */
export const DEFAULT_STREAMS_PER_AGENT = 200;
export const DEFAULT_STREAMS_PER_USER = 64;
/** What a refused client is told to wait (seconds). */
export const STREAM_RETRY_AFTER_SECONDS = 10;

/** The outcome of {@link StreamLimits.acquire}. */
export type StreamSlot = { ok: true; release: () => void } | { ok: false; message: string; retryAfterSeconds: number };

export class StreamLimits {
  private readonly byAgent = new Map<string, number>();
  private readonly byUser = new Map<string, number>();

  constructor(
    readonly perAgent: number = DEFAULT_STREAMS_PER_AGENT,
    readonly perUser: number = DEFAULT_STREAMS_PER_USER,
  ) {
    if (!(Number.isInteger(perAgent) && perAgent > 0 && Number.isInteger(perUser) && perUser > 0)) {
      throw new RangeError(`stream limits must be positive integers (got ${perAgent} per agent, ${perUser} per user)`);
    }
  }

  /** Open streams to `agent` now. */
  openToAgent(agent: string): number {
    return this.byAgent.get(agent) ?? 0;
  }

  /** Open streams of `user` now. */
  openForUser(user: string): number {
    return this.byUser.get(user) ?? 0;
  }

  /**
   * Takes a slot for a stream of `user` to `agent`, or says why not. `release` is idempotent.
   * `user` null (no one logged in, e.g. the loopback demo): only the per-agent cap applies, as
   * every browser would otherwise share one user's slots.
   */
  acquire(agent: string, user: string | null): StreamSlot {
    if (this.openToAgent(agent) >= this.perAgent) {
      return { ok: false, message: `too many event streams to agent ${agent} (at most ${this.perAgent}); retry later`, retryAfterSeconds: STREAM_RETRY_AFTER_SECONDS };
    }
    if (user !== null && this.openForUser(user) >= this.perUser) {
      return { ok: false, message: `too many event streams for ${user} (at most ${this.perUser} across all agents); close other tabs or retry later`, retryAfterSeconds: STREAM_RETRY_AFTER_SECONDS };
    }
    bump(this.byAgent, agent, 1);
    if (user !== null) bump(this.byUser, user, 1);
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        bump(this.byAgent, agent, -1);
        if (user !== null) bump(this.byUser, user, -1);
      },
    };
  }
}

function bump(counts: Map<string, number>, key: string, by: number): void {
  const next = (counts.get(key) ?? 0) + by;
  if (next <= 0) counts.delete(key);
  else counts.set(key, next);
}
