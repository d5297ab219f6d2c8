/**
 * In-cluster authentication and authorization for the agent API, as the kubelet's webhook mode
 * does it (`--authentication-token-webhook`, `--authorization-mode=Webhook`):
 *
 * 1. The request's bearer token is sent to the API server in a TokenReview
 *    (authentication.k8s.io/v1). Not authenticated → 401.
 * 2. The reviewed user (name, uid, groups, extra) is checked with a SubjectAccessReview
 *    (authorization.k8s.io/v1) for group "", resource `nodes`, subresource `volumemanager`,
 *    name = this agent's node, verb `get` for reads (GET, HEAD) and `update` for everything else
 *    (the actions). Not allowed → 403 `Forbidden (user=…, verb=…, resource=nodes,
 *    subresource=volumemanager)`. With `authorizationMode: 'AlwaysAllow'` step 2 is skipped.
 *
 * Both reviews go through the real `@kubernetes/client-node` with the agent's own credentials
 * (its kubeconfig or service account), which need `create` on tokenreviews and
 * subjectaccessreviews (the `system:auth-delegator` ClusterRole grants both).
 *
 * Failures fail closed, as the kubelet's do: a TokenReview that cannot be made (API server down,
 * timeout, an error status) answers 401; a SubjectAccessReview that cannot be made answers 500
 * `Authorization error (…)`. The cause goes to the agent's log (`AuthFailure.logDetail`), not to
 * the client. There is deliberately no "webhook unavailable, let it through" mode, and failures
 * are never cached: the next request reviews again.
 *
 * Answers are cached on the injected clock, with the kubelet's defaults: TokenReview answers
 * (authenticated or not) for 2 min, allowed SARs for 5 min, denied SARs for 30 s; 0 disables a
 * cache. Cache keys are keyed hashes (a raw token is never kept), the caches are bounded, and
 * concurrent requests needing the same review share the one in flight.
 *
 * {@link createAgentAuthenticator} puts the static token (`--token-file`, for standalone use and
 * the local dashboard) in front: a request bearing exactly that token is accepted without any
 * review; every other token goes to the webhook when one is configured.
 */
import type { IncomingMessage } from 'node:http';
import {
  AuthenticationV1Api,
  AuthorizationV1Api,
  Observable,
  V1ResourceAttributes,
  V1SubjectAccessReview,
  V1SubjectAccessReviewSpec,
  V1TokenReview,
  V1TokenReviewSpec,
  type ConfigurationOptions,
  type KubeConfig,
} from '@kubernetes/client-node';
import type { Clock } from '../../lib/clock/clock.ts';
import { makeApiClient } from '../../lib/sources/kube/api-client.ts';
import { describeApiError } from '../../lib/kube-client/api-errors.ts';
import { RequestDeadlines } from '../../lib/kube-client/request-deadline.ts';
import { bearerToken, staticTokenAuthenticator, type AuthResult, type Authenticator } from './authenticator.ts';
import { createKeyHasher, ReviewCache } from './webhook-auth-cache.ts';
import { LRUCache } from 'lru-cache';
import { SlidingWindowRateLimiter } from './rate-limiter.ts';
import { errorMessage } from '../../lib/volume/errors.ts';
import { model } from '../../lib/kube-client/model.ts';

// DEFAULTS

/** `--authentication-token-webhook-cache-ttl` default (the kubelet's): 2 min. */
export const DEFAULT_AUTHENTICATION_CACHE_TTL_MS = 2 * 60_000;
/** `--authorization-webhook-cache-authorized-ttl` default (the kubelet's): 5 min. */
export const DEFAULT_AUTHORIZED_TTL_MS = 5 * 60_000;
/** `--authorization-webhook-cache-unauthorized-ttl` default (the kubelet's): 30 s. */
export const DEFAULT_UNAUTHORIZED_TTL_MS = 30_000;
/** How long one TokenReview or SubjectAccessReview call may take before it counts as failed. */
export const DEFAULT_REVIEW_TIMEOUT_MS = 10_000;
/**
 * How long a TokenReview that did not authenticate is kept: briefly, so a token created a moment
 * later (or a review that raced its creation) works soon, while a client repeating a wrong token
 * costs one review per 10 s.
 */
