/**
 * A mounter for processes that may not mount (a laptop, non-root CI). It keeps the product's
 * code paths (mount, unmount, "is this a mount point?", safe removal) working with stand-ins:
 *
 * - `tmpfs` → the target directory itself, unchanged. A real tmpfs would hide what the directory
 *   held, so the target must be empty. Unmounting leaves the directory and whatever was written
 *   into it: the fallback never deletes data, so a later safe removal may report "not empty"
 *   where a real unmount would have discarded the tmpfs contents.
 * - `bind` → the target is replaced by a symlink to the (resolved) source, so writes through
 *   the target land in the source as with a bind mount, and `stat` (which follows links) sees a
 *   directory or file as callers expect. The empty directory or empty file that was the mount
 *   point is recreated (same mode) on unmount, as a real unmount leaves the mount point behind.
 *   A symlink rather than a directory is the only way to share contents without privileges;
 *   it is also what lets a restarted process, or `lstat`, recognise the stand-in on disk.
 *   A non-empty target is refused: a symlink cannot hide existing contents.
 *   Other file system types are refused with exit code 32, like a failed mount(8).
 *
 * The table of stand-in mounts is written to `<stateDir>/mountinfo` in mountinfo format (mount
 * ids from {@link SYNTHETIC_MOUNT_ID_BASE}; superblock options `volumescope.standin=symlink|dir`
 * and, for binds, what the target was), so a restarted process, `readMountInfo` and any tool that
 * reads mountinfo can tell what was "mounted". Each entry is checked against the disk when read
 * (the symlink still points at the source; the directory still exists) and dropped if it no
 * longer matches. `list()` returns the real mount table of the process followed by the stand-ins,
 * so a safe removal run with this mounter still refuses real mount points.
 *
 * One instance per state directory: updates are serialised within the instance only.
 */
