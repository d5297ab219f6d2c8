import { chmod, lstat, mkdir, readFile, readdir, rmdir, stat, symlink, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ExecFn, ExecResult } from './exec.ts';
import { LinuxMounter, makeBindOpts, makeMountArgs } from './linux-mounter.ts';
import { isMountError } from './mount-error.ts';
import type { MountError } from './mount-error.ts';
import { cleanUpTempDir, makeTempDir, mountMode, realMountsAllowed, testMounter } from './testing/mount-test-env.ts';
import { detectMounter } from './mounter.ts';
import type { Mounter } from './mounter.ts';
import { readMountInfo } from './mountinfo.ts';
import { SYNTHETIC_MOUNT_ID_BASE, UnprivilegedMounter } from './unprivileged-mounter.ts';

let dir: string;
let mounter: Mounter;

beforeEach(async () => {
  dir = await makeTempDir();
  mounter = testMounter(join(dir, 'state'));
});

afterEach(async () => {
  // Zero leaked mounts after every test, checked in the kernel's table and the mounter's.
  expect(await cleanUpTempDir(dir, mounter)).toEqual([]);
});

async function mountError(p: Promise<unknown>): Promise<MountError> {
  const err: unknown = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isMountError(err)) throw new Error(`expected a MountError, got ${String(err)}`);
  return err;
}

/** A tmpfs (or its stand-in) with `src`, `a` and `b` directories, so binds stay on one filesystem. */
async function tmpfsWithDirs(): Promise<string> {
  const fs = join(dir, 'fs');
  await mkdir(fs);
  await mounter.mount('tmpfs', fs, 'tmpfs', ['size=1m']);
  for (const d of ['src', 'a', 'b']) await mkdir(join(fs, d));
  return fs;
}

