import { describe, expect, it } from 'vitest';
import { formatClock, formatDuration, formatRelative, formatUtc, operationTiming } from './time-format.ts';

const NOW = 1_796_025_660_000;

describe('operation countdowns', () => {
  it.each([
    { name: 'a backoff 57 s away reads retry in 0:57', op: { state: 'backoff', retryAt: NOW + 57_000, startedAt: null }, text: 'retry in 0:57' },
    { name: 'part seconds round up so it never reads 0:00 while waiting', op: { state: 'backoff', retryAt: NOW + 200, startedAt: null }, text: 'retry in 0:01' },
    { name: 'the 2 min 2 s backoff cap reads retry in 2:02', op: { state: 'backoff', retryAt: NOW + 122_000, startedAt: null }, text: 'retry in 2:02' },
    { name: 'a deadline that has passed reads retry due', op: { state: 'backoff', retryAt: NOW - 1, startedAt: null }, text: 'retry due' },
    { name: 'the deadline itself reads retry due (a retry is allowed strictly after it)', op: { state: 'backoff', retryAt: NOW, startedAt: null }, text: 'retry due' },
    { name: 'a backoff without a deadline reads in backoff', op: { state: 'backoff', retryAt: null, startedAt: null }, text: 'in backoff' },
    { name: 'an attempt running for 3.9 s reads running 3 s', op: { state: 'running', retryAt: null, startedAt: NOW - 3_900 }, text: 'running 3 s' },
    { name: 'an attempt running for 65 s reads running 1 min 5 s', op: { state: 'running', retryAt: NOW - 5, startedAt: NOW - 65_000 }, text: 'running 1 min 5 s' },
    { name: 'a start time ahead of the browser clock reads running 0 s', op: { state: 'running', retryAt: null, startedAt: NOW + 2_000 }, text: 'running 0 s' },
  ] as const)('$name', ({ op, text }) => {
    // Act
    const timing = operationTiming(op, NOW);

    // Assert
    expect(timing.text).toBe(text);
  });

  it('counting down one second at a time changes only the digits, never the width', () => {
    // Arrange
    const op = { state: 'backoff', retryAt: NOW + 59_500, startedAt: null } as const;

    // Act
    const texts = [0, 1_000, 2_000, 50_000].map((dt) => operationTiming(op, NOW + dt).text);

    // Assert
    expect(texts).toEqual(['retry in 1:00', 'retry in 0:59', 'retry in 0:58', 'retry in 0:10']);
    expect(new Set(texts.map((t) => t.length)).size).toBe(1);
  });
});

describe('time formatting', () => {
  it.each([
    [0, '0:00'],
    [57, '0:57'],
    [122, '2:02'],
    [3_723, '1:02:03'],
  ])('formatClock(%i) is %s', (seconds, text) => {
    expect(formatClock(seconds)).toBe(text);
  });

  it.each([
    [12_000, '12 s'],
    [60_000, '1 min'],
    [125_000, '2 min 5 s'],
    [3_600_000, '1 h'],
    [3_840_000, '1 h 4 min'],
    [-5, '0 s'],
  ])('formatDuration(%i) is %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it.each([
    [NOW - 400, 'just now'],
    [NOW - 12_000, '12 s ago'],
    [NOW - 180_000, '3 min ago'],
    [NOW + 120_000, 'in 2 min'],
    [NOW - 2 * 86_400_000, '2 d ago'],
  ])('formatRelative(%i) is %s', (at, text) => {
    expect(formatRelative(at, NOW)).toBe(text);
  });

  it('absolute times read the same in every time zone', () => {
    expect(formatUtc(1_796_025_663_000)).toBe('2026-11-30 08:01:03 UTC');
  });
});
