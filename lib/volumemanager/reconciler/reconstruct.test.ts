/**
 * Reconstruction (kubernetes/kubernetes pkg/kubelet/volumemanager/reconciler/reconstruct.go@v1.34;
 * scenarios 20–24 from its reconstruct_test.go): the on-disk scan, `reconstructVolume`, the
 * reconciler's `reconstructVolumes` / `cleanOrphanVolumes`, and the reconstruction report.
 *
 * The kubelet's harness also makes the fake mounter list every volume dir as a mount point. The
 * engine has no equivalent: the v1.30 reconstruction flow never checks mount points, so
 * a directory on disk is all a test needs.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { VolumePluginMgr } from '../../volume/plugins.ts';
import { specFromPersistentVolume, specFromVolume, type Spec } from '../../volume/spec.ts';
import { FailMountDeviceVolumeName, FailOnSetupVolumeName, FakeFileVolumePlugin, FakeVolumePlugin } from '../../volume/testing/fake-volume-plugin.ts';
import { pluginName, uniquePodName, uniqueVolumeName, type VolumeMode } from '../../volume/types.ts';
import type { HostFs } from '../../volume/util/host-fs.ts';
import { nodeHostFs } from '../../volume/util/host-fs.ts';
import {
  gcePdVolume,
  Harness,
  makeKubeletDir,
  makePod,
  pvWithClaim,
  syncHostFs,
  testNodeName,
} from '../testing/harness.ts';
import type { ReconstructionEntry } from './reconstruct-report.ts';
import { getVolumesFromPodDir, isPodsDirUnreadableError, PodsDirUnreadableError, reconstructVolume, type PodVolume } from './reconstruct-common.ts';

// HELPERS

const tempDirs: string[] = [];
let harness: Harness | undefined;

afterEach(async () => {
  await harness?.close();
  harness = undefined;
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function kubeletDir(volumePaths: readonly string[]): string {
  const root = makeKubeletDir(volumePaths);
  tempDirs.push(root);
  return root;
}

/** Counts the reconciler's reconstruction and force-cleanup metrics. */
function metricsSpy(): {
  reconstructTotal: number;
  reconstructErrors: number;
  forceCleanedTotal: number;
  forceCleanedErrors: number;
  reconstructVolumeOperation(failed: boolean): void;
  forceCleanedFailedVolumeOperation(failedToStart: boolean): void;
} {
  const m = {
    reconstructTotal: 0,
    reconstructErrors: 0,
    forceCleanedTotal: 0,
    forceCleanedErrors: 0,
    reconstructVolumeOperation(failed: boolean): void {
      m.reconstructTotal++;
      if (failed) m.reconstructErrors++;
    },
    forceCleanedFailedVolumeOperation(failedToStart: boolean): void {
      m.forceCleanedTotal++;
      if (failedToStart) m.forceCleanedErrors++;
    },
  };
  return m;
}

function byPath(a: PodVolume, b: PodVolume): number {
  return a.volumePath.localeCompare(b.volumePath);
}

function noOperationRunning(h: Harness): boolean {
  return h.pendingOperations.list().every((o) => !o.pending);
}

const pod1 = uniquePodName('pod1uid');

// SCAN

describe('getVolumesFromPodDir', () => {
  it('lists filesystem and block volumes of every pod dir, unescaping plugin names and never stat-ing entries', async () => {
    // Arrange
    const root = kubeletDir([
      'uid1/volumes/kubernetes.io~csi/pvc-1',
      'uid1/volumes/kubernetes.io~csi/pvc-2',
      'uid1/volumeDevices/kubernetes.io~csi/pvc-blk',
      'uid2/volumes/fake-plugin/vol-a',
      'uid3', // a pod dir without volumes
    ]);
    const pods = join(root, 'pods');
    writeFileSync(join(pods, 'not-a-pod'), ''); // a file in pods/: skipped
    writeFileSync(join(pods, 'uid2', 'volumes', 'stray-file'), ''); // a file where a plugin dir belongs: skipped
    writeFileSync(join(pods, 'uid2', 'volumes', 'fake-plugin', 'file-entry'), ''); // a volume entry is not stat-ed: listed
    mkdirSync(join(pods, 'uid4'));
    writeFileSync(join(pods, 'uid4', 'volumes'), ''); // unreadable volumes dir of one pod: that pod is skipped

    // Act
    const volumes = await getVolumesFromPodDir(pods, nodeHostFs);

    // Assert
    const entry = (pod: string, dir: 'volumes' | 'volumeDevices', plugin: string, escaped: string, name: string, mode: VolumeMode): PodVolume => ({
      podName: uniquePodName(pod),
      volumeSpecName: name,
      volumePath: join(pods, pod, dir, escaped, name),
      pluginName: pluginName(plugin),
      volumeMode: mode,
    });
    expect(volumes.sort(byPath)).toEqual(
      [
        entry('uid1', 'volumeDevices', 'kubernetes.io/csi', 'kubernetes.io~csi', 'pvc-blk', 'Block'),
        entry('uid1', 'volumes', 'kubernetes.io/csi', 'kubernetes.io~csi', 'pvc-1', 'Filesystem'),
        entry('uid1', 'volumes', 'kubernetes.io/csi', 'kubernetes.io~csi', 'pvc-2', 'Filesystem'),
        entry('uid2', 'volumes', 'fake-plugin', 'fake-plugin', 'file-entry', 'Filesystem'),
        entry('uid2', 'volumes', 'fake-plugin', 'fake-plugin', 'vol-a', 'Filesystem'),
      ].sort(byPath),
    );
  });

  it('returns no volumes for an empty pods dir', async () => {
    // Arrange
    const root = kubeletDir([]);

    // Act
    const volumes = await getVolumesFromPodDir(join(root, 'pods'), nodeHostFs);

    // Assert
    expect(volumes).toEqual([]);
  });

  it.each([
    { name: 'the pods dir does not exist', setUp: (root: string) => join(root, 'missing'), osError: 'ENOENT: no such file or directory' },
    {
      name: 'the pods path is a regular file',
      setUp: (root: string) => {
        writeFileSync(join(root, 'pods-file'), '');
        return join(root, 'pods-file');
      },
      osError: 'ENOTDIR: not a directory',
    },
  ])('throws PodsDirUnreadableError when $name', async ({ setUp, osError }) => {
    // Arrange
    const podsDir = setUp(kubeletDir([]));

    // Act
    const err: unknown = await getVolumesFromPodDir(podsDir, nodeHostFs).catch((e: unknown) => e);

    // Assert
    expect(err).toBeInstanceOf(PodsDirUnreadableError);
    expect(isPodsDirUnreadableError(err)).toBe(true);
    expect((err as Error).message).toBe(`failed to read pods dir "${podsDir}": ${osError}, scandir '${podsDir}'`);
  });

  it('wraps the host error of an unreadable pods dir with the path', async () => {
    // Arrange
    const fs: HostFs = { readDir: () => Promise.reject(new Error('permission denied')) };

    // Act
    const err: unknown = await getVolumesFromPodDir('/var/lib/kubelet/pods', fs).catch((e: unknown) => e);

    // Assert
    expect(isPodsDirUnreadableError(err)).toBe(true);
    expect((err as Error).message).toBe('failed to read pods dir "/var/lib/kubelet/pods": permission denied');
  });
});

