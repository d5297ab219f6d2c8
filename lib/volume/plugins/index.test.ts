import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Volume } from '../k8s-types.ts';
import { isAttachableVolume, isDeviceMountableVolume, VolumePluginMgr } from '../plugins.ts';
import { specFromPersistentVolume, specFromVolume, type Spec } from '../spec.ts';
import { probeVolumePlugins } from './index.ts';
import { makePluginTestEnv, type PluginTestEnv } from './testing/plugin-test-env.ts';

let env: PluginTestEnv;
let mgr: VolumePluginMgr;

beforeEach(async () => {
  env = await makePluginTestEnv();
  mgr = new VolumePluginMgr(probeVolumePlugins(env.deps), env.host);
});

afterEach(async () => {
  expect(await env.cleanUp()).toEqual([]);
});

const inline = (v: Omit<Volume, 'name'>): Spec => specFromVolume({ name: 'v', ...v });

describe('probeVolumePlugins', () => {
  it('returns the seven in-tree plugins under their kubelet names', () => {
    expect(mgr.list().map((p) => p.name)).toEqual([
      'kubernetes.io/empty-dir',
      'kubernetes.io/host-path',
      'kubernetes.io/configmap',
      'kubernetes.io/secret',
      'kubernetes.io/projected',
      'kubernetes.io/downward-api',
      'kubernetes.io/local-volume',
    ]);
  });

  it.each([
    { name: 'emptyDir', spec: inline({ emptyDir: {} }), plugin: 'kubernetes.io/empty-dir', remount: false },
    { name: 'hostPath', spec: inline({ hostPath: { path: '/x' } }), plugin: 'kubernetes.io/host-path', remount: false },
    { name: 'a hostPath PV', spec: specFromPersistentVolume({ metadata: { name: 'pv' }, spec: { hostPath: { path: '/x' } } }), plugin: 'kubernetes.io/host-path', remount: false },
    { name: 'configMap', spec: inline({ configMap: { name: 'c' } }), plugin: 'kubernetes.io/configmap', remount: true },
    { name: 'secret', spec: inline({ secret: { secretName: 's' } }), plugin: 'kubernetes.io/secret', remount: true },
    { name: 'projected', spec: inline({ projected: { sources: [] } }), plugin: 'kubernetes.io/projected', remount: true },
    { name: 'downwardAPI', spec: inline({ downwardAPI: { items: [] } }), plugin: 'kubernetes.io/downward-api', remount: true },
    { name: 'a local PV', spec: specFromPersistentVolume({ metadata: { name: 'pv' }, spec: { local: { path: '/x' } } }), plugin: 'kubernetes.io/local-volume', remount: false },
  ])('gives $name to exactly one plugin, $plugin, which is neither attachable nor device-mountable', ({ spec, plugin, remount }) => {
    const found = mgr.findPluginBySpec(spec);

    expect(found.name).toBe(plugin);
    expect(found.requiresRemount(spec)).toBe(remount);
    expect(found.supportsSELinuxContextMount(spec)).toBe(false);
    expect(isAttachableVolume(spec, mgr)).toBe(false);
    expect(isDeviceMountableVolume(spec, mgr)).toBe(false);
  });

  it('claims no CSI or PVC spec', () => {
    expect(() => mgr.findPluginBySpec(inline({ csi: { driver: 'd' } }))).toThrow('no volume plugin matched');
    expect(() => mgr.findPluginBySpec(inline({ persistentVolumeClaim: { claimName: 'c' } }))).toThrow('no volume plugin matched');
  });

  it('reconstructs a spec that the same plugin claims again, for every plugin', async () => {
    for (const plugin of mgr.list()) {
      const { spec } = await plugin.constructVolumeSpec('vol', `${env.podsDir}/uid/volumes/x/vol`);
      expect(mgr.findPluginBySpec(spec).name).toBe(plugin.name);
    }
  });
});
