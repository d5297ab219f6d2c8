/**
 * The event correlation of client-go's `tools/record` (events_cache.go), which every kubelet
 * event passes before it is written: spam filtering, aggregation of similar events and counting
 * of identical ones. Pure and synchronous: time is a parameter, the caller does the writing.
 *
 * For one incoming event, in client-go's order (`EventCorrelate`):
 * 1. EventAggregate: events that differ only by message (same source, involved object, type,
 *    reason, reporting controller and instance) are similar. Once `aggregateMaxEvents` (10)
 *    distinct messages were seen with no gap longer than `aggregateIntervalMs` (10 minutes),
 *    the event is replaced by a new one whose message is
 *    `(combined from similar events): <message>`, correlated under the group's key, so later
 *    similar events update that one combined event.
 * 2. eventObserve: if an event with the same key was seen before (LRU cache), the new one takes
 *    its name and first timestamp, `count` = previous + 1, and must be written as a strategic
 *    merge patch of `count`, `lastTimestamp` and `message`. The count is recorded in the cache
 *    before the write and before the spam filter: an occurrence that is filtered still counts,
 *    so the next written update carries the number of occurrences, as with the kubelet.
 * 3. The spam filter: a token bucket per source + involved object (burst 25, one token more per
 *    5 minutes); an event without a token is skipped.
 *
 * Deviations: cache keys join their parts with NUL (client-go joins them with "", so distinct
 * parts could collide); `PopAny` of the aggregation set removes the oldest message (Go removes a
 * random one); {@link EventCorrelator.updateState} records the server's answer under the key the
 * event was correlated with (client-go recomputes the full key, which for a combined event is
 * an entry nothing looks up); a combined event keeps the reporting controller and instance
 * (client-go's copy leaves them empty, so the event would be attributed to no controller).
 */
import type { Millis } from '../../clock/clock.ts';
import type { EventType } from '../../volume/events.ts';

/** `maxLruCacheEntries`: the size of each of the three caches. */
const maxLruCacheEntries = 4096;
/** `defaultAggregateMaxEvents`: distinct messages before similar events are combined. */
const defaultAggregateMaxEvents = 10;
/** `defaultAggregateIntervalInSeconds` (600) in ms. */
const defaultAggregateIntervalMs = 600_000;
/** `defaultSpamBurst`: events a source may send about one object at once. */
const defaultSpamBurst = 25;
/** `defaultSpamQPS` = 1/300: one more event per object every 5 minutes. */
const defaultSpamRefillIntervalMs = 300_000;
/** `EventAggregatorByReasonMessageFunc`'s prefix. */
const combinedEventMessagePrefix = '(combined from similar events): ';

/** A core/v1 `ObjectReference`, as an event's `involvedObject`. */
export interface EventObjectReference {
  kind: string;
  /** Empty for cluster-scoped objects (Node, PersistentVolume). */
  namespace: string;
  name: string;
  uid: string;
  apiVersion: string;
}

/** A core/v1 Event as the recorder builds it; times are epoch milliseconds. */
export interface EventRecord {
  namespace: string;
  name: string;
  involvedObject: EventObjectReference;
  type: EventType;
  reason: string;
  message: string;
  count: number;
  firstTimestamp: Millis;
  lastTimestamp: Millis;
  source: { component: string; host: string };
  reportingController: string;
  reportingInstance: string;
}

/** The strategic merge patch of an existing event (client-go's two-way patch yields these fields). */
export interface EventPatch {
  count: number;
  lastTimestamp: Millis;
  /** Absent when the message is empty (equal to the patch base, so not in the diff). */
  message?: string;
}

export type CorrelateResult =
  | { skip: true }
  | {
      skip: false;
      /** The event to write (a copy; for an update it carries the existing event's name and count). */
      event: EventRecord;
      /** Set when an event with this key exists: PATCH it instead of creating one. */
      patch: EventPatch | undefined;
      /** The cache key to pass to {@link EventCorrelator.updateState} after a successful write. */
      key: string;
    };

