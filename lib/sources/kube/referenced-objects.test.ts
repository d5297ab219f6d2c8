import { describe, expect, it } from 'vitest';
import { FakeClock, flushMicrotasks } from '../../clock/fake-clock.ts';
import type { ConfigMap, PersistentVolumeClaim } from '../../volume/k8s-types.ts';
import { isKubeApiRequestError } from '../../kube-client/api-errors.ts';
import type { ObjectRef } from './object-references.ts';
import { refKey } from './object-references.ts';
import { ReferencedObjectCache } from './referenced-objects.ts';
import type { ReferencedObject, ReferencedObjectCacheOptions } from './referenced-objects.ts';

// The cache on fake time, with a scripted fetch: each GET waits until the test answers it.

type Answer = { kind: 'object'; object: ReferencedObject } | { kind: 'absent' } | { kind: 'fail'; status: number };

interface PendingFetch {
  ref: ObjectRef;
  answer: (a: Answer) => void;
}

function setup(options: Partial<ReferencedObjectCacheOptions> = {}) {
  const clock = new FakeClock();
  const pending: PendingFetch[] = [];
  const fetched: string[] = [];
  const updates: { key: string; valueChanged: boolean; errorChanged: boolean; firstFetch: boolean }[] = [];
  const cache = new ReferencedObjectCache({
    clock,
    ttlMs: 60_000,
    retry: { initialMs: 1000, maxMs: 8000 },
    maxConcurrent: 8,
    fetch: (ref) => {
      fetched.push(refKey(ref));
      return new Promise<ReferencedObject | undefined>((resolve, reject) => {
        pending.push({
          ref,
          answer: (a) => {
            if (a.kind === 'object') resolve(a.object);
            else if (a.kind === 'absent') resolve(undefined);
            else reject(Object.assign(new Error('request failed'), { code: a.status }));
          },
        });
      });
    },
    onUpdate: (ref, change) => updates.push({ key: refKey(ref), ...change }),
    ...options,
  });
  /** Answers every pending fetch with `answerFor(ref)` and lets the results apply. */
  const answerAll = async (answerFor: (ref: ObjectRef) => Answer) => {
    for (const fetch of pending.splice(0)) fetch.answer(answerFor(fetch.ref));
    await flushMicrotasks();
  };
  return { clock, cache, pending, fetched, updates, answerAll };
}

const cmRef = (name: string): ObjectRef => ({ kind: 'ConfigMap', namespace: 'default', name });
const claimRef: ObjectRef = { kind: 'PersistentVolumeClaim', namespace: 'default', name: 'data' };
const cm = (name: string, value: string): ConfigMap => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' }, data: { value } });
const pvc = (phase: 'Pending' | 'Bound'): PersistentVolumeClaim => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name: 'data', namespace: 'default' },
  spec: { accessModes: ['ReadWriteOnce'] },
  status: { phase },
});

