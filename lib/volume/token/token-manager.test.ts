import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock/fake-clock.ts';
import {
  isServiceAccountTokenError,
  TOKEN_GC_PERIOD_MS,
  tokenCacheKey,
  TokenManager,
  type ServiceAccountTokenSource,
  type TokenRequestKey,
  type TokenRequestResult,
  type TokenRequestSpec,
} from './token-manager.ts';

const podRef = { apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'uid-1' };
const request = (expirationSeconds = 3600, audiences = ['vault'], uid = 'uid-1'): TokenRequestKey => ({
  spec: { audiences, expirationSeconds, boundObjectRef: { ...podRef, uid } },
});

/** Mints `token-<n>` valid for the spec's expirationSeconds (3600 when unset) from the clock's now; fails while `failure` is set. */
class FakeTokenSource implements ServiceAccountTokenSource {
  calls: { namespace: string; name: string; spec: TokenRequestSpec }[] = [];
  failure: Error | undefined;
  constructor(private readonly clock: FakeClock) {}

  createServiceAccountToken(namespace: string, name: string, spec: TokenRequestSpec): Promise<TokenRequestResult> {
    this.calls.push({ namespace, name, spec });
    if (this.failure !== undefined) return Promise.reject(this.failure);
    const ttl = spec.expirationSeconds ?? 3600;
    return Promise.resolve({
      spec: { ...spec, expirationSeconds: ttl },
      status: { token: `token-${String(this.calls.length)}`, expirationTimestamp: new Date(this.clock.now() + ttl * 1000).toISOString() },
    });
  }
}

function setUp(random = () => 0) {
  const clock = new FakeClock();
  const source = new FakeTokenSource(clock);
  const refreshErrors: string[] = [];
  const manager = new TokenManager({ source, clock, random, onRefreshError: (key) => refreshErrors.push(key) });
  const get = async (key: TokenRequestKey = request()) => (await manager.getServiceAccountToken('ns', 'default', key)).status.token;
  return { clock, source, manager, get, refreshErrors };
}

describe('TokenManager (pkg/kubelet/token)', () => {
  it('answers from the cache until a refresh is due, one entry per key', async () => {
    const { clock, source, get } = setUp();
    expect(await get()).toBe('token-1');
    await clock.advance(60_000);
    expect(await get()).toBe('token-1');
    expect(await get(request(3600, ['other']))).toBe('token-2');
    expect(await get(request(7200))).toBe('token-3');
    expect(await get(request(3600, ['vault'], 'uid-2'))).toBe('token-4');
    expect(source.calls.map((c) => [c.namespace, c.name, c.spec.audiences, c.spec.expirationSeconds, c.spec.boundObjectRef?.uid])).toEqual([
      ['ns', 'default', ['vault'], 3600, 'uid-1'],
      ['ns', 'default', ['other'], 3600, 'uid-1'],
      ['ns', 'default', ['vault'], 7200, 'uid-1'],
      ['ns', 'default', ['vault'], 3600, 'uid-2'],
    ]);
  });

  it('refreshes once less than 20 % of the TTL is left (exactly at the threshold: not yet)', async () => {
    const { clock, get } = setUp();
    expect(await get()).toBe('token-1');
    // 3600 s: the threshold is 720 s before the expiry, i.e. 2880 s after issue.
    await clock.advance(2880_000);
    expect(await get()).toBe('token-1');
    await clock.advance(1);
    expect(await get()).toBe('token-2');
    expect(await get()).toBe('token-2');
  });

  it('the jitter (whole seconds, up to 10) moves the threshold earlier', async () => {
    const { clock, get } = setUp(() => 0.95);
    expect(await get()).toBe('token-1');
    await clock.advance(2871_000); // 9 s of jitter: due after 2871 s
    expect(await get()).toBe('token-1');
    await clock.advance(1);
    expect(await get()).toBe('token-2');
  });

  it('refreshes a token older than 24 h even when its TTL is longer', async () => {
    const { clock, get } = setUp();
    const week = request(7 * 24 * 3600);
    expect(await get(week)).toBe('token-1');
    await clock.advance(24 * 3600_000);
    expect(await get(week)).toBe('token-1');
    await clock.advance(1);
    expect(await get(week)).toBe('token-2');
  });

  it('a failed first request is "failed to fetch token"', async () => {
    const { source, get } = setUp();
    source.failure = new Error('POST /api/v1/namespaces/ns/serviceaccounts/default/token: forbidden');
    const err: unknown = await get().catch((e: unknown) => e);
    expect(isServiceAccountTokenError(err)).toBe(true);
    expect((err as Error).message).toBe('failed to fetch token: POST /api/v1/namespaces/ns/serviceaccounts/default/token: forbidden');
  });

  it('a failed refresh keeps the valid token, and fails once it expired', async () => {
    const { clock, source, get, refreshErrors } = setUp();
    expect(await get()).toBe('token-1');
    await clock.advance(3000_000);
    source.failure = new Error('connection refused');
    expect(await get()).toBe('token-1');
    expect(refreshErrors).toEqual([tokenCacheKey('default', 'ns', request())]);
    await clock.advance(600_001);
    await expect(get()).rejects.toThrow(`token ${tokenCacheKey('default', 'ns', request())} expired and refresh failed: connection refused`);
    source.failure = undefined;
    expect(await get()).toBe('token-4');
  });

  it('keys in the kubelet format; deleteServiceAccountToken and the periodic sweep empty the cache', async () => {
    expect(tokenCacheKey('default', 'ns', request())).toBe(
      '"default"/"ns"/[]string{"vault"}/3600/v1.BoundObjectReference{Kind:"Pod", APIVersion:"v1", Name:"web", UID:"uid-1"}/""',
    );
    expect(tokenCacheKey('sa', 'ns', { spec: { audiences: [] } })).toBe('"sa"/"ns"/[]string(nil)/0/v1.BoundObjectReference{Kind:"", APIVersion:"", Name:"", UID:""}/""');
    const { clock, manager, get } = setUp();
    await get();
    await get(request(3600, ['vault'], 'uid-2'));
    manager.deleteServiceAccountToken('uid-1');
    expect(manager.size()).toBe(1);
    await clock.advance(TOKEN_GC_PERIOD_MS - 1);
    await get(request(600));
    expect(manager.size()).toBe(2);
    await clock.advance(3600_001);
    expect(await get(request(900))).toBe('token-4');
    // The sweep ran (more than gcPeriod since the last one): the expired uid-2 and 600 s tokens are gone.
    expect(manager.size()).toBe(1);
  });
});
