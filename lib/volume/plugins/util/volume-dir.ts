/**
 * The pod volume directory (`<root>/pods/<uid>/volumes/<escaped plugin>/<name>`) from creation
 * to removal, shared by every in-tree plugin:
 *
 * - {@link ensureDir} / {@link ensureTmpfs}: SetUp's directory and the tmpfs the kubelet's
 *   emptyDir wrapper mounts (emptyDir `medium: Memory`, secret, projected, downward API).
 * - {@link tearDownVolumeDir}: TearDown's rules (docs/safety.md). The mount table
 *   is read fresh; whatever is mounted exactly at the volume dir is unmounted (SetUp put it
 *   there); a mount below it is refused; then only files the plugin owns and finally the empty
 *   directory are removed, each through `safeRemove`. Anything else in the directory is left
 *   where it is and reported, never deleted. The kubelet's emptyDir TearDown deletes
 *   recursively (`os.RemoveAll`); VolumeScope deliberately does not.
 */
import { lstatSync } from 'node:fs';
import { chmod, lstat, mkdir, readdir, realpath, writeFile } from 'node:fs/promises';
import { release } from 'node:os';
import { basename, dirname, isAbsolute, join, relative } from 'node:path';
import type { Mounter } from '../../../mount-utils/mounter.ts';
import type { MountInfo } from '../../../mount-utils/mountinfo.ts';
import { isSafeRemoveRefusedError, safeRemove } from '../../../mount-utils/safe-remove.ts';
import { hasErrnoCode, TearDownRefusedError, VolumeMountStateError } from './errors.ts';

/** Mode of the parent directories SetUp creates (`pods/<uid>/volumes/<plugin>`). */
export const VOLUME_PARENT_DIR_MODE = 0o750;
/** The kubelet emptyDir's `perm` (also the dir of every volume that wraps an emptyDir). */
export const EMPTY_DIR_MODE = 0o777;
/**
 * The plugin directory (`pods/<uid>/volumes/kubernetes.io~empty-dir`, `…~secret`, …) of an
 * emptyDir or a volume that wraps one: the kubelet's `os.MkdirAll(dir, 0777)` creates it, so
 * under its usual umask (022) it is 0755, not 0750 (kubelet-0 and agent-0 side by side).
 */
export const EMPTY_DIR_PARENT_MODE = 0o755;
/** The kubelet's emptyDir readiness file (`volumeutil.SetReady`), in the volume's meta dir. */
export const READY_FILE_NAME = 'ready';
/** Bounds the unmount loop for stacked mounts at one volume dir. */
const MAX_STACKED_UNMOUNTS = 16;
/** At most this many names are listed in a refusal. */
const LISTED_ENTRIES = 10;

/** What removals need: the mounter (fresh mount tables) and the kubelet root every removal stays below. */
export interface RemovalContext {
  mounter: Mounter;
  rootDir: string;
}

/**
 * The path as the kernel writes it in mountinfo: the parent with symlinks resolved, the last
 * component kept (a bind stand-in of the unprivileged mounter is itself a symlink). Null when
 * the parent does not exist.
 */
export async function mountTablePath(path: string): Promise<string | null> {
  try {
    return join(await realpath(dirname(path)), basename(path));
  } catch (err) {
    if (hasErrnoCode(err, 'ENOENT')) return null;
    throw err;
  }
}

/** The mount-table entries (read now) whose mount point is exactly `path`, bottom first. */
export async function mountsAt(mounter: Mounter, path: string): Promise<MountInfo[]> {
  const at = await mountTablePath(path);
  if (at === null) return [];
  return (await mounter.list()).filter((e) => e.mountPoint === at);
}

/**
 * The top mount-table entry (read now) whose mount point is exactly `path`, or null. The same
 * answer as the last of {@link mountsAt}, cheaper when nothing is mounted there: the kernel keeps
 * the last component of a mount point as given, so an entry at `path` ends in `basename(path)`, and
 * the parent's realpath is only resolved when some entry does. Reconstruction asks this for every
 * emptyDir on the node, nearly all of them plain directories.
 */
