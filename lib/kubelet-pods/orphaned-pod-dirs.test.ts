import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake-clock.ts';
import { cleanUpTempDir, makeTempDir, mountMode, pathExists as exists, testMounter, writeLayout } from '../mount-utils/testing/mount-test-env.ts';
import type { Mounter } from '../mount-utils/mounter.ts';
import type { SafeRemoveFs, SafeRemoveStat } from '../mount-utils/safe-remove.ts';
import type { Pod } from '../volume/k8s-types.ts';
import type { Logger } from '../volume/logger.ts';
import { uniquePodName, type UniquePodName } from '../volume/types.ts';
import { housekeepingPeriodMs, OrphanedPodDirs, type OrphanedPodDirsVolumeManager } from './orphaned-pod-dirs.ts';
import { RecordingLogger } from '../volume/testing/recording-logger.ts';

/** The volume manager's answers, set by each test. */
class StubVolumeManager implements OrphanedPodDirsVolumeManager {
  synced = true;
  /** Pod uids with volumes in the desired state. */
  readonly desired = new Set<string>();
  /** Pod uids with volumes mounted or uncertain in the actual state. */
  readonly mounted = new Set<string>();
  desiredState(): { getPods(): Map<UniquePodName, Pod> } {
    return {
      getPods: () => new Map([...this.desired].map((uid) => [uniquePodName(uid), { metadata: { name: uid, uid }, spec: { containers: [] } }])),
    };
  }

  reconcilerStatesHasBeenSynced(): boolean {
    return this.synced;
  }

  hasPossiblyMountedVolumesForPod(podName: UniquePodName): boolean {
    return this.mounted.has(podName);
  }
}

let dir: string;
let root: string;
let mounter: Mounter;

beforeEach(async () => {
  dir = await makeTempDir('volumescope-orphaned-pod-dirs-');
  root = join(dir, 'kubelet');
  await mkdir(join(root, 'pods'), { recursive: true });
  mounter = testMounter(join(dir, 'state'));
});

afterEach(async () => {
  // Zero leaked mounts after every test, checked in the kernel's table and the mounter's.
  expect(await cleanUpTempDir(dir, mounter)).toEqual([]);
});

/** Creates directories and files below `pods/` (a trailing `/` makes a directory). */
function layout(paths: readonly string[]): Promise<void> {
  return writeLayout(join(root, 'pods'), paths);
}

function cleanup(opts: { vm?: StubVolumeManager; known?: (uid: string) => boolean; sourcesReady?: boolean; logger?: Logger } = {}): OrphanedPodDirs {
  return new OrphanedPodDirs({
    rootDir: root,
    volumeManager: opts.vm ?? new StubVolumeManager(),
    podKnown: opts.known ?? (() => false),
    sourcesReady: () => opts.sourcesReady ?? true,
    mounter,
    clock: new FakeClock(),
    logger: opts.logger ?? new RecordingLogger(),
  });
}

