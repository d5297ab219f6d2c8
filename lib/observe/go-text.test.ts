import { describe, expect, it } from 'vitest';
import { formatGoDuration, formatGoTime, goQuote } from '../volume/util/go-format.ts';
import { parseGoDuration, parseGoTime, parseRfc3339, readGoQuoted, unquoteGoString } from './go-text.ts';

describe('parseGoDuration', () => {
  it.each([
    { text: '500ms', ms: 500 },
    { text: '1s', ms: 1000 },
    { text: '2s', ms: 2000 },
    { text: '1m4s', ms: 64_000 },
    { text: '2m2s', ms: 122_000 },
    { text: '1h0m0s', ms: 3_600_000 },
    { text: '1.5s', ms: 1500 },
    { text: '1.5µs', ms: 0.0015 },
    { text: '1.5μs', ms: 0.0015 },
    { text: '3us', ms: 0.003 },
    { text: '250ns', ms: 0.00025 },
    { text: '0s', ms: 0 },
    { text: '0', ms: 0 },
    { text: '-1s', ms: -1000 },
    { text: '1.1s', ms: 1100 },
  ])('reads $text as $ms ms', ({ text, ms }) => {
    expect(parseGoDuration(text)).toBe(ms);
  });

  it.each(['', '5', '1x', 's', '1s ', ' 1s', '1s2', '1m-2s', '--1s', 'NaNs', '1e3ms'])('returns null for %j', (text) => {
    expect(parseGoDuration(text)).toBeNull();
  });

  it('inverts formatGoDuration for every back-off step', () => {
    for (let d = 500; d <= 122_000; d = Math.min(d * 2, 122_000)) {
      expect(parseGoDuration(formatGoDuration(d))).toBe(d);
      if (d === 122_000) break;
    }
  });
});

describe('parseGoTime', () => {
  it('reads UTC with nanoseconds and the monotonic reading', () => {
    expect(parseGoTime('2018-03-23 09:17:52.530376538 +0000 UTC m=+1179.489590658')).toEqual({
      epochMs: Date.UTC(2018, 2, 23, 9, 17, 52, 530),
      subMillisecondNanos: 376_538,
      offsetMinutes: 0,
      zone: 'UTC',
      monotonicSeconds: 1179.489590658,
    });
  });

  it.each([
    { name: 'a positive offset', text: '2024-06-01 14:00:00.5 +0200 CEST', ms: Date.UTC(2024, 5, 1, 12, 0, 0, 500), offset: 120 },
    { name: 'a negative offset with minutes', text: '2024-06-01 02:30:00 -0330 NDT', ms: Date.UTC(2024, 5, 1, 6, 0, 0), offset: -210 },
    { name: 'a numeric zone name', text: '2024-06-01 15:00:00 +0300 +03', ms: Date.UTC(2024, 5, 1, 12, 0, 0), offset: 180 },
    { name: 'no zone name', text: '2024-06-01 12:00:00 +0000', ms: Date.UTC(2024, 5, 1, 12, 0, 0), offset: 0 },
    { name: 'a day rollover through the offset', text: '2024-01-01 00:30:00 +0100 CET', ms: Date.UTC(2023, 11, 31, 23, 30, 0), offset: 60 },
    { name: "Go's zero time", text: '0001-01-01 00:00:00 +0000 UTC', ms: -62_135_596_800_000, offset: 0 },
  ])('reads $name', ({ text, ms, offset }) => {
    const t = parseGoTime(text);
    expect(t?.epochMs).toBe(ms);
    expect(t?.offsetMinutes).toBe(offset);
  });

  it.each([
    '',
    '2024-13-01 00:00:00 +0000 UTC',
    '2024-02-30 00:00:00 +0000 UTC',
    '2024-01-01 24:00:00 +0000 UTC',
    '2024-01-01T00:00:00Z',
    '2024-01-01 00:00:00 UTC',
    '2024-01-01 00:00:00.1234567891 +0000 UTC',
    '2024-01-01 00:00:00 +0000 UTC m=+abc',
    'yesterday',
  ])('returns null for %j', (text) => {
    expect(parseGoTime(text)).toBeNull();
  });

  it('inverts formatGoTime', () => {
    const ms = Date.UTC(2024, 0, 1, 12, 0, 0, 250);
    expect(parseGoTime(formatGoTime(ms))?.epochMs).toBe(ms);
  });
});

describe('Go quoted strings', () => {
  it.each([
    { name: 'plain text', value: 'kubernetes.io/csi/ebs.csi.aws.com^vol-1' },
    { name: 'quotes and backslashes', value: 'say "hi" \\ bye' },
    { name: 'control characters', value: 'a\nb\tc\r\u0001' },
    { name: 'non-ASCII text', value: 'Größe 😀' },
  ])('reads back goQuote of $name', ({ value }) => {
    expect(unquoteGoString(goQuote(value))).toBe(value);
  });

  it('decodes byte, octal and unicode escapes', () => {
    expect(unquoteGoString('"\\xc3\\xa4\\303\\244\\u00e4\\U0001F600\\a\\v"')).toBe('äää😀\u0007\u000b');
  });

  it('reports where the literal ends', () => {
    expect(readGoQuoted('x "a\\"b" rest', 2)).toEqual({ value: 'a"b', end: 8 });
  });

  it.each(['', 'abc', '"unterminated', '"bad \\q escape"', '"\\x4"', '"\\400"', '"\\ud800"', '"a" trailing'])('returns null for %j', (text) => {
    expect(unquoteGoString(text)).toBeNull();
  });
});

describe('parseRfc3339', () => {
  it.each([
    { text: '2024-01-01T12:00:00Z', ms: Date.UTC(2024, 0, 1, 12) },
    { text: '2024-01-01T12:00:00.123456Z', ms: Date.UTC(2024, 0, 1, 12, 0, 0, 123) },
    { text: '2024-01-01T14:00:00+02:00', ms: Date.UTC(2024, 0, 1, 12) },
  ])('reads $text', ({ text, ms }) => {
    expect(parseRfc3339(text)).toBe(ms);
  });

  it.each([null, undefined, '', '2024-01-01', '2024-01-01T12:00:00', '2024-02-31T00:00:00Z'])('returns null for %j', (text) => {
    expect(parseRfc3339(text)).toBeNull();
  });
});