// RECONSTRUCT ONE VOLUME

describe('reconstructVolume', () => {
  const podVolume = (p: Partial<PodVolume>): PodVolume => ({
    podName: pod1,
    volumeSpecName: 'pvc-abcdef',
    volumePath: '/var/lib/kubelet/pods/pod1uid/volumes/fake-plugin/pvc-abcdef',
    pluginName: pluginName('fake-plugin'),
    volumeMode: 'Filesystem',
    ...p,
  });

  it('rebuilds a filesystem volume of a device-mountable plugin under its spec-derived name', async () => {
    // Arrange
    const plugin = new FakeVolumePlugin();
    plugin.constructVolumeSpecHook = (name) => Promise.resolve({ spec: specFromVolume({ name }), seLinuxMountContext: 'system_u:object_r:container_file_t:s0:c1,c2' });
    const mgr = new VolumePluginMgr([plugin], null);

    // Act
    const v = await reconstructVolume(podVolume({}), mgr);

    // Assert
    expect(v).toMatchObject({
      volumeName: 'fake-plugin/pvc-abcdef',
      podName: 'pod1uid',
      volumeSpec: specFromVolume({ name: 'pvc-abcdef' }),
      outerVolumeSpecName: 'pvc-abcdef',
      pod: { metadata: { uid: 'pod1uid' } },
      volumeGidValue: '',
      devicePath: '',
      blockVolumeMapper: null,
      seLinuxMountContext: 'system_u:object_r:container_file_t:s0:c1,c2',
    });
    expect(v.mounter?.getPath()).toBe('/pods/pod1uid/volumes/fake-plugin/pvc-abcdef');
    expect(v.deviceMounter).not.toBeNull();
  });

  it('rebuilds a block volume with a mapper and no mounter', async () => {
    // Arrange
    const mgr = new VolumePluginMgr([new FakeVolumePlugin()], null);

    // Act
    const v = await reconstructVolume(podVolume({ volumeMode: 'Block', volumePath: '/var/lib/kubelet/pods/pod1uid/volumeDevices/fake-plugin/pvc-abcdef' }), mgr);

    // Assert
    expect(v.volumeName).toBe('fake-plugin/pvc-abcdef');
    expect(v.volumeSpec.persistentVolume?.spec.volumeMode).toBe('Block');
    expect(v.blockVolumeMapper).not.toBeNull();
    expect(v.mounter).toBeNull();
    expect(v.deviceMounter).toBeNull();
    await expect(v.blockVolumeMapper?.getGlobalMapPath(v.volumeSpec)).resolves.toBe('/plugins/fake-plugin/volumeDevices/pluginDependentPath');
  });

  it('names a volume of a plugin that is neither attachable nor device-mountable after the pod', async () => {
    // Arrange
    const mgr = new VolumePluginMgr([new FakeFileVolumePlugin()], null);

    // Act
    const v = await reconstructVolume(podVolume({ pluginName: pluginName('fake-file-plugin'), volumeSpecName: 'cache' }), mgr);

    // Assert
    expect(v.volumeName).toBe('fake-file-plugin/pod1uid-cache');
    expect(v.deviceMounter).toBeNull();
    expect(v.mounter).not.toBeNull();
  });

  it('reconstructs a CSI volume found under its escaped plugin dir', async () => {
    // Arrange
    const root = kubeletDir(['pod1uid/volumes/kubernetes.io~csi/pvc-123']);
    const mgr = new VolumePluginMgr([new FakeVolumePlugin({ name: 'kubernetes.io/csi' })], null);
    const [scanned] = await getVolumesFromPodDir(join(root, 'pods'), nodeHostFs);

    // Act
    const v = await reconstructVolume(scanned as PodVolume, mgr);

    // Assert
    expect(scanned?.pluginName).toBe('kubernetes.io/csi');
    expect(v.volumeName).toBe('kubernetes.io/csi/pvc-123');
  });

  it.each([
    {
      name: 'the plugin is unknown',
      plugins: () => [new FakeVolumePlugin()],
      volume: { pluginName: pluginName('missing-plugin') },
      error: 'no volume plugin matched name: missing-plugin',
    },
    {
      name: 'a block volume belongs to a plugin that cannot map',
      plugins: () => [new FakeFileVolumePlugin()],
      volume: { pluginName: pluginName('fake-file-plugin'), volumeMode: 'Block' as const },
      error: 'could not find block volume plugin "fake-file-plugin" (spec.Name: "pvc-abcdef") pod "pod1uid" (UID: "pod1uid")',
    },
    {
      name: 'the plugin cannot construct the spec',
      plugins: () => {
        const p = new FakeVolumePlugin();
        p.constructVolumeSpecHook = () => Promise.reject(new Error('vol_data.json: no such file'));
        return [p];
      },
      volume: {},
      error: 'vol_data.json: no such file',
    },
  ])('fails when $name', async ({ plugins, volume, error }) => {
    // Arrange
    const mgr = new VolumePluginMgr(plugins(), null);

    // Act
    const err: unknown = await reconstructVolume(podVolume(volume), mgr).catch((e: unknown) => e);

    // Assert
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe(error);
  });
});

