import { mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cleanUpTempDir, makeTempDir, mountMode, pathExists as exists, realMountsAllowed, testMounter, writeLayout as layout } from './testing/mount-test-env.ts';
import type { Mounter } from './mounter.ts';
import { formatMountInfoLine, readMountInfo } from './mountinfo.ts';
import type { MountInfo, MountInfoReader } from './mountinfo.ts';
import { isSafeRemoveRefusedError, nodeSafeRemoveFs, safeRemove, safeRemoveTree } from './safe-remove.ts';
import type { SafeRemoveFs, SafeRemoveRefusedError, SafeRemoveResult } from './safe-remove.ts';

let dir: string;
let root: string;
let pod: string;
let mounter: Mounter;

beforeEach(async () => {
  dir = await makeTempDir('volumescope-safe-remove-');
  root = join(dir, 'kubelet');
  pod = join(root, 'pods', 'pod-uid-1');
  await mkdir(pod, { recursive: true });
  mounter = testMounter(join(dir, 'state'));
});

afterEach(async () => {
  // Zero leaked mounts after every test, checked in the kernel's table and the mounter's.
  expect(await cleanUpTempDir(dir, mounter)).toEqual([]);
});

async function refusedError(p: Promise<unknown>): Promise<SafeRemoveRefusedError> {
  const err: unknown = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isSafeRemoveRefusedError(err)) throw new Error(`expected a SafeRemoveRefusedError, got ${String(err)}`);
  return err;
}

function reasons(r: SafeRemoveResult): string[] {
  return r.refused.map((x) => x.reason);
}

/** A mount in the pod's CSI volume directory (a tmpfs, or its stand-in). */
async function mountVolume(): Promise<string> {
  const target = join(pod, 'volumes', 'kubernetes.io~csi', 'pvc-1', 'mount');
  await mkdir(target, { recursive: true });
  await writeFile(join(dirname(target), 'vol_data.json'), '{}');
  await mounter.mount('tmpfs', target, 'tmpfs', ['size=1m']);
  return target;
}

