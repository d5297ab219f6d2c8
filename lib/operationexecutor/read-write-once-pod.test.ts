/**
 * ReadWriteOncePod on the kubelet side (`GenerateMountVolumeFunc` / `GenerateMapVolumeFunc`):
 * a second pod on a PV whose only access mode is ReadWriteOncePod is refused with the kubelet's
 * text, for every plugin. Upstream's check (`IsVolumeMountedElsewhere` by unique volume name)
 * only sees the other pod when the plugin names its volumes per volume (attachable or
 * device-mountable); local and hostPath PVs are named per pod and escape it, so the engine also
 * looks the PV up by name. The real local and hostPath plugins run here on the engine's fake
 * clock over a temporary kubelet root (real bind mounts inside a private mount namespace,
 * stand-ins otherwise).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HostPathPlugin } from '../volume/plugins/host-path/host-path.ts';
import { LocalVolumePlugin } from '../volume/plugins/local-volume/local-volume.ts';
import { makePluginTestEnv, mountsAtOrBelow, type PluginTestEnv } from '../volume/plugins/testing/plugin-test-env.ts';
import type { PersistentVolume, PersistentVolumeAccessMode, Pod } from '../volume/k8s-types.ts';
import type { VolumePlugin } from '../volume/plugins.ts';
import { FakeVolumePlugin } from '../volume/testing/fake-volume-plugin.ts';
import { uniquePodName, type UniquePodName } from '../volume/types.ts';
import { Harness, makePod } from '../volumemanager/testing/harness.ts';
import { isReadWriteOncePodInUseError, ReadWriteOncePodInUseError } from './operation-generator.ts';

const rwopText = 'volume uses the ReadWriteOncePod access mode and is already in use by another pod';

let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

type PvSource = 'local' | 'hostPath' | 'gcePersistentDisk';

/** The PV `shared-pv` of the given source with its claim `default/pvc`. */
function sharedPv(source: PvSource, path: string, accessModes: PersistentVolumeAccessMode[]): PersistentVolume {
  const src =
    source === 'local' ? { local: { path } } : source === 'hostPath' ? { hostPath: { path } } : { gcePersistentDisk: { pdName: 'fake-device1' } };
  return {
    metadata: { name: 'shared-pv' },
    spec: { capacity: { storage: '1Gi' }, accessModes, volumeMode: 'Filesystem', claimRef: { namespace: 'default', name: 'pvc', uid: 'pvcuid' }, ...src },
  };
}

function claimPod(name: string): Pod {
  return makePod([{ name: 'data', persistentVolumeClaim: { claimName: 'pvc' } }], { name, uid: `${name}uid` });
}

interface Rig {
  h: Harness;
  env: PluginTestEnv;
}

/** A volume manager over a temporary kubelet root with the real local and hostPath plugins and the fake attachable one. */
async function rig(source: PvSource, accessModes: PersistentVolumeAccessMode[] = ['ReadWriteOncePod']): Promise<Rig> {
  const env = await makePluginTestEnv();
  const disk = join(env.dir, 'disks', 'ssd1');
  await mkdir(disk, { recursive: true });
  await writeFile(join(disk, 'data'), 'on the disk');
  const plugins: VolumePlugin[] = [new LocalVolumePlugin(env.deps), new HostPathPlugin(env.deps), new FakeVolumePlugin({ canSupport: (s) => s.persistentVolume?.spec.gcePersistentDisk !== undefined })];
  const h = new Harness({ rootDir: env.root, plugins, controllerAttachDetachEnabled: false, operationsOnRealIo: true });
  cleanups.push(async () => {
    await h.close();
    expect(await env.cleanUp()).toEqual([]);
  });
  const pv = sharedPv(source, disk, accessModes);
  h.kube.pvs.set(pv.metadata.name, pv);
  h.kube.pvcs.set('default/pvc', {
    metadata: { name: 'pvc', namespace: 'default', uid: 'pvcuid' },
    spec: { volumeName: pv.metadata.name, accessModes, volumeMode: 'Filesystem' },
    status: { phase: 'Bound', capacity: { storage: '1Gi' } },
  });
  return { h, env };
}

function mountedPods(h: Harness): UniquePodName[] {
  return h.asw
    .getAllMountedVolumes()
    .map((m) => m.podName)
    .sort();
}

