/**
 * Does the mount table the agent was given (`--mountinfo`) describe the kubelet root dir the
 * agent reads (`--root-dir`)? The orphan cleanup decides what is mounted from that table; a table
 * of another mount namespace (the agent container's own `/proc/self/mountinfo` without mount
 * propagation, a copy from another node, a path typo that points at another process's table)
 * lists none of the kubelet's volume mounts, so every pod directory would look unmounted.
 *
 * "The table shows the root dir" means, precisely, all three of:
 *
 * 1. **The root dir's filesystem**: the mount the table says holds the root dir (the last-listed
 *    mount with the longest mount point that is the root dir or one of its parents) has the
 *    device (`major:minor`) that stat(2) reports for the root dir.
 * 2. **Every listed mount exists**: each mount point the table lists below the root dir (the
 *    top-most mount at that path) exists here and stat(2) reports the listed device for it.
 * 3. **Every visible mount is listed**: each pod volume directory
 *    `<root>/pods/<uid>/volumes/<plugin>/<name>` (for CSI its `mount` child, the publish target)
 *    whose device differs from its parent directory's (it is the root of another filesystem: a tmpfs for secrets and service account
 *    tokens, a CSI or NFS mount) is a mount point in the table.
 *
 * (1) catches a table in which the root dir lies on another filesystem; (2) a table with mounts
 * this namespace does not have; (3) the common mistake, a table that shows the root dir's own
 * filesystem but none of the volume mounts below it — on any node that runs a pod with a
 * service account token there is at least one such mount. A bind mount from the same filesystem
 * has no device boundary and cannot be confirmed this way; the cleanup's own rules (files are
 * never removed, only empty directories) cover it. On btrfs, where stat(2) reports a
 * per-subvolume device, (1) or (2) can refuse a correct table: the check fails closed.
 *
 * The check only reads (lstat, readdir, realpath), at most {@link MAX_MOUNT_TABLE_PROBES} paths;
 * beyond that it refuses rather than judging on a sample.
 */
import { join } from 'node:path';
import { DefaultKubeletPodsDirName } from '../kubelet-constants.ts';
import { mountsAt, pathWithinOrEqual, splitDev } from '../mount-utils/mount-table.ts';
import type { MountInfo } from '../mount-utils/mountinfo.ts';
import type { WalkStat } from './pod-dir-walk.ts';
import { errorMessage } from '../volume/errors.ts';

/** The CSI plugin's directory name under a pod's `volumes/` (`kubernetes.io/csi`, escaped). */
const CSI_PLUGIN_DIR = 'kubernetes.io~csi';

/** Paths stat'ed at most per check (listed mounts plus pod volume directories). */
const MAX_MOUNT_TABLE_PROBES = 4096;

/** The read-only calls of the check. */
export interface MountTableCheckFs {
  lstat(path: string): Promise<Pick<WalkStat, 'dev' | 'isDirectory' | 'isSymbolicLink'>>;
  readdir(path: string): Promise<string[]>;
  realpath(path: string): Promise<string>;
}

export type MountTableCheck = { ok: true; detail: string } | { ok: false; reason: string };

function devText(dev: { major: number; minor: number }): string {
  return `${String(dev.major)}:${String(dev.minor)}`;
}

function devOf(st: { dev: number }): { major: number; minor: number } {
  return splitDev(BigInt(st.dev));
}

function sameDev(a: { major: number; minor: number }, b: { major: number; minor: number }): boolean {
  return a.major === b.major && a.minor === b.minor;
}

function errText(err: unknown): string {
  return (err as NodeJS.ErrnoException | null)?.code ?? (errorMessage(err));
}

/** Lists a directory; [] when it is missing or unreadable (nothing below it can be checked, nor needs to be). */
async function names(fs: MountTableCheckFs, dir: string): Promise<string[]> {
  return fs.readdir(dir).catch(() => []);
}

/**
 * Checks `table` against the root dir as this process sees it (see the module comment).
 * `rootDir` must be resolved (no symlinks), as mountinfo paths are.
 */