describe(`safe removal with the ${mountMode} mounter`, () => {
  it('refuses a mounted directory in the strict variant', async () => {
    const target = await mountVolume();
    const err = await refusedError(safeRemove(target, { root, mounter }));
    expect(err.reason).toBe(`refusing to remove ${target}: it is a mount point`);
    expect(err.path).toBe(target);
    expect(await mounter.isMountPoint(target)).toBe(true);
    await mounter.unmount(target);
  });

  it('refuses a directory that contains a mount point, removing nothing in the tree variant', async () => {
    const target = await mountVolume();
    await layout(pod, ['plugins/empty/']);

    const result = await safeRemoveTree(pod, { root, mounter, volumeDirsVerifiedUnmounted: true });
    expect(result).toEqual({ removed: [], refused: [{ path: pod, reason: `refusing to remove ${pod}: it contains a mount point at ${target}` }] });
    expect(await exists(join(pod, 'plugins', 'empty'))).toBe(true);
    expect(await exists(join(dirname(target), 'vol_data.json'))).toBe(true);

    const strict = await refusedError(safeRemove(dirname(target), { root, mounter }));
    expect(strict.reason).toBe(`refusing to remove ${dirname(target)}: it contains a mount point at ${target}`);
    await mounter.unmount(target);
  });

  it('refuses a metadata-named file inside a mounted volume, which would be user data', async () => {
    const target = await mountVolume();
    await writeFile(join(target, 'vol_data.json'), 'user data');
    await mkdir(join(target, 'empty'));

    const err = await refusedError(safeRemove(join(target, 'vol_data.json'), { root, mounter }));
    expect(err.reason).toBe(`refusing to remove ${join(target, 'vol_data.json')}: it is inside the mount point at ${target}`);
    const tree = await safeRemoveTree(join(target, 'empty'), { root, mounter, volumeDirsVerifiedUnmounted: true });
    expect(reasons(tree)).toEqual([`refusing to remove ${join(target, 'empty')}: it is inside the mount point at ${target}`]);
    expect((await readdir(target)).sort()).toEqual(['empty', 'vol_data.json']);
    await mounter.unmount(target);
  });

  it('refuses a bind-mounted volume directory and leaves the bind source untouched', async () => {
    const source = join(dir, 'data');
    await layout(dir, ['data/precious']);
    const target = join(pod, 'volume-subpaths', 'v', 'c', '0');
    await mkdir(target, { recursive: true });
    await mounter.mount(source, target, '', ['bind']);

    const err = await refusedError(safeRemove(target, { root, mounter }));
    expect(err.reason).toMatch(/: it is a mount point/);
    const tree = await safeRemoveTree(pod, { root, mounter, volumeDirsVerifiedUnmounted: true });
    expect(tree.removed).toEqual([]);
    expect(await readdir(source)).toEqual(['precious']);
    await mounter.unmount(target);
  });

  it('removes an empty tree and vol_data.json files, children before parents', async () => {
    await layout(pod, ['volumes/kubernetes.io~csi/pvc-1/vol_data.json', 'volumes/kubernetes.io~csi/pvc-1/mount/', 'plugins/kubernetes.io~empty-dir/', 'containers/']);
    const csi = join(pod, 'volumes', 'kubernetes.io~csi');

    const result = await safeRemoveTree(pod, { root, mounter, volumeDirsVerifiedUnmounted: true });
    expect(result.refused).toEqual([]);
    expect(result.removed).toEqual([
      join(pod, 'containers'),
      join(pod, 'plugins', 'kubernetes.io~empty-dir'),
      join(pod, 'plugins'),
      join(csi, 'pvc-1', 'mount'),
      join(csi, 'pvc-1', 'vol_data.json'),
      join(csi, 'pvc-1'),
      csi,
      join(pod, 'volumes'),
      pod,
    ]);
    expect(await readdir(join(root, 'pods'))).toEqual([]);
  });

  it('leaves unknown files in place and reports them together with the directories they keep', async () => {
    await layout(pod, ['etc-hosts', 'containers/app/0a1b2c', 'plugins/empty/', 'volumes/x/vol_data.json']);

    const result = await safeRemoveTree(pod, { root, mounter, volumeDirsVerifiedUnmounted: true });
    expect(result.removed).toEqual([join(pod, 'plugins', 'empty'), join(pod, 'plugins'), join(pod, 'volumes', 'x', 'vol_data.json'), join(pod, 'volumes', 'x'), join(pod, 'volumes')]);
    expect(reasons(result)).toEqual([
      `refusing to remove ${join(pod, 'containers', 'app', '0a1b2c')}: it is not a known metadata file (only vol_data.json may be removed)`,
      `refusing to remove ${join(pod, 'containers', 'app')}: it is not empty (1 entry kept, see their reasons)`,
      `refusing to remove ${join(pod, 'containers')}: it is not empty (1 entry kept, see their reasons)`,
      `refusing to remove ${join(pod, 'etc-hosts')}: it is not a known metadata file (only vol_data.json may be removed)`,
      `refusing to remove ${pod}: it is not empty (2 entries kept, see their reasons)`,
    ]);
    expect((await readdir(pod)).sort()).toEqual(['containers', 'etc-hosts']);
  });

  it('removes extra metadata files named in allowFiles', async () => {
    await layout(pod, ['etc-hosts', 'volumes/x/vol_data.json']);
    const result = await safeRemoveTree(pod, { root, mounter, allowFiles: ['vol_data.json', 'etc-hosts'], volumeDirsVerifiedUnmounted: true });
    expect(result.refused).toEqual([]);
    expect(await exists(pod)).toBe(false);
  });

  it.each(['volumes', 'volume-subpaths', 'volumeDevices'])('does not enter %s/ unless the caller verified it holds no mounts', async (name) => {
    await layout(pod, [`${name}/plugin/vol/`, 'plugins/']);

    const result = await safeRemoveTree(pod, { root, mounter });
    expect(result.removed).toEqual([join(pod, 'plugins')]);
    expect(reasons(result)).toEqual([
      `refusing to remove ${join(pod, name)}: it is a ${name}/ directory, which may hold volume data (set volumeDirsVerifiedUnmounted once it is unmounted and checked)`,
      `refusing to remove ${pod}: it is not empty (1 entry kept, see their reasons)`,
    ]);
    const inside = await safeRemoveTree(join(pod, name, 'plugin'), { root, mounter });
    expect(inside.removed).toEqual([]);
    expect(reasons(inside)[0]).toMatch(new RegExp(`it is inside a ${name}/ directory`));
    expect(reasons(await safeRemoveTree(join(pod, name), { root, mounter }))[0]).toMatch(new RegExp(`it is a ${name}/ directory`));
  });

  it('refuses a symlink escaping the root, never following it', async () => {
    const outside = join(dir, 'outside');
    await layout(dir, ['outside/vol_data.json', 'outside/empty/']);
    await symlink(outside, join(pod, 'escape'));

    const result = await safeRemoveTree(pod, { root, mounter });
    expect(reasons(result)).toEqual([
      `refusing to remove ${join(pod, 'escape')}: it is a symlink to ${outside}, outside the root dir ${root} (symlinks are never followed, and only allowed names are unlinked)`,
      `refusing to remove ${pod}: it is not empty (1 entry kept, see their reasons)`,
    ]);
    expect((await readdir(outside)).sort()).toEqual(['empty', 'vol_data.json']);
  });

  it('refuses a path that resolves outside the root through a symlinked parent', async () => {
    const outside = join(dir, 'outside');
    await layout(dir, ['outside/vol_data.json']);
    await symlink(outside, join(pod, 'escape'));

    const err = await refusedError(safeRemove(join(pod, 'escape', 'vol_data.json'), { root, mounter }));
    expect(err.reason).toBe(
      `refusing to remove ${join(pod, 'escape', 'vol_data.json')}: it is outside the root dir ${root} (it resolves to ${join(outside, 'vol_data.json')})`,
    );
    const tree = await safeRemoveTree(join(pod, 'escape', 'empty'), { root, mounter });
    expect(reasons(tree)[0]).toMatch(/it is outside the root dir/);
    expect(await exists(join(outside, 'vol_data.json'))).toBe(true);
  });

  it('unlinks a symlink whose name is allowed without touching its target', async () => {
    await layout(dir, ['outside/keep']);
    await symlink(join(dir, 'outside'), join(pod, 'dev-link'));
    const result = await safeRemove(join(pod, 'dev-link'), { root, mounter, allowSymlinks: ['dev-link'] });
    expect(result.removed).toEqual([join(pod, 'dev-link')]);
    expect(await exists(join(dir, 'outside', 'keep'))).toBe(true);
  });

  it('refuses to cross a filesystem boundary that the mount table does not show', async () => {
    const other = join(pod, 'plugins', 'other-fs');
    await layout(pod, ['plugins/other-fs/']);
    let opts: { mountInfo: MountInfoReader; fs?: SafeRemoveFs };
    if (realMountsAllowed) {
      // A real tmpfs, hidden from the table given to the remover (as a stale or foreign view would be).
      await mounter.mount('tmpfs', other, 'tmpfs', ['size=1m']);
      const hidden: MountInfoReader = async () => (await mounter.list()).filter((e) => e.mountPoint !== other);
      opts = { mountInfo: hidden };
    } else {
      // No mounts without privileges: the file system reports another device for the directory.
      const lstatOtherDevice: SafeRemoveFs['lstat'] = async (p) => {
        const st = await nodeSafeRemoveFs.lstat(p);
        return p === other || p.startsWith(`${other}/`) ? { ...st, dev: 0xfeed, isDirectory: () => st.isDirectory(), isFile: () => st.isFile(), isSymbolicLink: () => st.isSymbolicLink() } : st;
      };
      opts = { mountInfo: () => mounter.list(), fs: { ...nodeSafeRemoveFs, lstat: lstatOtherDevice } };
    }
    await layout(other, ['vol_data.json', 'empty/']);

    const result = await safeRemoveTree(pod, { root, ...opts });
    expect(result.removed).toEqual([]);
    expect(reasons(result)[0]).toMatch(new RegExp(`^refusing to remove ${other}: it crosses a filesystem boundary \\(it is on device \\d+:\\d+, its parent on \\d+:\\d+\\)$`));
    const strict = await refusedError(safeRemove(join(other, 'vol_data.json'), { root, ...opts }));
    expect(strict.reason).toMatch(/crosses a filesystem boundary/);
    expect((await readdir(other)).sort()).toEqual(['empty', 'vol_data.json']);
    if (realMountsAllowed) await mounter.unmount(other);
  });
});

