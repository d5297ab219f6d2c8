import { relayPodSearch } from '../../../../lib/dashboard/pod-search-relay.ts';
import { serverAgentsReady, serverProxyDeps } from '../../../../lib/dashboard/server-deps.ts';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * Pods found by name on every node (`?q=`), server-side with each agent's token. A static `pods`
 * segment wins over `[agent]`, so a node named `pods` has no `/api/agents/pods`.
 */
export async function GET(req: Request): Promise<Response> {
  await serverAgentsReady();
  return relayPodSearch(req, serverProxyDeps(req));
}
