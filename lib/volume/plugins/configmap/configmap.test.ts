import { lstat, readdir, readFile, readlink, rm, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mountMode } from '../../../mount-utils/testing/mount-test-env.ts';
import type { Volume } from '../../k8s-types.ts';
import { specFromVolume } from '../../spec.ts';
import { exists, initPlugin, makePluginTestEnv, makePod, modeOf, mountsAtOrBelow, noArgs, POD_UID, rejectionOf, type PluginTestEnv } from '../testing/plugin-test-env.ts';
import { DATA_DIR_NAME, DATA_DIR_PATTERN } from '../util/atomic-writer.ts';
import { wrappedMetaDir } from '../util/atomic-writer-volume.ts';
import { isNonExistentKeyError, isObjectNotFoundError, isTearDownRefusedError } from '../util/errors.ts';
import { CONFIGMAP_PLUGIN_NAME, ConfigMapPlugin } from './configmap.ts';

let env: PluginTestEnv;
let plugin: ConfigMapPlugin;

beforeEach(async () => {
  env = await makePluginTestEnv();
  plugin = initPlugin(env, new ConfigMapPlugin(env.deps));
  env.objects.putConfigMap('ns', 'cfg', { 'app.conf': 'level=info', other: 'o' }, { 'blob.bin': Buffer.from([0, 1, 2, 255]).toString('base64') });
});

afterEach(async () => {
  expect(await env.cleanUp()).toEqual([]);
});

function volume(configMap: NonNullable<Volume['configMap']>): Volume {
  return { name: 'config', configMap };
}

function volumeDir(): string {
  return join(env.podsDir, POD_UID, 'volumes', 'kubernetes.io~configmap', 'config');
}

async function setUp(configMap: NonNullable<Volume['configMap']>): Promise<void> {
  await plugin.newMounter(specFromVolume(volume(configMap)), makePod()).setUp(noArgs);
}

async function visible(): Promise<string[]> {
  return (await readdir(volumeDir())).filter((n) => !n.startsWith('..')).sort();
}

