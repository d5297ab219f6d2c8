/**
 * Test support for code that mounts. Real mounts happen only when VOLUMESCOPE_MOUNT_NS=1, which
 * `npm run test:unit` sets after entering a private mount namespace as root; everywhere else
 * tests get the unprivileged mounter, so the same tests run (never skipped) on a laptop.
 */
import { access, mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { execFileNoShell } from '../exec.ts';
import { LinuxMounter } from '../linux-mounter.ts';
import { mountsAtOrBelow } from '../mount-table.ts';
import type { Mounter } from '../mounter.ts';
import { readMountInfo } from '../mountinfo.ts';
import { SYNTHETIC_MOUNT_ID_BASE, UnprivilegedMounter } from '../unprivileged-mounter.ts';

/** True when the tests run inside a private mount namespace and may make real mounts. */
export const realMountsAllowed = process.env.VOLUMESCOPE_MOUNT_NS === '1';

/** Name of the mode, for test titles. */
export const mountMode = realMountsAllowed ? 'linux (private mount namespace)' : 'unprivileged fallback';

/** A fresh temporary directory, resolved (mountinfo reports resolved paths). */
export async function makeTempDir(prefix = 'volumescope-mount-'): Promise<string> {
  return realpath(await mkdtemp(join(tmpdir(), prefix)));
}

/** The mounter tests use: real mounts in the private namespace, stand-ins elsewhere. */
export function testMounter(stateDir: string): Mounter {
  return realMountsAllowed ? new LinuxMounter() : new UnprivilegedMounter({ stateDir });
}

/**
 * Cleans up a test's temporary directory and returns the mount points that were left under it
 * (a test asserts this is empty). Leaked mounts, real or stand-in, are unmounted deepest first;
 * the directory is deleted only once nothing is mounted below it, so cleanup can never delete
 * through a mount. Throws if a leaked mount cannot be unmounted.
 */
export async function cleanUpTempDir(dir: string, mounter?: Mounter): Promise<string[]> {
  const leaked = new Set<string>();
  for (let attempt = 0; attempt < 100; attempt++) {
    const below = [
      ...mountsAtOrBelow(await readMountInfo(), dir),
      ...(mounter === undefined ? [] : mountsAtOrBelow(await mounter.list(), dir)),
    ];
    const last = below.sort((a, b) => b.mountPoint.length - a.mountPoint.length)[0];
    if (last === undefined) {
      await rm(dir, { recursive: true, force: true });
      return [...leaked];
    }
    leaked.add(last.mountPoint);
    if (mounter !== undefined && mounter.kind === 'unprivileged' && last.id >= SYNTHETIC_MOUNT_ID_BASE) {
      await mounter.unmount(last.mountPoint);
    } else {
      const r = await execFileNoShell('umount', ['--', last.mountPoint]);
      if (r.exitCode !== 0) throw new Error(`cannot unmount leaked ${last.mountPoint}: ${r.stderr}`);
    }
  }
  throw new Error(`too many leaked mounts under ${dir}`);
}

/**
 * Creates directories and files below `base` (paths relative to it; a trailing `/` makes a
 * directory, anything else a file holding `x`), parents included.
 */
export async function writeLayout(base: string, paths: readonly string[]): Promise<void> {
  for (const p of paths) {
    const abs = join(base, p);
    if (p.endsWith('/')) await mkdir(abs, { recursive: true });
    else {
      await mkdir(dirname(abs), { recursive: true });
      await writeFile(abs, 'x');
    }
  }
}

/** Whether `path` exists (a dangling symlink does not). */
export function pathExists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
