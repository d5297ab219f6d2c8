/**
 * The operation executor (kubernetes/kubernetes pkg/volume/util/operationexecutor@v1.34): operation
 * keys and names per call, conflicts and backoff (scenarios 38–40, from its operation_executor_test.go), the OperationRecord of every finished operation, the kubelet's
 * events, and the batched attach verification.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Pod, PersistentVolume, Volume } from '../volume/k8s-types.ts';
import { specFromPersistentVolume, specFromVolume, type Spec } from '../volume/spec.ts';
import { FailOnSetupVolumeName, FailVolumeExpansion, FakeFileVolumePlugin, FakeVolumePlugin } from '../volume/testing/fake-volume-plugin.ts';
import { EmptyNodeName, EmptyUniquePodName, podUID, uniquePodName, uniqueVolumeName, type UniqueVolumeName } from '../volume/types.ts';
import { formatGoDuration, formatGoTime, goQuote } from '../volume/util/go-format.ts';
import { gcePdVolume, Harness, makePod, pvWithClaim, testNodeName, type HarnessOptions } from '../volumemanager/testing/harness.ts';
import { isExponentialBackoff, type ExponentialBackoffError } from './exponential-backoff.ts';
import { AlreadyExistsError, isAlreadyExists } from './nested-pending-operations.ts';
import type { AttachedVolume, MountedVolume, VolumeToMount } from './types.ts';

// HELPERS

let harness: Harness | undefined;

afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

function newHarness(opts: HarnessOptions = {}): Harness {
  harness = new Harness(opts);
  return harness;
}

const pod1 = uniquePodName('pod1uid');
const pod2 = uniquePodName('pod2uid');
const device1 = uniqueVolumeName('fake-plugin/fake-device1');

/** Adds (pod, spec) to the desired state and returns the VolumeToMount the reconciler would hand over. */
function desire(h: Harness, pod: Pod, spec: Spec, outerName: string): VolumeToMount {
  const podName = uniquePodName(pod.metadata.uid ?? '');
  h.dsw.addPodToVolume(podName, pod, spec, outerName, '', []);
  const vtm = h.dsw.getVolumesToMount().find((v) => v.podName === podName && v.outerVolumeSpecName === outerName);
  if (vtm === undefined) throw new Error(`no VolumeToMount for ${outerName}`);
  return vtm;
}

/** Records the pod's volume as mounted in the actual state and returns its MountedVolume. */
function mountedInAsw(h: Harness, vtm: VolumeToMount): MountedVolume {
  h.asw.markVolumeAsAttached(vtm.volumeName, vtm.volumeSpec, testNodeName, '/dev/sdb');
  h.asw.markVolumeAsMounted({
    podName: vtm.podName,
    podUID: podUID(vtm.podName),
    volumeName: vtm.volumeName,
    mounter: null,
    blockVolumeMapper: null,
    outerVolumeSpecName: vtm.outerVolumeSpecName,
    volumeGidValue: '',
    volumeSpec: vtm.volumeSpec,
    volumeMountState: 'VolumeMounted',
    seLinuxMountContext: '',
  });
  const mv = h.asw.getAllMountedVolumes().find((m) => m.podName === vtm.podName && m.volumeName === vtm.volumeName);
  if (mv === undefined) throw new Error('not mounted');
  return mv;
}

/** Records the volume attached with its device globally mounted and returns its AttachedVolume. */
function globallyMounted(h: Harness, volumeName: UniqueVolumeName, spec: Spec): AttachedVolume {
  h.asw.markVolumeAsAttached(volumeName, spec, testNodeName, '/dev/sdb');
  h.asw.markDeviceAsMounted(volumeName, '/dev/sdb', '/var/lib/kubelet/plugins/fake-plugin/mounts/x', '');
  const av = h.asw.getAttachedVolume(volumeName);
  if (av === null) throw new Error('not attached');
  return av;
}

function noOperationRunning(h: Harness): boolean {
  return h.pendingOperations.list().every((o) => !o.pending);
}

function thrownBy(fn: () => void): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve: (value: T) => void = () => undefined;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

function pv(name: string, opts: Parameters<typeof pvWithClaim>[1] = {}): PersistentVolume {
  return pvWithClaim(name, opts).pv;
}

const gcePdPod = (name = 'pod1', uid = 'pod1uid'): Pod => makePod([gcePdVolume()], { name, uid });

// OPERATION KEYS

interface KeyCase {
  name: string;
  plugins?: 'file';
  start: (h: Harness) => void;
  key: { volumeName: string; podName: string; nodeName: string };
  operationName: string;
}

const rwo = pv('pv-rwo', { gcePd: 'disk-rwo' });
const rwx = pv('pv-rwx', { gcePd: 'disk-rwx', accessModes: ['ReadWriteMany'] });
const blockPv = pv('pv-blk', { gcePd: 'disk-blk', mode: 'Block' });

