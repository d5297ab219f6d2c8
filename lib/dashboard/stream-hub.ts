/**
 * One live connection per agent per tab, shared by every view that shows the agent: views
 * subscribe (ref-counted), the hub writes each agent's folded snapshot and connection state into
 * the query cache, and components read the cache. Streams pause while the tab is hidden and
 * resume (with a resync) when it is shown again.
 */
import type { QueryClient } from '@tanstack/react-query';
import type { Snapshot } from '../api/index.ts';
import { realClock, type Clock } from '../clock/clock.ts';
import { AgentConnection, type ReconnectPolicy } from './agent-connection.ts';
import { agentKeys } from './queries.ts';

/** Whether the page is visible, and changes of it. */
export interface VisibilitySource {
  isHidden(): boolean;
  /** Calls `listener` on every change; returns the unsubscribe function. */
  subscribe(listener: () => void): () => void;
}

/** What the hub needs; the browser defaults come from {@link browserHubDeps}. */
export interface AgentStreamHubDeps {
  readonly fetch: typeof fetch;
  readonly clock: Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'>;
  readonly random: () => number;
  readonly visibility: VisibilitySource | null;
  /** How long a connection stays open after its last subscriber left (navigation between pages). */
  readonly lingerMs?: number;
  readonly policy?: ReconnectPolicy;
}

/** Default linger: long enough to survive a client-side navigation. */
const CONNECTION_LINGER_MS = 10_000;

interface Entry {
  connection: AgentConnection;
  refs: number;
  closeTimer: ReturnType<Clock['setTimeout']> | null;
}

/** The per-tab multiplexer of agent streams; see the module comment. */
export class AgentStreamHub {
  private readonly entries = new Map<string, Entry>();
  private readonly client: QueryClient;
  private readonly deps: AgentStreamHubDeps;
  private unsubscribeVisibility: (() => void) | null = null;

  constructor(client: QueryClient, deps: AgentStreamHubDeps) {
    this.client = client;
    this.deps = deps;
  }

  /** The number of open (or lingering) connections, for tests and diagnostics. */
  get size(): number {
    return this.entries.size;
  }

  /**
   * Keeps a live connection to `agent` while subscribed. The first subscriber opens it (from
   * the cached snapshot, if any); it closes {@link CONNECTION_LINGER_MS} after the last one left.
   * Returns the unsubscribe function (idempotent).
   */
  subscribe(agent: string): () => void {
    let entry = this.entries.get(agent);
    if (entry === undefined) {
      entry = { connection: this.open(agent), refs: 0, closeTimer: null };
      this.entries.set(agent, entry);
      this.watchVisibility();
      if (this.deps.visibility?.isHidden() === true) entry.connection.pause();
      else entry.connection.start();
    }
    if (entry.closeTimer !== null) {
      this.deps.clock.clearTimeout(entry.closeTimer);
      entry.closeTimer = null;
    }
    entry.refs++;
    const current = entry;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      current.refs--;
      if (current.refs > 0) return;
      current.closeTimer = this.deps.clock.setTimeout(() => {
        current.connection.stop();
        this.entries.delete(agent);
        if (this.entries.size === 0) {
          this.unsubscribeVisibility?.();
          this.unsubscribeVisibility = null;
        }
      }, this.deps.lingerMs ?? CONNECTION_LINGER_MS);
    };
  }

  private open(agent: string): AgentConnection {
    const initial = this.client.getQueryData<Snapshot>(agentKeys.snapshot(agent)) ?? null;
    return new AgentConnection({
      agent,
      fetch: this.deps.fetch,
      clock: this.deps.clock,
      random: this.deps.random,
      initial,
      ...(this.deps.policy !== undefined ? { policy: this.deps.policy } : {}),
      onSnapshot: (snapshot) => {
        this.client.setQueryData(agentKeys.snapshot(agent), snapshot);
      },
      onStatus: (state) => {
        this.client.setQueryData(agentKeys.connection(agent), state);
      },
    });
  }

  private watchVisibility(): void {
    const visibility = this.deps.visibility;
    if (visibility === null || this.unsubscribeVisibility !== null) return;
    this.unsubscribeVisibility = visibility.subscribe(() => {
      const hidden = visibility.isHidden();
      for (const entry of this.entries.values()) {
        if (hidden) entry.connection.pause();
        else entry.connection.resume();
      }
    });
  }
}

/** The page's visibility from `document` (`visibilitychange`). */
function documentVisibility(doc: Document): VisibilitySource {
  return {
    isHidden: () => doc.visibilityState === 'hidden',
    subscribe(listener) {
      doc.addEventListener('visibilitychange', listener);
      return () => {
        doc.removeEventListener('visibilitychange', listener);
      };
    },
  };
}

/** The browser's dependencies: global fetch, the real clock, `Math.random`, `document`. */
function browserHubDeps(): AgentStreamHubDeps {
  return {
    fetch: (input, init) => fetch(input, init),
    clock: realClock,
    random: Math.random,
    visibility: typeof document === 'undefined' ? null : documentVisibility(document),
  };
}

const hubs = new WeakMap<QueryClient, AgentStreamHub>();

/** The hub of a query client (one per browser tab, since the browser's client is a singleton). */
export function getAgentStreamHub(client: QueryClient, deps: () => AgentStreamHubDeps = browserHubDeps): AgentStreamHub {
  let hub = hubs.get(client);
  if (hub === undefined) {
    hub = new AgentStreamHub(client, deps());
    hubs.set(client, hub);
  }
  return hub;
}
