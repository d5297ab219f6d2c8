/**
 * The overview's data: `GET /api/agents/summary` (summary-relay.ts) answers every agent's
 * `GET /api/v1/summary` in one response, and the overview polls it instead of holding one event
 * stream per node. Shared by the server (which builds the response) and the browser (which
 * parses it and derives each card), so it depends on zod, `lib/api/` and pure dashboard code.
 *
 * Polling: every {@link SUMMARY_POLL_INTERVAL_MS} while the tab is visible (react-query pauses
 * the interval in hidden tabs and refetches when the tab is focused again). Three seconds keeps
 * the overview close to live for an operator watching it, and costs one small request per agent
 * per interval however many tabs are open (the relay shares a round between requests that
 * arrive within a second). A node's page still has its own live stream while it is open.
 */
import { queryOptions } from '@tanstack/react-query';
import { z } from 'zod';
import { AgentSummarySchema, type AgentSummary } from '../api/index.ts';
import { DashboardErrorCodeSchema, errorFromDashboardResponse } from './dashboard-error.ts';
import { DiscoveryStatusSchema } from './discovery-status.ts';
import { nodeHealth, type NodeSummary } from './node-summary.ts';
import { overviewKeys, type ConnectionPhase } from './queries.ts';

// THE RELAY'S ANSWER

/** The dashboard route the overview polls. */
const SUMMARIES_PATH = '/api/agents/summary';

/** One agent in the relay's answer. Times are the dashboard server's clock. */
const AgentSummaryEntrySchema = z.object({
  name: z.string(),
  url: z.string(),
  /** The last summary received from the agent (from an earlier round when `error` is set); `null` if none yet. */
  summary: AgentSummarySchema.nullable(),
  /** When `summary` was received; `null` with it. */
  receivedAt: z.number().nullable(),
  /** When the dashboard server last got bytes from the agent (any request); `null` if never. */
  lastSeenAt: z.number().nullable(),
  /** Why this round got no summary; `null` when it did. `since`: when this run of failures began. */
  error: z.object({ code: DashboardErrorCodeSchema, message: z.string(), since: z.number() }).nullable(),
  /** Where this round's summary came from: `prometheus` (its scrape at `receivedAt`) or the `agent` itself. Absent: the agent. */
  via: z.enum(['agent', 'prometheus']).optional(),
});
/** One agent in the relay's answer. */
export type AgentSummaryEntry = z.infer<typeof AgentSummaryEntrySchema>;

/** The body of `GET /api/agents/summary`. */
export const AgentSummariesSchema = z.object({
  /** When this round finished (dashboard server clock). */
  fetchedAt: z.number(),
  /** Where the agent list comes from (`kubernetes`: discovery). */
  source: z.enum(['env', 'file', 'none', 'kubernetes']),
  /** Every known agent, in the configuration's order. */
  agents: z.array(AgentSummaryEntrySchema),
  /** Discovery's state when it is used, else `null`. */
  discovery: DiscoveryStatusSchema.nullable(),
  /** A malformed agent configuration (then `agents` is empty), else `null`. */
  configError: z.string().nullable(),
  /** How this round used Prometheus (`VOLUMESCOPE_PROMETHEUS_URL`); `null` or absent when it is not set. */
  prometheus: z
    .object({
      url: z.string(),
      /** The oldest scrape among the nodes read from Prometheus (dashboard server clock ≈ Prometheus's); `null` if none. */
      asOf: z.number().nullable(),
      /** How many nodes were read from Prometheus. */
      nodes: z.number().int().nonnegative(),
      /** Nodes Prometheus lacks (or has only in part, or stale): asked directly; the first few names and their count. */
      fallback: z.object({ count: z.number().int().nonnegative(), names: z.array(z.string()) }),
      /** Why Prometheus could not be read this round (then every node was asked directly), else `null`. */
      error: z.string().nullable(),
    })
    .nullable()
    .optional(),
});
/** The body of `GET /api/agents/summary`. */
export type AgentSummaries = z.infer<typeof AgentSummariesSchema>;

/** The relay answered something that is not {@link AgentSummariesSchema}. */
export class SummariesResponseError extends Error {
  override readonly name = 'SummariesResponseError';
}