describe('ReferencedObjectCache', () => {
  it('fetches new references at once and counts as fetched once every first GET is answered', async () => {
    const { cache, fetched, answerAll } = setup();
    cache.setReferences([cmRef('a'), cmRef('b')]);
    expect(fetched).toEqual(['ConfigMap default/a', 'ConfigMap default/b']);
    expect(cache.allFetchedOnce()).toBe(false);

    await answerAll((ref) => (ref.name === 'a' ? { kind: 'object', object: cm('a', '1') } : { kind: 'absent' }));

    expect(cache.allFetchedOnce()).toBe(true);
    expect(cache.get(cmRef('a'))).toEqual(cm('a', '1'));
    expect(cache.get(cmRef('b'))).toBeUndefined();
    expect(cache.errors()).toEqual([]);
  });

  it('getWhenFetched waits for the first GET of a reference (never "absent" for "not fetched yet"), starts no extra GET, and answers at once afterwards', async () => {
    const { cache, fetched, answerAll } = setup();
    cache.setReferences([cmRef('a'), cmRef('b')]);
    let a: ReferencedObject | undefined | 'waiting' = 'waiting';
    void cache.getWhenFetched(cmRef('a')).then((v) => (a = v));
    await flushMicrotasks();
    expect(a).toBe('waiting');
    expect(cache.get(cmRef('a'))).toBeUndefined();
    await answerAll((ref) => (ref.name === 'a' ? { kind: 'object', object: cm('a', '1') } : { kind: 'absent' }));
    expect(a).toEqual(cm('a', '1'));
    expect(fetched).toEqual(['ConfigMap default/a', 'ConfigMap default/b']);
    // Fetched once: answered from the cache, absent included; an unreferenced object at once.
    expect(await cache.getWhenFetched(cmRef('a'))).toEqual(cm('a', '1'));
    expect(await cache.getWhenFetched(cmRef('b'))).toBeUndefined();
    expect(await cache.getWhenFetched(cmRef('c'))).toBeUndefined();
    expect(fetched).toHaveLength(2);
  });

  it('fetches a settled object again after the TTL, and an absent one with backoff', async () => {
    const { clock, cache, fetched, answerAll } = setup();
    cache.setReferences([cmRef('a'), cmRef('b')]);
    await answerAll((ref) => (ref.name === 'a' ? { kind: 'object', object: cm('a', '1') } : { kind: 'absent' }));
    fetched.length = 0;

    await clock.advance(1000);
    expect(fetched).toEqual(['ConfigMap default/b']);
    await answerAll(() => ({ kind: 'absent' }));
    await clock.advance(1999);
    expect(fetched).toEqual(['ConfigMap default/b']);
    await clock.advance(1);
    expect(fetched).toEqual(['ConfigMap default/b', 'ConfigMap default/b']);

    await answerAll(() => ({ kind: 'object', object: cm('b', '2') }));
    await clock.advance(60_000 - 3000);
    expect(fetched.filter((k) => k.endsWith('/a'))).toEqual(['ConfigMap default/a']);
  });

  it('retries a claim until it is Bound', async () => {
    const { clock, cache, fetched, answerAll } = setup();
    cache.setReferences([claimRef]);
    await answerAll(() => ({ kind: 'object', object: pvc('Pending') }));
    await clock.advance(1000);
    expect(fetched).toHaveLength(2);
    await answerAll(() => ({ kind: 'object', object: pvc('Bound') }));

    await clock.advance(59_999);
    expect(fetched).toHaveLength(2);
    expect(cache.get(claimRef)).toEqual(pvc('Bound'));
  });

  it('keeps the last version when a GET fails, reports it until a GET succeeds, and rejects fetchNow meanwhile', async () => {
    const { clock, cache, answerAll, updates } = setup({ ttlMs: 100 });
    cache.setReferences([cmRef('a')]);
    await answerAll(() => ({ kind: 'object', object: cm('a', '1') }));
    await clock.advance(100);
    await answerAll(() => ({ kind: 'fail', status: 500 }));

    expect(cache.get(cmRef('a'))).toEqual(cm('a', '1'));
    expect(cache.errors()).toEqual([
      {
        file: '/api/v1/namespaces/default/configmaps/a',
        message: 'ConfigMap default/a: GET failed: HTTP 500 Internal Server Error (keeping the last fetched version; retrying)',
      },
    ]);
    expect(updates.at(-1)).toEqual({ key: 'ConfigMap default/a', valueChanged: false, errorChanged: true, firstFetch: false });

    const rejected = expect(cache.fetchNow(cmRef('a'))).rejects.toSatisfy(isKubeApiRequestError);
    await answerAll(() => ({ kind: 'fail', status: 500 }));
    await rejected;

    // Two failures in a row: the retry comes after 2 s (1 s doubled), not after the TTL.
    await clock.advance(1999);
    expect(cache.errors()).toHaveLength(1);
    await clock.advance(1);
    await answerAll(() => ({ kind: 'object', object: cm('a', '2') }));
    expect(cache.errors()).toEqual([]);
    expect(cache.get(cmRef('a'))).toEqual(cm('a', '2'));
    expect(updates.at(-1)).toEqual({ key: 'ConfigMap default/a', valueChanged: true, errorChanged: true, firstFetch: false });
  });

  it('drops objects that are no longer referenced, with their timers', async () => {
    const { clock, cache, answerAll } = setup();
    cache.setReferences([cmRef('a'), cmRef('b')]);
    await answerAll(() => ({ kind: 'object', object: cm('x', '1') }));
    expect(clock.pendingTimers()).toBe(2);

    expect(cache.setReferences([cmRef('b')])).toBe(true);
    expect(cache.has(cmRef('a'))).toBe(false);
    expect(cache.get(cmRef('a'))).toBeUndefined();
    expect(clock.pendingTimers()).toBe(1);
  });

  it('runs at most maxConcurrent GETs at once', async () => {
    const { cache, fetched, answerAll } = setup({ maxConcurrent: 2 });
    cache.setReferences(['a', 'b', 'c', 'd', 'e'].map(cmRef));
    expect(fetched).toHaveLength(2);
    await answerAll(() => ({ kind: 'absent' }));
    expect(fetched).toHaveLength(4);
    await answerAll(() => ({ kind: 'absent' }));
    expect(fetched).toHaveLength(5);
  });

  it('refreshes on request: not during a first fetch, and once more after a GET however often asked during it', async () => {
    const { cache, fetched, answerAll } = setup();
    cache.setReferences([cmRef('a')]);
    cache.refresh([cmRef('a')]);
    expect(fetched).toHaveLength(1);
    await answerAll(() => ({ kind: 'object', object: cm('a', '1') }));

    cache.refresh([cmRef('a')]);
    expect(fetched).toHaveLength(2);
    cache.refresh([cmRef('a')]);
    cache.refresh([cmRef('a')]);
    await answerAll(() => ({ kind: 'object', object: cm('a', '1') }));
    expect(fetched).toHaveLength(3);
    await answerAll(() => ({ kind: 'object', object: cm('a', '1') }));
    expect(fetched).toHaveLength(3);
  });

  it('fetches an unreferenced object for fetchNow without caching it', async () => {
    const { cache, answerAll } = setup();
    const result = cache.fetchNow(cmRef('solo'));
    await answerAll(() => ({ kind: 'object', object: cm('solo', '1') }));
    expect(await result).toEqual(cm('solo', '1'));
    expect(cache.has(cmRef('solo'))).toBe(false);
  });

  it('fetches nothing and schedules nothing after stop', async () => {
    const { clock, cache, fetched, answerAll } = setup();
    cache.setReferences([cmRef('a')]);
    cache.stop();
    await answerAll(() => ({ kind: 'object', object: cm('a', '1') }));
    cache.setReferences([cmRef('b')]);
    expect(fetched).toEqual(['ConfigMap default/a']);
    expect(clock.pendingTimers()).toBe(0);
  });
});
