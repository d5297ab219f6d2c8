/**
 * The two HostUtils calls the hostPath type check needs (kubelet
 * `pkg/volume/util/hostutil`): does a path exist, and what kind of file is it. Both follow
 * symlinks, like `os.Stat`. Behind an interface so tests can present file types a test machine
 * may lack (block devices are absent from most containers' /dev).
 */
import { stat } from 'node:fs/promises';
import { hasErrnoCode } from '../util/errors.ts';

/** `hostutil.FileType` values (also the matching `HostPathType` names). */
export type FileType = 'Directory' | 'File' | 'Socket' | 'CharDevice' | 'BlockDevice';

export interface HostUtil {
  /** `PathExists`: true when stat succeeds; false when the path does not exist; rejects on other errors. */
  pathExists(path: string): Promise<boolean>;
  /**
   * `GetFileType`. Rejects with `path "<p>" does not exist` for a missing path and with
   * upstream's "only recognise ..." text for FIFOs and other types.
   */
  getFileType(path: string): Promise<FileType>;
}

/** `GetFileType` could not classify a path. */
export class FileTypeError extends Error {
  override readonly name = 'FileTypeError';
}

export function isFileTypeError(err: unknown): err is FileTypeError {
  return err instanceof FileTypeError;
}

export const nodeHostUtil: HostUtil = {
  async pathExists(path) {
    try {
      await stat(path);
      return true;
    } catch (err) {
      if (hasErrnoCode(err, 'ENOENT')) return false;
      throw err;
    }
  },
  async getFileType(path) {
    let st;
    try {
      st = await stat(path);
    } catch (err) {
      if (hasErrnoCode(err, 'ENOENT')) throw new FileTypeError(`path "${path}" does not exist`, { cause: err });
      throw err;
    }
    if (st.isDirectory()) return 'Directory';
    if (st.isFile()) return 'File';
    if (st.isSocket()) return 'Socket';
    if (st.isCharacterDevice()) return 'CharDevice';
    if (st.isBlockDevice()) return 'BlockDevice';
    throw new FileTypeError('only recognise file, directory, socket, block device and character device');
  },
};
