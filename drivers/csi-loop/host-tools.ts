/**
 * Small host helpers for the privileged backend: running a command, reading the mount table
 * fresh from /proc/self/mountinfo, and asking sysfs which file backs a loop device.
 */
import { execFile } from 'node:child_process';
import { promises as fs, type Stats } from 'node:fs';
import path from 'node:path';

export class CommandFailedError extends Error {
  override readonly name = 'CommandFailedError';

  constructor(
    readonly command: string,
    readonly exitCode: number | null,
    readonly stderr: string,
  ) {
    super(`${command} failed (exit ${exitCode ?? 'signal'}): ${stderr.trim() || 'no output'}`);
  }
}

export function isCommandFailedError(err: unknown): err is CommandFailedError {
  return err instanceof CommandFailedError;
}

export interface CommandResult {
  stdout: string;
  stderr: string;
}

/** Runs `file args…` without a shell; rejects with CommandFailedError on a non-zero exit. */
export function run(file: string, args: readonly string[], timeoutMs = 60_000): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: timeoutMs, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error === null) {
        resolve({ stdout, stderr });
        return;
      }
      const code = typeof error.code === 'number' ? error.code : null;
      const detail = stderr || (typeof error.code === 'string' ? error.code : error.message);
      reject(new CommandFailedError([file, ...args].join(' '), code, detail));
    });
  });
}

/** Decodes the octal escapes (\040 for a space, …) the kernel uses in mountinfo paths. */
function unescapeMountPath(text: string): string {
  return text.replace(/\\([0-7]{3})/g, (_m, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/** Every mount point of this process's mount namespace, read fresh (never cached). */
export async function readMountPoints(): Promise<string[]> {
  const text = await fs.readFile('/proc/self/mountinfo', 'utf8');
  const points: string[] = [];
  for (const line of text.split('\n')) {
    const fields = line.split(' ');
    const mountPoint = fields[4];
    if (mountPoint !== undefined) {
      points.push(unescapeMountPath(mountPoint));
    }
  }
  return points;
}

/** Resolves symlinks of an existing path; returns the lexical absolute path when it is missing. */
export async function canonicalPath(p: string): Promise<string> {
  try {
    return await fs.realpath(p);
  } catch {
    return path.resolve(p);
  }
}

/** Whether `p` itself is a mount point (per /proc/self/mountinfo). */
export async function isMountPoint(p: string): Promise<boolean> {
  const target = await canonicalPath(p);
  return (await readMountPoints()).includes(target);
}

/**
 * The file behind loop device `devicePath` (from /sys/block/loopN/loop/backing_file), or null
 * when the device is not attached. A " (deleted)" suffix is removed.
 */
export async function loopBackingFile(devicePath: string): Promise<string | null> {
  const name = path.basename(devicePath);
  if (!/^loop[0-9]+$/.test(name)) {
    return null;
  }
  try {
    const text = await fs.readFile(`/sys/block/${name}/loop/backing_file`, 'utf8');
    return text.trim().replace(/ \(deleted\)$/, '');
  } catch {
    return null;
  }
}

/** The loop devices currently backed by `imagePath` (`losetup -j`). */
export async function loopDevicesOf(imagePath: string): Promise<string[]> {
  const { stdout } = await run('losetup', ['-j', imagePath]);
  return stdout
    .split('\n')
    .map((line) => line.split(':')[0]?.trim() ?? '')
    .filter((dev) => dev.startsWith('/dev/loop'));
}

/** lstat that returns null for a missing path. */
export async function lstatOrNull(p: string): Promise<Stats | null> {
  try {
    return await fs.lstat(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      return null;
    }
    throw err;
  }
}
