/**
 * What went wrong in a Kubernetes API request, read from the errors `@kubernetes/client-node`
 * throws without depending on their classes:
 * - typed API calls throw `ApiException` (`code` = HTTP status, `body` = the response body, a
 *   `Status` object or its JSON text);
 * - `Watch` fails with an `Error` carrying `statusCode`, or with the transport error;
 * - transport failures are undici's: with `fetch` (the dashboard, watches) a `TypeError: fetch
 *   failed` whose `cause` has the errno code (`ECONNREFUSED`, `ECONNRESET`…), with `request` (the
 *   agent's API clients, lib/sources/kube/api-client.ts) the socket error with the code itself;
 *   or a `DOMException` named `TimeoutError`/`AbortError`;
 * - a request past its deadline (request-deadline.ts) rejects with a {@link KubeRequestTimeoutError}.
 *
 * The errors this layer throws are {@link KubeApiRequestError}s; the predicates below classify
 * any of these errors (status code, 404, 410 Gone, timeout, connection refused).
 */

/**
 * A request to the API server failed (anything but a 404 of a single object, which is an
 * answer, not a failure). `status` is the HTTP status, or undefined for a transport failure
 * (connection refused, reset, timeout).
 */
export class KubeApiRequestError extends Error {
  override readonly name: string = 'KubeApiRequestError';
  readonly status: number | undefined;

  constructor(message: string, status: number | undefined, cause: unknown) {
    super(message, { cause });
    this.status = status;
  }
}

export function isKubeApiRequestError(err: unknown): err is KubeApiRequestError {
  return err instanceof KubeApiRequestError;
}

/** A request got no answer before its deadline (request-deadline.ts). Has no status. */
export class KubeRequestTimeoutError extends KubeApiRequestError {
  override readonly name: string = 'KubeRequestTimeoutError';

  constructor(message: string) {
    super(message, undefined, undefined);
  }
}

export function isKubeRequestTimeoutError(err: unknown): err is KubeRequestTimeoutError {
  return err instanceof KubeRequestTimeoutError;
}

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

/**
 * The HTTP status of a client-node error, if it has one. A {@link KubeApiRequestError} carries
 * its own `status` (already classified), so it is not read here.
 */
export function apiErrorStatus(err: unknown): number | undefined {
  if (!isObjectLike(err)) return undefined;
  const code = err.code;
  if (typeof code === 'number' && code >= 100 && code < 600) return code;
  const statusCode = err.statusCode;
  if (typeof statusCode === 'number') return statusCode;
  return undefined;
}

/** The API server answered 404 Not Found. */
export function isApiNotFound(err: unknown): boolean {
  return requestErrorStatus(err) === 404;
}

/** The API server answered 410 Gone (a watch or list resourceVersion too old). */
export function isApiGone(err: unknown): boolean {
  return requestErrorStatus(err) === 410;
}

/** The HTTP status of any error of this layer or of client-node: a {@link KubeApiRequestError}'s own, else {@link apiErrorStatus}. */
export function requestErrorStatus(err: unknown): number | undefined {
  return isKubeApiRequestError(err) ? err.status : apiErrorStatus(err);
}

/** The errno code of a transport failure (`ECONNREFUSED`, `ECONNRESET`…), if there is one. */
export function transportErrorCode(err: unknown): string | undefined {
  if (!(err instanceof Error)) return undefined;
  return causeCode(err) ?? (isObjectLike(err) && typeof err.code === 'string' ? err.code : undefined);
}

/** The errno code of undici's `fetch failed`, which is on its `cause` (undici's `request` puts it on the error). */
function causeCode(err: Error): string | undefined {
  const cause: unknown = err.cause;
  return isObjectLike(cause) && typeof cause.code === 'string' ? cause.code : undefined;
}

/** Nothing listened at the API server's address. */
export function isConnectionRefused(err: unknown): boolean {
  return transportErrorCode(err) === 'ECONNREFUSED';
}

/** The request ran out of time: our deadline, or a fetch `TimeoutError`. */
export function isRequestTimeout(err: unknown): boolean {
  return isKubeRequestTimeoutError(err) || (err instanceof Error && err.name === 'TimeoutError');
}

export function describeApiError(err: unknown): ApiErrorInfo {
  const status = apiErrorStatus(err);
  if (status !== undefined) {
    const detail = statusMessage(isObjectLike(err) ? err.body : undefined);
    const head = `HTTP ${status} ${statusTexts[status] ?? ''}`.trimEnd();
    return { status, message: detail === undefined ? head : `${head}: ${detail}` };
  }
  if (err instanceof Error) {
    const code = causeCode(err);
    const base = err.name === 'TimeoutError' || err.name === 'AbortError' ? `${err.name}: ${err.message}` : err.message;
    return { status: undefined, message: code === undefined ? firstLine(base) : `${firstLine(base)} (${code})` };
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
  if (isObjectLike(value) && !Array.isArray(value) && typeof value.message === 'string' && value.message !== '') return firstLine(value.message);
  return undefined;
}

function firstLine(text: string): string {
  const line = text.split('\n', 1)[0] ?? '';
  return line.length > 300 ? `${line.slice(0, 297)}...` : line;
}

function isObjectLike(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}