describe('safe removal rules that need no mounts', () => {
  const noMounts: MountInfoReader = () => Promise.resolve([]);

  it.each([
    { name: 'the root dir itself', path: () => root, want: () => `refusing to remove ${root}: it is the root dir ${root}` },
    { name: 'a path outside the root', path: () => join(dir, 'elsewhere'), want: () => `refusing to remove ${join(dir, 'elsewhere')}: it is outside the root dir ${root}` },
    { name: 'a parent of the root', path: () => dir, want: () => `refusing to remove ${dir}: it is outside the root dir ${root}` },
    { name: 'anything when the root dir is /', path: () => join(dir, 'elsewhere'), rootDir: '/', want: () => `refusing to remove ${join(dir, 'elsewhere')}: the root dir must not be /` },
    { name: 'a relative path', path: () => 'pods/x', want: () => 'refusing to remove pods/x: it is not an absolute path' },
    { name: 'the root dir spelled with dot-dot', path: () => join(pod, '..', '..'), want: () => `refusing to remove ${join(pod, '..', '..')}: it is the root dir ${root}` },
  ])('refuses $name', async ({ path, want, rootDir }) => {
    await layout(dir, ['elsewhere/']);
    const err = await refusedError(safeRemove(path(), { root: rootDir ?? root, mountInfo: noMounts }));
    expect(err.reason).toBe(want());
    const tree = await safeRemoveTree(path(), { root: rootDir ?? root, mountInfo: noMounts });
    expect(tree).toEqual({ removed: [], refused: [{ path: path(), reason: want() }] });
  });

  it.each([
    { name: 'a non-empty directory', setup: ['d/f'], path: 'd', want: 'it is not empty' },
    { name: 'an unknown file', setup: ['notes.txt'], path: 'notes.txt', want: 'it is not a known metadata file (only vol_data.json may be removed)' },
    { name: 'a symlink inside the root', setup: ['d/'], path: 'link', want: `it is a symlink to d (symlinks are never followed, and only allowed names are unlinked)` },
  ])('strictly refuses $name', async ({ setup, path, want }) => {
    await layout(pod, setup);
    await symlink('d', join(pod, 'link'));
    const err = await refusedError(safeRemove(join(pod, path), { root, mountInfo: noMounts }));
    expect(err.reason).toBe(`refusing to remove ${join(pod, path)}: ${want}`);
  });

  it('treats a missing path as already removed', async () => {
    expect(await safeRemove(join(pod, 'gone'), { root, mountInfo: noMounts })).toEqual({ removed: [], refused: [] });
    expect(await safeRemoveTree(join(pod, 'gone', 'deeper'), { root, mountInfo: noMounts })).toEqual({ removed: [], refused: [] });
  });

  it('reads the mount table again right before each removal, so a mount that appears mid-way is refused', async () => {
    await layout(pod, ['a/', 'b/']);
    const late: MountInfo = {
      id: 99, parentId: 1, major: 0, minor: 99, root: '/', mountPoint: join(pod, 'b'),
      mountOptions: ['rw'], optionalFields: [], fsType: 'tmpfs', source: 'tmpfs', superOptions: ['rw'],
    };
    let reads = 0;
    const reader: MountInfoReader = () => Promise.resolve(++reads === 1 ? [] : [late]);

    const result = await safeRemoveTree(pod, { root, mountInfo: reader });
    expect(result.removed).toEqual([join(pod, 'a')]);
    expect(reasons(result)).toEqual([`refusing to remove ${join(pod, 'b')}: it is a mount point`, `refusing to remove ${pod}: it is not empty (1 entry kept, see their reasons)`]);
    expect(reads).toBeGreaterThanOrEqual(3);
  });

  it('refuses mount points listed in a mountinfo fixture file', async () => {
    await layout(pod, ['volumes/kubernetes.io~csi/pvc-1/mount/', 'volumes/kubernetes.io~csi/pvc-1/vol_data.json']);
    const mountPoint = join(pod, 'volumes', 'kubernetes.io~csi', 'pvc-1', 'mount');
    const fixture = join(dir, 'mountinfo');
    const entry: MountInfo = {
      id: 40, parentId: 1, major: 8, minor: 16, root: '/', mountPoint,
      mountOptions: ['rw'], optionalFields: ['shared:5'], fsType: 'ext4', source: '/dev/sdb', superOptions: ['rw'],
    };
    await writeFile(fixture, `1 0 8:1 / / rw - ext4 /dev/sda1 rw\n${formatMountInfoLine(entry)}\n`);
    const mountInfo = () => readMountInfo(fixture);

    expect((await refusedError(safeRemove(mountPoint, { root, mountInfo }))).reason).toBe(`refusing to remove ${mountPoint}: it is a mount point`);
    const tree = await safeRemoveTree(pod, { root, mountInfo, volumeDirsVerifiedUnmounted: true });
    expect(tree).toEqual({ removed: [], refused: [{ path: pod, reason: `refusing to remove ${pod}: it contains a mount point at ${mountPoint}` }] });

    await writeFile(fixture, '1 0 8:1 / / rw - ext4 /dev/sda1 rw\n');
    expect((await safeRemoveTree(pod, { root, mountInfo, volumeDirsVerifiedUnmounted: true })).refused).toEqual([]);
    expect(await exists(pod)).toBe(false);
  });

  it('resolves a symlinked root and reports resolved paths', async () => {
    const alias = join(dir, 'kubelet-alias');
    await symlink(root, alias);
    await layout(pod, ['x/']);
    const result = await safeRemove(join(alias, 'pods', 'pod-uid-1', 'x'), { root: alias, mountInfo: noMounts });
    expect(result.removed).toEqual([join(pod, 'x')]);
  });
});