describe(`cleanupOrphanedPodDirs with the ${mountMode} mounter`, () => {
  it.each<{ name: string; paths: string[]; known?: string[]; desired?: string[]; mounted?: string[]; synced?: boolean; sourcesReady?: boolean; removed: boolean }>([
    {
      name: 'an orphaned pod directory with empty volume directories and a vol_data.json is removed',
      paths: ['orphan/volumes/kubernetes.io~csi/', 'orphan/volume-subpaths/', 'orphan/plugins/kubernetes.io~csi/pvc-1/vol_data.json'],
      removed: true,
    },
    { name: 'an empty orphaned pod directory is removed', paths: ['orphan/'], removed: true },
    { name: 'the directory of a pod the source still knows stays', paths: ['orphan/'], known: ['orphan'], removed: false },
    { name: 'the directory of a pod with volumes in the desired state stays', paths: ['orphan/'], desired: ['orphan'], removed: false },
    { name: 'the directory of a pod with a volume mounted or uncertain in the actual state stays', paths: ['orphan/'], mounted: ['orphan'], removed: false },
    { name: 'a pod directory with a volume directory on disk stays', paths: ['orphan/volumes/kubernetes.io~csi/pvc-1/'], removed: false },
    { name: 'a pod directory with a block volume directory on disk stays', paths: ['orphan/volumeDevices/kubernetes.io~csi/pvc-1'], removed: false },
    { name: 'nothing is removed before the states are synced', paths: ['orphan/'], synced: false, removed: false },
    { name: 'nothing is removed before the sources listed every pod (the pod may not be listed yet)', paths: ['orphan/'], sourcesReady: false, removed: false },
  ])('$name', async ({ paths, known = [], desired = [], mounted = [], synced = true, sourcesReady = true, removed }) => {
    // Arrange
    await layout(paths);
    const vm = new StubVolumeManager();
    vm.synced = synced;
    for (const uid of desired) vm.desired.add(uid);
    for (const uid of mounted) vm.mounted.add(uid);
    const logger = new RecordingLogger();
    const podDir = join(root, 'pods', 'orphan');

    // Act
    const result = await cleanup({ vm, known: (uid) => known.includes(uid), sourcesReady, logger }).cleanupOnce();

    // Assert
    expect(result).toEqual(removed ? [podDir] : []);
    expect(await exists(podDir)).toBe(!removed);
    expect(logger.lines).toEqual(removed ? [{ level: 'info', msg: 'Cleaned up orphaned pod volumes dir', fields: { podUID: 'orphan', path: podDir } }] : []);
  });

  it('removes only the orphans among several pod directories', async () => {
    // Arrange
    await layout(['running/volumes/kubernetes.io~empty-dir/cache/', 'gone-1/', 'gone-2/plugins/', 'listed/']);

    // Act
    const result = await cleanup({ known: (uid) => uid === 'listed' || uid === 'running' }).cleanupOnce();

    // Assert
    expect(result.sort()).toEqual([join(root, 'pods', 'gone-1'), join(root, 'pods', 'gone-2')]);
    expect(await exists(join(root, 'pods', 'running', 'volumes', 'kubernetes.io~empty-dir', 'cache'))).toBe(true);
    expect(await exists(join(root, 'pods', 'listed'))).toBe(true);
  });

  it('never takes an entry of pods/ that is not a directory for a pod directory', async () => {
    // Arrange: a file, and a symlink to a directory outside the root.
    await mkdir(join(dir, 'outside'));
    await writeFile(join(root, 'pods', 'a-file'), 'x');
    await symlink(join(dir, 'outside'), join(root, 'pods', 'a-link'));
    const logger = new RecordingLogger();

    // Act
    const result = await cleanup({ logger }).cleanupOnce();

    // Assert
    expect(result).toEqual([]);
    expect(await exists(join(root, 'pods', 'a-file'))).toBe(true);
    expect(await exists(join(root, 'pods', 'a-link'))).toBe(true);
    expect(logger.lines).toEqual([]);
  });

  it('removes nothing when pods/ cannot be read', async () => {
    await rm(join(root, 'pods'), { recursive: true });
    expect(await cleanup().cleanupOnce()).toEqual([]);
  });

  it('keeps a pod directory whose pod appears while the disk is read', async () => {
    // Arrange: unknown when the candidates are picked, known at the re-check before the removal.
    await layout(['late/']);
    let asked = 0;

    // Act
    const result = await cleanup({ known: () => asked++ > 0 }).cleanupOnce();

    // Assert
    expect(result).toEqual([]);
    expect(asked).toBe(2);
    expect(await exists(join(root, 'pods', 'late'))).toBe(true);
  });

  it('keeps a pod directory holding a file that is not known metadata, and warns once, not at every pass', async () => {
    // Arrange
    await layout(['orphan/data.txt']);
    const logger = new RecordingLogger();
    const housekeeping = cleanup({ logger });
    const file = join(root, 'pods', 'orphan', 'data.txt');

    // Act
    await housekeeping.cleanupOnce();
    await housekeeping.cleanupOnce();

    // Assert
    expect(await exists(file)).toBe(true);
    expect(logger.lines.map((l) => [l.level, l.msg])).toEqual([
      [
        'warn',
        `Orphaned pod orphan found, but its directory cannot be removed: refusing to remove ${file}: it is not a known metadata file (only vol_data.json may be removed); refusing to remove ${join(root, 'pods', 'orphan')}: it is not empty (1 entry kept, see their reasons)`,
      ],
    ]);
  });

  it('never removes a pod directory with a mount below it, and removes it once the mount is gone', async () => {
    // Arrange: a mount outside volumes/ (e.g. a leaked bind mount), which no volume directory shows.
    const podDir = join(root, 'pods', 'orphan');
    const target = join(podDir, 'leaked');
    await mkdir(target, { recursive: true });
    await mounter.mount('tmpfs', target, 'tmpfs', ['size=1m']);
    const logger = new RecordingLogger();
    const housekeeping = cleanup({ logger });

    // Act / Assert: refused while mounted.
    expect(await housekeeping.cleanupOnce()).toEqual([]);
    expect(await mounter.isMountPoint(target)).toBe(true);
    expect(logger.lines.map((l) => l.msg)).toEqual([`Orphaned pod orphan found, but its directory cannot be removed: refusing to remove ${podDir}: it contains a mount point at ${target}`]);

    // Act / Assert: removed at the first pass after the unmount.
    await mounter.unmount(target);
    expect(await housekeeping.cleanupOnce()).toEqual([podDir]);
    expect(await exists(podDir)).toBe(false);
    expect(logger.lines.at(-1)).toEqual({ level: 'info', msg: 'Cleaned up orphaned pod volumes dir', fields: { podUID: 'orphan', path: podDir } });
  });
});

