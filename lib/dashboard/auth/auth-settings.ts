/**
 * How operators log in, from the environment. Server-only.
 *
 * - `VOLUMESCOPE_SESSION_SECRET`: at least 32 characters; the sessions' sealing key is derived
 *   from it (session.ts). Unset: a random key per process, so sessions end when the dashboard
 *   restarts (enough for one replica; set it for several, or to survive restarts).
 * - `VOLUMESCOPE_SESSION_TTL`: how long a session lasts, in seconds (default 28800, 8 h).
 * - `VOLUMESCOPE_LOCAL_SESSION`: the standalone demo's login-free session: `auto` (default: only
 *   when the dashboard listens on a loopback address, `VOLUMESCOPE_LISTEN_HOST`, which the demo's
 *   launcher sets; unset counts as not loopback, as `next start` listens on every address by
 *   default), `on` (always, also on other addresses: whoever reaches the dashboard acts with the
 *   agents' configured tokens), `off` (never). A local session is handed out only to requests
 *   whose `Host` is a loopback name, in every mode but `on`.
 * - OIDC (all of issuer and client ID, or none): `VOLUMESCOPE_OIDC_ISSUER_URL`,
 *   `VOLUMESCOPE_OIDC_CLIENT_ID`, optional `VOLUMESCOPE_OIDC_CLIENT_SECRET` (absent: a public
 *   client, PKCE only), `VOLUMESCOPE_OIDC_SCOPES` (default `openid email profile`),
 *   `VOLUMESCOPE_OIDC_USERNAME_CLAIM` (default `email`) and `VOLUMESCOPE_OIDC_GROUPS_CLAIM`
 *   (default `groups`), the names shown and recorded; the agents see the API server's own
 *   mapping of the ID token.
 * - Token login needs the Kubernetes API (the pod's service account or `KUBECONFIG`), where the
 *   token is reviewed.
 */
import { randomBytes } from 'node:crypto';
import { sessionKey } from './session.ts';
import { isLoopbackHost } from './request-guard.ts';

export const SESSION_SECRET_ENV = 'VOLUMESCOPE_SESSION_SECRET';
export const SESSION_TTL_ENV = 'VOLUMESCOPE_SESSION_TTL';
export const LOCAL_SESSION_ENV = 'VOLUMESCOPE_LOCAL_SESSION';
export const LISTEN_HOST_ENV = 'VOLUMESCOPE_LISTEN_HOST';
export const OIDC_ISSUER_ENV = 'VOLUMESCOPE_OIDC_ISSUER_URL';
export const OIDC_CLIENT_ID_ENV = 'VOLUMESCOPE_OIDC_CLIENT_ID';
export const OIDC_CLIENT_SECRET_ENV = 'VOLUMESCOPE_OIDC_CLIENT_SECRET';
export const OIDC_SCOPES_ENV = 'VOLUMESCOPE_OIDC_SCOPES';
export const OIDC_USERNAME_CLAIM_ENV = 'VOLUMESCOPE_OIDC_USERNAME_CLAIM';
export const OIDC_GROUPS_CLAIM_ENV = 'VOLUMESCOPE_OIDC_GROUPS_CLAIM';

/** The default session lifetime: 8 h, a working day. */
export const DEFAULT_SESSION_TTL_SECONDS = 8 * 3600;

/** The name the local session is recorded under. */
export const LOCAL_SESSION_USER = 'volumescope:local';

export type LocalSessionMode = 'auto' | 'on' | 'off';

/** An OpenID Connect client's settings. */
export interface OidcSettings {
  readonly issuerUrl: string;
  readonly clientId: string;
  readonly clientSecret: string | null;
  readonly scopes: string;
  readonly usernameClaim: string;
  readonly groupsClaim: string;
}

export interface AuthSettings {
  readonly localSession: LocalSessionMode;
  /** The address the dashboard listens on, when its launcher said. */
  readonly listenHost: string | null;
  readonly sessionTtlSeconds: number;
  readonly oidc: OidcSettings | null;
}

/** A malformed login setting; the message names the variable. */
export class AuthSettingsError extends Error {
  override readonly name = 'AuthSettingsError';
}