export async function topMountAt(mounter: Mounter, path: string): Promise<MountInfo | null> {
  const suffix = `/${basename(path)}`;
  // endsWith, not basename(): no string is made per entry (the table is scanned once per volume).
  const candidates = (await mounter.list()).filter((e) => e.mountPoint.endsWith(suffix));
  if (candidates.length === 0) return null;
  const at = await mountTablePath(path);
  if (at === null) return null;
  return candidates.filter((e) => e.mountPoint === at).at(-1) ?? null;
}

/** The mount-table entries (read now) strictly below `path`. */
async function mountsBelow(mounter: Mounter, path: string): Promise<MountInfo[]> {
  const at = await mountTablePath(path);
  if (at === null) return [];
  return (await mounter.list()).filter((e) => e.mountPoint !== at && isWithin(e.mountPoint, at));
}

/**
 * True when `path` is `base` or lies below it (both absolute and normalised). A child whose
 * name merely starts with `..` (`..data`) is inside; only a `..` path element leaves `base`.
 */
export function isWithin(path: string, base: string): boolean {
  const rel = relative(base, path);
  return rel === '' || (rel !== '..' && !rel.startsWith('../') && !isAbsolute(rel));
}

/**
 * Creates `dir` and gives it exactly `mode` whatever the umask, as the kubelet's emptyDir
 * `setupDir` does. Its parent (the plugin dir) is created with `parentMode`, the ones above it
 * (`pods/<uid>/volumes`) with {@link VOLUME_PARENT_DIR_MODE}, as the kubelet's pod data dirs. An
 * existing directory only gets its permission bits corrected (the sticky bit of a tmpfs root is
 * kept). Returns true when the directory was created by this call.
 */
export async function ensureDir(dir: string, mode: number, parentMode: number = VOLUME_PARENT_DIR_MODE): Promise<boolean> {
  if (isDirWithModeSync(dir, mode)) return false;
  const st = await lstat(dir).catch((err: unknown) => {
    if (hasErrnoCode(err, 'ENOENT')) return null;
    throw err;
  });
  if (st === null) {
    await mkdir(dirname(dirname(dir)), { recursive: true, mode: VOLUME_PARENT_DIR_MODE });
    await mkdir(dirname(dir), { recursive: true, mode: parentMode });
    await mkdir(dir, { mode });
    await chmod(dir, mode);
    return true;
  }
  if (st.isDirectory() && (st.mode & 0o777) !== mode) await chmod(dir, mode);
  return false;
}

/** utilkernel.TmpfsNoswapSupportKernelVersion: tmpfs takes `noswap` from Linux 6.4 on. */
const TMPFS_NOSWAP_KERNEL: readonly [number, number] = [6, 4];

/**
 * Whether a kernel release (`uname -r`, e.g. `6.8.0-45-generic`) takes tmpfs' `noswap` option:
 * 6.4 or later, as the kubelet's `swap.IsTmpfsNoswapOptionSupported` decides first. On an older
 * or unparsable release the kubelet then tries a test mount with the option; VolumeScope does
 * not (no mount the volume manager does not need) and answers false.
 */
export function kernelSupportsTmpfsNoswap(kernelRelease: string): boolean {
  const m = /^(\d+)\.(\d+)/.exec(kernelRelease);
  if (m === null) return false;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  return major > TMPFS_NOSWAP_KERNEL[0] || (major === TMPFS_NOSWAP_KERNEL[0] && minor >= TMPFS_NOSWAP_KERNEL[1]);
}

let noswapSupported: boolean | undefined;
/** {@link kernelSupportsTmpfsNoswap} of this kernel, decided once (the kubelet's sync.Once). */
export function tmpfsNoswapSupported(): boolean {
  noswapSupported ??= kernelSupportsTmpfsNoswap(release());
  return noswapSupported;
}

