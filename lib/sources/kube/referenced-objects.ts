/**
 * ReferencedObjectCache: the PersistentVolumeClaims, ConfigMaps and Secrets this node's pods
 * reference (and, in managed mode, the PersistentVolumes of their claims), fetched with GETs by
 * name and kept in a short-lived cache.
 *
 * Why GETs and not informers: watching every namespace's secrets is far too broad (memory, and
 * permission to read every secret in the cluster), and even per-namespace informers would pull
 * in every unrelated secret of those namespaces (Helm release secrets are large). A GET by name
 * needs only `get` on the named objects, which is exactly what the node authorizer grants a
 * kubelet; the kubelet's own `Cache` change-detection strategy and its PVC lookups work the same
 * way. The cost is that a change is seen after at most `ttlMs`, as with that strategy.
 *
 * Refresh rules, per referenced object:
 * - fetched as soon as it becomes referenced, and again on {@link ReferencedObjectCache.refresh}
 *   (the source calls it when a pod that references the object is added, as the kubelet
 *   invalidates its cache when a pod registers);
 * - a settled object (found, and for a claim: Bound) is fetched again `ttlMs` after its last
 *   fetch;
 * - anything unsettled (a failed GET, a 404, a claim not Bound yet) is retried with backoff, so
 *   a claim that becomes bound or a secret that gets created is noticed quickly;
 * - at most `maxConcurrent` GETs run at once (a node start references many objects at once).
 *
 * Failure rules: a failed GET (anything but 404) keeps the last fetched version, if any, and is
 * listed by {@link ReferencedObjectCache.errors} until a GET succeeds. A 404 is an answer: the
 * object is absent, and that is not an error. Objects no longer referenced are dropped at once.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Clock, TimerHandle } from '../../clock/clock.ts';
import type { ConfigMap, PersistentVolume, PersistentVolumeClaim, Secret } from '../../volume/k8s-types.ts';
import { describeApiError, KubeApiRequestError } from '../../kube-client/api-errors.ts';
import type { Backoff } from '../../kube-client/backoff.ts';
import { nextBackoffMs } from '../../kube-client/backoff.ts';
import type { ObjectRef } from './object-references.ts';
import { refKey, refPath } from './object-references.ts';
import type { SourceError } from '../source.ts';

export type ReferencedObject = PersistentVolumeClaim | PersistentVolume | ConfigMap | Secret;

export interface ReferencedObjectCacheOptions {
  clock: Clock;
  /** GETs one object: resolves `undefined` for a 404, rejects for any other failure. */
  fetch: (ref: ObjectRef) => Promise<ReferencedObject | undefined>;
  /** How long a settled object is served before it is fetched again. */
  ttlMs: number;
  /** Retry delays for unsettled objects; the cap should not exceed `ttlMs`. */
  retry: Backoff;
  /** GETs in flight at once; at least 1. */
  maxConcurrent: number;
  /**
   * Called after a fetch that changed an object (`valueChanged`) or its error state
   * (`errorChanged`), and after the first fetch of each object (`firstFetch`), whatever it found.
   */
  onUpdate: (ref: ObjectRef, change: { valueChanged: boolean; errorChanged: boolean; firstFetch: boolean }) => void;
}

interface Entry {
  readonly ref: ObjectRef;
  readonly key: string;
  value: ReferencedObject | undefined;
  /** The message of the last fetch if it failed; undefined after a successful fetch. */
  error: string | undefined;
  /** Completed fetches (successful or not). */
  attempts: number;
  /** The current retry delay; 0 while settled. */
  retryMs: number;
  timer: TimerHandle | undefined;
  queued: boolean;
  inFlight: boolean;
  /** A refresh was requested while a fetch was in flight: fetch again when it ends. */
  again: boolean;
  /** Callers waiting for the next fetch that starts; and for the one in flight. */
  waitingForNext: (() => void)[];
  waitingForCurrent: (() => void)[];
}

export class ReferencedObjectCache {
  private readonly options: ReferencedObjectCacheOptions;
  private readonly entries = new Map<string, Entry>();
  private readonly queue: Entry[] = [];
  private active = 0;
  private stopped = false;

  constructor(options: ReferencedObjectCacheOptions) {
    this.options = { ...options, maxConcurrent: Math.max(1, options.maxConcurrent) };
  }

