/**
 * The checks every request to the dashboard passes before any handler runs (proxy.ts applies
 * them); pure, so they are unit-tested without a server.
 *
 * - **Host allow-list** (DNS rebinding): a page on `evil.example` that rebinds its name to the
 *   dashboard's address sends `Host: evil.example` (and a matching `Origin`), so a same-origin
 *   check alone passes it. Only the names in `VOLUMESCOPE_ALLOWED_HOSTS` are served; default the
 *   loopback names and the host of `VOLUMESCOPE_PUBLIC_URL`. An entry without a port allows every
 *   port of that name; with one (`ops.example.com:8443`), only that port.
 * - **CSRF**, for every state-changing request (anything but GET, HEAD, OPTIONS): an `Origin`
 *   header whose host is the request's `Host` (a request without one is refused: browsers send
 *   it on every cross-origin and every same-origin POST), `Sec-Fetch-Site`, when sent, must be
 *   `same-origin`, and the custom header `X-VolumeScope-Request: 1`, which a cross-site form or
 *   a "simple" fetch cannot set without a CORS preflight the dashboard never grants. The
 *   session cookie is checked by the caller (it needs the key).
 */

/** The custom request header every state-changing request from the dashboard's pages carries. */
export const REQUEST_HEADER = 'x-volumescope-request';
/** Its value. */
export const REQUEST_HEADER_VALUE = '1';

/** The environment variable of the host allow-list. */
export const ALLOWED_HOSTS_ENV = 'VOLUMESCOPE_ALLOWED_HOSTS';

/** The names loopback clients reach a local dashboard by. */
export const LOOPBACK_HOSTS: readonly string[] = ['localhost', '127.0.0.1', '[::1]'];

/** One allowed host: a lowercase name (IPv6 in brackets) and, optionally, a port. */
export interface AllowedHost {
  readonly name: string;
  readonly port: string | null;
}

/** A malformed `VOLUMESCOPE_ALLOWED_HOSTS` entry. */
export class AllowedHostsConfigError extends Error {
  override readonly name = 'AllowedHostsConfigError';
}

/** True for an {@link AllowedHostsConfigError}. */
export function isAllowedHostsConfigError(err: unknown): err is AllowedHostsConfigError {
  return err instanceof AllowedHostsConfigError;
}

/** `name[:port]` of a Host header or list entry, lowercased; `null` when it is not one. */
export function splitHost(raw: string): AllowedHost | null {
  const text = raw.trim().toLowerCase();
  const m = /^(\[[0-9a-f:.]+\]|[a-z0-9]([a-z0-9.-]*[a-z0-9])?)(?::([0-9]{1,5}))?$/.exec(text);
  if (m?.[1] === undefined) return null;
  return { name: m[1].replace(/\.$/, ''), port: m[3] ?? null };
}

/**
 * The allow-list: the entries of `VOLUMESCOPE_ALLOWED_HOSTS` (comma-separated) when set, else the
 * loopback names plus the public URL's host. Throws {@link AllowedHostsConfigError} for an entry
 * that is not `name[:port]`.
 */
export function allowedHosts(listText: string | undefined, publicUrl: string | null): AllowedHost[] {
  const entries = (listText ?? '').split(',').map((e) => e.trim()).filter((e) => e !== '');
  if (entries.length > 0) {
    return entries.map((entry) => {
      const host = splitHost(entry);
      if (host === null) throw new AllowedHostsConfigError(`${ALLOWED_HOSTS_ENV}: ${JSON.stringify(entry)} is not a host name or host:port`);
      return host;
    });
  }
  const hosts: AllowedHost[] = LOOPBACK_HOSTS.map((name) => ({ name, port: null }));
  if (publicUrl !== null) {
    const url = new URL(publicUrl);
    hosts.push({ name: url.hostname.toLowerCase(), port: url.port === '' ? null : url.port });
  }
  return hosts;
}

/** Whether a `Host` header value is on the list (a missing or malformed one never is). */
export function isAllowedHost(hostHeader: string | null, allowed: readonly AllowedHost[]): boolean {
  if (hostHeader === null) return false;
  const host = splitHost(hostHeader);
  if (host === null) return false;
  return allowed.some((a) => a.name === host.name && (a.port === null || a.port === host.port));
}

/** Whether `host` (a Host header) is a loopback name. */
export function isLoopbackHost(hostHeader: string | null): boolean {
  return isAllowedHost(hostHeader, LOOPBACK_HOSTS.map((name) => ({ name, port: null })));
}

/** Methods that change nothing. */
export function isSafeMethod(method: string): boolean {
  const m = method.toUpperCase();
  return m === 'GET' || m === 'HEAD' || m === 'OPTIONS';
}

/** The headers the CSRF check reads. */
export interface CsrfHeaders {
  get(name: string): string | null;
}

/**
 * Why a state-changing request is refused as possibly cross-site; `null` when it passes. The
 * reason is safe to show (it names a header, never a value).
 */
export function csrfRefusal(headers: CsrfHeaders): string | null {
  const origin = headers.get('origin');
  const host = headers.get('host');
  if (origin === null || origin === 'null') return 'the request has no Origin header';
  let originHost: string;
  try {
    originHost = new URL(origin).host.toLowerCase();
  } catch {
    return 'the Origin header is not a URL';
  }
  if (host === null || originHost !== host.toLowerCase()) return 'the Origin is not this dashboard';
  const site = headers.get('sec-fetch-site');
  if (site !== null && site !== 'same-origin') return `Sec-Fetch-Site is ${site === 'same-site' || site === 'cross-site' || site === 'none' ? site : 'not same-origin'}`;
  if (headers.get(REQUEST_HEADER) !== REQUEST_HEADER_VALUE) return `the ${REQUEST_HEADER} header is missing`;
  return null;
}
