import { mkdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mountMode } from '../../../mount-utils/testing/mount-test-env.ts';
import type { DownwardAPIVolumeFile, Pod, Volume } from '../../k8s-types.ts';
import { specFromVolume } from '../../spec.ts';
import { exists, initPlugin, makePluginTestEnv, makePod, modeOf, mountsAtOrBelow, noArgs, POD_UID, rejectionOf, type PluginTestEnv } from '../testing/plugin-test-env.ts';
import { DATA_DIR_NAME } from '../util/atomic-writer.ts';
import { isAggregateVolumeError, isTearDownRefusedError } from '../util/errors.ts';
import { collectDownwardAPIData, DOWNWARD_API_PLUGIN_NAME, DownwardAPIPlugin } from './downward-api.ts';
import { extractFieldPathAsString, formatMap } from './field-path.ts';
import { scaledQuantity } from './resource-field.ts';

let env: PluginTestEnv;
let plugin: DownwardAPIPlugin;

const allocatable = { cpu: '4', memory: '8Gi', 'ephemeral-storage': '100Gi' };

function richPod(): Pod {
  const pod = makePod([], {
    labels: { tier: 'web', app: 'shop', 'app.kubernetes.io/name': 'shop' },
    annotations: { note: 'say "hi"\nbye', 'z-last': '1' },
  });
  pod.spec.containers = [
    { name: 'app', resources: { limits: { cpu: '500m', memory: '256Mi' }, requests: { cpu: '0.1', memory: '64Mi', 'hugepages-2Mi': '4Mi' } } },
    { name: 'sidecar' },
  ];
  return pod;
}

beforeEach(async () => {
  env = await makePluginTestEnv();
  plugin = initPlugin(env, new DownwardAPIPlugin(env.deps));
});

afterEach(async () => {
  expect(await env.cleanUp()).toEqual([]);
});

function volume(items: DownwardAPIVolumeFile[], defaultMode?: number): Volume {
  return { name: 'podinfo', downwardAPI: { items, ...(defaultMode === undefined ? {} : { defaultMode }) } };
}

function volumeDir(): string {
  return join(env.podsDir, POD_UID, 'volumes', 'kubernetes.io~downward-api', 'podinfo');
}

function text(items: DownwardAPIVolumeFile[], pod: Pod = richPod()): Record<string, string> {
  return Object.fromEntries([...collectDownwardAPIData(items, pod, 0o644, allocatable)].map(([p, f]) => [p, f.data.toString('utf8')]));
}

