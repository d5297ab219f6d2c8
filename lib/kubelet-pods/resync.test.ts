import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake-clock.ts';
import { cleanUpTempDir, makeTempDir, writeLayout } from '../mount-utils/testing/mount-test-env.ts';
import type { MountLister } from '../mount-utils/mounter.ts';
import type { MountInfo } from '../mount-utils/mountinfo.ts';
import type { PendingOperationView } from '../operationexecutor/nested-pending-operations.ts';
import { EmptyUniquePodName, nodeName, pluginName, podUID, uniquePodName, uniqueVolumeName, type UniqueVolumeName } from '../volume/types.ts';
import type { ActualVolumeView } from '../volumemanager/cache/actual-state-of-world.ts';
import { gcePdVolume, Harness, makePod, syncHostFs } from '../volumemanager/testing/harness.ts';
import type { AttachVerificationResult } from '../volumemanager/volume-manager.ts';
import { runResync, type ResyncVolumeManager } from './resync.ts';

let dir: string;
let root: string;
let podsDir: string;

beforeEach(async () => {
  dir = await makeTempDir('volumescope-resync-');
  root = join(dir, 'kubelet');
  podsDir = join(root, 'pods');
  await mkdir(podsDir, { recursive: true });
});

afterEach(async () => {
  expect(await cleanUpTempDir(dir)).toEqual([]);
});

/** A mount table holding exactly `mountPoints` (a stand-in for the fresh mountinfo read). */
function mountTable(mountPoints: readonly string[]): MountLister {
  const entries: MountInfo[] = mountPoints.map((mountPoint, i) => ({
    id: 1000 + i,
    parentId: 1,
    major: 0,
    minor: 50 + i,
    root: '/',
    mountPoint,
    optionalFields: [],
    fsType: 'tmpfs',
    source: 'tmpfs',
    mountOptions: ['rw'],
    superOptions: ['rw'],
  }));
  return { list: () => Promise.resolve(entries) };
}

/** One actual-state volume of `plugin` with the given (pod uid, inner spec name) pairs. */
function actualVolume(volume: string, plugin: string, pods: { uid: string; name: string }[]): ActualVolumeView {
  return {
    volumeName: uniqueVolumeName(volume),
    pluginName: pluginName(plugin),
    attachability: 'False',
    devicePath: '',
    deviceMountState: 'DeviceNotMounted',
    deviceMountPath: '',
    persistentVolumeSize: null,
    volumeInUseErrorForExpansion: false,
    foundDuringReconstruction: false,
    foundDetached: false,
    pods: pods.map((p) => ({
      podName: uniquePodName(p.uid),
      podUID: podUID(p.uid),
      outerVolumeSpecName: p.name,
      innerVolumeSpecName: p.name,
      mountState: 'VolumeMounted',
      remountRequired: false,
      foundDuringReconstruction: false,
    })),
  };
}

/** A running operation on a pod's volume (`pod` set) or on a whole volume. */
function running(volume: string, pod?: string): PendingOperationView {
  return {
    key: { volumeName: uniqueVolumeName(volume), podName: pod === undefined ? EmptyUniquePodName : uniquePodName(pod), nodeName: nodeName('node-a') },
    operationName: pod === undefined ? 'volume_detach' : 'volume_unmount',
    pending: true,
    failures: 0,
    startedAt: 0,
    lastError: null,
    lastErrorTime: null,
    durationBeforeRetry: 0,
    retryAt: null,
  };
}

/** The volume manager's answers, set by each test. */
function stubVolumeManager(opts: { actual?: ActualVolumeView[]; pending?: PendingOperationView[]; verification?: Partial<AttachVerificationResult> } = {}): ResyncVolumeManager & { verifications: number } {
  const vm = {
    verifications: 0,
    getActualVolumes: () => opts.actual ?? [],
    getPendingOperations: () => opts.pending ?? [],
    verifyAttachedVolumes: (): Promise<AttachVerificationResult> => {
      vm.verifications++;
      return Promise.resolve({ startedAt: 0, finishedAt: 0, checked: [], foundDetached: [], errors: [], ...opts.verification });
    },
  };
  return vm;
}

const csi = 'kubernetes.io/csi';
const csiDir = 'kubernetes.io~csi';

