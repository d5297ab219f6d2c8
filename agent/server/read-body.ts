/**
 * Reading a request body with the API's size limit (64 KiB): a larger declared or actual body is
 * a {@link PayloadTooLargeError} (413), bytes that are not UTF-8 an `InvalidRequestBodyError`
 * (400). The body is never buffered beyond the limit.
 */
import type { IncomingMessage } from 'node:http';
import { InvalidRequestBodyError, MAX_REQUEST_BODY_BYTES } from '../../lib/api/request-body.ts';

/** The request body is larger than the limit (HTTP 413). */
export class PayloadTooLargeError extends Error {
  override readonly name = 'PayloadTooLargeError';

  constructor(readonly limit: number) {
    super(`request body is larger than ${limit} bytes`);
  }
}

/** True for a {@link PayloadTooLargeError}. */
export function isPayloadTooLargeError(err: unknown): err is PayloadTooLargeError {
  return err instanceof PayloadTooLargeError;
}

/** The client went away (or the connection failed) before the body was complete. */
export class RequestAbortedError extends Error {
  override readonly name = 'RequestAbortedError';
}

/** True for a {@link RequestAbortedError}. */
export function isRequestAbortedError(err: unknown): err is RequestAbortedError {
  return err instanceof RequestAbortedError;
}

/**
 * The body as text. Rejects with a {@link PayloadTooLargeError} as soon as the declared
 * `Content-Length` or the bytes received exceed `limit` (the rest of the body is discarded,
 * not stored), with an `InvalidRequestBodyError` for bytes that are not UTF-8, and with a
 * {@link RequestAbortedError} when the request ends early.
 */
export function readBody(req: IncomingMessage, limit = MAX_REQUEST_BODY_BYTES): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > limit) {
      req.resume();
      reject(new PayloadTooLargeError(limit));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const fail = (err: Error): void => {
      if (done) return;
      done = true;
      chunks.length = 0;
      reject(err);
    };
    req.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > limit) {
        fail(new PayloadTooLargeError(limit));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (done) return;
      done = true;
      try {
        resolve(new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks)));
      } catch {
        reject(new InvalidRequestBodyError('body', 'body: not valid UTF-8'));
      }
    });
    req.on('close', () => {
      if (!req.complete) fail(new RequestAbortedError('the request was aborted before its body was complete'));
    });
    req.on('error', (err) => {
      fail(new RequestAbortedError(`reading the request body failed: ${err.message}`));
    });
  });
}