// SCENARIOS 20–24

describe('reconstruction scenarios (reconstruct_test.go)', () => {
  it('scenario 20: two pods using the same volume, both deleted, are reconstructed as uncertain with the duplicate name kept', async () => {
    // Arrange
    const root = kubeletDir(['pod1/volumes/fake-plugin/pvc-abcdef', 'pod2/volumes/fake-plugin/pvc-abcdef']);
    const metrics = metricsSpy();
    const h = (harness = new Harness({ rootDir: root, controllerAttachDetachEnabled: true, metrics }));
    const vol = uniqueVolumeName('fake-plugin/pvc-abcdef');

    // Act
    await h.reconciler.reconstructVolumes();

    // Assert
    expect(h.reconciler.getVolumesNeedUpdateFromNodeStatus()).toEqual([vol, vol]);
    expect(h.reconciler.getVolumesFailedReconstruction()).toEqual([]);
    expect(h.asw.getMountedVolumes()).toHaveLength(0);
    expect(h.asw.getAllMountedVolumes()).toHaveLength(2);
    expect(h.asw.getPossiblyMountedVolumesForPod(uniquePodName('pod1'))).toHaveLength(1);
    expect(h.asw.isVolumeReconstructed(vol, uniquePodName('pod1'))).toBe(true);
    expect(h.asw.isVolumeReconstructed(vol, uniquePodName('pod2'))).toBe(true);
    expect(h.asw.getDeviceMountState(vol)).toBe('DeviceMountUncertain');
    expect(h.asw.getVolumes()[0]?.attachability).toBe('Uncertain');
    expect(metrics).toMatchObject({ reconstructTotal: 2, reconstructErrors: 0 });
  });

  it('scenario 21: a volume of an unknown plugin fails reconstruction and is kept for cleanup', async () => {
    // Arrange
    const root = kubeletDir(['pod1/volumes/missing-plugin/pvc-abcdef']);
    const metrics = metricsSpy();
    const h = (harness = new Harness({ rootDir: root, controllerAttachDetachEnabled: true, metrics }));

    // Act
    await h.reconciler.reconstructVolumes();

    // Assert
    expect(h.reconciler.getVolumesNeedUpdateFromNodeStatus()).toEqual([]);
    expect(h.reconciler.getVolumesFailedReconstruction().map((v) => v.volumeSpecName)).toEqual(['pvc-abcdef']);
    expect(h.asw.getAttachedVolumes()).toEqual([]);
    expect(metrics).toMatchObject({ reconstructTotal: 1, reconstructErrors: 1 });
  });

  it.each([
    { name: 'scenario 22: a volume that failed reconstruction but is still desired is not cleaned up', desired: true, tearDown: 0, forceCleaned: 0 },
    { name: 'scenario 23: a volume that failed reconstruction and is not desired is torn down once', desired: false, tearDown: 1, forceCleaned: 1 },
  ])('$name', async ({ desired, tearDown, forceCleaned }) => {
    // Arrange: `volume-name` of pod1uid fails reconstruction, which fills the failed list with
    // {pod1uid, volume-name, fake-plugin, Filesystem}.
    const root = kubeletDir(['pod1uid/volumes/fake-plugin/volume-name']);
    const metrics = metricsSpy();
    const h = (harness = new Harness({ rootDir: root, controllerAttachDetachEnabled: true, metrics }));
    h.plugin.constructVolumeSpecHook = () => Promise.reject(new Error('cannot construct volume-name'));
    await h.reconciler.reconstructVolumes();
    expect(h.reconciler.getVolumesFailedReconstruction()).toEqual([
      {
        podName: 'pod1uid',
        volumeSpecName: 'volume-name',
        volumePath: join(root, 'pods/pod1uid/volumes/fake-plugin/volume-name'),
        pluginName: 'fake-plugin',
        volumeMode: 'Filesystem',
      },
    ]);
    if (desired) {
      const pod = makePod([gcePdVolume()]);
      const spec = specFromVolume(gcePdVolume());
      const vol = h.dsw.addPodToVolume(pod1, pod, spec, 'volume-name', '', []);
      h.asw.markVolumeAsAttached(vol, spec, testNodeName, '');
    }
    h.populator.setHasAddedPods(true);

    // Act: one pass; with the DSW populated and no volume waiting for node status, it runs cleanOrphanVolumes.
    await h.reconciler.reconcile();
    await h.until(() => noOperationRunning(h));

    // Assert
    expect(h.reconciler.getVolumesFailedReconstruction()).toEqual([]);
    expect(h.plugin.counts.tearDown).toBe(tearDown);
    expect(metrics).toMatchObject({ forceCleanedTotal: forceCleaned, forceCleanedErrors: 0 });

    // Act again: cleanup is one-shot.
    await h.reconciler.reconcile();
    await h.until(() => noOperationRunning(h));

    // Assert
    expect(h.plugin.counts.tearDown).toBe(tearDown);
    expect(metrics.forceCleanedTotal).toBe(forceCleaned);
  });

  it.each([
    {
      name: 'a) a reconstructed filesystem volume is mounted',
      volumePath: 'pod1uid/volumes/fake-plugin/volumename',
      mode: 'Filesystem' as const,
      podNotAdded: false,
      expectMount: true,
      counts: { mountDevice: 1, setUp: 1, setUpDevice: 0 },
      deviceState: 'DeviceGloballyMounted',
      deviceMountPath: null,
    },
    {
      name: 'b) a reconstructed volume that fails SetUp finally stays uncertain',
      volumePath: `pod1uid/volumes/fake-plugin/${FailOnSetupVolumeName}`,
      mode: 'Filesystem' as const,
      podNotAdded: false,
      expectMount: false,
      counts: { mountDevice: 1, setUp: 1, setUpDevice: 0 },
      deviceState: 'DeviceGloballyMounted',
      deviceMountPath: null,
    },
    {
      name: 'c) a reconstructed block volume whose device map fails stays uncertain',
      volumePath: `pod1uid/volumeDevices/fake-plugin/${FailMountDeviceVolumeName}`,
      mode: 'Block' as const,
      podNotAdded: false,
      expectMount: false,
      counts: { mountDevice: 0, setUp: 0, setUpDevice: 1 },
      deviceState: 'DeviceMountUncertain',
      deviceMountPath: 'plugins/fake-plugin/volumeDevices/pluginDependentPath',
    },
    {
      name: 'd) as c) while the populator has not added all pods yet',
      volumePath: `pod1uid/volumeDevices/fake-plugin/${FailMountDeviceVolumeName}`,
      mode: 'Block' as const,
      podNotAdded: true,
      expectMount: false,
      counts: { mountDevice: 0, setUp: 0, setUpDevice: 1 },
      deviceState: 'DeviceMountUncertain',
      deviceMountPath: 'plugins/fake-plugin/volumeDevices/pluginDependentPath',
    },
  ])('scenario 24: $name', async ({ volumePath, mode, podNotAdded, expectMount, counts, deviceState, deviceMountPath }) => {
    // Arrange
    const root = kubeletDir([volumePath]);
    const h = (harness = new Harness({ rootDir: root, controllerAttachDetachEnabled: true }));
    const outerName = volumePath.split('/').at(-1) ?? '';
    const { pv, pvc } = pvWithClaim(outerName, { mode });
    h.kube.pvs.set(pv.metadata.name, pv);
    h.kube.pvcs.set('default/pvc', pvc);
    h.kube.setVolumesAttached([{ name: `fake-plugin/${outerName}`, devicePath: 'fake/path' }]);
    const pod = makePod([{ name: 'volume-name', persistentVolumeClaim: { claimName: 'pvc' } }]);
    const spec: Spec = specFromPersistentVolume(pv);

    // Act 1: reconstruction
    await h.reconciler.reconstructVolumes();

    // Assert 1: the volume is uncertain
    expect(h.asw.getMountedVolumes()).toHaveLength(0);
    expect(h.asw.getAllMountedVolumes()).toHaveLength(1);

    // Arrange 2: populate the DSW, mark the volume attached, allow unmounts
    const vol = h.dsw.addPodToVolume(pod1, pod, spec, outerName, '', []);
    expect(vol).toBe(`fake-plugin/${outerName}`);
    h.asw.markVolumeAsAttached(vol, spec, testNodeName, '');
    h.populator.setHasAddedPods(!podNotAdded);
    h.reconciler.setVolumesNeedUpdateFromNodeStatusForTest([]);

    // Act 2: reconcile once
    await h.reconciler.reconcile();
    await h.until(() => h.records.length === 1 && noOperationRunning(h));

    // Assert 2
    expect(h.reconciler.passCount()).toBe(1);
    expect(h.records.map((r) => [r.operationName, r.outcome])).toEqual([[mode === 'Block' ? 'map_volume' : 'volume_mount', expectMount ? 'success' : 'failure']]);
    expect(h.plugin.counts).toMatchObject(counts);
    expect(h.asw.getDeviceMountState(vol)).toBe(deviceState);
    if (expectMount) {
      expect(h.asw.getMountedVolumes()).toHaveLength(1);
      expect(h.asw.getVolumeMountState(vol, pod1)).toBe('VolumeMounted');
      expect(h.asw.isVolumeReconstructed(vol, pod1)).toBe(false);
    } else {
      expect(h.asw.getMountedVolumes()).toHaveLength(0);
      const all = h.asw.getAllMountedVolumes();
      expect(all).toHaveLength(1);
      expect(all[0]?.volumeMountState).toBe('VolumeMountUncertain');
      expect(h.asw.isVolumeReconstructed(vol, pod1)).toBe(true);
      if (deviceMountPath !== null) expect(all[0]?.deviceMountPath).toBe(join(root, deviceMountPath));
    }
    // Unmount was not attempted in any case.
    expect(h.plugin.counts).toMatchObject({ tearDown: 0, unmountDevice: 0, unmapPodDevice: 0, tearDownDevice: 0, detach: 0 });
  });
});