/**
 * SetUp of a memory-backed volume: the directory, then a tmpfs on it unless one is already
 * mounted there (idempotent, like the kubelet's `setupTmpfs`). `options` are tmpfs options such
 * as `size=1048576`. A different file system already mounted at `dir` is an error, never
 * stacked over. `noswap` is added when the kernel takes it ({@link tmpfsNoswapSupported}), as the
 * kubelet's emptyDir `generateTmpfsMountOptions` does, so that a secret in memory never goes to
 * swap. If the mount fails, a directory this call created is removed again (when empty), so a
 * failed SetUp leaves no orphan behind.
 */
export async function ensureTmpfs(ctx: RemovalContext, dir: string, options: readonly string[]): Promise<void> {
  const created = await ensureDir(dir, EMPTY_DIR_MODE, EMPTY_DIR_PARENT_MODE);
  const top = (await mountsAt(ctx.mounter, dir)).at(-1);
  if (top?.fsType === 'tmpfs') return;
  if (top !== undefined) {
    throw new VolumeMountStateError(`${dir} is already a mount point of a ${top.fsType} file system; refusing to mount a tmpfs over it`);
  }
  try {
    await ctx.mounter.mount('tmpfs', dir, 'tmpfs', tmpfsNoswapSupported() ? [...options, 'noswap'] : options);
  } catch (err) {
    if (created) await removeEmptyDirQuietly(ctx, dir);
    throw err;
  }
}

/**
 * The emptyDir meta dir of a volume (`getMetaDir`): `pods/<uid>/plugins/kubernetes.io~empty-dir/<name>`
 * for the pod volume dir `pods/<uid>/volumes/<plugin>/<volume>`; `name` is the volume's, or
 * `wrapped_<volume>` for the emptyDir a configMap, secret, downward API or projected volume wraps.
 */
export function emptyDirMetaDir(volumeDir: string, name: string): string {
  return join(dirname(dirname(dirname(volumeDir))), 'plugins', 'kubernetes.io~empty-dir', name);
}

/**
 * `volumeutil.SetReady`: the meta dir (0750, with parents) and an empty `ready` file in it,
 * written when the emptyDir's SetUp succeeded (the kubelet's emptyDir and its wrappers do).
 */
export async function setReady(metaDir: string): Promise<void> {
  await mkdir(metaDir, { recursive: true, mode: VOLUME_PARENT_DIR_MODE });
  await writeFile(join(metaDir, READY_FILE_NAME), '', { mode: 0o644 });
}

/**
 * `volumeutil.IsReady`: whether the meta dir holds the `ready` file as a regular file (a SetUp
 * succeeded and no TearDown started since). Any error reading it counts as not ready, as upstream.
 */
export function isReady(metaDir: string): Promise<boolean> {
  // Synchronous, as the check in ensureDir: one lstat, and a restart asks it for every volume.
  try {
    return Promise.resolve(lstatSync(join(metaDir, READY_FILE_NAME)).isFile());
  } catch {
    return Promise.resolve(false);
  }
}

/**
 * True when `dir` is a directory (not a symlink) with exactly `mode`, with one synchronous lstat:
 * what nearly every SetUp after the first finds, and then {@link ensureDir} has nothing to do.
 * The call stays below the kubelet root dir, on its local disk or a tmpfs; through libuv's thread
 * pool it would cost an event loop round trip for each of the thousands of volumes a restart sets
 * up again (see upToDateDataDirSync in atomic-writer.ts for figures). Any error: false, and the
 * asynchronous path decides.
 */
function isDirWithModeSync(dir: string, mode: number): boolean {
  try {
    const st = lstatSync(dir);
    return st.isDirectory() && (st.mode & 0o777) === mode;
  } catch {
    return false;
  }
}

/**
 * The first step of the emptyDir's TearDown (upstream `os.RemoveAll(readyDir)`): the `ready`
 * file and then the meta dir, each only through `safeRemove` (the dir only when empty; anything
 * else in it stays and fails the TearDown). Nothing to do when the meta dir does not exist.
 */
