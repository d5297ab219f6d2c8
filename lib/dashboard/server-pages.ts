/**
 * What server-rendered pages need: the configured agent behind a `[node]` segment (or a 404),
 * and the agent's snapshot for the not-found checks and the prefetch that the client resumes
 * from. Server-only.
 */
import { QueryClient, dehydrate, type DehydratedState } from '@tanstack/react-query';
import { cache } from 'react';
import type { Snapshot } from '../api/index.ts';
import { fetchAgentSnapshot, serverContactRegistry } from './agent-proxy.ts';
import { findAgent, getAgentsConfig, isAgentsConfigError, type AgentConfig, type AgentsConfig } from './agents-config.ts';
import { isAgentUnavailableError } from './dashboard-error.ts';
import { describeDiscoveryProblem } from './discovery-status.ts';
import { PREFETCHED_UPDATED_AT, agentKeys } from './queries.ts';
import { decodeSegment } from './routes.ts';
import { serverProxyDeps } from './server-deps.ts';

export { decodeSegment };

/** The agents for a page, or the configuration error to show instead. */
export type PageAgents = { readonly ok: true; readonly config: AgentsConfig } | { readonly ok: false; readonly error: string };

/** Every configured agent; a malformed configuration is returned as text for the page to show. */
export function agentsForPage(): PageAgents {
  try {
    return { ok: true, config: getAgentsConfig() };
  } catch (err) {
    if (isAgentsConfigError(err)) return { ok: false, error: err.message };
    throw err;
  }
}

/** The agent behind a `[node]` segment: found, unknown (the page 404s), or a configuration error. */
export type PageAgent =
  | { readonly kind: 'found'; readonly agent: AgentConfig }
  | { readonly kind: 'unknown' }
  | { readonly kind: 'config-error'; readonly error: string };

/**
 * Resolves a `[node]` route segment to its configured agent. With discovery, a node that is not
 * (yet) known while the agent pods have never been listed is not called unknown (a 404 would be
 * wrong a moment after the dashboard started, or while the API is unreachable): the page shows
 * why the list is missing instead.
 */
export function agentForPage(segment: string): PageAgent {
  const agents = agentsForPage();
  if (!agents.ok) return { kind: 'config-error', error: agents.error };
  const agent = findAgent(agents.config, decodeSegment(segment));
  if (agent !== null) return { kind: 'found', agent };
  const discovery = agents.config.discovery;
  if (discovery !== undefined && !discovery.listed) {
    const why = discovery.error === null ? 'it has not listed them yet; reload in a moment' : describeDiscoveryProblem(discovery.error);
    return {
      kind: 'config-error',
      error: `agent discovery has no list of the agent pods (namespace ${discovery.namespace}, selector ${discovery.selector}): ${why}`,
    };
  }
  return { kind: 'unknown' };
}

/** A snapshot for a page, or why there is none. */
export type PageSnapshot =
  | { readonly ok: true; readonly snapshot: Snapshot; readonly dehydrated: DehydratedState }
  | { readonly ok: false; readonly error: string; readonly lastSeenAt: number | null; readonly dehydrated: null };

/**
 * The agent's snapshot now, plus a dehydrated query cache holding it (stamped old, see
 * `PREFETCHED_UPDATED_AT`) for a `HydrationBoundary`. When the agent cannot be reached the page
 * still renders (the live connection shows the outage), so this never throws for that. Cached per
 * request (React `cache`): a layout's not-found check and its page share one fetch.
 */
export const snapshotForPage = cache(async (agent: string): Promise<PageSnapshot> => {
  try {
    const snapshot = await fetchAgentSnapshot(agent, serverProxyDeps());
    const client = new QueryClient();
    client.setQueryData(agentKeys.snapshot(agent), snapshot, { updatedAt: PREFETCHED_UPDATED_AT });
    return { ok: true, snapshot, dehydrated: dehydrate(client) };
  } catch (err) {
    const lastSeenAt = isAgentUnavailableError(err) ? err.lastSeenAt : serverContactRegistry().get(agent).lastSeenAt;
    return { ok: false, error: err instanceof Error ? err.message : String(err), lastSeenAt, dehydrated: null };
  }
});
