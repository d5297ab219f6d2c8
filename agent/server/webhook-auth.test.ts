/**
 * The webhook authenticator end to end: the real agent HTTP server in front, the real
 * `@kubernetes/client-node` making TokenReviews and SubjectAccessReviews over HTTP to the
 * FakeApiServer behind. Nothing of the client is mocked; review counts come from the fake's
 * request recording, cache ages from a FakeClock given to the authenticator.
 */
import { createServer, IncomingMessage, type Server } from 'node:http';
import { once } from 'node:events';
import { Socket, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiErrorBodySchema } from '../../lib/api/api-error.ts';
import { parseSnapshot } from '../../lib/api/compact-snapshot.ts';
import { FakeClock } from '../../lib/clock/fake-clock.ts';
import { FakeApiServer, type AccessPolicy, type RecordedRequest, type ReviewedUser } from '../../lib/sources/kube/testing/fake-apiserver.ts';
import { fakeKubeConfig } from '../../lib/sources/kube/testing/kubeconfig-file.ts';
import { isJsonObject } from '../../lib/sources/kube/plain-json.ts';
import { isInvalidTokenError } from './authenticator.ts';
import { type ApiResponse } from './testing/api-client.ts';
import { waitFor } from '../../lib/clock/testing/wait-for.ts';
import { startServer, TEST_TOKEN, type ServerFixture } from './testing/server-fixture.ts';
import {
  createAgentAuthenticator,
  DEFAULT_AUTHENTICATION_CACHE_TTL_MS,
  DEFAULT_AUTHORIZED_TTL_MS,
  DEFAULT_UNAUTHORIZED_TTL_MS,
  isAuthConfigError,
  verbForMethod,
  type AgentAuthenticator,
  type WebhookAuthOptions,
} from './webhook-auth.ts';

/** The agent's own credential towards the API server (its service account token). */
const AGENT_SA_TOKEN = 'agent-service-account-token';
const NODE = 'node-a';

const ALICE_TOKEN = 'alice-token-0123';
const ALICE: ReviewedUser = { username: 'alice', uid: 'uid-alice', groups: ['ops', 'system:authenticated'], extra: { scopes: ['read', 'write'] } };
const BOB_TOKEN = 'bob-token-4567';
const BOB: ReviewedUser = { username: 'bob', groups: ['viewers'] };

/** Allows only reads (`get`) of this node's volumemanager subresource. */
const readOnly: AccessPolicy = (request) => {
  const a = request.resourceAttributes;
  return a?.resource === 'nodes' && a.subresource === 'volumemanager' && a.name === NODE && a.verb === 'get';
};

interface Setup {
  fake: FakeApiServer;
  clock: FakeClock;
  auth: AgentAuthenticator;
  fx: ServerFixture;
  get(path: string, token: string | null): Promise<ApiResponse>;
  post(path: string, token: string | null): Promise<ApiResponse>;
}

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function startFake(): Promise<FakeApiServer> {
  const fake = await FakeApiServer.start({ token: AGENT_SA_TOKEN });
  cleanups.push(() => fake.close());
  fake.setTokenUser(ALICE_TOKEN, ALICE);
  fake.setTokenUser(BOB_TOKEN, BOB);
  fake.setAccessPolicy('alice', true);
  fake.setAccessPolicy('bob', readOnly);
  return fake;
}

function webhookOptions(fake: { url: string }, clock: FakeClock, extra: Partial<WebhookAuthOptions> = {}): WebhookAuthOptions {
  return { kubeConfig: fakeKubeConfig({ server: fake.url, token: AGENT_SA_TOKEN }), nodeName: NODE, clock, ...extra };
}

