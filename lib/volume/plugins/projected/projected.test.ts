import { mkdir, readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mountMode } from '../../../mount-utils/testing/mount-test-env.ts';
import type { VolumeProjection } from '../../k8s-types.ts';
import { specFromVolume } from '../../spec.ts';
import { exists, initPlugin, makePluginTestEnv, makePod, modeOf, mountsAtOrBelow, noArgs, POD_UID, rejectionOf, type PluginTestEnv } from '../testing/plugin-test-env.ts';
import { DATA_DIR_NAME } from '../util/atomic-writer.ts';
import { isAggregateVolumeError, isTearDownRefusedError } from '../util/errors.ts';
import { TokenManager, type ServiceAccountTokenSource, type TokenRequestSpec } from '../../token/token-manager.ts';
import { PROJECTED_PLUGIN_NAME, ProjectedPlugin, SERVICE_ACCOUNT_TOKEN_PLACEHOLDER } from './projected.ts';

let env: PluginTestEnv;
let plugin: ProjectedPlugin;

const sources: VolumeProjection[] = [
  { secret: { name: 'tls', items: [{ key: 'tls.key', path: 'tls/key', mode: 0o400 }] } },
  { configMap: { name: 'cfg' } },
  { downwardAPI: { items: [{ path: 'name', fieldRef: { fieldPath: 'metadata.name' } }] } },
  { serviceAccountToken: { path: 'token', expirationSeconds: 3600 } },
];

beforeEach(async () => {
  env = await makePluginTestEnv();
  plugin = initPlugin(env, new ProjectedPlugin(env.deps));
  env.objects.putSecret('ns', 'tls', { data: { 'tls.key': Buffer.from('KEY').toString('base64') } });
  env.objects.putConfigMap('ns', 'cfg', { 'ca.crt': 'CA' });
});

afterEach(async () => {
  expect(await env.cleanUp()).toEqual([]);
});

function spec(projected: VolumeProjection[], defaultMode?: number) {
  return specFromVolume({ name: 'all-in-one', projected: { sources: projected, ...(defaultMode === undefined ? {} : { defaultMode }) } });
}

function volumeDir(): string {
  return join(env.podsDir, POD_UID, 'volumes', 'kubernetes.io~projected', 'all-in-one');
}