export async function removeReady(ctx: RemovalContext, metaDir: string): Promise<void> {
  if (!(await pathExists(metaDir))) return;
  const ready = join(metaDir, READY_FILE_NAME);
  if (await pathExists(ready)) await safeRemove(ready, { mounter: ctx.mounter, root: ctx.rootDir, allowFiles: [READY_FILE_NAME] });
  await safeRemove(metaDir, { mounter: ctx.mounter, root: ctx.rootDir });
}

/** Whether `path` exists (lstat: a symlink counts); errors other than ENOENT are thrown. */
async function pathExists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    (err: unknown) => {
      if (hasErrnoCode(err, 'ENOENT')) return false;
      throw err;
    },
  );
}

/** Removes `dir` if it is an empty, unmounted directory; never fails (used to undo a failed SetUp). */
export async function removeEmptyDirQuietly(ctx: RemovalContext, dir: string): Promise<void> {
  await safeRemove(dir, { mounter: ctx.mounter, root: ctx.rootDir }).catch(() => undefined);
}

/**
 * Unmounts whatever is mounted exactly at `dir` (mount table read fresh before each step), the
 * top-most first, until nothing is. Throws the mounter's error when an unmount fails.
 */
async function unmountAt(mounter: Mounter, dir: string): Promise<void> {
  for (let i = 0; i < MAX_STACKED_UNMOUNTS; i++) {
    if ((await mountsAt(mounter, dir)).length === 0) return;
    await mounter.unmount(dir);
  }
  if ((await mountsAt(mounter, dir)).length > 0) {
    throw new VolumeMountStateError(`${dir} is still a mount point after ${MAX_STACKED_UNMOUNTS} unmounts`);
  }
}

/** `a, b, c and 4 more` for a refusal message. */
export function listNames(names: readonly string[]): string {
  const shown = names.slice(0, LISTED_ENTRIES).join(', ');
  return names.length > LISTED_ENTRIES ? `${shown} and ${names.length - LISTED_ENTRIES} more` : shown;
}

/**
 * TearDown of a pod volume directory:
 *
 * 1. Nothing to do when `dir` does not exist (TearDown is idempotent).
 * 2. A mount point below `dir` (nothing SetUp makes) refuses the whole TearDown.
 * 3. Everything mounted exactly at `dir` is unmounted (a tmpfs or bind SetUp made).
 * 4. `removeOwned` removes the files the plugin created (the atomic writer's), or throws a
 *    {@link TearDownRefusedError} without removing anything when it finds others.
 * 5. The directory itself is removed with `safeRemove`, i.e. only when empty. When it is not,
 *    the error names what is left.
 */
export async function tearDownVolumeDir(ctx: RemovalContext, dir: string, removeOwned?: () => Promise<void>): Promise<void> {
  if (!(await pathExists(dir))) return;
  // Checked before unmounting: the kernel would refuse to unmount a tmpfs with a mount inside
  // (EBUSY), and nothing SetUp makes puts one there.
  const below = await mountsBelow(ctx.mounter, dir);
  const first = below[0];
  if (first !== undefined) {
    throw new TearDownRefusedError(dir, `it contains a mount point at ${first.mountPoint} that the volume plugin did not create`);
  }
  await unmountAt(ctx.mounter, dir);
  const st = await lstat(dir);
  if (st.isSymbolicLink()) {
    throw new TearDownRefusedError(dir, 'it is a symlink, not a directory, and no mount table entry explains it');
  }
  if (removeOwned !== undefined) await removeOwned();
  try {
    await safeRemove(dir, { mounter: ctx.mounter, root: ctx.rootDir });
  } catch (err) {
    if (!isSafeRemoveRefusedError(err)) throw err;
    const left = await readdir(dir).catch(() => null);
    if (left !== null && left.length > 0) {
      throw new TearDownRefusedError(dir, `it holds entries the volume plugin did not create: ${listNames(left.sort())}`);
    }
    throw err;
  }
}
