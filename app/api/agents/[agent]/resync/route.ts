import { proxyAgentAction } from '../../../../../lib/dashboard/agent-proxy.ts';
import { decodeSegment } from '../../../../../lib/dashboard/routes.ts';
import { serverAgentsReady, serverProxyDeps } from '../../../../../lib/dashboard/server-deps.ts';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/** Forwards the resync action to the agent with its token; the agent's answer is passed through. */
export async function POST(req: Request, ctx: { params: Promise<{ agent: string }> }): Promise<Response> {
  const { agent } = await ctx.params;
  await serverAgentsReady(); // with discovery: the first list of agent pods, right after a restart
  return proxyAgentAction(req, decodeSegment(agent), 'resync', serverProxyDeps(req));
}
