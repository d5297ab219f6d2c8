/**
 * The only way VolumeScope removes anything under the kubelet root (docs/safety.md,
 * "Removing a pod or volume directory"). Community `rm -rf` scripts and old kubelet bugs
 * deleted live volume data because a path was still mounted, because a removal crossed into
 * another filesystem, or because it followed a symlink. The rules, all enforced here:
 *
 * - The mount table is read fresh (through the mounter's `list()` or a mountinfo reader) before
 *   anything is removed and again right before each single rmdir/unlink; it is never cached.
 * - Refused: the path itself or any descendant is a mount point, or the path lies inside a mount
 *   point below `root` (a file named vol_data.json inside a mounted volume is user data); a path
 *   outside `root` after resolving symlinks, or `root` itself; anything whose `st_dev` differs
 *   from its parent's, or a path below a directory on another device than `root` (a filesystem
 *   boundary, including mounts the table does not show).
 * - Only empty directories are removed (rmdir), and only regular files whose name is a known
 *   metadata file (`allowFiles`, default `vol_data.json`). Never a recursive delete.
 * - Symlinks are never followed. A symlink is itself unlinked only when its name is in
 *   `allowSymlinks` (default none: the kubelet root holds no symlinks the product may delete
 *   blindly; block-volume links live under `volumeDevices/`, see below). Every other symlink is
 *   refused; the reason says when it points outside the root.
 * - The tree variant does not enter `volumes/`, `volume-subpaths/` or `volumeDevices/` (or
 *   start inside one) unless the caller sets `volumeDirsVerifiedUnmounted`, stating that it has
 *   unmounted and checked that subtree. All other rules still apply inside.
 *
 * Paths in results are the resolved locations (symlinks in parent directories followed),
 * which are also the paths the kernel reports in mountinfo. A path that does not exist counts
 * as already removed, so retries are harmless.
 */
import { lstat, readdir, readlink, realpath, rmdir, unlink } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, normalize, relative, resolve } from 'node:path';
import { mountsAt, mountsAtOrBelow, pathWithinOrEqual, splitDev } from './mount-table.ts';
import type { MountLister } from './mounter.ts';
import type { MountInfo, MountInfoReader } from './mountinfo.ts';

/** Metadata files removed by default: the CSI plugin's per-volume record. */
const DEFAULT_METADATA_FILES: readonly string[] = ['vol_data.json'];

/** Directories of a pod directory that hold (or held) volume mounts. */
const VOLUME_DIR_NAMES: readonly string[] = ['volumes', 'volume-subpaths', 'volumeDevices'];

/** The part of `fs.Stats` the remover reads. */
export interface SafeRemoveStat {
  dev: number;
  ino: number;
  isDirectory(): boolean;
  isFile(): boolean;
  isSymbolicLink(): boolean;
}

/** File system calls of the remover; the default is node:fs. Tests may wrap it to simulate devices. */
export interface SafeRemoveFs {
  lstat(path: string): Promise<SafeRemoveStat>;
  readdir(path: string): Promise<string[]>;
  rmdir(path: string): Promise<void>;
  unlink(path: string): Promise<void>;
  realpath(path: string): Promise<string>;
  readlink(path: string): Promise<string>;
}

export const nodeSafeRemoveFs: SafeRemoveFs = {
  lstat: (p) => lstat(p),
  readdir: (p) => readdir(p),
  rmdir: (p) => rmdir(p),
  unlink: (p) => unlink(p),
  realpath: (p) => realpath(p),
  readlink: (p) => readlink(p),
};

/** Where the fresh mount table comes from: a mounter, or a mountinfo reader (e.g. a fixture file). */
export type MountTableSource = { mounter: MountLister; mountInfo?: never } | { mountInfo: MountInfoReader; mounter?: never };

export type SafeRemoveOptions = MountTableSource & {
  /** The directory everything removed must lie below (the kubelet root dir). Never removed itself. */
  root: string;
  /** Names of regular files that may be unlinked; default {@link DEFAULT_METADATA_FILES}. */
  allowFiles?: readonly string[];
  /** Names of symlinks that may be unlinked (never followed); default none. */
  allowSymlinks?: readonly string[];
  fs?: SafeRemoveFs;
};

