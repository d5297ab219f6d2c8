/**
 * The browser side of the attachment view: its URLs and the polls of its JSON routes
 * (attachments-api.ts). Imports no Node built-in (client components use it).
 */
import { queryOptions } from '@tanstack/react-query';
import type { AttachmentDetailResponse, AttachmentsErrorResponse, AttachmentsListResponse } from './attachments-api.ts';

/** `/volumes/attachments`: every blocked or suspect attachment. */
export const ATTACHMENTS_HREF = '/volumes/attachments';

/** `/attachments/<pv>`: one volume explained. */
export function attachmentHref(pv: string): string {
  return `/attachments/${encodeURIComponent(pv)}`;
}

export const ATTACHMENTS_API = '/api/attachments';
/** The pages poll this often while visible (the server's informers push nothing to browsers). */
export const ATTACHMENTS_POLL_INTERVAL_MS = 5_000;
const REQUEST_TIMEOUT_MS = 10_000;

/** The dashboard answered an attachment route with an error. */
export class AttachmentsRequestError extends Error {
  override readonly name = 'AttachmentsRequestError';
  /** The variable to fix, when the server named one. */
  readonly variable: string | null;
  constructor(message: string, variable: string | null) {
    super(message);
    this.variable = variable;
  }
}

export function isAttachmentsRequestError(err: unknown): err is AttachmentsRequestError {
  return err instanceof AttachmentsRequestError;
}

function isErrorBody(body: unknown): body is AttachmentsErrorResponse {
  return typeof body === 'object' && body !== null && typeof (body as { error?: unknown }).error === 'string';
}

function hasListed(body: unknown): boolean {
  return typeof body === 'object' && body !== null && typeof (body as { listed?: unknown }).listed === 'boolean';
}

async function getJson<T>(path: string, fetchFn: typeof fetch, signal: AbortSignal | undefined): Promise<T> {
  const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
  const response = await fetchFn(path, { headers: { Accept: 'application/json' }, cache: 'no-store', signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]) });
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    throw new AttachmentsRequestError(`the dashboard answered ${path} with HTTP ${response.status} that is not JSON`, null);
  }
  if (isErrorBody(body)) throw new AttachmentsRequestError(body.error, typeof body.variable === 'string' ? body.variable : null);
  if (!response.ok || !hasListed(body)) throw new AttachmentsRequestError(`the dashboard answered ${path} with HTTP ${response.status}`, null);
  // The shape is this server's own (attachments-api.ts), checked above by its `listed` flag.
  return body as T;
}

const poll = { refetchInterval: ATTACHMENTS_POLL_INTERVAL_MS, refetchIntervalInBackground: false, refetchOnWindowFocus: true, staleTime: 0, retry: false } as const;

export function attachmentsQueryOptions(fetchFn: typeof fetch = (i, init) => fetch(i, init)) {
  return queryOptions<AttachmentsListResponse>({
    queryKey: ['attachments', 'list'],
    queryFn: ({ signal }) => getJson<AttachmentsListResponse>(ATTACHMENTS_API, fetchFn, signal),
    ...poll,
  });
}

export function attachmentQueryOptions(pv: string, fetchFn: typeof fetch = (i, init) => fetch(i, init)) {
  return queryOptions<AttachmentDetailResponse>({
    queryKey: ['attachments', 'volume', pv],
    queryFn: ({ signal }) => getJson<AttachmentDetailResponse>(`${ATTACHMENTS_API}/${encodeURIComponent(pv)}`, fetchFn, signal),
    ...poll,
  });
}
