import { readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mountMode, realMountsAllowed } from '../../../mount-utils/testing/mount-test-env.ts';
import type { Volume } from '../../k8s-types.ts';
import { specFromPersistentVolume, specFromVolume } from '../../spec.ts';
import {
  exists,
  initPlugin,
  makePluginTestEnv,
  makePod,
  modeOf,
  mountsAtOrBelow,
  noArgs,
  POD_UID,
  rejectionOf,
  type PluginTestEnv,
} from '../testing/plugin-test-env.ts';
import { isTearDownRefusedError } from '../util/errors.ts';
import { kernelSupportsTmpfsNoswap, tmpfsNoswapSupported } from '../util/volume-dir.ts';
import { EMPTY_DIR_PLUGIN_NAME, EmptyDirPlugin } from './empty-dir.ts';

let env: PluginTestEnv;
let plugin: EmptyDirPlugin;

beforeEach(async () => {
  env = await makePluginTestEnv();
  plugin = initPlugin(env, new EmptyDirPlugin(env.deps));
});

afterEach(async () => {
  expect(await env.cleanUp()).toEqual([]);
});

function volume(emptyDir: NonNullable<Volume['emptyDir']>): Volume {
  return { name: 'scratch', emptyDir };
}

function volumeDir(): string {
  return join(env.podsDir, POD_UID, 'volumes', 'kubernetes.io~empty-dir', 'scratch');
}

