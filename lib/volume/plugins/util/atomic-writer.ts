/**
 * The kubelet's AtomicWriter (`pkg/volume/util/atomic_writer.go`): projects a set of files into
 * a volume directory so that a reader never sees a half-written update. Used by the configmap,
 * secret, projected and downward-api plugins.
 *
 * Layout of the target directory:
 *
 *     ..2024_01_01_12_00_00.a1B2c3/   the files of one version (the "data dir")
 *     ..data -> ..2024_01_01_12_00_00.a1B2c3
 *     <key>  -> ..data/<key>          one link per top-level name of the payload
 *
 * A write puts the new version into a fresh timestamped dir, then renames a `..data_tmp` link
 * over `..data` (rename(2) is atomic), then removes top-level links that are no longer in the
 * payload and every other data dir. Nothing is written when content and modes are unchanged.
 * Consumers may watch `..data` with inotify to learn about updates.
 *
 * Durability (beyond upstream, which does not fsync): every file of the new version and every
 * directory of it are fsynced before the `..data` rename, and the target dir after it, so a
 * crash leaves the old version or the complete new one. A write that fails (ENOSPC, EIO) removes
 * the new data dir and leaves `..data` on the old version.
 *
 * Removals go through `safeRemove` with the target dir as the root (the target dir may itself
 * be a tmpfs mount point, and nothing is ever removed above it); the writer removes only what
 * it created: its links, its data dirs and the regular files and directories inside them.
 * An entry named `..something` is first renamed to `.volumescope-removing-<hex>` in the same
 * directory and removed under that name; such leftovers of an interrupted removal are
 * recognised as the writer's own. (The rename worked around a containment test in
 * `safeRemove` that took `..`-prefixed names for paths outside the root; that test is fixed,
 * so the rename step is no longer required and can be dropped.)
 *
 * Like upstream, the writer offers no concurrency guarantees: the operation executor runs at
 * most one operation per volume at a time.
 */
import { randomBytes } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { chmod, lstat, mkdir, mkdtemp, readdir, readlink, rename, symlink } from 'node:fs/promises';
import { basename, dirname, join, posix } from 'node:path';
import type { Clock } from '../../../clock/clock.ts';
import { createFileSynced, syncDirectory } from '../../../mount-utils/durable-write.ts';
import type { DurableWriteFs } from '../../../mount-utils/durable-write.ts';
import { readFile } from '../../../mount-utils/fast-read.ts';
import type { Mounter } from '../../../mount-utils/mounter.ts';
import { safeRemove } from '../../../mount-utils/safe-remove.ts';
import type { SafeRemoveOptions } from '../../../mount-utils/safe-remove.ts';
import { hasErrnoCode, TearDownRefusedError } from './errors.ts';
import { listNames } from './volume-dir.ts';

/** One file of a payload. `mode` is masked to its permission bits (0..0o777). */
export interface FileProjection {
  data: Buffer;
  mode: number;
}

/** Relative path → file. A Map, because keys such as `__proto__` are valid ConfigMap keys. */
export type Payload = Map<string, FileProjection>;

/** The link naming the current data dir. */
export const DATA_DIR_NAME = '..data';
/** The link that is renamed over {@link DATA_DIR_NAME}. */
const NEW_DATA_DIR_NAME = '..data_tmp';
/** Data dir names: `..` + UTC timestamp + `.` + a random suffix (the kubelet's suffix is digits). */
export const DATA_DIR_PATTERN = /^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.[^/]+$/;
/** Entries being removed (see the module comment); never a payload name, which cannot start with `..` but can with `.`, hence the long prefix. */
const REMOVING_PATTERN = /^\.volumescope-removing-[0-9a-f]+$/;
const MAX_FILE_NAME_LENGTH = 255;
const MAX_PATH_LENGTH = 4096;
/**
 * Bounds of the synchronous up-to-date check ({@link AtomicWriter.write}): a payload with more
 * files or bytes is checked with asynchronous calls only, so that one check never holds the
 * event loop for long (at these bounds about 0.3 ms on a tmpfs).
 */
const SYNC_CHECK_MAX_FILES = 32;
const SYNC_CHECK_MAX_BYTES = 256 * 1024;

/** A payload path the writer will not project (absolute, `..` element, leading `..`, too long). Texts are upstream's. */
export class InvalidPayloadPathError extends Error {
  override readonly name = 'InvalidPayloadPathError';
}

export function isInvalidPayloadPathError(err: unknown): err is InvalidPayloadPathError {
  return err instanceof InvalidPayloadPathError;
}