export type SafeRemoveTreeOptions = SafeRemoveOptions & {
  /**
   * The caller has unmounted and verified the `volumes/`, `volume-subpaths/` and
   * `volumeDevices/` subtrees, so the walk may enter them. Default false.
   */
  volumeDirsVerifiedUnmounted?: boolean;
};

export interface SafeRemoveRefusal {
  path: string;
  /** Operator-facing sentence, `refusing to remove <path>: <why>`. */
  reason: string;
}

export interface SafeRemoveResult {
  /** Paths removed, children before parents. */
  removed: string[];
  /** Paths left in place, each with its reason. */
  refused: SafeRemoveRefusal[];
}

/** Thrown by {@link safeRemove} when the path may not be removed. */
export class SafeRemoveRefusedError extends Error {
  override readonly name = 'SafeRemoveRefusedError';
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(reason);
  }
}

export function isSafeRemoveRefusedError(err: unknown): err is SafeRemoveRefusedError {
  return err instanceof SafeRemoveRefusedError;
}

/**
 * Removes exactly one path: an empty directory or a known metadata file (or an allowed
 * symlink). Throws {@link SafeRemoveRefusedError} when any rule forbids it; returns the removed
 * path (none when the path did not exist).
 */
export async function safeRemove(path: string, opts: SafeRemoveOptions): Promise<SafeRemoveResult> {
  const r = new Remover(opts, false);
  await r.removeOne(path);
  const refusal = r.result.refused[0];
  if (refusal !== undefined) throw new SafeRemoveRefusedError(refusal.path, refusal.reason);
  return r.result;
}

/**
 * Removes `path` and everything below it that the rules allow, bottom-up: known metadata files,
 * allowed symlinks, then directories that became empty. Nothing is removed if the path or any
 * descendant is a mount point. Everything else is left and reported; never throws for a
 * refusal (only for unexpected errors such as an unreadable mount table).
 */
export async function safeRemoveTree(path: string, opts: SafeRemoveTreeOptions): Promise<SafeRemoveResult> {
  const r = new Remover(opts, opts.volumeDirsVerifiedUnmounted !== true);
  await r.removeTree(path);
  return r.result;
}

function refusal(path: string, why: string): SafeRemoveRefusal {
  return { path, reason: `refusing to remove ${path}: ${why}` };
}

function errnoCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

function devText(dev: number): string {
  const { major, minor } = splitDev(BigInt(dev));
  return `${major}:${minor}`;
}

