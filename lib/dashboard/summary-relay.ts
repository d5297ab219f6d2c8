/**
 * `GET /api/agents/summary`: the dashboard server asks every agent for its `GET /api/v1/summary`
 * (with the agent's token, which stays here) and answers all of them at once, so the overview
 * needs one request per poll instead of one event stream per node. Server-only.
 *
 * - At most {@link SUMMARY_CONCURRENCY} agents are asked at a time, each within
 *   {@link SUMMARY_AGENT_TIMEOUT_MS}; an agent that does not answer is reported with the
 *   dashboard's error code, the error's message and since when it fails, and its last summary is
 *   kept (the overview shows it as stale).
 * - A round is shared: requests that arrive while one runs, or within {@link SUMMARY_REUSE_MS}
 *   after it finished, get its answer (ten tabs polling 200 nodes cost 200 requests per round).
 * - An agent that does not know `/api/v1/summary` (404: an older agent during a rolling update)
 *   is summarized from its snapshot instead, which is what the overview did before.
 * - With `VOLUMESCOPE_PROMETHEUS_URL` set (prometheus/overview.ts), a round first reads every
 *   node's summary from Prometheus (two queries, shared by all sessions' relays) and asks
 *   directly only the agents Prometheus lacks; when Prometheus fails, every agent is asked and
 *   the answer says why (`prometheus.error`). Nodes are matched by the agent's configured name
 *   and the summary's `nodeName` (discovery names agents by their node).
 */
import {
  AgentSummarySchema,
  SUMMARY_ROUTE,
  API_ROUTES,
  safeParseSnapshot,
  summarizeSnapshot,
  type AgentSummary,
} from '../api/index.ts';
import { LRUCache } from 'lru-cache';
import type { AgentProxyDeps } from './agent-proxy.ts';
import { isAgentsConfigError, type AgentConfig, type AgentsConfig } from './agents-config.ts';
import { AgentUnavailableError, isAgentUnavailableError, type DashboardErrorCode } from './dashboard-error.ts';
import { describeFetchError } from './fetch-error.ts';
import { isPrometheusQueryError } from './prometheus/client.ts';
import { serverPrometheusOverview, type PrometheusNodeSummary, type PrometheusOverview, type PrometheusOverviewRead } from './prometheus/overview.ts';
import type { AgentSummaries, AgentSummaryEntry } from './summary.ts';

/** How many agents are asked at once. */
const SUMMARY_CONCURRENCY = 16;
/** How long one agent may take to answer its summary (headers and body). */
const SUMMARY_AGENT_TIMEOUT_MS = 3_000;
/** How long a finished round is reused for later requests. */
const SUMMARY_REUSE_MS = 1_000;

export interface SummaryRelayOptions {
  readonly concurrency: number;
  readonly agentTimeoutMs: number;
  readonly reuseMs: number;
  /** Where every node's summary is read first; `null`: every agent is asked. */
  readonly prometheus: PrometheusOverview | null;
}

const DEFAULT_OPTIONS: SummaryRelayOptions = {
  concurrency: SUMMARY_CONCURRENCY,
  agentTimeoutMs: SUMMARY_AGENT_TIMEOUT_MS,
  reuseMs: SUMMARY_REUSE_MS,
  prometheus: null,
};

/** How many names of the nodes asked directly despite Prometheus the answer lists. */
const FALLBACK_NAMES = 5;

/** What the relay remembers of an agent between rounds. */
interface Known {
  summary: AgentSummary | null;
  receivedAt: number | null;
  failingSince: number | null;
}

/** `items` mapped by `fn`, at most `limit` calls at a time, results in the order of `items`. */
export async function mapBounded<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return results;
}

/** A short reason for a failed fetch. */
function fetchFailure(err: unknown): string {
  return describeFetchError(err, (e) => (e.name === 'TimeoutError' ? 'no answer in time' : null));
}

/** The `error.message` of an agent's error body, if `text` is one. */
function agentErrorMessage(text: string): string | null {
  try {
    const body: unknown = JSON.parse(text);
    const error = typeof body === 'object' && body !== null ? (body as { error?: unknown }).error : undefined;
    const message = typeof error === 'object' && error !== null ? (error as { message?: unknown }).message : undefined;
    return typeof message === 'string' && message !== '' ? message : null;
  } catch {
    return null;
  }
}

/** The rounds of one server process; see the module comment. */
export class SummaryRelay {
  private readonly options: SummaryRelayOptions;
  private readonly known = new Map<string, Known>();
  private running: Promise<AgentSummaries> | null = null;
  private last: { at: number; answer: AgentSummaries } | null = null;

