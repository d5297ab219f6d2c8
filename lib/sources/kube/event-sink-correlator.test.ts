import { describe, expect, it } from 'vitest';
import { EventCorrelator, LruCache, TokenBucket } from './event-sink-correlator.ts';
import type { CorrelateResult, EventCorrelatorOptions, EventRecord } from './event-sink-correlator.ts';

const t0 = Date.UTC(2024, 0, 1, 12, 0, 0);

function record(message: string, at: number, overrides: Partial<EventRecord> = {}): EventRecord {
  return {
    namespace: 'prod',
    name: `web.${at}`,
    involvedObject: { kind: 'Pod', namespace: 'prod', name: 'web', uid: 'uid-web', apiVersion: 'v1' },
    type: 'Warning',
    reason: 'FailedMount',
    message,
    count: 1,
    firstTimestamp: at,
    lastTimestamp: at,
    source: { component: 'volumescope-agent', host: 'node-a' },
    reportingController: 'volumescope.io/agent',
    reportingInstance: 'node-a',
    ...overrides,
  };
}

function correlator(options: Partial<EventCorrelatorOptions> = {}): EventCorrelator {
  return new EventCorrelator({ eventName: (name, at) => `${name}.combined.${at}`, ...options });
}

function written(result: CorrelateResult): Extract<CorrelateResult, { skip: false }> {
  if (result.skip) throw new Error('the event was skipped');
  return result;
}

describe('LruCache', () => {
  it('evicts the least recently used entry; reads refresh an entry', () => {
    const cache = new LruCache<number>(2);
    cache.set('a', 1);
    cache.set('b', 2);
    expect(cache.get('a')).toBe(1);
    cache.set('c', 3);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBe(1);
    expect(cache.get('c')).toBe(3);
    expect(cache.size).toBe(2);
  });
});

describe('TokenBucket', () => {
  it('starts with the burst and refills one token per interval, never above the burst', () => {
    const bucket = new TokenBucket(2, 300_000, t0);
    expect([bucket.tryAccept(t0), bucket.tryAccept(t0), bucket.tryAccept(t0)]).toEqual([true, true, false]);
    expect(bucket.tryAccept(t0 + 299_999)).toBe(false);
    expect(bucket.tryAccept(t0 + 300_000)).toBe(true);
    expect(bucket.tryAccept(t0 + 300_000)).toBe(false);
    // A long quiet period refills the burst, not more.
    const later = t0 + 10 * 300_000;
    expect([bucket.tryAccept(later), bucket.tryAccept(later), bucket.tryAccept(later)]).toEqual([true, true, false]);
  });
});

describe('EventCorrelator', () => {
  it('turns an identical event into a patch of the first one: same name and first timestamp, count + 1', () => {
    const c = correlator();
    const first = written(c.correlate(record('boom', t0), t0));
    expect(first.patch).toBeUndefined();
    expect(first.event.count).toBe(1);
    const second = written(c.correlate(record('boom', t0 + 5_000), t0 + 5_000));
    expect(second.event).toMatchObject({ name: `web.${t0}`, firstTimestamp: t0, lastTimestamp: t0 + 5_000, count: 2 });
    expect(second.patch).toEqual({ count: 2, lastTimestamp: t0 + 5_000, message: 'boom' });
    expect(second.key).toBe(first.key);
  });

  it('treats events that differ in type, reason, object uid or source as different', () => {
    const c = correlator();
    written(c.correlate(record('boom', t0), t0));
    const variants: Partial<EventRecord>[] = [
      { type: 'Normal' },
      { reason: 'FailedMapVolume' },
      { involvedObject: { kind: 'Pod', namespace: 'prod', name: 'web', uid: 'uid-other', apiVersion: 'v1' } },
      { source: { component: 'volumescope-agent', host: 'node-b' } },
    ];
    for (const variant of variants) expect(written(c.correlate(record('boom', t0, variant), t0)).patch, JSON.stringify(variant)).toBeUndefined();
  });

  it('records the server state after a write: the next patch continues from its count', () => {
    const c = correlator();
    const first = written(c.correlate(record('boom', t0), t0));
    c.updateState(first.key, { name: 'web.server', count: 7, firstTimestamp: t0 - 60_000, resourceVersion: '42' });
    const next = written(c.correlate(record('boom', t0 + 1_000), t0 + 1_000));
    expect(next.event).toMatchObject({ name: 'web.server', count: 8, firstTimestamp: t0 - 60_000 });
  });

  it('combines similar events from the 10th distinct message on, and starts over after 10 quiet minutes', () => {
    const c = correlator();
    for (let i = 1; i <= 9; i++) expect(written(c.correlate(record(`m${i}`, t0 + i), t0 + i)).event.message).toBe(`m${i}`);
    const tenth = written(c.correlate(record('m10', t0 + 10), t0 + 10));
    expect(tenth.event).toMatchObject({ message: '(combined from similar events): m10', name: `web.combined.${t0 + 10}`, count: 1, firstTimestamp: t0 + 10 });
    expect(tenth.patch).toBeUndefined();
    const eleventh = written(c.correlate(record('m11', t0 + 11), t0 + 11));
    expect(eleventh.event).toMatchObject({ message: '(combined from similar events): m11', name: `web.combined.${t0 + 10}`, count: 2 });
    expect(eleventh.patch).toEqual({ count: 2, lastTimestamp: t0 + 11, message: '(combined from similar events): m11' });

    // Exactly 10 minutes after the last similar event still belongs to the group…
    const inWindow = written(c.correlate(record('m12', t0 + 11 + 600_000), t0 + 11 + 600_000));
    expect(inWindow.event.message).toBe('(combined from similar events): m12');
    // …one millisecond more starts a new one.
    const after = t0 + 11 + 1_200_001;
    expect(written(c.correlate(record('m13', after), after)).event.message).toBe('m13');
  });

  it('spam filter: skips events about an object beyond the burst, counting them all the same', () => {
    const c = correlator({ spamBurst: 2, spamRefillIntervalMs: 300_000 });
    expect(written(c.correlate(record('boom', t0), t0)).event.count).toBe(1);
    expect(written(c.correlate(record('boom', t0), t0)).event.count).toBe(2);
    expect(c.correlate(record('boom', t0), t0)).toEqual({ skip: true });
    // Another reason about the same object shares the budget; another object does not.
    expect(c.correlate(record('other', t0, { reason: 'FailedMapVolume' }), t0)).toEqual({ skip: true });
    const otherPod = { kind: 'Pod', namespace: 'prod', name: 'api', uid: 'uid-api', apiVersion: 'v1' };
    expect(c.correlate(record('boom', t0, { involvedObject: otherPod }), t0).skip).toBe(false);

    const refilled = written(c.correlate(record('boom', t0 + 300_000), t0 + 300_000));
    expect(refilled.event.count).toBe(4);
    expect(refilled.patch?.count).toBe(4);
  });
});
