import { listAgents } from '../../../lib/dashboard/agent-proxy.ts';
import { serverAgentsReady, serverProxyDeps } from '../../../lib/dashboard/server-deps.ts';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/** The configured agents: name, URL, and when this server last reached each (never a token). */
export async function GET(): Promise<Response> {
  await serverAgentsReady();
  return listAgents(serverProxyDeps());
}