describe(`Mounter in ${mountMode} mode`, () => {
  it('reports privileges that match the mode', () => {
    expect({ kind: mounter.kind, privileged: mounter.privileged }).toEqual(
      realMountsAllowed ? { kind: 'linux', privileged: true } : { kind: 'unprivileged', privileged: false },
    );
  });

  it('mounts a tmpfs that list() and isMountPoint report until it is unmounted', async () => {
    const target = join(dir, 'with space');
    await mkdir(target);

    await mounter.mount('tmpfs', target, 'tmpfs', ['size=1m']);
    const entry = (await mounter.list()).find((e) => e.mountPoint === target);
    expect(entry).toMatchObject({ fsType: 'tmpfs', source: 'tmpfs' });
    expect(await mounter.isMountPoint(target)).toBe(true);
    expect(await mounter.isLikelyNotMountPoint(target)).toBe(false);

    await mounter.unmount(target);
    expect((await mounter.list()).some((e) => e.mountPoint === target)).toBe(false);
    expect(await mounter.isMountPoint(target)).toBe(false);
    expect((await stat(target)).isDirectory()).toBe(true);
  });

  it('shares contents through a bind mount and leaves an empty mount point after unmount', async () => {
    const fs = await tmpfsWithDirs();
    await writeFile(join(fs, 'src', 'data'), 'hello');

    await mounter.mount(join(fs, 'src'), join(fs, 'a'), '', ['bind']);
    expect(await readFile(join(fs, 'a', 'data'), 'utf8')).toBe('hello');
    await writeFile(join(fs, 'a', 'written'), 'through the bind');
    expect(await readFile(join(fs, 'src', 'written'), 'utf8')).toBe('through the bind');

    await mounter.unmount(join(fs, 'a'));
    expect(await readdir(join(fs, 'a'))).toEqual([]);
    expect(await readdir(join(fs, 'src'))).toEqual(['data', 'written']);
    await mounter.unmount(fs);
  });

  it('finds a bind mount of a directory on the same filesystem with isMountPoint, which isLikelyNotMountPoint cannot see', async () => {
    const fs = await tmpfsWithDirs();
    await mounter.mount(join(fs, 'src'), join(fs, 'a'), '', ['bind']);

    expect(await mounter.isMountPoint(join(fs, 'a'))).toBe(true);
    // Same device as the parent: the stat heuristic calls it "likely not a mount point", as
    // upstream does. The unprivileged mounter knows its stand-ins, so it is exact here.
    expect(await mounter.isLikelyNotMountPoint(join(fs, 'a'))).toBe(realMountsAllowed);
    expect(await mounter.isMountPoint(join(fs, 'src'))).toBe(false);
    expect(await mounter.isLikelyNotMountPoint(join(fs, 'src'))).toBe(true);

    await mounter.unmount(join(fs, 'a'));
    await mounter.unmount(fs);
  });

  it('returns the other bind mounts of the same directory from getMountRefs', async () => {
    const fs = await tmpfsWithDirs();
    await mounter.mount(join(fs, 'src'), join(fs, 'a'), '', ['bind']);
    await mounter.mount(join(fs, 'src'), join(fs, 'b'), '', ['bind']);

    expect((await mounter.getMountRefs(join(fs, 'src'))).sort()).toEqual([join(fs, 'a'), join(fs, 'b')]);
    expect(await mounter.getMountRefs(join(fs, 'a'))).toEqual([join(fs, 'b')]);
    expect(await mounter.getMountRefs(join(fs, 'missing'))).toEqual([]);

    await mounter.unmount(join(fs, 'b'));
    expect(await mounter.getMountRefs(join(fs, 'a'))).toEqual([]);
    await mounter.unmount(join(fs, 'a'));
    await mounter.unmount(fs);
  });

  it('applies extra options of a bind mount (read-only) through the remount step', async () => {
    const fs = await tmpfsWithDirs();
    await mounter.mount(join(fs, 'src'), join(fs, 'a'), '', ['bind', 'ro']);

    const entry = (await mounter.list()).findLast((e) => e.mountPoint === join(fs, 'a'));
    expect(entry?.mountOptions).toContain('ro');
    if (realMountsAllowed) {
      await expect(writeFile(join(fs, 'a', 'x'), '')).rejects.toMatchObject({ code: 'EROFS' });
    }

    await mounter.unmount(join(fs, 'a'));
    await mounter.unmount(fs);
  });

  it('fails with a MountError carrying exit status 32 when the mount point does not exist', async () => {
    const target = join(dir, 'missing');
    const err = await mountError(mounter.mount('tmpfs', target, 'tmpfs', []));
    expect(err.exitCode).toBe(32);
    expect(err.message).toMatch(/^mount failed: exit status 32\nMounting command: \S+\nMounting arguments: -t tmpfs -- tmpfs \S+missing\nOutput: /);
    expect(err.output).toMatch(/does not exist/);
  });

  it('fails with a MountError when unmounting a path that is not mounted', async () => {
    const target = join(dir, 'plain');
    await mkdir(target);
    const err = await mountError(mounter.unmount(target));
    expect(err.message).toMatch(/^unmount failed: exit status 32\nUnmounting arguments: -- \S+plain\nOutput: /);
    expect(err.output).toMatch(/not mounted/);
  });

  it('rejects isLikelyNotMountPoint and isMountPoint for a missing path with ENOENT', async () => {
    await expect(mounter.isLikelyNotMountPoint(join(dir, 'missing'))).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(mounter.isMountPoint(join(dir, 'missing'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('LinuxMounter arguments and errors (fake exec, no privileges needed)', () => {
  function fakeExec(results: ExecResult[]): { exec: ExecFn; calls: { file: string; args: readonly string[] }[] } {
    const calls: { file: string; args: readonly string[] }[] = [];
    const exec: ExecFn = (file, args) => {
      calls.push({ file, args });
      return Promise.resolve(results.shift() ?? { exitCode: 0, signal: null, stdout: '', stderr: '' });
    };
    return { exec, calls };
  }
  const ok: ExecResult = { exitCode: 0, signal: null, stdout: '', stderr: '' };

  it.each([
    { name: 'a tmpfs with options', fstype: 'tmpfs', options: ['size=1m', 'mode=755'], want: ['-t', 'tmpfs', '-o', 'size=1m,mode=755', '--', 'src', '/t'] },
    { name: 'a bind mount without a type', fstype: '', options: ['bind'], want: ['-o', 'bind', '--', 'src', '/t'] },
    { name: 'no type and no options', fstype: '', options: [], want: ['--', 'src', '/t'] },
  ])('builds mount arguments for $name', ({ fstype, options, want }) => {
    expect(makeMountArgs('src', '/t', fstype, options)).toEqual(want);
  });

  it.each([
    { options: ['bind'], want: null },
    { options: ['ro'], want: null },
    { options: ['bind', 'ro', 'remount'], want: { bind: ['bind'], remount: ['bind', 'remount', 'ro'] } },
  ])('splits bind options $options into $want', ({ options, want }) => {
    expect(makeBindOpts(options)).toEqual(want);
  });

  it('formats a failed mount like upstream and keeps command, exit code and output', async () => {
    const { exec } = fakeExec([{ exitCode: 32, signal: null, stdout: '', stderr: 'mount: /t: wrong fs type.\n' }]);
    const err = await mountError(new LinuxMounter({ exec }).mount('/dev/x', '/t', 'ext4', ['ro']));
    expect(err.message).toBe(
      'mount failed: exit status 32\nMounting command: mount\nMounting arguments: -t ext4 -o ro -- /dev/x /t\nOutput: mount: /t: wrong fs type.\n',
    );
    expect(err).toMatchObject({ command: 'mount', exitCode: 32, args: ['-t', 'ext4', '-o', 'ro', '--', '/dev/x', '/t'] });
  });

  it.each([
    { name: 'a signal', result: { exitCode: null, signal: 'SIGKILL', stdout: '', stderr: '' }, status: 'signal: SIGKILL' },
    {
      name: 'a missing program',
      result: { exitCode: null, signal: null, stdout: '', stderr: '', spawnError: new Error('spawn mount ENOENT') },
      status: 'spawn mount ENOENT',
    },
  ])('reports $name in the status line', async ({ result, status }) => {
    const { exec } = fakeExec([result]);
    const err = await mountError(new LinuxMounter({ exec }).unmount('/t'));
    expect(err.message.split('\n')[0]).toBe(`unmount failed: ${status}`);
    expect(err.exitCode).toBeNull();
  });

  it('mounts a bind with extra options in two steps and unmounts it again when the remount fails', async () => {
    const { exec, calls } = fakeExec([ok, { exitCode: 32, signal: null, stdout: '', stderr: 'remount failed' }, ok]);
    await mountError(new LinuxMounter({ exec }).mount('/s', '/t', '', ['bind', 'ro']));
    expect(calls).toEqual([
      { file: 'mount', args: ['-o', 'bind', '--', '/s', '/t'] },
      { file: 'mount', args: ['-o', 'bind,remount,ro', '--', '/s', '/t'] },
      { file: 'umount', args: ['--', '/t'] },
    ]);
  });
});

describe('UnprivilegedMounter stand-ins (no privileges needed)', () => {
  let state: string;
  let m: UnprivilegedMounter;
  beforeEach(() => {
    state = join(dir, 'unpriv-state');
    m = new UnprivilegedMounter({ stateDir: state, systemMountInfoPath: null });
  });
  afterEach(async () => {
    expect(await cleanUpTempDir(join(dir, 'u'), m)).toEqual([]);
  });

  async function dirs(...names: string[]): Promise<string[]> {
    const paths = names.map((n) => join(dir, 'u', n));
    for (const p of paths) await mkdir(p, { recursive: true });
    return paths;
  }

  it('replaces a bind target with a symlink to the source and restores the empty directory with its mode', async () => {
    const [src = '', tgt = ''] = await dirs('src', 'tgt');
    await chmod(tgt, 0o750);
    await m.mount(src, tgt, '', ['bind']);
    expect((await lstat(tgt)).isSymbolicLink()).toBe(true);
    await m.unmount(tgt);
    const st = await lstat(tgt);
    expect(st.isDirectory()).toBe(true);
    expect(st.mode & 0o777).toBe(0o750);
  });

  it('binds a file onto an empty file and restores the empty file', async () => {
    const [base = ''] = await dirs('files');
    await writeFile(join(base, 'src'), 'content');
    await writeFile(join(base, 'tgt'), '');
    await m.mount(join(base, 'src'), join(base, 'tgt'), '', ['bind']);
    expect(await readFile(join(base, 'tgt'), 'utf8')).toBe('content');
    await m.unmount(join(base, 'tgt'));
    expect(await readFile(join(base, 'tgt'), 'utf8')).toBe('');
  });

  it('lets a restarted process see the earlier mounts from the table on disk', async () => {
    const [src = '', tgt = '', tmp = ''] = await dirs('src', 'tgt', 'tmp');
    await m.mount(src, tgt, '', ['bind']);
    await m.mount('tmpfs', tmp, 'tmpfs', []);

    const restarted = new UnprivilegedMounter({ stateDir: state, systemMountInfoPath: null });
    expect((await restarted.list()).map((e) => e.mountPoint)).toEqual([tgt, tmp]);
    expect((await readMountInfo(m.mountInfoPath)).every((e) => e.id >= SYNTHETIC_MOUNT_ID_BASE)).toBe(true);
    await restarted.unmount(tgt);
    await restarted.unmount(tmp);
    expect(await m.list()).toEqual([]);
  });

  it('drops a stand-in whose symlink was removed behind its back', async () => {
    const [src = '', tgt = ''] = await dirs('src', 'tgt');
    await m.mount(src, tgt, '', ['bind']);
    await unlink(tgt);
    expect(await m.list()).toEqual([]);
    await mkdir(tgt);
  });

  it('keeps what was written into a tmpfs stand-in when it is unmounted', async () => {
    const [tmp = ''] = await dirs('tmp');
    await m.mount('tmpfs', tmp, 'tmpfs', []);
    await writeFile(join(tmp, 'f'), 'x');
    await m.unmount(tmp);
    expect(await readdir(tmp)).toEqual(['f']);
  });

  it.each([
    { name: 'an unsupported file system type', setup: 'empty', fstype: 'ext4', options: [], want: /unknown filesystem type 'ext4'/ },
    { name: 'a bind over a non-empty directory', setup: 'nonempty', fstype: '', options: ['bind'], want: /non-empty directory/ },
    { name: 'a tmpfs over a non-empty directory', setup: 'nonempty', fstype: 'tmpfs', options: [], want: /non-empty directory/ },
    { name: 'a bind onto a symlink', setup: 'symlink', fstype: '', options: ['bind'], want: /only onto an empty directory or empty file/ },
    { name: 'a bind from a missing source', setup: 'missing-source', fstype: '', options: ['bind'], want: /special device .* does not exist/ },
  ])('refuses $name with exit status 32', async ({ setup, fstype, options, want }) => {
    const [src = '', tgt = ''] = await dirs('src', 'tgt');
    if (setup === 'nonempty') await writeFile(join(tgt, 'x'), '');
    if (setup === 'symlink') {
      await rmdir(tgt);
      await symlink(src, tgt);
    }
    const source = setup === 'missing-source' ? join(dir, 'u', 'nope') : src;
    const err = await mountError(m.mount(source, tgt, fstype, options));
    expect(err.exitCode).toBe(32);
    expect(err.output).toMatch(want);
    expect(await m.list()).toEqual([]);
  });

  it('refuses to stack a second mount on a stand-in', async () => {
    const [src = '', tgt = ''] = await dirs('src', 'tgt');
    await m.mount(src, tgt, '', ['bind']);
    expect((await mountError(m.mount(src, tgt, '', ['bind']))).output).toMatch(/already mounted/);
    await m.unmount(tgt);
  });

  it('lists the real mount table (here a fixture) before its stand-ins', async () => {
    const [tmp = ''] = await dirs('tmp');
    const fixture = join(dir, 'fixture-mountinfo');
    await writeFile(fixture, '1 0 8:1 / / rw - ext4 /dev/sda1 rw\n');
    const withSystem = new UnprivilegedMounter({ stateDir: state, systemMountInfoPath: fixture });
    await withSystem.mount('tmpfs', tmp, 'tmpfs', []);
    expect((await withSystem.list()).map((e) => e.mountPoint)).toEqual(['/', tmp]);
    await withSystem.unmount(tmp);
  });
});

describe(`detectMounter in ${mountMode} mode`, () => {
  it('chooses real mounts only inside the private namespace, and leaves no probe mount behind', async () => {
    // Outside the namespace the caller forbids mounting; that is the agent's switch too.
    const detected = await detectMounter({ unprivilegedStateDir: join(dir, 'state'), allowMount: realMountsAllowed, probeParentDir: dir });
    expect({ kind: detected.kind, privileged: detected.privileged, mounterKind: detected.mounter.kind }).toEqual(
      realMountsAllowed
        ? { kind: 'linux', privileged: true, mounterKind: 'linux' }
        : { kind: 'unprivileged', privileged: false, mounterKind: 'unprivileged' },
    );
    expect(detected.reason).toMatch(realMountsAllowed ? /running as root and a probe tmpfs mount .* succeeded/ : /disabled by configuration/);
    expect((await readdir(dir)).filter((n) => n.startsWith('volumescope-mount-probe-'))).toEqual([]);
  });

  it('falls back without probing when not running as root', async () => {
    let ran = false;
    const detected = await detectMounter({
      unprivilegedStateDir: join(dir, 'state'),
      uid: 1000,
      exec: () => {
        ran = true;
        return Promise.reject(new Error('must not run'));
      },
    });
    expect(detected).toMatchObject({ kind: 'unprivileged', privileged: false, reason: expect.stringMatching(/not running as root \(uid 1000\)/) as unknown });
    expect(ran).toBe(false);
  });

  it.each([
    {
      name: 'the probe mount fails',
      results: [{ exitCode: 32, signal: null, stdout: '', stderr: 'mount: permission denied' }],
      want: /the probe mount of a tmpfs on .* failed: mount failed: exit status 32[\s\S]*permission denied/,
    },
    {
      name: 'mount(8) claims success but the probe never appears in mountinfo',
      results: [],
      want: /did not appear in/,
    },
  ])('falls back as root when $name, and removes the probe directory', async ({ results, want }) => {
    const fixture = join(dir, 'fixture-mountinfo');
    await writeFile(fixture, '1 0 8:1 / / rw - ext4 /dev/sda1 rw\n');
    const queue: ExecResult[] = [...results];
    const detected = await detectMounter({
      unprivilegedStateDir: join(dir, 'state'),
      uid: 0,
      probeParentDir: dir,
      mountInfoPath: fixture,
      exec: () => Promise.resolve(queue.shift() ?? { exitCode: 0, signal: null, stdout: '', stderr: '' }),
    });
    expect(detected.kind).toBe('unprivileged');
    expect(detected.reason).toMatch(want);
    expect((await readdir(dir)).filter((n) => n.startsWith('volumescope-mount-probe-'))).toEqual([]);
  });
});
