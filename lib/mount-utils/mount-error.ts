/**
 * Failure of mount(8) or umount(8), with the texts k8s mount-utils uses, so log lines and
 * dashboard messages read like the kubelet's:
 *
 *     mount failed: exit status 32
 *     Mounting command: mount
 *     Mounting arguments: -t tmpfs -- tmpfs /x
 *     Output: mount: /x: mount point does not exist.
 */
import type { ExecResult } from './exec.ts';

export type MountOperation = 'mount' | 'unmount';

export class MountError extends Error {
  override readonly name = 'MountError';
  constructor(
    readonly operation: MountOperation,
    /** The program that ran (`mount`, `umount`), or a description for the unprivileged mounter. */
    readonly command: string,
    readonly args: readonly string[],
    /** Exit status; null when the program was killed by a signal or could not be started. */
    readonly exitCode: number | null,
    /** Combined stdout and stderr, as upstream's CombinedOutput. */
    readonly output: string,
    /** Go-style status text: `exit status 32`, `signal: SIGKILL`, or the spawn error. */
    readonly status: string,
  ) {
    super(
      operation === 'mount'
        ? `mount failed: ${status}\nMounting command: ${command}\nMounting arguments: ${args.join(' ')}\nOutput: ${output}`
        : `unmount failed: ${status}\nUnmounting arguments: ${args.join(' ')}\nOutput: ${output}`,
    );
  }

  /** Builds the error from a finished command. */
  static fromExec(operation: MountOperation, command: string, args: readonly string[], r: ExecResult): MountError {
    const status =
      r.spawnError !== undefined
        ? r.spawnError.message
        : r.signal !== null
          ? `signal: ${r.signal}`
          : `exit status ${r.exitCode ?? -1}`;
    return new MountError(operation, command, args, r.exitCode, r.stdout + r.stderr, status);
  }
}

export function isMountError(err: unknown): err is MountError {
  return err instanceof MountError;
}

/** mount(8)'s exit code for "mount failure", used by the unprivileged mounter for the same cases. */
export const MOUNT_EXIT_FAILURE = 32;