/** The target dir holds something in the writer's namespace that the writer did not put there. */
export class AtomicWriterConflictError extends Error {
  override readonly name = 'AtomicWriterConflictError';
}

export function isAtomicWriterConflictError(err: unknown): err is AtomicWriterConflictError {
  return err instanceof AtomicWriterConflictError;
}

/**
 * Validates one payload path (upstream `validatePath`): not empty, relative, at most 4096
 * characters, no `..` element, no element longer than 255, and not starting with `..` (names
 * starting with `..` are reserved for the writer).
 */
export function validatePayloadPath(targetPath: string): void {
  if (targetPath === '') throw new InvalidPayloadPathError('invalid path: must not be empty: ""');
  if (posix.isAbsolute(targetPath)) throw new InvalidPayloadPathError(`invalid path: must be relative path: ${targetPath}`);
  if (targetPath.length > MAX_PATH_LENGTH) {
    throw new InvalidPayloadPathError(`invalid path: must be less than or equal to ${MAX_PATH_LENGTH} characters`);
  }
  const items = targetPath.split('/');
  for (const item of items) {
    if (item === '..') throw new InvalidPayloadPathError(`invalid path: must not contain '..': ${targetPath}`);
    if (item.length > MAX_FILE_NAME_LENGTH) {
      throw new InvalidPayloadPathError(`invalid path: filenames must be less than or equal to ${MAX_FILE_NAME_LENGTH} characters`);
    }
  }
  const first = items[0] ?? '';
  if (first.startsWith('..') && first.length > 2) throw new InvalidPayloadPathError(`invalid path: must not start with '..': ${targetPath}`);
}

/** Validates every path and returns the payload keyed by cleaned paths (`./a//b/` → `a/b`). */
function validatePayload(payload: Payload): Payload {
  const clean: Payload = new Map();
  for (const [path, file] of payload) {
    validatePayloadPath(path);
    clean.set(posix.normalize(path).replace(/\/+$/, ''), { data: file.data, mode: file.mode & 0o777 });
  }
  return clean;
}

/** `..2006_01_02_15_04_05.` for a time in ms (UTC, as upstream). */
export function dataDirPrefix(epochMs: number): string {
  const d = new Date(epochMs);
  const p = (n: number) => String(n).padStart(2, '0');
  return `..${d.getUTCFullYear()}_${p(d.getUTCMonth() + 1)}_${p(d.getUTCDate())}_${p(d.getUTCHours())}_${p(d.getUTCMinutes())}_${p(d.getUTCSeconds())}.`;
}

export interface AtomicWriterOptions {
  /** The volume directory; must exist. */
  targetDir: string;
  clock: Clock;
  /** Source of the fresh mount tables every removal checks. */
  mounter: Mounter;
  /** File system calls of the writes (tests inject ENOSPC and EIO); default node:fs. */
  fs?: DurableWriteFs;
}

export interface AtomicWriteResult {
  /** False when the payload was already on disk and nothing changed. */
  written: boolean;
  /** Name of the data dir `..data` points to afterwards. */
  dataDir: string;
}

/** What the target dir holds, sorted into the writer's own entries and everything else. */
export interface AtomicWriterContents {
  /** Top-level `<name> -> ..data/<name>` links. */
  userLinks: string[];
  /** `..data` and `..data_tmp`, when present as links. */
  dataLinks: string[];
  /** Timestamped data dirs. */
  dataDirs: string[];
  /** Entries renamed for removal by an interrupted earlier removal. */
  leftovers: string[];
  /** Paths (relative to the target) the writer did not create. */
  unexpected: string[];
}

export class AtomicWriter {
  constructor(private readonly o: AtomicWriterOptions) {}

