/**
 * Query keys and query options for agent data. The live stream writes into these keys
 * (`AgentStreamHub`); components only read them. Nothing here fetches: the snapshot arrives
 * through the stream (or server-side prefetch), so `queryFn` is `skipToken` and the data never
 * goes stale by time.
 */
import { queryOptions, skipToken } from '@tanstack/react-query';
import type { Snapshot } from '../api/index.ts';

/**
 * Where the live connection to one agent stands (browser side):
 * - `connecting`: the first connection is being made;
 * - `live`: the stream is open and bytes arrived recently;
 * - `reconnecting`: the stream broke (or went quiet); a new attempt is scheduled;
 * - `unavailable`: the dashboard server answered that it cannot reach the agent (see `error`);
 *   retried with backoff like `reconnecting`;
 * - `paused`: the tab is hidden, the stream is closed on purpose and resumes (with a resync)
 *   when the tab is shown again.
 */
export type ConnectionPhase = 'connecting' | 'live' | 'reconnecting' | 'unavailable' | 'paused';

/** The live connection to one agent, as the status indicator shows it. Times: browser clock. */
export interface AgentConnectionState {
  readonly phase: ConnectionPhase;
  /** When the data stopped being live (the first failure of this outage); `null` while live. */
  readonly disconnectedSince: number | null;
  /** When bytes last arrived from the agent (or, for a new tab, when the server last saw it); `null` if never. */
  readonly lastSeenAt: number | null;
  /** The last failure in words (never a token); `null` after a good connection. */
  readonly error: string | null;
  /** Failed attempts since the last good connection. */
  readonly attempt: number;
  /** When the next attempt is due; `null` unless one is scheduled. */
  readonly nextAttemptAt: number | null;
}

/** The connection state before anything happened. */
export const INITIAL_CONNECTION_STATE: AgentConnectionState = {
  phase: 'connecting',
  disconnectedSince: null,
  lastSeenAt: null,
  error: null,
  attempt: 0,
  nextAttemptAt: null,
};

/** Query keys, all built here (one place, so invalidations match). */
export const agentKeys = {
  all: ['agents'] as const,
  agent: (agent: string) => ['agents', agent] as const,
  snapshot: (agent: string) => ['agents', agent, 'snapshot'] as const,
  connection: (agent: string) => ['agents', agent, 'connection'] as const,
};

/**
 * Query keys of the overview (apart from `agentKeys`, whose second element is an agent name: a
 * node could be called `summaries`). The overview polls these (summary.ts); unlike the agent
 * keys above they are fetched, not streamed.
 */
export const overviewKeys = {
  summaries: ['overview', 'summaries'] as const,
};

/** The agent's latest snapshot, kept current by the stream. Pending until the first one arrives. */
export function agentSnapshotOptions(agent: string) {
  return queryOptions<Snapshot>({
    queryKey: agentKeys.snapshot(agent),
    queryFn: skipToken,
    staleTime: Number.POSITIVE_INFINITY,
    gcTime: 5 * 60_000,
  });
}

/** The agent's connection state, written by the stream hub. Pending before the hub started. */
export function agentConnectionOptions(agent: string) {
  return queryOptions<AgentConnectionState>({
    queryKey: agentKeys.connection(agent),
    queryFn: skipToken,
    staleTime: Number.POSITIVE_INFINITY,
    gcTime: 5 * 60_000,
  });
}

/**
 * The `updatedAt` a server prefetch stamps on a snapshot: older than anything the live stream
 * writes, so hydrating a page never overwrites newer streamed data in the browser cache (a
 * `HydrationBoundary` only replaces data it considers newer), while a tab without data gets it.
 */
export const PREFETCHED_UPDATED_AT = 1;
