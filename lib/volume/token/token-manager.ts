/**
 * The kubelet's service account token manager (kubernetes/kubernetes
 * pkg/kubelet/token/token_manager.go@v1.34): bound tokens for the pods of this node, from the
 * TokenRequest API through a {@link ServiceAccountTokenSource}, cached by request and refreshed
 * before they expire. The projected volume plugin asks it on every SetUp (the periodic remount),
 * so a token is rewritten once it needs a refresh.
 *
 * - Cache key: service account, namespace, audiences, expirationSeconds, bound object and the
 *   request's UID (`keyFunc`; nonconfidential, safe to log).
 * - A cached token is returned until `requiresRefresh`: older than 24 h (`maxTTL`), or less than
 *   20 % of its TTL left; both thresholds minus a random jitter of up to 10 s (whole seconds).
 * - A failed request: without a cached token `failed to fetch token: <err>`; with an expired one
 *   `token <key> expired and refresh failed: <err>`; with one still valid that one is returned
 *   (the kubelet logs "Couldn't update token").
 * - Expired entries are dropped every minute (`gcPeriod`) and a pod's entries when its volume is
 *   torn down (`DeleteServiceAccountToken`). Instead of the kubelet's goroutine the sweep runs
 *   after a request once the period passed (so the manager arms no timers); as with the
 *   kubelet's, an expired token met before the sweep reports "expired and refresh failed".
 *
 * Not modelled: the discovery check that turns a 404 into "the API server does not have
 * TokenRequest endpoints enabled" (every supported API server serves the endpoint).
 */
import type { Clock, Millis } from '../../clock/clock.ts';
import { errorMessage } from '../errors.ts';

/** `maxTTL`: a token older than this is refreshed whatever its expiry. */
export const TOKEN_MAX_TTL_MS = 24 * 60 * 60 * 1000;
/** `gcPeriod` of the expired-entry sweep. */
export const TOKEN_GC_PERIOD_MS = 60 * 1000;
/** `maxJitter` subtracted from the refresh thresholds. */
export const TOKEN_MAX_JITTER_SECONDS = 10;

/** `authentication.k8s.io/v1` BoundObjectReference. */
export interface BoundObjectReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
}

/** `authentication.k8s.io/v1` TokenRequestSpec, as sent. */
export interface TokenRequestSpec {
  /** Empty: the API server's own audiences (the kubelet sends none). */
  audiences: string[];
  /** Unset: the API server's default (3600). */
  expirationSeconds?: number;
  boundObjectRef?: BoundObjectReference;
}

/** A TokenRequest as the API server answered it (its spec with defaults applied). */
export interface TokenRequestResult {
  spec: TokenRequestSpec;
  status: {
    token: string;
    /** RFC 3339. */
    expirationTimestamp: string;
  };
}

/**
 * Creates tokens (`POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token`). Implemented by
 * the agent with the API client; rejects with the API error (whose message the manager wraps).
 */
export interface ServiceAccountTokenSource {
  createServiceAccountToken(namespace: string, serviceAccountName: string, spec: TokenRequestSpec, uid?: string): Promise<TokenRequestResult>;
}

/** A token could not be obtained; the text is the kubelet's. */
export class ServiceAccountTokenError extends Error {
  override readonly name = 'ServiceAccountTokenError';
}

export function isServiceAccountTokenError(err: unknown): err is ServiceAccountTokenError {
  return err instanceof ServiceAccountTokenError;
}

export interface TokenManagerOptions {
  source: ServiceAccountTokenSource;
  clock: Clock;
  /** A number in [0, 1) for the jitter. Default: Math.random. */
  random?: () => number;
  /** Logs a refresh that failed while the cached token is still valid. */
  onRefreshError?: (cacheKey: string, err: unknown) => void;
}

/** The request's fields that identify a token, besides the service account and namespace. */
export interface TokenRequestKey {
  spec: TokenRequestSpec;
  /** The service account's UID precondition, when set. */
  uid?: string;
}

const goString = (s: string): string => JSON.stringify(s);

