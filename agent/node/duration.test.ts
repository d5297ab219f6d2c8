import { describe, expect, it } from 'vitest';
import { formatGoDuration } from '../../lib/volume/util/go-format.ts';
import { isInvalidDurationError, parseDuration } from './duration.ts';

describe('parseDuration', () => {
  it.each([
    ['100ms', 100],
    ['60s', 60_000],
    ['2m', 120_000],
    ['1h', 3_600_000],
    ['1m30s', 90_000],
    ['1.5s', 1500],
    ['0', 0],
    [' 250ms ', 250],
  ])('reads %s as %i ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', '60', 'soon', '5 s', '-1s', '1d', 's', '1s2'])('refuses %j with an InvalidDurationError', (text) => {
    let caught: unknown;
    try {
      parseDuration(text);
    } catch (err) {
      caught = err;
    }
    expect(isInvalidDurationError(caught)).toBe(true);
  });
});

describe('the flag defaults, printed as Go prints a duration', () => {
  it.each([
    [0, '0s'],
    [100, '100ms'],
    [1500, '1.5s'],
    [60_000, '1m0s'],
    [7_200_000, '2h0m0s'],
  ])('writes %i ms as %s, which parses back to the same value', (ms, text) => {
    expect(formatGoDuration(ms)).toBe(text);
    expect(parseDuration(text)).toBe(ms);
  });
});