describe(`EmptyDirPlugin in ${mountMode} mode`, () => {
  it('claims only emptyDir specs and names volumes after the spec', () => {
    expect(plugin.name).toBe('kubernetes.io/empty-dir');
    expect(plugin.name).toBe(EMPTY_DIR_PLUGIN_NAME);
    expect(plugin.canSupport(specFromVolume(volume({})))).toBe(true);
    expect(plugin.canSupport(specFromVolume({ name: 'x', hostPath: { path: '/x' } }))).toBe(false);
    expect(plugin.canSupport(specFromPersistentVolume({ metadata: { name: 'pv' }, spec: {} }))).toBe(false);
    expect(plugin.getVolumeName(specFromVolume(volume({})))).toBe('scratch');
    expect(() => plugin.getVolumeName(specFromVolume({ name: 'x' }))).toThrow('Spec does not reference an EmptyDir volume type');
    expect(plugin.requiresRemount(specFromVolume(volume({})))).toBe(false);
  });

  it('sets up a disk emptyDir as a 0777 directory under the pod volumes dir, without a mount', async () => {
    const mounter = plugin.newMounter(specFromVolume(volume({ sizeLimit: '1Mi' })), makePod());

    await mounter.setUp(noArgs);

    expect(mounter.getPath()).toBe(volumeDir());
    expect(await modeOf(volumeDir())).toBe(0o777);
    expect(await mountsAtOrBelow(env.mounter, volumeDir())).toEqual([]);
    expect(mounter.sizeLimitBytes).toBe(1024 * 1024);
  });

  it("writes the kubelet's ready file in the pod's plugins dir, the plugin dir 0755; TearDown removes the ready file and its dir first", async () => {
    const metaDir = join(env.podsDir, POD_UID, 'plugins', 'kubernetes.io~empty-dir', 'scratch');
    await plugin.newMounter(specFromVolume(volume({})), makePod()).setUp(noArgs);

    expect(await readdir(metaDir)).toEqual(['ready']);
    expect(await modeOf(metaDir)).toBe(0o750);
    expect(await modeOf(join(metaDir, 'ready'))).toBe(0o644);
    expect(await modeOf(join(env.podsDir, POD_UID, 'volumes', 'kubernetes.io~empty-dir'))).toBe(0o755);
    expect(await modeOf(join(env.podsDir, POD_UID, 'volumes'))).toBe(0o750);

    await plugin.newUnmounter('scratch', POD_UID).tearDown();
    expect(await exists(metaDir)).toBe(false);
    expect(await exists(volumeDir())).toBe(false);
  });

  it('keeps what containers wrote when SetUp runs again', async () => {
    const mounter = plugin.newMounter(specFromVolume(volume({})), makePod());
    await mounter.setUp(noArgs);
    await writeFile(join(volumeDir(), 'data'), 'x');

    await mounter.setUp(noArgs);

    expect(await readdir(volumeDir())).toEqual(['data']);
    await rejectionOf(plugin.newUnmounter('scratch', POD_UID).tearDown()); // refuses: the file is not the plugin's
  });

  it('writes nothing when SetUp finds the volume ready, and sets it up again when only the ready file is left', async () => {
    // The ready file's mtime is set far back: a rewrite (in place or not) moves it.
    const readyFile = join(env.podsDir, POD_UID, 'plugins', 'kubernetes.io~empty-dir', 'scratch', 'ready');
    const mounter = plugin.newMounter(specFromVolume(volume({})), makePod());
    await mounter.setUp(noArgs);
    await utimes(readyFile, 1000, 1000);

    await mounter.setUp(noArgs);
    expect((await stat(readyFile)).mtimeMs).toBe(1000 * 1000);

    await rm(volumeDir(), { recursive: true });
    await mounter.setUp(noArgs);
    expect(await modeOf(volumeDir())).toBe(0o777);
    expect((await stat(readyFile)).mtimeMs).not.toBe(1000 * 1000);
    await plugin.newUnmounter('scratch', POD_UID).tearDown();
  });

  it.each([
    { name: 'the desired size when positive', sizeLimit: '1Mi', desiredSize: 2 * 1024 * 1024, bytes: 2 * 1024 * 1024, kernel: 'size=2048k' },
    { name: 'sizeLimit when there is no desired size', sizeLimit: '1Mi', desiredSize: null, bytes: 1024 * 1024, kernel: 'size=1024k' },
    { name: 'sizeLimit when the desired size is 0', sizeLimit: '512Ki', desiredSize: 0, bytes: 512 * 1024, kernel: 'size=512k' },
  ])('mounts a tmpfs for medium Memory sized by $name', async ({ sizeLimit, desiredSize, bytes, kernel }) => {
    const mounter = plugin.newMounter(specFromVolume(volume({ medium: 'Memory', sizeLimit })), makePod());

    await mounter.setUp({ ...noArgs, desiredSize });
    await mounter.setUp({ ...noArgs, desiredSize }); // idempotent: no second mount

    const mounts = await mountsAtOrBelow(env.mounter, volumeDir());
    expect(mounts.map((m) => ({ at: m.mountPoint, fsType: m.fsType }))).toEqual([{ at: volumeDir(), fsType: 'tmpfs' }]);
    const entry = mounts[0];
    if (realMountsAllowed) expect(entry?.superOptions).toContain(kernel); // the kernel reports the size in KiB
    else expect(entry?.mountOptions).toContain(`size=${bytes}`);
    expect(mounter.sizeLimitBytes).toBe(bytes);
    await plugin.newUnmounter('scratch', POD_UID).tearDown();
  });

  it('mounts a tmpfs without a size option when no limit applies', async () => {
    await plugin.newMounter(specFromVolume(volume({ medium: 'Memory' })), makePod()).setUp(noArgs);

    const [entry] = await mountsAtOrBelow(env.mounter, volumeDir());
    expect(entry?.fsType).toBe('tmpfs');
    expect([...(entry?.mountOptions ?? []), ...(realMountsAllowed ? [] : (entry?.superOptions ?? []))].some((o) => o.startsWith('size='))).toBe(false);
    await plugin.newUnmounter('scratch', POD_UID).tearDown();
  });

  it("adds tmpfs' noswap when the kernel takes it (6.4 or later), as the kubelet", async () => {
    expect([kernelSupportsTmpfsNoswap('6.4.0'), kernelSupportsTmpfsNoswap('6.18.44-fc'), kernelSupportsTmpfsNoswap('7.0'), kernelSupportsTmpfsNoswap('6.3.9'), kernelSupportsTmpfsNoswap('5.15.0-91-generic'), kernelSupportsTmpfsNoswap('')]).toEqual([true, true, true, false, false, false]);
    await plugin.newMounter(specFromVolume(volume({ medium: 'Memory' })), makePod()).setUp(noArgs);

    const [entry] = await mountsAtOrBelow(env.mounter, volumeDir());
    const options = [...(entry?.mountOptions ?? []), ...(entry?.superOptions ?? [])];
    expect(options.includes('noswap')).toBe(tmpfsNoswapSupported());
    await plugin.newUnmounter('scratch', POD_UID).tearDown();
  });

  it("sizes a Memory emptyDir as the kubelet when the node's allocatable memory is known: the least of it, the pod's limit and sizeLimit", async () => {
    const sized = initPlugin(env, new EmptyDirPlugin({ ...env.deps, nodeAllocatableMemoryBytes: () => 8 * 1024 * 1024 }));
    const mounter = sized.newMounter(specFromVolume(volume({ medium: 'Memory' })), makePod());
    await mounter.setUp(noArgs);

    const [entry] = await mountsAtOrBelow(env.mounter, volumeDir());
    if (realMountsAllowed) expect(entry?.superOptions).toContain('size=8192k');
    else expect(entry?.mountOptions).toContain(`size=${8 * 1024 * 1024}`);
    expect(mounter.sizeLimitBytes).toBe(8 * 1024 * 1024);
    await sized.newUnmounter('scratch', POD_UID).tearDown();
  });

  it('fails for an unknown storage medium with the kubelet text and creates nothing', async () => {
    const spec = specFromVolume(volume({ medium: 'HugePages' as 'Memory' }));

    const err = await rejectionOf(plugin.newMounter(spec, makePod()).setUp(noArgs));

    expect(err.message).toBe('unknown storage medium "HugePages"');
    expect(await exists(volumeDir())).toBe(false);
  });

  it.each([
    { name: 'a disk emptyDir', emptyDir: {} },
    { name: 'a Memory emptyDir', emptyDir: { medium: 'Memory' as const } },
  ])('tears down $name: unmounted, directory gone, idempotent', async ({ emptyDir }) => {
    await plugin.newMounter(specFromVolume(volume(emptyDir)), makePod()).setUp(noArgs);
    const unmounter = plugin.newUnmounter('scratch', POD_UID);
    expect(unmounter.getPath()).toBe(volumeDir());

    await unmounter.tearDown();
    await unmounter.tearDown();

    expect(await exists(volumeDir())).toBe(false);
    expect(await mountsAtOrBelow(env.mounter, env.root)).toEqual([]);
  });

  it('refuses to tear down a disk emptyDir that holds files and deletes none of them', async () => {
    await plugin.newMounter(specFromVolume(volume({})), makePod()).setUp(noArgs);
    await writeFile(join(volumeDir(), 'results.csv'), 'precious');

    const err = await rejectionOf(plugin.newUnmounter('scratch', POD_UID).tearDown());

    expect(isTearDownRefusedError(err)).toBe(true);
    expect(err.message).toBe(`refusing to remove ${volumeDir()}: it holds entries the volume plugin did not create: results.csv`);
    expect(await readdir(volumeDir())).toEqual(['results.csv']);
  });

  it('tears down a Memory emptyDir that containers wrote into only when the tmpfs really discards the data', async () => {
    await plugin.newMounter(specFromVolume(volume({ medium: 'Memory' })), makePod()).setUp(noArgs);
    await writeFile(join(volumeDir(), 'cache'), 'x');

    const outcome = await plugin
      .newUnmounter('scratch', POD_UID)
      .tearDown()
      .then(
        () => 'removed',
        (err: unknown) => (isTearDownRefusedError(err) ? 'refused' : `failed: ${String(err)}`),
      );

    // A real unmount takes the file with the tmpfs; the unprivileged stand-in is a plain directory.
    expect(outcome).toBe(realMountsAllowed ? 'removed' : 'refused');
    expect(await mountsAtOrBelow(env.mounter, env.root)).toEqual([]);
  });

  it.each([
    { name: 'a plain directory', emptyDir: {}, want: {} },
    { name: 'a tmpfs mount point', emptyDir: { medium: 'Memory' as const }, want: { medium: 'Memory' } },
  ])('reconstructs the spec of $name from disk', async ({ emptyDir, want }) => {
    await plugin.newMounter(specFromVolume(volume(emptyDir)), makePod()).setUp(noArgs);

    const rebuilt = await plugin.constructVolumeSpec('scratch', volumeDir());

    expect(rebuilt).toEqual({ spec: { volume: { name: 'scratch', emptyDir: want }, readOnly: false }, seLinuxMountContext: '' });
    expect(plugin.canSupport(rebuilt.spec)).toBe(true);
    await plugin.newUnmounter('scratch', POD_UID).tearDown();
  });
});
