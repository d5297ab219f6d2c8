/**
 * The login, logout, session and permissions handlers (`app/api/auth/**`,
 * `app/api/agents/<name>/permissions`): thin over the auth modules. Server-only. No answer ever
 * carries a token: sessions are shown as {@link sessionView}s.
 */
import { z } from 'zod';
import { AgentUnavailableError } from '../dashboard-error.ts';
import { publicUrlFromEnv } from '../public-url.ts';
import { localSessionAllowed } from './auth-settings.ts';
import { isKubeUserError, nodePermissions, processKubeConfig, reviewOwnToken } from './kube-user.ts';
import { OIDC_CALLBACK_PATH, OIDC_FLOW_COOKIE, OIDC_FLOW_TTL_SECONDS, finishOidcLogin, isOidcLoginError, startOidcLogin } from './oidc-login.ts';
import { processSessionKey } from './auth-settings.ts';
import { isSecureRequest } from './session-cookie.ts';
import { clearSessionCookie, currentSession, nowSeconds, serverAuthSettings, writeSessionCookie } from './server-session.ts';
import { sessionView, type Session } from './session.ts';

const JSON_HEADERS = { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' };

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { ...JSON_HEADERS, ...headers } });
}

function loginError(status: number, message: string): Response {
  return json(status, { error: { code: status === 401 ? 'unauthorized' : status === 400 ? 'bad-request' : 'unavailable', message } });
}

/** A path on this dashboard to go to after login: `/…` but not `//…` (another host); else `/`. */
export function safeNextPath(raw: string | null | undefined): string {
  if (raw === null || raw === undefined || !raw.startsWith('/') || raw.startsWith('//') || raw.startsWith('/\\')) return '/';
  return raw;
}

/** The dashboard's base URL for links the provider sends the browser back to. */
function baseUrl(req: Request): string {
  const setting = publicUrlFromEnv();
  if (setting.ok && setting.base !== null) return setting.base;
  const host = req.headers.get('host');
  const proto = isSecureRequest(req.url, req.headers.get('x-forwarded-proto')) ? 'https' : 'http';
  return host === null ? new URL(req.url).origin : `${proto}://${host}`;
}

/** `GET /api/auth/session`: the session (without token) and the ways to log in. */
export async function getSessionInfo(req: Request): Promise<Response> {
  const settings = serverAuthSettings();
  const session = await currentSession(req);
  return json(200, {
    session: session === null ? null : sessionView(session),
    login: { token: true, oidc: settings.oidc !== null, local: localSessionAllowed(settings, req.headers.get('host')) },
  });
}

const TokenLoginSchema = z.strictObject({ token: z.string().min(1).max(16_384) });

/** `POST /api/auth/login` `{"token": "…"}`: reviews the token with the API server, sets the session. */
export async function tokenLogin(req: Request): Promise<Response> {
  let body: unknown;
  try {
    body = JSON.parse(await req.text());
  } catch {
    return loginError(400, 'the body must be JSON: {"token": "…"}');
  }
  const parsed = TokenLoginSchema.safeParse(body);
  if (!parsed.success) return loginError(400, 'the body must be JSON: {"token": "…"}');
  const token = parsed.data.token.trim();
  const settings = serverAuthSettings();
  try {
    const { k8s, kubeConfig } = await processKubeConfig();
    const user = await reviewOwnToken(k8s, kubeConfig, token);
    const session: Session = { kind: 'token', username: user.username, groups: user.groups, token, expiresAt: nowSeconds() + settings.sessionTtlSeconds };
    await writeSessionCookie(session, isSecureRequest(req.url, req.headers.get('x-forwarded-proto')));
    return json(200, { session: sessionView(session) });
  } catch (err) {
    if (isKubeUserError(err)) return loginError(err.reason === 'invalid' ? 401 : 503, err.message);
    throw err;
  }
}

/** `POST /api/auth/logout`: removes the session cookie. */
export async function logout(): Promise<Response> {
  await clearSessionCookie();
  return json(200, { session: null });
}

