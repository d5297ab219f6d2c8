import { access, mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cleanUpTempDir, makeTempDir, mountMode, realMountsAllowed, testMounter } from '../mount-utils/testing/mount-test-env.ts';
import { mountsAtOrBelow } from '../mount-utils/mount-table.ts';
import type { Mounter } from '../mount-utils/mounter.ts';
import type { MountInfo } from '../mount-utils/mountinfo.ts';
import { nodeSafeRemoveFs } from '../mount-utils/safe-remove.ts';
import { cleanupOrphanPodDir, executeOrphanCleanup, planOrphanCleanup } from './orphan-cleanup.ts';
import type { OrphanCleanupFs, OrphanCleanupGuards, OrphanCleanupOptions, OrphanCleanupPlan, OrphanCleanupResult } from './orphan-cleanup.ts';
import { nodeReadOnlyFs } from './pod-dir-walk.ts';
import { csiVolumeDir, layout, snapshotTree } from './testing/kubelet-root.ts';

let dir: string;
let root: string;
let mounter: Mounter;

beforeEach(async () => {
  dir = await makeTempDir('volumescope-orphan-cleanup-');
  root = join(dir, 'kubelet');
  await mkdir(join(root, 'pods'), { recursive: true });
  mounter = testMounter(join(dir, 'state'));
});

afterEach(async () => {
  // Zero leaked mounts after every test, in the kernel's table and the mounter's.
  expect(await cleanUpTempDir(dir, mounter)).toEqual([]);
});

const podDir = (uid: string) => join(root, 'pods', uid);
const NOW = Date.UTC(2024, 0, 1, 12);

interface GuardSpec {
  known?: string[];
  desired?: string[];
  running?: string[];
  incomplete?: string | null;
  throwing?: boolean;
  /** The orphan's verdict leaves it to the kubelet (its text), per pod UID. */
  kubeletFirst?: Record<string, string>;
}

function guards(spec: GuardSpec = {}): OrphanCleanupGuards {
  const fail = (): never => {
    throw new Error('apiserver: connection refused');
  };
  return {
    podKnownToApi: (uid) => (spec.throwing === true ? fail() : (spec.known ?? []).includes(uid)),
    podInDesiredState: (uid) => Promise.resolve((spec.desired ?? []).includes(uid)),
    podHasRunningContainers: (uid) => (spec.running ?? []).includes(uid),
    desiredStateIncomplete: () => spec.incomplete ?? null,
    kubeletMustUnmountFirst: (uid) => spec.kubeletFirst?.[uid] ?? null,
  };
}

function options(uid: string, extra: Partial<OrphanCleanupOptions> = {}): OrphanCleanupOptions {
  return {
    rootDir: root,
    podUID: uid,
    guards: guards(),
    readMountTable: () => mounter.list(),
    mounter,
    clock: { now: () => NOW },
    ...extra,
  };
}

async function exists(p: string): Promise<boolean> {
  return access(p).then(
    () => true,
    () => false,
  );
}

async function mountsUnder(p: string): Promise<string[]> {
  return mountsAtOrBelow(await mounter.list(), p).map((e) => e.mountPoint);
}

function codes(r: OrphanCleanupResult): string[] {
  return 'refused' in r ? r.refused.map((x) => x.code) : [];
}

function mustPlan(r: Awaited<ReturnType<typeof planOrphanCleanup>>): OrphanCleanupPlan {
  if (r.outcome !== 'planned') throw new Error(`expected a plan, got ${r.outcome}: ${JSON.stringify(codes(r))}`);
  return r.plan;
}

/**
 * Makes `path` (created) the root of another filesystem that the cleanup's mount table does not
 * list: a real tmpfs hidden from the table (a stale or foreign view), or without privileges a
 * file system that reports another device for it. Returns the options to pass; the caller
 * unmounts `path` afterwards when real mounts are allowed.
 */
async function unlistedFilesystemAt(path: string): Promise<Partial<OrphanCleanupOptions>> {
  await mkdir(path, { recursive: true });
  if (realMountsAllowed) {
    await mounter.mount('tmpfs', path, 'tmpfs', ['size=1m']);
    return { readMountTable: async () => (await mounter.list()).filter((e) => e.mountPoint !== path) };
  }
  const fs: OrphanCleanupFs = {
    ...nodeSafeRemoveFs,
    lstat: async (p) => {
      const st = await nodeReadOnlyFs.lstat(p);
      return p === path || p.startsWith(`${path}/`) ? { ...st, dev: 0xfeed, isDirectory: () => st.isDirectory(), isFile: () => st.isFile(), isSymbolicLink: () => st.isSymbolicLink() } : st;
    },
  };
  return { fs };
}

