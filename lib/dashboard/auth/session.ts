/**
 * The operator's session: who is logged in and which bearer token the dashboard sends to the
 * agents on their behalf, sealed into one cookie. Server-only (the proxy and the route handlers).
 *
 * Sealing is JWE (`dir` + `A256GCM`, the `jose` library): the cookie is encrypted and
 * authenticated with a 256-bit key, so the browser can neither read the token in it nor forge or
 * alter a session. The JWT's `exp` is checked on every unseal, and the cookie's `Max-Age` is the
 * same instant, so an expired session is refused even if a browser keeps the cookie.
 *
 * Kinds:
 * - `local`: the standalone demo's session (no login step; see auth-settings.ts for when it is
 *   allowed). It carries no token: the agents' configured token files are used, as before.
 * - `token`: a Kubernetes bearer token the operator pasted, reviewed by the API server at login.
 * - `oidc`: an OpenID Connect login; the token sent to the agents is the ID token.
 */
import { hkdfSync } from 'node:crypto';
import { EncryptJWT, jwtDecrypt, errors as joseErrors } from 'jose';
import { z } from 'zod';

/** The session cookie's name. */
export const SESSION_COOKIE = 'volumescope-session';

/** How the session was made. */
export type SessionKind = 'local' | 'token' | 'oidc';

/** A logged-in operator. `token` is present for `token` and `oidc` sessions. */
export interface Session {
  readonly kind: SessionKind;
  /** The user name as the API server knows it (TokenReview/SelfSubjectReview), or the demo's name. */
  readonly username: string;
  readonly groups: readonly string[];
  /** The bearer token sent to the agents; never sent to the browser. */
  readonly token?: string;
  /** Epoch seconds after which the session is void. */
  readonly expiresAt: number;
}

/** What the browser may know about its session (never the token). */
export interface SessionView {
  readonly kind: SessionKind;
  readonly username: string;
  readonly groups: readonly string[];
  readonly expiresAt: number;
}

/** The session without its token, for pages and JSON answers. */
export function sessionView(session: Session): SessionView {
  return { kind: session.kind, username: session.username, groups: session.groups, expiresAt: session.expiresAt };
}

const ClaimsSchema = z.object({
  knd: z.enum(['local', 'token', 'oidc']),
  sub: z.string().min(1),
  grp: z.array(z.string()),
  tok: z.string().min(1).optional(),
  exp: z.number().int(),
});

/** The sealing key: 32 bytes from a secret of at least 32 characters (HKDF-SHA256). */
export function sessionKey(secret: string): Uint8Array {
  if (secret.length < 32) throw new RangeError('the session secret must have at least 32 characters');
  return new Uint8Array(hkdfSync('sha256', secret, 'volumescope', 'volumescope session cookie v1', 32));
}

/** Seals `claims` (JWE, `dir` + `A256GCM`) to expire at `expiresAt` (epoch seconds). */
export async function sealClaims(claims: Record<string, unknown>, expiresAt: number, key: Uint8Array): Promise<string> {
  return new EncryptJWT(claims).setProtectedHeader({ alg: 'dir', enc: 'A256GCM' }).setIssuedAt().setExpirationTime(expiresAt).encrypt(key);
}

/** The claims of a sealed value; `null` when absent, tampered with, sealed with another key or expired. */
export async function unsealClaims(value: string | undefined, key: Uint8Array, nowSeconds: number): Promise<Record<string, unknown> | null> {
  if (value === undefined || value === '') return null;
  try {
    const { payload } = await jwtDecrypt(value, key, { currentDate: new Date(nowSeconds * 1000), keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'] });
    return payload;
  } catch (err) {
    if (err instanceof joseErrors.JOSEError) return null;
    throw err;
  }
}

/** Seals a session into the cookie value. */
export async function sealSession(session: Session, key: Uint8Array): Promise<string> {
  return sealClaims(
    { knd: session.kind, sub: session.username, grp: [...session.groups], ...(session.token === undefined ? {} : { tok: session.token }) },
    session.expiresAt,
    key,
  );
}

/**
 * The session in a cookie value; `null` when it is absent, tampered with, sealed with another
 * key, malformed or expired at `nowSeconds`.
 */
export async function unsealSession(value: string | undefined, key: Uint8Array, nowSeconds: number): Promise<Session | null> {
  const claims = ClaimsSchema.safeParse(await unsealClaims(value, key, nowSeconds));
  if (!claims.success) return null;
  const c = claims.data;
  return { kind: c.knd, username: c.sub, groups: c.grp, ...(c.tok === undefined ? {} : { token: c.tok }), expiresAt: c.exp };
}
