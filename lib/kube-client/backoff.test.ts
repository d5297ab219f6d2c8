import { describe, expect, it } from 'vitest';
import { nextBackoffMs } from './backoff.ts';

describe('nextBackoffMs', () => {
  it.each([
    { name: 'the first failure waits the initial delay', previousMs: 0, expected: 1_000 },
    { name: 'a further failure doubles the delay', previousMs: 1_000, expected: 2_000 },
    { name: 'the delay stops at the cap', previousMs: 16_000, expected: 30_000 },
    { name: 'at the cap it stays there', previousMs: 30_000, expected: 30_000 },
  ])('$name', ({ previousMs, expected }) => {
    expect(nextBackoffMs({ initialMs: 1_000, maxMs: 30_000 }, previousMs)).toBe(expected);
  });

  it('an initial delay above the cap is capped', () => {
    expect(nextBackoffMs({ initialMs: 5_000, maxMs: 2_000 }, 0)).toBe(2_000);
  });
});