/** A fake API server, a webhook authenticator on a fake clock (static token TEST_TOKEN as `dashboard`), and an agent server using it. */
async function setup(extra: Partial<WebhookAuthOptions> = {}): Promise<Setup> {
  const fake = await startFake();
  const clock = new FakeClock();
  const auth = createAgentAuthenticator({ staticToken: TEST_TOKEN, staticTokenName: 'dashboard', webhook: webhookOptions(fake, clock, extra) });
  cleanups.push(() => {
    auth.close();
  });
  const fx = await startServer({ authenticator: auth });
  cleanups.push(() => fx.close());
  return {
    fake,
    clock,
    auth,
    fx,
    get: (path, token) => fx.client.get(path, { token }),
    post: (path, token) => fx.client.post(path, '', { token }),
  };
}

function tokenReviews(fake: FakeApiServer): RecordedRequest[] {
  return fake.requests({ method: 'POST' }).filter((r) => r.path === '/apis/authentication.k8s.io/v1/tokenreviews');
}

function accessReviews(fake: FakeApiServer): RecordedRequest[] {
  return fake.requests({ method: 'POST' }).filter((r) => r.path === '/apis/authorization.k8s.io/v1/subjectaccessreviews');
}

/** The `spec` of a recorded review request. */
function specOf(request: RecordedRequest | undefined): unknown {
  return isJsonObject(request?.body) ? request.body.spec : undefined;
}

function verbsReviewed(fake: FakeApiServer): unknown[] {
  return accessReviews(fake).map((r) => {
    const spec = specOf(r);
    return isJsonObject(spec) && isJsonObject(spec.resourceAttributes) ? spec.resourceAttributes.verb : undefined;
  });
}

function errorOf(res: ApiResponse): { code: string; message: string } {
  return ApiErrorBodySchema.parse(res.json).error;
}

async function auditCallers(s: Setup): Promise<string[]> {
  const snapshot = parseSnapshot((await s.get('/api/v1/snapshot', TEST_TOKEN)).json);
  return snapshot.audit.map((a) => a.caller);
}

/** A request as the server hands it to the authenticator, for calling it directly. */
function incoming(method: string, token: string | null): IncomingMessage {
  const req = new IncomingMessage(new Socket());
  req.method = method;
  if (token !== null) req.headers.authorization = `Bearer ${token}`;
  return req;
}