/** What the API server answered for a written event. */
export interface ObservedEventState {
  name: string;
  count: number;
  firstTimestamp: Millis;
  resourceVersion: string;
}

export interface EventCorrelatorOptions {
  lruCacheSize?: number;
  spamBurst?: number;
  spamRefillIntervalMs?: number;
  aggregateMaxEvents?: number;
  aggregateIntervalMs?: number;
  /** Names a new event about `objectName` created at `at` (a combined event is a new event). */
  eventName: (objectName: string, at: Millis) => string;
}

/** A least-recently-used map of bounded size (groupcache's `lru.Cache`: Get and Add both refresh). */
export class LruCache<V> {
  private readonly maxEntries: number;
  private readonly entries = new Map<string, V>();

  constructor(maxEntries: number) {
    this.maxEntries = Math.max(1, Math.floor(maxEntries));
  }

  get(key: string): V | undefined {
    const value = this.entries.get(key);
    if (value === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, value);
    return value;
  }

  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done !== true) this.entries.delete(oldest.value);
    }
  }

  get size(): number {
    return this.entries.size;
  }
}

/**
 * A token bucket that starts full (client-go's `NewTokenBucketRateLimiterWithClock` over
 * `x/time/rate`): `burst` tokens, refilled continuously at one token per `refillIntervalMs`.
 * The fill level is kept in milliseconds of refill (one token = `refillIntervalMs`), so with
 * integer times the arithmetic is exact: a token is back after exactly one interval.
 */
export class TokenBucket {
  private readonly refillIntervalMs: number;
  private readonly capacityMs: number;
  private levelMs: number;
  private last: Millis;

  constructor(burst: number, refillIntervalMs: number, now: Millis) {
    this.refillIntervalMs = Math.max(1, refillIntervalMs);
    this.capacityMs = burst * this.refillIntervalMs;
    this.levelMs = this.capacityMs;
    this.last = now;
  }

  /** Takes a token if one is available at `now`. */
  tryAccept(now: Millis): boolean {
    // A clock that went backwards refills nothing (and does not drain either).
    const elapsed = Math.max(0, now - this.last);
    this.last = Math.max(this.last, now);
    this.levelMs = Math.min(this.capacityMs, this.levelMs + elapsed);
    if (this.levelMs < this.refillIntervalMs) return false;
    this.levelMs -= this.refillIntervalMs;
    return true;
  }
}

interface AggregateRecord {
  /** Distinct messages seen in the group; insertion order = age. */
  localKeys: Set<string>;
  lastTimestamp: Millis;
}

interface EventLog {
  count: number;
  firstTimestamp: Millis;
  name: string;
  resourceVersion: string;
}

const keySeparator = '\u0000';

/** `getEventKey`: identical events share it. */
function eventKey(event: EventRecord): string {
  const o = event.involvedObject;
  return [event.source.component, event.source.host, o.kind, o.namespace, o.name, '', o.uid, o.apiVersion, event.type, event.reason, event.message].join(keySeparator);
}

/** `getSpamKey`: the source and the involved object. */
function spamKey(event: EventRecord): string {
  const o = event.involvedObject;
  return [event.source.component, event.source.host, o.kind, o.namespace, o.name, o.uid, o.apiVersion].join(keySeparator);
}

/** `EventAggregatorByReasonFunc`: the group key (everything but the message) and the local key (the message). */
function aggregateKeys(event: EventRecord): { aggregateKey: string; localKey: string } {
  const o = event.involvedObject;
  const aggregateKey = [
    event.source.component,
    event.source.host,
    o.kind,
    o.namespace,
    o.name,
    o.uid,
    o.apiVersion,
    event.type,
    event.reason,
    event.reportingController,
    event.reportingInstance,
  ].join(keySeparator);
  return { aggregateKey, localKey: event.message };
}