describe(`ProjectedPlugin in ${mountMode} mode`, () => {
  it('claims projected specs and requires remount', () => {
    expect(plugin.name).toBe(PROJECTED_PLUGIN_NAME);
    expect(plugin.name).toBe('kubernetes.io/projected');
    expect([plugin.canSupport(spec(sources)), plugin.requiresRemount(spec(sources)), plugin.getVolumeName(spec(sources))]).toEqual([true, true, 'all-in-one']);
    expect(plugin.canSupport(specFromVolume({ name: 'x', emptyDir: {} }))).toBe(false);
  });

  it('merges secret, configMap, downward API and a token placeholder (no token manager) onto one tmpfs', async () => {
    await plugin.newMounter(spec(sources, 0o440), makePod()).setUp(noArgs);

    expect((await mountsAtOrBelow(env.mounter, env.root)).map((m) => [m.mountPoint, m.fsType])).toEqual([[volumeDir(), 'tmpfs']]);
    expect((await readdir(volumeDir())).filter((n) => !n.startsWith('..')).sort()).toEqual(['ca.crt', 'name', 'tls', 'token']);
    expect(await readFile(join(volumeDir(), 'tls', 'key'), 'utf8')).toBe('KEY');
    expect(await readFile(join(volumeDir(), 'ca.crt'), 'utf8')).toBe('CA');
    expect(await readFile(join(volumeDir(), 'name'), 'utf8')).toBe('web');
    expect(await readFile(join(volumeDir(), 'token'), 'utf8')).toBe(SERVICE_ACCOUNT_TOKEN_PLACEHOLDER);
    expect(await modeOf(join(volumeDir(), DATA_DIR_NAME, 'tls', 'key'))).toBe(0o400);
    expect(await modeOf(join(volumeDir(), DATA_DIR_NAME, 'ca.crt'))).toBe(0o440);
    expect(await modeOf(join(volumeDir(), DATA_DIR_NAME, 'token'))).toBe(0o440);
    await plugin.newUnmounter('all-in-one', POD_UID).tearDown();
  });

  it('writes the token with mode 0600 when fsGroup is set, as the kubelet does', async () => {
    await plugin.newMounter(spec(sources), makePod()).setUp({ ...noArgs, fsGroup: 2000 });

    expect(await modeOf(join(volumeDir(), DATA_DIR_NAME, 'token'))).toBe(0o600);
    expect(await modeOf(join(volumeDir(), DATA_DIR_NAME, 'ca.crt'))).toBe(0o644);
    await plugin.newUnmounter('all-in-one', POD_UID).tearDown();
  });

  it('reports the errors of all sources together and sets up nothing', async () => {
    const broken: VolumeProjection[] = [
      { secret: { name: 'absent-secret' } },
      { configMap: { name: 'absent-cm' } },
      { configMap: { name: 'optional-cm', optional: true } },
      { configMap: { name: 'cfg', items: [{ key: 'nope', path: 'n' }] } },
    ];

    const err = await rejectionOf(plugin.newMounter(spec(broken), makePod()).setUp(noArgs));

    expect(isAggregateVolumeError(err)).toBe(true);
    expect(err.message).toBe('[secret "absent-secret" not found, configmap "absent-cm" not found, configmap references non-existent config key: nope]');
    expect(await exists(volumeDir())).toBe(false);
  });

  it('rewrites the volume when a source changes', async () => {
    const mounter = plugin.newMounter(spec(sources), makePod());
    await mounter.setUp(noArgs);
    const before = await readlink(join(volumeDir(), DATA_DIR_NAME));
    env.objects.putConfigMap('ns', 'cfg', { 'ca.crt': 'CA2' });
    await env.clock.advance(61_000);

    await mounter.setUp(noArgs);

    expect(await readlink(join(volumeDir(), DATA_DIR_NAME))).not.toBe(before);
    expect(await exists(join(volumeDir(), before))).toBe(false);
    expect(await readFile(join(volumeDir(), 'ca.crt'), 'utf8')).toBe('CA2');
    await plugin.newUnmounter('all-in-one', POD_UID).tearDown();
  });

  it('tears down: unmounted, directory gone, idempotent', async () => {
    await plugin.newMounter(spec(sources), makePod()).setUp(noArgs);
    const unmounter = plugin.newUnmounter('all-in-one', POD_UID);

    await unmounter.tearDown();
    await unmounter.tearDown();

    expect(await exists(volumeDir())).toBe(false);
    expect(await mountsAtOrBelow(env.mounter, env.root)).toEqual([]);
  });

  it('refuses to tear down when something else is mounted inside the volume', async () => {
    await plugin.newMounter(spec(sources), makePod()).setUp(noArgs);
    const inner = join(volumeDir(), 'inner');
    await mkdir(inner);
    await env.mounter.mount('tmpfs', inner, 'tmpfs', ['size=64k']);

    const err = await rejectionOf(plugin.newUnmounter('all-in-one', POD_UID).tearDown());

    expect(isTearDownRefusedError(err)).toBe(true);
    expect(await readFile(join(volumeDir(), 'ca.crt'), 'utf8')).toBe('CA');
    await env.mounter.unmount(inner);
    await env.mounter.unmount(volumeDir());
  });

  it('reconstructs {name, projected: {}}', async () => {
    await plugin.newMounter(spec(sources), makePod()).setUp(noArgs);

    const rebuilt = await plugin.constructVolumeSpec('all-in-one', volumeDir());

    expect(rebuilt).toEqual({ spec: { volume: { name: 'all-in-one', projected: {} }, readOnly: false }, seLinuxMountContext: '' });
    expect(plugin.canSupport(rebuilt.spec)).toBe(true);
    await plugin.newUnmounter('all-in-one', POD_UID).tearDown();
  });
});