  constructor(options: Partial<SummaryRelayOptions> = {}) {
    this.options = { ...DEFAULT_OPTIONS, ...options };
  }

  /** The answer of the current round, a recent one, or a new one. */
  collect(deps: AgentProxyDeps): Promise<AgentSummaries> {
    if (this.running !== null) return this.running;
    if (this.last !== null && deps.now() - this.last.at < this.options.reuseMs) return Promise.resolve(this.last.answer);
    const round = this.round(deps).finally(() => {
      this.running = null;
    });
    this.running = round;
    return round;
  }

  private async round(deps: AgentProxyDeps): Promise<AgentSummaries> {
    let config: AgentsConfig;
    try {
      config = deps.config();
    } catch (err) {
      if (!isAgentsConfigError(err)) throw err;
      return { fetchedAt: deps.now(), source: 'none', agents: [], discovery: null, configError: err.message };
    }
    let read: PrometheusOverviewRead | null = null;
    let prometheusError: string | null = null;
    const prometheus = this.options.prometheus;
    if (prometheus !== null) {
      try {
        read = await prometheus.read();
      } catch (err) {
        if (!isPrometheusQueryError(err)) throw err;
        prometheusError = err.message;
      }
    }
    const fallback: string[] = [];
    const agents = await mapBounded(config.agents, this.options.concurrency, (agent) => {
      const scraped = read?.nodes.get(agent.name);
      if (scraped !== undefined) return Promise.resolve(this.fromPrometheus(deps, agent, scraped));
      if (read !== null) fallback.push(agent.name);
      return this.ask(deps, agent);
    });
    // Forget agents that left the configuration (discovered nodes that went away).
    const names = new Set(config.agents.map((a) => a.name));
    for (const name of this.known.keys()) if (!names.has(name)) this.known.delete(name);
    let asOf: number | null = null;
    if (read !== null) for (const entry of agents) if (entry.via === 'prometheus' && entry.receivedAt !== null) asOf = Math.min(asOf ?? entry.receivedAt, entry.receivedAt);
    const answer: AgentSummaries = {
      fetchedAt: deps.now(),
      source: config.source,
      agents,
      discovery: config.discovery ?? null,
      configError: null,
      prometheus:
        prometheus === null
          ? null
          : {
              url: prometheus.client.baseUrl,
              asOf,
              nodes: read === null ? 0 : agents.length - fallback.length,
              fallback: read === null ? { count: agents.length, names: config.agents.slice(0, FALLBACK_NAMES).map((a) => a.name) } : { count: fallback.length, names: fallback.sort().slice(0, FALLBACK_NAMES) },
              error: prometheusError,
            },
    };
    this.last = { at: answer.fetchedAt, answer };
    return answer;
  }

  /** What the relay remembers of the agent named `name` (a new record for a new one). */
  private knownOf(name: string): Known {
    let known = this.known.get(name);
    if (known === undefined) {
      known = { summary: null, receivedAt: null, failingSince: null };
      this.known.set(name, known);
    }
    return known;
  }

  /** The entry of a node Prometheus has: its scrape counts as the agent's answer. */
  private fromPrometheus(deps: AgentProxyDeps, agent: AgentConfig, scraped: PrometheusNodeSummary): AgentSummaryEntry {
    const known = this.knownOf(agent.name);
    known.summary = scraped.summary;
    known.receivedAt = scraped.sampledAt;
    known.failingSince = null;
    const seen = deps.registry.get(agent.name).lastSeenAt;
    return {
      name: agent.name,
      url: agent.url,
      summary: scraped.summary,
      receivedAt: scraped.sampledAt,
      // Prometheus heard from the agent at its scrape.
      lastSeenAt: seen === null ? scraped.sampledAt : Math.max(seen, scraped.sampledAt),
      error: null,
      via: 'prometheus',
    };
  }

  private async ask(deps: AgentProxyDeps, agent: AgentConfig): Promise<AgentSummaryEntry> {
    const known = this.knownOf(agent.name);
    let error: { code: DashboardErrorCode; message: string } | null = null;
    try {
      known.summary = await fetchAgentSummary(deps, agent, this.options.agentTimeoutMs);
      known.receivedAt = deps.now();
      known.failingSince = null;
    } catch (err) {
      if (!isAgentUnavailableError(err)) throw err;
      known.failingSince ??= deps.now();
      error = { code: err.code, message: err.message };
    }
    return {
      name: agent.name,
      url: agent.url,
      summary: known.summary,
      receivedAt: known.receivedAt,
      lastSeenAt: deps.registry.get(agent.name).lastSeenAt,
      error: error === null ? null : { ...error, since: known.failingSince ?? deps.now() },
      via: 'agent',
    };
  }
}

