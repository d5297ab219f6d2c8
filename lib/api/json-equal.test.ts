import { describe, expect, it } from 'vitest';
import { jsonEqual } from './json-equal.ts';

describe('jsonEqual', () => {
  it.each([
    { name: 'equal primitives', a: 'x', b: 'x', want: true },
    { name: 'null and an object', a: null, b: {}, want: false },
    { name: 'objects in another key order', a: { x: 1, y: [1, { z: 2 }] }, b: { y: [1, { z: 2 }], x: 1 }, want: true },
    { name: 'an undefined key and a missing key', a: { x: 1, y: undefined }, b: { x: 1 }, want: true },
    { name: 'different values', a: { x: 1 }, b: { x: 2 }, want: false },
    { name: 'an extra key', a: { x: 1 }, b: { x: 1, y: null }, want: false },
    { name: 'arrays of another length', a: [1, 2], b: [1, 2, 3], want: false },
    { name: 'an array and an object', a: [], b: {}, want: false },
    { name: 'arrays in another order', a: [1, 2], b: [2, 1], want: false },
  ])('compares $name', ({ a, b, want }) => {
    expect(jsonEqual(a, b)).toBe(want);
    expect(jsonEqual(b, a)).toBe(want);
  });
});
