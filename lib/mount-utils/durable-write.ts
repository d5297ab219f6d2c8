/**
 * Durable, atomic replacement of one small file (the agent's token file, the CSI plugin's
 * vol_data.json, the unprivileged mounter's stand-in table): a reader sees the previous version
 * or the new one, never a truncated or half-written file, and once the call resolves the new
 * version survives a crash or power loss.
 *
 * The steps, each a separate system call so a failure names where it happened:
 *
 * 1. create a temporary file in the same directory (same filesystem, so step 4 is a rename and
 *    not a copy), exclusively, with the requested mode, set exactly (the umask only clears bits);
 * 2. write the whole content;
 * 3. fsync the file, then close it (close can report a deferred write error, e.g. on NFS);
 * 4. rename it over the target — or, with `exclusive`, link(2) it to the target, which fails
 *   with EEXIST when the target exists (an atomic "create if absent"), then unlink the temp name;
 * 5. fsync the directory, so the new directory entry is on disk too.
 *
 * On any failure in steps 1–4 the temporary file is removed and {@link DurableWriteError} is
 * thrown with the target path, the step and the errno code (ENOSPC, EIO, …); the target is
 * untouched, so the previous version is intact. A failure in step 5 happens after the rename:
 * the new version is in place but may not survive a crash; the error says so (`committed`).
 *
 * A crash between steps 1 and 4 (or, with `exclusive`, a failed unlink of the temporary name
 * after the link) can leave a temporary file named `.<name>.<hex>.tmp` beside the target; it is
 * never read and never mistaken for the target.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { link, open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** One open file or directory, as far as the writer uses it. */
export interface DurableFile {
  /** Writes all of `data` (a short write is an error, as with fs.writeFile). */
  writeFile(data: Uint8Array): Promise<void>;
  chmod(mode: number): Promise<void>;
  sync(): Promise<void>;
  close(): Promise<void>;
}

/** The file system calls of the writer; tests inject failures (EIO, ENOSPC) through it. */
export interface DurableWriteFs {
  /** Creates `path` exclusively (O_CREAT|O_EXCL|O_WRONLY) with `mode`. */
  createExclusive(path: string, mode: number): Promise<DurableFile>;
  /** Opens a directory read-only, to fsync it. */
  openDirectory(path: string): Promise<DurableFile>;
  rename(from: string, to: string): Promise<void>;
  link(existing: string, newPath: string): Promise<void>;
  unlink(path: string): Promise<void>;
}

export const nodeDurableWriteFs: DurableWriteFs = {
  createExclusive: (path, mode) => open(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, mode),
  openDirectory: (path) => open(path, constants.O_RDONLY | constants.O_DIRECTORY),
  rename: (from, to) => rename(from, to),
  link: (existing, newPath) => link(existing, newPath),
  unlink: (path) => unlink(path),
};

/** Where a durable write failed. */
export type DurableWriteStep = 'create' | 'write' | 'fsync' | 'close' | 'rename' | 'link' | 'fsync-directory';

const stepTexts: Record<DurableWriteStep, string> = {
  create: 'creating the temporary file',
  write: 'writing the temporary file',
  fsync: 'syncing the temporary file to disk',
  close: 'closing the temporary file',
  rename: 'renaming the temporary file over it',
  link: 'linking the temporary file to it',
  'fsync-directory': 'syncing its directory to disk',
};

/**
 * A durable write failed. `committed` false: the target is exactly as before (the previous
 * version, or absent) and no temporary file is left. `committed` true: only the final directory
 * sync failed, so the new content is in place but may be lost in a crash.
 */
export class DurableWriteError extends Error {
  override readonly name = 'DurableWriteError';
  constructor(
    /** The target file. */
    readonly path: string,
    readonly step: DurableWriteStep,
    /** The errno code of the cause (`ENOSPC`, `EIO`, `EEXIST`, …), when it has one. */
    readonly code: string | undefined,
    readonly committed: boolean,
    options: { cause: unknown; exclusive?: boolean },
  ) {
    const cause = options.cause instanceof Error ? options.cause.message : String(options.cause);
    let outcome = 'the previous version is unchanged';
    if (committed) outcome = 'the new content is in place but may not survive a crash';
    else if (step === 'link' && code === 'EEXIST') outcome = 'the file already exists and was not changed';
    else if (options.exclusive === true) outcome = 'the file was not created';
    super(`cannot write ${path}: ${stepTexts[step]} failed: ${cause}; ${outcome}`, options);
  }
}

