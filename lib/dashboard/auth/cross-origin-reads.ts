/**
 * Cross-origin reads for tools embedded in another web UI of the same site (the Headlamp plugin,
 * components/headlamp/plugin): the origins in `VOLUMESCOPE_CORS_ORIGINS` may read the read-only
 * agent routes with the user's VolumeScope session cookie (`fetch(url, { credentials: 'include' })`).
 * Pure; the request gate (request-gate.ts) applies it before the session check, because a CORS
 * preflight never carries cookies.
 *
 * Contract:
 * - Only `GET`/`HEAD` of `/api/agents/<node>/snapshot` and `/api/agents/summary` (what the agent's
 *   read API already shows every logged-in user). Actions (`POST …`) never get CORS headers, and a
 *   preflight asking for any other method is not granted, so the browser refuses to send it; the
 *   CSRF check (request-guard.ts) refuses them independently.
 * - Only exact origins (`https://headlamp.example.com[:port]`): no wildcards, no `null`, no paths.
 *   `Access-Control-Allow-Origin` echoes the request's `Origin` (credentials forbid `*`), with
 *   `Access-Control-Allow-Credentials: true` and `Vary: Origin` so a shared cache never hands one
 *   origin's answer to another.
 * - An unlisted origin gets no CORS header at all: the browser keeps the answer from its page.
 *
 * The session cookie is `SameSite=Strict` (session-cookie.ts): the browser sends it only when the
 * page making the request is on the same *site* (scheme + registrable domain) as the dashboard,
 * e.g. `https://headlamp.example.com` reading `https://volumescope.example.com`. CORS lets that
 * page read the answer; it does not make the cookie cross-site.
 */

/** The environment variable with the allowed origins (comma-separated). */
export const CORS_ORIGINS_ENV = 'VOLUMESCOPE_CORS_ORIGINS';

/** How long a browser may cache a granted preflight (seconds). */
export const CORS_PREFLIGHT_MAX_AGE_S = 600;

/** A malformed `VOLUMESCOPE_CORS_ORIGINS`; the message names the bad entry. */
export class CorsOriginsConfigError extends Error {
  override readonly name = 'CorsOriginsConfigError';
}

/** True for a {@link CorsOriginsConfigError}. */
export function isCorsOriginsConfigError(err: unknown): err is CorsOriginsConfigError {
  return err instanceof CorsOriginsConfigError;
}

/**
 * The allowed origins from the variable's value (unset or empty: none). Each entry must be an
 * exact `http(s)://host[:port]` origin, as browsers send it in `Origin` (lowercase, no default
 * port, no path or trailing slash); anything else throws {@link CorsOriginsConfigError}.
 */
export function parseCorsOrigins(value: string | undefined): readonly string[] {
  const entries = (value ?? '').split(',').map((e) => e.trim()).filter((e) => e !== '');
  const origins: string[] = [];
  for (const entry of entries) {
    if (entry.includes('*')) throw new CorsOriginsConfigError(`${CORS_ORIGINS_ENV}: ${JSON.stringify(entry)} has a wildcard; list each origin exactly (https://host[:port])`);
    const url = URL.canParse(entry) ? new URL(entry) : null;
    if (url === null || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.origin !== entry) {
      throw new CorsOriginsConfigError(`${CORS_ORIGINS_ENV}: ${JSON.stringify(entry)} is not an origin as browsers send it (https://host[:port], lowercase, no path or trailing slash)`);
    }
    if (!origins.includes(entry)) origins.push(entry);
  }
  return origins;
}

/** Whether `path` is one of the read-only routes open to cross-origin reads. */
export function isCrossOriginReadPath(path: string): boolean {
  return path === '/api/agents/summary' || /^\/api\/agents\/[^/]+\/snapshot$/.test(path);
}

const READ_METHODS = new Set(['GET', 'HEAD']);
/** Request headers a granted preflight allows: only what a plain read sends. */
const ALLOWED_REQUEST_HEADERS = new Set(['accept', 'accept-language', 'content-language', 'cache-control']);

/** What the gate does about CORS for one request. */
export type CrossOriginDecision =
  /** Nothing: no CORS headers (same-origin, unlisted origin, other path or method). */
  | { readonly kind: 'none' }
  /** Answer the preflight itself (204) with these headers; it carries no cookie, so no session check. */
  | { readonly kind: 'preflight'; readonly headers: Readonly<Record<string, string>> }
  /** Go on as usual and add these headers to whatever the answer is (including a 401). */
  | { readonly kind: 'read'; readonly headers: Readonly<Record<string, string>> };

const NONE: CrossOriginDecision = { kind: 'none' };

/** The CORS decision for a request (`headers` only needs `get`). */
export function crossOriginDecision(method: string, path: string, headers: { get(name: string): string | null }, allowed: readonly string[]): CrossOriginDecision {
  const origin = headers.get('origin');
  if (origin === null || !allowed.includes(origin) || !isCrossOriginReadPath(path)) return NONE;
  const m = method.toUpperCase();
  const credentialed = { 'Access-Control-Allow-Origin': origin, 'Access-Control-Allow-Credentials': 'true' };
  if (m === 'OPTIONS') {
    const wanted = headers.get('access-control-request-method');
    if (wanted === null || !READ_METHODS.has(wanted.toUpperCase())) return NONE;
    const requested = (headers.get('access-control-request-headers') ?? '').split(',').map((h) => h.trim().toLowerCase()).filter((h) => h !== '');
    if (requested.some((h) => !ALLOWED_REQUEST_HEADERS.has(h))) return NONE;
    return {
      kind: 'preflight',
      headers: {
        ...credentialed,
        'Access-Control-Allow-Methods': 'GET, HEAD',
        ...(requested.length > 0 ? { 'Access-Control-Allow-Headers': requested.join(', ') } : {}),
        'Access-Control-Max-Age': String(CORS_PREFLIGHT_MAX_AGE_S),
        Vary: 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers',
      },
    };
  }
  if (!READ_METHODS.has(m)) return NONE;
  return { kind: 'read', headers: { ...credentialed, Vary: 'Origin' } };
}

/** Adds a decision's headers to `response` (a `Vary` already there is kept and extended). */
export function applyCrossOriginHeaders<R extends { headers: Headers }>(response: R, decision: CrossOriginDecision): R {
  if (decision.kind === 'none') return response;
  for (const [name, value] of Object.entries(decision.headers)) {
    if (name === 'Vary') {
      const prior = response.headers.get('vary');
      response.headers.set('Vary', prior === null || prior === '' ? value : `${prior}, ${value}`);
    } else {
      response.headers.set(name, value);
    }
  }
  return response;
}
