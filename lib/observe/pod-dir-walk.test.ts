import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cleanUpTempDir, makeTempDir } from '../mount-utils/testing/mount-test-env.ts';
import { nodeReadOnlyFs, walkOneFilesystem } from './pod-dir-walk.ts';
import type { ReadOnlyFs } from './pod-dir-walk.ts';
import { layout } from './testing/kubelet-root.ts';

let dir: string;

beforeEach(async () => {
  dir = await makeTempDir('volumescope-pod-dir-walk-');
});

afterEach(async () => {
  expect(await cleanUpTempDir(dir)).toEqual([]);
});

const never = (): boolean => false;

describe('walkOneFilesystem', () => {
  it('lists entries in sorted pre-order with kinds and sizes, without following symlinks', async () => {
    await layout(dir, ['pod/b/file', 'pod/a/', 'outside/secret']);
    await symlink(join(dir, 'outside'), join(dir, 'pod', 'c-link'));
    const r = await walkOneFilesystem(join(dir, 'pod'), { isMountPoint: never, maxEntries: 100 });
    expect(r.truncated).toBe(false);
    expect(r.entries.map((e) => [e.path.slice(dir.length), e.kind, e.size])).toEqual([
      ['/pod', 'directory', 0],
      ['/pod/a', 'directory', 0],
      ['/pod/b', 'directory', 0],
      ['/pod/b/file', 'file', 1],
      ['/pod/c-link', 'symlink', join(dir, 'outside').length],
    ]);
  });

  it('does not enter a mount point or a directory on another device', async () => {
    await layout(dir, ['pod/mnt/inside', 'pod/other/inside']);
    const other = join(dir, 'pod', 'other');
    const fs: ReadOnlyFs = {
      ...nodeReadOnlyFs,
      lstat: async (p) => {
        const st = await nodeReadOnlyFs.lstat(p);
        return p.startsWith(other) ? { ...st, dev: st.dev + 1, isDirectory: () => st.isDirectory(), isFile: () => st.isFile(), isSymbolicLink: () => st.isSymbolicLink() } : st;
      },
    };
    const r = await walkOneFilesystem(join(dir, 'pod'), { fs, isMountPoint: (p) => p === join(dir, 'pod', 'mnt'), maxEntries: 100 });
    expect(r.entries.map((e) => [e.path.slice(dir.length), e.mountPoint, e.unlistedBoundary])).toEqual([
      ['/pod', false, false],
      ['/pod/mnt', true, false],
      ['/pod/other', false, true],
    ]);
  });

  it('flags the start itself when it is on another device than its parent', async () => {
    await mkdir(join(dir, 'pod'));
    const st = await nodeReadOnlyFs.lstat(dir);
    const r = await walkOneFilesystem(join(dir, 'pod'), { isMountPoint: never, maxEntries: 100, startParentDev: st.dev + 1 });
    expect(r.entries.map((e) => e.unlistedBoundary)).toEqual([true]);
  });

  it('stops at the entry budget and says so', async () => {
    await mkdir(join(dir, 'pod'));
    for (let i = 0; i < 10; i++) await writeFile(join(dir, 'pod', `f${i}`), '');
    const r = await walkOneFilesystem(join(dir, 'pod'), { isMountPoint: never, maxEntries: 4 });
    expect(r).toMatchObject({ truncated: true });
    expect(r.entries).toHaveLength(4);
  });

  it('gives nothing for a missing start', async () => {
    expect(await walkOneFilesystem(join(dir, 'missing'), { isMountPoint: never, maxEntries: 10 })).toEqual({ entries: [], truncated: false });
  });

  it('reads a file without following a symlink, and caps what it reads', async () => {
    await writeFile(join(dir, 'data'), 'abcdef');
    await symlink(join(dir, 'data'), join(dir, 'link'));
    expect(await nodeReadOnlyFs.readFileNoFollow(join(dir, 'data'), 4)).toEqual({ text: 'abcd', truncated: true });
    expect(await nodeReadOnlyFs.readFileNoFollow(join(dir, 'data'), 6)).toEqual({ text: 'abcdef', truncated: false });
    await expect(nodeReadOnlyFs.readFileNoFollow(join(dir, 'link'), 6)).rejects.toMatchObject({ code: 'ELOOP' });
  });
});