describe(`ConfigMapPlugin in ${mountMode} mode`, () => {
  it('claims configMap specs, requires remount, and names volumes <spec>/<configMap>', () => {
    const spec = specFromVolume(volume({ name: 'cfg' }));
    expect(plugin.name).toBe(CONFIGMAP_PLUGIN_NAME);
    expect(plugin.name).toBe('kubernetes.io/configmap');
    expect(plugin.canSupport(spec)).toBe(true);
    expect(plugin.canSupport(specFromVolume({ name: 's', secret: { secretName: 'cfg' } }))).toBe(false);
    expect(plugin.requiresRemount(spec)).toBe(true);
    expect(plugin.getVolumeName(spec)).toBe('config/cfg');
  });

  it('projects every data and binaryData key with mode 0644 into a plain 0777 directory', async () => {
    await setUp({ name: 'cfg' });

    expect(await visible()).toEqual(['app.conf', 'blob.bin', 'other']);
    expect(await readFile(join(volumeDir(), 'app.conf'), 'utf8')).toBe('level=info');
    expect([...(await readFile(join(volumeDir(), 'blob.bin')))]).toEqual([0, 1, 2, 255]);
    expect(await readlink(join(volumeDir(), 'app.conf'))).toBe('..data/app.conf');
    expect(await modeOf(join(volumeDir(), DATA_DIR_NAME, 'app.conf'))).toBe(0o644);
    expect(await modeOf(volumeDir())).toBe(0o777);
    expect(await mountsAtOrBelow(env.mounter, env.root)).toEqual([]);
  });

  it('projects only the selected items, at their paths, with item mode or defaultMode', async () => {
    await setUp({
      name: 'cfg',
      defaultMode: 0o440,
      items: [
        { key: 'app.conf', path: 'etc/app.conf', mode: 0o400 },
        { key: 'other', path: 'o.txt' },
      ],
    });

    expect(await visible()).toEqual(['etc', 'o.txt']);
    expect(await readFile(join(volumeDir(), 'etc', 'app.conf'), 'utf8')).toBe('level=info');
    expect(await modeOf(join(volumeDir(), DATA_DIR_NAME, 'etc', 'app.conf'))).toBe(0o400);
    expect(await modeOf(join(volumeDir(), DATA_DIR_NAME, 'o.txt'))).toBe(0o440);
  });

  it('writes nothing again when SetUp runs with an unchanged ConfigMap', async () => {
    await setUp({ name: 'cfg' });
    const before = await readlink(join(volumeDir(), DATA_DIR_NAME));
    await env.clock.advance(60_000);

    await setUp({ name: 'cfg' });

    expect(await readlink(join(volumeDir(), DATA_DIR_NAME))).toBe(before);
  });

  it('writes the wrapped emptyDir’s ready file at the first SetUp, leaves it alone while it is there, and writes it again once it is gone', async () => {
    await setUp({ name: 'cfg' });
    const ready = join(wrappedMetaDir(volumeDir()), 'ready');
    expect((await lstat(ready)).isFile()).toBe(true);
    const old = new Date('2020-01-01T00:00:00Z');
    await utimes(ready, old, old);

    await setUp({ name: 'cfg' });
    expect((await lstat(ready)).mtime).toEqual(old);

    await rm(ready);
    await setUp({ name: 'cfg' });
    expect((await lstat(ready)).isFile()).toBe(true);
  });

  it('rewrites a changed ConfigMap atomically on the next SetUp: new data dir, old one gone', async () => {
    // Arrange
    await setUp({ name: 'cfg' });
    const oldDataDir = await readlink(join(volumeDir(), DATA_DIR_NAME));
    env.objects.putConfigMap('ns', 'cfg', { 'app.conf': 'level=debug', added: 'new' });
    await env.clock.advance(90_000);

    // Act: the periodic remount
    await setUp({ name: 'cfg' });

    // Assert
    const newDataDir = await readlink(join(volumeDir(), DATA_DIR_NAME));
    expect(newDataDir).not.toBe(oldDataDir);
    expect(newDataDir).toMatch(DATA_DIR_PATTERN);
    expect((await readdir(volumeDir())).filter((n) => DATA_DIR_PATTERN.test(n))).toEqual([newDataDir]);
    expect(await exists(join(volumeDir(), oldDataDir))).toBe(false);
    expect(await visible()).toEqual(['added', 'app.conf']);
    expect(await readFile(join(volumeDir(), 'app.conf'), 'utf8')).toBe('level=debug');
  });

  it.each([
    { name: 'a missing ConfigMap', source: { name: 'nope' }, want: 'configmap "nope" not found', is: isObjectNotFoundError },
    {
      name: 'a missing key',
      source: { name: 'cfg', items: [{ key: 'missing', path: 'm' }] },
      want: 'configmap references non-existent config key: missing',
      is: isNonExistentKeyError,
    },
  ])('fails for $name with the kubelet text and creates nothing', async ({ source, want, is }) => {
    const err = await rejectionOf(setUp(source));

    expect(err.message).toBe(want);
    expect(is(err)).toBe(true);
    expect(await exists(volumeDir())).toBe(false);
  });

  it('sets up an empty volume for a missing optional ConfigMap, and skips missing keys of an optional one', async () => {
    await setUp({ name: 'nope', optional: true });
    expect(await visible()).toEqual([]);
    expect(await exists(join(volumeDir(), DATA_DIR_NAME))).toBe(true);

    await setUp({ name: 'cfg', optional: true, items: [{ key: 'missing', path: 'm' }, { key: 'other', path: 'o' }] });
    expect(await visible()).toEqual(['o']);
  });

  it('fails without an object getter, naming the volume', async () => {
    const bare = initPlugin(env, new ConfigMapPlugin({ mounter: env.mounter }));

    const err = await rejectionOf(bare.newMounter(specFromVolume(volume({ name: 'cfg' })), makePod()).setUp(noArgs));

    expect(err.message).toBe('cannot setup configMap volume config because kube client is not configured');
  });

  it('with a lazily reading getter, SetUp waits for its first read instead of failing with "not found"', async () => {
    let release: () => void = () => undefined;
    const read = new Promise<void>((resolve) => (release = resolve));
    const sync = env.objects.getConfigMap.bind(env.objects);
    // Not read yet: the synchronous getter would say "absent"; the awaited one answers after the read.
    env.objects.getConfigMap = () => undefined;
    Object.assign(env.objects, { awaitConfigMap: async (ns: string, name: string) => (await read, sync(ns, name)) });
    let done = false;
    const setting = setUp({ name: 'cfg' }).then(() => (done = true));
    await Promise.resolve();
    expect(done).toBe(false);
    release();
    await setting;
    expect(await visible()).toEqual(['app.conf', 'blob.bin', 'other']);
  });

  it('tears down every file, link and data dir it wrote, then the directory, idempotently', async () => {
    await setUp({ name: 'cfg' });
    env.objects.putConfigMap('ns', 'cfg', { x: 'y' });
    await env.clock.advance(1_000);
    await setUp({ name: 'cfg' });
    const unmounter = plugin.newUnmounter('config', POD_UID);
    expect(unmounter.getPath()).toBe(volumeDir());

    await unmounter.tearDown();
    await unmounter.tearDown();

    expect(await exists(volumeDir())).toBe(false);
    expect(await mountsAtOrBelow(env.mounter, env.root)).toEqual([]);
  });

  it('refuses to tear down when the directory holds a file the writer did not create, and removes nothing', async () => {
    await setUp({ name: 'cfg' });
    await writeFile(join(volumeDir(), 'stray.log'), 'not mine');
    const before = (await readdir(volumeDir())).sort();

    const err = await rejectionOf(plugin.newUnmounter('config', POD_UID).tearDown());

    expect(isTearDownRefusedError(err)).toBe(true);
    expect(err.message).toBe(`refusing to remove ${volumeDir()}: it holds entries the atomic writer did not create: stray.log`);
    expect((await readdir(volumeDir())).sort()).toEqual(before);
  });

  it('reports invalid base64 by object and key, never by value', async () => {
    env.objects.putConfigMap('ns', 'bad', {}, { blob: 'not*base64' });

    const err = await rejectionOf(setUp({ name: 'bad' }));

    expect(err.message).toBe('configmap "bad" binaryData key "blob" is not valid base64');
  });

  it('reconstructs {name, configMap: {}} from a set-up directory', async () => {
    await setUp({ name: 'cfg' });

    const rebuilt = await plugin.constructVolumeSpec('config', volumeDir());

    expect(rebuilt).toEqual({ spec: { volume: { name: 'config', configMap: {} }, readOnly: false }, seLinuxMountContext: '' });
    expect(plugin.canSupport(rebuilt.spec)).toBe(true);
    await plugin.newUnmounter('config', POD_UID).tearDown();
  });
});
