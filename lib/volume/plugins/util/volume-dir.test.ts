import { mkdir, rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Mounter } from '../../../mount-utils/mounter.ts';
import { parseMountInfoLine, type MountInfo } from '../../../mount-utils/mountinfo.ts';
import { makeTempDir } from '../../../mount-utils/testing/mount-test-env.ts';
import { mountsAt, topMountAt } from './volume-dir.ts';

let base: string;
beforeEach(async () => {
  base = await makeTempDir('volumescope-volume-dir-');
});
afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

function entry(id: number, mountPoint: string, fsType: string): MountInfo {
  return parseMountInfoLine(`${id} 1 0:${id} / ${mountPoint} rw,relatime shared:1 - ${fsType} ${fsType} rw`);
}

/** A mounter whose table is `table`; only `list` is used by the functions under test. */
function tableMounter(table: readonly MountInfo[]): Mounter {
  const fail = (): never => {
    throw new Error('not used');
  };
  return {
    kind: 'unprivileged',
    privileged: false,
    mount: fail,
    unmount: fail,
    list: () => Promise.resolve([...table]),
    isLikelyNotMountPoint: fail,
    isMountPoint: fail,
    getMountRefs: fail,
  };
}

describe('topMountAt', () => {
  it('finds the top entry at a path reached through a symlinked parent, as mountsAt does', async () => {
    const real = join(base, 'real', 'volumes');
    await mkdir(join(real, 'scratch'), { recursive: true });
    await symlink(join(base, 'real'), join(base, 'link'));
    const mounter = tableMounter([
      entry(10, join(real, 'scratch'), 'ext4'),
      entry(11, join(base, 'elsewhere', 'scratch'), 'tmpfs'),
      entry(12, join(real, 'scratch'), 'tmpfs'),
    ]);
    const viaLink = join(base, 'link', 'volumes', 'scratch');

    const top = await topMountAt(mounter, viaLink);

    expect(top?.id).toBe(12);
    expect(top).toEqual((await mountsAt(mounter, viaLink)).at(-1));
  });

  it('is null when only a mount with the same name elsewhere exists, or nothing ends in the name', async () => {
    await mkdir(join(base, 'volumes', 'scratch'), { recursive: true });
    const mounter = tableMounter([entry(11, join(base, 'elsewhere', 'scratch'), 'tmpfs'), entry(13, join(base, 'volumes', 'cache'), 'tmpfs')]);

    expect(await topMountAt(mounter, join(base, 'volumes', 'scratch'))).toBeNull();
    expect(await topMountAt(mounter, join(base, 'volumes', 'data'))).toBeNull();
  });

  it('is null when the parent does not exist', async () => {
    const mounter = tableMounter([entry(14, join(base, 'gone', 'scratch'), 'tmpfs')]);

    expect(await topMountAt(mounter, join(base, 'gone', 'scratch'))).toBeNull();
  });
});