  /**
   * Projects `payload` into the target dir (see the module comment for the steps). Throws
   * {@link InvalidPayloadPathError} before touching the disk when a path is invalid, and
   * {@link AtomicWriterConflictError} when `..data` or a top-level name is occupied by
   * something the writer did not create.
   */
  async write(payload: Payload): Promise<AtomicWriteResult> {
    const clean = validatePayload(payload);
    const target = this.o.targetDir;
    const wantedTop = new Set([...clean.keys()].map((p) => p.split('/')[0] ?? p));

    const upToDate = upToDateDataDirSync(target, clean, wantedTop);
    if (upToDate !== null) return { written: false, dataDir: upToDate };

    const oldDataDir = await this.currentDataDir();
    if (oldDataDir !== '') {
      const oldPath = join(target, oldDataDir);
      const newPaths = allPrefixes(clean.keys());
      const dropped = (await walkRelative(oldPath)).filter((p) => !newPaths.has(p));
      if (dropped.length === 0 && !(await payloadDiffers(clean, oldPath))) {
        // Up to date; still make sure every link exists (upstream kubernetes#121472) and
        // finish what an interrupted write or removal left.
        await this.createUserVisibleFiles(wantedTop);
        await this.removeStaleDataDirs(oldDataDir);
        return { written: false, dataDir: oldDataDir };
      }
    }

    const tsPath = await mkdtemp(join(target, dataDirPrefix(this.o.clock.now())));
    const tsName = basename(tsPath);
    const tmpLink = join(target, NEW_DATA_DIR_NAME);
    try {
      // 0755 so that group and other can traverse, whatever the umask.
      await chmod(tsPath, 0o755);
      await writePayloadToDir(clean, tsPath, this.o.fs);
      await this.createUserVisibleFiles(wantedTop);
      await this.removeLink(NEW_DATA_DIR_NAME); // left by an interrupted write
      await symlink(tsName, tmpLink);
      await rename(tmpLink, join(target, DATA_DIR_NAME));
      await syncDirectory(target, this.o.fs);
    } catch (err) {
      await this.removeLink(NEW_DATA_DIR_NAME).catch(() => undefined);
      await this.removeOwned(tsName).catch(() => undefined);
      throw err;
    }
    await this.removeStaleLinks(wantedTop);
    await this.removeStaleDataDirs(tsName);
    return { written: true, dataDir: tsName };
  }

  /** Sorts the target dir's entries into the writer's own and the rest (nothing is changed). */
  async inspect(): Promise<AtomicWriterContents> {
    const target = this.o.targetDir;
    const out: AtomicWriterContents = { userLinks: [], dataLinks: [], dataDirs: [], leftovers: [], unexpected: [] };
    for (const name of (await readdir(target)).sort()) {
      const st = await lstat(join(target, name));
      const linksToDataDir = st.isSymbolicLink() && DATA_DIR_PATTERN.test(await readlink(join(target, name)));
      if (name === DATA_DIR_NAME || name === NEW_DATA_DIR_NAME) {
        if (linksToDataDir) out.dataLinks.push(name);
        else out.unexpected.push(name);
      } else if ((DATA_DIR_PATTERN.test(name) || REMOVING_PATTERN.test(name)) && st.isDirectory()) {
        const foreign = await foreignEntries(join(target, name), name);
        if (foreign.length > 0) out.unexpected.push(...foreign);
        else if (DATA_DIR_PATTERN.test(name)) out.dataDirs.push(name);
        else out.leftovers.push(name);
      } else if (REMOVING_PATTERN.test(name) && linksToDataDir) {
        out.leftovers.push(name);
      } else if (await this.isUserLink(name)) {
        out.userLinks.push(name);
      } else {
        out.unexpected.push(name);
      }
    }
    return out;
  }

  /**
   * Removes everything the writer created, leaving the (then empty) target dir. When the dir
   * holds anything else, throws a {@link TearDownRefusedError} naming it and removes nothing.
   */
  async removeAll(): Promise<void> {
    const contents = await this.inspect();
    if (contents.unexpected.length > 0) {
      throw new TearDownRefusedError(
        this.o.targetDir,
        `it holds entries the atomic writer did not create: ${listNames(contents.unexpected)}`,
      );
    }
    for (const name of contents.userLinks) await this.removeLink(name);
    for (const name of [...contents.dataLinks, ...contents.dataDirs, ...contents.leftovers]) await this.removeOwned(name);
  }

  // INTERNALS

  private removal(): SafeRemoveOptions {
    return { mounter: this.o.mounter, root: this.o.targetDir };
  }

  /** The data dir `..data` names, "" when there is none. */
  private async currentDataDir(): Promise<string> {
    let target: string;
    try {
      target = await readlink(join(this.o.targetDir, DATA_DIR_NAME));
    } catch (err) {
      if (hasErrnoCode(err, 'ENOENT')) return '';
      if (hasErrnoCode(err, 'EINVAL')) {
        throw new AtomicWriterConflictError(`${join(this.o.targetDir, DATA_DIR_NAME)} exists and is not a symlink`);
      }
      throw err;
    }
    if (!DATA_DIR_PATTERN.test(target)) {
      throw new AtomicWriterConflictError(`${join(this.o.targetDir, DATA_DIR_NAME)} points to ${target}, which is not a data directory of the atomic writer`);
    }
    return target;
  }

