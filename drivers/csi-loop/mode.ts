/**
 * Chooses between the privileged (loop devices, real mounts) and unprivileged (directories and
 * symlinks) backends.
 *
 * `auto` picks privileged only when ALL of these hold:
 * - the process runs as root;
 * - it runs in a private mount namespace: VOLUMESCOPE_MOUNT_NS=1 says so (the test runner sets
 *   it inside `unshare --mount --propagation private`), or /proc/self/ns/mnt differs from
 *   PID 1's. This goes beyond "root and tmpfs works" on purpose: the project rule is to never
 *   mount in the host's namespace by accident. Pass `--mode privileged` to mount anyway;
 * - a probe `mount -t tmpfs` on a scratch directory in the state dir works (then it is undone).
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { DriverMode } from './state-store.ts';
import { run } from './host-tools.ts';

export type RequestedMode = DriverMode | 'auto';

export async function resolveMode(requested: RequestedMode, stateDir: string): Promise<DriverMode> {
  if (requested !== 'auto') {
    return requested;
  }
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!isRoot || !(await inPrivateMountNamespace())) {
    return 'unprivileged';
  }
  return (await tmpfsProbeWorks(stateDir)) ? 'privileged' : 'unprivileged';
}

async function inPrivateMountNamespace(): Promise<boolean> {
  if (process.env.VOLUMESCOPE_MOUNT_NS === '1') {
    return true;
  }
  try {
    const [own, init] = await Promise.all([fs.readlink('/proc/self/ns/mnt'), fs.readlink('/proc/1/ns/mnt')]);
    return own !== init;
  } catch {
    return false;
  }
}

async function tmpfsProbeWorks(stateDir: string): Promise<boolean> {
  await fs.mkdir(stateDir, { recursive: true });
  const probe = await fs.mkdtemp(path.join(stateDir, '.mount-probe-'));
  try {
    await run('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'csi-loop-probe', probe]);
  } catch {
    await fs.rmdir(probe);
    return false;
  }
  await run('umount', [probe]);
  await fs.rmdir(probe);
  return true;
}
