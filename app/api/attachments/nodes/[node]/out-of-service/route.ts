import { deleteOutOfService, getOutOfService, postOutOfService, serverOutOfServiceDeps } from '../../../../../../lib/dashboard/attachments/out-of-service-routes.ts';
import { decodeSegment } from '../../../../../../lib/dashboard/routes.ts';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Ctx = { params: Promise<{ node: string }> };

/** What marking the node out of service would do (pods force-deleted, volumes detached). */
export async function GET(_req: Request, ctx: Ctx): Promise<Response> {
  return getOutOfService(decodeSegment((await ctx.params).node), serverOutOfServiceDeps());
}

/** Marks a NotReady node out of service after the operator attested it is off. */
export async function POST(req: Request, ctx: Ctx): Promise<Response> {
  return postOutOfService(req, decodeSegment((await ctx.params).node), serverOutOfServiceDeps());
}

/** Removes the out-of-service taint. */
export async function DELETE(req: Request, ctx: Ctx): Promise<Response> {
  return deleteOutOfService(req, decodeSegment((await ctx.params).node), serverOutOfServiceDeps());
}