// REPORT

describe('reconstruction report', () => {
  it('is pending until reconstruction runs', () => {
    // Arrange
    const h = (harness = new Harness({ rootDir: kubeletDir(['pod1uid/volumes/fake-plugin/vol-a']) }));

    // Act
    const report = h.vm.getReconstructionReport();

    // Assert
    expect(report).toEqual({ state: 'pending', startedAt: null, finishedAt: null, error: null, entries: [] });
  });

  it('records every scanned entry as reconstructed or failed with its reason, stamped with the scan time', async () => {
    // Arrange
    const root = kubeletDir([
      'pod1/volumes/fake-plugin/pvc-abcdef',
      'pod2/volumes/fake-plugin/pvc-abcdef',
      'pod3/volumeDevices/fake-plugin/blk',
      'pod4/volumes/missing-plugin/lost',
    ]);
    const h = (harness = new Harness({ rootDir: root, controllerAttachDetachEnabled: true }));
    await h.clock.advance(5_000);
    const now = h.clock.now();

    // Act
    await h.reconciler.reconstructVolumes();

    // Assert
    const report = h.vm.getReconstructionReport();
    expect(report).toMatchObject({ state: 'done', startedAt: now, finishedAt: now, error: null });
    const entry = (
      pod: string,
      dir: string,
      plugin: string,
      name: string,
      mode: VolumeMode,
      volumeName: string | null,
      outcome: ReconstructionEntry['outcome'],
      error: string | null,
    ): ReconstructionEntry => ({
        podName: uniquePodName(pod),
        volumeSpecName: name,
        pluginName: pluginName(plugin),
        volumeMode: mode,
        volumePath: join(root, 'pods', pod, dir, plugin, name),
        volumeName: volumeName === null ? null : uniqueVolumeName(volumeName),
        outcome,
        error,
        keptBecause: null,
      scannedAt: now,
      resolvedAt: null,
    });
    expect([...report.entries].sort((a, b) => a.volumePath.localeCompare(b.volumePath))).toEqual([
      entry('pod1', 'volumes', 'fake-plugin', 'pvc-abcdef', 'Filesystem', 'fake-plugin/pvc-abcdef', 'reconstructed', null),
      entry('pod2', 'volumes', 'fake-plugin', 'pvc-abcdef', 'Filesystem', 'fake-plugin/pvc-abcdef', 'reconstructed', null),
      entry('pod3', 'volumeDevices', 'fake-plugin', 'blk', 'Block', 'fake-plugin/blk', 'reconstructed', null),
      entry('pod4', 'volumes', 'missing-plugin', 'lost', 'Filesystem', null, 'failed', 'no volume plugin matched name: missing-plugin'),
    ]);
  });

  it('follows each entry to confirmed-mounted or cleaned-up, stamped with the time the operation finished', async () => {
    // Arrange
    const root = kubeletDir([
      'pod1uid/volumes/fake-plugin/vol-a', // desired: remounted → confirmed-mounted
      'pod2uid/volumes/fake-plugin/vol-b', // not desired: torn down → cleaned-up
      'pod3uid/volumes/missing-plugin/vol-c', // failed; its cleanup cannot start → stays failed
      'pod4uid/volumes/fake-plugin/vol-d', // failed; not desired: cleanup TearDown → cleaned-up
      'pod5uid/volumes/fake-plugin/vol-e', // failed; still desired: mounted normally → confirmed-mounted
    ]);
    const metrics = metricsSpy();
    const h = (harness = new Harness({ rootDir: root, hostFs: syncHostFs, controllerAttachDetachEnabled: false, metrics }));
    h.plugin.constructVolumeSpecHook = (name) =>
      name === 'vol-d' || name === 'vol-e'
        ? Promise.reject(new Error(`cannot read vol_data.json of ${name}`))
        : Promise.resolve({ spec: specFromVolume({ name }), seLinuxMountContext: '' });
    h.kube.setVolumesAttached([
      { name: 'fake-plugin/vol-a', devicePath: '/dev/sdb' },
      { name: 'fake-plugin/vol-b', devicePath: '/dev/sdc' },
    ]);
    h.pods.add(makePod([gcePdVolume('vol-a', 'vol-a')]));
    h.pods.add(makePod([gcePdVolume('vol-e', 'vol-e')], { name: 'pod5', uid: 'pod5uid' }));

    // Act
    const startedAt = h.clock.now();
    h.start();
    await h.until(() => h.vm.getReconstructionReport().entries.filter((e) => e.resolvedAt !== null).length === 4);

    // Assert
    const report = h.vm.getReconstructionReport();
    const finished = (operationName: string, volume: string, pod: string): number | undefined =>
      h.records.find((r) => r.operationName === operationName && r.volume === volume && r.pod === pod && r.outcome === 'success')?.finishedAt;
    const summary = [...report.entries]
      .sort((a, b) => a.podName.localeCompare(b.podName))
      .map((e) => ({ pod: e.podName, volumeName: e.volumeName, outcome: e.outcome, error: e.error, resolvedAt: e.resolvedAt }));
    expect(summary).toEqual([
      { pod: 'pod1uid', volumeName: 'fake-plugin/vol-a', outcome: 'confirmed-mounted', error: null, resolvedAt: finished('volume_mount', 'fake-plugin/vol-a', '') },
      { pod: 'pod2uid', volumeName: 'fake-plugin/vol-b', outcome: 'cleaned-up', error: null, resolvedAt: finished('volume_unmount', 'fake-plugin/vol-b', 'pod2uid') },
      { pod: 'pod3uid', volumeName: null, outcome: 'failed', error: 'no volume plugin matched name: missing-plugin', resolvedAt: null },
      { pod: 'pod4uid', volumeName: null, outcome: 'cleaned-up', error: 'cannot read vol_data.json of vol-d', resolvedAt: finished('volume_unmount', 'vol-d', 'pod4uid') },
      { pod: 'pod5uid', volumeName: null, outcome: 'confirmed-mounted', error: 'cannot read vol_data.json of vol-e', resolvedAt: finished('volume_mount', 'fake-plugin/vol-e', '') },
    ]);
    expect(report).toMatchObject({ state: 'done', startedAt: startedAt, finishedAt: startedAt, error: null });
    for (const e of report.entries) {
      expect(e.scannedAt).toBe(startedAt);
      // Nothing is confirmed or cleaned up before the populator's first loop (one period later).
      if (e.resolvedAt !== null) expect(e.resolvedAt).toBeGreaterThanOrEqual(startedAt + 100);
    }
    // vol-b and vol-d were torn down, vol-e (desired) was not.
    expect(h.plugin.counts.tearDown).toBe(2);
    expect(metrics).toMatchObject({ reconstructTotal: 5, reconstructErrors: 3, forceCleanedTotal: 2, forceCleanedErrors: 1 });
  });

  it('records why reconstruction was skipped when pods/ cannot be read, and the reconciler still syncs', async () => {
    // Arrange: a kubelet root without pods/
    const root = kubeletDir([]);
    rmSync(join(root, 'pods'), { recursive: true });
    const h = (harness = new Harness({ rootDir: root, controllerAttachDetachEnabled: true }));

    // Act
    h.start();
    await h.until(() => h.vm.reconcilerStatesHasBeenSynced(), 1_000);

    // Assert
    const report = h.vm.getReconstructionReport();
    const podsDir = join(root, 'pods');
    expect(report).toMatchObject({ state: 'done', entries: [] });
    expect(report.error).toBe(`failed to read pods dir "${podsDir}": ENOENT: no such file or directory, scandir '${podsDir}'`);
    expect(report.finishedAt).not.toBeNull();
  });
});