describe('webhook authentication and authorization', () => {
  it('accepts a reviewed and allowed token, records the user as the audit caller, and reviews as the kubelet does', async () => {
    const s = await setup();

    const read = await s.get('/api/v1/snapshot', ALICE_TOKEN);
    const action = await s.post('/api/v1/resync', ALICE_TOKEN);

    expect([read.status, action.status]).toEqual([200, 200]);
    expect(await auditCallers(s)).toEqual(['alice']);
    // The TokenReview carries the caller's token and is sent with the agent's own credential.
    const [review] = tokenReviews(s.fake);
    expect(review?.authorization).toBe(`Bearer ${AGENT_SA_TOKEN}`);
    expect(specOf(review)).toEqual({ token: ALICE_TOKEN });
    // One SubjectAccessReview per verb, with everything the TokenReview said about the user.
    expect(accessReviews(s.fake).map(specOf)).toEqual(
      (['get', 'update'] as const).map((verb) => ({
        user: 'alice',
        uid: 'uid-alice',
        groups: ['ops', 'system:authenticated'],
        extra: { scopes: ['read', 'write'] },
        resourceAttributes: { group: '', resource: 'nodes', subresource: 'volumemanager', name: NODE, verb },
      })),
    );
  });

  it('answers 401 for a token the TokenReview does not authenticate, and for no token without any review', async () => {
    const s = await setup();

    const unknown = await s.get('/api/v1/snapshot', 'stolen-or-made-up');
    expect(unknown.status).toBe(401);
    expect(unknown.headers.get('www-authenticate')).toBe('Bearer');
    expect(errorOf(unknown).code).toBe('unauthorized');
    expect([tokenReviews(s.fake).length, accessReviews(s.fake).length]).toEqual([1, 0]);

    const none = await s.get('/api/v1/snapshot', null);
    expect(none.status).toBe(401);
    expect(tokenReviews(s.fake)).toHaveLength(1);
  });

  it('answers 403 naming user, verb and resource for a denied action while reads are allowed', async () => {
    const s = await setup();

    const snapshot = await s.get('/api/v1/snapshot', BOB_TOKEN);
    const metrics = await s.get('/metrics', BOB_TOKEN);
    const resync = await s.post('/api/v1/resync', BOB_TOKEN);
    const unmount = await s.post('/api/v1/unmount', BOB_TOKEN);

    expect([snapshot.status, metrics.status, resync.status, unmount.status]).toEqual([200, 200, 403, 403]);
    expect(errorOf(resync)).toEqual({ code: 'forbidden', message: 'Forbidden (user=bob, verb=update, resource=nodes, subresource=volumemanager)' });
    expect(resync.headers.get('www-authenticate')).toBeNull();
    // The refused actions never ran; reads and actions are separate decisions, each reviewed once.
    expect(s.fx.runtime.resyncs).toBe(0);
    expect(await auditCallers(s)).toEqual([]);
    expect(verbsReviewed(s.fake)).toEqual(['get', 'update']);
  });

  it('lets any authenticated user in with authorizationMode AlwaysAllow, without a SubjectAccessReview', async () => {
    const s = await setup({ authorizationMode: 'AlwaysAllow' });

    expect((await s.post('/api/v1/resync', BOB_TOKEN)).status).toBe(200);
    expect((await s.get('/api/v1/snapshot', 'not-a-token')).status).toBe(401);
    expect(accessReviews(s.fake)).toHaveLength(0);
    expect(await auditCallers(s)).toEqual(['bob']);
  });

  it('accepts the static token without any review, and records its name', async () => {
    const s = await setup();

    const read = await s.get('/api/v1/snapshot', TEST_TOKEN);
    const action = await s.post('/api/v1/resync', TEST_TOKEN);

    expect([read.status, action.status]).toEqual([200, 200]);
    expect(await auditCallers(s)).toEqual(['dashboard']);
    expect(s.fake.requests()).toHaveLength(0);
  });

  it('works with the static token alone, answering 401 for other tokens', async () => {
    const fx = await startServer({ authenticator: createAgentAuthenticator({ staticToken: TEST_TOKEN }) });
    cleanups.push(() => fx.close());

    expect((await fx.client.get('/api/v1/snapshot')).status).toBe(200);
    expect((await fx.client.get('/api/v1/snapshot', { token: ALICE_TOKEN })).status).toBe(401);
  });
});