/** True for a {@link SummariesResponseError}. */
export function isSummariesResponseError(err: unknown): err is SummariesResponseError {
  return err instanceof SummariesResponseError;
}

// POLLING

/** How often the overview polls while visible. */
export const SUMMARY_POLL_INTERVAL_MS = 3_000;
/** How long the browser waits for one poll. */
const SUMMARY_REQUEST_TIMEOUT_MS = 10_000;
/**
 * A poll answer older than this (browser clock) no longer counts as live, even without an error
 * (polls that hang): about three missed polls.
 */
export const SUMMARY_STALE_AFTER_MS = 3 * SUMMARY_POLL_INTERVAL_MS + SUMMARY_REQUEST_TIMEOUT_MS;

/**
 * Fetches and parses the relay's answer. Throws the dashboard's `AgentUnavailableError` shape
 * for its own errors, a {@link SummariesResponseError} for anything unparsable, and the fetch
 * error when the dashboard server cannot be reached.
 */
export async function fetchSummaries(fetchFn: typeof fetch, signal?: AbortSignal): Promise<AgentSummaries> {
  const timeout = AbortSignal.timeout(SUMMARY_REQUEST_TIMEOUT_MS);
  const response = await fetchFn(SUMMARIES_PATH, {
    headers: { Accept: 'application/json' },
    cache: 'no-store',
    signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
  });
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    throw new SummariesResponseError(`the dashboard answered ${SUMMARIES_PATH} with HTTP ${response.status} that is not JSON`);
  }
  if (!response.ok) throw errorFromDashboardResponse(response.status, body);
  const parsed = AgentSummariesSchema.safeParse(body);
  if (!parsed.success) throw new SummariesResponseError(`the dashboard's answer to ${SUMMARIES_PATH} breaks its schema`);
  return parsed.data;
}

/** The overview's poll: see the module comment for the interval. */
export function summariesQueryOptions(fetchFn: typeof fetch = (input, init) => fetch(input, init)) {
  return queryOptions<AgentSummaries>({
    queryKey: overviewKeys.summaries,
    queryFn: ({ signal }) => fetchSummaries(fetchFn, signal),
    refetchInterval: SUMMARY_POLL_INTERVAL_MS,
    refetchIntervalInBackground: false,
    refetchOnWindowFocus: true,
    staleTime: 0,
    // The next poll is the retry; retrying in between would only delay showing the failure.
    retry: false,
    gcTime: 5 * 60_000,
  });
}

// CARDS

/**
 * The overview numbers of a summary, in the shape the node panels show (node-summary.ts): the
 * same health and reasons as `summarizeNode` of the snapshot the summary was taken from.
 */
export function toNodeSummary(s: AgentSummary): NodeSummary {
  const c = s.counts;
  const o = s.reconstruction.outcomes;
  const { health, reasons } = nodeHealth({
    statesSynced: s.statesSynced,
    inBackoff: c.inBackoff,
    retrying: c.retrying,
    uncertain: c.uncertain,
    podErrors: c.podErrors,
    sourceErrors: c.sourceErrors,
    failedReconstructions: o.failed,
    failingDrivers: s.drivers.failing,
    foundDetached: c.foundDetached,
    // Observe mode: an agent that predates `failing` reports none (its health then misses them).
    observe: s.mode === 'observe' ? { attachErrors: s.observe?.attachErrors ?? 0, failing: s.observe?.failing ?? 0 } : null,
  });
  return {
    nodeName: s.nodeName,
    seq: s.seq,
    statesSynced: s.statesSynced,
    agentVersion: s.agent.version,
    agentStartedAt: s.agent.startedAt,
    health,
    reasons,
    pods: c.pods,
    desiredVolumes: c.desiredVolumes,
    mounted: c.mounted,
    uncertain: c.uncertain,
    pending: c.pending,
    inBackoff: c.inBackoff,
    running: c.running,
    retrying: c.retrying,
    podErrors: c.podErrors,
    sourceErrors: c.sourceErrors,
    reconstruction: {
      state: s.reconstruction.state,
      startedAt: s.reconstruction.startedAt,
      finishedAt: s.reconstruction.finishedAt,
      outcomes: { ...o },
    },
    drivers: { ...s.drivers },
    mode: s.mode,
    observe: s.observe === undefined ? null : { ...s.observe },
  };
}

