import { describe, expect, it } from 'vitest';
import { firstDifference } from './first-difference.ts';

const fmt = (path: string, a: unknown, b: unknown): string => `${path}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;

describe('firstDifference', () => {
  it('is null for equal values whatever the key order', () => {
    expect(firstDifference({ a: 1, b: [1, { c: 'x' }] }, { b: [1, { c: 'x' }], a: 1 }, fmt)).toBeNull();
  });
  it('names the first differing path in sorted key order', () => {
    expect(firstDifference({ z: 1, a: { b: 2 } }, { z: 2, a: { b: 3 } }, fmt)).toBe('$.a.b: 2 vs 3');
  });
  it('reports a missing array element and a type change', () => {
    expect(firstDifference([1, 2], [1], fmt)).toBe('$[1]: 2 vs undefined');
    expect(firstDifference({ a: [] }, { a: {} }, fmt)).toBe('$.a: [] vs {}');
  });
});
