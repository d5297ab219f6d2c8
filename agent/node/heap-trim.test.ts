// The heap trimmer: one full GC once the heap shrank well below its peak, at most once per interval, never without --expose-gc.
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../lib/clock/fake-clock.ts';
import { discardLogger } from '../../lib/volume/logger.ts';
import { HeapTrimmer } from './heap-trim.ts';

const MB = 1024 * 1024;

function trimmer(heap: { total: number }, gc: (() => void) | null, clock: FakeClock) {
  return new HeapTrimmer({ clock, logger: discardLogger, heapTotal: () => heap.total, gc, periodMs: 1000, minDropBytes: 48 * MB, minIntervalMs: 60_000 });
}

describe('HeapTrimmer', () => {
  it('runs one GC after the heap dropped 48 MB below the peak of a burst, then waits for the next burst and the interval', async () => {
    // Arrange
    const clock = new FakeClock();
    const heap = { total: 60 * MB };
    let gcs = 0;
    const t = trimmer(heap, () => {
      gcs++;
      heap.total = 70 * MB;
    }, clock);
    t.start();

    // Act / Assert: a burst up to 280 MB, shrinking to 240 MB: a drop of 40 MB is not enough.
    heap.total = 280 * MB;
    await clock.advance(1000);
    heap.total = 240 * MB;
    await clock.advance(1000);
    expect(gcs).toBe(0);
    // Down to 180 MB: 100 MB below the peak, one GC.
    heap.total = 180 * MB;
    await clock.advance(1000);
    expect(gcs).toBe(1);
    // The watch restarts from the size after the GC: idle ups and downs do nothing.
    for (const size of [90, 75, 95, 72]) {
      heap.total = size * MB;
      await clock.advance(1000);
    }
    expect(gcs).toBe(1);
    // A second burst within the minute waits for the interval, then trims.
    heap.total = 300 * MB;
    await clock.advance(1000);
    heap.total = 150 * MB;
    await clock.advance(1000);
    expect(gcs).toBe(1);
    await clock.advance(60_000);
    expect(gcs).toBe(2);
    t.stop();
  });

  it('does nothing without a GC function (no --expose-gc), and nothing after stop', async () => {
    const clock = new FakeClock();
    const heap = { total: 300 * MB };
    const none = trimmer(heap, null, clock);
    none.start();
    heap.total = 50 * MB;
    await clock.advance(5000);
    expect(none.trims).toBe(0);

    let gcs = 0;
    const heap2 = { total: 300 * MB };
    const stopped = trimmer(heap2, () => gcs++, clock);
    stopped.start();
    stopped.stop();
    heap2.total = 10 * MB;
    await clock.advance(5000);
    expect(gcs).toBe(0);
    // The same drop on a running trimmer does trim (the check above can fail).
    stopped.start();
    heap2.total = 300 * MB;
    await clock.advance(1000);
    heap2.total = 10 * MB;
    await clock.advance(1000);
    expect(gcs).toBe(1);
    stopped.stop();
  });
});