describe('runResync', () => {
  it.each<{ name: string; disk: string[]; mounts: string[]; actual: ActualVolumeView[]; pending?: PendingOperationView[]; changes: string[] }>([
    {
      name: 'nothing differs when every volume directory and mount belongs to the actual state',
      disk: [`pod-a/volumes/${csiDir}/pvc-1/mount/`],
      mounts: [`pod-a/volumes/${csiDir}/pvc-1/mount`],
      actual: [actualVolume('csi/pvc-1', csi, [{ uid: 'pod-a', name: 'pvc-1' }])],
      changes: [],
    },
    {
      name: 'a volume directory on disk that is not in the actual state is reported',
      disk: [`pod-a/volumes/${csiDir}/pvc-1/`, 'pod-b/volumes/kubernetes.io~empty-dir/cache/'],
      mounts: [],
      actual: [actualVolume('csi/pvc-1', csi, [{ uid: 'pod-a', name: 'pvc-1' }])],
      changes: ['pods/pod-b/volumes/kubernetes.io~empty-dir/cache: volume directory on disk is not in the actual state of world'],
    },
    {
      name: 'a pod volume of the actual state whose directory is missing is reported',
      disk: [],
      mounts: [],
      actual: [actualVolume('csi/pvc-1', csi, [{ uid: 'pod-a', name: 'pvc-1' }])],
      changes: [`volume csi/pvc-1 of pod pod-a: in the actual state of world, but pods/pod-a/volumes/${csiDir}/pvc-1 is missing`],
    },
    {
      name: 'a mount point below pods/ outside every known volume directory is reported, one outside pods/ is not',
      disk: [`pod-a/volumes/${csiDir}/pvc-1/`, 'pod-b/leaked/'],
      mounts: ['pod-b/leaked', '../plugins/kubernetes.io/csi/staging'],
      actual: [actualVolume('csi/pvc-1', csi, [{ uid: 'pod-a', name: 'pvc-1' }])],
      changes: ['mount point {pods}/pod-b/leaked is not in the actual state of world'],
    },
    {
      name: 'a mount in a directory that is on disk but not in the actual state is reported with it',
      disk: ['pod-b/volumes/kubernetes.io~empty-dir/cache/'],
      mounts: ['pod-b/volumes/kubernetes.io~empty-dir/cache'],
      actual: [],
      changes: [
        'pods/pod-b/volumes/kubernetes.io~empty-dir/cache: volume directory on disk is not in the actual state of world',
        'mount point {pods}/pod-b/volumes/kubernetes.io~empty-dir/cache is not in the actual state of world',
      ],
    },
    {
      name: 'a pod with an operation running is skipped: its directories and mounts are in flux',
      disk: ['pod-b/volumes/kubernetes.io~empty-dir/cache/'],
      mounts: ['pod-b/volumes/kubernetes.io~empty-dir/cache'],
      actual: [actualVolume('csi/pvc-1', csi, [{ uid: 'pod-b', name: 'pvc-1' }])],
      pending: [running('csi/pvc-1', 'pod-b')],
      changes: [],
    },
    {
      name: 'a volume with an operation running is skipped in every pod',
      disk: [],
      mounts: [],
      actual: [actualVolume('csi/pvc-1', csi, [{ uid: 'pod-a', name: 'pvc-1' }, { uid: 'pod-b', name: 'pvc-1' }])],
      pending: [running('csi/pvc-1')],
      changes: [],
    },
  ])('$name', async ({ disk, mounts, actual, pending = [], changes }) => {
    // Arrange
    await writeLayout(podsDir, disk);
    const vm = stubVolumeManager({ actual, pending });

    // Act
    const findings = await runResync({ rootDir: root, volumeManager: vm, mounter: mountTable(mounts.map((m) => join(podsDir, m))), clock: new FakeClock() });

    // Assert
    expect(findings.changes).toEqual(changes.map((c) => c.replaceAll('{pods}', podsDir)));
    expect(findings.rescanned).toEqual({ volumes: disk.filter((d) => d.includes('/volumes/')).length, mountPoints: mounts.length });
    expect(vm.verifications).toBe(1);
  });

  it('reports what the attach verification found and when it ran', async () => {
    // Arrange
    const clock = new FakeClock(5_000);
    const detached = uniqueVolumeName('fake-plugin/fake-device1');
    const checked: UniqueVolumeName[] = [detached, uniqueVolumeName('fake-plugin/fake-device2')];
    const vm = stubVolumeManager({ verification: { checked, foundDetached: [detached], errors: ['fake-plugin: VolumesAreAttached failed'] } });

    // Act
    const findings = await runResync({ rootDir: root, volumeManager: vm, mounter: mountTable([]), clock });

    // Assert
    expect(findings).toEqual({
      startedAt: 5_000,
      finishedAt: 5_000,
      rescanned: { volumes: 0, mountPoints: 0 },
      attachVerification: { checked: [...checked], foundDetached: [detached], errors: ['fake-plugin: VolumesAreAttached failed'] },
      changes: [
        'volume fake-plugin/fake-device1: found detached; its pods stay in the actual state of world (uncertain) until they are torn down, or mounted again once it is attached again',
        'attach verification: fake-plugin: VolumesAreAttached failed',
      ],
    });
  });

  it('reports a pods/ directory it cannot read as a change and still verifies attachments', async () => {
    // Arrange
    const vm = stubVolumeManager();
    const unreadable = { readDir: () => Promise.reject(new Error('EACCES: permission denied')) };

    // Act
    const findings = await runResync({ rootDir: root, volumeManager: vm, mounter: mountTable([]), clock: new FakeClock(), hostFs: unreadable });

    // Assert
    expect(findings.changes).toEqual([`cannot rescan volume directories: failed to read pods dir "${podsDir}": EACCES: permission denied`]);
    expect(vm.verifications).toBe(1);
  });

  it('compares with a real volume manager: a mounted volume matches its directory, and is reported once the directory goes', async () => {
    // Arrange: the fake plugin mounts pod1's inline PD; the test makes its directory.
    const h = new Harness({ rootDir: root, hostFs: syncHostFs });
    h.pods.add(makePod([gcePdVolume()]));
    h.start();
    await h.until(() => h.asw.getMountedVolumes().length === 1);
    const volumeDir = join(podsDir, 'pod1uid', 'volumes', 'fake-plugin', 'volume-name');
    await mkdir(volumeDir, { recursive: true });
    const deps = { rootDir: root, volumeManager: h.vm, mounter: mountTable([]), clock: h.clock, hostFs: syncHostFs };

    // Act
    const before = await h.settle(runResync(deps));
    await h.close();
    await rm(volumeDir, { recursive: true });
    const after = await runResync(deps);

    // Assert
    expect(before.result).toMatchObject({ status: 'fulfilled', value: { changes: [], rescanned: { volumes: 1, mountPoints: 0 }, attachVerification: { checked: ['fake-plugin/fake-device1'] } } });
    expect(after.changes).toEqual(['volume fake-plugin/fake-device1 of pod pod1uid: in the actual state of world, but pods/pod1uid/volumes/fake-plugin/volume-name is missing']);
  });
});
