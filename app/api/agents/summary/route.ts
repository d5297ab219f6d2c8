import { credentialKey } from '../../../../lib/dashboard/auth/agent-credential.ts';
import { currentSession } from '../../../../lib/dashboard/auth/server-session.ts';
import { serverAgentsReady, serverProxyDeps } from '../../../../lib/dashboard/server-deps.ts';
import { relaySummaries, serverSummaryRelay } from '../../../../lib/dashboard/summary-relay.ts';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * Every agent's summary in one answer (the overview's poll): fanned out server-side with each
 * session's token (rounds shared per credential only), bounded in concurrency and time; unreachable agents are reported, not fatal.
 * A static `summary` segment wins over `[agent]`, so a node named `summary` has no `/api/agents/summary`.
 */
export async function GET(req: Request): Promise<Response> {
  await serverAgentsReady();
  return relaySummaries(serverSummaryRelay(credentialKey(await currentSession(req))), serverProxyDeps(req));
}