describe('webhook caches', () => {
  it('keeps a TokenReview answer for the authentication TTL and an allowed decision for the authorized TTL', async () => {
    const s = await setup();
    const reviews = (): number[] => [tokenReviews(s.fake).length, accessReviews(s.fake).length];

    expect((await s.get('/api/v1/snapshot', ALICE_TOKEN)).status).toBe(200);
    expect((await s.get('/api/v1/snapshot', ALICE_TOKEN)).status).toBe(200);
    expect(reviews()).toEqual([1, 1]);

    await s.clock.advance(DEFAULT_AUTHENTICATION_CACHE_TTL_MS - 1);
    expect((await s.get('/api/v1/snapshot', ALICE_TOKEN)).status).toBe(200);
    expect(reviews()).toEqual([1, 1]);

    await s.clock.advance(1); // exactly 2 min after the review: the token is reviewed again
    expect((await s.get('/api/v1/snapshot', ALICE_TOKEN)).status).toBe(200);
    expect(reviews()).toEqual([2, 1]);

    await s.clock.advance(DEFAULT_AUTHORIZED_TTL_MS - DEFAULT_AUTHENTICATION_CACHE_TTL_MS); // 5 min after the first SAR
    expect((await s.get('/api/v1/snapshot', ALICE_TOKEN)).status).toBe(200);
    expect(reviews()).toEqual([3, 2]);
  });

  it('keeps a denial for the unauthorized TTL only, then applies the new policy', async () => {
    const s = await setup();

    expect((await s.post('/api/v1/resync', BOB_TOKEN)).status).toBe(403);
    s.fake.setAccessPolicy('bob', true);
    await s.clock.advance(DEFAULT_UNAUTHORIZED_TTL_MS - 1);
    expect((await s.post('/api/v1/resync', BOB_TOKEN)).status).toBe(403);
    expect(verbsReviewed(s.fake)).toEqual(['update']);

    await s.clock.advance(1);
    expect((await s.post('/api/v1/resync', BOB_TOKEN)).status).toBe(200);
    expect(verbsReviewed(s.fake)).toEqual(['update', 'update']);
  });

  it('keeps a negative TokenReview answer too, for the authentication TTL', async () => {
    const s = await setup();
    const late = 'late-token';

    expect((await s.get('/api/v1/snapshot', late)).status).toBe(401);
    s.fake.setTokenUser(late, { username: 'carol' });
    s.fake.setAccessPolicy('carol', true);
    expect((await s.get('/api/v1/snapshot', late)).status).toBe(401);
    expect(tokenReviews(s.fake)).toHaveLength(1);

    await s.clock.advance(DEFAULT_AUTHENTICATION_CACHE_TTL_MS);
    expect((await s.get('/api/v1/snapshot', late)).status).toBe(200);
    expect(tokenReviews(s.fake)).toHaveLength(2);
  });

  it('uses the configured TTLs, 0 turning a cache off', async () => {
    const s = await setup({ authenticationCacheTtlMs: 0, authorizedTtlMs: 1_000 });

    await s.get('/api/v1/snapshot', ALICE_TOKEN);
    await s.get('/api/v1/snapshot', ALICE_TOKEN);
    expect([tokenReviews(s.fake).length, accessReviews(s.fake).length]).toEqual([2, 1]);

    await s.clock.advance(1_000);
    await s.get('/api/v1/snapshot', ALICE_TOKEN);
    expect([tokenReviews(s.fake).length, accessReviews(s.fake).length]).toEqual([3, 2]);
  });

  it('is bounded: beyond maxCacheEntries the least recently used token is reviewed again', async () => {
    const s = await setup({ maxCacheEntries: 2 });
    const tokens = ['t-1', 't-2', 't-3'];
    tokens.forEach((token, i) => {
      s.fake.setTokenUser(token, { username: `user-${i}` });
    });
    s.fake.setDefaultAccessPolicy(true);

    const statuses = [];
    for (const token of ['t-1', 't-2', 't-1', 't-3']) statuses.push((await s.get('/api/v1/snapshot', token)).status);
    expect(statuses).toEqual([200, 200, 200, 200]);
    expect(tokenReviews(s.fake)).toHaveLength(3); // t-1's second use was a hit, which made t-2 the least recently used
    await s.get('/api/v1/snapshot', 't-1');
    await s.get('/api/v1/snapshot', 't-3');
    expect(tokenReviews(s.fake)).toHaveLength(3);
    await s.get('/api/v1/snapshot', 't-2'); // evicted by t-3
    expect(tokenReviews(s.fake)).toHaveLength(4);
  });

  it('shares one review among concurrent requests for the same token, even with caching off', async () => {
    const fake = await startFake();
    const auth = createAgentAuthenticator({
      webhook: webhookOptions(fake, new FakeClock(), { authenticationCacheTtlMs: 0, authorizedTtlMs: 0, unauthorizedTtlMs: 0 }),
    });
    cleanups.push(() => {
      auth.close();
    });

    // Started in one turn: all of them ask before the first review can have been answered.
    const results = await Promise.all(Array.from({ length: 6 }, async () => auth.authenticate(incoming('GET', ALICE_TOKEN))));

    expect(results).toEqual(Array.from({ length: 6 }, () => ({ ok: true, caller: 'alice', groups: ALICE.groups })));
    expect([tokenReviews(fake).length, accessReviews(fake).length]).toEqual([1, 1]);
    // Nothing was kept: the next request reviews again.
    await auth.authenticate(incoming('GET', ALICE_TOKEN));
    expect([tokenReviews(fake).length, accessReviews(fake).length]).toEqual([2, 2]);
  });

  it('serves concurrent HTTP requests with one review each', async () => {
    const s = await setup();

    const responses = await Promise.all(Array.from({ length: 8 }, () => s.get('/api/v1/snapshot', ALICE_TOKEN)));

    expect(responses.map((r) => r.status)).toEqual(Array.from({ length: 8 }, () => 200));
    expect([tokenReviews(s.fake).length, accessReviews(s.fake).length]).toEqual([1, 1]);
  });
});

