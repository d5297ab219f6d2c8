/**
 * "Nothing is left mounted under this directory": the last check of the demo's and the e2e
 * stack's teardown, and the guard of `npm run demo:reset`.
 *
 * Two kinds of mounts count:
 * - kernel mounts, from /proc/self/mountinfo read now (as root the demo runs in a private mount
 *   namespace, so this is the namespace's table: the one the agents and the driver mounted in);
 * - the stand-in mounts of the unprivileged mounter (non-root: directories and symlinks recorded in
 *   `<agent root>/unprivileged-mounter/mountinfo`).
 * Leftovers are unmounted only through lib/mount-utils (LinuxMounter / UnprivilegedMounter), the
 * deepest first, never by removing directories. Loop devices are not mounts, but a loop device
 * still backed by a disk image below the directory would outlive the demo, so they are reported.
 */
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { unprivilegedMounterDirName } from '../../agent/node/node-agent.ts';
import { mountsAtOrBelow, pathWithinOrEqual } from '../../lib/mount-utils/mount-table.ts';
import { LinuxMounter, UnprivilegedMounter } from '../../lib/mount-utils/mounter.ts';
import { readMountInfo } from '../../lib/mount-utils/mountinfo.ts';
import { errorMessage } from '../../lib/volume/errors.ts';

export interface LeftoverMount {
  mountPoint: string;
  /** `kernel`: in /proc/self/mountinfo; `stand-in`: in an unprivileged mounter's table. */
  kind: 'kernel' | 'stand-in';
  /** For stand-ins: the agent root dir whose table lists it. */
  agentRoot?: string;
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

/** `dir` with symlinks resolved (mountinfo reports resolved paths); `dir` itself when missing. */
async function resolved(dir: string): Promise<string> {
  try {
    return await realpath(dir);
  } catch {
    return dir;
  }
}

function standInMounter(agentRoot: string): UnprivilegedMounter {
  return new UnprivilegedMounter({ stateDir: join(agentRoot, unprivilegedMounterDirName), systemMountInfoPath: null });
}

/** Every mount at or below `dir`: the kernel's, and the stand-ins recorded below `agentRoots`. */
export async function findLeftoverMounts(dir: string, agentRoots: readonly string[]): Promise<LeftoverMount[]> {
  const base = await resolved(dir);
  const out: LeftoverMount[] = mountsAtOrBelow(await readMountInfo(), base).map((m) => ({ mountPoint: m.mountPoint, kind: 'kernel' }));
  for (const root of agentRoots) {
    if (!(await exists(join(root, unprivilegedMounterDirName)))) continue;
    for (const m of await standInMounter(root).list()) {
      out.push({ mountPoint: m.mountPoint, kind: 'stand-in', agentRoot: root });
    }
  }
  return out;
}

export interface UnmountReport {
  unmounted: string[];
  failed: { mountPoint: string; error: string }[];
}

/** Unmounts `leftovers`, deepest first, through lib/mount-utils; reports what worked. */
export async function unmountLeftovers(leftovers: readonly LeftoverMount[]): Promise<UnmountReport> {
  const report: UnmountReport = { unmounted: [], failed: [] };
  const linux = new LinuxMounter();
  const ordered = [...leftovers].sort((a, b) => b.mountPoint.length - a.mountPoint.length);
  for (const m of ordered) {
    try {
      if (m.kind === 'kernel') await linux.unmount(m.mountPoint);
      else await standInMounter(m.agentRoot ?? '').unmount(m.mountPoint);
      report.unmounted.push(m.mountPoint);
    } catch (err) {
      report.failed.push({ mountPoint: m.mountPoint, error: errorMessage(err) });
    }
  }
  return report;
}

/** Loop devices (`/dev/loopN`) whose backing file lies at or below `dir`. */
export async function loopDevicesBackedBelow(dir: string): Promise<string[]> {
  const base = await resolved(dir);
  let names: string[];
  try {
    names = await readdir('/sys/block');
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const name of names.filter((n) => /^loop\d+$/.test(n))) {
    let backing: string;
    try {
      backing = (await readFile(join('/sys/block', name, 'loop', 'backing_file'), 'utf8')).trim();
    } catch {
      continue; // not attached
    }
    // The kernel appends " (deleted)" when the image was removed while attached.
    const file = backing.replace(/ \(deleted\)$/, '');
    if (pathWithinOrEqual(file, base)) out.push(`/dev/${name} (${backing})`);
  }
  return out;
}
