/**
 * The volume stats passes on a fake clock, with scripted statfs (the probe's side is covered by
 * mount-health/probe-statfs.test.ts): the kubelet's jittered cadence with one timer, the statfs
 * numbers of non-CSI volumes with their errors, and listeners told only when a figure changed.
 */
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../lib/clock/fake-clock.ts';
import { discardLogger } from '../../lib/volume/logger.ts';
import type { MountedVolume } from '../../lib/volumemanager/index.ts';
import type { StatfsResult, StatfsUsage } from './fs-probe/fs-probe.ts';
import { VolumeStatsCollector } from './volume-stats-collector.ts';

function emptyDir(n: number): MountedVolume {
  const path = `/r/pods/u${String(n)}/volumes/kubernetes.io~empty-dir/v`;
  // Only the fields the collector reads; the rest of a MountedVolume does not matter here.
  return {
    podUID: `u${String(n)}`,
    outerVolumeSpecName: 'v',
    volumeName: `u${String(n)}-v`,
    pluginName: 'kubernetes.io/empty-dir',
    mounter: { getPath: () => path },
    volumeSpec: {},
    deviceMountPath: '',
  } as unknown as MountedVolume;
}

const usage: StatfsUsage = { capacityBytes: 100, availableBytes: 60, usedBytes: 40, inodes: 10, inodesFree: 7, inodesUsed: 3 };

describe('VolumeStatsCollector', () => {
  it('runs a pass now, then one timer period × (1 + random) after each pass; listeners hear only of changed figures', async () => {
    // Arrange
    const clock = new FakeClock();
    const asked: { paths: string[]; maxAgeMs: number }[] = [];
    let answer = (path: string): StatfsResult => (path.includes('u2') ? { ok: false, durationMs: 0, error: 'ENOTCONN: transport endpoint is not connected' } : { ok: true, usage, durationMs: 1 });
    let changes = 0;
    const collector = new VolumeStatsCollector({
      volumeManager: { actualState: () => ({ getMountedVolumes: () => [emptyDir(1), emptyDir(2)] }) } as never,
      registry: { client: () => { throw new Error('no CSI here'); }, nodeCapabilities: () => undefined },
      statfs: {
        statfs: (paths, maxAgeMs) => {
          asked.push({ paths: [...paths], maxAgeMs });
          return Promise.resolve(new Map(paths.map((p) => [p, answer(p)])));
        },
      },
      clock,
      logger: discardLogger,
      periodMs: 60_000,
      random: () => 0.5,
      onChange: () => changes++,
    });

    // Act: the first pass
    collector.start();
    await clock.advance(0);

    // Assert
    expect(asked).toEqual([{ paths: [emptyDir(1).mounter?.getPath(), emptyDir(2).mounter?.getPath()], maxAgeMs: 60_000 }]);
    expect(collector.stats().map((e) => [e.podUid, e.source, e.capacityBytes, e.usedBytes, e.error])).toEqual([
      ['u1', 'statfs', 100, 40, null],
      ['u2', 'statfs', null, null, 'ENOTCONN: transport endpoint is not connected'],
    ]);
    expect(changes).toBe(1);
    expect(clock.pendingTimers()).toBe(1);

    // Act: 90 s later (60 s × 1.5) the same figures
    await clock.advance(89_999);
    expect(asked).toHaveLength(1);
    await clock.advance(1);

    // Assert: a pass, no notification
    expect(asked).toHaveLength(2);
    expect(changes).toBe(1);
    expect(collector.stats()[0]?.collectedAt).toBe(clock.now());

    // Act: the next pass finds other numbers
    answer = () => ({ ok: true, usage: { ...usage, usedBytes: 41 }, durationMs: 1 });
    await clock.advance(90_000);

    // Assert
    expect(asked).toHaveLength(3);
    expect(changes).toBe(2);
    expect(collector.stats().map((e) => e.usedBytes)).toEqual([41, 41]);
    collector.stop();
    expect(clock.pendingTimers()).toBe(0);
  });
});