/** A pod dir with a mounted CSI volume (tmpfs standing in for the driver's publish mount). */
async function podWithMountedCsiVolume(uid: string): Promise<string> {
  const target = await csiVolumeDir(join(podDir(uid), 'volumes', 'kubernetes.io~csi', 'pvc-1'), { driverName: 'csi.example.com', volumeHandle: 'vol-1', specVolID: 'pvc-1' });
  await mounter.mount('tmpfs', target, 'tmpfs', ['size=1m']);
  return target;
}

describe(`guarded orphan cleanup with the ${mountMode} mounter`, () => {
  it('refuses a mounted pod directory whose pod the API still knows, changing nothing', async () => {
    // Arrange
    const target = await podWithMountedCsiVolume('live');
    const before = await snapshotTree(root);

    // Act
    const result = await cleanupOrphanPodDir(options('live', { guards: guards({ known: ['live'] }) }));

    // Assert
    expect(result.outcome).toBe('refused');
    expect(codes(result)).toEqual(['pod-known-to-api']);
    expect('refused' in result && result.refused[0]?.message).toBe('The API server still lists pod live; it is not an orphan.');
    expect(result.checks.find((c) => c.check === 'pod-known-to-api')).toEqual({ check: 'pod-known-to-api', passed: false, detail: 'yes', at: NOW });
    expect(await mountsUnder(podDir('live'))).toEqual([target]);
    expect(await snapshotTree(root)).toEqual(before);
    await mounter.unmount(target);
  });

  it('cleans up an orphan: unmounts deepest first, removes empty directories, keeps and reports files', async () => {
    // Arrange: mounts of three kinds (a CSI publish tmpfs, a nested tmpfs, a subPath bind) and leftovers.
    const pod = podDir('orphan');
    const csi = join(pod, 'volumes', 'kubernetes.io~csi');
    const pvc1 = await csiVolumeDir(join(csi, 'pvc-1'), { driverName: 'csi.example.com', volumeHandle: 'vol-1', specVolID: 'pvc-1' });
    const pvc2 = await csiVolumeDir(join(csi, 'pvc-2'), { driverName: 'csi.example.com', volumeHandle: 'vol-2', specVolID: 'pvc-2' });
    await layout(pod, [
      'volumes/kubernetes.io~empty-dir/x/data.txt',
      'volumes/kubernetes.io~configmap/cfg/',
      'volume-subpaths/x/app/0/',
      'etc-hosts',
      'containers/app/',
      'plugins/kubernetes.io~empty-dir/x/ready',
    ]);
    await layout(dir, ['subpath-source/keep-me']);
    await mounter.mount('tmpfs', pvc1, 'tmpfs', ['size=1m']);
    await mounter.mount('tmpfs', pvc2, 'tmpfs', ['size=1m']);
    const inner = join(pvc2, 'inner');
    await mkdir(inner);
    await mounter.mount('tmpfs', inner, 'tmpfs', ['size=1m']);
    const subpath = join(pod, 'volume-subpaths', 'x', 'app', '0');
    await mounter.mount(join(dir, 'subpath-source'), subpath, '', ['bind']);

    // Act
    const result = await cleanupOrphanPodDir(options('orphan'));

    // Assert
    if (result.outcome !== 'completed') throw new Error(`expected completed, got ${JSON.stringify(result, null, 1)}`);
    expect(result.unmounted).toEqual([inner, subpath, pvc2, pvc1]);
    expect(result.failures).toEqual([]);
    expect(result.refused).toEqual([]);
    expect(result.removed).toEqual([
      join(pod, 'containers', 'app'),
      join(pod, 'containers'),
      subpath,
      join(pod, 'volume-subpaths', 'x', 'app'),
      join(pod, 'volume-subpaths', 'x'),
      join(pod, 'volume-subpaths'),
      join(pod, 'volumes', 'kubernetes.io~configmap', 'cfg'),
      join(pod, 'volumes', 'kubernetes.io~configmap'),
      pvc1,
      // The unprivileged tmpfs stand-in is the directory itself, so the nested mount point stays
      // visible after the unmount; a real tmpfs takes it away.
      ...(realMountsAllowed ? [] : [inner]),
      pvc2,
    ]);
    const kept = new Map(result.kept.map((k) => [k.path, k]));
    expect(kept.get(join(pod, 'etc-hosts'))).toEqual({ path: join(pod, 'etc-hosts'), code: 'file', reason: 'a file of 1 bytes: files are never deleted' });
    expect(kept.get(join(csi, 'pvc-1', 'vol_data.json'))?.code).toBe('file');
    expect(kept.get(join(pod, 'volumes', 'kubernetes.io~empty-dir', 'x', 'data.txt'))?.code).toBe('file');
    expect(kept.get(join(pod, 'plugins', 'kubernetes.io~empty-dir', 'x', 'ready'))?.code).toBe('file');
    expect(kept.get(pod)).toMatchObject({ code: 'not-empty' });
    expect(await mountsUnder(pod)).toEqual([]);
    expect(Object.keys(await snapshotTree(pod)).sort()).toEqual([
      '.',
      'etc-hosts',
      'plugins',
      'plugins/kubernetes.io~empty-dir',
      'plugins/kubernetes.io~empty-dir/x',
      'plugins/kubernetes.io~empty-dir/x/ready',
      'volumes',
      'volumes/kubernetes.io~csi',
      'volumes/kubernetes.io~csi/pvc-1',
      'volumes/kubernetes.io~csi/pvc-1/vol_data.json',
      'volumes/kubernetes.io~csi/pvc-2',
      'volumes/kubernetes.io~csi/pvc-2/vol_data.json',
      'volumes/kubernetes.io~empty-dir',
      'volumes/kubernetes.io~empty-dir/x',
      'volumes/kubernetes.io~empty-dir/x/data.txt',
    ]);
    expect(await readdir(join(dir, 'subpath-source'))).toEqual(['keep-me']);
    expect(result.checks.filter((c) => !c.passed)).toEqual([]);
  });

  it('refuses to act when a mount appears under the pod directory between plan and act', async () => {
    // Arrange
    const target = await podWithMountedCsiVolume('orphan');
    const plan = mustPlan(await planOrphanCleanup(options('orphan')));
    expect(plan.unmounts.map((u) => u.mountPoint)).toEqual([target]);
    const late = join(podDir('orphan'), 'volumes', 'kubernetes.io~empty-dir', 'late');
    await mkdir(late, { recursive: true });
    await mounter.mount('tmpfs', late, 'tmpfs', ['size=1m']);
    const before = await snapshotTree(root);

    // Act
    const result = await executeOrphanCleanup(plan, options('orphan'));

    // Assert
    expect(result.outcome).toBe('refused');
    expect(codes(result)).toEqual(['mounts-changed']);
    expect('refused' in result && result.refused[0]?.message).toBe(`1 mount appeared under the pod directory since the plan (tmpfs on ${late}); plan again.`);
    expect((await mountsUnder(podDir('orphan'))).sort()).toEqual([late, target].sort());
    expect(await snapshotTree(root)).toEqual(before);
    await mounter.unmount(late);
    await mounter.unmount(target);
  });

  it('stops between unmounts when a mount appears part-way, and removes nothing', async () => {
    const pod = podDir('orphan');
    const a = await csiVolumeDir(join(pod, 'volumes', 'kubernetes.io~csi', 'a'), { driverName: 'd', volumeHandle: 'a', specVolID: 'a' });
    const b = await csiVolumeDir(join(pod, 'volumes', 'kubernetes.io~csi', 'b'), { driverName: 'd', volumeHandle: 'b', specVolID: 'b' });
    await mounter.mount('tmpfs', a, 'tmpfs', ['size=1m']);
    await mounter.mount('tmpfs', b, 'tmpfs', ['size=1m']);
    const late = join(pod, 'late');
    await mkdir(late);
    // A mounter that, while unmounting the first target, lets something else mount under the pod.
    const racing: Pick<Mounter, 'unmount'> = {
      unmount: async (target) => {
        await mounter.unmount(target);
        if (!(await exists(join(late, '.mounted')))) {
          await mounter.mount('tmpfs', late, 'tmpfs', ['size=1m']);
          await writeFile(join(late, '.mounted'), '');
        }
      },
    };

    const result = await cleanupOrphanPodDir(options('orphan', { mounter: racing }));

    expect(result.outcome).toBe('aborted');
    if (result.outcome !== 'aborted') return;
    expect(result.unmounted).toEqual([b]);
    expect(result.removed).toEqual([]);
    expect(codes(result)).toEqual(['mounts-changed']);
    expect((await mountsUnder(pod)).sort()).toEqual([a, late].sort());
    await mounter.unmount(late);
    await mounter.unmount(a);
  });

  it('changes nothing in a dry run and returns the plan', async () => {
    // Arrange
    const target = await podWithMountedCsiVolume('orphan');
    const pod = podDir('orphan');
    await layout(pod, ['etc-hosts', 'volumes/kubernetes.io~configmap/cfg/']);
    const before = await snapshotTree(root);

    // Act
    const result = await cleanupOrphanPodDir({ ...options('orphan'), dryRun: true });

    // Assert
    expect(result.outcome).toBe('planned');
    if (result.outcome !== 'planned') return;
    expect(result.plan.unmounts).toEqual([{ mountPoint: target, id: expect.any(Number) as number, fsType: 'tmpfs', source: 'tmpfs' }]);
    expect(result.plan.removals).toEqual([
      { path: join(pod, 'volumes', 'kubernetes.io~configmap', 'cfg'), kind: 'directory', afterUnmount: false },
      { path: join(pod, 'volumes', 'kubernetes.io~configmap'), kind: 'directory', afterUnmount: false },
      { path: target, kind: 'directory', afterUnmount: true },
    ]);
    expect(result.plan.keep.map((k) => [k.path.slice(pod.length), k.code])).toEqual([
      ['/etc-hosts', 'file'],
      ['/volumes/kubernetes.io~csi/pvc-1/vol_data.json', 'file'],
      ['/volumes/kubernetes.io~csi/pvc-1', 'not-empty'],
      ['/volumes/kubernetes.io~csi', 'not-empty'],
      ['/volumes', 'not-empty'],
      ['', 'not-empty'],
    ]);
    expect(await snapshotTree(root)).toEqual(before);
    expect(await mountsUnder(pod)).toEqual([target]);
    await mounter.unmount(target);
  });

  it.each([
    { name: 'the pod is in the desired state', spec: { desired: ['orphan'] }, want: ['pod-in-desired-state'] },
    { name: 'the runtime still runs its containers', spec: { running: ['orphan'] }, want: ['pod-has-running-containers'] },
    { name: 'reconstruction has not finished', spec: { incomplete: 'reconstruction running' }, want: ['desired-state-incomplete'] },
    { name: 'the API cannot be asked', spec: { throwing: true }, want: ['guard-check-failed'] },
    { name: 'its verdict says the kubelet has to unmount first', spec: { kubeletFirst: { orphan: 'the kubelet has to unmount before the directory can go' } }, want: ['kubelet-must-unmount'] },
    { name: 'several guards fail', spec: { known: ['orphan'], running: ['orphan'] }, want: ['pod-known-to-api', 'pod-has-running-containers'] },
  ])('refuses when $name, before and after planning', async ({ spec, want }) => {
    const target = await podWithMountedCsiVolume('orphan');
    const plan = mustPlan(await planOrphanCleanup(options('orphan')));

    expect(codes(await cleanupOrphanPodDir(options('orphan', { guards: guards(spec) })))).toEqual(want);
    // The act checks again: a plan made while everything was fine does not carry over.
    expect(codes(await executeOrphanCleanup(plan, options('orphan', { guards: guards(spec) })))).toEqual(want);
    expect(await mountsUnder(podDir('orphan'))).toEqual([target]);
    await mounter.unmount(target);
  });

  it('refuses a mount that shows the same directory as a mount of a live pod', async () => {
    await layout(dir, ['shared/data']);
    const orphanTarget = join(podDir('orphan'), 'volumes', 'kubernetes.io~nfs', 'share');
    const liveTarget = join(podDir('live'), 'volumes', 'kubernetes.io~nfs', 'share');
    await mkdir(orphanTarget, { recursive: true });
    await mkdir(liveTarget, { recursive: true });
    await mounter.mount(join(dir, 'shared'), orphanTarget, '', ['bind']);
    await mounter.mount(join(dir, 'shared'), liveTarget, '', ['bind']);

    const result = await cleanupOrphanPodDir(options('orphan', { guards: guards({ known: ['live'] }) }));

    expect(codes(result)).toEqual(['mount-shared-with-live-pod']);
    expect('refused' in result && result.refused[0]?.message).toBe(
      `The mount at ${orphanTarget} shows the same directory as ${liveTarget} of live pod live; leave it to the kubelet (or the driver's NodeUnpublish).`,
    );
    // Once the other pod is gone too, the same mount may go.
    const again = await cleanupOrphanPodDir(options('orphan'));
    expect(again.outcome).toBe('completed');
    expect(await readdir(join(dir, 'shared'))).toEqual(['data']);
    await mounter.unmount(liveTarget);
  });

  it('refuses a directory on another filesystem that the mount table does not list', async () => {
    const hidden = join(podDir('orphan'), 'volumes', 'kubernetes.io~empty-dir', 'hidden');
    const extra = await unlistedFilesystemAt(hidden);

    const result = await cleanupOrphanPodDir(options('orphan', extra));

    expect(codes(result)).toEqual(['mount-table-not-for-root-dir', 'unlisted-filesystem-boundary']);
    expect(await exists(hidden)).toBe(true);
    if (realMountsAllowed) await mounter.unmount(hidden);
  });

  it('refuses when the mount table misses a volume mount of another pod (a table without the kubelet\'s mounts), though the orphan itself looks clean', async () => {
    // Arrange: the orphan has only empty directories; a live pod's token volume is mounted, but
    // the table given to the cleanup does not show it, as the agent container's own table without
    // mount propagation would not.
    await layout(podDir('orphan'), ['volumes/kubernetes.io~empty-dir/x/']);
    const token = join(podDir('live'), 'volumes', 'kubernetes.io~projected', 'kube-api-access');
    const extra = await unlistedFilesystemAt(token);
    const before = await snapshotTree(podDir('orphan'));

    // Act
    const result = await cleanupOrphanPodDir(options('orphan', extra));

    // Assert
    expect(codes(result)).toEqual(['mount-table-not-for-root-dir']);
    expect('refused' in result && result.refused[0]?.message).toMatch(
      new RegExp(`^The mount table does not describe the kubelet root dir: ${token} is the root of another filesystem \\(device \\d+:\\d+\\), but the mount table given with --mountinfo does not list it: the table is another mount namespace's`),
    );
    expect(result.checks.find((c) => c.check === 'mount-table-shows-root-dir')?.passed).toBe(false);
    expect(await snapshotTree(podDir('orphan'))).toEqual(before);
    if (realMountsAllowed) await mounter.unmount(token);
  });

  it.each([
    {
      name: 'the root dir on another device than the table says (another namespace)',
      table: (t: readonly MountInfo[]) => t.map((e) => (root.startsWith(e.mountPoint) ? { ...e, major: e.major + 1000 } : e)),
      want: /^The mount table does not describe the kubelet root dir: the mount table given with --mountinfo says .* is on device \d+:\d+ \(.*\), but the directory is on device \d+:\d+: the table is another mount namespace's\./,
    },
    {
      name: 'a listed mount below the root dir that does not exist here',
      table: (t: readonly MountInfo[]) => [...t, { ...(t[0] as MountInfo), id: 999_999, mountPoint: join(root, 'pods', 'ghost', 'volumes', 'kubernetes.io~secret', 's') }],
      want: /lists a mount at .*ghost.*, which cannot be examined here \(ENOENT\): the table is another mount namespace's or stale/,
    },
    {
      name: 'no mount holding the root dir at all',
      table: () => [],
      want: /lists no mount that holds .*; it is not this host's table/,
    },
  ])('refuses a mount table with $name, before and after planning', async ({ table, want }) => {
    await layout(podDir('orphan'), ['x/']);
    const plan = mustPlan(await planOrphanCleanup(options('orphan')));
    const foreign = options('orphan', { readMountTable: async () => table(await mounter.list()) });

    const planned = await planOrphanCleanup(foreign);
    const executed = await executeOrphanCleanup(plan, foreign);

    for (const r of [planned, executed]) {
      expect(codes(r)).toEqual(['mount-table-not-for-root-dir']);
      expect('refused' in r && r.refused[0]?.message).toMatch(want);
    }
    expect(await exists(join(podDir('orphan'), 'x'))).toBe(true);
  });

  it('records the mount table check with what it verified', async () => {
    const target = await podWithMountedCsiVolume('orphan');
    const result = await cleanupOrphanPodDir({ ...options('orphan'), dryRun: true });
    const check = result.checks.find((c) => c.check === 'mount-table-shows-root-dir');
    expect(check?.passed).toBe(true);
    expect(check?.detail).toMatch(new RegExp(`^${root} is on \\d+:\\d+ \\(\\S+ at /\\S*\\) as listed; 1 listed mounts below it verified; ${realMountsAllowed ? 1 : 0} volume mounts seen on disk, all listed$`));
    await mounter.unmount(target);
  });

  it('never follows or removes a symlink, and leaves its target alone', async () => {
    await layout(dir, ['outside/empty/', 'outside/file']);
    await layout(podDir('orphan'), ['volumes/kubernetes.io~empty-dir/x/']);
    await symlink(join(dir, 'outside'), join(podDir('orphan'), 'volumes', 'kubernetes.io~empty-dir', 'x', 'escape'));

    const result = await cleanupOrphanPodDir(options('orphan'));

    expect(result.outcome).toBe('completed');
    if (result.outcome !== 'completed') return;
    expect(result.removed).toEqual([]);
    expect(result.kept[0]).toEqual({ path: join(podDir('orphan'), 'volumes', 'kubernetes.io~empty-dir', 'x', 'escape'), code: 'symlink', reason: 'a symlink: never followed, never removed' });
    expect((await readdir(join(dir, 'outside'))).sort()).toEqual(['empty', 'file']);
  });

  it('removes vol_data.json only when asked, and then the whole pod directory', async () => {
    const target = await podWithMountedCsiVolume('orphan');
    const result = await cleanupOrphanPodDir(options('orphan', { removeMetadataFiles: true }));
    expect(result.outcome).toBe('completed');
    if (result.outcome !== 'completed') return;
    expect(result.unmounted).toEqual([target]);
    expect(result.kept).toEqual([]);
    expect(result.removed.at(-1)).toBe(podDir('orphan'));
    expect(result.removed).toContain(join(podDir('orphan'), 'volumes', 'kubernetes.io~csi', 'pvc-1', 'vol_data.json'));
    expect(await readdir(join(root, 'pods'))).toEqual([]);
    // Idempotent: a second run finds nothing to do.
    expect((await cleanupOrphanPodDir(options('orphan'))).outcome).toBe('not-found');
  });

  it('aborts without removing anything when an unmount fails', async () => {
    const target = await podWithMountedCsiVolume('orphan');
    const busy: Pick<Mounter, 'unmount'> = { unmount: () => Promise.reject(new Error(`umount: ${target}: target is busy.`)) };

    const result = await cleanupOrphanPodDir(options('orphan', { mounter: busy }));

    expect(result.outcome).toBe('aborted');
    if (result.outcome !== 'aborted') return;
    expect(result.failures).toEqual([{ path: target, step: 'unmount', message: `umount: ${target}: target is busy.` }]);
    expect(result.removed).toEqual([]);
    expect(await mountsUnder(podDir('orphan'))).toEqual([target]);
    await mounter.unmount(target);
  });
});

