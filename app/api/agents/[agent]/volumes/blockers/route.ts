import { proxyAgentBlockers } from '../../../../../../lib/dashboard/agent-proxy.ts';
import { decodeSegment } from '../../../../../../lib/dashboard/routes.ts';
import { serverAgentsReady, serverProxyDeps } from '../../../../../../lib/dashboard/server-deps.ts';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/** Forwards the blocker search (`?volume=…&podUid=…`) to the agent with its token; its answer is passed through. */
export async function GET(req: Request, ctx: { params: Promise<{ agent: string }> }): Promise<Response> {
  const { agent } = await ctx.params;
  await serverAgentsReady();
  return proxyAgentBlockers(req, decodeSegment(agent), serverProxyDeps());
}
