import { getAttachments, serverAttachmentsRouteDeps } from '../../../lib/dashboard/attachments/attachments-routes.ts';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/** Every blocked or suspect attachment, as the attach/detach controller sees it. */
export function GET(): Promise<Response> {
  return getAttachments(serverAttachmentsRouteDeps());
}
