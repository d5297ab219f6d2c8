/**
 * The unmount-blocker finder on real mounts (bindfs, agent/node/testing/fuse-mount.ts) and real
 * processes: a process with its working directory in the mount makes the unmount fail as busy,
 * the finder names it, and the unmount succeeds once it exits; an open file and another mount
 * namespace that still has the mount are found too; a path outside the root dir is refused.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { realClock } from '../../../lib/clock/clock.ts';
import { waitFor } from '../../../lib/clock/testing/wait-for.ts';
import { execFileNoShell, type ExecResult } from '../../../lib/mount-utils/exec.ts';
import { cleanUpTempDir, makeTempDir } from '../../../lib/mount-utils/testing/mount-test-env.ts';
import { discardLogger } from '../../../lib/volume/logger.ts';
import { blockersVerdict } from '../../../lib/api/mount-health.ts';
import { isBlockersTargetError } from '../../runtime.ts';
import { mountBindfs, type FuseMount } from '../testing/fuse-mount.ts';
import { findUnmountBlockers } from './find-blockers.ts';

const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;

/** Unmounts as the mount was made: umount(8) as root, fusermount3 otherwise. */
function unmount(path: string): Promise<ExecResult> {
  return isRoot ? execFileNoShell('umount', ['--', path]) : execFileNoShell('fusermount3', ['-u', path]);
}

describe('unmount blockers on real mounts', () => {
  let dir: string;
  let fuse: FuseMount;
  const children: ChildProcess[] = [];

  beforeEach(async () => {
    dir = await makeTempDir('volumescope-blockers-');
    fuse = await mountBindfs(join(dir, 'backing'), join(dir, 'root', 'pods', 'uid-1', 'volumes', 'kubernetes.io~empty-dir', 'data'));
  });

  afterEach(async () => {
    for (const child of children.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await exited;
      }
    }
    await fuse.cleanup();
    expect(await cleanUpTempDir(dir)).toEqual([]);
  });

  function start(command: string, args: string[], cwd: string): ChildProcess {
    const child = spawn(command, args, { cwd, stdio: 'ignore' });
    children.push(child);
    return child;
  }

  const find = () => findUnmountBlockers({ path: fuse.path, rootDir: join(dir, 'root'), clock: realClock, logger: discardLogger });

  it('names the process whose working directory blocks the unmount; the unmount succeeds once it exits', async () => {
    // Arrange: a process with its cwd in the mount
    const sleeper = start('sleep', ['600'], fuse.path);
    await waitFor(async () => (await find()).holders.length > 0, { what: 'the sleeper seen in the mount' });

    // Act
    const busy = await unmount(fuse.path);
    const report = await find();

    // Assert
    expect(busy.exitCode).not.toBe(0);
    expect(busy.stderr).toMatch(/target is busy|device or resource busy/i);
    expect(report.holders).toEqual([{ pid: sleeper.pid, command: 'sleep 600', kind: 'cwd', path: fuse.path, container: null }]);
    expect(report.incomplete).toBeNull();
    expect(report.processesScanned).toBeGreaterThan(1);
    expect(blockersVerdict(report)).toContain(`1 process(es) keep ${fuse.path} busy. pid ${String(sleeper.pid)} (sleep 600) on the host has its working directory in it.`);

    // Act: it exits
    const exited = new Promise((resolve) => sleeper.once('exit', resolve));
    sleeper.kill('SIGTERM');
    await exited;
    const after = await find();

    // Assert
    expect(after.holders).toEqual([]);
    expect((await unmount(fuse.path)).exitCode).toBe(0);
  });

  it('names an open file and another mount namespace that still has the mount', async () => {
    // Arrange: a file held open by a shell, and a process in a copy of this mount namespace
    await writeFile(join(fuse.path, 'log.txt'), 'x');
    const holder = start('sh', ['-c', 'exec 3<log.txt; cd /; exec sleep 600'], fuse.path);
    const other = start('unshare', [...(isRoot ? [] : ['--user', '--map-root-user']), '--mount', '--propagation', 'private', 'sleep', '600'], '/');
    await waitFor(
      async () => {
        const r = await find();
        return r.holders.some((h) => h.pid === holder.pid && h.kind === 'fd') && r.holders.some((h) => h.kind === 'mount-namespace');
      },
      { what: 'the open file and the other namespace seen' },
    );

    // Act
    const report = await find();

    // Assert
    expect(report.holders).toContainEqual({ pid: holder.pid, command: 'sleep 600', kind: 'fd', path: join(fuse.path, 'log.txt'), container: null });
    expect(report.holders).toContainEqual({ pid: other.pid, command: 'sleep 600', kind: 'mount-namespace', path: fuse.path, container: null });
  });

  it('refuses a path outside the root dir, naming it', async () => {
    await expect(findUnmountBlockers({ path: '/etc', rootDir: join(dir, 'root'), clock: realClock, logger: discardLogger })).rejects.toSatisfy(
      (err) => isBlockersTargetError(err) && err.reason === 'outside-root-dir' && err.message.includes('"/etc" is outside the agent\'s root dir'),
    );
    await expect(findUnmountBlockers({ path: `${join(dir, 'root')}/pods/../../x`, rootDir: join(dir, 'root'), clock: realClock, logger: discardLogger })).rejects.toSatisfy(isBlockersTargetError);
  });
});