describe('orphan cleanup refusals that need no mounts', () => {
  it.each([
    { name: 'a UID that climbs out of pods/', uid: '..', want: 'invalid-pod-uid' },
    { name: 'a UID with a separator', uid: 'a/b', want: 'invalid-pod-uid' },
    { name: 'an empty UID', uid: '', want: 'invalid-pod-uid' },
  ])('refuses $name', async ({ uid, want }) => {
    expect(codes(await cleanupOrphanPodDir(options(uid)))).toEqual([want]);
  });

  it('refuses a pod directory that is a symlink', async () => {
    await layout(dir, ['elsewhere/etc-hosts']);
    await symlink(join(dir, 'elsewhere'), podDir('linked'));
    expect(codes(await cleanupOrphanPodDir(options('linked')))).toEqual(['pod-dir-is-symlink']);
    expect(await exists(join(dir, 'elsewhere', 'etc-hosts'))).toBe(true);
  });

  it('refuses a tree larger than the entry limit', async () => {
    await layout(podDir('big'), ['a/', 'b/', 'c/', 'd/', 'e/']);
    expect(codes(await cleanupOrphanPodDir(options('big', { maxEntries: 4 })))).toEqual(['too-many-entries']);
    expect(await readdir(podDir('big'))).toHaveLength(5);
  });

  it('refuses an unreadable mount table', async () => {
    await layout(podDir('orphan'), ['x/']);
    const result = await cleanupOrphanPodDir(options('orphan', { readMountTable: () => Promise.reject(new Error('EACCES')) }));
    expect(codes(result)).toEqual(['mount-table-unreadable']);
  });

  it('refuses a plan for a pod directory that was replaced since', async () => {
    await layout(podDir('orphan'), ['x/']);
    const plan = mustPlan(await planOrphanCleanup(options('orphan')));
    const stale = { ...plan, podDirIdentity: { ...plan.podDirIdentity, ino: plan.podDirIdentity.ino + 1 } };
    expect(codes(await executeOrphanCleanup(stale, options('orphan')))).toEqual(['pod-dir-changed']);
    expect(await exists(join(podDir('orphan'), 'x'))).toBe(true);
  });

  it('reports a missing pod directory as nothing to do', async () => {
    expect((await cleanupOrphanPodDir(options('gone'))).outcome).toBe('not-found');
  });
});