describe('operation keys (operation_executor.go)', () => {
  it.each<KeyCase>([
    {
      name: 'AttachVolume of a RWO PV is keyed by volume only',
      start: (h) => {
        h.operationExecutor.attachVolume({ volumeName: uniqueVolumeName('fake-plugin/disk-rwo'), volumeSpec: specFromPersistentVolume(rwo), nodeName: testNodeName, scheduledPods: [gcePdPod()] }, h.asw);
      },
      key: { volumeName: 'fake-plugin/disk-rwo', podName: '', nodeName: '' },
      operationName: 'volume_attach',
    },
    {
      name: 'AttachVolume of a RWX PV is keyed by volume and node',
      start: (h) => {
        h.operationExecutor.attachVolume({ volumeName: uniqueVolumeName('fake-plugin/disk-rwx'), volumeSpec: specFromPersistentVolume(rwx), nodeName: testNodeName, scheduledPods: [gcePdPod()] }, h.asw);
      },
      key: { volumeName: 'fake-plugin/disk-rwx', podName: '', nodeName: 'mynodename' },
      operationName: 'volume_attach',
    },
    {
      name: 'AttachVolume of an inline GCE PD is keyed by volume and node (multi-attach allowed)',
      start: (h) => {
        h.operationExecutor.attachVolume({ volumeName: device1, volumeSpec: specFromVolume(gcePdVolume()), nodeName: testNodeName, scheduledPods: [gcePdPod()] }, h.asw);
      },
      key: { volumeName: 'fake-plugin/fake-device1', podName: '', nodeName: 'mynodename' },
      operationName: 'volume_attach',
    },
    {
      name: 'DetachVolume of a RWO PV is keyed by volume only',
      start: (h) => {
        const vol = uniqueVolumeName('fake-plugin/disk-rwo');
        h.asw.markVolumeAsAttached(vol, specFromPersistentVolume(rwo), testNodeName, '/dev/sdb');
        h.operationExecutor.detachVolume(h.asw.getAttachedVolume(vol) as AttachedVolume, h.asw);
      },
      key: { volumeName: 'fake-plugin/disk-rwo', podName: '', nodeName: '' },
      operationName: 'volume_detach',
    },
    {
      name: 'DetachVolume of a RWX PV is keyed by volume and node',
      start: (h) => {
        const vol = uniqueVolumeName('fake-plugin/disk-rwx');
        h.asw.markVolumeAsAttached(vol, specFromPersistentVolume(rwx), testNodeName, '/dev/sdb');
        h.operationExecutor.detachVolume(h.asw.getAttachedVolume(vol) as AttachedVolume, h.asw);
      },
      key: { volumeName: 'fake-plugin/disk-rwx', podName: '', nodeName: 'mynodename' },
      operationName: 'volume_detach',
    },
    {
      name: 'VerifyControllerAttachedVolume is keyed by volume only',
      start: (h) => {
        h.operationExecutor.verifyControllerAttachedVolume(desire(h, gcePdPod(), specFromVolume(gcePdVolume()), 'volume-name'), testNodeName, h.asw);
      },
      key: { volumeName: 'fake-plugin/fake-device1', podName: '', nodeName: '' },
      operationName: 'verify_controller_attached_volume',
    },
    {
      name: 'MountVolume of an attachable volume is keyed by volume only',
      start: (h) => {
        h.operationExecutor.mountVolume(1_000, desire(h, gcePdPod(), specFromVolume(gcePdVolume()), 'volume-name'), h.asw, false);
      },
      key: { volumeName: 'fake-plugin/fake-device1', podName: '', nodeName: '' },
      operationName: 'volume_mount',
    },
    {
      name: 'MountVolume of a block volume (map) is keyed by volume only',
      start: (h) => {
        h.operationExecutor.mountVolume(1_000, desire(h, gcePdPod(), specFromPersistentVolume(blockPv), 'data'), h.asw, false);
      },
      key: { volumeName: 'fake-plugin/disk-blk', podName: '', nodeName: '' },
      operationName: 'map_volume',
    },
    {
      name: 'MountVolume of a volume neither attachable nor device-mountable is keyed by volume and pod',
      plugins: 'file',
      start: (h) => {
        h.operationExecutor.mountVolume(1_000, desire(h, gcePdPod(), specFromVolume({ name: 'cache' }), 'cache'), h.asw, false);
      },
      key: { volumeName: 'fake-file-plugin/pod1uid-cache', podName: 'pod1uid', nodeName: '' },
      operationName: 'volume_mount',
    },
    {
      name: 'UnmountVolume is keyed by volume and pod',
      start: (h) => {
        h.operationExecutor.unmountVolume(mountedInAsw(h, desire(h, gcePdPod(), specFromVolume(gcePdVolume()), 'volume-name')), h.asw, '/var/lib/kubelet/pods');
      },
      key: { volumeName: 'fake-plugin/fake-device1', podName: 'pod1uid', nodeName: '' },
      operationName: 'volume_unmount',
    },
    {
      name: 'UnmountVolume of a block volume (unmap) is keyed by volume and pod',
      start: (h) => {
        h.operationExecutor.unmountVolume(mountedInAsw(h, desire(h, gcePdPod(), specFromPersistentVolume(blockPv), 'data')), h.asw, '/var/lib/kubelet/pods');
      },
      key: { volumeName: 'fake-plugin/disk-blk', podName: 'pod1uid', nodeName: '' },
      operationName: 'unmap_volume',
    },
    {
      name: 'UnmountDevice is keyed by volume only',
      start: (h) => {
        h.operationExecutor.unmountDevice(globallyMounted(h, device1, specFromVolume(gcePdVolume())), h.asw);
      },
      key: { volumeName: 'fake-plugin/fake-device1', podName: '', nodeName: '' },
      operationName: 'unmount_device',
    },
    {
      name: 'UnmountDevice of a block volume (unmap device) is keyed by volume only',
      start: (h) => {
        h.operationExecutor.unmountDevice(globallyMounted(h, uniqueVolumeName('fake-plugin/disk-blk'), specFromPersistentVolume(blockPv)), h.asw);
      },
      key: { volumeName: 'fake-plugin/disk-blk', podName: '', nodeName: '' },
      operationName: 'unmap_device',
    },
    {
      name: 'ExpandInUseVolume is keyed by volume only',
      start: (h) => {
        h.operationExecutor.expandInUseVolume(desire(h, gcePdPod(), specFromPersistentVolume(rwo), 'data'), h.asw, 1_000);
      },
      key: { volumeName: 'fake-plugin/disk-rwo', podName: '', nodeName: '' },
      operationName: 'volume_fs_resize',
    },
  ])('$name', ({ plugins, start, key, operationName }) => {
    // Arrange
    const h = newHarness(plugins === 'file' ? { plugins: [new FakeFileVolumePlugin()] } : {});

    // Act
    start(h);

    // Assert: the entry exists (and is pending) as soon as the call returns.
    expect(h.pendingOperations.list().map((o) => ({ key: o.key, operationName: o.operationName, pending: o.pending }))).toEqual([
      { key, operationName, pending: true },
    ]);
  });

  it('errors found while generating an operation are thrown synchronously and leave no entry, backoff or record', async () => {
    // Arrange
    const h = newHarness();
    const mv = mountedInAsw(h, desire(h, gcePdPod(), specFromVolume(gcePdVolume()), 'volume-name'));

    // Act
    const err = thrownBy(() => {
      h.operationExecutor.unmountVolume({ ...mv, pluginName: 'missing-plugin' as MountedVolume['pluginName'] }, h.asw, '/var/lib/kubelet/pods');
    });
    await h.clock.advance(1_000);

    // Assert
    expect((err as Error).message).toBe(
      'UnmountVolume.FindPluginByName failed for volume "volume-name" (UniqueName: "fake-plugin/fake-device1") pod "pod1uid" (UID: "pod1uid") : no volume plugin matched name: missing-plugin',
    );
    expect(h.pendingOperations.size()).toBe(0);
    expect(h.records).toEqual([]);
  });
});

