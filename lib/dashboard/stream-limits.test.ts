import { describe, expect, it } from 'vitest';
import { StreamLimits } from './stream-limits.ts';

describe('StreamLimits', () => {
  it('caps per agent and per user, and gives slots back once on release', () => {
    const limits = new StreamLimits(3, 2);

    const a1 = limits.acquire('node-a', 'alice');
    const a2 = limits.acquire('node-b', 'alice');
    const a3 = limits.acquire('node-c', 'alice');
    const b1 = limits.acquire('node-a', 'bob');
    const c1 = limits.acquire('node-a', null);
    const d1 = limits.acquire('node-a', null);

    expect([a1.ok, a2.ok, a3.ok, b1.ok, c1.ok, d1.ok]).toEqual([true, true, false, true, true, false]);
    expect(a3.ok ? null : a3.message).toBe('too many event streams for alice (at most 2 across all agents); close other tabs or retry later');
    expect(d1.ok ? null : d1.message).toBe('too many event streams to agent node-a (at most 3); retry later');
    if (a1.ok) {
      a1.release();
      a1.release();
    }
    expect([limits.openForUser('alice'), limits.openToAgent('node-a')]).toEqual([1, 2]);
    expect(limits.acquire('node-c', 'alice').ok).toBe(true);
  });

  it('refuses limits that are not positive integers', () => {
    expect(() => new StreamLimits(0, 1)).toThrow(RangeError);
    expect(() => new StreamLimits(1, 1.5)).toThrow(RangeError);
  });
});