// RESTART DURING API TROUBLE (kubernetes#120150)

describe('restart while a listed pod’s volumes cannot be resolved (kubernetes#120150)', () => {
  const volume = uniqueVolumeName('fake-plugin/pvname');
  const claimVolume = { name: 'data', persistentVolumeClaim: { claimName: 'pvc' } };

  /**
   * After a restart: `pod1uid/volumes/fake-plugin/pvname` on disk (PV `pvname` bound to claim
   * `default/pvc`), pod1 listed by its source, node status readable (so unmounts are allowed as
   * soon as the populator's first loop ran).
   */
  function restarted(extraDirs: readonly string[] = []): Harness {
    const root = kubeletDir(['pod1uid/volumes/fake-plugin/pvname', ...extraDirs]);
    const h = (harness = new Harness({ rootDir: root, controllerAttachDetachEnabled: false }));
    const { pv, pvc } = pvWithClaim('pvname');
    h.kube.pvs.set(pv.metadata.name, pv);
    h.kube.pvcs.set('default/pvc', pvc);
    h.kube.setVolumesAttached([{ name: volume, devicePath: '/dev/sdb' }]);
    h.pods.add(makePod([claimVolume]));
    return h;
  }

  function entryOf(h: Harness, volumeSpecName = 'pvname'): ReconstructionEntry | undefined {
    return h.vm.getReconstructionReport().entries.find((e) => e.podName === pod1 && e.volumeSpecName === volumeSpecName);
  }

  /** Lets the populator's first loop run and the reconciler pass for 3 s of fake time. */
  async function passesAfterFirstLoop(h: Harness): Promise<void> {
    await h.until(() => h.populator.hasAddedPods() && h.vm.reconcilerStatesHasBeenSynced());
    const passes = h.reconciler.passCount();
    await h.clock.advance(3_000);
    expect(h.reconciler.passCount()).toBeGreaterThan(passes + 10);
  }

  it.each([
    { name: 'a 500 of the claim GET', fail: (h: Harness) => (h.kube.claimGetError = new Error('the server has received too many requests (500): etcdserver: request timed out')), reason: 'failed to fetch PVC from API server: the server has received too many requests (500): etcdserver: request timed out' },
    { name: 'a claim GET that timed out', fail: (h: Harness) => (h.kube.claimGetError = new Error('context deadline exceeded')), reason: 'failed to fetch PVC from API server: context deadline exceeded' },
    { name: 'a 403 of the claim GET', fail: (h: Harness) => (h.kube.claimGetError = new Error('persistentvolumeclaims "pvc" is forbidden: User "system:node:mynodename" cannot get resource')), reason: 'failed to fetch PVC from API server: persistentvolumeclaims "pvc" is forbidden' },
    { name: 'a PV that is missing (a deleted or invalid PV file of the manifest source)', fail: (h: Harness) => h.kube.pvs.delete('pvname'), reason: 'failed to fetch PV pvname from API server: persistentvolumes "pvname" not found' },
  ])('unmountVolumes keeps the reconstructed mount uncertain with the reason while $name fails, then confirms it mounted', async ({ fail, reason }) => {
    // Arrange
    const h = restarted();
    const { pv } = pvWithClaim('pvname');
    fail(h);

    // Act
    h.start();
    await passesAfterFirstLoop(h);

    // Assert: nothing torn down; the entry stays open and uncertain, and says why.
    expect(h.plugin.counts).toMatchObject({ tearDown: 0, unmountDevice: 0, detach: 0 });
    expect(h.asw.getVolumeMountState(volume, pod1)).toBe('VolumeMountUncertain');
    expect(h.asw.isVolumeReconstructed(volume, pod1)).toBe(true);
    expect(entryOf(h)).toMatchObject({ outcome: 'reconstructed', resolvedAt: null });
    expect(entryOf(h)?.keptBecause).toContain(`data: error processing PVC default/pvc: ${reason}`);
    expect(h.vm.getPodErrors().get(pod1)?.join('\n')).toContain(reason);
    expect(h.vm.getPodsWithUnresolvedVolumes().get(pod1)).toContain(reason);

    // Act: the claim resolves.
    h.kube.claimGetError = null;
    h.kube.pvs.set(pv.metadata.name, pv);
    await h.until(() => entryOf(h)?.outcome === 'confirmed-mounted');

    // Assert: confirmed by a mount, never unmounted.
    expect(h.asw.getVolumeMountState(volume, pod1)).toBe('VolumeMounted');
    expect(entryOf(h)?.keptBecause).toBeNull();
    expect(h.vm.getPodsWithUnresolvedVolumes().size).toBe(0);
    expect(h.plugin.counts).toMatchObject({ tearDown: 0, unmountDevice: 0, detach: 0 });
    expect(h.records.filter((r) => r.operationName === 'volume_unmount')).toEqual([]);
  });

  it.each([
    { name: 'gone from its source', release: (h: Harness) => { h.pods.delete('pod1uid'); } },
    { name: 'terminated (its runtime may be removed) while still listed', release: (h: Harness) => { h.pods.removed.add('pod1uid'); } },
  ])('findAndRemoveDeletedPods releases the kept mount once the pod is $name', async ({ release }) => {
    // Arrange
    const h = restarted();
    h.kube.claimGetError = new Error('context deadline exceeded');
    h.start();
    await passesAfterFirstLoop(h);
    expect(h.plugin.counts.tearDown).toBe(0);

    // Act
    release(h);
    await h.until(() => entryOf(h)?.outcome === 'cleaned-up');

    // Assert
    expect(h.plugin.counts.tearDown).toBe(1);
    expect(h.vm.getPodsWithUnresolvedVolumes().size).toBe(0);
    expect(entryOf(h)?.keptBecause).toBeNull();
  });

  it('a pod that is only terminating (containers may still run) keeps its mount', async () => {
    // Arrange
    const h = restarted();
    h.kube.claimGetError = new Error('context deadline exceeded');
    h.start();
    await passesAfterFirstLoop(h);

    // Act: the pod's containers must stop, but its runtime is not removed yet.
    h.pods.terminating.add('pod1uid');
    await h.clock.advance(3_000);

    // Assert
    expect(h.plugin.counts.tearDown).toBe(0);
    expect(entryOf(h)?.keptBecause).toContain('context deadline exceeded');
  });

  it('cleanOrphanVolumes keeps a failed reconstruction of such a pod until the pod is gone, then cleans it up', async () => {
    // Arrange: a second volume of pod1 that cannot be reconstructed (e.g. unreadable vol_data.json).
    const h = restarted(['pod1uid/volumes/fake-plugin/broken']);
    h.plugin.constructVolumeSpecHook = (name) =>
      name === 'broken' ? Promise.reject(new Error('cannot read vol_data.json of broken')) : Promise.resolve({ spec: specFromVolume({ name, gcePersistentDisk: { pdName: name } }), seLinuxMountContext: '' });
    h.kube.claimGetError = new Error('the server could not find the requested resource (403)');

    // Act
    h.start();
    await passesAfterFirstLoop(h);

    // Assert: neither the reconstructed nor the failed volume is touched; the failed one waits.
    expect(h.plugin.counts.tearDown).toBe(0);
    expect(h.reconciler.getVolumesFailedReconstruction().map((v) => v.volumeSpecName)).toEqual(['broken']);
    expect(entryOf(h, 'broken')).toMatchObject({ outcome: 'failed', error: 'cannot read vol_data.json of broken' });
    expect(entryOf(h, 'broken')?.keptBecause).toContain('(403)');

    // Act: the pod goes.
    h.pods.delete('pod1uid');
    await h.until(() => entryOf(h, 'broken')?.outcome === 'cleaned-up' && entryOf(h)?.outcome === 'cleaned-up');

    // Assert
    expect(h.plugin.counts.tearDown).toBe(2);
    expect(h.reconciler.getVolumesFailedReconstruction()).toEqual([]);
  });
});

