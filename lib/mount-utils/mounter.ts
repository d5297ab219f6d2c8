/**
 * The `Mounter` interface, after `mount.Interface` of k8s.io/mount-utils: every volume plugin
 * and every cleanup mounts, unmounts and asks "is this a mount point?" through it, never by
 * calling mount(8) or reading mountinfo itself.
 *
 * Two implementations exist: {@link LinuxMounter} (real mount(8)/umount(8), needs root) and
 * {@link UnprivilegedMounter} (directories and symlinks standing in for mounts, for laptops and
 * non-root CI). {@link detectMounter} picks one at start. They are re-exported here so users
 * import the whole mount API from this module.
 */
import type { MountInfo } from './mountinfo.ts';

/** Which implementation is in use: real kernel mounts, or the directory/symlink stand-in. */
export type MounterKind = 'linux' | 'unprivileged';

export interface Mounter {
  /** `linux` for {@link LinuxMounter}, `unprivileged` for {@link UnprivilegedMounter}. */
  readonly kind: MounterKind;
  /** True when mounts are real kernel mounts. */
  readonly privileged: boolean;

  /**
   * Mounts `source` on `target` (`Mount`). `fstype` may be empty (bind mounts). `options` are
   * mount options without `-o` (`bind`, `ro`, `size=1m`). `target` must already exist.
   * Rejects with a `MountError`.
   */
  mount(source: string, target: string, fstype: string, options: readonly string[]): Promise<void>;

  /**
   * Unmounts the top-most mount at `target` (`Unmount`). Rejects with a `MountError`, also when
   * `target` is not a mount point. Never removes the target directory.
   */
  unmount(target: string): Promise<void>;

  /**
   * The mount table as it is now (`List`): read at every call, never cached, so it can back the
   * "read mountinfo fresh" rule of every destructive step.
   */
  list(): Promise<MountInfo[]>;

  /**
   * `IsLikelyNotMountPoint`: false when `path` is on a different device than its parent, which
   * is cheap but misses bind mounts within one filesystem (they share the device). Rejects with
   * the stat error (ENOENT when `path` does not exist; see `isCorruptedMnt` for dead mounts).
   */
  isLikelyNotMountPoint(path: string): Promise<boolean>;

  /**
   * `IsMountPoint`: exact, from the mount table read now; bind mounts are detected. Symlinks in
   * `path` are resolved first. Rejects with the fs error when `path` does not exist.
   */
  isMountPoint(path: string): Promise<boolean>;

  /**
   * `GetMountRefs`: the other mount points that show the same directory as `path` (same root
   * inside the same filesystem), e.g. all bind mounts of a staging directory. `path` may be a
   * mount point or a plain source directory. A missing or corrupted `path` gives [].
   */
  getMountRefs(path: string): Promise<string[]>;
}

/** Anything that can produce the current mount table (a `Mounter` does). */
export type MountLister = Pick<Mounter, 'list'>;

/** What the agent logs and puts in its snapshot about the chosen mounter. */
export interface MounterDescription {
  kind: MounterKind;
  privileged: boolean;
  /** Human-readable reason for the choice, for the log and the dashboard. */
  reason: string;
}

export { LinuxMounter } from './linux-mounter.ts';
export type { LinuxMounterOptions } from './linux-mounter.ts';
export { UnprivilegedMounter, UNPRIVILEGED_MOUNTINFO_FILE } from './unprivileged-mounter.ts';
export type { UnprivilegedMounterOptions } from './unprivileged-mounter.ts';
export { detectMounter } from './detect-mounter.ts';
export type { DetectMounterOptions, DetectedMounter } from './detect-mounter.ts';
export { MountError, isMountError } from './mount-error.ts';
export { isCorruptedMnt } from './mount-table.ts';
