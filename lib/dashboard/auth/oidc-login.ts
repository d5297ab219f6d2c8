/**
 * OpenID Connect login: authorization code flow with PKCE (S256), state and nonce, through
 * `openid-client` (v6). Server-only.
 *
 * The flow's secrets (PKCE verifier, state, nonce, where to go after) travel in a short-lived
 * sealed cookie (`volumescope-oidc`, 10 min, httpOnly, `SameSite=Lax`: the callback is a
 * top-level navigation from the provider, on which a Strict cookie would not be sent), scoped
 * to the callback path. The session keeps the ID token, which is the token the agents receive:
 * the API server must accept that issuer (`--oidc-issuer-url`, `--oidc-client-id`, or a
 * structured AuthenticationConfiguration), and the session ends when the ID token expires.
 *
 * An `http://` issuer is accepted only on a loopback address (a provider on the same machine,
 * as in tests); anything else must be `https://`.
 */
import * as oidc from 'openid-client';
import type { OidcSettings } from './auth-settings.ts';
import { sealClaims, unsealClaims, type Session } from './session.ts';
import { isLoopbackAddress } from './auth-settings.ts';

/** The flow cookie's name and lifetime. */
export const OIDC_FLOW_COOKIE = 'volumescope-oidc';
export const OIDC_FLOW_TTL_SECONDS = 600;
/** The callback route (also the flow cookie's path). */
export const OIDC_CALLBACK_PATH = '/api/auth/oidc/callback';

/** A login that did not complete; the message is safe to show (no token, no code). */
export class OidcLoginError extends Error {
  override readonly name = 'OidcLoginError';
}

/** True for an {@link OidcLoginError}. */
export function isOidcLoginError(err: unknown): err is OidcLoginError {
  return err instanceof OidcLoginError;
}

interface OidcGlobals {
  __volumescopeOidc?: Map<string, Promise<oidc.Configuration>>;
}

/** The provider's configuration (discovered once per process and settings). */
export function oidcConfiguration(settings: OidcSettings): Promise<oidc.Configuration> {
  const g = globalThis as OidcGlobals;
  g.__volumescopeOidc ??= new Map();
  const key = JSON.stringify([settings.issuerUrl, settings.clientId, settings.clientSecret]);
  let config = g.__volumescopeOidc.get(key);
  if (config === undefined) {
    const issuer = new URL(settings.issuerUrl);
    const insecure = issuer.protocol === 'http:';
    if (insecure && !isLoopbackAddress(issuer.hostname)) return Promise.reject(new OidcLoginError(`the OIDC issuer ${issuer.origin} must be https:// (http:// only on a loopback address)`));
    const auth = settings.clientSecret === null ? oidc.None() : oidc.ClientSecretPost(settings.clientSecret);
    // Plain HTTP only for a provider on this machine (checked above), as openid-client intends it.
    // eslint-disable-next-line @typescript-eslint/no-deprecated
    const execute = insecure ? { execute: [oidc.allowInsecureRequests] } : undefined;
    config = oidc.discovery(issuer, settings.clientId, undefined, auth, execute);
    const cache = g.__volumescopeOidc;
    config.catch(() => cache.delete(key)); // a provider that was down is asked again next time
    cache.set(key, config);
  }
  return config;
}

/** The start of a login: where to send the browser and the sealed flow cookie. */
export async function startOidcLogin(
  settings: OidcSettings,
  redirectUri: string,
  next: string,
  key: Uint8Array,
  nowSeconds: number,
): Promise<{ location: string; flowCookie: string }> {
  const config = await oidcConfiguration(settings).catch((err: unknown) => {
    throw isOidcLoginError(err) ? err : new OidcLoginError(`the OIDC provider ${settings.issuerUrl} cannot be reached: ${err instanceof Error ? err.message : String(err)}`);
  });
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const location = oidc.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: settings.scopes,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
  });
  const flowCookie = await sealClaims({ v: verifier, s: state, n: nonce, r: redirectUri, next }, nowSeconds + OIDC_FLOW_TTL_SECONDS, key);
  return { location: location.href, flowCookie };
}

function claimText(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

/**
 * Completes a login at the callback: checks state, PKCE and nonce, exchanges the code and
 * returns the session (and where to go). `callbackUrl` is the callback as the browser reached
 * it. Throws {@link OidcLoginError}.
 */
export async function finishOidcLogin(
  settings: OidcSettings,
  callbackUrl: URL,
  flowCookie: string | undefined,
  key: Uint8Array,
  nowSeconds: number,
  sessionTtlSeconds: number,
): Promise<{ session: Session; next: string }> {
  const flow = await unsealClaims(flowCookie, key, nowSeconds);
  const verifier = claimText(flow?.['v']);
  const state = claimText(flow?.['s']);
  const nonce = claimText(flow?.['n']);
  if (flow === null || verifier === null || state === null || nonce === null) throw new OidcLoginError('the login took too long or was started in another browser; log in again');
  const config = await oidcConfiguration(settings);
  let tokens;
  try {
    tokens = await oidc.authorizationCodeGrant(config, callbackUrl, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true });
  } catch (err) {
    throw new OidcLoginError(`the OIDC provider did not complete the login: ${err instanceof Error ? err.message : String(err)}`);
  }
  const idToken = tokens.id_token;
  const claims = tokens.claims();
  if (idToken === undefined || claims === undefined) throw new OidcLoginError('the OIDC provider answered without an ID token');
  const username = claimText(claims[settings.usernameClaim]) ?? claims.sub;
  const rawGroups = claims[settings.groupsClaim];
  const groups = Array.isArray(rawGroups) ? rawGroups.filter((g): g is string => typeof g === 'string') : [];
  const next = claimText(flow['next']) ?? '/';
  return { session: { kind: 'oidc', username, groups, token: idToken, expiresAt: Math.min(claims.exp, nowSeconds + sessionTtlSeconds) }, next };
}
