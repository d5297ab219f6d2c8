/**
 * Chooses between the privileged (loop devices, real mounts) and unprivileged (directories and
 * symlinks) backends, and says why ({@link ModeDecision.reason}, which the driver logs).
 *
 * `auto` picks privileged only when ALL of these hold:
 * - the process runs as root;
 * - it does not run in PID 1's mount namespace. The project rule is to never mount in the host's
 *   namespace by accident, so: VOLUMESCOPE_MOUNT_NS=1 says the namespace is private (the test
 *   runner sets it inside `unshare --mount --propagation private`); else /proc/self/ns/mnt is
 *   compared with PID 1's, and the same namespace means unprivileged. Where PID 1's namespace
 *   cannot be read (a sandbox or container that hides it, even from root), the mount probe
 *   decides, unless the root mount is shared (`shared:N` in mountinfo): a probe mount there
 *   would propagate to other namespaces, so that counts as the host's. Pass `--mode privileged`
 *   to mount anyway;
 * - a probe `mount -t tmpfs` on a scratch directory in the state dir succeeds, the mount shows in
 *   /proc/self/mountinfo, and it unmounts cleanly (like the agent's own mounter probe; nothing of
 *   the agent is imported). A probe mount that cannot be unmounted keeps its directory.
 * Each step's outcome ends up in the reason, so a fallback to unprivileged is never silent.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { readMountPoints, run } from './host-tools.ts';
import type { DriverMode } from './state-store.ts';

export type RequestedMode = DriverMode | 'auto';

/** The mode chosen and why, in words an operator can act on. */
export interface ModeDecision {
  mode: DriverMode;
  requested: RequestedMode;
  reason: string;
}

/** What {@link resolveMode} asks of the host; tests replace parts of {@link hostModeProbe}. */
export interface ModeProbe {
  isRoot: () => boolean;
  /** `VOLUMESCOPE_MOUNT_NS`. */
  mountNamespaceEnv: () => string | undefined;
  /** readlink of `/proc/<pid>/ns/mnt`, e.g. `mnt:[4026531841]`; rejects when it cannot be read. */
  mountNamespace: (pid: 'self' | '1') => Promise<string>;
  /** The raw text of /proc/self/mountinfo. */
  mountInfo: () => Promise<string>;
  /** Every mount point of this namespace, read fresh. */
  mountPoints: () => Promise<string[]>;
  mount: (target: string) => Promise<void>;
  unmount: (target: string) => Promise<void>;
}

export const hostModeProbe: ModeProbe = {
  isRoot: () => typeof process.getuid === 'function' && process.getuid() === 0,
  mountNamespaceEnv: () => process.env.VOLUMESCOPE_MOUNT_NS,
  mountNamespace: (pid) => fs.readlink(`/proc/${pid}/ns/mnt`),
  mountInfo: () => fs.readFile('/proc/self/mountinfo', 'utf8'),
  mountPoints: readMountPoints,
  mount: async (target) => {
    await run('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'csi-loop-probe', target]);
  },
  unmount: async (target) => {
    await run('umount', [target]);
  },
};

export async function resolveMode(requested: RequestedMode, stateDir: string, probe: ModeProbe = hostModeProbe): Promise<ModeDecision> {
  if (requested !== 'auto') {
    return { mode: requested, requested, reason: `requested with --mode ${requested}` };
  }
  const unprivileged = (reason: string): ModeDecision => ({ mode: 'unprivileged', requested, reason });
  if (!probe.isRoot()) {
    return unprivileged('not running as root');
  }
  const namespace = await privateNamespace(probe);
  if (!namespace.private) {
    return unprivileged(`${namespace.why}; pass --mode privileged to mount anyway`);
  }
  const problem = await tmpfsProbe(stateDir, probe);
  if (problem !== null) {
    return unprivileged(`${namespace.why}, but ${problem}`);
  }
  return { mode: 'privileged', requested, reason: `running as root, ${namespace.why}, and a probe tmpfs mount showed in /proc/self/mountinfo and unmounted cleanly` };
}

async function privateNamespace(probe: ModeProbe): Promise<{ private: boolean; why: string }> {
  if (probe.mountNamespaceEnv() === '1') {
    return { private: true, why: 'VOLUMESCOPE_MOUNT_NS=1 says the mount namespace is private' };
  }
  let own: string;
  let init: string;
  try {
    [own, init] = await Promise.all([probe.mountNamespace('self'), probe.mountNamespace('1')]);
  } catch (err) {
    const unreadable = `PID 1's mount namespace cannot be read (${errorText(err)})`;
    if (await rootMountIsShared(probe)) {
      return { private: false, why: `${unreadable} and the root mount is shared, so mounts would propagate to other namespaces` };
    }
    return { private: true, why: `${unreadable} and the root mount is not shared, so the mount probe decides` };
  }
  if (own === init) {
    return { private: false, why: `running in PID 1's mount namespace (${own}): mounts would land on the host` };
  }
  return { private: true, why: `the mount namespace ${own} is not PID 1's (${init})` };
}

/** Whether the mount at `/` has shared propagation (an optional field `shared:N`). */
async function rootMountIsShared(probe: ModeProbe): Promise<boolean> {
  let text: string;
  try {
    text = await probe.mountInfo();
  } catch {
    return true; // Unknown: assume the worst.
  }
  for (const line of text.split('\n')) {
    const [head] = line.split(' - ');
    const fields = (head ?? '').split(' ');
    if (fields[4] === '/') return fields.slice(6).some((f) => f.startsWith('shared:'));
  }
  return true;
}

/** Mounts, verifies and unmounts a tmpfs in the state dir; returns what went wrong, or null. */
async function tmpfsProbe(stateDir: string, probe: ModeProbe): Promise<string | null> {
  await fs.mkdir(stateDir, { recursive: true });
  // mountinfo shows real paths: resolve symlinks of the state dir first.
  const dir = await fs.mkdtemp(path.join(await fs.realpath(stateDir), '.mount-probe-'));
  try {
    await probe.mount(dir);
  } catch (err) {
    await fs.rmdir(dir);
    return `the probe mount of a tmpfs on ${dir} failed: ${errorText(err)}`;
  }
  let problem: string | null = null;
  if (!(await probe.mountPoints()).includes(dir)) {
    problem = `mount reported success but ${dir} did not appear in /proc/self/mountinfo`;
  }
  try {
    await probe.unmount(dir);
  } catch (err) {
    problem ??= `the probe tmpfs on ${dir} could not be unmounted: ${errorText(err)}`;
  }
  if ((await probe.mountPoints()).includes(dir)) {
    // Still mounted: leave the directory alone rather than remove below a mount.
    return problem ?? `the probe tmpfs on ${dir} is still mounted after umount`;
  }
  await fs.rmdir(dir);
  return problem;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
