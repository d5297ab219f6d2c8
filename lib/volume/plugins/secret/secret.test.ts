import { mkdir, readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mountMode } from '../../../mount-utils/testing/mount-test-env.ts';
import type { Volume } from '../../k8s-types.ts';
import { specFromVolume } from '../../spec.ts';
import { exists, initPlugin, makePluginTestEnv, makePod, modeOf, mountsAtOrBelow, noArgs, POD_UID, rejectionOf, type PluginTestEnv } from '../testing/plugin-test-env.ts';
import { DATA_DIR_NAME } from '../util/atomic-writer.ts';
import { isTearDownRefusedError } from '../util/errors.ts';
import { SECRET_PLUGIN_NAME, SecretPlugin } from './secret.ts';

const PASSWORD = 's3cr3t-value';

let env: PluginTestEnv;
let plugin: SecretPlugin;

beforeEach(async () => {
  env = await makePluginTestEnv();
  plugin = initPlugin(env, new SecretPlugin(env.deps));
  env.objects.putSecret('ns', 'creds', {
    data: { password: Buffer.from(PASSWORD).toString('base64'), user: Buffer.from('from-data').toString('base64') },
    stringData: { user: 'admin' },
  });
});

afterEach(async () => {
  expect(await env.cleanUp()).toEqual([]);
});

function volume(secret: NonNullable<Volume['secret']>): Volume {
  return { name: 'creds-vol', secret };
}

function volumeDir(): string {
  return join(env.podsDir, POD_UID, 'volumes', 'kubernetes.io~secret', 'creds-vol');
}

async function setUp(secret: NonNullable<Volume['secret']>): Promise<void> {
  await plugin.newMounter(specFromVolume(volume(secret)), makePod()).setUp(noArgs);
}

