/**
 * A bounded, read-only walk of a directory tree under the kubelet root, shared by the orphan
 * inspector and the guarded cleanup. The walk obeys the rules of docs/safety.md for
 * anything that may later be acted on:
 *
 * - symlinks are reported, never followed (`lstat` only);
 * - it stays on one filesystem: a directory that is a mount point (per the caller's mount table)
 *   or whose `st_dev` differs from its parent's is reported and not entered; the second case is
 *   flagged as an unlisted boundary, because it means the mount table the caller holds is stale
 *   or foreign;
 * - it stops after `maxEntries` entries and says so, so a pod directory with a million files
 *   costs a bounded amount of work.
 *
 * Entries come in pre-order with sorted names, the start directory first.
 */
import { constants } from 'node:fs';
import { lstat, open, readdir, readlink, realpath } from 'node:fs/promises';
import { join } from 'node:path';

/** The part of `fs.Stats` the walk reads. */
export interface WalkStat {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  isDirectory(): boolean;
  isFile(): boolean;
  isSymbolicLink(): boolean;
}

/** Read-only file system calls used by observe mode; the default is node:fs. Tests may wrap it. */
export interface ReadOnlyFs {
  lstat(path: string): Promise<WalkStat>;
  readdir(path: string): Promise<string[]>;
  readlink(path: string): Promise<string>;
  realpath(path: string): Promise<string>;
  /** Reads up to `maxBytes` of a regular file without following a symlink at `path` (O_NOFOLLOW). */
  readFileNoFollow(path: string, maxBytes: number): Promise<{ text: string; truncated: boolean }>;
}

export const nodeReadOnlyFs: ReadOnlyFs = {
  lstat: (p) => lstat(p),
  readdir: (p) => readdir(p),
  readlink: (p) => readlink(p),
  realpath: (p) => realpath(p),
  readFileNoFollow: async (p, maxBytes) => {
    const handle = await open(p, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      const buf = Buffer.alloc(maxBytes + 1);
      const { bytesRead } = await handle.read(buf, 0, maxBytes + 1, 0);
      return { text: buf.subarray(0, Math.min(bytesRead, maxBytes)).toString('utf8'), truncated: bytesRead > maxBytes };
    } finally {
      await handle.close();
    }
  },
};

export type WalkEntryKind = 'directory' | 'file' | 'symlink' | 'other';

export interface WalkEntry {
  path: string;
  kind: WalkEntryKind;
  /** Bytes (`st_size`); 0 for directories, so sums count file data only. */
  size: number;
  mtimeMs: number;
  dev: number;
  ino: number;
  /** A directory listed in the mount table as a mount point; not entered. */
  mountPoint: boolean;
  /** A directory on another device than its parent although the table does not list it; not entered. */
  unlistedBoundary: boolean;
  /** Why the directory could not be listed (EACCES, ...); not entered. */
  error?: string;
}

export interface WalkResult {
  entries: WalkEntry[];
  /** The entry budget ran out; entries beyond it were not looked at. */
  truncated: boolean;
}

export interface WalkOptions {
  /** Only `lstat` and `readdir` are used. */
  fs?: Pick<ReadOnlyFs, 'lstat' | 'readdir'>;
  /** True when `path` is a mount point in the caller's (fresh) mount table. */
  isMountPoint: (path: string) => boolean;
  /** Upper bound of entries returned, the start included. */
  maxEntries: number;
  /** Device the start itself must be on (its parent's); when it differs, the start is a boundary. */
  startParentDev?: number;
}

function errnoCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

function kindOf(st: WalkStat): WalkEntryKind {
  if (st.isSymbolicLink()) return 'symlink';
  if (st.isDirectory()) return 'directory';
  if (st.isFile()) return 'file';
  return 'other';
}

/**
 * Walks `start` (which must exist; a missing start gives no entries). A vanished entry is
 * skipped (the tree may change while it is read); other errors on an entry are recorded on it.
 */
export async function walkOneFilesystem(start: string, opts: WalkOptions): Promise<WalkResult> {
  const fs = opts.fs ?? nodeReadOnlyFs;
  const entries: WalkEntry[] = [];
  const stack: { path: string; parentDev: number | undefined }[] = [{ path: start, parentDev: opts.startParentDev }];
  while (stack.length > 0) {
    const next = stack.pop();
    if (next === undefined) break;
    if (entries.length >= opts.maxEntries) return { entries, truncated: true };
    let st: WalkStat;
    try {
      st = await fs.lstat(next.path);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') continue;
      throw err;
    }
    const kind = kindOf(st);
    const entry: WalkEntry = {
      path: next.path,
      kind,
      size: kind === 'directory' ? 0 : st.size,
      mtimeMs: st.mtimeMs,
      dev: st.dev,
      ino: st.ino,
      mountPoint: false,
      unlistedBoundary: false,
    };
    entries.push(entry);
    if (opts.isMountPoint(next.path)) {
      entry.mountPoint = true;
      continue;
    }
    if (kind !== 'directory') continue;
    if (next.parentDev !== undefined && st.dev !== next.parentDev) {
      entry.unlistedBoundary = true;
      continue;
    }
    let names: string[];
    try {
      names = await fs.readdir(next.path);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') continue;
      entry.error = errnoCode(err) ?? String(err);
      continue;
    }
    // Reverse-sorted onto the stack, so they come off in sorted (pre-)order.
    for (const name of [...names].sort().reverse()) stack.push({ path: join(next.path, name), parentDev: st.dev });
  }
  return { entries, truncated: false };
}
