import { describe, expect, it } from 'vitest';
import { formatGoDuration, formatGoTime, goQuote, goSlice } from './go-format.ts';

describe('formatGoDuration', () => {
  it.each([
    { ms: 0, want: '0s' },
    { ms: 500, want: '500ms' },
    { ms: 1000, want: '1s' },
    { ms: 1500, want: '1.5s' },
    { ms: 2000, want: '2s' },
    { ms: 64_000, want: '1m4s' },
    { ms: 122_000, want: '2m2s' },
    { ms: 123_000, want: '2m3s' },
    { ms: 600_000, want: '10m0s' },
    { ms: 3_600_000, want: '1h0m0s' },
    { ms: 0.5, want: '500µs' },
    { ms: -500, want: '-500ms' },
  ])('prints $ms ms as $want', ({ ms, want }) => {
    expect(formatGoDuration(ms)).toBe(want);
  });
});

describe('formatGoTime', () => {
  it('prints UTC with trimmed fractional seconds', () => {
    expect(formatGoTime(Date.UTC(2024, 0, 2, 3, 4, 5, 500))).toBe('2024-01-02 03:04:05.5 +0000 UTC');
    expect(formatGoTime(Date.UTC(2024, 11, 31, 23, 59, 59, 0))).toBe('2024-12-31 23:59:59 +0000 UTC');
    expect(formatGoTime(Date.UTC(2024, 5, 1, 0, 0, 0, 123))).toBe('2024-06-01 00:00:00.123 +0000 UTC');
  });
});

describe('goQuote and goSlice', () => {
  it('quotes like strconv.Quote', () => {
    expect(goQuote('a"b\\c\n')).toBe('"a\\"b\\\\c\\n"');
    expect(goQuote('kubernetes.io/csi/d^h')).toBe('"kubernetes.io/csi/d^h"');
    expect(goQuote('tab\there\r\u0001\u007f')).toBe('"tab\\there\\r\\x01\\x7f"');
    expect(goQuote('')).toBe('""');
    expect(goQuote('données-✓')).toBe('"données-✓"');
  });
  it('prints slices with spaces', () => {
    expect(goSlice(['a', 'b'])).toBe('[a b]');
    expect(goSlice([])).toBe('[]');
  });
});
