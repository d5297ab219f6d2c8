/**
 * The session of the request being handled, for route handlers and server components (Next's
 * request-scoped `cookies()` and `headers()`), and the cookie writer of the login routes.
 * Server-only.
 */
import { cookies, headers } from 'next/headers';
import { NextRequest } from 'next/server';
import { realClock } from '../../clock/clock.ts';
import { parseAuthSettings, processSessionKey, type AuthSettings } from './auth-settings.ts';
import { resolveSession } from './session-resolver.ts';
import { sessionCookieAttributes } from './session-cookie.ts';
import { SESSION_COOKIE, sealSession, type Session } from './session.ts';

/** Seconds since the epoch on the process clock. */
export function nowSeconds(): number {
  return Math.floor(realClock.now() / 1000);
}

/** The process's login settings (throws AuthSettingsError when malformed). */
export function serverAuthSettings(): AuthSettings {
  return parseAuthSettings(process.env);
}

/**
 * The session of `req` (route handlers pass their request), or of the request being rendered
 * (server components: Next's `cookies()` and `headers()`); `null` when not logged in.
 */
export async function currentSession(req?: Request): Promise<Session | null> {
  let input: { cookie: string | undefined; host: string | null };
  if (req === undefined) {
    const [jar, h] = await Promise.all([cookies(), headers()]);
    input = { cookie: jar.get(SESSION_COOKIE)?.value, host: h.get('host') };
  } else {
    // Only the URL and headers: the body may have been read already (an action's handler reads it first).
    input = { cookie: new NextRequest(req.url, { headers: req.headers }).cookies.get(SESSION_COOKIE)?.value, host: req.headers.get('host') ?? new URL(req.url).host };
  }
  const resolved = await resolveSession(input, serverAuthSettings(), processSessionKey(), nowSeconds());
  return resolved?.session ?? null;
}

/** Sets the session cookie on the response being built (route handlers only). */
export async function writeSessionCookie(session: Session, secure: boolean): Promise<void> {
  const jar = await cookies();
  jar.set(SESSION_COOKIE, await sealSession(session, processSessionKey()), sessionCookieAttributes(session, secure, nowSeconds()));
}

/** Removes the session cookie (logout). */
export async function clearSessionCookie(): Promise<void> {
  (await cookies()).delete(SESSION_COOKIE);
}