function failedMounts(h: Harness, podName: string): string[] {
  return h.events.filter((e) => e.reason === 'FailedMount' && e.object.name === podName).map((e) => e.message);
}

/** Removes every pod and waits (fake time) until nothing is mounted any more. */
async function removeAll(h: Harness): Promise<void> {
  for (const uid of [...h.pods.pods.keys()]) h.pods.delete(uid);
  await h.until(() => h.asw.getAllMountedVolumes().length === 0 && h.pendingOperations.list().every((o) => !o.pending));
}

describe('GenerateMountVolumeFunc: ReadWriteOncePod is enforced for every PV-backed plugin', () => {
  it.each<PvSource>(['local', 'hostPath', 'gcePersistentDisk'])(
    'a second pod on a %s PV with accessModes [ReadWriteOncePod] is refused with the kubelet text until the first pod is gone',
    async (source) => {
      // Arrange: pod-a has the volume mounted
      const { h, env } = await rig(source);
      h.pods.add(claimPod('pod-a'));
      h.start();
      await h.until(() => h.asw.getMountedVolumes().length === 1);
      const podA = uniquePodName('pod-auid');
      expect(mountedPods(h)).toEqual([podA]);

      // Act: pod-b wants the same claim
      h.pods.add(claimPod('pod-b'));
      await h.until(() => failedMounts(h, 'pod-b').length >= 2);
      await h.clock.advance(5_000);

      // Assert: refused (and retried with backoff), never set up; pod-a keeps its mount
      expect(failedMounts(h, 'pod-b')[0]).toBe(`MountVolume.SetUp failed for volume "shared-pv" : ${rwopText}`);
      expect(mountedPods(h)).toEqual([podA]);
      const podDirs = (await mountsAtOrBelow(env.mounter, env.podsDir)).map((m) => m.mountPoint);
      expect(podDirs.some((p) => p.includes('pod-buid'))).toBe(false);

      // Act: pod-a goes
      h.pods.delete('pod-auid');

      // Assert: pod-b gets the volume once pod-a's TearDown is done
      await h.until(() => mountedPods(h).join() === 'pod-buid' && h.asw.getMountedVolumes().length === 1, 120_000);
      await removeAll(h);
    },
  );

  it('two pods added together on one local PV with accessModes [ReadWriteOncePod]: exactly one is set up, the other refused', async () => {
    // Arrange
    const { h } = await rig('local');
    h.pods.add(claimPod('pod-a'));
    h.pods.add(claimPod('pod-b'));

    // Act: both mounts start in the same reconciler pass (per-pod volume names: different operation keys)
    h.start();
    await h.until(() => h.asw.getMountedVolumes().length === 1 && failedMounts(h, 'pod-a').length + failedMounts(h, 'pod-b').length >= 1);
    await h.clock.advance(5_000);

    // Assert
    expect(h.asw.getAllMountedVolumes()).toHaveLength(1);
    const [winner] = mountedPods(h);
    const loser = winner === uniquePodName('pod-auid') ? 'pod-b' : 'pod-a';
    expect(failedMounts(h, loser).every((m) => m === `MountVolume.SetUp failed for volume "shared-pv" : ${rwopText}`)).toBe(true);
    expect(failedMounts(h, loser).length).toBeGreaterThan(0);
    await removeAll(h);
  });

  it('a local PV that also allows ReadWriteOnce is shared by both pods (the pod intent is unknown, as upstream)', async () => {
    // Arrange
    const { h } = await rig('local', ['ReadWriteOncePod', 'ReadWriteOnce']);
    h.pods.add(claimPod('pod-a'));
    h.pods.add(claimPod('pod-b'));

    // Act
    h.start();
    await h.until(() => h.asw.getMountedVolumes().length === 2);

    // Assert
    expect(mountedPods(h)).toEqual([uniquePodName('pod-auid'), uniquePodName('pod-buid')]);
    expect(h.events.filter((e) => e.reason === 'FailedMount')).toEqual([]);
    await removeAll(h);
  });

  it('ReadWriteOncePodInUseError carries the kubelet text and its predicate', () => {
    const err = new ReadWriteOncePodInUseError();
    expect(err.message).toBe(rwopText);
    expect(isReadWriteOncePodInUseError(err)).toBe(true);
    expect(isReadWriteOncePodInUseError(new Error(rwopText))).toBe(false);
  });
});