  /** Creates the missing `<name> -> ..data/<name>` links. */
  private async createUserVisibleFiles(names: ReadonlySet<string>): Promise<void> {
    for (const name of names) {
      const link = join(this.o.targetDir, name);
      const want = `${DATA_DIR_NAME}/${name}`;
      const st = await lstat(link).catch((err: unknown) => {
        if (hasErrnoCode(err, 'ENOENT')) return null;
        throw err;
      });
      if (st === null) {
        await symlink(want, link);
      } else if (!st.isSymbolicLink() || (await readlink(link)) !== want) {
        throw new AtomicWriterConflictError(`cannot create ${link} -> ${want}: the path exists and is not a link of the atomic writer`);
      }
    }
  }

  /** Removes the writer's top-level links whose names are no longer in the payload. */
  private async removeStaleLinks(wanted: ReadonlySet<string>): Promise<void> {
    for (const name of await readdir(this.o.targetDir)) {
      if (name.startsWith('..') || wanted.has(name)) continue;
      if (await this.isUserLink(name)) await this.removeLink(name);
    }
  }

  /** Removes every data dir but `current`, and the leftovers of interrupted removals. */
  private async removeStaleDataDirs(current: string): Promise<void> {
    for (const name of await readdir(this.o.targetDir)) {
      const stale = name !== current && DATA_DIR_PATTERN.test(name);
      // A payload key may (absurdly) look like a leftover; its link is the user's, not a leftover.
      const leftover = REMOVING_PATTERN.test(name) && !(await this.isUserLink(name));
      if (stale || leftover) await this.removeOwned(name);
    }
  }

  /** True when the top-level `name` is a `<name> -> ..data/<name>` link. */
  private async isUserLink(name: string): Promise<boolean> {
    const path = join(this.o.targetDir, name);
    return (await lstat(path)).isSymbolicLink() && (await readlink(path)) === `${DATA_DIR_NAME}/${name}`;
  }

  /** Unlinks the top-level symlink `name` (never followed); no-op when absent. */
  private async removeLink(name: string): Promise<void> {
    if (name.startsWith('..')) {
      await this.removeOwned(name);
      return;
    }
    await safeRemove(join(this.o.targetDir, name), { ...this.removal(), allowSymlinks: [name] });
  }

  /**
   * Removes the writer's top-level entry `name`: a link (unlinked, never followed) or a tree
   * (see {@link removeTree}). A `..` name is renamed first (see the module comment).
   */
  private async removeOwned(name: string): Promise<void> {
    let path = join(this.o.targetDir, name);
    const st = await lstat(path).catch((err: unknown) => {
      if (hasErrnoCode(err, 'ENOENT')) return null;
      throw err;
    });
    if (st === null) return;
    if (name.startsWith('..')) {
      const renamed = join(this.o.targetDir, `.volumescope-removing-${randomBytes(8).toString('hex')}`);
      await rename(path, renamed);
      path = renamed;
    }
    if (st.isSymbolicLink()) await safeRemove(path, { ...this.removal(), allowSymlinks: [basename(path)] });
    else await this.removeTree(path);
  }

  /** Removes a tree of regular files and directories the writer created, bottom-up, one safe removal at a time. */
  private async removeTree(path: string): Promise<void> {
    const st = await lstat(path).catch((err: unknown) => {
      if (hasErrnoCode(err, 'ENOENT')) return null;
      throw err;
    });
    if (st === null) return;
    if (st.isDirectory()) {
      for (const name of await readdir(path)) await this.removeTree(join(path, name));
      await safeRemove(path, this.removal());
    } else if (st.isFile()) {
      await safeRemove(path, { ...this.removal(), allowFiles: [basename(path)] });
    } else {
      throw new TearDownRefusedError(path, 'it is neither a regular file nor a directory, so the atomic writer did not create it');
    }
  }
}

/**
 * The answer of {@link AtomicWriter.write}'s up-to-date branch when that branch would change
 * nothing, found with synchronous calls: the name of the data dir `..data` points to when it
 * holds exactly the payload (the same paths, regular files with the same permission bits and
 * content), every top-level name is the writer's link to it, and no other data dir or leftover of
 * a removal is in the target dir. Null otherwise, and on any error: `write` then decides with its
 * asynchronous calls, which report errors and repair, so a null never changes the outcome.
 *
 * Why synchronous: every configMap, secret, projected and downward API volume is set up again
 * after each restart and every sync period, and nearly every such SetUp finds its payload
 * unchanged. The check is about ten file calls below the volume dir (local disk or tmpfs);
 * through libuv's thread pool each call costs a round trip of the event loop. Measured on Node 24
 * (2-core machine, 600 volumes of two small files, all at once): 75–105 ms and 110–180 ms of CPU
 * with promises, 27–28 ms and about 30 ms of CPU with this. Payloads above
 * {@link SYNC_CHECK_MAX_FILES} files or {@link SYNC_CHECK_MAX_BYTES} bytes are not checked here.
 */
