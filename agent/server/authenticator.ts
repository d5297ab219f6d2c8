/**
 * Who is calling: the agent's authentication and authorization seam. The server asks an
 * {@link Authenticator} about every request except `/healthz` and `/readyz`, before it looks at
 * anything else in the request. Implementations: the static bearer token (this file) and the
 * TokenReview/SubjectAccessReview webhook with the static token in front (webhook-auth.ts).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { errorAnswer, type HttpAnswer } from './http-response.ts';

/** The outcome of authenticating (and authorizing) one request. */
export type AuthResult = AuthSuccess | AuthFailure;

/** The request may proceed. */
export interface AuthSuccess {
  ok: true;
  /**
   * Who asked, as recorded in the audit log (`caller`): the person or service account the
   * credentials belong to (a TokenReview's user name, the static token's name); never a socket
   * address, which names a connection, not anyone accountable.
   */
  caller: string;
  /** The caller's groups (a TokenReview's `status.user.groups`); absent: none (the static token). */
  groups?: readonly string[];
}

/**
 * Why a request was refused, which decides its status:
 * - `unauthenticated` (401): no credentials, wrong ones, or they could not be checked (the
 *   TokenReview failed: fail closed, as the kubelet does);
 * - `forbidden` (403): the caller is known but may not do this;
 * - `error` (500): the authorization check itself failed (the SubjectAccessReview call), so
 *   nothing was decided; the request is refused (fail closed, as the kubelet does);
 * - `rate-limited` (429 with `Retry-After`): the client presented too many tokens the agent had
 *   to send to a TokenReview (unknown ones) in a short time; nothing was reviewed.
 */
export type AuthFailureReason = 'unauthenticated' | 'forbidden' | 'error' | 'rate-limited';

/** The request is refused. */
export interface AuthFailure {
  ok: false;
  reason: AuthFailureReason;
  /** The message sent to the client; absent: a generic one per reason. Never holds credentials. */
  message?: string;
  /** Why a check failed, for the agent's log only (never sent): e.g. the review call's error. */
  logDetail?: string;
  /** With `rate-limited`: seconds until the client may try again. */
  retryAfterSeconds?: number;
}

/**
 * Decides whether a request may use the API. May be asynchronous (a TokenReview is a network
 * call). Must not throw for bad credentials or a failed review (answer an {@link AuthFailure});
 * a throw is an agent bug (500).
 */
export interface Authenticator {
  authenticate(req: IncomingMessage): AuthResult | Promise<AuthResult>;
}

/**
 * The answer to a refused request: 401 with `WWW-Authenticate: Bearer` (code `unauthorized`),
 * 403 (code `unauthorized`: the API has no separate code for it, as 429 is sent as `conflict`),
 * or 500 (code `internal`).
 */
export function authFailureAnswer(failure: AuthFailure): HttpAnswer {
  switch (failure.reason) {
    case 'unauthenticated':
      return errorAnswer('unauthorized', failure.message ?? 'missing or wrong bearer token', { headers: { 'WWW-Authenticate': 'Bearer' } });
    case 'forbidden':
      return errorAnswer('forbidden', failure.message ?? 'Forbidden');
    case 'error':
      return errorAnswer('internal', failure.message ?? 'Authorization error');
    case 'rate-limited':
      return errorAnswer('rate-limited', failure.message ?? 'too many unknown tokens; retry later', { headers: { 'Retry-After': String(failure.retryAfterSeconds ?? 1) } });
  }
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

/**
 * The caller of the static token when it has no name of its own: the identity the agent knows
 * the static token's holder by (the local dashboard, or whoever read `--token-file`), shaped like
 * a service account so the audit log reads alike for both kinds of token.
 */
export const STATIC_TOKEN_CALLER = 'volumescope:static-token';

/** Options of {@link staticTokenAuthenticator}. */
export interface StaticTokenOptions {
  /** The caller name recorded for this token (default {@link STATIC_TOKEN_CALLER}). */
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
      if (presented === null || !timingSafeEqual(digest(presented), expected)) return { ok: false, reason: 'unauthenticated' };
      return { ok: true, caller: options.name ?? STATIC_TOKEN_CALLER };
    },
  };
}