describe(`ProjectedPlugin with a token manager in ${mountMode} mode`, () => {
  const requests: { namespace: string; name: string; spec: TokenRequestSpec }[] = [];
  let failure: Error | undefined;
  let tokens: TokenManager;

  beforeEach(() => {
    requests.length = 0;
    failure = undefined;
    const source: ServiceAccountTokenSource = {
      createServiceAccountToken: (namespace, name, tokenSpec) => {
        requests.push({ namespace, name, spec: tokenSpec });
        if (failure !== undefined) return Promise.reject(failure);
        const ttl = tokenSpec.expirationSeconds ?? 3600;
        return Promise.resolve({
          spec: { ...tokenSpec, expirationSeconds: ttl },
          status: { token: `jwt-${String(requests.length)}`, expirationTimestamp: new Date(env.clock.now() + ttl * 1000).toISOString() },
        });
      },
    };
    tokens = new TokenManager({ source, clock: env.clock, random: () => 0 });
    plugin = initPlugin(env, new ProjectedPlugin({ ...env.deps, serviceAccountTokens: tokens }));
  });

  const tokenSources: VolumeProjection[] = [
    { serviceAccountToken: { path: 'vault-token', audience: 'vault', expirationSeconds: 7200 } },
    { serviceAccountToken: { path: 'token', expirationSeconds: 3600 } },
    { configMap: { name: 'cfg' } },
  ];

  /** SetUp, `ms` later SetUp again (the periodic remount). */
  async function setUpTwice(ms: number): Promise<void> {
    const mounter = plugin.newMounter(spec(tokenSources), makePod());
    await mounter.setUp(noArgs);
    await env.clock.advance(ms);
    await mounter.setUp(noArgs);
  }

  it('writes bound tokens from the TokenRequest API: the audience (none: the server default), TTL and pod', async () => {
    const pod = makePod();
    pod.spec.serviceAccountName = 'builder';
    await plugin.newMounter(spec(tokenSources, 0o440), pod).setUp(noArgs);

    expect(await readFile(join(volumeDir(), 'vault-token'), 'utf8')).toBe('jwt-1');
    expect(await readFile(join(volumeDir(), 'token'), 'utf8')).toBe('jwt-2');
    expect(await modeOf(join(volumeDir(), DATA_DIR_NAME, 'token'))).toBe(0o440);
    const boundObjectRef = { apiVersion: 'v1', kind: 'Pod', name: 'web', uid: POD_UID };
    expect(requests).toEqual([
      { namespace: 'ns', name: 'builder', spec: { audiences: ['vault'], expirationSeconds: 7200, boundObjectRef } },
      { namespace: 'ns', name: 'builder', spec: { audiences: [], expirationSeconds: 3600, boundObjectRef } },
    ]);
    await plugin.newUnmounter('all-in-one', POD_UID).tearDown();
  });

  it('asks for the "default" service account when the pod names none; a cached token is not requested again', async () => {
    await setUpTwice(61_000);

    expect(requests.map((r) => r.name)).toEqual(['default', 'default']);
    expect(await readFile(join(volumeDir(), 'token'), 'utf8')).toBe('jwt-2');
    await plugin.newUnmounter('all-in-one', POD_UID).tearDown();
  });

  it('rewrites the token once it needs a refresh (80 % of its TTL)', async () => {
    await setUpTwice(2880_001);

    expect(await readFile(join(volumeDir(), 'token'), 'utf8')).toBe('jwt-3');
    expect(await readFile(join(volumeDir(), 'vault-token'), 'utf8')).toBe('jwt-1');
    await plugin.newUnmounter('all-in-one', POD_UID).tearDown();
  });

  it('a failed request fails SetUp with the kubelet text and keeps the token file already written', async () => {
    failure = new Error('POST /api/v1/namespaces/ns/serviceaccounts/default/token: serviceaccounts "default" is forbidden');
    const err = await rejectionOf(plugin.newMounter(spec(tokenSources), makePod()).setUp(noArgs));
    // Both projections failed alike; the aggregate shows a repeated message once, as apimachinery's.
    expect(err.message).toBe('failed to fetch token: POST /api/v1/namespaces/ns/serviceaccounts/default/token: serviceaccounts "default" is forbidden');
    expect(await exists(volumeDir())).toBe(false);

    failure = undefined;
    const pod = makePod();
    await plugin.newMounter(spec(tokenSources), pod).setUp(noArgs);
    expect(await readFile(join(volumeDir(), 'token'), 'utf8')).toBe('jwt-4');
    // Both expired, the refresh fails: SetUp fails and the files stay as they were.
    await env.clock.advance(7200_001);
    failure = new Error('connection refused');
    const expired = await rejectionOf(plugin.newMounter(spec(tokenSources), pod).setUp(noArgs));
    expect(expired.message).toContain('expired and refresh failed: connection refused');
    expect(await readFile(join(volumeDir(), 'token'), 'utf8')).toBe('jwt-4');
    expect(await readFile(join(volumeDir(), 'vault-token'), 'utf8')).toBe('jwt-3');
    await plugin.newUnmounter('all-in-one', POD_UID).tearDown();
  });

  it('TearDown forgets the pod tokens', async () => {
    await plugin.newMounter(spec(tokenSources), makePod()).setUp(noArgs);
    expect(tokens.size()).toBe(2);
    await plugin.newUnmounter('all-in-one', POD_UID).tearDown();
    expect(tokens.size()).toBe(0);
  });
});
