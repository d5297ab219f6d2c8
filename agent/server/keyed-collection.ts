/**
 * Keyed collections kept in key order (the snapshot's normalized form) and rebuilt with as little
 * allocation as possible: what did not change keeps its object, and a collection none of whose
 * items changed keeps its array. Generic: nothing here knows what the items are.
 *
 * Keys are ordered by {@link compareKeys} (UTF-16 code units), the order `normalizeSnapshot`
 * produces, so a collection built here is already normalized.
 */
import { jsonEqual } from '../../lib/api/json-equal.ts';
import { compareKeys, sortByKey } from '../../lib/api/normalize-snapshot.ts';

// TYPES

/** Item positions of a keyed collection (sorted by key) by key. */
export type Positions = ReadonlyMap<string, number>;

/** A keyed collection in key order and its positions. */
export interface Keyed<T> {
  items: T[];
  positions: Positions;
}

/** How the items of one collection are made from their sources and recognised as unchanged. */
export interface KeyedSource<S, T> {
  /** The key of the item a source makes, without making it. */
  sourceKey: (source: S) => string;
  /** Whether `make(source)` would equal `item` (answered without allocating). */
  matches: (item: T, source: S) => boolean;
  make: (source: S) => T;
  itemKey: (item: T) => string;
}

// FUNCTIONS

/** The position of every item of `items` by key. */
export function positionsOf<T>(items: readonly T[], key: (item: T) => string): Map<string, number> {
  const positions = new Map<string, number>();
  items.forEach((item, i) => positions.set(key(item), i));
  return positions;
}

/** Two lists sorted by key merged into one sorted list (keys are distinct across them). */
export function mergeByKey<T>(a: readonly T[], b: readonly T[], key: (item: T) => string): T[] {
  if (b.length === 0) return [...a];
  const out: T[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (compareKeys(key(a[i] as T), key(b[j] as T)) <= 0) out.push(a[i++] as T);
    else out.push(b[j++] as T);
  }
  while (i < a.length) out.push(a[i++] as T);
  while (j < b.length) out.push(b[j++] as T);
  return out;
}

/**
 * The collection for the current `sources`, reusing `prev` (sorted by key, indexed by
 * `positions`):
 * - every source whose previous item matches keeps that item object;
 * - when only items changed, the previous array is copied once (or kept when none changed) and
 *   the previous positions are kept;
 * - when keys came or went, the kept items and the new ones are merged in key order.
 * A key seen twice keeps its first source.
 */
export function reconcileKeyed<S, T>(prev: readonly T[], positions: Positions, sources: Iterable<S>, how: KeyedSource<S, T>): Keyed<T> {
  const { sourceKey, matches, make, itemKey } = how;
  let items: T[] | null = null;
  const seen = new Uint8Array(prev.length);
  let seenCount = 0;
  let added: T[] | null = null;
  let addedKeys: Set<string> | null = null;
  for (const source of sources) {
    const key = sourceKey(source);
    const pos = positions.get(key);
    if (pos === undefined) {
      addedKeys ??= new Set();
      if (addedKeys.has(key)) continue;
      addedKeys.add(key);
      (added ??= []).push(make(source));
      continue;
    }
    if (seen[pos] === 1) continue;
    seen[pos] = 1;
    seenCount++;
    if (!matches(prev[pos] as T, source)) (items ??= prev.slice())[pos] = make(source);
  }
  if (added === null && seenCount === prev.length) {
    return { items: items ?? (prev as T[]), positions };
  }
  const current = items ?? prev;
  const kept = current.filter((_, i) => seen[i] === 1);
  const merged = mergeByKey(kept, sortByKey(added ?? [], itemKey), itemKey);
  return { items: merged, positions: positionsOf(merged, itemKey) };
}

/** `fresh` when it differs from `prev` (item by item, JSON-equal counts as equal), else `prev`. For small lists. */
export function reuseList<T>(prev: T[], fresh: T[]): T[] {
  if (prev.length !== fresh.length) return fresh;
  for (let i = 0; i < prev.length; i++) {
    if (prev[i] !== fresh[i] && !jsonEqual(prev[i], fresh[i])) return fresh;
  }
  return prev;
}

/** `fresh` unless it is JSON-equal to `prev`. */
export function reuseValue<T>(prev: T | undefined, fresh: T): T {
  return prev !== undefined && jsonEqual(prev, fresh) ? prev : fresh;
}

/** The first item of each key, in their order. */
export function firstOfEachKey<T>(items: readonly T[], key: (item: T) => string): T[] {
  const seen = new Set<string>();
  return items.filter((item) => {
    const k = key(item);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/** The distinct items of `items` by key (the first of each), in key order. */
export function uniqueSortedByKey<T>(items: readonly T[], key: (item: T) => string): T[] {
  return sortByKey(firstOfEachKey(items, key), key);
}

/** The item of `items` (sorted by `key`) whose key is `wanted`, or undefined (binary search). */
export function findByKey<T>(items: readonly T[], wanted: string, key: (item: T) => string): T | undefined {
  let lo = 0;
  let hi = items.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const item = items[mid] as T;
    const order = compareKeys(key(item), wanted);
    if (order === 0) return item;
    if (order < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return undefined;
}
