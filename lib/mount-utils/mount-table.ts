/**
 * Pure queries over a mount table (a parsed mountinfo). Paths are compared as given: callers
 * pass paths already resolved the way the kernel reports mount points (absolute, no symlinks,
 * no trailing slash).
 */
import { isAbsolute, join, relative, sep } from 'node:path';
import type { MountInfo } from './mountinfo.ts';

/** True when `path` equals `base` or lies below it. Both must be absolute and normalised. */
export function pathWithinOrEqual(path: string, base: string): boolean {
  if (path === base) return true;
  const rel = relative(base, path);
  // `..data` or `..2024_…` are names inside base; only `..` itself or `../…` leave it.
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}

/** The entries whose mount point is exactly `path` (several when mounts are stacked). */
export function mountsAt(table: readonly MountInfo[], path: string): MountInfo[] {
  return table.filter((e) => e.mountPoint === path);
}

/** The entries whose mount point is `path` or any descendant of it. */
export function mountsAtOrBelow(table: readonly MountInfo[], path: string): MountInfo[] {
  return table.filter((e) => pathWithinOrEqual(e.mountPoint, path));
}

/**
 * `SearchMountPoints` of k8s mount-utils: the mount points that show the same directory as
 * `path`. The directory is identified by (root inside the filesystem, major:minor) and not by
 * the source string, because unrelated filesystems share sources (every tmpfs is "tmpfs") and a
 * bind mount may expose a subdirectory. `path` may be a mount point or a plain directory that
 * is the source of bind mounts. The mount that contains `path` is found from the end of the
 * table, since later mounts hide earlier ones; that mount itself is not reported.
 *
 * Throws when no mount contains `path` (upstream: "failed to get root path and major:minor").
 */
export function searchMountRefs(table: readonly MountInfo[], path: string): string[] {
  let containing: MountInfo | undefined;
  for (let i = table.length - 1; i >= 0; i--) {
    const e = table[i];
    if (e !== undefined && pathWithinOrEqual(path, e.mountPoint)) {
      containing = e;
      break;
    }
  }
  if (containing === undefined) {
    throw new Error(`failed to get root path and major:minor for ${path}`);
  }
  const rootPath = join(containing.root, relative(containing.mountPoint, path));
  const { id, major, minor } = containing;
  return table
    .filter((e) => e.id !== id && e.root === rootPath && e.major === major && e.minor === minor)
    .map((e) => e.mountPoint);
}

/** Error codes of a mount whose backend is gone (`IsCorruptedMnt` of k8s mount-utils). */
const CORRUPTED_MOUNT_CODES = new Set(['ENOTCONN', 'ESTALE', 'EIO', 'EACCES', 'EHOSTDOWN']);

/**
 * `IsCorruptedMnt`: the error from stat/open of a mount point says its backend is gone
 * (a FUSE daemon or NFS server died: "transport endpoint is not connected", stale handle).
 * Such a mount can still be unmounted; it must not be treated as a missing path.
 */
export function isCorruptedMnt(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' && CORRUPTED_MOUNT_CODES.has(code);
}

/** True when the error is ENOENT. */
export function isNotExist(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | null)?.code === 'ENOENT';
}

/**
 * Splits a Linux `st_dev` into major and minor (glibc's gnu_dev_major/minor encoding). Use with
 * `stat(..., { bigint: true })`, so large numbers stay exact.
 */
export function splitDev(dev: bigint): { major: number; minor: number } {
  const major = ((dev >> 8n) & 0xfffn) | ((dev >> 32n) & ~0xfffn);
  const minor = (dev & 0xffn) | ((dev >> 12n) & ~0xffn);
  return { major: Number(major), minor: Number(minor) };
}