/** True for an {@link AuthSettingsError}. */
export function isAuthSettingsError(err: unknown): err is AuthSettingsError {
  return err instanceof AuthSettingsError;
}

type Env = Readonly<Record<string, string | undefined>>;

function value(env: Env, name: string): string {
  return env[name]?.trim() ?? '';
}

/** The settings of `env`; throws {@link AuthSettingsError} for a malformed value. */
export function parseAuthSettings(env: Env): AuthSettings {
  const mode = value(env, LOCAL_SESSION_ENV) || 'auto';
  if (mode !== 'auto' && mode !== 'on' && mode !== 'off') throw new AuthSettingsError(`${LOCAL_SESSION_ENV}=${JSON.stringify(mode)}: expected auto, on or off`);
  const ttlText = value(env, SESSION_TTL_ENV);
  const ttl = ttlText === '' ? DEFAULT_SESSION_TTL_SECONDS : Number(ttlText);
  if (!Number.isInteger(ttl) || ttl < 60 || ttl > 7 * 24 * 3600) throw new AuthSettingsError(`${SESSION_TTL_ENV}=${JSON.stringify(ttlText)}: expected whole seconds from 60 to 604800`);
  const secret = value(env, SESSION_SECRET_ENV);
  if (secret !== '' && secret.length < 32) throw new AuthSettingsError(`${SESSION_SECRET_ENV} must have at least 32 characters`);
  const issuer = value(env, OIDC_ISSUER_ENV);
  const clientId = value(env, OIDC_CLIENT_ID_ENV);
  let oidc: OidcSettings | null = null;
  if (issuer !== '' || clientId !== '') {
    if (issuer === '' || clientId === '') throw new AuthSettingsError(`set both ${OIDC_ISSUER_ENV} and ${OIDC_CLIENT_ID_ENV}, or neither`);
    try {
      const url = new URL(issuer);
      if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new TypeError('not http(s)');
    } catch {
      throw new AuthSettingsError(`${OIDC_ISSUER_ENV}=${JSON.stringify(issuer)} is not an http(s) URL`);
    }
    oidc = {
      issuerUrl: issuer,
      clientId,
      clientSecret: value(env, OIDC_CLIENT_SECRET_ENV) || null,
      scopes: value(env, OIDC_SCOPES_ENV) || 'openid email profile',
      usernameClaim: value(env, OIDC_USERNAME_CLAIM_ENV) || 'email',
      groupsClaim: value(env, OIDC_GROUPS_CLAIM_ENV) || 'groups',
    };
  }
  const listen = value(env, LISTEN_HOST_ENV);
  return { localSession: mode, listenHost: listen === '' ? null : listen, sessionTtlSeconds: ttl, oidc };
}

/** Whether an address the server listens on is loopback-only (`::` and `0.0.0.0` are every address). */
export function isLoopbackAddress(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127(\.[0-9]{1,3}){3}$/.test(h);
}

/** Whether a request with this `Host` header gets the login-free local session. */
export function localSessionAllowed(settings: AuthSettings, hostHeader: string | null): boolean {
  switch (settings.localSession) {
    case 'off':
      return false;
    case 'on':
      return true;
    case 'auto':
      return settings.listenHost !== null && isLoopbackAddress(settings.listenHost) && isLoopbackHost(hostHeader);
  }
}

interface AuthGlobals {
  __volumescopeSessionKey?: { secret: string; key: Uint8Array };
}

/**
 * The process's sealing key: from `VOLUMESCOPE_SESSION_SECRET`, else random once per process
 * (kept on `globalThis`: the proxy and the route handlers are separate bundles of one process).
 */
export function processSessionKey(env: Env = process.env): Uint8Array {
  const g = globalThis as AuthGlobals;
  const secret = value(env, SESSION_SECRET_ENV) || (g.__volumescopeSessionKey?.secret ?? randomBytes(32).toString('base64url'));
  if (g.__volumescopeSessionKey?.secret !== secret) g.__volumescopeSessionKey = { secret, key: sessionKey(secret) };
  return g.__volumescopeSessionKey.key;
}