function count(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

class Remover {
  readonly result: SafeRemoveResult = { removed: [], refused: [] };
  private readonly fs: SafeRemoveFs;
  private readonly readTable: MountInfoReader;
  private readonly allowFiles: ReadonlySet<string>;
  private readonly allowSymlinks: ReadonlySet<string>;
  private realRoot = '';

  constructor(
    private readonly opts: SafeRemoveOptions,
    private readonly guardVolumeDirs: boolean,
  ) {
    this.fs = opts.fs ?? nodeSafeRemoveFs;
    const source = opts.mounter;
    this.readTable = source !== undefined ? () => source.list() : opts.mountInfo;
    this.allowFiles = new Set(opts.allowFiles ?? DEFAULT_METADATA_FILES);
    this.allowSymlinks = new Set(opts.allowSymlinks ?? []);
  }

  async removeOne(path: string): Promise<void> {
    const loc = await this.locate(path);
    if (loc === null || !(await this.precheck(loc))) return;
    const st = await this.lstatOrNull(loc);
    if (st === null) return;
    if (st.isSymbolicLink()) {
      await this.removeSymlink(loc);
      return;
    }
    const parentDev = (await this.fs.lstat(dirname(loc))).dev;
    if (!this.checkDevice(loc, st, parentDev)) return;
    if (st.isDirectory()) await this.act(loc, st, 'rmdir');
    else await this.removeFile(loc, st);
  }

  async removeTree(path: string): Promise<void> {
    const loc = await this.locate(path);
    if (loc === null) return;
    if (this.guardVolumeDirs) {
      const guarded = relative(this.realRoot, loc)
        .split('/')
        .find((c) => VOLUME_DIR_NAMES.includes(c));
      if (guarded !== undefined) {
        const where = basename(loc) === guarded ? 'a' : 'inside a';
        this.refuse(loc, `it is ${where} ${guarded}/ directory, which may hold volume data (set volumeDirsVerifiedUnmounted once it is unmounted and checked)`);
        return;
      }
    }
    // Before touching anything: no mount point at, above (below the root) or below the path.
    if (!(await this.precheck(loc))) return;
    const st = await this.lstatOrNull(loc);
    if (st === null) return;
    await this.visit(loc, st, (await this.fs.lstat(dirname(loc))).dev);
  }

  /** Resolves `path` (parent symlinks only) and checks it lies strictly inside the root. Null when refused or gone. */
  private async locate(path: string): Promise<string | null> {
    if (!isAbsolute(path)) {
      this.refuse(path, 'it is not an absolute path');
      return null;
    }
    if (!isAbsolute(this.opts.root)) {
      this.refuse(path, `the root dir ${this.opts.root} is not an absolute path`);
      return null;
    }
    try {
      this.realRoot = await this.fs.realpath(this.opts.root);
    } catch (err) {
      this.refuse(path, `the root dir ${this.opts.root} cannot be resolved (${errnoCode(err) ?? String(err)})`);
      return null;
    }
    if (this.realRoot === '/') {
      this.refuse(path, 'the root dir must not be /');
      return null;
    }
    const abs = normalize(path).replace(/(.)\/+$/, '$1');
    let loc: string;
    try {
      loc = abs === '/' ? '/' : join(await this.fs.realpath(dirname(abs)), basename(abs));
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return null;
      throw err;
    }
    const shown = loc === abs ? '' : ` (it resolves to ${loc})`;
    if (loc === this.realRoot) {
      this.refuse(path, `it is the root dir ${this.opts.root}${shown}`);
      return null;
    }
    if (!pathWithinOrEqual(loc, this.realRoot)) {
      this.refuse(path, `it is outside the root dir ${this.opts.root}${shown}`);
      return null;
    }
    return loc;
  }

  /** The mount table (read now) and the devices between the root and `loc` allow touching `loc`. */
  private async precheck(loc: string): Promise<boolean> {
    return this.checkMounts(loc, await this.fresh()) && (await this.checkPlacement(loc));
  }

  /**
   * The path must sit on the root dir's filesystem: no directory between the root and the path
   * is on another device. Catches a path inside a mounted volume even when the mount table
   * misses the mount. Returns false (refused) or true; a vanished ancestor also gives true, the
   * caller then finds nothing to remove.
   */
  private async checkPlacement(loc: string): Promise<boolean> {
    const rootDev = (await this.fs.lstat(this.realRoot)).dev;
    let ancestor = this.realRoot;
    for (const part of relative(this.realRoot, dirname(loc)).split('/').filter((c) => c !== '')) {
      ancestor = join(ancestor, part);
      const st = await this.lstatOrNull(ancestor);
      if (st === null) return true;
      if (st.dev !== rootDev) {
        this.refuse(loc, `it crosses a filesystem boundary at ${ancestor} (device ${devText(st.dev)}, the root dir is on ${devText(rootDev)})`);
        return false;
      }
    }
    return true;
  }

  /** Depth-first, children first. Returns true when `p` is gone afterwards. */
  private async visit(p: string, st: SafeRemoveStat, parentDev: number): Promise<boolean> {
    if (st.isSymbolicLink()) return this.removeSymlink(p);
    if (!this.checkDevice(p, st, parentDev)) return false;
    if (!st.isDirectory()) return this.removeFile(p, st);
    if (this.guardVolumeDirs && VOLUME_DIR_NAMES.includes(basename(p))) {
      this.refuse(p, `it is a ${basename(p)}/ directory, which may hold volume data (set volumeDirsVerifiedUnmounted once it is unmounted and checked)`);
      return false;
    }
    const names = (await this.fs.readdir(p)).sort();
    let kept = 0;
    for (const name of names) {
      const child = join(p, name);
      const cst = await this.lstatOrNull(child);
      if (cst !== null && !(await this.visit(child, cst, st.dev))) kept++;
    }
    if (kept > 0) {
      this.refuse(p, `it is not empty (${count(kept, 'entry', 'entries')} kept, see their reasons)`);
      return false;
    }
    return this.act(p, st, 'rmdir');
  }

  private async removeFile(p: string, st: SafeRemoveStat): Promise<boolean> {
    if (!st.isFile()) {
      this.refuse(p, 'it is neither a directory nor a regular file');
      return false;
    }
    if (!this.allowFiles.has(basename(p))) {
      this.refuse(p, `it is not a known metadata file (only ${[...this.allowFiles].join(', ') || 'none'} may be removed)`);
      return false;
    }
    return this.act(p, st, 'unlink');
  }

  /** Never follows the link: unlinks it if its name is allowed, else refuses. */
  private async removeSymlink(p: string): Promise<boolean> {
    const table = await this.fresh();
    if (!this.checkMounts(p, table)) return false;
    if (!this.allowSymlinks.has(basename(p))) {
      const target = await this.fs.readlink(p).catch(() => '?');
      const resolved = await this.fs.realpath(p).catch(() => resolve(dirname(p), target));
      const where = pathWithinOrEqual(resolved, this.realRoot) ? '' : `, outside the root dir ${this.opts.root}`;
      this.refuse(p, `it is a symlink to ${target}${where} (symlinks are never followed, and only allowed names are unlinked)`);
      return false;
    }
    const st = await this.lstatOrNull(p);
    if (st === null) return true;
    return this.act(p, st, 'unlink', table);
  }

  /** Checks the fresh mount table right before rmdir/unlink and that the entry did not change since it was examined. */
  private async act(p: string, examined: SafeRemoveStat, op: 'rmdir' | 'unlink', table?: readonly MountInfo[]): Promise<boolean> {
    if (!this.checkMounts(p, table ?? (await this.fresh()))) return false;
    const now = await this.lstatOrNull(p);
    if (now === null) return true;
    if (now.dev !== examined.dev || now.ino !== examined.ino) {
      this.refuse(p, 'it changed while being examined');
      return false;
    }
    try {
      await (op === 'rmdir' ? this.fs.rmdir(p) : this.fs.unlink(p));
    } catch (err) {
      const code = errnoCode(err);
      if (code === 'ENOENT') return true;
      if (code === 'ENOTEMPTY' || code === 'EEXIST') this.refuse(p, 'it is not empty');
      else if (code === 'EBUSY') this.refuse(p, 'it is a mount point (the kernel reported EBUSY)');
      else this.refuse(p, `${op} failed: ${(err as Error).message}`);
      return false;
    }
    this.result.removed.push(p);
    return true;
  }

  /** Refuses `p` if, in `table`, it is a mount point, lies inside a mount below the root, or has mounts below it. */
  private checkMounts(p: string, table: readonly MountInfo[]): boolean {
    if (mountsAt(table, p).length > 0) {
      this.refuse(p, 'it is a mount point');
      return false;
    }
    const enclosing = table.find(
      (e) => e.mountPoint !== this.realRoot && pathWithinOrEqual(e.mountPoint, this.realRoot) && pathWithinOrEqual(p, e.mountPoint),
    );
    if (enclosing !== undefined) {
      this.refuse(p, `it is inside the mount point at ${enclosing.mountPoint}`);
      return false;
    }
    const below = mountsAtOrBelow(table, p);
    const first = below[0];
    if (first !== undefined) {
      const more = below.length > 1 ? ` and ${count(below.length - 1, 'more mount point', 'more mount points')}` : '';
      this.refuse(p, `it contains a mount point at ${first.mountPoint}${more}`);
      return false;
    }
    return true;
  }

  private checkDevice(p: string, st: SafeRemoveStat, parentDev: number): boolean {
    if (st.dev === parentDev) return true;
    this.refuse(p, `it crosses a filesystem boundary (it is on device ${devText(st.dev)}, its parent on ${devText(parentDev)})`);
    return false;
  }

  private fresh(): Promise<readonly MountInfo[]> {
    return this.readTable();
  }

  private async lstatOrNull(p: string): Promise<SafeRemoveStat | null> {
    try {
      return await this.fs.lstat(p);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return null;
      throw err;
    }
  }

  private refuse(path: string, why: string): void {
    this.result.refused.push(refusal(path, why));
  }
}
