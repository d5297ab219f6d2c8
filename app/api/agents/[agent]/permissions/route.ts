import { agentPermissions } from '../../../../../lib/dashboard/auth/login-routes.ts';
import { decodeSegment } from '../../../../../lib/dashboard/routes.ts';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/** What the session's user may do with this node's agent (`get`, `update`, and why not). */
export async function GET(req: Request, ctx: { params: Promise<{ agent: string }> }): Promise<Response> {
  const { agent } = await ctx.params;
  return agentPermissions(decodeSegment(agent), req);
}
