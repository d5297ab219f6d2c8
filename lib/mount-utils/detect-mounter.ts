/**
 * Decides once, at start, whether this process may mount. Being root is not enough (a container
 * without CAP_SYS_ADMIN, a user namespace, seccomp), so the decision is proven by a probe: a
 * tmpfs is mounted on a fresh temporary directory, must show up in mountinfo, and must unmount
 * cleanly. Anything short of that selects the unprivileged mounter, with the reason spelled out
 * for the log and the dashboard snapshot.
 */
import { mkdtemp, rmdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileNoShell } from './exec.ts';
import type { ExecFn } from './exec.ts';
import { LinuxMounter } from './linux-mounter.ts';
import { mountsAt } from './mount-table.ts';
import type { Mounter, MounterDescription } from './mounter.ts';
import { PROC_SELF_MOUNTINFO, readMountInfo } from './mountinfo.ts';
import { UnprivilegedMounter } from './unprivileged-mounter.ts';

export interface DetectMounterOptions {
  /** State directory of the unprivileged mounter, used if it is chosen. */
  unprivilegedStateDir: string;
  /**
   * False forbids mounting outright: no probe runs and the unprivileged mounter is chosen. The
   * caller decides (configuration; tests outside a private mount namespace). Default true.
   */
  allowMount?: boolean;
  /** Directory in which the probe's temporary mount point is created; default the OS temp dir. */
  probeParentDir?: string;
  /** Effective user id; default `process.getuid()` (non-POSIX platforms count as non-root). */
  uid?: number;
  /** Program runner for the probe and the Linux mounter; default execFile without a shell. */
  exec?: ExecFn;
  /** Mount table used to verify the probe and by the chosen mounter; default `/proc/self/mountinfo`. */
  mountInfoPath?: string;
}

/** The chosen mounter and why. */
export interface DetectedMounter extends MounterDescription {
  mounter: Mounter;
}

/** Source name of the probe mount, so a leaked probe is recognisable in mountinfo. */
const PROBE_SOURCE = 'volumescope-mount-probe';

export async function detectMounter(opts: DetectMounterOptions): Promise<DetectedMounter> {
  const mountInfoPath = opts.mountInfoPath ?? PROC_SELF_MOUNTINFO;
  const unprivileged = (reason: string): DetectedMounter => ({
    mounter: new UnprivilegedMounter({ stateDir: opts.unprivilegedStateDir, systemMountInfoPath: mountInfoPath }),
    kind: 'unprivileged',
    privileged: false,
    reason,
  });

  if (opts.allowMount === false) return unprivileged('mounting is disabled by configuration; using directories and symlinks instead of mounts');
  const uid = opts.uid ?? (typeof process.getuid === 'function' ? process.getuid() : -1);
  if (uid !== 0) return unprivileged(`not running as root (uid ${uid}); using directories and symlinks instead of mounts`);

  const linux = new LinuxMounter({ exec: opts.exec ?? execFileNoShell, mountInfoPath });
  const probeDir = await mkdtemp(join(opts.probeParentDir ?? tmpdir(), 'volumescope-mount-probe-'));
  let problem: string | null = null;
  try {
    await linux.mount(PROBE_SOURCE, probeDir, 'tmpfs', ['size=64k']);
  } catch (err) {
    problem = `the probe mount of a tmpfs on ${probeDir} failed: ${(err as Error).message}`;
  }
  if (problem === null) {
    const seen = mountsAt(await readMountInfo(mountInfoPath), probeDir).length > 0;
    try {
      await linux.unmount(probeDir);
      if (!seen) problem = `mount(8) reported success but ${probeDir} did not appear in ${mountInfoPath}`;
    } catch (err) {
      problem = `the probe tmpfs on ${probeDir} could not be unmounted (it may have leaked): ${(err as Error).message}`;
    }
  }
  if (problem !== null && mountsAt(await readMountInfo(mountInfoPath), probeDir).length > 0) {
    // The probe mount is still there: leave its directory alone rather than guess.
    return unprivileged(`running as root, but ${problem}; falling back to directories and symlinks`);
  }
  await rmdir(probeDir);
  if (problem !== null) return unprivileged(`running as root, but ${problem}; falling back to directories and symlinks`);
  return {
    mounter: linux,
    kind: 'linux',
    privileged: true,
    reason: `running as root and a probe tmpfs mount on a temporary directory succeeded and was unmounted; using mount(8) and umount(8)`,
  };
}