export async function checkMountTableShowsRootDir(rootDir: string, table: readonly MountInfo[], fs: MountTableCheckFs, maxProbes = MAX_MOUNT_TABLE_PROBES): Promise<MountTableCheck> {
  const source = 'the mount table given with --mountinfo';
  // 1. The root dir's filesystem.
  const holders = table.filter((e) => pathWithinOrEqual(rootDir, e.mountPoint));
  const longest = Math.max(-1, ...holders.map((e) => e.mountPoint.length));
  const holder = holders.filter((e) => e.mountPoint.length === longest).at(-1);
  if (holder === undefined) return { ok: false, reason: `${source} lists no mount that holds ${rootDir}; it is not this host's table` };
  let rootStat;
  try {
    rootStat = await fs.lstat(rootDir);
  } catch (err) {
    return { ok: false, reason: `${rootDir} cannot be examined (${errText(err)})` };
  }
  if (!sameDev(devOf(rootStat), holder)) {
    return {
      ok: false,
      reason: `${source} says ${rootDir} is on device ${devText(holder)} (${holder.fsType} mounted at ${holder.mountPoint}), but the directory is on device ${devText(devOf(rootStat))}: the table is another mount namespace's`,
    };
  }

  // 2. Every listed mount below the root dir exists with the listed device.
  let probes = 0;
  const below = [...new Set(table.filter((e) => e.mountPoint !== rootDir && pathWithinOrEqual(e.mountPoint, rootDir)).map((e) => e.mountPoint))];
  for (const mountPoint of below) {
    if (++probes > maxProbes) return { ok: false, reason: `more than ${String(maxProbes)} mounts and volume directories to verify under ${rootDir}; refusing rather than judging on a sample` };
    const top = mountsAt(table, mountPoint).at(-1);
    if (top === undefined) continue;
    let st;
    try {
      st = await fs.lstat(mountPoint);
      // A stand-in bind mount (unprivileged mounter) is a symlink to its source; a kernel mount point never is.
      if (st.isSymbolicLink()) st = await fs.lstat(await fs.realpath(mountPoint));
    } catch (err) {
      return { ok: false, reason: `${source} lists a mount at ${mountPoint}, which cannot be examined here (${errText(err)}): the table is another mount namespace's or stale` };
    }
    if (!sameDev(devOf(st), top)) {
      return { ok: false, reason: `${source} lists ${mountPoint} on device ${devText(top)}, but it is on device ${devText(devOf(st))} here: the table is another mount namespace's or stale` };
    }
  }

  // 3. Every pod volume directory that is the root of another filesystem is listed.
  const mountPoints = new Set(table.map((e) => e.mountPoint));
  const podsDir = join(rootDir, DefaultKubeletPodsDirName);
  let boundaries = 0;
  for (const uid of await names(fs, podsDir)) {
    const volumesDir = join(podsDir, uid, 'volumes');
    for (const plugin of await names(fs, volumesDir)) {
      const pluginDir = join(volumesDir, plugin);
      let parentDev;
      try {
        parentDev = devOf(await fs.lstat(pluginDir));
      } catch {
        continue;
      }
      for (const name of await names(fs, pluginDir)) {
        // CSI publishes at `<name>/mount` (vol_data.json sits beside it); every other plugin at `<name>`.
        const volumeDir = plugin === CSI_PLUGIN_DIR ? join(pluginDir, name, 'mount') : join(pluginDir, name);
        const parent = plugin === CSI_PLUGIN_DIR ? await fs.lstat(join(pluginDir, name)).then(devOf, () => null) : parentDev;
        if (parent === null) continue;
        if (++probes > maxProbes) return { ok: false, reason: `more than ${String(maxProbes)} mounts and volume directories to verify under ${rootDir}; refusing rather than judging on a sample` };
        const st = await fs.lstat(volumeDir).catch(() => null);
        if (st === null || st.isSymbolicLink() || sameDev(devOf(st), parent)) continue;
        boundaries++;
        if (!mountPoints.has(volumeDir)) {
          return {
            ok: false,
            reason: `${volumeDir} is the root of another filesystem (device ${devText(devOf(st))}), but ${source} does not list it: the table is another mount namespace's (is --mountinfo the kubelet's, e.g. /proc/1/mountinfo with hostPID, and does the root dir arrive with mount propagation?)`,
          };
        }
      }
    }
  }
  return {
    ok: true,
    detail: `${rootDir} is on ${devText(holder)} (${holder.fsType} at ${holder.mountPoint}) as listed; ${String(below.length)} listed mounts below it verified; ${String(boundaries)} volume mounts seen on disk, all listed`,
  };
}