  /**
   * Makes `refs` the referenced set: new references are fetched now, references not in `refs`
   * are dropped (with their timers and errors). Returns whether anything was dropped.
   */
  setReferences(refs: Iterable<ObjectRef>): boolean {
    if (this.stopped) return false;
    const wanted = new Map<string, ObjectRef>();
    for (const ref of refs) wanted.set(refKey(ref), ref);
    let dropped = false;
    for (const [key, entry] of this.entries) {
      if (wanted.has(key)) continue;
      this.drop(entry);
      dropped = true;
    }
    for (const [key, ref] of wanted) {
      if (this.entries.has(key)) continue;
      const entry: Entry = {
        ref,
        key,
        value: undefined,
        error: undefined,
        attempts: 0,
        retryMs: 0,
        timer: undefined,
        queued: false,
        inFlight: false,
        again: false,
        waitingForNext: [],
        waitingForCurrent: [],
      };
      this.entries.set(key, entry);
      this.enqueue(entry);
    }
    return dropped;
  }

  /**
   * Fetches these references again now. Unreferenced ones are ignored, and so are those whose
   * first fetch has not completed yet (it is already as fresh as a new one would be).
   */
  refresh(refs: Iterable<ObjectRef>): void {
    for (const ref of refs) {
      const entry = this.entries.get(refKey(ref));
      if (entry !== undefined && entry.attempts > 0) this.enqueue(entry);
    }
  }

  /** Fetches every referenced object again; resolves when all those fetches ended. */
  async refreshAll(): Promise<void> {
    await Promise.all([...this.entries.values()].map((entry) => this.nextFetch(entry)));
  }

  /**
   * GETs one object now. For a referenced object the result also updates the cache, and a
   * failure rejects with the same message its source error has. An unreferenced object is
   * fetched once and not cached. Resolves `undefined` when the object does not exist; rejects
   * with {@link KubeApiRequestError} when the GET fails.
   */
  async fetchNow(ref: ObjectRef): Promise<ReferencedObject | undefined> {
    const entry = this.entries.get(refKey(ref));
    if (entry === undefined) {
      try {
        return await this.options.fetch(ref);
      } catch (err) {
        const info = describeApiError(err);
        throw new KubeApiRequestError(`${describeRef(ref)}: GET failed: ${info.message}`, info.status, err);
      }
    }
    await this.nextFetch(entry);
    if (entry.error !== undefined) throw new KubeApiRequestError(entry.error, undefined, undefined);
    return entry.value;
  }

  /** The cached object; undefined when absent, not fetched yet, or not referenced. */
  get(ref: ObjectRef): ReferencedObject | undefined {
    return this.entries.get(refKey(ref))?.value;
  }

  /**
   * The cached object once its first fetch has ended (at once when it has, or when `ref` is not
   * referenced): what {@link ReferencedObjectCache.get} answers then. A reference whose first
   * GET is still queued or in flight is waited for, so that "not fetched yet" is never answered
   * as "absent" (the kubelet's configmap and secret managers wait for their cache the same way).
   * Starts no fetch of its own.
   */
  async getWhenFetched(ref: ObjectRef): Promise<ReferencedObject | undefined> {
    const entry = this.entries.get(refKey(ref));
    if (entry === undefined || entry.attempts > 0 || this.stopped) return entry?.value;
    await new Promise<void>((resolve) => {
      if (entry.inFlight) entry.waitingForCurrent.push(resolve);
      else {
        entry.waitingForNext.push(resolve);
        this.enqueue(entry);
      }
    });
    return this.get(ref);
  }

  /** Whether `ref` is currently referenced (and therefore cached). */
  has(ref: ObjectRef): boolean {
    return this.entries.has(refKey(ref));
  }

  /** True when every referenced object has had at least one fetch complete. */
  allFetchedOnce(): boolean {
    for (const entry of this.entries.values()) if (entry.attempts === 0) return false;
    return true;
  }

  /** One error per referenced object whose last GET failed, by path. */
  errors(): SourceError[] {
    const out: SourceError[] = [];
    for (const entry of this.entries.values()) {
      if (entry.error !== undefined) out.push({ file: refPath(entry.ref), message: entry.error });
    }
    return out;
  }

