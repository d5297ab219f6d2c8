import { getAttachment, serverAttachmentsRouteDeps } from '../../../../lib/dashboard/attachments/attachments-routes.ts';
import { decodeSegment } from '../../../../lib/dashboard/routes.ts';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/** One persistent volume's attachments and every verdict on them. */
export async function GET(_req: Request, ctx: { params: Promise<{ pv: string }> }): Promise<Response> {
  const { pv } = await ctx.params;
  return getAttachment(decodeSegment(pv), serverAttachmentsRouteDeps());
}
