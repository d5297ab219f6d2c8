import { lstat, mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cleanUpTempDir, makeTempDir, mountMode, realMountsAllowed, testMounter } from '../mount-utils/testing/mount-test-env.ts';
import type { Mounter } from '../mount-utils/mounter.ts';
import { inspectOrphanedPods, isOrphanInspectionError } from './orphan-inspector.ts';
import type { OrphanInspection, OrphanInspectorOptions, OrphanPod } from './orphan-inspector.ts';
import { nodeReadOnlyFs } from './pod-dir-walk.ts';
import type { ReadOnlyFs } from './pod-dir-walk.ts';
import { csiVolumeDir, layout, snapshotTree } from './testing/kubelet-root.ts';

let dir: string;
let root: string;
let mounter: Mounter;

beforeEach(async () => {
  dir = await makeTempDir('volumescope-orphan-inspector-');
  root = join(dir, 'kubelet');
  await mkdir(join(root, 'pods'), { recursive: true });
  mounter = testMounter(join(dir, 'state'));
});

afterEach(async () => {
  // Zero leaked mounts after every test, in the kernel's table and the mounter's.
  expect(await cleanUpTempDir(dir, mounter)).toEqual([]);
});

const pods = () => join(root, 'pods');
const NOW_OFFSET = 90_000;

async function inspect(extra: Partial<OrphanInspectorOptions> = {}, known: string[] = ['known-pod']): Promise<OrphanInspection> {
  const podsStat = await lstat(pods());
  return inspectOrphanedPods({
    rootDir: root,
    knownPodUIDs: new Set(known),
    mountInfo: await mounter.list(),
    clock: { now: () => podsStat.mtimeMs + NOW_OFFSET },
    ...extra,
  });
}

function pod(result: OrphanInspection, uid: string): OrphanPod {
  const p = result.orphans.find((o) => o.podUID === uid);
  if (p === undefined) throw new Error(`no orphan ${uid} in ${result.orphans.map((o) => o.podUID).join(', ')}`);
  return p;
}

