/**
 * Which session a request has: its sealed cookie, else the login-free local session where that
 * is allowed (auth-settings.ts). One function for the proxy (which only needs the cookie and the
 * Host header) and the route handlers and pages (server-session.ts), so both decide alike.
 */
import { LOCAL_SESSION_USER, localSessionAllowed, type AuthSettings } from './auth-settings.ts';
import { unsealSession, type Session } from './session.ts';

/** The local session, starting `nowSeconds`: no token (the agents' token files are used). */
export function localSession(settings: AuthSettings, nowSeconds: number): Session {
  return { kind: 'local', username: LOCAL_SESSION_USER, groups: [], expiresAt: nowSeconds + settings.sessionTtlSeconds };
}

/** What a request carries that decides its session. */
export interface SessionInput {
  readonly cookie: string | undefined;
  readonly host: string | null;
}

/**
 * The request's session and whether it came from its cookie (`sealed`), or `null`. A sealed
 * `local` session counts only while local sessions are still allowed for this Host (a changed
 * setting ends them).
 */
export async function resolveSession(
  input: SessionInput,
  settings: AuthSettings,
  key: Uint8Array,
  nowSeconds: number,
): Promise<{ session: Session; sealed: boolean } | null> {
  const local = localSessionAllowed(settings, input.host);
  const sealed = await unsealSession(input.cookie, key, nowSeconds);
  if (sealed !== null && (sealed.kind !== 'local' || local)) return { session: sealed, sealed: true };
  return local ? { session: localSession(settings, nowSeconds), sealed: false } : null;
}
