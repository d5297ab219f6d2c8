/**
 * The mount health check on a real FUSE mount (bindfs, agent/node/testing/fuse-mount.ts): a
 * healthy mount, a stopped daemon (`hung`, while an agent API server in this process keeps
 * answering), a resumed one (healthy again), and a killed one (`not-connected`); the volume
 * stats' statfs through the same probe and policy (probe-statfs.ts) on the same mount.
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { realClock } from '../../../lib/clock/clock.ts';
import { discardLogger } from '../../../lib/volume/logger.ts';
import { cleanUpTempDir, makeTempDir } from '../../../lib/mount-utils/testing/mount-test-env.ts';
import type { MountHealth } from '../../../lib/api/mount-health.ts';
import { parseSnapshot } from '../../../lib/api/compact-snapshot.ts';
import { FsProbe } from '../fs-probe/fs-probe.ts';
import { mountBindfs, type FuseMount } from '../testing/fuse-mount.ts';
import { startServer, type ServerFixture } from '../../server/testing/server-fixture.ts';
import { MountHealthChecker } from './mount-health-checker.ts';
import { ProbeStatfs } from './probe-statfs.ts';

describe('mount health on a real FUSE mount', () => {
  let dir: string;
  let fuse: FuseMount;
  let probe: FsProbe;
  let fixture: ServerFixture | null = null;
  const changes: [MountHealth, MountHealth | null][] = [];

  beforeEach(async () => {
    dir = await makeTempDir('volumescope-health-');
    fuse = await mountBindfs(join(dir, 'backing'), join(dir, 'pods', 'uid-1', 'volumes', 'kubernetes.io~csi', 'pv-1', 'mount'));
    probe = new FsProbe({ clock: realClock, logger: discardLogger });
    changes.length = 0;
  });

  afterEach(async () => {
    await fixture?.close();
    fixture = null;
    probe.close();
    await fuse.cleanup();
    expect(await cleanUpTempDir(dir)).toEqual([]);
  });

  function checker(): MountHealthChecker {
    return new MountHealthChecker({
      clock: realClock,
      logger: discardLogger,
      probe,
      targets: () => [{ path: fuse.path, podUid: 'uid-1', volume: 'kubernetes.io/csi/d^pv-1', kind: 'pod' }],
      busy: () => false,
      timeoutMs: 1_500,
      onStateChange: (entry, previous) => changes.push([entry, previous]),
      onChange: () => fixture?.runtime.notifyChanged(),
    });
  }

  it('is healthy, hung while the daemon is stopped (the agent API still answers), healthy once it resumes', async () => {
    // Arrange
    const health = checker();
    fixture = await startServer();
    fixture.runtime.mountHealth = () => health.list();
    await health.checkNow();
    expect(health.list().map((e) => e.state)).toEqual(['healthy']);

    // Act: stop the daemon; while the check waits for it, ask the agent's API
    fuse.stop();
    let checkDone = false;
    const check = health.checkNow().then(() => (checkDone = true));
    const answer = await fixture.client.request('GET', '/api/v1/snapshot');
    const answeredWhileHung = !checkDone;
    await check;

    // Assert
    expect(answer.status).toBe(200);
    expect(answeredWhileHung).toBe(true);
    expect(health.list().map((e) => [e.path, e.state, e.error])).toEqual([[fuse.path, 'hung', `statfs ${fuse.path}: no answer within 1500 ms (the file system does not respond)`]]);
    expect(parseSnapshot((await fixture.client.request('GET', '/api/v1/snapshot')).json).mountHealth).toEqual([expect.objectContaining({ state: 'hung' })]);
    expect(probe.spawned).toBe(1);

    // Act: resume it
    fuse.resume();
    await health.checkNow();

    // Assert: a fresh probe process answered (the one stuck on the mount was abandoned)
    expect(health.list().map((e) => e.state)).toEqual(['healthy']);
    expect(probe.spawned).toBe(2);
    expect(changes.map(([e, p]) => `${p?.state ?? 'none'}->${e.state}`)).toEqual(['none->healthy', 'healthy->hung', 'hung->healthy']);
  });

  it('is not-connected once the daemon is killed', async () => {
    // Arrange
    const health = checker();
    await health.checkNow();

    // Act
    await fuse.kill();
    await health.checkNow();

    // Assert
    const [entry] = health.list();
    expect(entry).toMatchObject({ state: 'not-connected', kind: 'pod', podUid: 'uid-1' });
    expect(entry?.error).toBe(`ENOTCONN: transport endpoint is not connected: ${fuse.path}`);
    expect(entry?.since).toBe(entry?.checkedAt);
  });

  it('gives the volume stats real numbers, the hang once (then the health entry, with no new call), and the health check\'s numbers once it resumes', async () => {
    // Arrange
    const health = checker();
    const stats = new ProbeStatfs({ probe, health, clock: realClock, timeoutMs: 1_500 });

    // Act: before any health check the stats ask the probe
    const first = (await stats.statfs([fuse.path], 60_000)).get(fuse.path);

    // Assert
    expect(first?.ok === true && first.usage.capacityBytes).toBeGreaterThan(0);
    expect(health.list()).toEqual([]);

    // Act: a health check, then the daemon stops and the stats want fresh numbers
    await health.checkNow();
    fuse.stop();
    const hung = (await stats.statfs([fuse.path], 0)).get(fuse.path);
    const again = (await stats.statfs([fuse.path], 0)).get(fuse.path);

    // Assert: one hung call; the health entry says hung; the next pass makes no call (no new child)
    const error = `statfs ${fuse.path}: no answer within 1500 ms (the file system does not respond)`;
    expect(hung).toEqual({ ok: false, durationMs: 1_500, error });
    expect(health.list().map((e) => e.state)).toEqual(['hung']);
    expect(again).toEqual({ ok: false, durationMs: 0, error });
    expect(probe.spawned).toBe(1);

    // Act: it resumes; a health check finds it healthy
    fuse.resume();
    await health.checkNow();
    const resumed = (await stats.statfs([fuse.path], 60_000)).get(fuse.path);

    // Assert: the numbers of that check, no further call
    expect(resumed?.ok).toBe(true);
    expect(probe.spawned).toBe(2);
    expect(changes.map(([e, p]) => `${p?.state ?? 'none'}->${e.state}`)).toEqual(['none->healthy', 'healthy->hung', 'hung->healthy']);
  });
});