export function isDurableWriteError(err: unknown): err is DurableWriteError {
  return err instanceof DurableWriteError;
}

export interface DurableWriteOptions {
  /** Permission bits of the file, set exactly whatever the umask; default 0o600. */
  mode?: number;
  /** Create only: fail with EEXIST (step `link`) when the target exists, never replace it. */
  exclusive?: boolean;
  fs?: DurableWriteFs;
}

function errnoCode(err: unknown): string | undefined {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** The temporary name beside `path`: hidden, random, never the target's name. */
function durableTempPath(path: string): string {
  return join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
}

/**
 * True when `name` is a temporary name this writer gives a write of a file named `targetName`
 * (`.<targetName>.<12 hex digits>.tmp`): what a crash during such a write leaves beside the
 * target. Whoever removes the target's directory may remove these as its own.
 */
export function isDurableWriteTempName(name: string, targetName: string): boolean {
  const prefix = `.${targetName}.`;
  return name.startsWith(prefix) && /^[0-9a-f]{12}\.tmp$/.test(name.slice(prefix.length));
}

/** Writes `data` to `path` atomically and durably (see the module comment). The directory must exist. */
export async function writeFileDurably(path: string, data: string | Uint8Array, options: DurableWriteOptions = {}): Promise<void> {
  const fs = options.fs ?? nodeDurableWriteFs;
  const mode = options.mode ?? 0o600;
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const tmp = durableTempPath(path);
  let step: DurableWriteStep = 'create';
  let created = false;
  let file: DurableFile | null = null;
  try {
    file = await fs.createExclusive(tmp, mode);
    created = true;
    step = 'write';
    await file.writeFile(bytes);
    await file.chmod(mode);
    step = 'fsync';
    await file.sync();
    step = 'close';
    const closing = file;
    file = null;
    await closing.close();
    if (options.exclusive === true) {
      step = 'link';
      await fs.link(tmp, path);
      // From here the target holds the new content; the temp name is only a second link to it.
      created = false;
      await fs.unlink(tmp).catch(() => undefined);
    } else {
      step = 'rename';
      await fs.rename(tmp, path);
      created = false;
    }
  } catch (err) {
    if (file !== null) await file.close().catch(() => undefined);
    if (created) await fs.unlink(tmp).catch(() => undefined);
    throw new DurableWriteError(path, step, errnoCode(err), false, { cause: err, exclusive: options.exclusive === true });
  }
  try {
    await syncDirectory(dirname(path), fs);
  } catch (err) {
    throw new DurableWriteError(path, 'fsync-directory', errnoCode(err), true, { cause: err });
  }
}

/**
 * Creates a new file (exclusively: it must not exist) with exactly `mode`, writes `data` and
 * fsyncs it before closing: for writers that publish a whole directory of new files with one
 * rename (the atomic writer of configMap and secret volumes) and sync the directories
 * themselves. Throws the plain fs error; a partly written file is left for the caller, which
 * removes its new directory as a whole.
 */
export async function createFileSynced(path: string, data: Uint8Array, mode: number, fs: DurableWriteFs = nodeDurableWriteFs): Promise<void> {
  const file = await fs.createExclusive(path, mode);
  try {
    await file.writeFile(data);
    await file.chmod(mode);
    await file.sync();
  } catch (err) {
    await file.close().catch(() => undefined);
    throw err;
  }
  await file.close();
}

/** fsyncs a directory (its entries: a rename, link or new file in it). */
export async function syncDirectory(dir: string, fs: DurableWriteFs = nodeDurableWriteFs): Promise<void> {
  const handle = await fs.openDirectory(dir);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