import { lstat, mkdir, readdir, readlink, realpath, rmdir, stat, symlink, unlink, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { writeFileDurably } from './durable-write.ts';
import { FreshRead } from './fresh-read.ts';
import { MOUNT_EXIT_FAILURE, MountError } from './mount-error.ts';
import { isCorruptedMnt, isNotExist, mountsAt, splitDev } from './mount-table.ts';
import type { Mounter } from './mounter.ts';
import { formatMountInfoLine, MountInfoFile, PROC_SELF_MOUNTINFO, readMountInfo } from './mountinfo.ts';
import type { MountInfo } from './mountinfo.ts';

/** File name of the stand-in table inside the state directory. */
export const UNPRIVILEGED_MOUNTINFO_FILE = 'mountinfo';
/** Stand-in mount ids start here, far above the kernel's, so both tables can be listed together. */
export const SYNTHETIC_MOUNT_ID_BASE = 1_000_000;

const STANDIN = 'volumescope.standin';
const TARGET_WAS = 'volumescope.target-was';
const TARGET_MODE = 'volumescope.target-mode';
const COMMAND = 'unprivileged-mount';

export interface UnprivilegedMounterOptions {
  /**
   * Directory for the stand-in table; created when needed. Use a stable path (the agent's state
   * directory) so a restarted process sees the mounts of the previous one.
   */
  stateDir: string;
  /**
   * Real mount table listed before the stand-ins; default `/proc/self/mountinfo`. Point it at a
   * fixture file in tests, or pass null to list only the stand-ins.
   */
  systemMountInfoPath?: string | null;
}

type StandIn = 'symlink' | 'dir';

function superOption(e: MountInfo, key: string): string | undefined {
  const prefix = `${key}=`;
  return e.superOptions.find((o) => o.startsWith(prefix))?.slice(prefix.length);
}

function fail(operation: 'mount' | 'unmount', args: readonly string[], output: string): MountError {
  return new MountError(operation, COMMAND, args, MOUNT_EXIT_FAILURE, output, `exit status ${MOUNT_EXIT_FAILURE}`);
}

export class UnprivilegedMounter implements Mounter {
  readonly kind = 'unprivileged' as const;
  readonly privileged = false;
  /** Path of the stand-in table, in mountinfo format. */
  readonly mountInfoPath: string;
  private readonly stateDir: string;
  private readonly systemMountInfo: MountInfoFile | null;
  private readonly table = new FreshRead(async () => {
    const system = this.systemMountInfo === null ? [] : await this.systemMountInfo.read();
    return [...system, ...(await this.standIns())];
  });
  /** See {@link standIns}. */
  private readonly standInRead = new FreshRead(async (): Promise<readonly MountInfo[]> => {
    const table = await this.readTable();
    const matches = await Promise.all(table.map(matchesDisk));
    return table.filter((_, i) => matches[i] === true);
  });
  private queue: Promise<unknown> = Promise.resolve();

  constructor(opts: UnprivilegedMounterOptions) {
    this.stateDir = resolve(opts.stateDir);
    this.mountInfoPath = join(this.stateDir, UNPRIVILEGED_MOUNTINFO_FILE);
    const systemPath = opts.systemMountInfoPath === undefined ? PROC_SELF_MOUNTINFO : opts.systemMountInfoPath;
    this.systemMountInfo = systemPath === null ? null : new MountInfoFile(systemPath);
  }

  mount(source: string, target: string, fstype: string, options: readonly string[]): Promise<void> {
    return this.serialised(() => this.doMount(source, target, fstype, options));
  }

  unmount(target: string): Promise<void> {
    return this.serialised(() => this.doUnmount(target));
  }

  /** Read fresh for each call; calls that overlap a running read share the next one (fresh-read.ts). */
  async list(): Promise<MountInfo[]> {
    return (await this.table.get()).slice();
  }

  async isLikelyNotMountPoint(path: string): Promise<boolean> {
    const st = await stat(path);
    if (mountsAt(await this.standIns(), await standInPath(path)).length > 0) return false;
    const parent = await stat(dirname(resolve(path)));
    return st.dev === parent.dev;
  }

  async isMountPoint(path: string): Promise<boolean> {
    const asStandIn = await standInPath(path);
    const resolved = await realpath(path).catch((err: unknown) => {
      // A stand-in bind whose source vanished is a dangling symlink, but still a stand-in.
      if (isNotExist(err)) return asStandIn;
      throw err;
    });
    await lstat(asStandIn);
    const table = await this.list();
    return mountsAt(table, asStandIn).length > 0 || mountsAt(table, resolved).length > 0;
  }

  /** Matches among the stand-in mounts only; the real table uses fs-relative roots that are not comparable. */
  async getMountRefs(path: string): Promise<string[]> {
    const standIns = await this.standIns();
    let key: { root: string; major: number; minor: number; id: number };
    try {
      const own = mountsAt(standIns, await standInPath(path)).at(-1);
      if (own !== undefined) {
        key = own;
      } else {
        const resolved = await realpath(path);
        key = { root: resolved, ...splitDev((await stat(resolved, { bigint: true })).dev), id: -1 };
      }
    } catch (err) {
      if (isNotExist(err) || isCorruptedMnt(err)) return [];
      throw err;
    }
    return standIns
      .filter((e) => e.id !== key.id && e.root === key.root && e.major === key.major && e.minor === key.minor)
      .map((e) => e.mountPoint);
  }

  private async doMount(source: string, target: string, fstype: string, options: readonly string[]): Promise<void> {
    const args = [...(fstype === '' ? [] : ['-t', fstype]), ...(options.length > 0 ? ['-o', options.join(',')] : []), '--', source, target];
    const mountPoint = await standInPath(target).catch(() => resolve(target));
    const targetStat = await lstat(mountPoint).catch(() => null);
    if (targetStat === null) throw fail('mount', args, `mount: ${target}: mount point does not exist.`);
    const table = await this.readTable();
    const existing = mountsAt(table, mountPoint).at(-1);
    const rest = options.filter((o) => o !== 'bind' && o !== 'remount');
    const mountOptions = rest.length > 0 ? rest : ['rw'];

    if (options.includes('remount')) {
      if (existing === undefined) throw fail('mount', args, `mount: ${target}: mount point not mounted or bad option.`);
      await this.writeTable(table.map((e) => (e === existing ? { ...e, mountOptions } : e)));
      return;
    }
    if (existing !== undefined) {
      throw fail('mount', args, `mount: ${target}: already mounted (the unprivileged mounter cannot stack mounts).`);
    }

    const mode = (targetStat.mode & 0o7777).toString(8);
    let entry: Omit<MountInfo, 'id'>;
    if (options.includes('bind')) {
      const resolvedSource = await realpath(source).catch(() => null);
      if (resolvedSource === null) throw fail('mount', args, `mount: ${target}: special device ${source} does not exist.`);
      let was: 'dir' | 'file';
      if (targetStat.isDirectory()) {
        if ((await readdir(mountPoint)).length > 0) {
          throw fail('mount', args, `mount: ${target}: the unprivileged mounter cannot bind over a non-empty directory.`);
        }
        was = 'dir';
      } else if (targetStat.isFile() && targetStat.size === 0) {
        was = 'file';
      } else {
        throw fail('mount', args, `mount: ${target}: the unprivileged mounter can bind only onto an empty directory or empty file.`);
      }
      const dev = splitDev((await stat(resolvedSource, { bigint: true })).dev);
      if (was === 'dir') await rmdir(mountPoint);
      else await unlink(mountPoint);
      await symlink(resolvedSource, mountPoint);
      entry = {
        parentId: 0,
        ...dev,
        root: resolvedSource,
        mountPoint,
        mountOptions,
        optionalFields: [],
        fsType: fstype === '' ? 'none' : fstype,
        source,
        superOptions: ['rw', `${STANDIN}=symlink`, `${TARGET_WAS}=${was}`, `${TARGET_MODE}=${mode}`],
      };
    } else if (fstype === 'tmpfs') {
      if (!targetStat.isDirectory()) throw fail('mount', args, `mount: ${target}: not a directory.`);
      if ((await readdir(mountPoint)).length > 0) {
        throw fail('mount', args, `mount: ${target}: the unprivileged mounter cannot mount tmpfs over a non-empty directory.`);
      }
      entry = {
        parentId: 0,
        ...splitDev((await stat(mountPoint, { bigint: true })).dev),
        root: mountPoint,
        mountPoint,
        mountOptions,
        optionalFields: [],
        fsType: 'tmpfs',
        source,
        superOptions: ['rw', `${STANDIN}=dir`],
      };
    } else {
      throw fail(
        'mount',
        args,
        `mount: ${target}: unknown filesystem type '${fstype}' (the unprivileged mounter supports only tmpfs and bind mounts).`,
      );
    }
    const id = Math.max(SYNTHETIC_MOUNT_ID_BASE - 1, ...table.map((e) => e.id)) + 1;
    await this.writeTable([...table, { id, ...entry }]);
  }

  private async doUnmount(target: string): Promise<void> {
    const args = ['--', target];
    const mountPoint = await standInPath(target).catch(() => resolve(target));
    const table = await this.readTable();
    const entry = mountsAt(table, mountPoint).at(-1);
    if (entry === undefined) throw fail('unmount', args, `umount: ${target}: not mounted.`);
    if (superOption(entry, STANDIN) === 'symlink') {
      await unlink(mountPoint).catch((err: unknown) => {
        if (!isNotExist(err)) throw err;
      });
      const mode = Number.parseInt(superOption(entry, TARGET_MODE) ?? '755', 8);
      if (superOption(entry, TARGET_WAS) === 'file') await writeFile(mountPoint, '', { mode, flag: 'wx' });
      else await mkdir(mountPoint, { mode });
    }
    await this.writeTable(table.filter((e) => e !== entry));
  }

  /**
   * Stand-in entries still matching the disk (checked concurrently, kept in table order), read
   * after the call began; overlapping calls share a read (fresh-read.ts). Each read checks every
   * entry on disk, and a restart asks once per volume (isLikelyNotMountPoint of each SetUp):
   * without the sharing that was quadratic, 68 ms of a 10,000-volume restart's main thread with
   * 200 CSI volumes (bench:agent --only restart --cpu-profile). The array is shared: callers only
   * read it.
   */
  private standIns(): Promise<readonly MountInfo[]> {
    return this.standInRead.get();
  }

  private async readTable(): Promise<MountInfo[]> {
    try {
      return await readMountInfo(this.mountInfoPath);
    } catch (err) {
      if (isNotExist(err)) return [];
      throw err;
    }
  }

  /**
   * Replaces the table atomically and durably (lib/mount-utils/durable-write.ts), keeping only
   * entries that still match the disk; a full disk leaves the previous table.
   */
  private async writeTable(entries: readonly MountInfo[]): Promise<void> {
    const kept: MountInfo[] = [];
    for (const e of entries) if (await matchesDisk(e)) kept.push(e);
    await mkdir(this.stateDir, { recursive: true });
    await writeFileDurably(this.mountInfoPath, kept.map((e) => `${formatMountInfoLine(e)}\n`).join(''), { mode: 0o644 });
  }

  private serialised<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

/**
 * Where a stand-in for `path` lives: the parent resolved (symlinks above are followed) and the
 * last component kept, because a bind stand-in is itself a symlink and must not be followed.
 */
async function standInPath(path: string): Promise<string> {
  const abs = resolve(path);
  return join(await realpath(dirname(abs)), basename(abs));
}

async function matchesDisk(e: MountInfo): Promise<boolean> {
  const kind = superOption(e, STANDIN) as StandIn | undefined;
  try {
    const st = await lstat(e.mountPoint);
    if (kind === 'symlink') return st.isSymbolicLink() && (await readlink(e.mountPoint)) === e.root;
    return st.isDirectory();
  } catch (err) {
    if (isNotExist(err)) return false;
    throw err;
  }
}