/** `GET /api/auth/oidc/start?next=/…`: redirects to the provider. */
export async function oidcStart(req: Request): Promise<Response> {
  const settings = serverAuthSettings();
  if (settings.oidc === null) return loginError(404, 'OIDC login is not configured (VOLUMESCOPE_OIDC_ISSUER_URL, VOLUMESCOPE_OIDC_CLIENT_ID)');
  const next = safeNextPath(new URL(req.url).searchParams.get('next'));
  try {
    const { location, flowCookie } = await startOidcLogin(settings.oidc, `${baseUrl(req)}${OIDC_CALLBACK_PATH}`, next, processSessionKey(), nowSeconds());
    const secure = isSecureRequest(req.url, req.headers.get('x-forwarded-proto')) ? '; Secure' : '';
    return new Response(null, {
      status: 303,
      headers: {
        Location: location,
        'Cache-Control': 'no-store',
        'Set-Cookie': `${OIDC_FLOW_COOKIE}=${flowCookie}; Path=${OIDC_CALLBACK_PATH}; Max-Age=${OIDC_FLOW_TTL_SECONDS}; HttpOnly; SameSite=Lax${secure}`,
      },
    });
  } catch (err) {
    if (isOidcLoginError(err)) return loginError(503, err.message);
    throw err;
  }
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A small page (the callback's answer); `refreshTo` sends the browser on. */
function htmlPage(status: number, title: string, text: string, refreshTo: string | null, setCookies: string[]): Response {
  const refresh = refreshTo === null ? '' : `<meta http-equiv="refresh" content="0;url=${escapeHtml(refreshTo)}">`;
  const link = refreshTo === null ? '<a href="/login">Log in again</a>' : `<a href="${escapeHtml(refreshTo)}">Continue</a>`;
  const headers = new Headers({ 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
  for (const c of setCookies) headers.append('Set-Cookie', c);
  return new Response(`<!doctype html><html lang="en"><head><meta charset="utf-8">${refresh}<title>${escapeHtml(title)}</title></head><body><p>${escapeHtml(text)}</p><p>${link}</p></body></html>`, { status, headers });
}

/**
 * `GET /api/auth/oidc/callback`: completes the login and answers a page that moves on to the
 * dashboard. Not a redirect: the navigation here came from the provider's site, so a redirect
 * would still be cross-site and the new `SameSite=Strict` cookie would not be sent with it; the
 * page's own refresh is a same-site navigation.
 */
export async function oidcCallback(req: Request): Promise<Response> {
  const settings = serverAuthSettings();
  const clearFlow = `${OIDC_FLOW_COOKIE}=; Path=${OIDC_CALLBACK_PATH}; Max-Age=0; HttpOnly; SameSite=Lax`;
  if (settings.oidc === null) return htmlPage(404, 'Login', 'OIDC login is not configured.', null, [clearFlow]);
  const incoming = new URL(req.url);
  const callbackUrl = new URL(`${baseUrl(req)}${OIDC_CALLBACK_PATH}${incoming.search}`);
  const flow = /(?:^|;\s*)volumescope-oidc=([^;]+)/.exec(req.headers.get('cookie') ?? '')?.[1];
  try {
    const { session, next } = await finishOidcLogin(settings.oidc, callbackUrl, flow, processSessionKey(), nowSeconds(), settings.sessionTtlSeconds);
    await writeSessionCookie(session, isSecureRequest(req.url, req.headers.get('x-forwarded-proto')));
    return htmlPage(200, 'Logged in', `Logged in as ${session.username}.`, safeNextPath(next), [clearFlow]);
  } catch (err) {
    if (isOidcLoginError(err)) return htmlPage(401, 'Login failed', err.message, null, [clearFlow]);
    throw err;
  }
}

/**
 * `GET /api/agents/<name>/permissions`: `{get, update, reason}` of the session's user on that
 * node's agent, so pages can disable what the agent would refuse. Local session: both (the
 * demo's token is the agent's own). Token and OIDC sessions: SelfSubjectAccessReviews with the
 * user's token (the agent names are node names under discovery).
 */
export async function agentPermissions(name: string, req: Request): Promise<Response> {
  const session = await currentSession(req);
  if (session === null) return json(401, new AgentUnavailableError('not-logged-in', name, 'log in first').toBody());
  if (session.kind === 'local' || session.token === undefined) return json(200, { user: session.username, get: true, update: true, reason: null });
  try {
    const { k8s, kubeConfig } = await processKubeConfig();
    const p = await nodePermissions(k8s, kubeConfig, session.token, name);
    const reason = p.update ? null : `${session.username} may not update nodes/volumemanager of ${name} (Kubernetes RBAC); ask for the volumescope-operator role`;
    return json(200, { user: session.username, get: p.get, update: p.update, reason });
  } catch (err) {
    if (isKubeUserError(err)) return json(200, { user: session.username, get: false, update: false, reason: err.message });
    throw err;
  }
}
