/**
 * Composes consecutive stream deltas into one, so a burst costs one `applyDelta` instead of one
 * per delta. `applyDelta` normalizes the whole snapshot (a pass over every pod and volume, a few
 * ms at 10,000 volumes); the dashboard only needs the folded state once per flush, so folding
 * every delta of a network chunk one by one was the largest task of a burst.
 *
 * Contract: for a base snapshot `s` and deltas `d1 … dn` that follow each other from `s.seq`
 * (`d1.fromSeq === s.seq`, `d(i+1).fromSeq === di.seq`, each advancing), and every `di` accepted
 * by {@link canCompose},
 * `applyDelta(s, compose(d1 … dn))` deep-equals `applyDelta(…applyDelta(s, d1)…, dn)`:
 * - keyed collections and `podErrors`: per key, the last change wins (within one delta an upsert
 *   wins over a removal of the same key, as in `applyDelta`);
 * - `set`: later values win; `set.reconstruction` fields are merged in order, as `applyDelta`
 *   spreads them;
 * - ring buffers: appends are concatenated and `length` is the length the sequential fold ends
 *   with (`min(length, previous + appended)` per delta, starting from the base's length), so the
 *   single trim keeps exactly the items the sequential trims keep.
 * The composer does not check sequence numbers; the caller does (see stream-batcher.ts).
 */
import {
  actualVolumeKey,
  desiredPodKey,
  driverKey,
  operationKey,
  reconstructedVolumeKey,
  sourceErrorKey,
  type Delta,
  type DeltaSet,
  type KeyedChange,
  type RingChange,
  type Snapshot,
} from '../api/index.ts';

/** Marks a key whose last change was a removal. */
const REMOVED = Symbol('removed');

type KeyedPart = 'desiredPods' | 'actualVolumes' | 'operations' | 'operationHistory' | 'reconstructionVolumes' | 'sourceErrors' | 'drivers';
type RingPart = 'recentEvents' | 'audit';

type ItemOf<P extends KeyedPart> = NonNullable<NonNullable<Delta[P]>['upsert']>[number];

const KEYS: { readonly [P in KeyedPart]: (item: ItemOf<P>) => string } = {
  desiredPods: desiredPodKey,
  actualVolumes: actualVolumeKey,
  operations: operationKey,
  operationHistory: operationKey,
  reconstructionVolumes: reconstructedVolumeKey,
  sourceErrors: sourceErrorKey,
  drivers: driverKey,
};

const KEYED_PARTS = Object.keys(KEYS) as KeyedPart[];

/**
 * False for a delta whose keyed upserts repeat a key. `applyDelta` would keep both items (the
 * agent never sends that; the snapshot schema forbids it); composing would keep one, so such a
 * delta must be applied on its own.
 */
export function canCompose(delta: Delta): boolean {
  for (const part of KEYED_PARTS) {
    const upsert = delta[part]?.upsert;
    if (upsert === undefined || upsert.length < 2) continue;
    const key = KEYS[part] as (item: unknown) => string;
    const seen = new Set<string>();
    for (const item of upsert) {
      const k = key(item);
      if (seen.has(k)) return false;
      seen.add(k);
    }
  }
  return true;
}

/** Deltas accumulated after one base snapshot; see the module comment. */
export interface DeltaComposer {
  /** The `seq` the composed delta leads to (the base's while empty). */
  readonly seq: number;
  /** How many deltas were added. */
  readonly size: number;
  /** Adds the delta that follows the previous one (or the base). */
  add(delta: Delta): void;
  /** The one delta equivalent to all added ones; `null` when none was added. */
  compose(): Delta | null;
}

/** A composer for deltas that follow `base`. */
export function createDeltaComposer(base: Snapshot): DeltaComposer {
  let seq = base.seq;
  let size = 0;
  let set: DeltaSet | null = null;
  const keyed = new Map<KeyedPart, Map<string, unknown>>();
  let podErrors: Map<string, string[] | typeof REMOVED> | null = null;
  const rings: Record<RingPart, { append: unknown[]; length: number } | null> = { recentEvents: null, audit: null };
  const ringBase: Record<RingPart, number> = { recentEvents: base.recentEvents.length, audit: base.audit.length };

  const mergeSet = (next: DeltaSet): void => {
    const merged: DeltaSet = { ...set, ...next };
    // `applyDelta` spreads `set.reconstruction` over the current status, so fields merge in order.
    if (set?.reconstruction !== undefined && next.reconstruction !== undefined) {
      merged.reconstruction = { ...set.reconstruction, ...next.reconstruction };
    }
    set = merged;
  };

  const addKeyed = (part: KeyedPart, change: KeyedChange<unknown>): void => {
    let changes = keyed.get(part);
    if (changes === undefined) {
      changes = new Map();
      keyed.set(part, changes);
    }
    // Removals first, then upserts: within one delta an upsert of a removed key wins.
    for (const k of change.remove ?? []) changes.set(k, REMOVED);
    const key = KEYS[part] as (item: unknown) => string;
    for (const item of change.upsert ?? []) changes.set(key(item), item);
  };

  const addRing = (part: RingPart, change: RingChange<unknown>): void => {
    const current = rings[part];
    const before = current === null ? ringBase[part] : current.length;
    const append = current === null ? [...change.append] : current.append;
    if (current !== null) for (const item of change.append) append.push(item);
    rings[part] = { append, length: Math.min(change.length, before + change.append.length) };
  };

  return {
    get seq() {
      return seq;
    },
    get size() {
      return size;
    },
    add(delta) {
      seq = delta.seq;
      size++;
      if (delta.set !== undefined) mergeSet(delta.set);
      for (const part of KEYED_PARTS) {
        const change = delta[part];
        if (change !== undefined) addKeyed(part, change);
      }
      if (delta.podErrors !== undefined) {
        podErrors ??= new Map();
        for (const uid of delta.podErrors.remove ?? []) podErrors.set(uid, REMOVED);
        for (const [uid, errors] of Object.entries(delta.podErrors.upsert ?? {})) podErrors.set(uid, errors);
      }
      if (delta.recentEvents !== undefined) addRing('recentEvents', delta.recentEvents);
      if (delta.audit !== undefined) addRing('audit', delta.audit);
    },
    compose() {
      if (size === 0) return null;
      const out: Delta = { fromSeq: base.seq, seq };
      if (set !== null) out.set = set;
      for (const [part, changes] of keyed) {
        const upsert: unknown[] = [];
        const remove: string[] = [];
        for (const [k, value] of changes) {
          if (value === REMOVED) remove.push(k);
          else upsert.push(value);
        }
        Object.assign(out, { [part]: { ...(upsert.length > 0 ? { upsert } : {}), ...(remove.length > 0 ? { remove } : {}) } });
      }
      if (podErrors !== null) {
        const upserts: [string, string[]][] = [];
        const remove: string[] = [];
        for (const [uid, value] of podErrors) {
          if (value === REMOVED) remove.push(uid);
          else upserts.push([uid, value]);
        }
        // fromEntries (not assignment), so a pod UID such as `__proto__` stays an own key.
        out.podErrors = { ...(upserts.length > 0 ? { upsert: Object.fromEntries(upserts) } : {}), ...(remove.length > 0 ? { remove } : {}) };
      }
      for (const part of ['recentEvents', 'audit'] as const) {
        const ring = rings[part];
        if (ring !== null) Object.assign(out, { [part]: ring });
      }
      return out;
    },
  };
}
