/**
 * The checker's scheduling and classification on a scripted path checker (the real child
 * process is covered by mount-health-fuse.test.ts): errno → state, one batch per period of the
 * least recently checked paths, busy volumes skipped, entries of gone mounts dropped, `since`
 * kept while the state stays.
 */
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../../lib/clock/fake-clock.ts';
import { discardLogger } from '../../../lib/volume/logger.ts';
import type { PathCheck } from '../fs-probe/fs-probe.ts';
import { classifyCheck, MountHealthChecker, type HealthTarget } from './mount-health-checker.ts';

function target(n: number): HealthTarget {
  return { path: `/r/pods/u${String(n)}/volumes/x/v`, podUid: `u${String(n)}`, volume: `vol-${String(n)}`, kind: 'pod' };
}

describe('classifyCheck', () => {
  it.each([
    [{ path: '/p', outcome: 'ok' } as const, 'healthy', null],
    [{ path: '/p', outcome: 'error', code: 'ENOTCONN', message: 'ENOTCONN: socket is not connected' } as const, 'not-connected', 'ENOTCONN: transport endpoint is not connected: /p'],
    [{ path: '/p', outcome: 'error', code: 'EIO', message: 'x' } as const, 'io-error', 'EIO: input/output error: /p'],
    [{ path: '/p', outcome: 'error', code: 'ESTALE', message: 'x' } as const, 'stale', 'ESTALE: stale file handle: /p'],
    [{ path: '/p', outcome: 'error', code: 'ENOENT', message: "ENOENT: no such file or directory, statfs '/p'" } as const, 'error', "ENOENT: no such file or directory, statfs '/p'"],
    [{ path: '/p', outcome: 'hung' } as const, 'hung', 'statfs /p: no answer within 5000 ms (the file system does not respond)'],
  ])('%o is %s', (check, state, error) => {
    expect(classifyCheck(check, 5000)).toEqual({ state, error });
  });
});

describe('MountHealthChecker', () => {
  it('checks one batch per period, least recently checked first, skipping busy volumes', async () => {
    // Arrange
    const clock = new FakeClock();
    const asked: string[][] = [];
    let targets = [target(1), target(2), target(3)];
    let busy = new Set<string>(['vol-3']);
    let answer: (path: string) => PathCheck = (path) => ({ path, outcome: 'ok' });
    let changes = 0;
    const checker = new MountHealthChecker({
      clock,
      logger: discardLogger,
      probe: {
        check: (paths) => {
          asked.push([...paths]);
          return Promise.resolve(paths.map((p) => answer(p)));
        },
      },
      targets: () => targets,
      busy: (volume) => busy.has(volume),
      periodMs: 1000,
      batchSize: 2,
      onChange: () => changes++,
    });
    checker.start();

    // Act: three periods
    await clock.advance(1000);
    await clock.advance(1000);
    busy = new Set();
    answer = (path) => (path === target(3).path ? { path, outcome: 'error', code: 'EIO', message: 'x' } : { path, outcome: 'ok' });
    await clock.advance(1000);

    // Assert
    expect(asked).toEqual([[target(1).path, target(2).path], [target(1).path, target(2).path], [target(3).path, target(1).path]]);
    expect(checker.list().map((e) => [e.podUid, e.state])).toEqual([['u1', 'healthy'], ['u2', 'healthy'], ['u3', 'io-error']]);
    const first = clock.now() - 3000 + 1000;
    expect(checker.list()[0]).toMatchObject({ since: first, checkedAt: clock.now() });
    expect(changes).toBe(2);

    // Act: a mount goes away
    targets = [target(1), target(3)];
    await clock.advance(1000);
    await checker.stop();

    // Assert
    expect(checker.list().map((e) => e.podUid)).toEqual(['u1', 'u3']);
    expect(changes).toBe(3);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('keeps the previous state of paths the probe skipped', async () => {
    const clock = new FakeClock();
    let outcome: PathCheck['outcome'] = 'ok';
    const checker = new MountHealthChecker({
      clock,
      logger: discardLogger,
      probe: { check: (paths) => Promise.resolve(paths.map((path): PathCheck => (outcome === 'skipped' ? { path, outcome, reason: 'r' } : { path, outcome: 'ok' }))) },
      targets: () => [target(1)],
      busy: () => false,
    });
    await checker.checkNow();
    const before = checker.list()[0];
    outcome = 'skipped';
    await clock.advance(5000);
    await checker.checkNow();
    expect(checker.list()[0]).toEqual(before);
  });
});
