/**
 * Reading a request body in a dashboard route handler with a byte cap, while it streams: a
 * declared `Content-Length` over the cap is refused before a byte is read, and a body without
 * one (chunked) is counted chunk by chunk and abandoned (its stream cancelled) as soon as the
 * count passes the cap. At most `limit` bytes plus one chunk are ever held, so a 100 MB body
 * costs the dashboard no more memory than a 64 KiB one. Server-only; no Node built-ins (web streams).
 */

/** The body is larger than the limit (HTTP 413). */
export class BodyTooLargeError extends Error {
  override readonly name = 'BodyTooLargeError';

  constructor(readonly limit: number) {
    super(`body: larger than ${limit} bytes`);
  }
}

/** True for a {@link BodyTooLargeError}. */
export function isBodyTooLargeError(err: unknown): err is BodyTooLargeError {
  return err instanceof BodyTooLargeError;
}

/** The body is not UTF-8 (HTTP 400, field `body`). */
export class BodyNotUtf8Error extends Error {
  override readonly name = 'BodyNotUtf8Error';
}

/** True for a {@link BodyNotUtf8Error}. */
export function isBodyNotUtf8Error(err: unknown): err is BodyNotUtf8Error {
  return err instanceof BodyNotUtf8Error;
}

/**
 * The body as text; `''` for none. Throws {@link BodyTooLargeError} (declared or counted size
 * over `limit`) and {@link BodyNotUtf8Error}.
 */
export async function readBodyWithLimit(req: Request, limit: number): Promise<string> {
  const declared = req.headers.get('content-length');
  if (declared !== null && Number(declared) > limit) {
    await req.body?.cancel().catch(() => undefined);
    throw new BodyTooLargeError(limit);
  }
  if (req.body === null) return '';
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      chunks.length = 0;
      await reader.cancel().catch(() => undefined);
      throw new BodyTooLargeError(limit);
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    all.set(chunk, at);
    at += chunk.byteLength;
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(all);
  } catch {
    throw new BodyNotUtf8Error('body: not valid UTF-8');
  }
}