describe('downward API values', () => {
  it('formats labels and annotations as sorted key="value" lines with Go quoting', () => {
    expect(formatMap({ b: '2', a: 'x"y' })).toBe('a="x\\"y"\nb="2"');
    // Lines are sorted as whole strings after formatting (the kubelet's sortLines), so '.' sorts before '='.
    expect(text([{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }]).labels).toBe('app.kubernetes.io/name="shop"\napp="shop"\ntier="web"');
    expect(text([{ path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations' } }]).annotations).toBe('note="say \\"hi\\"\\nbye"\nz-last="1"');
  });

  it.each([
    { fieldPath: 'metadata.name', want: 'web' },
    { fieldPath: 'metadata.namespace', want: 'ns' },
    { fieldPath: 'metadata.uid', want: POD_UID },
    { fieldPath: "metadata.labels['tier']", want: 'web' },
    { fieldPath: "metadata.annotations['absent']", want: '' },
  ])('projects $fieldPath as "$want"', ({ fieldPath, want }) => {
    expect(extractFieldPathAsString(richPod(), fieldPath)).toBe(want);
  });

  it.each([
    { resource: 'limits.cpu', divisor: '1m', want: '500', container: 'app' },
    { resource: 'limits.cpu', divisor: undefined, want: '1', container: 'app' },
    { resource: 'requests.cpu', divisor: '1m', want: '100', container: 'app' },
    { resource: 'limits.memory', divisor: '1Mi', want: '256', container: 'app' },
    { resource: 'requests.memory', divisor: undefined, want: String(64 * 1024 * 1024), container: 'app' },
    { resource: 'requests.hugepages-2Mi', divisor: '1Mi', want: '4', container: 'app' },
    { resource: 'limits.ephemeral-storage', divisor: '1Gi', want: '100', container: 'app' },
    { resource: 'limits.cpu', divisor: undefined, want: '4', container: 'sidecar' },
    { resource: 'limits.memory', divisor: '1Gi', want: '8', container: 'sidecar' },
    { resource: 'requests.cpu', divisor: undefined, want: '0', container: 'sidecar' },
  ])('projects $resource of $container with divisor $divisor as $want (unset limits are node allocatable)', ({ resource, divisor, want, container }) => {
    const ref = { containerName: container, resource, ...(divisor === undefined ? {} : { divisor }) };
    expect(text([{ path: 'v', resourceFieldRef: ref }]).v).toBe(want);
  });

  it.each([
    { value: '0.1', scale: 3, want: 100n },
    { value: '100m', scale: 3, want: 100n },
    { value: '1.5Gi', scale: 0, want: 1610612736n },
    { value: '1e3', scale: 0, want: 1000n },
    { value: '1m', scale: 0, want: 1n },
    { value: '2k', scale: 3, want: 2_000_000n },
  ])('computes quantity $value at scale $scale exactly as $want', ({ value, scale, want }) => {
    expect(scaledQuantity(value, scale)).toBe(want);
  });

  it('reports every failing item together in the aggregate format', () => {
    let caught: unknown;
    try {
      collectDownwardAPIData(
        [
          { path: 'a', fieldRef: { fieldPath: 'spec.nodeName' } },
          { path: 'b', resourceFieldRef: { containerName: 'ghost', resource: 'limits.cpu' } },
          { path: 'c', resourceFieldRef: { containerName: 'app', resource: 'limits.gpu' } },
          { path: 'ok', fieldRef: { fieldPath: 'metadata.name' } },
        ],
        richPod(),
        0o644,
        allocatable,
      );
    } catch (err) {
      caught = err;
    }
    expect(isAggregateVolumeError(caught)).toBe(true);
    expect((caught as Error).message).toBe('[unsupported fieldPath: spec.nodeName, container ghost not found, unsupported container resource : limits.gpu]');
  });

  it('rejects an invalid label subscript', () => {
    expect(() => extractFieldPathAsString(richPod(), "metadata.labels['-bad-']")).toThrow(/^invalid key subscript in metadata.labels\['-bad-'\]: name part must consist of/);
  });
});

describe(`DownwardAPIPlugin in ${mountMode} mode`, () => {
  const items: DownwardAPIVolumeFile[] = [
    { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
    { path: 'meta/name', fieldRef: { fieldPath: 'metadata.name' }, mode: 0o400 },
    { path: 'cpu', resourceFieldRef: { containerName: 'app', resource: 'limits.cpu', divisor: '1m' } },
  ];

  it('claims downwardAPI specs and requires remount', () => {
    const spec = specFromVolume(volume(items));
    expect(plugin.name).toBe(DOWNWARD_API_PLUGIN_NAME);
    expect(plugin.name).toBe('kubernetes.io/downward-api');
    expect([plugin.canSupport(spec), plugin.requiresRemount(spec), plugin.getVolumeName(spec)]).toEqual([true, true, 'podinfo']);
  });

  it('writes the items onto a tmpfs with item modes or defaultMode', async () => {
    await plugin.newMounter(specFromVolume(volume(items, 0o440)), richPod()).setUp(noArgs);

    expect((await mountsAtOrBelow(env.mounter, env.root)).map((m) => [m.mountPoint, m.fsType])).toEqual([[volumeDir(), 'tmpfs']]);
    expect(await readFile(join(volumeDir(), 'meta', 'name'), 'utf8')).toBe('web');
    expect(await readFile(join(volumeDir(), 'cpu'), 'utf8')).toBe('500');
    expect(await modeOf(join(volumeDir(), DATA_DIR_NAME, 'meta', 'name'))).toBe(0o400);
    expect(await modeOf(join(volumeDir(), DATA_DIR_NAME, 'labels'))).toBe(0o440);
    await plugin.newUnmounter('podinfo', POD_UID).tearDown();
  });

  it('follows label changes of the current pod on the next SetUp', async () => {
    const mounter = plugin.newMounter(specFromVolume(volume(items)), richPod());
    await mounter.setUp(noArgs);
    const before = await readlink(join(volumeDir(), DATA_DIR_NAME));
    const updated = richPod();
    updated.metadata.labels = { tier: 'api' };
    env.objects.pods.set(POD_UID, updated);
    await env.clock.advance(61_000);

    await mounter.setUp(noArgs);

    expect(await readlink(join(volumeDir(), DATA_DIR_NAME))).not.toBe(before);
    expect(await readFile(join(volumeDir(), 'labels'), 'utf8')).toBe('tier="api"');
    await plugin.newUnmounter('podinfo', POD_UID).tearDown();
  });

  it('writes nothing and mounts nothing when an item fails', async () => {
    const err = await rejectionOf(plugin.newMounter(specFromVolume(volume([{ path: 'x', fieldRef: { fieldPath: 'status.podIP' } }])), richPod()).setUp(noArgs));

    expect(err.message).toBe('unsupported fieldPath: status.podIP');
    expect(await exists(volumeDir())).toBe(false);
  });

  it('tears down: unmounted, directory gone, idempotent', async () => {
    await plugin.newMounter(specFromVolume(volume(items)), richPod()).setUp(noArgs);
    const unmounter = plugin.newUnmounter('podinfo', POD_UID);

    await unmounter.tearDown();
    await unmounter.tearDown();

    expect(await exists(volumeDir())).toBe(false);
    expect(await mountsAtOrBelow(env.mounter, env.root)).toEqual([]);
  });

  it('refuses to tear down when something else is mounted inside the volume', async () => {
    await plugin.newMounter(specFromVolume(volume(items)), richPod()).setUp(noArgs);
    const inner = join(volumeDir(), 'inner');
    await mkdir(inner);
    await env.mounter.mount('tmpfs', inner, 'tmpfs', ['size=64k']);

    const err = await rejectionOf(plugin.newUnmounter('podinfo', POD_UID).tearDown());

    expect(isTearDownRefusedError(err)).toBe(true);
    expect(await readFile(join(volumeDir(), 'meta', 'name'), 'utf8')).toBe('web');
    await env.mounter.unmount(inner);
    await env.mounter.unmount(volumeDir());
  });

  it('reconstructs {name, downwardAPI: {}}', async () => {
    await plugin.newMounter(specFromVolume(volume(items)), richPod()).setUp(noArgs);

    const rebuilt = await plugin.constructVolumeSpec('podinfo', volumeDir());

    expect(rebuilt).toEqual({ spec: { volume: { name: 'podinfo', downwardAPI: {} }, readOnly: false }, seLinuxMountContext: '' });
    expect(plugin.canSupport(rebuilt.spec)).toBe(true);
    await plugin.newUnmounter('podinfo', POD_UID).tearDown();
  });
});
