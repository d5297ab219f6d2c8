import { describe, expect, it } from 'vitest';
import type { MountInfo } from '../mount-utils/mountinfo.ts';
import { checkMountTableShowsRootDir, type MountTableCheckFs } from './mount-table-check.ts';

/** dev_t of major:minor, as glibc's makedev (small numbers). */
const dev = (major: number, minor: number): number => major * 256 + minor;

function mount(id: number, mountPoint: string, major: number, minor: number, fsType = 'ext4'): MountInfo {
  return { id, parentId: 1, major, minor, root: '/', mountPoint, mountOptions: ['rw'], optionalFields: [], fsType, source: '/dev/x', superOptions: ['rw'] };
}

/** A tree of directories with devices; readdir lists the children. */
function treeFs(dirs: Record<string, number>): MountTableCheckFs {
  return {
    lstat: (p) => {
      const d = dirs[p];
      if (d === undefined) return Promise.reject(Object.assign(new Error(`ENOENT: ${p}`), { code: 'ENOENT' }));
      return Promise.resolve({ dev: d, isDirectory: () => true, isSymbolicLink: () => false });
    },
    readdir: (p) => Promise.resolve(Object.keys(dirs).filter((k) => k.startsWith(`${p}/`) && !k.slice(p.length + 1).includes('/')).map((k) => k.slice(p.length + 1))),
    realpath: (p) => Promise.resolve(p),
  };
}

const ROOT = '/var/lib/kubelet';
const vol = (uid: string, name: string) => `${ROOT}/pods/${uid}/volumes/kubernetes.io~projected/${name}`;

describe('checkMountTableShowsRootDir', () => {
  const dirs = (n: number): Record<string, number> => {
    const out: Record<string, number> = { [ROOT]: dev(8, 1), [`${ROOT}/pods`]: dev(8, 1) };
    for (let i = 0; i < n; i++) {
      out[`${ROOT}/pods/p${String(i)}`] = dev(8, 1);
      out[`${ROOT}/pods/p${String(i)}/volumes`] = dev(8, 1);
      out[`${ROOT}/pods/p${String(i)}/volumes/kubernetes.io~projected`] = dev(8, 1);
      out[vol(`p${String(i)}`, 'token')] = dev(0, 100 + i);
    }
    return out;
  };
  const table = (n: number): MountInfo[] => [mount(1, '/', 8, 1), ...Array.from({ length: n }, (_, i) => mount(10 + i, vol(`p${String(i)}`, 'token'), 0, 100 + i, 'tmpfs'))];

  it('accepts the table of the root dir: its device, every listed mount, every volume mount on disk', async () => {
    expect(await checkMountTableShowsRootDir(ROOT, table(3), treeFs(dirs(3)))).toEqual({
      ok: true,
      detail: `${ROOT} is on 8:1 (ext4 at /) as listed; 3 listed mounts below it verified; 3 volume mounts seen on disk, all listed`,
    });
  });

  it('refuses the table of a container that sees the root dir but none of the volume mounts', async () => {
    const r = await checkMountTableShowsRootDir(ROOT, [mount(1, '/', 0, 50, 'overlay'), mount(2, ROOT, 8, 1)], treeFs(dirs(2)));
    expect(r).toEqual({ ok: false, reason: expect.stringMatching(new RegExp(`^${vol('p0', 'token')} is the root of another filesystem \\(device 0:100\\), but the mount table given with --mountinfo does not list it`)) as string });
  });

  it('refuses rather than judging on a sample when there is too much to verify', async () => {
    const r = await checkMountTableShowsRootDir(ROOT, table(5), treeFs(dirs(5)), 4);
    expect(r).toEqual({ ok: false, reason: `more than 4 mounts and volume directories to verify under ${ROOT}; refusing rather than judging on a sample` });
  });
});
