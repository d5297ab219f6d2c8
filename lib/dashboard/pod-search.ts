/**
 * `GET /api/agents/pods?q=<text>`: finds pods by name on every node. The dashboard server asks
 * each agent for its snapshot (with the agent's token, which stays here; at most
 * {@link POD_SEARCH_CONCURRENCY} at a time, each within the proxy's connect timeout) and
 * answers the pods whose `namespace/name` or UID contains the text, case-insensitively: the
 * pods each node wants, and pods that are gone but still named by their events (`podNamesOf`).
 * A node that cannot be asked is reported with why, not fatal. The matching is pure
 * ({@link matchPods}); the rest is server-only.
 */
import { z } from 'zod';
import type { Snapshot } from '../api/index.ts';
import { fetchAgentSnapshot, type AgentProxyDeps } from './agent-proxy.ts';
import { isAgentsConfigError } from './agents-config.ts';
import { podNamesOf } from './pod-refs.ts';
import { mapBounded } from './summary-relay.ts';

/** How many agents are asked at once. */
const POD_SEARCH_CONCURRENCY = 16;
/** At most this many matches are answered (over all nodes); `truncated` says when more matched. */
export const POD_SEARCH_LIMIT = 100;
/** The browser's path of the search. */
export const POD_SEARCH_PATH = '/api/agents/pods';

export const PodSearchMatchSchema = z.object({
  node: z.string(),
  uid: z.string(),
  /** `namespace/name`. */
  name: z.string(),
  /** In the node's desired state; false: gone, named by its events (its page shows what is left). */
  desired: z.boolean(),
});
export type PodSearchMatch = z.infer<typeof PodSearchMatchSchema>;

export const PodSearchAnswerSchema = z.object({
  query: z.string(),
  matches: z.array(PodSearchMatchSchema),
  /** More pods matched than {@link POD_SEARCH_LIMIT}. */
  truncated: z.boolean(),
  /** Nodes that could not be searched, with why. */
  failed: z.array(z.object({ node: z.string(), message: z.string() })),
});
export type PodSearchAnswer = z.infer<typeof PodSearchAnswerSchema>;

/** The pods of one node's snapshot whose `namespace/name` or UID contains `query` (case-insensitive), desired first, by name. */
export function matchPods(node: string, snapshot: Pick<Snapshot, 'desired' | 'recentEvents'>, query: string): PodSearchMatch[] {
  const needle = query.trim().toLowerCase();
  if (needle === '') return [];
  const desired = new Set(snapshot.desired.pods.map((p) => p.uid));
  const out: PodSearchMatch[] = [];
  for (const [uid, name] of podNamesOf(snapshot.desired.pods, snapshot.recentEvents)) {
    if (name.toLowerCase().includes(needle) || uid.toLowerCase().includes(needle)) out.push({ node, uid, name, desired: desired.has(uid) });
  }
  return out.sort((a, b) => Number(b.desired) - Number(a.desired) || a.name.localeCompare(b.name) || a.uid.localeCompare(b.uid));
}

/** Searches every configured agent for `query`; see the module comment. */
export async function searchPods(deps: AgentProxyDeps, query: string): Promise<PodSearchAnswer> {
  const config = deps.config();
  const perNode = await mapBounded(config.agents, POD_SEARCH_CONCURRENCY, async (agent) => {
    try {
      return { node: agent.name, matches: matchPods(agent.name, await fetchAgentSnapshot(agent.name, deps), query), error: null };
    } catch (err) {
      return { node: agent.name, matches: [], error: err instanceof Error ? err.message : String(err) };
    }
  });
  const all = perNode.flatMap((n) => n.matches);
  return {
    query,
    matches: all.slice(0, POD_SEARCH_LIMIT),
    truncated: all.length > POD_SEARCH_LIMIT,
    failed: perNode.flatMap((n) => (n.error === null ? [] : [{ node: n.node, message: n.error }])),
  };
}

const JSON_HEADERS = { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' };

/** `GET /api/agents/pods?q=`: 400 without `q`; the configuration's error as 503; else the answer. */
export async function relayPodSearch(req: Request, deps: AgentProxyDeps): Promise<Response> {
  const query = new URL(req.url).searchParams.get('q')?.trim() ?? '';
  if (query === '') return new Response(JSON.stringify({ error: { code: 'bad-request', message: 'missing ?q=<part of a pod name>' } }), { status: 400, headers: JSON_HEADERS });
  try {
    return new Response(JSON.stringify(await searchPods(deps, query)), { status: 200, headers: JSON_HEADERS });
  } catch (err) {
    if (!isAgentsConfigError(err)) throw err;
    return new Response(JSON.stringify({ error: { code: 'config-error', message: err.message } }), { status: 503, headers: JSON_HEADERS });
  }
}

/** The browser's search: the dashboard's answer, parsed. */
export async function fetchPodSearch(query: string, fetchFn: typeof fetch, signal?: AbortSignal): Promise<PodSearchAnswer> {
  const response = await fetchFn(`${POD_SEARCH_PATH}?q=${encodeURIComponent(query)}`, { headers: { Accept: 'application/json' }, cache: 'no-store', ...(signal === undefined ? {} : { signal }) });
  const body: unknown = await response.json().catch(() => null);
  const parsed = PodSearchAnswerSchema.safeParse(body);
  if (!response.ok || !parsed.success) throw new PodSearchError(`the dashboard answered the pod search with HTTP ${response.status}${parsed.success ? '' : ' (not a search answer)'}`);
  return parsed.data;
}

/** The dashboard's answer to a pod search was not one. */
export class PodSearchError extends Error {
  override readonly name = 'PodSearchError';
}

export function isPodSearchError(err: unknown): err is PodSearchError {
  return err instanceof PodSearchError;
}
