import { describe, expect, it } from 'vitest';
import { FreshRead } from './fresh-read.ts';

/** A read whose calls are counted and which finishes only when released. */
function gatedRead(): { read: () => Promise<number>; started: () => number; release: () => void } {
  let started = 0;
  let waiting: (() => void)[] = [];
  return {
    read: () => {
      const n = ++started;
      return new Promise<number>((resolve) => waiting.push(() => { resolve(n); }));
    },
    started: () => started,
    release: () => {
      const w = waiting;
      waiting = [];
      for (const r of w) r();
    },
  };
}

describe('FreshRead', () => {
  it('gives each caller a read that started after its call, shared by the callers that overlapped a running one', async () => {
    // Arrange
    const gate = gatedRead();
    const shared = new FreshRead(gate.read);

    // Act: one call starts read 1; three more arrive while it runs.
    const first = shared.get();
    const overlapping = [shared.get(), shared.get(), shared.get()];
    expect(gate.started()).toBe(1);
    gate.release();
    await expect(first).resolves.toBe(1);
    // Read 1 may have begun before the three calls: they share read 2, started after it.
    await Promise.resolve();
    expect(gate.started()).toBe(2);
    gate.release();

    // Assert
    await expect(Promise.all(overlapping)).resolves.toEqual([2, 2, 2]);
    const later = shared.get();
    expect(gate.started()).toBe(3);
    gate.release();
    await expect(later).resolves.toBe(3);
  });

  it('passes a failed read to its callers and reads again for the next ones', async () => {
    let calls = 0;
    const shared = new FreshRead(() => (++calls === 1 ? Promise.reject(new Error('EIO')) : Promise.resolve(calls)));
    const failing = shared.get();
    const queued = shared.get();
    await expect(failing).rejects.toThrow('EIO');
    await expect(queued).resolves.toBe(2);
  });
});