describe(`orphan cleanup and the kubelet's own teardown, with the ${mountMode} mounter`, () => {
  const teardown = (ops: readonly string[]): OrphanCleanupGuards => ({ ...guards(), kubeletTeardown: () => Promise.resolve(ops) });

  it('refuses to unmount while the kubelet still tears the pod\'s volumes down itself, changing nothing, plan and act alike', async () => {
    // Arrange: a mounted orphan whose volume the plan says the kubelet unmounts (a kubelet that was stopped)
    const target = await podWithMountedCsiVolume('orphan');
    const before = await snapshotTree(root);
    const ops = ['volume_unmount kubernetes.io/csi/csi.example.com^vol-1'];
    const plan = mustPlan(await planOrphanCleanup(options('orphan')));

    // Act
    const dry = await cleanupOrphanPodDir({ ...options('orphan', { guards: teardown(ops) }), dryRun: true });
    const act = await executeOrphanCleanup(plan, options('orphan', { guards: teardown(ops) }));

    // Assert
    expect(codes(dry)).toEqual(['kubelet-tears-down']);
    expect(codes(act)).toEqual(['kubelet-tears-down']);
    expect('refused' in dry && dry.refused[0]?.message).toBe(
      `1 mount below ${podDir('orphan')} belong to volumes the kubelet still tears down itself (${ops[0] ?? ''}): it finds them on disk and unmounts them through their plugin as soon as it runs. Leave them to the kubelet; clean up what it leaves behind.`,
    );
    expect(dry.checks.find((c) => c.check === 'kubelet-tears-down')).toMatchObject({ passed: false, detail: ops[0] });
    expect(await mountsUnder(podDir('orphan'))).toEqual([target]);
    expect(await snapshotTree(root)).toEqual(before);
    await mounter.unmount(target);
  });

  it('plans the unmount once the kubelet has no teardown of the pod outstanding (it left the mount behind)', async () => {
    const target = await podWithMountedCsiVolume('orphan');

    const dry = await cleanupOrphanPodDir({ ...options('orphan', { guards: teardown([]) }), dryRun: true });

    expect(dry.outcome).toBe('planned');
    expect(dry.checks.find((c) => c.check === 'kubelet-tears-down')).toMatchObject({ passed: true, detail: 'no teardown of this pod outstanding' });
    await mounter.unmount(target);
  });

  it('does not ask about the kubelet\'s teardown when nothing is mounted below the pod directory: empty directories go', async () => {
    await mkdir(join(podDir('orphan'), 'volumes', 'kubernetes.io~empty-dir', 'disk'), { recursive: true });
    let asked = 0;
    const g: OrphanCleanupGuards = { ...guards(), kubeletTeardown: () => { asked++; return ['volume_unmount kubernetes.io/empty-dir/orphan-disk']; } };

    const result = await cleanupOrphanPodDir(options('orphan', { guards: g }));

    expect(result.outcome).toBe('completed');
    expect(asked).toBe(0);
    expect(await exists(podDir('orphan'))).toBe(false);
  });

  it('refuses when the teardown check itself fails', async () => {
    const target = await podWithMountedCsiVolume('orphan');
    const g: OrphanCleanupGuards = { ...guards(), kubeletTeardown: () => Promise.reject(new Error('plan unavailable')) };

    const dry = await cleanupOrphanPodDir({ ...options('orphan', { guards: g }), dryRun: true });

    expect(codes(dry)).toEqual(['guard-check-failed']);
    await mounter.unmount(target);
  });
});
