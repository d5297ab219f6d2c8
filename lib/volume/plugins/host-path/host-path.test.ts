import { chmod, lstat, mkdir, readdir, readFile, readlink, stat, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mountMode } from '../../../mount-utils/testing/mount-test-env.ts';
import { specFromPersistentVolume, specFromVolume } from '../../spec.ts';
import { exists, initPlugin, makePluginTestEnv, makePod, modeOf, mountsAtOrBelow, noArgs, POD_UID, rejectionOf, type PluginTestEnv } from '../testing/plugin-test-env.ts';
import { isTearDownRefusedError } from '../util/errors.ts';
import type { FileType, HostUtil } from './file-type.ts';
import { checkHostPathType, HOST_PATH_PLUGIN_NAME, HostPathPlugin, isHostPathTypeCheckError, makeDir, makeFile } from './host-path.ts';

let env: PluginTestEnv;
let plugin: HostPathPlugin;

beforeEach(async () => {
  env = await makePluginTestEnv();
  plugin = initPlugin(env, new HostPathPlugin(env.deps));
});

afterEach(async () => {
  expect(await env.cleanUp()).toEqual([]);
});

function recordDir(name = 'host'): string {
  return join(env.podsDir, POD_UID, 'volumes', 'kubernetes.io~host-path', name);
}

/** A HostUtil over a fixed table of paths, for types a test machine may not have (block devices). */
function fakeHostUtil(files: Record<string, FileType>): HostUtil {
  return {
    pathExists: (p) => Promise.resolve(p in files),
    getFileType: (p) => {
      const t = files[p];
      return t === undefined ? Promise.reject(new Error(`path "${p}" does not exist`)) : Promise.resolve(t);
    },
  };
}

describe('checkHostPathType against every file type (table of the kubelet texts)', () => {
  const hu = fakeHostUtil({ '/d': 'Directory', '/f': 'File', '/s': 'Socket', '/c': 'CharDevice', '/b': 'BlockDevice' });

  it.each([
    { type: 'Directory', path: '/d', want: null },
    { type: 'Directory', path: '/f', want: 'hostPath type check failed: /f is not a directory' },
    { type: 'Directory', path: '/missing', want: 'hostPath type check failed: /missing is not a directory' },
    { type: 'DirectoryOrCreate', path: '/d', want: null },
    { type: 'DirectoryOrCreate', path: '/f', want: 'hostPath type check failed: /f is not a directory' },
    { type: 'File', path: '/f', want: null },
    { type: 'File', path: '/d', want: 'hostPath type check failed: /d is not a file' },
    { type: 'FileOrCreate', path: '/f', want: null },
    { type: 'FileOrCreate', path: '/s', want: 'hostPath type check failed: /s is not a file' },
    { type: 'Socket', path: '/s', want: null },
    { type: 'Socket', path: '/f', want: 'hostPath type check failed: /f is not a socket file' },
    { type: 'CharDevice', path: '/c', want: null },
    { type: 'CharDevice', path: '/b', want: 'hostPath type check failed: /b is not a character device' },
    { type: 'BlockDevice', path: '/b', want: null },
    { type: 'BlockDevice', path: '/c', want: 'hostPath type check failed: /c is not a block device' },
    { type: 'BlockDevice', path: '/missing', want: 'hostPath type check failed: /missing is not a block device' },
    { type: 'Fifo', path: '/f', want: 'Fifo is an invalid volume type' },
  ])('type $type on $path gives $want', async ({ type, path, want }) => {
    const outcome = await checkHostPathType(path, type, hu).then(
      () => null,
      (err: unknown) => (isHostPathTypeCheckError(err) ? err.message : `unexpected: ${String(err)}`),
    );
    expect(outcome).toBe(want);
  });
});

