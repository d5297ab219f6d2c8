/**
 * Reading the errors `@kubernetes/client-node` throws, without depending on their classes:
 * - typed API calls throw `ApiException` (`code` = HTTP status, `body` = the response body, a
 *   `Status` object or its JSON text);
 * - `Watch` fails with an `Error` carrying `statusCode`, or with the transport error;
 * - transport failures are undici's `TypeError: fetch failed` whose `cause` has the errno code
 *   (`ECONNREFUSED`, `ECONNRESET`…), or a `DOMException` named `TimeoutError`/`AbortError`.
 */
import { isJsonObject } from './plain-json.ts';

export interface ApiErrorInfo {
  /** The HTTP status, or undefined for a transport failure. */
  status: number | undefined;
  /** One line: `HTTP 403 Forbidden: pods is forbidden: …` or `fetch failed (ECONNREFUSED)`. */
  message: string;
}

const statusTexts: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  410: 'Gone',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Entity',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/** The HTTP status of a client-node error, if it has one. */
export function apiErrorStatus(err: unknown): number | undefined {
  if (!isJsonObjectLike(err)) return undefined;
  const code = err.code;
  if (typeof code === 'number' && code >= 100 && code < 600) return code;
  const statusCode = err.statusCode;
  if (typeof statusCode === 'number') return statusCode;
  return undefined;
}

export function describeApiError(err: unknown): ApiErrorInfo {
  const status = apiErrorStatus(err);
  if (status !== undefined) {
    const detail = statusMessage(isJsonObjectLike(err) ? err.body : undefined);
    const head = `HTTP ${status} ${statusTexts[status] ?? ''}`.trimEnd();
    return { status, message: detail === undefined ? head : `${head}: ${detail}` };
  }
  if (err instanceof Error) {
    const cause: unknown = err.cause;
    const causeCode = isJsonObjectLike(cause) && typeof cause.code === 'string' ? cause.code : undefined;
    const base = err.name === 'TimeoutError' || err.name === 'AbortError' ? `${err.name}: ${err.message}` : err.message;
    return { status: undefined, message: causeCode === undefined ? firstLine(base) : `${firstLine(base)} (${causeCode})` };
  }
  return { status: undefined, message: firstLine(String(err)) };
}

/** The `message` of a Kubernetes `Status` body (object or JSON text), if there is one. */
function statusMessage(body: unknown): string | undefined {
  let value: unknown = body;
  if (typeof body === 'string') {
    try {
      value = JSON.parse(body);
    } catch {
      return body.trim() === '' ? undefined : firstLine(body);
    }
  }
  if (isJsonObject(value) && typeof value.message === 'string' && value.message !== '') return firstLine(value.message);
  return undefined;
}

function firstLine(text: string): string {
  const line = text.split('\n', 1)[0] ?? '';
  return line.length > 300 ? `${line.slice(0, 297)}...` : line;
}

function isJsonObjectLike(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}