export const DEFAULT_UNAUTHENTICATED_CACHE_TTL_MS = 10_000;
/**
 * Reviews of tokens not in the cache, per client address: at most 20 per 10 s. A flood of
 * distinct made-up tokens would otherwise be a flood of TokenReviews at the API server.
 */
export const DEFAULT_UNKNOWN_TOKEN_REVIEW_LIMIT = { limit: 20, windowMs: 10_000 } as const;
/** Client addresses whose review budget is tracked (least recently seen dropped first). */
const MAX_TRACKED_CLIENTS = 4096;
/** Entries kept per cache (tokens; user × verb decisions). */
export const DEFAULT_WEBHOOK_CACHE_SIZE = 4096;

/** The resource the agent API is authorized as: `nodes/volumemanager` of this node. */
export const AGENT_API_RESOURCE = { group: '', resource: 'nodes', subresource: 'volumemanager' } as const;

// TYPES

/** `--authorization-mode`: `Webhook` asks a SubjectAccessReview; `AlwaysAllow` lets every authenticated user in. */
export type AuthorizationMode = 'AlwaysAllow' | 'Webhook';

/** The SubjectAccessReview verb of a request: `get` for reads, `update` for actions. */
export type AgentApiVerb = 'get' | 'update';

export interface WebhookAuthOptions {
  /** Where the reviews are sent, with the agent's own credentials. */
  kubeConfig: KubeConfig;
  /** This agent's node: the `name` of the reviewed `nodes/volumemanager` resource. */
  nodeName: string;
  /** Cache time source. */
  clock: Clock;
  /** Default `Webhook`. */
  authorizationMode?: AuthorizationMode;
  /** Authenticated TokenReview answers are kept this long; default {@link DEFAULT_AUTHENTICATION_CACHE_TTL_MS}. */
  authenticationCacheTtlMs?: number;
  /** TokenReview answers that did not authenticate are kept this long; default {@link DEFAULT_UNAUTHENTICATED_CACHE_TTL_MS} (at most the authenticated TTL). */
  unauthenticatedCacheTtlMs?: number;
  /** Reviews of uncached tokens per client address; default {@link DEFAULT_UNKNOWN_TOKEN_REVIEW_LIMIT}. */
  unknownTokenReviewLimit?: { limit: number; windowMs: number };
  /**
   * The audiences a token must be valid for (TokenReview `spec.audiences`, as the kubelet's
   * `--authentication-token-webhook` with API audiences): the API server checks the token against
   * them and the agent requires `status.audiences` to contain one. Empty or absent: the API
   * server's own audience (any token valid for the API server).
   */
  audiences?: readonly string[];
  /** Allowed SubjectAccessReviews are kept this long; default {@link DEFAULT_AUTHORIZED_TTL_MS}. */
  authorizedTtlMs?: number;
  /** Denied SubjectAccessReviews are kept this long; default {@link DEFAULT_UNAUTHORIZED_TTL_MS}. */
  unauthorizedTtlMs?: number;
  /** Per review call; default {@link DEFAULT_REVIEW_TIMEOUT_MS}. */
  reviewTimeoutMs?: number;
  /** Entries per cache; default {@link DEFAULT_WEBHOOK_CACHE_SIZE}. */
  maxCacheEntries?: number;
}

export interface AgentAuthenticatorOptions {
  /** The static token (`--token-file`); absent: only the webhook authenticates. */
  staticToken?: string;
  /** The audit caller of the static token; absent: `STATIC_TOKEN_CALLER` (see staticTokenAuthenticator). */
  staticTokenName?: string;
  /** TokenReview/SubjectAccessReview for every other token; absent: only the static token works. */
  webhook?: WebhookAuthOptions;
}

