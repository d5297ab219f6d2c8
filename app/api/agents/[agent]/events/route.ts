import { relayAgentEvents } from '../../../../../lib/dashboard/agent-proxy.ts';
import { decodeSegment } from '../../../../../lib/dashboard/routes.ts';
import { serverAgentsReady, serverProxyDeps } from '../../../../../lib/dashboard/server-deps.ts';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/** The agent's event stream, relayed unbuffered with the agent's token and the client's Last-Event-ID. */
export async function GET(req: Request, ctx: { params: Promise<{ agent: string }> }): Promise<Response> {
  const { agent } = await ctx.params;
  await serverAgentsReady(); // with discovery: the first list of agent pods, right after a restart
  return relayAgentEvents(req, decodeSegment(agent), serverProxyDeps(req));
}
