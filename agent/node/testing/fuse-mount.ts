/**
 * Test support: a real FUSE mount made by Debian's `bindfs` (packages bindfs and fuse3; .ci/run
 * installs them) running in the foreground, so the test holds its daemon's pid and can stop
 * (SIGSTOP: every call into the mount hangs), resume or kill it (the mount stays, and every call
 * fails with ENOTCONN). As root the tests run in a private mount namespace
 * (scripts/run-unit-tests.mjs); without root bindfs mounts through the setuid fusermount3.
 * Cleanup resumes the daemon before unmounting, and falls back to a lazy unmount.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { execFileNoShell } from '../../../lib/mount-utils/exec.ts';
import { readMountInfo } from '../../../lib/mount-utils/mountinfo.ts';
import { waitFor } from '../../../lib/clock/testing/wait-for.ts';

export interface FuseMount {
  /** The mount point. */
  path: string;
  daemon: ChildProcess;
  /** Stops the daemon (SIGSTOP). */
  stop(): void;
  /** Resumes it (SIGCONT). */
  resume(): void;
  /** Kills the daemon (SIGKILL); the mount stays, "transport endpoint is not connected". */
  kill(): Promise<void>;
  /** Resumes the daemon and unmounts (lazily when a plain unmount fails). */
  cleanup(): Promise<void>;
}

const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;

async function unmount(path: string, lazy: boolean): Promise<boolean> {
  const args = isRoot ? ['umount', lazy ? ['-l', '--', path] : ['--', path]] : ['fusermount3', lazy ? ['-uz', path] : ['-u', path]];
  const r = await execFileNoShell(args[0] as string, args[1] as string[]);
  return r.exitCode === 0;
}

/** Mounts `source` at `target` with bindfs and waits until mountinfo lists it. */
export async function mountBindfs(source: string, target: string): Promise<FuseMount> {
  await mkdir(source, { recursive: true });
  await mkdir(target, { recursive: true });
  const daemon = spawn('bindfs', ['-f', source, target], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  daemon.stderr?.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const failed = new Promise<never>((_, reject) => {
    daemon.once('error', (err) => {
      reject(new Error(`bindfs could not start (${err.message}): install the Debian packages bindfs and fuse3`));
    });
  });
  await Promise.race([
    failed,
    waitFor(async () => (await readMountInfo()).some((m) => m.mountPoint === target), { what: `bindfs mounted at ${target}`, describe: () => stderr }),
  ]);
  let exited = false;
  daemon.once('exit', () => (exited = true));
  return {
    path: target,
    daemon,
    stop: () => daemon.kill('SIGSTOP'),
    resume: () => daemon.kill('SIGCONT'),
    kill: async () => {
      daemon.kill('SIGKILL');
      await waitFor(() => exited, { what: 'the bindfs daemon exited' });
    },
    cleanup: async () => {
      if (!exited) daemon.kill('SIGCONT');
      if (!(await unmount(target, false))) await unmount(target, true);
      if (!exited) daemon.kill('SIGKILL');
    },
  };
}
