import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../lib/clock/fake-clock.ts';
import { createKeyHasher, ReviewCache } from './webhook-auth-cache.ts';

describe('ReviewCache', () => {
  it('treats a review that throws synchronously as a failure: shared, not cached, not left in flight', async () => {
    const cache = new ReviewCache<string>(new FakeClock(), 4);
    let calls = 0;
    const failing = (): Promise<string> => {
      calls += 1;
      throw new Error('no API server');
    };

    const results = await Promise.allSettled([cache.load('k', failing, () => 1_000), cache.load('k', failing, () => 1_000)]);

    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect([calls, cache.size, cache.pending]).toEqual([1, 0, 0]);
    expect(await cache.load('k', () => Promise.resolve('answer'), () => 1_000)).toBe('answer');
    expect(calls).toBe(1);
  });

  it('keeps answers per their own TTL and forgets one whose TTL is 0', async () => {
    const clock = new FakeClock();
    const cache = new ReviewCache<boolean>(clock, 4);
    let reviews = 0;
    const review = (answer: boolean) => (): Promise<boolean> => {
      reviews += 1;
      return Promise.resolve(answer);
    };
    const ttl = (yes: boolean): number => (yes ? 100 : 0);

    await cache.load('yes', review(true), ttl);
    await cache.load('no', review(false), ttl);
    await cache.load('yes', review(true), ttl);
    await cache.load('no', review(false), ttl);
    expect(reviews).toBe(3);

    await clock.advance(100);
    await cache.load('yes', review(true), ttl);
    expect(reviews).toBe(4);
  });

  it('refuses a capacity below one', () => {
    expect(() => new ReviewCache(new FakeClock(), 0)).toThrow(RangeError);
  });
});

describe('createKeyHasher', () => {
  it('gives keys that do not contain the input, equal for equal inputs within one hasher only', () => {
    const token = 'eyJhbGciOiJSUzI1NiJ9.secret-part';
    const hash = createKeyHasher();
    const other = createKeyHasher();

    expect(hash(token)).toBe(hash(token));
    expect(hash(token)).not.toBe(hash(`${token}x`));
    expect(hash(token)).not.toBe(other(token));
    expect(hash(token)).not.toContain('secret-part');
    expect(hash(token)).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});