function upToDateDataDirSync(target: string, payload: Payload, wantedTop: ReadonlySet<string>): string | null {
  if (payload.size > SYNC_CHECK_MAX_FILES) return null;
  let bytes = 0;
  for (const file of payload.values()) bytes += file.data.length;
  if (bytes > SYNC_CHECK_MAX_BYTES) return null;
  try {
    const dataDir = readlinkSync(join(target, DATA_DIR_NAME));
    if (!DATA_DIR_PATTERN.test(dataDir)) return null;
    const dataPath = join(target, dataDir);
    // Every entry of the data dir is a payload path or a parent of one, and vice versa.
    const wantedPaths = allPrefixes(payload.keys());
    let found = 0;
    const walk = (dir: string, prefix: string): boolean => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const rel = prefix === '' ? e.name : `${prefix}/${e.name}`;
        if (!wantedPaths.has(rel)) return false;
        found++;
        if (e.isDirectory() && !walk(join(dir, e.name), rel)) return false;
      }
      return true;
    };
    if (!walk(dataPath, '') || found !== wantedPaths.size) return null;
    for (const [path, file] of payload) {
      const full = join(dataPath, path);
      const st = lstatSync(full);
      if (!st.isFile() || (st.mode & 0o777) !== file.mode || !readFileSync(full).equals(file.data)) return null;
    }
    for (const name of wantedTop) {
      const link = join(target, name);
      if (!lstatSync(link).isSymbolicLink() || readlinkSync(link) !== `${DATA_DIR_NAME}/${name}`) return null;
    }
    for (const name of readdirSync(target)) {
      if (name !== dataDir && (DATA_DIR_PATTERN.test(name) || REMOVING_PATTERN.test(name))) return null;
    }
    return dataDir;
  } catch {
    return null;
  }
}

/** Every path and every parent path of the payload (`a/b/c` → `a/b/c`, `a/b`, `a`). */
function allPrefixes(paths: Iterable<string>): Set<string> {
  const out = new Set<string>();
  for (const path of paths) {
    for (let p = path; p !== '.' && p !== ''; p = posix.dirname(p)) out.add(p);
  }
  return out;
}

/** Relative paths of every entry below `dir` (symlinks not followed); [] when `dir` is gone. */
async function walkRelative(dir: string, prefix = ''): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    if (hasErrnoCode(err, 'ENOENT')) return [];
    throw err;
  }
  const out: string[] = [];
  for (const e of entries) {
    const rel = prefix === '' ? e.name : `${prefix}/${e.name}`;
    out.push(rel);
    if (e.isDirectory()) out.push(...(await walkRelative(join(dir, e.name), rel)));
  }
  return out;
}

/** Entries below `dir` that are neither regular files nor directories, as paths prefixed with `label`. */
async function foreignEntries(dir: string, label: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const rel = `${label}/${e.name}`;
    if (e.isDirectory()) out.push(...(await foreignEntries(join(dir, e.name), rel)));
    else if (!e.isFile()) out.push(rel);
  }
  return out;
}

/** True when a file of the payload is missing from `dir` or differs in content or permission bits. */
async function payloadDiffers(payload: Payload, dir: string): Promise<boolean> {
  for (const [path, file] of payload) {
    const full = join(dir, path);
    const st = await lstat(full).catch((err: unknown) => {
      if (hasErrnoCode(err, 'ENOENT') || hasErrnoCode(err, 'ENOTDIR')) return null;
      throw err;
    });
    if (st === null || !st.isFile() || (st.mode & 0o777) !== file.mode) return true;
    if (!(await readFile(full)).equals(file.data)) return true;
  }
  return false;
}

/**
 * Writes every file (parents 0755) with exactly its mode, whatever the umask, fsynced; then
 * fsyncs every directory of the data dir, deepest first, the data dir last.
 */
async function writePayloadToDir(payload: Payload, dir: string, fs: DurableWriteFs | undefined): Promise<void> {
  const dirs = new Set<string>([dir]);
  for (const [path, file] of payload) {
    const full = join(dir, path);
    await mkdir(dirname(full), { recursive: true, mode: 0o755 });
    for (let d = dirname(full); d !== dir && !dirs.has(d); d = dirname(d)) dirs.add(d);
    await createFileSynced(full, file.data, file.mode, fs);
  }
  for (const d of [...dirs].sort((a, b) => b.length - a.length)) await syncDirectory(d, fs);
}
