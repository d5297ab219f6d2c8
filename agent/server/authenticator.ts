/**
 * Who is calling: the agent's authentication seam. The server asks an {@link Authenticator} about
 * every request except `/healthz` and `/readyz`, before it looks at anything else in the request.
 * The static bearer token is the first implementation; a TokenReview/SubjectAccessReview
 * authenticator can replace it without touching the server.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** The outcome of authenticating one request. */
export type AuthResult =
  | {
      ok: true;
      /** Who asked, as recorded in the audit log (`caller`): a token's name or the remote address. */
      caller: string;
    }
  | { ok: false };

/**
 * Decides whether a request may use the API. May be asynchronous (a TokenReview is a network
 * call). Must not throw for bad credentials (answer `{ok: false}`); a throw is an agent bug (500).
 */
export interface Authenticator {
  authenticate(req: IncomingMessage): AuthResult | Promise<AuthResult>;
}

/** A static token that cannot authenticate anyone (empty, or with characters a header cannot carry). */
export class InvalidTokenError extends Error {
  override readonly name = 'InvalidTokenError';
}

/** True for an {@link InvalidTokenError}. */
export function isInvalidTokenError(err: unknown): err is InvalidTokenError {
  return err instanceof InvalidTokenError;
}

/** The token of `Authorization: Bearer <token>` (scheme case-insensitive), or null. */
export function bearerToken(req: IncomingMessage): string | null {
  const header = req.headers.authorization;
  if (header === undefined) return null;
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return match?.[1] ?? null;
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** Options of {@link staticTokenAuthenticator}. */
export interface StaticTokenOptions {
  /**
   * The caller name recorded for this token. Absent: the token is anonymous and the caller is
   * the remote address (`ip:port`), as the audit contract says.
   */
  name?: string;
}

/**
 * Accepts exactly `Authorization: Bearer <token>`. The comparison runs in constant time: both
 * sides are hashed to equal-length digests first, so neither the content nor the length of the
 * configured token leaks through timing. Throws an {@link InvalidTokenError} for an empty token
 * or one containing whitespace (no header could carry it).
 */
export function staticTokenAuthenticator(token: string, options: StaticTokenOptions = {}): Authenticator {
  if (token === '' || /\s/.test(token)) throw new InvalidTokenError('the API token must be non-empty and contain no whitespace');
  const expected = digest(token);
  return {
    authenticate(req) {
      const presented = bearerToken(req);
      if (presented === null) return { ok: false };
      if (!timingSafeEqual(digest(presented), expected)) return { ok: false };
      return { ok: true, caller: options.name ?? remoteCaller(req) };
    },
  };
}

/** The remote address of a request as `ip:port` (`unknown` when the socket is gone). */
export function remoteCaller(req: IncomingMessage): string {
  const { remoteAddress, remotePort } = req.socket;
  if (remoteAddress === undefined) return 'unknown';
  return remotePort === undefined ? remoteAddress : `${remoteAddress}:${remotePort}`;
}
