/**
 * The volume stats' statfs through the health checks (scripted probe, fake clock): numbers of a
 * fresh healthy check reused without a call, stale and unchecked paths asked in one request, an
 * unhealthy path never touched, a hang the stats find shown by the health entry, and every path
 * asked when there are no periodic checks.
 */
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../../lib/clock/fake-clock.ts';
import { discardLogger } from '../../../lib/volume/logger.ts';
import type { PathCheck, StatfsUsage } from '../fs-probe/fs-probe.ts';
import { MountHealthChecker, type HealthTarget } from './mount-health-checker.ts';
import { ProbeStatfs } from './probe-statfs.ts';

const usage: StatfsUsage = { capacityBytes: 4096, availableBytes: 1024, usedBytes: 2048, inodes: 10, inodesFree: 4, inodesUsed: 6 };

function target(n: number): HealthTarget {
  return { path: `/r/pods/u${String(n)}/volumes/x/v`, podUid: `u${String(n)}`, volume: `vol-${String(n)}`, kind: 'pod' };
}

function fixture(targets: HealthTarget[], withChecks = true) {
  const clock = new FakeClock();
  const asked: string[][] = [];
  let answer = (path: string): PathCheck => ({ path, outcome: 'ok', usage, durationMs: 2 });
  const probe = {
    check: (paths: readonly string[]) => {
      asked.push([...paths]);
      return Promise.resolve(paths.map((p) => answer(p)));
    },
  };
  const checker = new MountHealthChecker({ clock, logger: discardLogger, probe, targets: () => targets, busy: () => false, batchSize: 1, timeoutMs: 300 });
  const statfs = new ProbeStatfs({ probe, health: withChecks ? checker : null, clock, timeoutMs: 300 });
  return {
    clock,
    asked,
    checker,
    statfs,
    answer: (f: (path: string) => PathCheck) => {
      answer = f;
    },
  };
}

describe('ProbeStatfs', () => {
  it('reuses the numbers of a fresh healthy check and asks the stale and unchecked paths in one request', async () => {
    // Arrange: target 1 checked now, target 2 never
    const f = fixture([target(1), target(2), target(3)]);
    await f.checker.checkNow();
    await f.clock.advance(30_000);
    await f.checker.checkNow();
    f.asked.length = 0;

    // Act: target 1 is 30 s old, target 2 fresh, target 3 unchecked; max age 20 s
    const out = await f.statfs.statfs([target(1).path, target(2).path, target(3).path], 20_000);

    // Assert
    expect(f.asked).toEqual([[target(1).path, target(3).path]]);
    expect([...out.values()]).toEqual([
      { ok: true, usage, durationMs: 2 },
      { ok: true, usage, durationMs: 2 },
      { ok: true, usage, durationMs: 2 },
    ]);
    expect(out.get(target(2).path)).toEqual({ ok: true, usage, durationMs: 2 });
  });

  it('leaves a path the health checks found unhealthy alone, and a hang it finds becomes the health entry', async () => {
    // Arrange: target 1 checked and not connected
    const f = fixture([target(1), target(2)]);
    f.answer((path) => (path === target(1).path ? { path, outcome: 'error', code: 'ENOTCONN', message: 'x' } : { path, outcome: 'ok', usage }));
    await f.checker.checkNow();
    await f.checker.checkNow();
    f.asked.length = 0;
    f.answer((path) => ({ path, outcome: 'hung' }));

    // Act: target 2's numbers are older than the max age, so it is asked; it hangs
    await f.clock.advance(1_000);
    const out = await f.statfs.statfs([target(1).path, target(2).path], 500);

    // Assert
    expect(f.asked).toEqual([[target(2).path]]);
    expect(out.get(target(1).path)).toEqual({ ok: false, durationMs: 0, error: `ENOTCONN: transport endpoint is not connected: ${target(1).path}` });
    const hung = `statfs ${target(2).path}: no answer within 300 ms (the file system does not respond)`;
    expect(out.get(target(2).path)).toEqual({ ok: false, durationMs: 300, error: hung });
    expect(f.checker.entry(target(2).path)).toMatchObject({ state: 'hung', error: hung, checkedAt: f.clock.now() });

    // Act: the next pass does not touch it again
    f.asked.length = 0;
    const again = await f.statfs.statfs([target(2).path], 500);

    // Assert
    expect(f.asked).toEqual([]);
    expect(again.get(target(2).path)).toEqual({ ok: false, durationMs: 0, error: hung });
  });

  it('asks every path each time without periodic health checks', async () => {
    const f = fixture([target(1)], false);
    f.answer((path) => ({ path, outcome: 'skipped', reason: 'the file system probe is closed' }));

    const out = await f.statfs.statfs([target(1).path], 60_000);
    await f.statfs.statfs([target(1).path], 60_000);

    expect(f.asked).toEqual([[target(1).path], [target(1).path]]);
    expect(out.get(target(1).path)).toEqual({ ok: false, durationMs: 0, error: 'statfs not tried: the file system probe is closed' });
  });
});
