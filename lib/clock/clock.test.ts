import { describe, expect, it } from 'vitest';
import { delayToNextTick } from './clock.ts';
import { FakeClock } from './fake-clock.ts';

describe('delayToNextTick', () => {
  it('is the time to the next multiple of the period, a whole period on a multiple', async () => {
    const clock = new FakeClock(10_000);
    expect(delayToNextTick(clock, 1_000)).toBe(1_000);
    await clock.advance(1);
    expect(delayToNextTick(clock, 1_000)).toBe(999);
    await clock.advance(900);
    expect(delayToNextTick(clock, 1_000)).toBe(99);
    expect(delayToNextTick(clock, 3_000)).toBe(1_099);
    // Woken just before the instant (a timer that fired early): the next instant, not this one.
    await clock.advance(98);
    expect(delayToNextTick(clock, 1_000)).toBe(1_001);
  });

  it('lines loops of one period, and of its multiples, up on the same instants', async () => {
    const clock = new FakeClock(10_000);
    const fired: string[] = [];
    const loop = (name: string, periodMs: number, phaseMs: number) => {
      const arm = () => clock.setTimeout(() => {
        fired.push(`${name}@${String(clock.now())}`);
        arm();
      }, delayToNextTick(clock, periodMs));
      clock.setTimeout(arm, phaseMs);
    };
    loop('a', 1_000, 130);
    loop('b', 1_000, 770);
    loop('c', 2_000, 420);

    await clock.advance(3_000);

    expect(fired).toEqual(['a@11000', 'b@11000', 'c@12000', 'a@12000', 'b@12000', 'a@13000', 'b@13000']);
  });
});