// SCENARIOS 38–40

describe('executor behaviour (operation_executor_test.go)', () => {
  it('scenario 38: a second MountVolume of an attachable volume is refused while the first runs, even for another pod; unmounts of two pods run in parallel', async () => {
    // Arrange
    const h = newHarness();
    const vtm1 = desire(h, gcePdPod('pod1', 'pod1uid'), specFromVolume(gcePdVolume()), 'volume-name');
    const vtm2 = desire(h, gcePdPod('pod2', 'pod2uid'), specFromVolume(gcePdVolume()), 'volume-name');
    h.asw.markVolumeAsAttached(device1, vtm1.volumeSpec, testNodeName, '/dev/sdb');
    const gate = deferred<string>();
    h.plugin.waitForAttachHook = () => gate.promise;

    // Act
    h.operationExecutor.mountVolume(1_000, vtm1, h.asw, false);
    const second = thrownBy(() => {
      h.operationExecutor.mountVolume(1_000, vtm2, h.asw, false);
    });

    // Assert
    expect(second).toBeInstanceOf(AlreadyExistsError);
    expect((second as Error).message).toBe(
      'Failed to create operation with name {volumeName:fake-plugin/fake-device1 podName: nodeName:}. An operation with that name is already executing.',
    );
    expect(h.operationExecutor.isOperationPending(device1, pod2, EmptyNodeName)).toBe(true);

    // Arrange: finish the first mount, then mount the second pod.
    gate.resolve('/dev/sdb');
    await h.until(() => h.asw.getVolumeMountState(device1, pod1) === 'VolumeMounted');
    h.plugin.waitForAttachHook = null;
    h.operationExecutor.mountVolume(1_000, vtm2, h.asw, false);
    await h.until(() => h.asw.getVolumeMountState(device1, pod2) === 'VolumeMounted');
    const [mv1, mv2] = ['pod1uid', 'pod2uid'].map((p) => h.asw.getAllMountedVolumes().find((m) => m.podName === p) as MountedVolume);

    // Act
    h.operationExecutor.unmountVolume(mv1 as MountedVolume, h.asw, '/var/lib/kubelet/pods');
    h.operationExecutor.unmountVolume(mv2 as MountedVolume, h.asw, '/var/lib/kubelet/pods');
    const mountDuringUnmounts = thrownBy(() => {
      h.operationExecutor.mountVolume(1_000, vtm1, h.asw, false);
    });

    // Assert: both unmounts started; a volume-wide operation waits for them.
    expect(h.pendingOperations.list().map((o) => [o.key.podName, o.operationName, o.pending]).sort()).toEqual([
      ['pod1uid', 'volume_unmount', true],
      ['pod2uid', 'volume_unmount', true],
    ]);
    expect(isAlreadyExists(mountDuringUnmounts)).toBe(true);
    await h.until(() => noOperationRunning(h));
    expect(h.plugin.counts.tearDown).toBe(2);
    expect(h.asw.getAllMountedVolumes()).toEqual([]);
  });

  it('scenario 39: consecutive failures back off 0.5 s, 1 s, 2 s and 4 s; success clears the entry; another operation name resets the backoff', async () => {
    // Arrange
    const h = newHarness();
    const vtm = desire(h, gcePdPod(), specFromVolume(gcePdVolume()), 'volume-name');
    h.asw.markVolumeAsAttached(device1, vtm.volumeSpec, testNodeName, '/dev/sdb');
    let failing = true;
    h.plugin.waitForAttachHook = () => (failing ? Promise.reject(new Error('disk not ready')) : Promise.resolve('/dev/sdb'));
    const mount = (): void => {
      h.operationExecutor.mountVolume(1_000, vtm, h.asw, false);
    };
    const detailed = 'MountVolume.WaitForAttach failed for volume "volume-name" (UniqueName: "fake-plugin/fake-device1") pod "pod1" (UID: "pod1uid") : disk not ready';
    const key = '{volumeName:fake-plugin/fake-device1 podName: nodeName:}';

    for (const durationMs of [500, 1_000, 2_000, 4_000]) {
      // Act: one failing attempt
      mount();
      await h.until(() => noOperationRunning(h));
      const failedAt = h.records.at(-1)?.finishedAt ?? NaN;
      const refused = thrownBy(mount);

      // Assert: refused for exactly `durationMs` (a retry is allowed only strictly after it)
      expect(h.records.at(-1)).toMatchObject({ operationName: 'volume_mount', outcome: 'failure', error: detailed });
      expect(isExponentialBackoff(refused)).toBe(true);
      expect((refused as ExponentialBackoffError).durationBeforeRetry).toBe(durationMs);
      expect((refused as Error).message).toBe(
        `Failed to create operation with name "${key}". An operation with that name failed at ${formatGoTime(failedAt)}. ` +
          `No retries permitted until ${formatGoTime(failedAt + durationMs)} (${formatGoDuration(durationMs)}). Last error: ${goQuote(detailed)}.`,
      );
      await h.clock.advance(durationMs);
      expect(isExponentialBackoff(thrownBy(mount))).toBe(true);
      await h.clock.advance(1);
    }

    // Act: the fifth attempt succeeds
    failing = false;
    mount();
    await h.until(() => noOperationRunning(h));

    // Assert: the entry is gone
    expect(h.records.at(-1)).toMatchObject({ operationName: 'volume_mount', outcome: 'success' });
    expect(h.pendingOperations.size()).toBe(0);

    // Act: the next failure starts again at 0.5 s
    failing = true;
    mount();
    await h.until(() => noOperationRunning(h));

    // Assert
    expect(h.pendingOperations.list()).toMatchObject([{ operationName: 'volume_mount', failures: 1, durationBeforeRetry: 500 }]);

    // Act: another operation on the same key while the mount is in backoff (it fails: not reported in use)
    const verify = thrownBy(() => {
      h.operationExecutor.verifyControllerAttachedVolume(vtm, testNodeName, h.asw);
    });
    await h.until(() => noOperationRunning(h));

    // Assert: allowed, and its failure backs off from 0.5 s again instead of doubling
    expect(verify).toBeUndefined();
    expect(h.records.at(-1)).toMatchObject({
      operationName: 'verify_controller_attached_volume',
      outcome: 'failure',
      error: `Volume has not been added to the list of VolumesInUse in the node's volume status for volume "volume-name" (UniqueName: "fake-plugin/fake-device1") pod "pod1" (UID: "pod1uid") `,
    });
    expect(h.pendingOperations.list()).toMatchObject([
      { key: { volumeName: device1, podName: EmptyUniquePodName, nodeName: EmptyNodeName }, operationName: 'verify_controller_attached_volume', failures: 1, durationBeforeRetry: 500 },
    ]);
  });

  it('scenario 40: an undesired volume with an uncertain device and no pods gets UnmountDevice, retried after backoff and never detached in between', async () => {
    // Arrange: kubelet-managed attach, so a detach would be a real plugin call.
    const h = newHarness({ controllerAttachDetachEnabled: false });
    const spec = specFromVolume(gcePdVolume());
    h.asw.markVolumeAsAttached(device1, spec, testNodeName, '/dev/sdb');
    h.asw.markDeviceAsUncertain(device1, '/dev/sdb', '/var/lib/kubelet/plugins/fake-plugin/mounts/fake-device1', '');
    const attempts: number[] = [];
    h.plugin.unmountDeviceHook = () => {
      attempts.push(h.clock.now());
      return attempts.length <= 3 ? Promise.reject(new Error('device is busy')) : Promise.resolve();
    };

    // Act
    h.start();
    await h.until(() => attempts.length === 1 && noOperationRunning(h));

    // Assert: the failed UnmountDevice leaves the device uncertain and the volume attached
    expect(h.asw.getDeviceMountState(device1)).toBe('DeviceMountUncertain');
    expect(h.asw.volumeExists(device1)).toBe(true);
    expect(h.plugin.counts.detach).toBe(0);

    // Act
    await h.until(() => !h.asw.volumeExists(device1));

    // Assert: retried after 0.5 s, 1 s, 2 s (at the first pass after each window), then detached
    expect(attempts).toHaveLength(4);
    const gaps = attempts.slice(1).map((t, i) => t - (attempts[i] ?? NaN));
    expect(gaps.map((g, i) => g > 500 * 2 ** i && g <= 500 * 2 ** i + 100)).toEqual([true, true, true]);
    expect(h.records.map((r) => [r.operationName, r.outcome])).toEqual([
      ['unmount_device', 'failure'],
      ['unmount_device', 'failure'],
      ['unmount_device', 'failure'],
      ['unmount_device', 'success'],
      ['volume_detach', 'success'],
    ]);
    expect(h.records[0]?.error).toBe(
      'UnmountDevice failed for volume "volume-name" (UniqueName: "fake-plugin/fake-device1") on node "mynodename" : device is busy',
    );
    // Every call counts, the failed ones too (upstream's fake counts before its hook).
    expect(h.plugin.counts).toMatchObject({ unmountDevice: 4, detach: 1, tearDown: 0 });
  });
});