/** `keyFunc`: `"name"/"namespace"/audiences/expirationSeconds/boundObjectRef/"uid"` in Go's %#v forms. */
export function tokenCacheKey(name: string, namespace: string, request: TokenRequestKey): string {
  const { audiences, expirationSeconds, boundObjectRef: ref } = request.spec;
  const auds = audiences.length === 0 ? '[]string(nil)' : `[]string{${audiences.map(goString).join(', ')}}`;
  const refText = `v1.BoundObjectReference{Kind:${goString(ref?.kind ?? '')}, APIVersion:${goString(ref?.apiVersion ?? '')}, Name:${goString(ref?.name ?? '')}, UID:${goString(ref?.uid ?? '')}}`;
  return `${goString(name)}/${goString(namespace)}/${auds}/${String(expirationSeconds ?? 0)}/${refText}/${goString(request.uid ?? '')}`;
}

export class TokenManager {
  private readonly cache = new Map<string, TokenRequestResult>();
  private readonly random: () => number;
  private lastCleanup: Millis;

  constructor(private readonly options: TokenManagerOptions) {
    this.random = options.random ?? Math.random;
    this.lastCleanup = options.clock.now();
  }

  /** `GetServiceAccountToken`: the cached token unless it requires a refresh, else a new one. */
  async getServiceAccountToken(namespace: string, name: string, request: TokenRequestKey): Promise<TokenRequestResult> {
    try {
      return await this.getOrRefresh(namespace, name, request);
    } finally {
      this.maybeCleanup();
    }
  }

  private async getOrRefresh(namespace: string, name: string, request: TokenRequestKey): Promise<TokenRequestResult> {
    const key = tokenCacheKey(name, namespace, request);
    const cached = this.cache.get(key);
    if (cached !== undefined && !this.requiresRefresh(cached)) return cached;
    let fresh: TokenRequestResult;
    try {
      fresh = await this.options.source.createServiceAccountToken(namespace, name, request.spec, request.uid);
    } catch (err) {
      if (cached === undefined) throw new ServiceAccountTokenError(`failed to fetch token: ${errorMessage(err)}`, { cause: err });
      if (this.expired(cached)) throw new ServiceAccountTokenError(`token ${key} expired and refresh failed: ${errorMessage(err)}`, { cause: err });
      this.options.onRefreshError?.(key, err);
      return cached;
    }
    this.cache.set(key, fresh);
    return fresh;
  }

  /** `DeleteServiceAccountToken`: forgets every token bound to the pod (its volume was torn down). */
  deleteServiceAccountToken(podUID: string): void {
    for (const [key, tr] of this.cache) if (tr.spec.boundObjectRef?.uid === podUID) this.cache.delete(key);
  }

  /** Number of cached tokens (tests, diagnostics). */
  size(): number {
    return this.cache.size;
  }

  /** `cleanup`: drops expired tokens. */
  cleanup(): void {
    this.lastCleanup = this.options.clock.now();
    for (const [key, tr] of this.cache) if (this.expired(tr)) this.cache.delete(key);
  }

  private maybeCleanup(): void {
    if (this.options.clock.now() - this.lastCleanup >= TOKEN_GC_PERIOD_MS) this.cleanup();
  }

  private expired(tr: TokenRequestResult): boolean {
    return this.options.clock.now() > Date.parse(tr.status.expirationTimestamp);
  }

  /**
   * `requiresRefresh`: older than 24 h, or within 20 % of the TTL of the expiry (both earlier by
   * the jitter). A token without expirationSeconds is never refreshed (the kubelet logs it).
   */
  private requiresRefresh(tr: TokenRequestResult): boolean {
    const ttlSeconds = tr.spec.expirationSeconds;
    if (ttlSeconds === undefined) return false;
    const now = this.options.clock.now();
    const exp = Date.parse(tr.status.expirationTimestamp);
    const iat = exp - ttlSeconds * 1000;
    const jitterMs = Math.trunc(this.random() * TOKEN_MAX_JITTER_SECONDS) * 1000;
    if (now > iat + TOKEN_MAX_TTL_MS - jitterMs) return true;
    // Go's integer division: (expirationSeconds*20)/100 whole seconds.
    return now > exp - Math.trunc((ttlSeconds * 20) / 100) * 1000 - jitterMs;
  }
}