export class EventCorrelator {
  private readonly spamBurst: number;
  private readonly spamRefillIntervalMs: number;
  private readonly aggregateMaxEvents: number;
  private readonly aggregateIntervalMs: number;
  private readonly eventName: (objectName: string, at: Millis) => string;
  private readonly spamRecords: LruCache<TokenBucket>;
  private readonly aggregateRecords: LruCache<AggregateRecord>;
  private readonly eventLogs: LruCache<EventLog>;

  constructor(options: EventCorrelatorOptions) {
    const size = options.lruCacheSize ?? maxLruCacheEntries;
    this.spamBurst = options.spamBurst ?? defaultSpamBurst;
    this.spamRefillIntervalMs = options.spamRefillIntervalMs ?? defaultSpamRefillIntervalMs;
    this.aggregateMaxEvents = options.aggregateMaxEvents ?? defaultAggregateMaxEvents;
    this.aggregateIntervalMs = options.aggregateIntervalMs ?? defaultAggregateIntervalMs;
    this.eventName = options.eventName;
    this.spamRecords = new LruCache(size);
    this.aggregateRecords = new LruCache(size);
    this.eventLogs = new LruCache(size);
  }

  /** Filters, aggregates and counts `event` at time `now` (see the file comment). */
  correlate(event: EventRecord, now: Millis): CorrelateResult {
    const aggregated = this.aggregate(event, now);
    const observed = this.observe(aggregated.event, aggregated.key);
    if (this.filter(observed.event, now)) return { skip: true };
    return { skip: false, event: observed.event, patch: observed.patch, key: aggregated.key };
  }

  /** Records what the server answered for the event correlated under `key`. */
  updateState(key: string, state: ObservedEventState): void {
    this.eventLogs.set(key, { ...state });
  }

  private aggregate(event: EventRecord, now: Millis): { event: EventRecord; key: string } {
    const fullKey = eventKey(event);
    const { aggregateKey, localKey } = aggregateKeys(event);
    let record = this.aggregateRecords.get(aggregateKey);
    if (record === undefined || now - record.lastTimestamp > this.aggregateIntervalMs) {
      record = { localKeys: new Set(), lastTimestamp: now };
    }
    record.localKeys.add(localKey);
    record.lastTimestamp = now;
    this.aggregateRecords.set(aggregateKey, record);
    if (record.localKeys.size < this.aggregateMaxEvents) return { event, key: fullKey };

    // Keep the set from growing beyond the maximum: the next distinct message combines again.
    const oldest = record.localKeys.values().next();
    if (oldest.done !== true) record.localKeys.delete(oldest.value);
    const combined: EventRecord = {
      ...event,
      involvedObject: { ...event.involvedObject },
      name: this.eventName(event.involvedObject.name, now),
      count: 1,
      firstTimestamp: now,
      lastTimestamp: now,
      message: combinedEventMessagePrefix + event.message,
    };
    return { event: combined, key: aggregateKey };
  }

  private observe(event: EventRecord, key: string): { event: EventRecord; patch: EventPatch | undefined } {
    const copy: EventRecord = { ...event, involvedObject: { ...event.involvedObject } };
    const last = this.eventLogs.get(key);
    let patch: EventPatch | undefined;
    let resourceVersion = '';
    if (last !== undefined && last.count > 0) {
      copy.name = last.name;
      copy.firstTimestamp = last.firstTimestamp;
      copy.count = last.count + 1;
      resourceVersion = last.resourceVersion;
      patch = { count: copy.count, lastTimestamp: copy.lastTimestamp, ...(copy.message === '' ? {} : { message: copy.message }) };
    }
    this.eventLogs.set(key, { count: copy.count, firstTimestamp: copy.firstTimestamp, name: copy.name, resourceVersion });
    return { event: copy, patch };
  }

  /** True when the event must be skipped: its source has no token left for its object. */
  private filter(event: EventRecord, now: Millis): boolean {
    const key = spamKey(event);
    let bucket = this.spamRecords.get(key);
    if (bucket === undefined) bucket = new TokenBucket(this.spamBurst, this.spamRefillIntervalMs, now);
    const accepted = bucket.tryAccept(now);
    this.spamRecords.set(key, bucket);
    return !accepted;
  }
}