/** An authenticator that may hold network calls; {@link close} aborts them. */
export interface AgentAuthenticator extends Authenticator {
  /**
   * Aborts reviews in flight (their requests are answered 401/500, fail closed); for shutdown.
   * Later requests still work (a new review is started). Idempotent.
   */
  close(): void;
}

/** A user as a TokenReview reported it. */
export interface ReviewedUser {
  username: string;
  uid?: string;
  groups: string[];
  extra: Record<string, string[]>;
}

/** Options that cannot work: no way to authenticate, an empty node name, a bad TTL. */
export class AuthConfigError extends Error {
  override readonly name = 'AuthConfigError';
}

/** True for an {@link AuthConfigError}. */
export function isAuthConfigError(err: unknown): err is AuthConfigError {
  return err instanceof AuthConfigError;
}

/** A TokenReview or SubjectAccessReview call that gave no answer (transport error, error status, timeout, malformed answer). */
export class WebhookReviewError extends Error {
  override readonly name = 'WebhookReviewError';
}

/** True for a {@link WebhookReviewError}. */
export function isWebhookReviewError(err: unknown): err is WebhookReviewError {
  return err instanceof WebhookReviewError;
}

type TokenAnswer = { authenticated: true; user: ReviewedUser } | { authenticated: false };

// FACTORY

/**
 * The agent's authenticator: the static token first (accepted without a review, compared in
 * constant time), then the webhook for any other bearer token. Throws {@link AuthConfigError}
 * when neither is configured or the webhook options are invalid, and InvalidTokenError for an
 * unusable static token.
 */
export function createAgentAuthenticator(options: AgentAuthenticatorOptions): AgentAuthenticator {
  const { staticToken, webhook } = options;
  if (staticToken === undefined && webhook === undefined) throw new AuthConfigError('no way to authenticate: configure a static token, the webhook, or both');
  const fixed =
    staticToken === undefined
      ? null
      : staticTokenAuthenticator(staticToken, options.staticTokenName === undefined ? {} : { name: options.staticTokenName });
  const reviews = webhook === undefined ? null : new WebhookAuthenticator(webhook);
  return {
    async authenticate(req) {
      if (fixed !== null) {
        const result = await fixed.authenticate(req);
        if (result.ok) return result;
      }
      return reviews === null ? { ok: false, reason: 'unauthenticated' } : reviews.authenticate(req);
    },
    close() {
      reviews?.close();
    },
  };
}

/** The SubjectAccessReview verb for an HTTP method: reads are `get`, anything else (the actions) `update`. */
export function verbForMethod(method: string | undefined): AgentApiVerb {
  const m = (method ?? 'GET').toUpperCase();
  return m === 'GET' || m === 'HEAD' ? 'get' : 'update';
}

// WEBHOOK

/** TokenReview, then (in `Webhook` mode) SubjectAccessReview, both cached; see the file comment. */
export class WebhookAuthenticator implements AgentAuthenticator {
  private readonly authn: AuthenticationV1Api;
  private readonly authz: AuthorizationV1Api;
  private readonly nodeName: string;
  private readonly mode: AuthorizationMode;
  private readonly authenticationTtlMs: number;
  private readonly unauthenticatedTtlMs: number;
  private readonly reviewLimit: { limit: number; windowMs: number };
  private readonly clientBudgets = new LRUCache<string, SlidingWindowRateLimiter>({ max: MAX_TRACKED_CLIENTS });
  private readonly clock: Clock;
  private readonly audiences: readonly string[];
  private readonly authorizedTtlMs: number;
  private readonly unauthorizedTtlMs: number;
  private readonly deadlines: RequestDeadlines;
  private readonly tokens: ReviewCache<TokenAnswer>;
  private readonly decisions: ReviewCache<boolean>;
  private readonly hashKey = createKeyHasher();