/** A pods/ dir on fake time: `pods` lists the given names, each a directory; every call is counted. */
function countingFs(podsDir: string, names: string[]): SafeRemoveFs & { podsDirReads: number } {
  const dirStat: SafeRemoveStat = { dev: 1, ino: 1, isDirectory: () => true, isFile: () => false, isSymbolicLink: () => false };
  const fs = {
    podsDirReads: 0,
    readdir: (p: string) => {
      if (p === podsDir) fs.podsDirReads++;
      return Promise.resolve(p === podsDir ? names : []);
    },
    lstat: () => Promise.resolve(dirStat),
    rmdir: () => Promise.reject(new Error('unexpected rmdir')),
    unlink: () => Promise.reject(new Error('unexpected unlink')),
    realpath: (p: string) => Promise.resolve(p),
    readlink: () => Promise.reject(new Error('unexpected readlink')),
  };
  return fs;
}

describe('OrphanedPodDirs housekeeping loop', () => {
  it('runs a pass every housekeeping period after start, and none after stop', async () => {
    // Arrange
    const clock = new FakeClock();
    const podsDir = join(root, 'pods');
    const fs = countingFs(podsDir, []);
    const housekeeping = new OrphanedPodDirs({ rootDir: root, volumeManager: new StubVolumeManager(), podKnown: () => false, sourcesReady: () => true, mounter, clock, logger: new RecordingLogger(), fs });

    // Act / Assert
    housekeeping.start();
    await clock.advance(housekeepingPeriodMs - 1);
    expect(fs.podsDirReads).toBe(0);
    await clock.advance(1);
    expect(fs.podsDirReads).toBe(1);
    await clock.advance(housekeepingPeriodMs);
    expect(fs.podsDirReads).toBe(2);
    await housekeeping.stop();
    await clock.advance(10 * housekeepingPeriodMs);
    expect(fs.podsDirReads).toBe(2);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('logs a failed pass and still runs the next one', async () => {
    // Arrange: the desired state cannot be read.
    const clock = new FakeClock();
    const fs = countingFs(join(root, 'pods'), ['orphan']);
    const vm = new StubVolumeManager();
    const failing: OrphanedPodDirsVolumeManager = {
      reconcilerStatesHasBeenSynced: () => true,
      hasPossiblyMountedVolumesForPod: (p) => vm.hasPossiblyMountedVolumesForPod(p),
      desiredState: () => ({
        getPods: () => {
          throw new Error('desired state unavailable');
        },
      }),
    };
    const logger = new RecordingLogger();
    const housekeeping = new OrphanedPodDirs({ rootDir: root, volumeManager: failing, podKnown: () => false, sourcesReady: () => true, mounter, clock, logger, fs, periodMs: 500 });

    // Act
    housekeeping.start();
    await clock.advance(1000);
    await housekeeping.stop();

    // Assert
    expect(fs.podsDirReads).toBe(2);
    expect(logger.lines).toEqual([
      { level: 'error', msg: 'Orphaned pod directory cleanup failed: desired state unavailable', fields: {} },
      { level: 'error', msg: 'Orphaned pod directory cleanup failed: desired state unavailable', fields: {} },
    ]);
  });
});
