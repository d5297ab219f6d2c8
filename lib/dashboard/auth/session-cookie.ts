/**
 * The session cookie's attributes. Pure; used by the proxy and the login routes.
 */
import type { Session } from './session.ts';

/** The attributes of the session cookie: httpOnly, SameSite=Strict, expiring with the session. */
export function sessionCookieAttributes(session: Pick<Session, 'expiresAt'>, secure: boolean, now: number) {
  return { httpOnly: true, sameSite: 'strict', secure, path: '/', maxAge: Math.max(0, session.expiresAt - now) } as const;
}

/** Whether the request came over HTTPS (directly or through a proxy that says so). */
export function isSecureRequest(url: string, forwardedProto: string | null): boolean {
  return new URL(url).protocol === 'https:' || forwardedProto?.split(',')[0]?.trim() === 'https';
}