describe('webhook failures', () => {
  it('fails closed with 401 when the TokenReview cannot be made, logs why, and does not cache the failure', async () => {
    const s = await setup();
    await s.fake.stop();

    const down = await s.get('/api/v1/snapshot', ALICE_TOKEN);

    expect(down.status).toBe(401);
    expect(errorOf(down)).toEqual({ code: 'unauthorized', message: 'the bearer token could not be verified' });
    const warning = s.fx.runtime.logger.lines.find((l) => l.level === 'warn');
    expect(warning?.fields).toMatchObject({ reason: 'unauthenticated', detail: expect.stringContaining('TokenReview') as unknown });
    expect(JSON.stringify(s.fx.runtime.logger.lines)).not.toContain(ALICE_TOKEN);

    await s.fake.restart();
    expect((await s.get('/api/v1/snapshot', ALICE_TOKEN)).status).toBe(200);
    expect(tokenReviews(s.fake)).toHaveLength(1);
  });

  it('fails closed with 500 when the SubjectAccessReview cannot be made, and does not cache the failure', async () => {
    const s = await setup();
    expect((await s.get('/api/v1/snapshot', ALICE_TOKEN)).status).toBe(200); // caches the TokenReview and the read decision
    await s.fake.stop();

    const down = await s.post('/api/v1/resync', ALICE_TOKEN);

    expect(down.status).toBe(500);
    expect(errorOf(down)).toEqual({ code: 'internal', message: 'Authorization error (user=alice, verb=update, resource=nodes, subresource=volumemanager)' });
    expect(s.fx.runtime.resyncs).toBe(0);

    await s.fake.restart();
    expect((await s.post('/api/v1/resync', ALICE_TOKEN)).status).toBe(200);
    expect(verbsReviewed(s.fake)).toEqual(['get', 'update']);
  });

  it('fails closed when a review does not answer within the review timeout (on the injected clock)', async () => {
    // An API server that accepts requests and never answers them.
    const received: IncomingMessage[] = [];
    const silent: Server = createServer((req) => {
      received.push(req);
    });
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    cleanups.push(async () => {
      silent.closeAllConnections();
      silent.close();
      await once(silent, 'close');
    });
    const clock = new FakeClock();
    const auth = createAgentAuthenticator({
      webhook: webhookOptions({ url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}` }, clock, { reviewTimeoutMs: 5_000 }),
    });
    const fx = await startServer({ authenticator: auth });
    cleanups.push(() => fx.close());

    const pending = fx.client.get('/api/v1/snapshot', { token: ALICE_TOKEN });
    await waitFor(() => received.length === 1, { what: 'the TokenReview to reach the silent server' });
    await clock.advance(5_000);

    expect((await pending).status).toBe(401);
  });
});

describe('createAgentAuthenticator options', () => {
  const clock = new FakeClock();
  const nowhere = { url: 'http://127.0.0.1:1' };
  const thrown = (attempt: () => unknown): unknown => {
    try {
      attempt();
    } catch (err) {
      return err;
    }
    return undefined;
  };

  it.each<[string, () => unknown]>([
    ['neither a static token nor a webhook', () => createAgentAuthenticator({})],
    ['an empty node name', () => createAgentAuthenticator({ webhook: webhookOptions(nowhere, clock, { nodeName: ' ' }) })],
    ['a negative TTL', () => createAgentAuthenticator({ webhook: webhookOptions(nowhere, clock, { authorizedTtlMs: -1 }) })],
    ['a TTL that is not a number', () => createAgentAuthenticator({ webhook: webhookOptions(nowhere, clock, { unauthorizedTtlMs: Number.NaN }) })],
    ['a zero review timeout', () => createAgentAuthenticator({ webhook: webhookOptions(nowhere, clock, { reviewTimeoutMs: 0 }) })],
    ['an empty cache', () => createAgentAuthenticator({ webhook: webhookOptions(nowhere, clock, { maxCacheEntries: 0 }) })],
  ])('refuses %s with an AuthConfigError', (_name, attempt) => {
    expect(isAuthConfigError(thrown(attempt))).toBe(true);
  });

  it('refuses an unusable static token with an InvalidTokenError', () => {
    expect(isInvalidTokenError(thrown(() => createAgentAuthenticator({ staticToken: 'has space' })))).toBe(true);
  });

  it.each([
    ['GET', 'get'],
    ['HEAD', 'get'],
    ['POST', 'update'],
    ['PUT', 'update'],
    ['DELETE', 'update'],
    ['PATCH', 'update'],
    ['OPTIONS', 'update'],
  ] as const)('reviews %s as verb %s', (method, verb) => {
    expect(verbForMethod(method)).toBe(verb);
  });
});

describe('TokenReview floods and audiences', () => {
  it('rate-limits reviews of unknown tokens per client: 100 made-up tokens cost 20 TokenReviews, the rest 429 with Retry-After', async () => {
    const s = await setup({ unknownTokenReviewLimit: { limit: 20, windowMs: 10_000 } });

    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 100; i++) {
      const res = await s.get('/api/v1/snapshot', `made-up-token-${i}`);
      statuses.push(res.status);
      if (res.status === 429) retryAfter ??= res.headers.get('retry-after');
    }
    const known = await s.get('/api/v1/snapshot', TEST_TOKEN); // the static token needs no review

    expect(statuses.filter((x) => x === 401)).toHaveLength(20);
    expect(statuses.filter((x) => x === 429)).toHaveLength(80);
    expect(retryAfter).toBe('10');
    expect(tokenReviews(s.fake)).toHaveLength(20);
    expect(known.status).toBe(200);
    await s.clock.advance(10_000);
    expect((await s.get('/api/v1/snapshot', ALICE_TOKEN)).status).toBe(200);
  });

  it('caches a token that did not authenticate briefly (10 s), an authenticated one for the full TTL', async () => {
    const s = await setup();

    for (let i = 0; i < 5; i++) await s.get('/api/v1/snapshot', 'wrong-token');
    const afterBurst = tokenReviews(s.fake).length;
    await s.clock.advance(9_999);
    await s.get('/api/v1/snapshot', 'wrong-token');
    const within = tokenReviews(s.fake).length;
    await s.clock.advance(1);
    await s.get('/api/v1/snapshot', 'wrong-token');

    expect([afterBurst, within, tokenReviews(s.fake).length]).toEqual([1, 1, 2]);
  });

  it('with audiences, sends them in the TokenReview and refuses a token not valid for any of them (401)', async () => {
    const s = await setup({ audiences: ['volumescope-agent'] });
    s.fake.setTokenAudiences(ALICE_TOKEN, ['volumescope-agent']);
    s.fake.setTokenAudiences(BOB_TOKEN, ['https://kubernetes.default.svc.cluster.local']);

    const alice = await s.get('/api/v1/snapshot', ALICE_TOKEN);
    const bob = await s.get('/api/v1/snapshot', BOB_TOKEN);

    expect([alice.status, bob.status]).toEqual([200, 401]);
    expect(tokenReviews(s.fake).map((r) => (specOf(r) as { audiences?: unknown }).audiences)).toEqual([['volumescope-agent'], ['volumescope-agent']]);
  });

  it('without audiences, a token valid only for another audience is refused by the API server audience check', async () => {
    const s = await setup();
    s.fake.setTokenAudiences(ALICE_TOKEN, ['volumescope-agent']);

    expect((await s.get('/api/v1/snapshot', ALICE_TOKEN)).status).toBe(401);
  });
});