// DEVICE-ONLY VOLUMES (beyond the kubelet: a plugin's global dirs, no pod dir)

describe('reconstructDeviceVolumes: volumes only a plugin’s global directories know of', () => {
  const pdName = 'pd-a';
  const vol = uniqueVolumeName(`fake-plugin/${pdName}`);

  function deviceOnly(h: Harness, root: string, attachState: 'attached' | 'uncertain'): void {
    h.plugin.deviceVolumesToReconstruct = [
      {
        spec: specFromVolume(gcePdVolume(pdName, pdName)),
        deviceMountPath: attachState === 'attached' ? join(root, 'plugins/fake-plugin', pdName, 'globalmount') : '',
        seLinuxMountContext: '',
        attachState,
      },
    ];
    h.plugin.attached.add(pdName);
  }

  const finishedOps = (h: Harness): string[][] => h.records.map((r) => [r.operationName, r.volume, r.outcome]);

  it('adds a staged device with no pod dir as attach-uncertain, device Uncertain, no pods, waiting for attachability', async () => {
    // Arrange
    const root = kubeletDir([]);
    const h = (harness = new Harness({ rootDir: root, withApiServer: false, controllerAttachDetachEnabled: false }));
    deviceOnly(h, root, 'attached');

    // Act
    await h.reconciler.reconstructVolumes();

    // Assert
    expect(h.reconciler.getVolumesNeedUpdateFromNodeStatus()).toEqual([vol]);
    expect(h.asw.getAllMountedVolumes()).toEqual([]);
    expect(h.asw.getDeviceMountState(vol)).toBe('DeviceMountUncertain');
    expect(h.asw.getAttachedVolume(vol)?.deviceMountPath).toBe(join(root, 'plugins/fake-plugin', pdName, 'globalmount'));
    expect(h.asw.getAttachability(vol)).toBe('Uncertain');
    expect(h.asw.isVolumeAttached(vol)).toBe(true);
  });

  it('standalone: a staged device no desired pod wants is unmounted (UnmountDevice), then detached', async () => {
    // Arrange
    const root = kubeletDir([]);
    const h = (harness = new Harness({ rootDir: root, withApiServer: false, controllerAttachDetachEnabled: false }));
    deviceOnly(h, root, 'attached');

    // Act
    h.start();
    await h.until(() => h.asw.getAttachedVolumes().length === 0 && noOperationRunning(h));

    // Assert: unstage first, then detach; nothing else.
    expect(finishedOps(h)).toEqual([
      ['unmount_device', vol, 'success'],
      ['volume_detach', vol, 'success'],
    ]);
    expect(h.plugin.counts).toMatchObject({ unmountDevice: 1, detach: 1, mountDevice: 0, attach: 0 });
    expect(h.plugin.attached.has(pdName)).toBe(false);
  });

  it('standalone: an attach intent alone (attach uncertain) reads as not attached and is detached without UnmountDevice', async () => {
    // Arrange
    const root = kubeletDir([]);
    const h = (harness = new Harness({ rootDir: root, withApiServer: false, controllerAttachDetachEnabled: false }));
    deviceOnly(h, root, 'uncertain');
    await h.reconciler.reconstructVolumes();
    expect(h.asw.isVolumeAttached(vol)).toBe(false);
    expect(h.asw.getDeviceMountState(vol)).toBe('DeviceNotMounted');

    // Act
    h.start();
    await h.until(() => h.asw.getAttachedVolumes().length === 0 && noOperationRunning(h));

    // Assert
    expect(finishedOps(h)).toEqual([['volume_detach', vol, 'success']]);
    expect(h.plugin.counts).toMatchObject({ unmountDevice: 0, detach: 1 });
    expect(h.plugin.attached.has(pdName)).toBe(false);
  });

  it.each([
    { attachState: 'attached' as const, attaches: 0 },
    { attachState: 'uncertain' as const, attaches: 1 },
  ])('a desired pod that wants a device-only volume ($attachState) gets it mounted, never unmounted or detached', async ({ attachState, attaches }) => {
    // Arrange
    const root = kubeletDir([]);
    const h = (harness = new Harness({ rootDir: root, withApiServer: false, controllerAttachDetachEnabled: false }));
    deviceOnly(h, root, attachState);
    h.pods.add(makePod([gcePdVolume('data', pdName)]));

    // Act
    h.start();
    await h.until(() => h.asw.getMountedVolumes().length === 1 && noOperationRunning(h));
    await h.clock.advance(1_000);

    // Assert: confirmed by a normal mount (MountDevice again: idempotent), attached again when uncertain.
    expect(h.asw.getDeviceMountState(vol)).toBe('DeviceGloballyMounted');
    expect(h.asw.isVolumeAttached(vol)).toBe(true);
    expect(h.plugin.counts).toMatchObject({ attach: attaches, mountDevice: 1, setUp: 1, unmountDevice: 0, detach: 0, tearDown: 0 });
    expect(h.plugin.attached.has(pdName)).toBe(true);
  });

  it('a volume a pod dir also refers to keeps its pod entry and is not added twice', async () => {
    // Arrange
    const root = kubeletDir([`pod1uid/volumes/fake-plugin/${pdName}`]);
    const h = (harness = new Harness({ rootDir: root, withApiServer: false, controllerAttachDetachEnabled: false }));
    deviceOnly(h, root, 'uncertain');

    // Act
    await h.reconciler.reconstructVolumes();

    // Assert: the pod's reconstruction wins (attached, device Uncertain from the pod's plugin path).
    expect(h.reconciler.getVolumesNeedUpdateFromNodeStatus()).toEqual([vol]);
    expect(h.asw.getAllMountedVolumes().map((m) => [m.volumeName, m.podName])).toEqual([[vol, pod1]]);
    expect(h.asw.isVolumeAttached(vol)).toBe(true);
  });

  it('plan-only mode does not add them: it predicts the kubelet, whose reconstruction reads pod dirs only', async () => {
    // Arrange
    const root = kubeletDir([]);
    const h = (harness = new Harness({ rootDir: root, planOnly: true, controllerAttachDetachEnabled: true }));
    deviceOnly(h, root, 'attached');

    // Act
    const refresh = await h.reconciler.refreshActualState();

    // Assert
    expect(refresh.added).toEqual([]);
    expect(h.asw.getAttachedVolumes()).toEqual([]);
  });

  it('with the attach/detach controller, a staged device listed in node status is unmounted and only marked detached', async () => {
    // Arrange
    const root = kubeletDir([]);
    const h = (harness = new Harness({ rootDir: root, withApiServer: true, controllerAttachDetachEnabled: true }));
    deviceOnly(h, root, 'attached');
    h.kube.setVolumesAttached([{ name: vol, devicePath: '/dev/sdb' }]);

    // Act
    h.start();
    await h.until(() => h.asw.getAttachedVolumes().length === 0 && noOperationRunning(h));

    // Assert
    expect(finishedOps(h)).toEqual([['unmount_device', vol, 'success']]);
    expect(h.plugin.counts).toMatchObject({ unmountDevice: 1, detach: 0 });
  });
});
