// The heap trimmer: one full GC once the heap grew 64 MB and the volume manager is quiet, at most once per interval, never without --expose-gc.
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../lib/clock/fake-clock.ts';
import { discardLogger } from '../../lib/volume/logger.ts';
import { HeapTrimmer } from './heap-trim.ts';

const MB = 1024 * 1024;

function trimmer(heap: { total: number }, gc: (() => void) | null, clock: FakeClock): HeapTrimmer {
  return new HeapTrimmer({ clock, logger: discardLogger, heapTotal: () => heap.total, gc, periodMs: 1000, minGrowthBytes: 64 * MB, quietMs: 1500, minIntervalMs: 60_000 });
}

describe('HeapTrimmer', () => {
  it('runs one GC once a burst grew the heap by 64 MB and the volume manager has been quiet for 1.5 s; then waits for the next burst and the interval', async () => {
    // Arrange
    const clock = new FakeClock();
    const heap = { total: 60 * MB };
    let gcs = 0;
    const t = trimmer(heap, () => {
      gcs++;
      heap.total = 70 * MB;
    }, clock);
    t.start();

    // Act / Assert: growth of 50 MB is not a burst, however quiet.
    heap.total = 110 * MB;
    await clock.advance(3000);
    expect(gcs).toBe(0);
    // A burst to 280 MB with changes every second: no GC while it goes on.
    heap.total = 280 * MB;
    for (let i = 0; i < 5; i++) {
      t.noteActivity();
      await clock.advance(1000);
    }
    expect(gcs).toBe(0);
    // Quiet for 1.5 s (the peak counts, even after the heap shrank): one GC.
    heap.total = 200 * MB;
    await clock.advance(2000);
    expect(gcs).toBe(1);
    // Idle ups and downs from the size after the GC do nothing.
    for (const size of [90, 120, 95, 125]) {
      heap.total = size * MB;
      await clock.advance(1000);
    }
    expect(gcs).toBe(1);
    // A second burst within the minute waits for the interval, then trims.
    heap.total = 300 * MB;
    await clock.advance(3000);
    expect(gcs).toBe(1);
    await clock.advance(60_000);
    expect(gcs).toBe(2);
    t.stop();
  });

  it('does nothing without a GC function (no --expose-gc), and nothing after stop', async () => {
    // Without gc
    const clock = new FakeClock();
    const heap = { total: 60 * MB };
    const none = trimmer(heap, null, clock);
    none.start();
    heap.total = 300 * MB;
    await clock.advance(5000);
    expect(none.trims).toBe(0);

    // Stopped, then started again: only the running trimmer trims (the check above can fail).
    let gcs = 0;
    const heap2 = { total: 60 * MB };
    const stopped = trimmer(heap2, () => gcs++, clock);
    stopped.start();
    stopped.stop();
    heap2.total = 300 * MB;
    await clock.advance(5000);
    expect(gcs).toBe(0);
    heap2.total = 60 * MB;
    stopped.start();
    heap2.total = 300 * MB;
    await clock.advance(3000);
    expect(gcs).toBe(1);
    stopped.stop();
  });
});
