import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mountMode, realMountsAllowed } from '../../../mount-utils/testing/mount-test-env.ts';
import { specFromPersistentVolume, specFromVolume, type Spec } from '../../spec.ts';
import { exists, initPlugin, makePluginTestEnv, makePod, mountsAtOrBelow, noArgs, POD_UID, rejectionOf, type PluginTestEnv } from '../testing/plugin-test-env.ts';
import { isTearDownRefusedError } from '../util/errors.ts';
import { isLocalVolumePathError, LOCAL_VOLUME_PLUGIN_NAME, LocalVolumePlugin } from './local-volume.ts';

let env: PluginTestEnv;
let plugin: LocalVolumePlugin;
let disk: string;

beforeEach(async () => {
  env = await makePluginTestEnv();
  plugin = initPlugin(env, new LocalVolumePlugin(env.deps));
  disk = join(env.dir, 'disks', 'ssd1');
  await mkdir(disk, { recursive: true });
  await writeFile(join(disk, 'existing'), 'data on the disk');
});

afterEach(async () => {
  expect(await env.cleanUp()).toEqual([]);
});

function pvSpec(path: string, opts: { readOnly?: boolean; mountOptions?: string[] } = {}): Spec {
  return specFromPersistentVolume(
    { metadata: { name: 'local-pv' }, spec: { local: { path }, ...(opts.mountOptions === undefined ? {} : { mountOptions: opts.mountOptions }) } },
    opts.readOnly ?? false,
  );
}

function volumeDir(): string {
  return join(env.podsDir, POD_UID, 'volumes', 'kubernetes.io~local-volume', 'local-pv');
}

describe(`LocalVolumePlugin in ${mountMode} mode`, () => {
  it('claims PVs with spec.local only, named after the PV, with mount options', () => {
    expect(plugin.name).toBe(LOCAL_VOLUME_PLUGIN_NAME);
    expect(plugin.name).toBe('kubernetes.io/local-volume');
    expect(plugin.canSupport(pvSpec(disk))).toBe(true);
    expect(plugin.canSupport(specFromVolume({ name: 'h', hostPath: { path: disk } }))).toBe(false);
    expect(plugin.getVolumeName(pvSpec(disk))).toBe('local-pv');
    expect(plugin.supportsMountOption()).toBe(true);
    expect(plugin.requiresRemount(pvSpec(disk))).toBe(false);
  });

  it('bind-mounts the local path onto the pod volume dir, once', async () => {
    const mounter = plugin.newMounter(pvSpec(disk), makePod());

    await mounter.setUp(noArgs);
    await mounter.setUp(noArgs);

    expect(mounter.getPath()).toBe(volumeDir());
    expect((await mountsAtOrBelow(env.mounter, env.root)).map((m) => m.mountPoint)).toEqual([volumeDir()]);
    expect(await readFile(join(volumeDir(), 'existing'), 'utf8')).toBe('data on the disk');
    await writeFile(join(volumeDir(), 'written-by-pod'), 'hello');
    expect(await readFile(join(disk, 'written-by-pod'), 'utf8')).toBe('hello');
    await plugin.newUnmounter('local-pv', POD_UID).tearDown();
  });

  it('mounts read-only with the PV mount options when the spec is read-only', async () => {
    await plugin.newMounter(pvSpec(disk, { readOnly: true, mountOptions: ['noatime'] }), makePod()).setUp(noArgs);

    const [entry] = await mountsAtOrBelow(env.mounter, env.root);
    expect(entry?.mountOptions).toEqual(expect.arrayContaining(['ro', 'noatime']));
    if (realMountsAllowed) await expect(writeFile(join(volumeDir(), 'x'), '')).rejects.toMatchObject({ code: 'EROFS' });
    await plugin.newUnmounter('local-pv', POD_UID).tearDown();
  });

  it.each([
    { name: 'a missing path', path: () => join(disk, 'absent'), want: (p: string) => `path "${p}" does not exist` },
    { name: 'an empty path', path: () => '', want: () => 'LocalVolume volume "local-pv" path is empty' },
    { name: 'a path with ..', path: () => `${disk}/../ssd1`, want: (p: string) => `invalid path: ${p} must not contain '..'` },
    { name: 'a regular file', path: () => join(disk, 'existing'), want: () => 'only directory and block device are supported' },
  ])('fails clearly for $name and creates nothing', async ({ path, want }) => {
    const p = path();

    const err = await rejectionOf(plugin.newMounter(pvSpec(p), makePod()).setUp(noArgs));

    expect(isLocalVolumePathError(err)).toBe(true);
    expect(err.message).toBe(want(p));
    expect(await exists(volumeDir())).toBe(false);
  });

  it('tears down: unmounted, pod volume dir gone, disk contents untouched, idempotent', async () => {
    await plugin.newMounter(pvSpec(disk), makePod()).setUp(noArgs);
    const unmounter = plugin.newUnmounter('local-pv', POD_UID);
    expect(unmounter.getPath()).toBe(volumeDir());

    await unmounter.tearDown();
    await unmounter.tearDown();

    expect(await exists(volumeDir())).toBe(false);
    expect(await mountsAtOrBelow(env.mounter, env.root)).toEqual([]);
    expect(await readdir(disk)).toEqual(['existing']);
  });

  it('refuses to tear down a pod volume dir that holds files while nothing is mounted on it', async () => {
    await mkdir(volumeDir(), { recursive: true });
    await writeFile(join(volumeDir(), 'orphan'), 'x');

    const err = await rejectionOf(plugin.newUnmounter('local-pv', POD_UID).tearDown());

    expect(isTearDownRefusedError(err)).toBe(true);
    expect(err.message).toBe(`refusing to remove ${volumeDir()}: it holds entries the volume plugin did not create: orphan`);
    expect(await readdir(volumeDir())).toEqual(['orphan']);
  });

  it('reconstructs a PV whose local.path is the bind source read back from the mount table', async () => {
    await plugin.newMounter(pvSpec(disk), makePod()).setUp(noArgs);

    const mounted = await plugin.constructVolumeSpec('local-pv', volumeDir());
    await plugin.newUnmounter('local-pv', POD_UID).tearDown();
    await mkdir(volumeDir(), { recursive: true });
    const unmounted = await plugin.constructVolumeSpec('local-pv', volumeDir());

    expect(mounted).toEqual({
      spec: { persistentVolume: { metadata: { name: 'local-pv' }, spec: { local: { path: disk }, volumeMode: 'Filesystem' } }, readOnly: false },
      seLinuxMountContext: '',
    });
    expect(plugin.canSupport(mounted.spec)).toBe(true);
    expect(unmounted.spec.persistentVolume?.spec.local?.path).toBe('');
  });
});