// OPERATION RECORDS

describe('OperationRecord', () => {
  it('is emitted once per finished operation with its key, plugin, outcome and times', async () => {
    // Arrange
    const h = newHarness();
    const vtm = desire(h, gcePdPod(), specFromVolume(gcePdVolume()), 'volume-name');
    h.asw.markVolumeAsAttached(device1, vtm.volumeSpec, testNodeName, '/dev/sdb');
    h.plugin.waitForAttachHook = () =>
      new Promise((resolve) => {
        h.clock.setTimeout(() => {
          resolve('/dev/sdb');
        }, 2_000);
      });
    const t0 = h.clock.now();

    // Act
    h.operationExecutor.mountVolume(1_000, vtm, h.asw, false);
    await h.until(() => h.records.length === 1);

    // Assert
    expect(h.records).toEqual([
      {
        operationName: 'volume_mount',
        volume: 'fake-plugin/fake-device1',
        pod: '',
        node: '',
        plugin: 'fake-plugin',
        migrated: false,
        generatedAt: t0,
        startedAt: t0,
        finishedAt: t0 + 2_000,
        outcome: 'success',
        error: null,
      },
    ]);
  });

  it('carries the detailed error of a failed operation and the pod key of an unmount', async () => {
    // Arrange
    const h = newHarness();
    const vol = uniqueVolumeName(`fake-plugin/${FailOnSetupVolumeName}`);
    const vtm = desire(h, makePod([gcePdVolume(FailOnSetupVolumeName, FailOnSetupVolumeName)]), specFromVolume(gcePdVolume(FailOnSetupVolumeName, FailOnSetupVolumeName)), FailOnSetupVolumeName);
    h.asw.markVolumeAsAttached(vol, vtm.volumeSpec, testNodeName, '/dev/sdb');

    // Act
    h.operationExecutor.mountVolume(1_000, vtm, h.asw, false);
    await h.until(() => h.records.length === 1);
    h.operationExecutor.unmountVolume(mountedInAsw(h, vtm), h.asw, '/var/lib/kubelet/pods');
    await h.until(() => h.records.length === 2);

    // Assert
    expect(h.records.map((r) => ({ operationName: r.operationName, volume: r.volume, pod: r.pod, outcome: r.outcome, error: r.error }))).toEqual([
      {
        operationName: 'volume_mount',
        volume: vol,
        pod: '',
        outcome: 'failure',
        error: `MountVolume.SetUp failed for volume "${FailOnSetupVolumeName}" (UniqueName: "${vol}") pod "pod1" (UID: "pod1uid") : mounting volume failed`,
      },
      { operationName: 'volume_unmount', volume: vol, pod: 'pod1uid', outcome: 'success', error: null },
    ]);
  });

  it('names a CSI volume plugin with its driver', async () => {
    // Arrange
    const csi = new FakeVolumePlugin({ name: 'kubernetes.io/csi' });
    const h = newHarness({ plugins: [csi], fakePlugin: csi });
    const volume: Volume = { name: 'data', csi: { driver: 'hostpath.csi.k8s.io' } };
    const vtm = desire(h, makePod([volume]), specFromVolume(volume), 'data');
    h.asw.markVolumeAsAttached(vtm.volumeName, vtm.volumeSpec, testNodeName, '');

    // Act
    h.operationExecutor.mountVolume(1_000, vtm, h.asw, false);
    await h.until(() => h.records.length === 1);

    // Assert
    expect(h.records[0]).toMatchObject({ volume: 'kubernetes.io/csi/hostpath.csi.k8s.io', plugin: 'kubernetes.io/csi:hostpath.csi.k8s.io', outcome: 'success' });
  });
});

