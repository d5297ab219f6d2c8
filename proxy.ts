/**
 * The dashboard's gate (Next's Proxy, formerly Middleware; Node.js runtime): every request
 * except build assets passes here before any page or route handler runs.
 *
 * 1. `Host` must be on the allow-list (DNS rebinding; lib/dashboard/auth/request-guard.ts).
 * 2. State-changing requests must pass the CSRF check (same-origin `Origin`, `Sec-Fetch-Site`,
 *    the `X-VolumeScope-Request` header) and, except the login routes, carry a valid session
 *    cookie.
 * 3. Pages and API routes need a session: the sealed cookie, or the local session where allowed
 *    (its cookie is set here, so later state-changing requests carry one); otherwise pages are
 *    sent to /login and API routes answered 401.
 *
 * Why here and not in each route: one place that cannot be forgotten by a new route, and it runs
 * before Next renders or reads a body. The route handlers still resolve the session themselves
 * (lib/dashboard/auth/server-session.ts) because they need its token, so a route reached some
 * other way still has no token to send without a session.
 */
import { NextResponse, type NextRequest } from 'next/server';
import { realClock } from './lib/clock/clock.ts';
import { isAuthSettingsError, parseAuthSettings, processSessionKey } from './lib/dashboard/auth/auth-settings.ts';
import { allowedHosts, csrfRefusal, isAllowedHost, isAllowedHostsConfigError, isSafeMethod, ALLOWED_HOSTS_ENV } from './lib/dashboard/auth/request-guard.ts';
import { resolveSession } from './lib/dashboard/auth/session-resolver.ts';
import { SESSION_COOKIE, sealSession } from './lib/dashboard/auth/session.ts';
import { isSecureRequest, sessionCookieAttributes } from './lib/dashboard/auth/session-cookie.ts';
import { parsePublicUrl } from './lib/dashboard/public-url.ts';

function refuse(status: number, code: string, message: string, api: boolean): NextResponse {
  if (!api) return new NextResponse(`${message}\n`, { status, headers: { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' } });
  return NextResponse.json({ dashboardError: { code, agent: '', message, lastSeenAt: null } }, { status, headers: { 'Cache-Control': 'no-store' } });
}

/** Paths reachable without a session: the login page and the login/logout routes. */
function isLoginPath(path: string): boolean {
  return path === '/login' || path.startsWith('/api/auth/');
}

export async function proxy(request: NextRequest): Promise<NextResponse> {
  const path = request.nextUrl.pathname;
  const api = path.startsWith('/api/');
  const host = request.headers.get('host');
  let settings;
  try {
    if (!isAllowedHost(host, allowedHosts(process.env[ALLOWED_HOSTS_ENV], parsePublicUrl(process.env['VOLUMESCOPE_PUBLIC_URL'])))) {
      return refuse(403, 'forbidden', 'this dashboard does not answer to that host name (see VOLUMESCOPE_ALLOWED_HOSTS)', api);
    }
    settings = parseAuthSettings(process.env);
  } catch (err) {
    if (isAllowedHostsConfigError(err) || isAuthSettingsError(err) || (err instanceof Error && err.name === 'PublicUrlConfigError')) return refuse(500, 'forbidden', err.message, api);
    throw err;
  }
  const now = Math.floor(realClock.now() / 1000);
  const cookie = request.cookies.get(SESSION_COOKIE)?.value;
  const key = processSessionKey();
  const resolved = await resolveSession({ cookie, host }, settings, key, now);

  if (!isSafeMethod(request.method)) {
    const refusal = csrfRefusal(request.headers);
    if (refusal !== null) return refuse(403, 'forbidden', `refused as a possible cross-site request: ${refusal}`, true);
    if (!isLoginPath(path) && resolved?.sealed !== true) return refuse(401, 'not-logged-in', 'log in first: this request has no valid session cookie', true);
    return NextResponse.next();
  }
  if (isLoginPath(path)) return NextResponse.next();
  if (resolved === null) {
    if (api) return refuse(401, 'not-logged-in', 'log in first: this request has no valid session', true);
    const login = new URL('/login', request.url);
    login.searchParams.set('next', `${path}${request.nextUrl.search}`);
    return NextResponse.redirect(login, 303);
  }
  const response = NextResponse.next();
  if (!resolved.sealed) {
    response.cookies.set(SESSION_COOKIE, await sealSession(resolved.session, key), sessionCookieAttributes(resolved.session, isSecureRequest(request.url, request.headers.get('x-forwarded-proto')), now));
  }
  return response;
}

export const config = {
  // Build assets and the icon need nothing (they are the same for everyone).
  matcher: ['/((?!_next/static|_next/image|icon.svg|favicon.ico).*)'],
};
