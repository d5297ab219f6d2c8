/**
 * The request gate proxy.ts runs before every page and route: the Host allow-list, the CSRF
 * check and the session requirement (request-guard.ts, session-resolver.ts). Server-only.
 */
import { NextResponse, type NextRequest } from 'next/server';
import { realClock } from '../../clock/clock.ts';
import { isAuthSettingsError, parseAuthSettings, processSessionKey } from './auth-settings.ts';
import { allowedHosts, csrfRefusal, isAllowedHost, isAllowedHostsConfigError, isSafeMethod, ALLOWED_HOSTS_ENV } from './request-guard.ts';
import { resolveSession } from './session-resolver.ts';
import { SESSION_COOKIE, sealSession } from './session.ts';
import { isSecureRequest, sessionCookieAttributes } from './session-cookie.ts';
import { parsePublicUrl } from '../public-url.ts';
import { applyCrossOriginHeaders, crossOriginDecision, isCorsOriginsConfigError, parseCorsOrigins, CORS_ORIGINS_ENV, type CrossOriginDecision } from './cross-origin-reads.ts';

function refuse(status: number, code: string, message: string, api: boolean): NextResponse {
  if (!api) return new NextResponse(`${message}\n`, { status, headers: { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' } });
  return NextResponse.json({ dashboardError: { code, agent: '', message, lastSeenAt: null } }, { status, headers: { 'Cache-Control': 'no-store' } });
}

/** Paths reachable without a session: the login page and the login/logout routes. */
function isLoginPath(path: string): boolean {
  return path === '/login' || path.startsWith('/api/auth/');
}

/**
 * The gate's answer for `request` (see proxy.ts): a refusal, a redirect to the login page, or
 * `NextResponse.next()` (with the local session's cookie when one was handed out). `env` and
 * `nowSeconds` are injected for tests.
 */
export async function gateRequest(request: NextRequest, env: Readonly<Record<string, string | undefined>> = process.env, nowSeconds?: number): Promise<NextResponse> {
  const path = request.nextUrl.pathname;
  const api = path.startsWith('/api/');
  const host = request.headers.get('host');
  let settings;
  let cors: CrossOriginDecision;
  try {
    if (!isAllowedHost(host, allowedHosts(env[ALLOWED_HOSTS_ENV], parsePublicUrl(env['VOLUMESCOPE_PUBLIC_URL'])))) {
      return refuse(403, 'forbidden', 'this dashboard does not answer to that host name (see VOLUMESCOPE_ALLOWED_HOSTS)', api);
    }
    settings = parseAuthSettings(env);
    cors = crossOriginDecision(request.method, path, request.headers, parseCorsOrigins(env[CORS_ORIGINS_ENV]));
  } catch (err) {
    if (isAllowedHostsConfigError(err) || isAuthSettingsError(err) || isCorsOriginsConfigError(err) || (err instanceof Error && err.name === 'PublicUrlConfigError')) return refuse(500, 'forbidden', err.message, api);
    throw err;
  }
  // A preflight carries no cookie: answered here, before the session check (cross-origin-reads.ts).
  if (cors.kind === 'preflight') return new NextResponse(null, { status: 204, headers: cors.headers });
  return applyCrossOriginHeaders(await gateSession(request, env, settings, path, api, nowSeconds), cors);
}

async function gateSession(request: NextRequest, env: Readonly<Record<string, string | undefined>>, settings: ReturnType<typeof parseAuthSettings>, path: string, api: boolean, nowSeconds: number | undefined): Promise<NextResponse> {
  const host = request.headers.get('host');
  const now = nowSeconds ?? Math.floor(realClock.now() / 1000);
  const cookie = request.cookies.get(SESSION_COOKIE)?.value;
  const key = processSessionKey(env);
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