  constructor(options: WebhookAuthOptions) {
    if (options.nodeName.trim() === '') throw new AuthConfigError('the webhook authorizer needs this agent\'s node name');
    const mode = options.authorizationMode ?? 'Webhook';
    if (mode !== 'Webhook' && mode !== 'AlwaysAllow') throw new AuthConfigError(`unknown authorization mode ${JSON.stringify(mode)} (AlwaysAllow or Webhook)`);
    this.nodeName = options.nodeName;
    this.mode = mode;
    this.authenticationTtlMs = durationOption('authenticationCacheTtlMs', options.authenticationCacheTtlMs, DEFAULT_AUTHENTICATION_CACHE_TTL_MS);
    this.unauthenticatedTtlMs = Math.min(this.authenticationTtlMs, durationOption('unauthenticatedCacheTtlMs', options.unauthenticatedCacheTtlMs, DEFAULT_UNAUTHENTICATED_CACHE_TTL_MS));
    this.reviewLimit = options.unknownTokenReviewLimit ?? DEFAULT_UNKNOWN_TOKEN_REVIEW_LIMIT;
    this.clock = options.clock;
    this.audiences = (options.audiences ?? []).filter((a) => a !== '');
    // Fails at construction, not on the first request.
    new SlidingWindowRateLimiter(options.clock, this.reviewLimit.limit, this.reviewLimit.windowMs);
    this.authorizedTtlMs = durationOption('authorizedTtlMs', options.authorizedTtlMs, DEFAULT_AUTHORIZED_TTL_MS);
    this.unauthorizedTtlMs = durationOption('unauthorizedTtlMs', options.unauthorizedTtlMs, DEFAULT_UNAUTHORIZED_TTL_MS);
    const timeoutMs = durationOption('reviewTimeoutMs', options.reviewTimeoutMs, DEFAULT_REVIEW_TIMEOUT_MS);
    if (timeoutMs === 0) throw new AuthConfigError('reviewTimeoutMs must be positive');
    const maxEntries = options.maxCacheEntries ?? DEFAULT_WEBHOOK_CACHE_SIZE;
    if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new AuthConfigError(`maxCacheEntries must be a positive integer, got ${maxEntries}`);
    this.authn = makeApiClient(options.kubeConfig, AuthenticationV1Api);
    this.authz = makeApiClient(options.kubeConfig, AuthorizationV1Api);
    this.deadlines = new RequestDeadlines({ clientNode: { Observable }, clock: options.clock, timeoutMs });
    this.tokens = new ReviewCache(options.clock, maxEntries);
    this.decisions = new ReviewCache(options.clock, maxEntries);
  }

  async authenticate(req: IncomingMessage): Promise<AuthResult> {
    const token = bearerToken(req);
    if (token === null) return { ok: false, reason: 'unauthenticated' };

    const tokenKey = this.hashKey(token);
    if (!this.tokens.covers(tokenKey)) {
      // A token the agent must review: charged to the client's budget (by address).
      const client = req.socket.remoteAddress ?? 'unknown';
      let budget = this.clientBudgets.get(client);
      if (budget === undefined) {
        budget = new SlidingWindowRateLimiter(this.clock, this.reviewLimit.limit, this.reviewLimit.windowMs);
        this.clientBudgets.set(client, budget);
      }
      const slot = budget.tryAcquire();
      if (!slot.ok) {
        return {
          ok: false,
          reason: 'rate-limited',
          message: `too many unknown bearer tokens from this client (at most ${this.reviewLimit.limit} reviews per ${this.reviewLimit.windowMs / 1000} s)`,
          retryAfterSeconds: Math.ceil(slot.retryAfterMs / 1000),
          logDetail: `client ${client}`,
        };
      }
    }
    let answer: TokenAnswer;
    try {
      answer = await this.tokens.load(
        tokenKey,
        () => this.reviewToken(token),
        (a) => (a.authenticated ? this.authenticationTtlMs : this.unauthenticatedTtlMs),
      );
    } catch (err) {
      return { ok: false, reason: 'unauthenticated', message: 'the bearer token could not be verified', logDetail: errorMessage(err) };
    }
    if (!answer.authenticated) return { ok: false, reason: 'unauthenticated' };
    const { user } = answer;
    if (this.mode === 'AlwaysAllow') return { ok: true, caller: user.username, groups: user.groups };

    const verb = verbForMethod(req.method);
    const attributes = `user=${user.username}, verb=${verb}, resource=${AGENT_API_RESOURCE.resource}, subresource=${AGENT_API_RESOURCE.subresource}`;
    let allowed: boolean;
    try {
      allowed = await this.decisions.load(
        this.hashKey(decisionKey(user, verb)),
        () => this.reviewAccess(user, verb),
        (yes) => (yes ? this.authorizedTtlMs : this.unauthorizedTtlMs),
      );
    } catch (err) {
      return { ok: false, reason: 'error', message: `Authorization error (${attributes})`, logDetail: errorMessage(err) };
    }
    return allowed ? { ok: true, caller: user.username, groups: user.groups } : { ok: false, reason: 'forbidden', message: `Forbidden (${attributes})` };
  }