/**
 * One agent's summary (from its snapshot when it has no summary route). Throws an
 * `AgentUnavailableError` for every failure; records contact and failures in the registry.
 */
async function fetchAgentSummary(deps: AgentProxyDeps, agent: AgentConfig, timeoutMs: number): Promise<AgentSummary> {
  const fail = (code: Exclude<DashboardErrorCode, 'unknown-agent' | 'forbidden'>, message: string): AgentUnavailableError => {
    deps.registry.markFailed(agent.name, message);
    return new AgentUnavailableError(code, agent.name, message, deps.registry.get(agent.name).lastSeenAt);
  };
  const token = await deps.readToken(agent);
  const signal = AbortSignal.timeout(timeoutMs);
  const get = async (path: string): Promise<{ status: number; json: unknown }> => {
    let response: Response;
    try {
      response = await deps.fetch(`${agent.url}${path}`, {
        method: 'GET',
        headers: { Accept: 'application/json', Authorization: `Bearer ${token}` },
        signal,
        cache: 'no-store',
        redirect: 'manual',
      });
    } catch (err) {
      throw fail('agent-unreachable', `cannot reach ${agent.url}: ${fetchFailure(err)}`);
    }
    deps.registry.markSeen(agent.name, deps.now());
    if (response.status === 401) {
      await response.body?.cancel();
      throw fail('agent-unauthorized', `${agent.url} rejected the dashboard's token (HTTP 401): a logged-in user's token the API server does not accept, or, for the local session, check the token file ${agent.tokenFile}`);
    }
    if (response.status === 403) {
      // Authenticated but not authorized (the agent's authorization check); its message says who and what.
      const said = agentErrorMessage(await response.text().catch(() => ''));
      throw fail('agent-unauthorized', `${agent.url} refused the dashboard (HTTP 403${said === null ? '' : `: ${said}`}); grant the identity of the token in ${agent.tokenFile} access to the agent API`);
    }
    let text: string;
    try {
      text = await response.text();
    } catch (err) {
      throw fail('agent-unreachable', `${agent.url} broke off its answer to ${path}: ${fetchFailure(err)}`);
    }
    try {
      return { status: response.status, json: JSON.parse(text) };
    } catch {
      throw fail('agent-bad-response', `${agent.url} answered ${path} with HTTP ${response.status} that is not JSON`);
    }
  };
  const answer = await get(SUMMARY_ROUTE.path);
  if (answer.status === 404) {
    const snapshot = await get(API_ROUTES.snapshot.path);
    const parsed = safeParseSnapshot(snapshot.json);
    if (snapshot.status !== 200 || !parsed.success) {
      throw fail('agent-bad-response', `${agent.url} has no ${SUMMARY_ROUTE.path} and answered ${API_ROUTES.snapshot.path} with HTTP ${snapshot.status}${parsed.success ? '' : ' that breaks the schema'}`);
    }
    return summarizeSnapshot(parsed.data);
  }
  if (answer.status !== 200) throw fail('agent-bad-response', `${agent.url} answered ${SUMMARY_ROUTE.path} with HTTP ${answer.status}`);
  const parsed = AgentSummarySchema.safeParse(answer.json);
  if (!parsed.success) throw fail('agent-bad-response', `${agent.url} sent a summary that breaks the schema`);
  return parsed.data;
}

/** `GET /api/agents/summary`: the round's answer as JSON (never with a token in it). */
export async function relaySummaries(relay: SummaryRelay, deps: AgentProxyDeps): Promise<Response> {
  const answer = await relay.collect(deps);
  return new Response(JSON.stringify(answer), {
    status: 200,
    headers: { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' },
  });
}

interface RelayGlobals {
  __volumescopeSummaryRelays?: LRUCache<string, SummaryRelay>;
}

/** How many credentials' relays a process keeps (least recently used beyond that are dropped). */
const MAX_RELAYS = 256;

/**
 * The relay of this server process for one credential (`credentialKey` of the session): rounds
 * are shared only between requests made with the same token, so one user never gets an answer
 * the agents gave to another.
 */
export function serverSummaryRelay(credential: string): SummaryRelay {
  const g = globalThis as RelayGlobals;
  g.__volumescopeSummaryRelays ??= new LRUCache<string, SummaryRelay>({ max: MAX_RELAYS });
  let relay = g.__volumescopeSummaryRelays.get(credential);
  if (relay === undefined) {
    relay = new SummaryRelay({ prometheus: serverPrometheusOverview() });
    g.__volumescopeSummaryRelays.set(credential, relay);
  }
  return relay;
}