describe(`orphan inspector with the ${mountMode} mounter`, () => {
  it('classifies every volume path and leftover of an orphaned pod, and skips known pods', async () => {
    // Arrange: a known pod with a mount, and an orphan with one volume path of every kind.
    const known = join(pods(), 'known-pod');
    const knownMount = await csiVolumeDir(join(known, 'volumes', 'kubernetes.io~csi', 'pvc-9'), { driverName: 'csi.example.com', volumeHandle: 'vol-9', specVolID: 'pvc-9' });
    await mounter.mount('tmpfs', knownMount, 'tmpfs', ['size=1m']);
    const orphan = join(pods(), 'orphan-a');
    const vols = join(orphan, 'volumes');
    await layout(orphan, [
      'volumes/kubernetes.io~empty-dir/x/data.txt',
      'volumes/kubernetes.io~configmap/cfg/..data/',
      'volume-subpaths/x/app/0/',
      'etc-hosts',
      'containers/app/1234',
      'plugins/kubernetes.io~empty-dir/x/ready',
    ], 'hello');
    await layout(dir, ['outside/device-data']);
    await mkdir(join(orphan, 'volumeDevices', 'kubernetes.io~csi'), { recursive: true });
    await symlink(join(dir, 'outside'), join(orphan, 'volumeDevices', 'kubernetes.io~csi', 'blk'));
    await csiVolumeDir(join(vols, 'kubernetes.io~csi', 'pvc-1'), { driverName: 'csi.example.com', volumeHandle: 'vol-1', specVolID: 'pvc-1' });
    const mounted = await csiVolumeDir(join(vols, 'kubernetes.io~csi', 'pvc-2'), { driverName: 'csi.example.com', volumeHandle: 'vol-2', specVolID: 'pvc-2' });
    await mounter.mount('tmpfs', mounted, 'tmpfs', ['size=1m']);
    await writeFile(join(pods(), 'stray-file'), '');
    const before = await snapshotTree(root);

    // Act
    const result = await inspect();

    // Assert
    expect(result.rootDir).toBe(root);
    expect(result.knownPodDirs).toBe(1);
    expect(result.skipped).toEqual([{ name: 'stray-file', reason: 'not a directory' }]);
    expect(result.orphans.map((o) => o.podUID)).toEqual(['orphan-a']);
    const a = pod(result, 'orphan-a');
    expect(a.verdict).toBe('mounted');
    expect(a.explanation).toMatch(/1 mount under the pod directory remains/);
    expect(a.mounts.map((m) => [m.mountPoint, m.fsType])).toEqual([[mounted, 'tmpfs']]);
    expect(a.volumes.map((v) => [v.path.slice(orphan.length + 1), v.state, v.pluginName ?? '-'])).toEqual([
      ['volume-subpaths/x', 'empty', '-'],
      ['volumeDevices/kubernetes.io~csi/blk', 'symlink', 'kubernetes.io/csi'],
      ['volumes/kubernetes.io~configmap/cfg', 'empty', 'kubernetes.io/configmap'],
      ['volumes/kubernetes.io~csi/pvc-1', 'has-vol-data', 'kubernetes.io/csi'],
      ['volumes/kubernetes.io~csi/pvc-2', 'mount-point', 'kubernetes.io/csi'],
      ['volumes/kubernetes.io~empty-dir/x', 'non-empty', 'kubernetes.io/empty-dir'],
    ]);
    const byName = new Map(a.volumes.map((v) => [v.path.slice(orphan.length + 1), v]));
    expect(byName.get('volumes/kubernetes.io~csi/pvc-1')?.volData).toEqual({
      path: join(vols, 'kubernetes.io~csi', 'pvc-1', 'vol_data.json'),
      driverName: 'csi.example.com', volumeHandle: 'vol-1', specVolID: 'pvc-1', nodeName: 'node-1', attachmentID: '', volumeLifecycleMode: 'Persistent',
    });
    const pvc2 = byName.get('volumes/kubernetes.io~csi/pvc-2');
    expect(pvc2?.mounts.map((m) => m.mountPoint)).toEqual([mounted]);
    expect(pvc2?.volData?.volumeHandle).toBe('vol-2');
    expect(pvc2?.explanation).toMatch(/^Still mounted: tmpfs on .*pvc-2\/mount\./);
    expect(byName.get('volumes/kubernetes.io~empty-dir/x')?.contents).toEqual({ files: 1, directories: 0, symlinks: 0, others: 0, bytes: 5, unreadable: [], truncated: false });
    const blk = byName.get('volumeDevices/kubernetes.io~csi/blk');
    expect(blk?.linkTarget).toBe(join(dir, 'outside'));
    expect(blk?.contents.files).toBe(0);
    expect(byName.get('volume-subpaths/x')?.contents.directories).toBe(2);
    expect(a.leftovers.map((l) => [l.name, l.kind, l.contents.files])).toEqual([
      ['containers', 'directory', 1],
      ['etc-hosts', 'file', 0],
      ['plugins', 'directory', 1],
    ]);
    expect(a.ageMs).toBe((await lstat(pods())).mtimeMs + NOW_OFFSET - (await lstat(orphan)).mtimeMs);
    // Read-only: not a byte or timestamp changed, and the mounts are still there.
    expect(await snapshotTree(root)).toEqual(before);
    expect(await mounter.isMountPoint(mounted)).toBe(true);
    await mounter.unmount(mounted);
    await mounter.unmount(knownMount);
  });

  it.each([
    { name: 'only empty volume directories', paths: ['volumes/kubernetes.io~empty-dir/cache/', 'etc-hosts'], verdict: 'empty-volume-dirs' },
    { name: 'CSI metadata and empty directories', paths: ['volumes/kubernetes.io~csi/pvc-3/mount/', 'volumes/kubernetes.io~csi/pvc-3/vol_data.json'], verdict: 'vol-data-only' },
    { name: 'no volume directories', paths: ['etc-hosts', 'containers/app/'], verdict: 'no-volume-dirs' },
    { name: 'a file left in a volume', paths: ['volumes/kubernetes.io~csi/pvc-4/mount/lost.db', 'volumes/kubernetes.io~csi/pvc-4/vol_data.json'], verdict: 'volume-data' },
  ])('gives the verdict $verdict for $name', async ({ paths, verdict }) => {
    await layout(join(pods(), 'orphan'), paths, '{}');
    const result = await inspect();
    expect(pod(result, 'orphan').verdict).toBe(verdict);
  });

  it('stops walking at the entry limit and calls the volume non-empty', async () => {
    await layout(join(pods(), 'big'), Array.from({ length: 30 }, (_, i) => `volumes/kubernetes.io~empty-dir/cache/f${String(i).padStart(2, '0')}`));
    const result = await inspect({ limits: { maxEntriesPerPath: 10 } });
    const [v] = pod(result, 'big').volumes;
    expect(v?.state).toBe('non-empty');
    expect(v?.contents).toMatchObject({ files: 9, truncated: true });
    expect(v?.explanation).toMatch(/at least 9 files .* \(walk stopped at its entry limit\)/);
    expect(pod(result, 'big').verdict).toBe('volume-data');
  });

  it('stops after maxPods orphans', async () => {
    await layout(pods(), ['p1/etc-hosts', 'p2/etc-hosts', 'p3/etc-hosts']);
    const result = await inspect({ limits: { maxPods: 2 } });
    expect(result.orphans.map((o) => o.podUID)).toEqual(['p1', 'p2']);
    expect(result.truncated).toBe(true);
  });

  it('reports a filesystem boundary that the mount table does not list, without entering it', async () => {
    const volume = join(pods(), 'orphan', 'volumes', 'kubernetes.io~empty-dir', 'hidden');
    await mkdir(volume, { recursive: true });
    let extra: Partial<OrphanInspectorOptions>;
    if (realMountsAllowed) {
      // A real tmpfs, hidden from the table handed to the inspector (a stale or foreign view).
      await mounter.mount('tmpfs', volume, 'tmpfs', ['size=1m']);
      extra = { mountInfo: (await mounter.list()).filter((e) => e.mountPoint !== volume) };
    } else {
      // No mounts without privileges: the file system reports another device for the directory.
      const fs: ReadOnlyFs = {
        ...nodeReadOnlyFs,
        lstat: async (p) => {
          const st = await nodeReadOnlyFs.lstat(p);
          return p === volume || p.startsWith(`${volume}/`) ? { ...st, dev: 0xfeed, isDirectory: () => st.isDirectory(), isFile: () => st.isFile(), isSymbolicLink: () => st.isSymbolicLink() } : st;
        },
      };
      extra = { fs };
    }
    await writeFile(join(volume, 'secret'), 'data on the other filesystem');

    const result = await inspect(extra);

    const o = pod(result, 'orphan');
    expect(o.verdict).toBe('mounted');
    expect(o.volumes[0]).toMatchObject({ state: 'mount-point', mounts: [], unlistedBoundaries: [volume] });
    expect(o.volumes[0]?.contents.files).toBe(0);
    if (realMountsAllowed) await mounter.unmount(volume);
  });

  it('resolves a symlinked root and reports the paths the kernel uses', async () => {
    const alias = join(dir, 'kubelet-link');
    await symlink(root, alias);
    await layout(pods(), ['orphan/volumes/kubernetes.io~empty-dir/x/']);
    const result = await inspect({ rootDir: alias });
    expect(result.rootDir).toBe(root);
    expect(pod(result, 'orphan').volumes[0]?.path).toBe(join(pods(), 'orphan', 'volumes', 'kubernetes.io~empty-dir', 'x'));
  });

  it('reports an unusable vol_data.json instead of failing', async () => {
    await layout(pods(), ['orphan/volumes/kubernetes.io~csi/pvc-5/mount/']);
    await writeFile(join(pods(), 'orphan', 'volumes', 'kubernetes.io~csi', 'pvc-5', 'vol_data.json'), 'not json');
    const v = pod(await inspect(), 'orphan').volumes[0];
    expect(v?.state).toBe('has-vol-data');
    expect(v?.volData?.error).toBe('vol_data.json is not valid JSON');
  });

  it('gives an empty result without pods/ and throws a typed error for a missing root', async () => {
    await mkdir(join(dir, 'empty-root'));
    expect((await inspectOrphanedPods({ rootDir: join(dir, 'empty-root'), knownPodUIDs: new Set(), mountInfo: [], clock: { now: () => 0 } })).orphans).toEqual([]);
    const err: unknown = await inspectOrphanedPods({ rootDir: join(dir, 'missing'), knownPodUIDs: new Set(), mountInfo: [], clock: { now: () => 0 } }).catch((e: unknown) => e);
    expect(isOrphanInspectionError(err)).toBe(true);
  });
});