describe(`SecretPlugin in ${mountMode} mode`, () => {
  it('claims secret specs, requires remount, and names volumes after the Secret', () => {
    const spec = specFromVolume(volume({ secretName: 'creds' }));
    expect(plugin.name).toBe(SECRET_PLUGIN_NAME);
    expect(plugin.name).toBe('kubernetes.io/secret');
    expect(plugin.canSupport(spec)).toBe(true);
    expect(plugin.canSupport(specFromVolume({ name: 'c', configMap: { name: 'creds' } }))).toBe(false);
    expect(plugin.requiresRemount(spec)).toBe(true);
    expect(plugin.getVolumeName(spec)).toBe('creds');
  });

  it('writes decoded data and plain stringData (which wins) onto a tmpfs', async () => {
    await setUp({ secretName: 'creds' });

    const mounts = await mountsAtOrBelow(env.mounter, env.root);
    expect(mounts.map((m) => ({ at: m.mountPoint, fsType: m.fsType }))).toEqual([{ at: volumeDir(), fsType: 'tmpfs' }]);
    expect((await readdir(volumeDir())).filter((n) => !n.startsWith('..')).sort()).toEqual(['password', 'user']);
    expect(await readFile(join(volumeDir(), 'password'), 'utf8')).toBe(PASSWORD);
    expect(await readFile(join(volumeDir(), 'user'), 'utf8')).toBe('admin');
    expect(await modeOf(join(volumeDir(), DATA_DIR_NAME, 'password'))).toBe(0o644);
    await plugin.newUnmounter('creds-vol', POD_UID).tearDown();
  });

  it("writes the ready file of the emptyDir the kubelet wraps it in (wrapped_<volume>), removed by TearDown", async () => {
    const metaDir = join(env.podsDir, POD_UID, 'plugins', 'kubernetes.io~empty-dir', 'wrapped_creds-vol');
    await setUp({ secretName: 'creds' });
    expect(await readdir(metaDir)).toEqual(['ready']);
    expect(await modeOf(join(env.podsDir, POD_UID, 'volumes', 'kubernetes.io~secret'))).toBe(0o755);
    await plugin.newUnmounter('creds-vol', POD_UID).tearDown();
    expect(await exists(metaDir)).toBe(false);
  });

  it('applies items, item modes and defaultMode', async () => {
    await setUp({ secretName: 'creds', defaultMode: 0o400, items: [{ key: 'password', path: 'db/pass', mode: 0o440 }, { key: 'user', path: 'u' }] });

    expect(await readFile(join(volumeDir(), 'db', 'pass'), 'utf8')).toBe(PASSWORD);
    expect(await modeOf(join(volumeDir(), DATA_DIR_NAME, 'db', 'pass'))).toBe(0o440);
    expect(await modeOf(join(volumeDir(), DATA_DIR_NAME, 'u'))).toBe(0o400);
    await plugin.newUnmounter('creds-vol', POD_UID).tearDown();
  });

  it('mounts once and rewrites a changed Secret on a later SetUp', async () => {
    await setUp({ secretName: 'creds' });
    const before = await readlink(join(volumeDir(), DATA_DIR_NAME));
    env.objects.putSecret('ns', 'creds', { stringData: { password: 'rotated' } });
    await env.clock.advance(61_000);

    await setUp({ secretName: 'creds' });

    expect(await mountsAtOrBelow(env.mounter, env.root)).toHaveLength(1);
    expect(await readlink(join(volumeDir(), DATA_DIR_NAME))).not.toBe(before);
    expect(await exists(join(volumeDir(), before))).toBe(false);
    expect(await readFile(join(volumeDir(), 'password'), 'utf8')).toBe('rotated');
    expect(await exists(join(volumeDir(), 'user'))).toBe(false);
    await plugin.newUnmounter('creds-vol', POD_UID).tearDown();
  });

  it.each([
    { name: 'a missing Secret', source: { secretName: 'nope' }, want: 'secret "nope" not found' },
    { name: 'a missing key', source: { secretName: 'creds', items: [{ key: 'token', path: 't' }] }, want: 'references non-existent secret key: token' },
    { name: 'invalid base64 data', source: { secretName: 'bad' }, want: 'secret "bad" data key "password" is not valid base64' },
  ])('fails for $name with the kubelet text, mounts nothing and leaks no secret data', async ({ source, want }) => {
    env.objects.putSecret('ns', 'bad', { data: { password: PASSWORD } });

    const err = await rejectionOf(setUp(source));

    expect(err.message).toBe(want);
    expect(err.message).not.toContain(PASSWORD);
    expect(await exists(volumeDir())).toBe(false);
    expect(await mountsAtOrBelow(env.mounter, env.root)).toEqual([]);
  });

  it('sets up an empty volume for a missing optional Secret', async () => {
    await setUp({ secretName: 'nope', optional: true });

    expect((await readdir(volumeDir())).filter((n) => !n.startsWith('..'))).toEqual([]);
    await plugin.newUnmounter('creds-vol', POD_UID).tearDown();
  });

  it('tears down: tmpfs unmounted, directory gone, idempotent', async () => {
    await setUp({ secretName: 'creds' });
    const unmounter = plugin.newUnmounter('creds-vol', POD_UID);

    await unmounter.tearDown();
    await unmounter.tearDown();

    expect(await exists(volumeDir())).toBe(false);
    expect(await mountsAtOrBelow(env.mounter, env.root)).toEqual([]);
  });

  it('refuses to tear down, unmounting nothing, when something else is mounted inside the volume', async () => {
    await setUp({ secretName: 'creds' });
    const inner = join(volumeDir(), 'inner');
    await mkdir(inner);
    await env.mounter.mount('tmpfs', inner, 'tmpfs', ['size=64k']);

    const err = await rejectionOf(plugin.newUnmounter('creds-vol', POD_UID).tearDown());

    expect(isTearDownRefusedError(err)).toBe(true);
    expect(err.message).toBe(`refusing to remove ${volumeDir()}: it contains a mount point at ${inner} that the volume plugin did not create`);
    expect((await mountsAtOrBelow(env.mounter, env.root)).map((m) => m.mountPoint)).toEqual([volumeDir(), inner]);
    expect(await readFile(join(volumeDir(), 'password'), 'utf8')).toBe(PASSWORD);
    // Clean up by hand, as an operator would.
    await env.mounter.unmount(inner);
    await env.mounter.unmount(volumeDir());
  });

  it('reconstructs {name, secret: {secretName: <volume name>}}, as the kubelet does', async () => {
    await setUp({ secretName: 'creds' });

    const rebuilt = await plugin.constructVolumeSpec('creds-vol', volumeDir());

    expect(rebuilt).toEqual({ spec: { volume: { name: 'creds-vol', secret: { secretName: 'creds-vol' } }, readOnly: false }, seLinuxMountContext: '' });
    expect(plugin.canSupport(rebuilt.spec)).toBe(true);
    await plugin.newUnmounter('creds-vol', POD_UID).tearDown();
  });
});