  /** Cancels timers and queued fetches; fetches in flight finish unobserved. Waiters are released. */
  stop(): void {
    this.stopped = true;
    for (const entry of this.entries.values()) this.drop(entry);
    this.queue.length = 0;
  }

  // -------------------------------------------------------------------------------------------

  private nextFetch(entry: Entry): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.stopped || this.entries.get(entry.key) !== entry) {
        resolve();
        return;
      }
      entry.waitingForNext.push(resolve);
      this.enqueue(entry);
    });
  }

  private drop(entry: Entry): void {
    if (entry.timer !== undefined) this.options.clock.clearTimeout(entry.timer);
    entry.timer = undefined;
    this.entries.delete(entry.key);
    for (const resolve of entry.waitingForNext.splice(0)) resolve();
  }

  private enqueue(entry: Entry): void {
    if (this.stopped || this.entries.get(entry.key) !== entry) return;
    if (entry.inFlight) {
      entry.again = true;
      return;
    }
    if (entry.queued) return;
    if (entry.timer !== undefined) this.options.clock.clearTimeout(entry.timer);
    entry.timer = undefined;
    entry.queued = true;
    this.queue.push(entry);
    this.pump();
  }

  private pump(): void {
    while (!this.stopped && this.active < this.options.maxConcurrent) {
      const entry = this.queue.shift();
      if (entry === undefined) return;
      entry.queued = false;
      if (this.entries.get(entry.key) !== entry) continue;
      void this.run(entry);
    }
  }

  private async run(entry: Entry): Promise<void> {
    this.active += 1;
    entry.inFlight = true;
    entry.waitingForCurrent = entry.waitingForNext;
    entry.waitingForNext = [];
    let outcome: { ok: true; value: ReferencedObject | undefined } | { ok: false; message: string };
    try {
      outcome = { ok: true, value: await this.options.fetch(entry.ref) };
    } catch (err) {
      outcome = { ok: false, message: describeApiError(err).message };
    }
    this.active -= 1;
    entry.inFlight = false;
    try {
      if (!this.stopped && this.entries.get(entry.key) === entry) this.apply(entry, outcome);
    } finally {
      for (const resolve of entry.waitingForCurrent.splice(0)) resolve();
      this.pump();
    }
  }

  private apply(entry: Entry, outcome: { ok: true; value: ReferencedObject | undefined } | { ok: false; message: string }): void {
    entry.attempts += 1;
    const before = { value: entry.value, error: entry.error };
    let settled: boolean;
    if (outcome.ok) {
      entry.value = outcome.value;
      entry.error = undefined;
      settled = outcome.value !== undefined && isSettled(outcome.value);
    } else {
      const kept = entry.value === undefined ? 'not available until a GET succeeds' : 'keeping the last fetched version';
      entry.error = `${describeRef(entry.ref)}: GET failed: ${outcome.message} (${kept}; retrying)`;
      settled = false;
    }
    if (entry.again) {
      entry.again = false;
      this.enqueue(entry);
    } else {
      entry.retryMs = settled ? 0 : nextBackoffMs(this.options.retry, entry.retryMs);
      const delay = settled ? this.options.ttlMs : entry.retryMs;
      entry.timer = this.options.clock.setTimeout(() => {
        entry.timer = undefined;
        this.enqueue(entry);
      }, delay);
    }
    const valueChanged = !isDeepStrictEqual(before.value, entry.value);
    const errorChanged = before.error !== entry.error;
    const firstFetch = entry.attempts === 1;
    if (valueChanged || errorChanged || firstFetch) this.options.onUpdate(entry.ref, { valueChanged, errorChanged, firstFetch });
  }
}

/** A claim is settled once Bound (until then the volume manager waits for it); others once found. */
function isSettled(object: ReferencedObject): boolean {
  // Only claims and PVs have a spec; the converters set `kind` (api-objects.ts).
  if (!('spec' in object) || object.kind === 'PersistentVolume') return true;
  return object.status?.phase === 'Bound';
}

function describeRef(ref: ObjectRef): string {
  return ref.namespace === '' ? `${ref.kind} ${ref.name}` : `${ref.kind} ${ref.namespace}/${ref.name}`;
}