describe(`HostPathPlugin on the real file system in ${mountMode} mode`, () => {
  let host: string;
  let server: Server | null = null;

  beforeEach(async () => {
    host = join(env.dir, 'host');
    await mkdir(join(host, 'dir'), { recursive: true });
    await writeFile(join(host, 'file'), 'x');
  });

  afterEach(async () => {
    const s = server;
    server = null;
    if (s !== null) {
      await new Promise<void>((resolve) => {
        s.close(() => {
          resolve();
        });
      });
    }
  });

  async function listenOnSocket(path: string): Promise<void> {
    const s = createServer();
    server = s;
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.listen(path, resolve);
    });
  }

  it('claims inline and PV hostPath specs, named by the host path', () => {
    const inline = specFromVolume({ name: 'host', hostPath: { path: '/var/log' } });
    const pv = specFromPersistentVolume({ metadata: { name: 'pv1' }, spec: { hostPath: { path: '/data' } } });
    expect(plugin.name).toBe(HOST_PATH_PLUGIN_NAME);
    expect(plugin.name).toBe('kubernetes.io/host-path');
    expect([plugin.canSupport(inline), plugin.canSupport(pv), plugin.canSupport(specFromVolume({ name: 'e', emptyDir: {} }))]).toEqual([true, true, false]);
    expect([plugin.getVolumeName(inline), plugin.getVolumeName(pv)]).toEqual(['/var/log', '/data']);
    expect(() => plugin.getVolumeName(specFromVolume({ name: 'e', emptyDir: {} }))).toThrow('spec does not reference an HostPath volume type');
    expect(plugin.requiresRemount(inline)).toBe(false);
  });

  it.each([
    { type: 'Directory', target: 'dir', want: null },
    { type: 'File', target: 'file', want: null },
    { type: 'Socket', target: 'sock', want: null },
    { type: 'Socket', target: 'file', want: 'is not a socket file' },
    { type: 'CharDevice', target: '/dev/null', want: null },
    { type: 'CharDevice', target: 'dir', want: 'is not a character device' },
    { type: 'BlockDevice', target: 'file', want: 'is not a block device' },
    { type: 'File', target: 'dir', want: 'is not a file' },
  ])('checks type $type of a real $target', async ({ type, target, want }) => {
    const path = target.startsWith('/') ? target : join(host, target);
    if (target === 'sock') await listenOnSocket(path);

    const outcome = await checkHostPathType(path, type).then(
      () => null,
      (err: unknown) => (err as Error).message,
    );

    expect(outcome).toBe(want === null ? null : `hostPath type check failed: ${path} ${want}`);
  });

  it('creates a missing directory with its parents and mode 0755 for DirectoryOrCreate', async () => {
    const path = join(host, 'new', 'deep');
    const mounter = plugin.newMounter(specFromVolume({ name: 'host', hostPath: { path, type: 'DirectoryOrCreate' } }), makePod());

    await mounter.setUp(noArgs);

    expect((await stat(path)).isDirectory()).toBe(true);
    expect(await modeOf(path)).toBe(0o755);
  });

  it('creates a missing empty file with mode 0644 for FileOrCreate', async () => {
    const path = join(host, 'dir', 'new.sock');
    await plugin.newMounter(specFromVolume({ name: 'host', hostPath: { path, type: 'FileOrCreate' } }), makePod()).setUp(noArgs);

    expect(await readFile(path, 'utf8')).toBe('');
    expect(await modeOf(path)).toBe(0o644);
  });

  it('does not create the parent directory for FileOrCreate, like the kubelet', async () => {
    const path = join(host, 'absent', 'file');

    const err = await rejectionOf(plugin.newMounter(specFromVolume({ name: 'host', hostPath: { path, type: 'FileOrCreate' } }), makePod()).setUp(noArgs));

    expect(err.message).toBe(`open ${path}: no such file or directory`);
    expect(await exists(join(host, 'absent'))).toBe(false);
  });

  // Symlinks planted at a …OrCreate path: creating or chmod-ing through them would act on
  // whatever they point to, outside the path the pod spec names.
  describe('checkType with a symlink planted at the path', () => {
    let outside: string;

    beforeEach(async () => {
      outside = join(env.dir, 'outside');
      await mkdir(outside, { recursive: true });
    });

    it.each([
      { type: 'DirectoryOrCreate', description: 'directory' },
      { type: 'FileOrCreate', description: 'file' },
    ])('$type refuses a dangling symlink and creates nothing at its target', async ({ type, description }) => {
      const path = join(host, 'planted');
      const target = join(outside, 'created-through-the-link');
      await symlink(target, path);

      const err = await rejectionOf(plugin.newMounter(specFromVolume({ name: 'host', hostPath: { path, type } }), makePod()).setUp(noArgs));

      expect(isHostPathTypeCheckError(err)).toBe(true);
      expect(err.message).toBe(`hostPath type check failed: ${path} is not a ${description}`);
      expect(await exists(target)).toBe(false);
      expect(await readlink(path)).toBe(target);
      expect(await exists(recordDir())).toBe(false);
    });

    it('makeDir refuses a symlink to a directory outside and leaves its mode alone', async () => {
      // The window between checkType's existence check and makeDir: the link appears in between.
      const path = join(host, 'dir-link');
      await chmod(outside, 0o700);
      await symlink(outside, path);

      const err = await rejectionOf(makeDir(path));

      expect(err.message).toBe(`hostPath type check failed: ${path} is not a directory`);
      expect(await modeOf(outside)).toBe(0o700);
      expect((await lstat(path)).isSymbolicLink()).toBe(true);
    });

    it('makeFile refuses a symlink to a file outside and changes neither its mode nor its content', async () => {
      const path = join(host, 'file-link');
      const target = join(outside, 'secret');
      await writeFile(target, 'keep');
      await chmod(target, 0o600);
      await symlink(target, path);

      const err = await rejectionOf(makeFile(path));

      expect(err.message).toBe(`hostPath type check failed: ${path} is not a file`);
      expect(await modeOf(target)).toBe(0o600);
      expect(await readFile(target, 'utf8')).toBe('keep');
    });

    it('makeDir and makeFile accept what is already there without changing its mode, as upstream', async () => {
      await chmod(join(host, 'dir'), 0o700);
      await chmod(join(host, 'file'), 0o600);

      await makeDir(join(host, 'dir'));
      await makeFile(join(host, 'file'));

      expect([await modeOf(join(host, 'dir')), await modeOf(join(host, 'file'))]).toEqual([0o700, 0o600]);
    });

    it('DirectoryOrCreate still follows a symlink among the parents (as upstream MkdirAll), creating below its target', async () => {
      await symlink(outside, join(host, 'parent-link'));
      const path = join(host, 'parent-link', 'new');

      await checkHostPathType(path, 'DirectoryOrCreate');

      expect((await stat(join(outside, 'new'))).isDirectory()).toBe(true);
      expect(await modeOf(join(outside, 'new'))).toBe(0o755);
    });
  });

  it('rejects a path with a .. element before any check', async () => {
    const spec = specFromVolume({ name: 'host', hostPath: { path: '/var/../etc', type: 'DirectoryOrCreate' } });

    const err = await rejectionOf(plugin.newMounter(spec, makePod()).setUp(noArgs));

    expect(err.message).toBe("invalid HostPath `/var/../etc`: must not contain '..'");
  });

  it('mounts nothing, exposes the host path, and records an empty 0750 volume dir for reconstruction', async () => {
    const path = join(host, 'dir');
    const mounter = plugin.newMounter(specFromVolume({ name: 'host', hostPath: { path, type: 'Directory' } }), makePod());

    await mounter.setUp(noArgs);
    await mounter.setUp(noArgs);

    expect(mounter.getPath()).toBe(path);
    expect(await readdir(recordDir())).toEqual([]);
    expect(await modeOf(recordDir())).toBe(0o750);
    expect(await mountsAtOrBelow(env.mounter, env.root)).toEqual([]);
  });

  it('records nothing when the type check fails', async () => {
    const spec = specFromVolume({ name: 'host', hostPath: { path: join(host, 'file'), type: 'Directory' } });

    await rejectionOf(plugin.newMounter(spec, makePod()).setUp(noArgs));

    expect(await exists(recordDir())).toBe(false);
  });

  it('tears down by removing the record dir, idempotently, and leaves the host path alone', async () => {
    await plugin.newMounter(specFromVolume({ name: 'host', hostPath: { path: join(host, 'dir') } }), makePod()).setUp(noArgs);
    const unmounter = plugin.newUnmounter('host', POD_UID);
    expect(unmounter.getPath()).toBe(recordDir());

    await unmounter.tearDown();
    await unmounter.tearDown();

    expect(await exists(recordDir())).toBe(false);
    expect(await exists(join(host, 'dir'))).toBe(true);
  });

  it('refuses to tear down when the record dir holds something it did not put there', async () => {
    await plugin.newMounter(specFromVolume({ name: 'host', hostPath: { path: join(host, 'dir') } }), makePod()).setUp(noArgs);
    await writeFile(join(recordDir(), 'note'), 'x');

    const err = await rejectionOf(plugin.newUnmounter('host', POD_UID).tearDown());

    expect(isTearDownRefusedError(err)).toBe(true);
    expect(await readdir(recordDir())).toEqual(['note']);
  });

  it('names the record dir of a hostPath PV after the PV', async () => {
    const pv = specFromPersistentVolume({ metadata: { name: 'pv1' }, spec: { hostPath: { path: join(host, 'dir') } } });

    await plugin.newMounter(pv, makePod()).setUp(noArgs);

    expect(await exists(recordDir('pv1'))).toBe(true);
    await plugin.newUnmounter('pv1', POD_UID).tearDown();
  });

  it('reconstructs the spec with the volume name as the path, as the kubelet does', async () => {
    await plugin.newMounter(specFromVolume({ name: 'host', hostPath: { path: join(host, 'dir') } }), makePod()).setUp(noArgs);

    const rebuilt = await plugin.constructVolumeSpec('host', recordDir());

    expect(rebuilt).toEqual({ spec: { volume: { name: 'host', hostPath: { path: 'host' } }, readOnly: false }, seLinuxMountContext: '' });
    expect(plugin.canSupport(rebuilt.spec)).toBe(true);
    await plugin.newUnmounter('host', POD_UID).tearDown();
  });
});