// EVENTS

describe('events', () => {
  const podObject = (name: string, uid: string): { kind: 'Pod'; namespace: string; name: string; uid: string } => ({ kind: 'Pod', namespace: 'default', name, uid });

  it('a failed SetUp emits FailedMount on the pod with the simple message', async () => {
    // Arrange
    const h = newHarness();
    const volume = gcePdVolume(FailOnSetupVolumeName, FailOnSetupVolumeName);
    const vtm = desire(h, makePod([volume]), specFromVolume(volume), FailOnSetupVolumeName);
    h.asw.markVolumeAsAttached(vtm.volumeName, vtm.volumeSpec, testNodeName, '/dev/sdb');

    // Act
    h.operationExecutor.mountVolume(1_000, vtm, h.asw, false);
    await h.until(() => h.records.length === 1);

    // Assert
    expect(h.events).toEqual([
      { object: podObject('pod1', 'pod1uid'), type: 'Warning', reason: 'FailedMount', message: `MountVolume.SetUp failed for volume "${FailOnSetupVolumeName}" : mounting volume failed` },
    ]);
  });

  it.each([
    {
      name: 'a failed attach emits FailedAttachVolume to every scheduled pod',
      fail: true,
      type: 'Warning',
      reason: 'FailedAttachVolume',
      message: 'AttachVolume.Attach failed for volume "volume-name" : googleapi: Error 400: disk not found',
    },
    {
      name: 'a successful attach emits SuccessfulAttachVolume to every scheduled pod',
      fail: false,
      type: 'Normal',
      reason: 'SuccessfulAttachVolume',
      message: 'AttachVolume.Attach succeeded for volume "volume-name" ',
    },
  ])('$name', async ({ fail, type, reason, message }) => {
    // Arrange
    const h = newHarness();
    h.plugin.attachHook = () => (fail ? Promise.reject(new Error('googleapi: Error 400: disk not found')) : Promise.resolve('/dev/vdb-test'));

    // Act
    h.operationExecutor.attachVolume(
      { volumeName: device1, volumeSpec: specFromVolume(gcePdVolume()), nodeName: testNodeName, scheduledPods: [gcePdPod('pod1', 'pod1uid'), gcePdPod('pod2', 'pod2uid')] },
      h.asw,
    );
    await h.until(() => h.records.length === 1);

    // Assert
    expect(h.events).toEqual([
      { object: podObject('pod1', 'pod1uid'), type, reason, message },
      { object: podObject('pod2', 'pod2uid'), type, reason, message },
    ]);
    expect(h.asw.volumeExists(device1)).toBe(!fail);
  });

  it('a failed in-use expansion emits VolumeResizeFailed on the pod', async () => {
    // Arrange
    const h = newHarness();
    const { pv: failPv, pvc } = pvWithClaim(FailVolumeExpansion, { capacity: '15G', claimCapacity: '10G' });
    h.kube.pvcs.set('default/pvc', pvc);
    const vtm = desire(h, makePod([{ name: 'data', persistentVolumeClaim: { claimName: 'pvc' } }]), specFromPersistentVolume(failPv), 'data');

    // Act
    h.operationExecutor.expandInUseVolume(vtm, h.asw, 10_000_000_000);
    await h.until(() => h.records.length === 1);

    // Assert
    expect(h.plugin.counts.nodeExpand).toBe(1);
    expect(h.events).toEqual([
      {
        object: podObject('pod1', 'pod1uid'),
        type: 'Warning',
        reason: 'VolumeResizeFailed',
        message: `NodeExpandVolume.NodeExpandVolume failed for volume "${FailVolumeExpansion}" : fail volume expansion for volume: ${FailVolumeExpansion}`,
      },
    ]);
  });

  it('a full attach, mount, unmount, unmount-device and detach cycle emits only SuccessfulAttachVolume', async () => {
    // Arrange
    const h = newHarness({ controllerAttachDetachEnabled: false });
    h.pods.add(gcePdPod());
    h.start();
    await h.until(() => h.asw.getMountedVolumes().length === 1);

    // Act
    h.pods.delete('pod1uid');
    await h.until(() => !h.asw.volumeExists(device1));

    // Assert
    expect(h.plugin.counts).toMatchObject({ attach: 1, setUp: 1, tearDown: 1, unmountDevice: 1, detach: 1 });
    expect(h.events.map((e) => e.reason)).toEqual(['SuccessfulAttachVolume']);
  });
});

