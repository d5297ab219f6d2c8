/**
 * `GET /api/agents/pods?q=<text>` (server only): finds pods by name on every node. The dashboard
 * server asks each agent for its snapshot (with the agent's token, which stays here; at most
 * {@link POD_SEARCH_CONCURRENCY} at a time, each within the proxy's connect timeout) and answers
 * the matches of pod-search.ts's {@link matchPods}. A node that cannot be asked is reported with
 * why, not fatal.
 */
import { fetchAgentSnapshot, type AgentProxyDeps } from './agent-proxy.ts';
import { isAgentsConfigError } from './agents-config.ts';
import { POD_SEARCH_LIMIT, matchPods, type PodSearchAnswer } from './pod-search.ts';
import { mapBounded } from './summary-relay.ts';

/** How many agents are asked at once. */
const POD_SEARCH_CONCURRENCY = 16;

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
