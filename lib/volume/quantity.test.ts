import { describe, expect, it } from 'vitest';
import { formatBinaryQuantity, isInvalidQuantityError, parseQuantity } from './quantity.ts';

describe('parseQuantity', () => {
  it.each([
    { value: '1Gi', want: 2 ** 30 },
    { value: '1.5Gi', want: 1.5 * 2 ** 30 },
    { value: '10G', want: 10e9 },
    { value: '500M', want: 500e6 },
    { value: '100', want: 100 },
    { value: '1e3', want: 1000 },
    { value: '0', want: 0 },
  ])('parses $value', ({ value, want }) => {
    expect(parseQuantity(value)).toBe(want);
  });

  it('rejects garbage with an error naming the input', () => {
    let caught: unknown;
    try {
      parseQuantity('ten gigs');
    } catch (err) {
      caught = err;
    }
    expect(isInvalidQuantityError(caught)).toBe(true);
    expect(String(caught)).toContain('"ten gigs"');
  });
});

describe('formatBinaryQuantity', () => {
  it('uses the largest exact binary suffix', () => {
    expect(formatBinaryQuantity(2 ** 30)).toBe('1Gi');
    expect(formatBinaryQuantity(1536 * 2 ** 20)).toBe('1536Mi');
    expect(formatBinaryQuantity(100)).toBe('100');
  });
});