/** What the poll has, as react-query reports it. Times: browser clock (epoch ms, 0 = never). */
export interface SummaryPoll {
  readonly data: AgentSummaries | undefined;
  readonly dataUpdatedAt: number;
  readonly error: Error | null;
  readonly errorUpdatedAt: number;
}

/** A card's status line, in the terms of the node pages' connection indicator. Browser clock. */
export interface OverviewStatus {
  /** `live`: the agent answered the last poll; `unavailable`: it did not; `reconnecting`: the poll itself fails or is old. */
  readonly phase: ConnectionPhase;
  /** When the data stopped being live; `null` while live. */
  readonly disconnectedSince: number | null;
  /** When the dashboard server last heard from the agent; `null` if never (or not known yet). */
  readonly lastSeenAt: number | null;
  /** Why it is not live, in words (never a token); `null` while live. */
  readonly error: string | null;
}

/** One card of the overview. */
export interface OverviewCard {
  readonly name: string;
  readonly url: string;
  /** The last known numbers; `null` before the first summary. */
  readonly summary: NodeSummary | null;
  readonly status: OverviewStatus;
}

const summaryCache = new WeakMap<AgentSummary, NodeSummary>();

function cachedNodeSummary(s: AgentSummary): NodeSummary {
  let n = summaryCache.get(s);
  if (n === undefined) {
    n = toNodeSummary(s);
    summaryCache.set(s, n);
  }
  return n;
}

/** Whether the poll's last answer is too old to call anything live at browser time `now`. */
export function isPollStale(poll: Pick<SummaryPoll, 'data' | 'dataUpdatedAt'>, now: number): boolean {
  return poll.data !== undefined && now - poll.dataUpdatedAt > SUMMARY_STALE_AFTER_MS;
}

/** Moves a dashboard-server time to the browser clock (by the offset seen when the answer arrived). */
export function serverToBrowserTime(poll: Pick<SummaryPoll, 'data' | 'dataUpdatedAt'>, at: number): number {
  return poll.data === undefined ? at : at + (poll.dataUpdatedAt - poll.data.fetchedAt);
}

/**
 * The cards: the poll's agents once it answered (agents come and go with it), else `initial`
 * (the server-rendered list) as `connecting`. `stale`: see {@link isPollStale}. Server times are
 * moved to the browser clock.
 */
export function overviewCards(initial: readonly { name: string; url: string }[], poll: SummaryPoll, stale: boolean): OverviewCard[] {
  const pollFailing = poll.error !== null && poll.errorUpdatedAt >= poll.dataUpdatedAt;
  const pollError = poll.error === null ? null : `the dashboard server did not answer: ${poll.error.message}`;
  const data = poll.data;
  if (data === undefined) {
    return initial.map((a) => ({
      name: a.name,
      url: a.url,
      summary: null,
      status: pollFailing
        ? { phase: 'reconnecting', disconnectedSince: poll.errorUpdatedAt, lastSeenAt: null, error: pollError }
        : { phase: 'connecting', disconnectedSince: null, lastSeenAt: null, error: null },
    }));
  }
  const local = (t: number | null): number | null => (t === null ? null : serverToBrowserTime(poll, t));
  return data.agents.map((entry) => {
    const lastSeenAt = local(entry.lastSeenAt);
    let status: OverviewStatus;
    if (entry.error !== null) {
      status = { phase: 'unavailable', disconnectedSince: local(entry.error.since), lastSeenAt, error: entry.error.message };
    } else if (pollFailing || stale) {
      status = {
        phase: 'reconnecting',
        disconnectedSince: poll.dataUpdatedAt,
        lastSeenAt,
        error: pollError ?? 'the dashboard server has not answered the last polls',
      };
    } else {
      status = { phase: 'live', disconnectedSince: null, lastSeenAt, error: null };
    }
    return { name: entry.name, url: entry.url, summary: entry.summary === null ? null : cachedNodeSummary(entry.summary), status };
  });
}