  close(): void {
    this.deadlines.abortAll();
  }

  private async reviewToken(token: string): Promise<TokenAnswer> {
    // Without audiences the token must be valid for the API server's own audience, as for a
    // kubelet without --api-audiences. With them, the API server checks the token against them
    // and answers the ones it is valid for: at least one must be ours.
    const spec = model(V1TokenReviewSpec, { token });
    if (this.audiences.length > 0) spec.audiences = [...this.audiences];
    const body = model(V1TokenReview, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec });
    const review = await this.call('TokenReview', (options) => this.authn.createTokenReview({ body }, options));
    const status = review.status;
    if (status?.authenticated !== true) return { authenticated: false };
    if (this.audiences.length > 0 && !(status.audiences ?? []).some((a) => this.audiences.includes(a))) return { authenticated: false };
    const username = status.user?.username ?? '';
    if (username === '') throw new WebhookReviewError('TokenReview answered authenticated without a username');
    const uid = status.user?.uid;
    return {
      authenticated: true,
      user: {
        username,
        ...(uid === undefined || uid === '' ? {} : { uid }),
        groups: status.user?.groups ?? [],
        extra: status.user?.extra ?? {},
      },
    };
  }

  private async reviewAccess(user: ReviewedUser, verb: AgentApiVerb): Promise<boolean> {
    const spec = model(V1SubjectAccessReviewSpec, {
      user: user.username,
      groups: user.groups,
      extra: user.extra,
      resourceAttributes: model(V1ResourceAttributes, { ...AGENT_API_RESOURCE, name: this.nodeName, verb }),
    });
    if (user.uid !== undefined) spec.uid = user.uid;
    const body = model(V1SubjectAccessReview, { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec });
    const review = await this.call('SubjectAccessReview', (options) => this.authz.createSubjectAccessReview({ body }, options));
    // `denied` and "no opinion" (allowed false) both refuse: this is the only authorizer.
    return review.status?.allowed === true;
  }

  /** Runs one review call under the deadline; every failure becomes a {@link WebhookReviewError}. */
  private async call<T>(what: string, request: (options: ConfigurationOptions) => Promise<T>): Promise<T> {
    try {
      return await this.deadlines.run(what, request);
    } catch (err) {
      throw new WebhookReviewError(`${what}: ${describeApiError(err).message}`, { cause: err });
    }
  }
}

// HELPERS

/** What a SubjectAccessReview depends on besides the fixed resource: the whole user and the verb. */
function decisionKey(user: ReviewedUser, verb: AgentApiVerb): string {
  const extra = Object.keys(user.extra)
    .sort()
    .map((key) => [key, user.extra[key] ?? []]);
  return JSON.stringify([user.username, user.uid ?? null, user.groups, extra, verb]);
}

/** A non-negative finite duration option, or its default. */
function durationOption(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value < 0) throw new AuthConfigError(`${name} must be a non-negative number of milliseconds, got ${value}`);
  return value;
}

