/**
 * statfs in a worker thread: real directories, a missing path, and a real FUSE mount (Debian's
 * bindfs, in the foreground as this test's own child; FUSE mounts need no root, fusermount3
 * mounts for others) whose daemon is stopped with SIGSTOP, so statfs of it hangs in the kernel.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { realClock } from '../../lib/clock/clock.ts';
import { waitFor } from '../../lib/clock/testing/wait-for.ts';
import { execFileNoShell } from '../../lib/mount-utils/exec.ts';
import { cleanUpTempDir, makeTempDir } from '../../lib/mount-utils/testing/mount-test-env.ts';
import { readMountInfo } from '../../lib/mount-utils/mountinfo.ts';
import { WorkerStatfs } from './statfs-worker.ts';

let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.reverse()) await c();
  cleanups = [];
});

async function tempDir(): Promise<string> {
  const dir = await makeTempDir('volumescope-statfs-');
  cleanups.push(async () => {
    await cleanUpTempDir(dir);
  });
  return dir;
}

describe('WorkerStatfs', () => {
  it('reports the numbers of real directories and the error of a missing one, in one pass', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'f'), 'x');
    const statfs = new WorkerStatfs(realClock, 5_000);

    const out = await statfs.statfsAll([dir, join(dir, 'missing')]);

    const ok = out.get(dir);
    expect(ok?.ok).toBe(true);
    if (ok?.ok !== true) throw new Error('unreachable');
    expect(ok.usage.capacityBytes).toBeGreaterThan(0);
    expect(ok.usage.capacityBytes).toBeGreaterThanOrEqual(ok.usage.usedBytes);
    expect(ok.usage.inodes).toBe(ok.usage.inodesFree + ok.usage.inodesUsed);
    const missing = out.get(join(dir, 'missing'));
    expect(missing).toMatchObject({ ok: false });
    expect(missing?.ok === false && missing.error).toContain('ENOENT');
  });

  it('reports a hung FUSE mount within the timeout, goes on with the next path, skips it while stuck and measures it again once it answers', async () => {
    const dir = await tempDir();
    const src = join(dir, 'src');
    const mnt = join(dir, 'mnt');
    const other = join(dir, 'other');
    await Promise.all([mkdir(src), mkdir(mnt), mkdir(other)]);
    const daemon: ChildProcess = spawn('bindfs', ['-f', src, mnt], { stdio: 'ignore' });
    cleanups.push(async () => {
      daemon.kill('SIGCONT');
      await execFileNoShell('fusermount', ['-uz', mnt]);
      daemon.kill('SIGKILL');
    });
    await waitFor(async () => (await readMountInfo()).some((m) => m.mountPoint === mnt), { what: 'the bindfs mount', timeoutMs: 10_000 });
    const statfs = new WorkerStatfs(realClock, 300);
    expect((await statfs.statfsAll([mnt])).get(mnt)?.ok).toBe(true);

    daemon.kill('SIGSTOP');
    const hung = await statfs.statfsAll([mnt, other]);
    expect(hung.get(mnt)).toMatchObject({ ok: false, error: `statfs of ${mnt} did not answer within 300 ms (hung mount?)` });
    expect(hung.get(other)?.ok).toBe(true);
    const skipped = await statfs.statfsAll([mnt]);
    const again = skipped.get(mnt);
    expect(again?.ok === false ? again.error : 'measured').toContain('has not returned since');

    daemon.kill('SIGCONT');
    await waitFor(async () => (await statfs.statfsAll([mnt])).get(mnt)?.ok === true, { what: 'statfs answers again after SIGCONT', timeoutMs: 10_000 });
  });
});
