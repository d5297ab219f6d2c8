import { describe, expect, it } from 'vitest';
import { formatFieldPath, maxDocumentDepth, normalizeDocument } from './manifest-document.ts';

describe('normalizeDocument', () => {
  it('drops null-valued keys but keeps nulls inside lists', () => {
    expect(normalizeDocument({ a: null, b: { c: null, d: 1 }, e: [null, 2] })).toEqual({ value: { b: { d: 1 }, e: [null, 2] }, problems: [] });
  });

  it('reports NUL in values and keys with their paths', () => {
    const { problems } = normalizeDocument({ metadata: { name: 'a\0' }, data: { ['k\0']: 'v' }, list: ['x', 'y\0'] });
    expect(problems).toEqual([
      { path: ['metadata', 'name'], message: 'must not contain NUL' },
      { path: ['data'], message: 'keys must not contain NUL' },
      { path: ['list', 1], message: 'must not contain NUL' },
    ]);
  });

  it('rejects a __proto__ key without letting it reach a prototype', () => {
    const { value, problems } = normalizeDocument(JSON.parse('{"spec": {"__proto__": {"polluted": true}}}'));
    expect(problems).toEqual([{ path: ['spec', '__proto__'], message: 'is not an allowed key' }]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf((value as { spec: object }).spec)).toBe(Object.prototype);
  });

  it('rejects documents nested deeper than the limit', () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i <= maxDocumentDepth; i++) deep = [deep];
    expect(normalizeDocument(deep).problems).toHaveLength(1);
  });

  it('does not change its input', () => {
    const input = { a: null, b: 1 };
    normalizeDocument(input);
    expect(input).toEqual({ a: null, b: 1 });
  });
});

describe('formatFieldPath', () => {
  it.each([
    { path: [], text: '' },
    { path: ['spec', 'volumes', 0, 'name'], text: 'spec.volumes[0].name' },
    { path: ['metadata', 'annotations', 'example.com/x'], text: 'metadata.annotations["example.com/x"]' },
    { path: ['data', '../x'], text: 'data["../x"]' },
  ])('formats $path as "$text"', ({ path, text }) => {
    expect(formatFieldPath(path)).toBe(text);
  });
});