// BATCHED ATTACH VERIFICATION

describe('verifyVolumesAreAttached', () => {
  const pdIs = (prefix: string) => (spec: Spec): boolean => (spec.volume?.gcePersistentDisk?.pdName ?? '').startsWith(prefix);

  function twoPluginHarness(opts: HarnessOptions = {}): { h: Harness; fake: FakeVolumePlugin; other: FakeVolumePlugin } {
    const fake = new FakeVolumePlugin({ canSupport: pdIs('fake-') });
    const other = new FakeVolumePlugin({ name: 'other-plugin', canSupport: pdIs('other-') });
    return { h: newHarness({ ...opts, plugins: [fake, other], fakePlugin: fake }), fake, other };
  }

  const volumes = [gcePdVolume('vol-1', 'fake-device1'), gcePdVolume('vol-2', 'fake-device2'), gcePdVolume('vol-3', 'other-disk1')];

  it('makes one VolumesAreAttached call per plugin for all its volumes and marks only those reported detached', async () => {
    // Arrange
    const { h, fake, other } = twoPluginHarness();
    for (const v of volumes) {
      const spec = specFromVolume(v);
      const plugin = pdIs('fake-')(spec) ? fake : other;
      h.asw.markVolumeAsAttached('', spec, testNodeName, '/dev/sdb');
      plugin.attached.add(v.gcePersistentDisk?.pdName ?? '');
    }
    fake.forceDetach('fake-device2');
    const forgotten: UniqueVolumeName[] = [];
    const results: { checked: UniqueVolumeName[]; foundDetached: UniqueVolumeName[]; errors: string[] }[] = [];

    // Act
    h.operationExecutor.verifyVolumesAreAttached(h.asw.getAttachedVolumes(), testNodeName, { markVolumeAsFoundDetached: (v) => forgotten.push(v) }, (r) => {
      results.push(r);
    });
    await h.until(() => results.length === 1 && noOperationRunning(h));

    // Assert
    expect(fake.counts.volumesAreAttached).toBe(1);
    expect(other.counts.volumesAreAttached).toBe(1);
    const [result] = results;
    expect([...(result?.checked ?? [])].sort()).toEqual(['fake-plugin/fake-device1', 'fake-plugin/fake-device2', 'other-plugin/other-disk1']);
    expect(result?.foundDetached).toEqual(['fake-plugin/fake-device2']);
    expect(result?.errors).toEqual([]);
    expect(forgotten).toEqual(['fake-plugin/fake-device2']);
    expect(h.records).toMatchObject([{ operationName: 'verify_volumes_are_attached_per_node', volume: 'verify_volumes_are_attached/mynodename', outcome: 'success' }]);
  });

  it('runs under one per-node key, so a second verification is refused while the first runs', () => {
    // Deliberate deviation from operation_executor.go (upstream keys VerifyVolumesAreAttachedPerNode by ("", "", "")
    // so it never conflicts): VolumeScope verifies from the node agent on a timer and serialises runs.
    // Arrange
    const { h } = twoPluginHarness();
    const asw = { markVolumeAsFoundDetached: (): void => undefined };

    // Act
    h.operationExecutor.verifyVolumesAreAttached([], testNodeName, asw);
    const second = thrownBy(() => {
      h.operationExecutor.verifyVolumesAreAttached([], testNodeName, asw);
    });

    // Assert
    expect(h.pendingOperations.list().map((o) => ({ key: o.key, operationName: o.operationName }))).toEqual([
      { key: { volumeName: 'verify_volumes_are_attached/mynodename', podName: '', nodeName: '' }, operationName: 'verify_volumes_are_attached_per_node' },
    ]);
    expect(isAlreadyExists(second)).toBe(true);
  });

  it('volumes found detached are attached, device-mounted and set up again for the pods that still want them', async () => {
    // Arrange: kubelet-managed attach; one pod with three volumes on two plugins, all mounted
    const { h, fake, other } = twoPluginHarness({ controllerAttachDetachEnabled: false });
    h.pods.add(makePod(volumes));
    h.start();
    await h.until(() => h.asw.getMountedVolumes().length === 3);
    expect(fake.counts).toMatchObject({ attach: 2, mountDevice: 2, setUp: 2 });
    fake.forceDetach('fake-device2');

    // Act
    const { result } = await h.settle(h.vm.verifyAttachedVolumes());

    // Assert: one call per plugin; only fake-device2 found detached
    expect(result.status).toBe('fulfilled');
    const verification = (result as PromiseFulfilledResult<Awaited<ReturnType<typeof h.vm.verifyAttachedVolumes>>>).value;
    expect(verification.foundDetached).toEqual(['fake-plugin/fake-device2']);
    expect([...verification.checked].sort()).toEqual(['fake-plugin/fake-device1', 'fake-plugin/fake-device2', 'other-plugin/other-disk1']);
    expect(verification.errors).toEqual([]);
    expect(h.vm.getLastAttachVerification()).toEqual(verification);
    expect(fake.counts.volumesAreAttached).toBe(1);
    expect(other.counts.volumesAreAttached).toBe(1);

    // Act
    await h.until(() => fake.counts.setUp === 3 && h.asw.getMountedVolumes().length === 3);

    // Assert: attached, device-mounted and set up again; nothing was torn down
    expect(fake.counts).toMatchObject({ attach: 3, mountDevice: 3, setUp: 3, tearDown: 0, unmountDevice: 0, detach: 0 });
    expect(other.counts).toMatchObject({ attach: 1, mountDevice: 1, setUp: 1 });
    expect(fake.attached.has('fake-device2')).toBe(true);
    expect(h.asw.getVolumeMountState(uniqueVolumeName('fake-plugin/fake-device2'), pod1)).toBe('VolumeMounted');
  });

  it('verifyVolumesAreAttached → MarkVolumeAsDetached: a pod whose TearDown is failing keeps its entry; TearDown is retried, then UnmountDevice and Detach', async () => {
    // Arrange: kubelet-managed attach; pod1 mounted, then deleted while its TearDown fails
    const h = newHarness({ controllerAttachDetachEnabled: false });
    const fake = h.plugin;
    h.pods.add(makePod([gcePdVolume()]));
    h.start();
    await h.until(() => h.asw.getMountedVolumes().length === 1);
    fake.tearDownHook = () => Promise.reject(new Error('target is busy'));
    h.pods.delete('pod1uid');
    await h.until(() => h.records.some((r) => r.operationName === 'volume_unmount' && r.outcome === 'failure'));
    fake.forceDetach('fake-device1');

    // Act
    const { result } = await h.settle(h.vm.verifyAttachedVolumes());

    // Assert: found detached, but the pod entry (a mount still on the node) is kept, Uncertain
    expect(result).toMatchObject({ status: 'fulfilled', value: { foundDetached: [device1], errors: [] } });
    expect(h.asw.volumeExists(device1)).toBe(true);
    expect(h.asw.getAllMountedVolumes().map((m) => ({ pod: m.podName, state: m.volumeMountState }))).toEqual([
      { pod: pod1, state: 'VolumeMountUncertain' },
    ]);
    expect(h.asw.getDeviceMountState(device1)).toBe('DeviceMountUncertain');
    expect(fake.counts).toMatchObject({ unmountDevice: 0, detach: 0 });

    // Act: the TearDown succeeds on its next retry
    const tearDownsBefore = fake.counts.tearDown;
    fake.tearDownHook = null;
    await h.until(() => h.asw.getAttachedVolumes().length === 0 && noOperationRunning(h));

    // Assert: torn down, device unmounted, detached; never set up again
    expect(fake.counts.tearDown).toBeGreaterThan(tearDownsBefore);
    expect(fake.counts).toMatchObject({ attach: 1, setUp: 1, unmountDevice: 1, detach: 1 });
    expect(h.records.filter((r) => r.operationName === 'volume_unmount').at(-1)).toMatchObject({ pod: pod1, outcome: 'success' });
  });

  it('verifyVolumesAreAttached → MarkVolumeAsDetached: one volume, a desired pod set up again and a deleted pod with a pending TearDown torn down', async () => {
    // Arrange: kubelet-managed attach; pod1 and pod2 share the volume; pod2 is deleted and its TearDown fails
    const h = newHarness({ controllerAttachDetachEnabled: false });
    const fake = h.plugin;
    h.pods.add(makePod([gcePdVolume()]));
    h.pods.add(makePod([gcePdVolume()], { name: 'pod2', uid: 'pod2uid' }));
    h.start();
    await h.until(() => h.asw.getMountedVolumes().length === 2);
    fake.tearDownHook = (_name, uid) => (uid === 'pod2uid' ? Promise.reject(new Error('target is busy')) : Promise.resolve());
    h.pods.delete('pod2uid');
    await h.until(() => h.records.some((r) => r.operationName === 'volume_unmount' && r.pod === pod2 && r.outcome === 'failure'));
    fake.forceDetach('fake-device1');

    // Act
    const { result } = await h.settle(h.vm.verifyAttachedVolumes());
    expect(result).toMatchObject({ status: 'fulfilled', value: { foundDetached: [device1] } });
    await h.until(() => fake.attached.has('fake-device1') && h.asw.getVolumeMountState(device1, pod1) === 'VolumeMounted');

    // Assert: re-attached and set up again for pod1; pod2 keeps its entry while its TearDown fails
    expect(fake.counts).toMatchObject({ attach: 2, detach: 0, unmountDevice: 0 });
    expect(h.asw.getVolumeMountState(device1, pod2)).toBe('VolumeMountUncertain');

    // Act: pod2's TearDown succeeds on its next retry
    fake.tearDownHook = null;
    await h.until(() => h.asw.getVolumeMountState(device1, pod2) === 'VolumeNotMounted' && noOperationRunning(h));

    // Assert: pod2 torn down; pod1 still mounted on the attached volume
    expect(h.records.filter((r) => r.operationName === 'volume_unmount' && r.pod === pod2).at(-1)).toMatchObject({ outcome: 'success' });
    expect(h.asw.getVolumeMountState(device1, pod1)).toBe('VolumeMounted');
    expect(h.asw.isVolumeAttached(device1)).toBe(true);
    expect(fake.counts).toMatchObject({ detach: 0, unmountDevice: 0 });
  });

  it('verifyVolumesAreAttached → MarkVolumeAsDetached with controller attach/detach: a pod whose TearDown is failing is torn down later, then UnmountDevice and MarkVolumeAsDetached, never Detach', async () => {
    // Arrange: the controller attached the volume (node status); pod1 mounted, then deleted while its TearDown fails
    const h = newHarness({ controllerAttachDetachEnabled: true });
    const fake = h.plugin;
    h.kube.setVolumesAttached([{ name: device1, devicePath: '/dev/sdb' }]);
    fake.attached.add('fake-device1');
    h.pods.add(makePod([gcePdVolume()]));
    h.start();
    await h.until(() => h.dsw.getVolumesToMount().length === 1);
    h.vm.markVolumesAsReportedInUse([device1]);
    await h.until(() => h.asw.getMountedVolumes().length === 1);
    fake.tearDownHook = () => Promise.reject(new Error('target is busy'));
    h.pods.delete('pod1uid');
    await h.until(() => h.records.some((r) => r.operationName === 'volume_unmount' && r.outcome === 'failure'));
    fake.forceDetach('fake-device1');

    // Act
    const { result } = await h.settle(h.vm.verifyAttachedVolumes());

    // Assert: the entry stays
    expect(result).toMatchObject({ status: 'fulfilled', value: { foundDetached: [device1] } });
    expect(h.asw.getVolumeMountState(device1, pod1)).toBe('VolumeMountUncertain');
    expect(h.vm.volumeIsAttached(device1)).toBe(false);
    expect(h.vm.getVolumesInUse()).toEqual([device1]);

    // Act: the TearDown succeeds on its next retry
    fake.tearDownHook = null;
    await h.until(() => h.asw.getAttachedVolumes().length === 0 && noOperationRunning(h));

    // Assert
    expect(fake.counts).toMatchObject({ attach: 0, setUp: 1, unmountDevice: 1, detach: 0 });
    expect(h.records.map((r) => r.operationName)).not.toContain('volume_detach');
    expect(h.records.filter((r) => r.operationName === 'volume_unmount').at(-1)).toMatchObject({ pod: pod1, outcome: 'success' });
  });
});
