/**
 * The handlers behind `app/api/attachments/…` (kept here so the route files stay one line each
 * and the handlers can be tested without Next). Server-only.
 */
import { realClock } from '../../clock/clock.ts';
import type { AttachmentInformers } from './attachment-informers.ts';
import { attachmentDetailResponse, attachmentsListResponse, type AttachmentsErrorResponse } from './attachments-api.ts';
import { ATTACHMENTS_FIRST_LIST_WAIT_MS, isAttachmentsConfigError, serverAttachmentInformers } from './server-attachments.ts';

export interface AttachmentsRouteDeps {
  readonly informers: () => Promise<AttachmentInformers>;
  readonly now: () => number;
  readonly firstListWaitMs: number;
}

export function serverAttachmentsRouteDeps(): AttachmentsRouteDeps {
  return { informers: () => serverAttachmentInformers(), now: () => realClock.now(), firstListWaitMs: ATTACHMENTS_FIRST_LIST_WAIT_MS };
}

const noStore = { 'cache-control': 'no-store' };

async function withInformers(deps: AttachmentsRouteDeps, answer: (informers: AttachmentInformers) => unknown): Promise<Response> {
  let informers: AttachmentInformers;
  try {
    informers = await deps.informers();
  } catch (err) {
    if (!isAttachmentsConfigError(err)) throw err;
    const body: AttachmentsErrorResponse = { error: err.message, variable: err.variable };
    return Response.json(body, { status: 503, headers: noStore });
  }
  await informers.whenListed(deps.firstListWaitMs);
  return Response.json(answer(informers), { headers: noStore });
}

/** `GET /api/attachments`. */
export function getAttachments(deps: AttachmentsRouteDeps): Promise<Response> {
  return withInformers(deps, (i) => attachmentsListResponse(i.view(), deps.now()));
}

/** `GET /api/attachments/<pv>`. */
export function getAttachment(pv: string, deps: AttachmentsRouteDeps): Promise<Response> {
  return withInformers(deps, (i) => attachmentDetailResponse(i.view(), pv, deps.now()));
}
