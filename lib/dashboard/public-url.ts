/**
 * The dashboard's public base URL: what every link in a copied Markdown summary is built on, so
 * a summary pasted into a ticket links to the address people reach the dashboard at (behind an
 * ingress, a proxy or a path prefix), not to whatever host the copying browser used.
 *
 * `VOLUMESCOPE_PUBLIC_URL` (server-side, read per request): an absolute `http(s)://` URL,
 * optionally with a path prefix (`https://ops.example.com/volumescope`); no credentials, query or
 * fragment. Unset or empty: the origin of the page itself (the request's own origin).
 *
 * Pure apart from {@link publicUrlFromEnv}'s default argument; importable by the browser.
 */

/** The environment variable this module reads. */
export const PUBLIC_URL_ENV = 'VOLUMESCOPE_PUBLIC_URL';

/** A malformed `VOLUMESCOPE_PUBLIC_URL`; the message names the variable and the value. */
export class PublicUrlConfigError extends Error {
  override readonly name = 'PublicUrlConfigError';

  constructor(
    /** The value as set (credentials left out). */
    readonly value: string,
    reason: string,
  ) {
    super(`${PUBLIC_URL_ENV}=${JSON.stringify(value)} ${reason}`);
  }
}

/** True for a {@link PublicUrlConfigError}. */
export function isPublicUrlConfigError(err: unknown): err is PublicUrlConfigError {
  return err instanceof PublicUrlConfigError;
}

/**
 * The base URL from the variable's value, normalised to `scheme://host[:port][/prefix]` without
 * a trailing slash; `null` when unset or empty (links then use the page's origin). Throws a
 * {@link PublicUrlConfigError} for anything but an absolute http(s) URL without credentials,
 * query or fragment.
 */
export function parsePublicUrl(value: string | undefined): string | null {
  const raw = (value ?? '').trim();
  if (raw === '') return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new PublicUrlConfigError(raw, 'is not an absolute URL (expected http(s)://host[:port][/path])');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new PublicUrlConfigError(raw, `has the scheme ${url.protocol} (expected http: or https:)`);
  // The message is shown on the pages: the credentials are left out of it.
  if (url.username !== '' || url.password !== '') throw new PublicUrlConfigError(`${url.protocol}//…@${url.host}${url.pathname}`, 'must not carry credentials');
  if (url.search !== '' || url.hash !== '' || raw.includes('?') || raw.includes('#')) throw new PublicUrlConfigError(raw, 'must not have a query or fragment');
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

/** The page's view of the setting: the base (null: the page's origin), or the error to show. */
export type PublicUrlSetting = { readonly ok: true; readonly base: string | null } | { readonly ok: false; readonly error: string };

/**
 * The process environment where there is one. Read through `globalThis`, not the free `process`
 * identifier, so that bundlers of other hosts (the Headlamp plugin's Vite build) do not inject a
 * `process` polyfill into every module that imports this one.
 */
function processEnv(): Readonly<Record<string, string | undefined>> {
  return (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env ?? {};
}

/** {@link parsePublicUrl} of the environment, with a malformed value returned as its message. */
export function publicUrlFromEnv(env: Readonly<Record<string, string | undefined>> = processEnv()): PublicUrlSetting {
  try {
    return { ok: true, base: parsePublicUrl(env[PUBLIC_URL_ENV]) };
  } catch (err) {
    if (isPublicUrlConfigError(err)) return { ok: false, error: err.message };
    throw err;
  }
}

/** `base` + an app path (`/nodes/…`, from routes.ts): an absolute link. */
export function publicLink(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}${path.startsWith('/') ? path : `/${path}`}`;
}
