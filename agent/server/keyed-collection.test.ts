import { describe, expect, it } from 'vitest';
import {
  findByKey,
  firstOfEachKey,
  mergeByKey,
  positionsOf,
  reconcileKeyed,
  reuseList,
  reuseValue,
  uniqueSortedByKey,
  type KeyedSource,
} from './keyed-collection.ts';

interface Item {
  key: string;
  value: number;
}

interface Source {
  id: string;
  n: number;
}

const key = (item: Item): string => item.key;
const src = (id: string, n: number): Source => ({ id, n });
let made = 0;
const how: KeyedSource<Source, Item> = {
  sourceKey: (s) => s.id,
  matches: (item, s) => item.value === s.n,
  make: (s) => {
    made++;
    return { key: s.id, value: s.n };
  },
  itemKey: key,
};

/** A previous collection built from `sources`, with its positions. */
function built(sources: Source[]): { items: Item[]; positions: ReadonlyMap<string, number> } {
  return reconcileKeyed([], new Map(), sources, how);
}

describe('reconcileKeyed', () => {
  it('builds a collection in key order from sources in any order, keeping the first source of a key', () => {
    const { items, positions } = built([src('c', 3), src('a', 1), src('b', 2), src('a', 9)]);

    expect(items).toEqual([
      { key: 'a', value: 1 },
      { key: 'b', value: 2 },
      { key: 'c', value: 3 },
    ]);
    expect([...positions]).toEqual([
      ['a', 0],
      ['b', 1],
      ['c', 2],
    ]);
  });

  it('returns the previous array and positions, making nothing, when no source changed', () => {
    // Arrange
    const sources = [src('a', 1), src('b', 2)];
    const prev = built(sources);
    made = 0;

    // Act
    const next = reconcileKeyed(prev.items, prev.positions, [...sources].reverse(), how);

    // Assert
    expect(next.items).toBe(prev.items);
    expect(next.positions).toBe(prev.positions);
    expect(made).toBe(0);
  });

  it('copies the array once and keeps every unchanged item object and the positions when only items changed', () => {
    const prev = built([src('a', 1), src('b', 2), src('c', 3)]);
    made = 0;

    const next = reconcileKeyed(prev.items, prev.positions, [src('a', 1), src('b', 20), src('c', 3)], how);

    expect(next.items).not.toBe(prev.items);
    expect(next.items[0]).toBe(prev.items[0]);
    expect(next.items[1]).toEqual({ key: 'b', value: 20 });
    expect(next.items[2]).toBe(prev.items[2]);
    expect(next.positions).toBe(prev.positions);
    expect(made).toBe(1);
  });

  it('merges new keys in key order and drops keys that are gone, with new positions', () => {
    const prev = built([src('b', 2), src('d', 4)]);

    const next = reconcileKeyed(prev.items, prev.positions, [src('e', 5), src('d', 4), src('a', 1)], how);

    expect(next.items.map(key)).toEqual(['a', 'd', 'e']);
    expect(next.items[1]).toBe(prev.items[1]);
    expect([...next.positions]).toEqual([
      ['a', 0],
      ['d', 1],
      ['e', 2],
    ]);
  });

  it('orders keys by code units, not by locale (as the normalized snapshot does)', () => {
    const { items } = built([src('b', 1), src('B', 2), src('a', 3)]);

    expect(items.map(key)).toEqual(['B', 'a', 'b']);
  });
});

describe('mergeByKey', () => {
  it.each([
    { name: 'two interleaved lists', a: ['a', 'c'], b: ['b', 'd'], want: ['a', 'b', 'c', 'd'] },
    { name: 'an empty second list (a copy of the first)', a: ['a'], b: [], want: ['a'] },
    { name: 'an empty first list', a: [], b: ['a', 'b'], want: ['a', 'b'] },
  ])('merges $name', ({ a, b, want }) => {
    const items = (keys: string[]): Item[] => keys.map((k) => ({ key: k, value: 0 }));
    const first = items(a);

    const merged = mergeByKey(first, items(b), key);

    expect(merged.map(key)).toEqual(want);
    expect(merged).not.toBe(first);
  });
});

describe('small lists and values', () => {
  it.each([
    { name: 'equal items (by JSON)', fresh: [{ key: 'a', value: 1 }], reused: true },
    { name: 'a changed item', fresh: [{ key: 'a', value: 2 }], reused: false },
    { name: 'another length', fresh: [], reused: false },
  ])('reuseList keeps the previous list unless it differs: $name', ({ fresh, reused }) => {
    const prev = [{ key: 'a', value: 1 }];

    expect(reuseList(prev, fresh)).toBe(reused ? prev : fresh);
  });

  it('reuseValue keeps a JSON-equal previous value and takes a fresh one otherwise', () => {
    const prev = { a: 1, b: [1, 2] };

    expect(reuseValue(prev, { b: [1, 2], a: 1 })).toBe(prev);
    const changed = { a: 2, b: [1, 2] };
    expect(reuseValue(prev, changed)).toBe(changed);
    expect(reuseValue(undefined, changed)).toBe(changed);
  });

  it('firstOfEachKey keeps the first item of each key in order; uniqueSortedByKey sorts them too', () => {
    const items = [
      { key: 'b', value: 1 },
      { key: 'a', value: 2 },
      { key: 'b', value: 3 },
    ];

    expect(firstOfEachKey(items, key)).toEqual([items[0], items[1]]);
    expect(uniqueSortedByKey(items, key)).toEqual([items[1], items[0]]);
  });

  it.each([
    { wanted: 'a', want: 0 },
    { wanted: 'c', want: 1 },
    { wanted: 'e', want: 2 },
    { wanted: 'b', want: null },
    { wanted: 'z', want: null },
  ])('findByKey finds $wanted in a sorted list by binary search', ({ wanted, want }) => {
    const items = ['a', 'c', 'e'].map((k, value) => ({ key: k, value }));

    expect(findByKey(items, wanted, key)).toBe(want === null ? undefined : items[want]);
  });

  it('positionsOf indexes items by key', () => {
    expect([...positionsOf([{ key: 'x', value: 0 }, { key: 'y', value: 0 }], key)]).toEqual([
      ['x', 0],
      ['y', 1],
    ]);
  });
});
