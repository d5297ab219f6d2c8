/**
 * Plan-only mode (docs/engine.md, "Plan-only mode"): the volume manager beside a real kubelet.
 * The desired state is populated as usual, the actual state is rebuilt from a kubelet root on
 * disk (temp dirs made with makeKubeletDir), and the reconciler's operations are planned, never
 * run. Every test also checks that nothing ran: no plugin call, no operation record, no event,
 * no pending operation.
 */
import { mkdirSync, readdirSync, realpathSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { recordingMounter } from '../mount-utils/testing/recording-mounter.ts';
import type { MountInfo } from '../mount-utils/mountinfo.ts';
import { isReadOnlyExecutorError } from '../operationexecutor/operation-executor.ts';
import type { PlannedOperation } from '../operationexecutor/planning-executor.ts';
import { EmptyDirPlugin } from '../volume/plugins/index.ts';
import { FakeVolumePlugin } from '../volume/testing/fake-volume-plugin.ts';
import { uniquePodName, uniqueVolumeName, type UniqueVolumeName } from '../volume/types.ts';
import type { HostFs } from '../volume/util/host-fs.ts';
import { gcePdVolume, Harness, makeKubeletDir, makePod, syncHostFs, type HarnessOptions } from './testing/harness.ts';
import { isPlanOnlyModeError, type ActualStateRefresh } from './index.ts';

// HELPERS

const tempDirs: string[] = [];
let harness: Harness | undefined;

afterEach(async () => {
  await harness?.close();
  harness = undefined;
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const pod1 = uniquePodName('pod1uid');
const pod2 = uniquePodName('pod2uid');
const volA = uniqueVolumeName('fake-plugin/vol-a');
const volB = uniqueVolumeName('fake-plugin/vol-b');
/** Pod volumes whose on-disk directory name reconstructs to the same unique name (`fake-plugin/<name>`). */
const diskA = gcePdVolume('vol-a', 'vol-a');
const diskB = gcePdVolume('vol-b', 'vol-b');

/** A plan-only harness over a kubelet root holding `volumePaths` under `pods/` (controller attach/detach on). */
function planHarness(volumePaths: readonly string[], opts: HarnessOptions = {}): Harness {
  const rootDir = makeKubeletDir(volumePaths);
  tempDirs.push(rootDir);
  harness = new Harness({ rootDir, planOnly: true, controllerAttachDetachEnabled: true, ...opts });
  return harness;
}

type PlanShape = Omit<PlannedOperation, 'firstPlannedAt' | 'lastPlannedAt'>;

/** The plan without its times. */
function plan(h: Harness): PlanShape[] {
  return h.vm.getPlannedOperations().map(({ firstPlannedAt: _f, lastPlannedAt: _l, ...rest }) => rest);
}

function op(
  operationName: string,
  volumeName: UniqueVolumeName,
  step: number,
  reason: PlannedOperation['reason'],
  state: PlannedOperation['state'],
  pod: { podName: typeof pod1; outer: string } | null = null,
  reconstructed = false,
): PlanShape {
  return {
    operationName,
    volumeName,
    podName: pod?.podName ?? null,
    podUid: pod === null ? null : (pod.podName as string as PlanShape['podUid']),
    outerVolumeSpecName: pod?.outer ?? null,
    reason,
    state,
    reconstructed,
    step,
  };
}

function firstPlannedAt(h: Harness): Record<string, number> {
  return Object.fromEntries(h.vm.getPlannedOperations().map((p) => [`${p.operationName} ${p.volumeName} ${p.podName ?? ''}`, p.firstPlannedAt]));
}

/** Every path below `root` with its kind, sorted: the disk as the test left it. */
function tree(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string, rel: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = rel === '' ? e.name : `${rel}/${e.name}`;
      out.push(`${e.isDirectory() ? 'd' : 'f'} ${path}`);
      if (e.isDirectory()) walk(join(dir, e.name), path);
    }
  };
  walk(root, '');
  return out.sort();
}

/** Nothing was run: no plugin call, no finished operation, no event, nothing in the operations table. */
function expectNothingRan(h: Harness): void {
  expect(Object.values(h.plugin.counts).every((n) => n === 0)).toBe(true);
  expect(h.records).toEqual([]);
  expect(h.events).toEqual([]);
  expect(h.vm.getPendingOperations()).toEqual([]);
}

async function refresh(h: Harness): Promise<ActualStateRefresh> {
  const { result } = await h.settle(h.vm.refreshActualState());
  if (result.status === 'rejected') throw result.reason instanceof Error ? result.reason : new Error(String(result.reason));
  return result.value;
}

/** A host fs that records every directory it lists. */
function recordingHostFs(): HostFs & { reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    readDir(path) {
      reads.push(path);
      return syncHostFs.readDir(path);
    },
  };
}

// NOTHING ON DISK

describe('plan-only mode: a desired pod with nothing on disk', () => {
  it.each([
    {
      name: 'controller attach/detach: verify_controller_attached_volume (waiting to be reported in use), then volume_mount',
      controllerAttachDetachEnabled: true,
      first: (v: UniqueVolumeName) => op('verify_controller_attached_volume', v, 1, 'awaiting-reported-in-use', 'VolumeNotAttached'),
    },
    {
      name: 'kubelet-managed attach: volume_attach, then volume_mount',
      controllerAttachDetachEnabled: false,
      first: (v: UniqueVolumeName) => op('volume_attach', v, 1, 'attach-required', 'VolumeNotAttached'),
    },
  ])('plans $name for both volumes, with firstPlannedAt stable across passes', async ({ controllerAttachDetachEnabled, first }) => {
    // Arrange
    const h = planHarness([], { controllerAttachDetachEnabled });
    h.pods.add(makePod([diskA, diskB]));

    // Act
    h.start();
    await h.until(() => h.vm.getPlannedOperations().length === 4);
    const planned = firstPlannedAt(h);
    const passes = h.reconciler.passCount();
    await h.clock.advance(10_000);

    // Assert
    expect(plan(h)).toEqual([
      first(volA),
      op('volume_mount', volA, 2, 'mount-required', 'VolumeNotMounted', { podName: pod1, outer: 'vol-a' }),
      first(volB),
      op('volume_mount', volB, 2, 'mount-required', 'VolumeNotMounted', { podName: pod1, outer: 'vol-b' }),
    ]);
    expect(h.reconciler.passCount()).toBeGreaterThan(passes + 50);
    expect(firstPlannedAt(h)).toEqual(planned);
    expectNothingRan(h);
  });

  it('keeps firstPlannedAt when the reason changes (reported in use) and moves lastPlannedAt at each refresh', async () => {
    // Arrange
    const h = planHarness([]);
    h.pods.add(makePod([diskA]));
    h.start();
    await h.until(() => h.vm.getPlannedOperations().length === 2);
    const planned = firstPlannedAt(h);
    await h.clock.advance(5_000);

    // Act: the kubelet reported the volume in node.status.volumesInUse
    h.vm.markVolumesAsReportedInUse([volA]);
    await h.until(() => plan(h)[0]?.reason === 'attach-verification-required');
    const afterReport = h.vm.getPlannedOperations().map((p) => p.lastPlannedAt);
    await h.clock.advance(5_000);
    const unchanged = h.vm.getPlannedOperations().map((p) => p.lastPlannedAt);
    const refreshedAt = h.clock.now();
    await refresh(h);
    await h.until(() => h.vm.getPlannedOperations().every((p) => p.lastPlannedAt >= refreshedAt));

    // Assert
    expect(plan(h).map((p) => [p.operationName, p.reason])).toEqual([
      ['verify_controller_attached_volume', 'attach-verification-required'],
      ['volume_mount', 'mount-required'],
    ]);
    expect(firstPlannedAt(h)).toEqual(planned);
    // No round ran while nothing changed; the refresh re-planned everything.
    expect(unchanged).toEqual(afterReport);
    expectNothingRan(h);
  });
});

// ON DISK

describe('plan-only mode: volumes on disk', () => {
  it('drops the plans of a volume once it appears on disk (refreshActualState), keeping the others as they were', async () => {
    // Arrange
    const h = planHarness([]);
    h.pods.add(makePod([diskA, diskB]));
    h.kube.setVolumesAttached([{ name: volA, devicePath: '/dev/sda' }]);
    h.start();
    await h.until(() => h.vm.getPlannedOperations().length === 4);
    const planned = firstPlannedAt(h);
    await h.clock.advance(1_000);

    // Act: the kubelet mounted vol-a
    mkdirSync(join(h.rootDir, 'pods', 'pod1uid', 'volumes', 'fake-plugin', 'vol-a'), { recursive: true });
    const result = await refresh(h);
    await h.until(() => h.vm.getPlannedOperations().length === 2);

    // Assert
    expect(result).toMatchObject({ error: null, scanned: 1, reconstructed: 1, failed: 0, added: [volA], removed: [], changed: [], waitingForNodeStatus: [] });
    expect(plan(h)).toEqual([
      op('verify_controller_attached_volume', volB, 1, 'awaiting-reported-in-use', 'VolumeNotAttached'),
      op('volume_mount', volB, 2, 'mount-required', 'VolumeNotMounted', { podName: pod1, outer: 'vol-b' }),
    ]);
    expect(firstPlannedAt(h)).toEqual(Object.fromEntries(Object.entries(planned).filter(([k]) => k.includes(volB))));
    // The reconstructed entry stays uncertain, as reconstruction left it; node status resolved attachability.
    expect(h.vm.getActualVolumes()).toEqual([
      expect.objectContaining({
        volumeName: volA,
        attachability: 'True',
        devicePath: '/dev/sda',
        deviceMountState: 'DeviceMountUncertain',
        foundDuringReconstruction: true,
        pods: [expect.objectContaining({ podName: pod1, mountState: 'VolumeMountUncertain', foundDuringReconstruction: true })],
      }),
    ]);
    expectNothingRan(h);
  });

  it.each([
    {
      name: 'controller attach/detach: volume_unmount, then unmount_device (the controller detaches)',
      controllerAttachDetachEnabled: true,
      detach: [] as PlanShape[],
    },
    {
      name: 'kubelet-managed attach: volume_unmount, unmount_device, then volume_detach',
      controllerAttachDetachEnabled: false,
      detach: [op('volume_detach', volA, 3, 'volume-not-needed', 'DeviceNotMounted', null, true)],
    },
  ])('plans, for a pod removed from the desired state while its volume is on disk, $name', async ({ controllerAttachDetachEnabled, detach }) => {
    // Arrange: the pod's volume is on disk and desired: nothing to do
    const h = planHarness(['pod1uid/volumes/fake-plugin/vol-a'], { controllerAttachDetachEnabled });
    h.kube.setVolumesAttached([{ name: volA, devicePath: '/dev/sda' }]);
    h.pods.add(makePod([diskA]));
    h.start();
    await h.until(() => h.vm.reconcilerStatesHasBeenSynced() && h.populator.hasAddedPods());
    await h.clock.advance(1_000);
    expect(plan(h)).toEqual([]);

    // Act
    h.pods.delete('pod1uid');
    h.vm.podsChanged();
    await h.until(() => h.vm.getPlannedOperations().length > 0);

    // Assert
    expect(plan(h)).toEqual([
      op('volume_unmount', volA, 1, 'pod-not-desired', 'VolumeMountUncertain', { podName: pod1, outer: 'vol-a' }, true),
      op('unmount_device', volA, 2, 'device-not-needed', 'DeviceMountUncertain', null, true),
      ...detach,
    ]);
    expectNothingRan(h);
  });

  it('removes volumes that vanished from disk at the next refresh, and restarts firstPlannedAt when one comes back', async () => {
    // Arrange: two volumes of a deleted pod on disk, planned for teardown
    const h = planHarness(['pod1uid/volumes/fake-plugin/vol-a', 'pod1uid/volumes/fake-plugin/vol-b']);
    h.kube.setVolumesAttached([]);
    h.start();
    await h.until(() => h.vm.getPlannedOperations().length === 4);
    const t0 = h.clock.now();
    await h.clock.advance(1_000);

    // Act: the kubelet tore vol-a down
    rmSync(join(h.rootDir, 'pods', 'pod1uid', 'volumes', 'fake-plugin', 'vol-a'), { recursive: true });
    const gone = await refresh(h);
    await h.until(() => h.vm.getPlannedOperations().length === 2);

    // Assert
    expect(gone).toMatchObject({ added: [], removed: [volA], changed: [], scanned: 1 });
    expect(h.asw.volumeExists(volA)).toBe(false);
    expect(plan(h).map((p) => [p.operationName, p.volumeName])).toEqual([
      ['volume_unmount', volB],
      ['unmount_device', volB],
    ]);
    expect(h.vm.getPlannedOperations().every((p) => p.firstPlannedAt <= t0)).toBe(true);

    // Act: vol-a shows up again
    await h.clock.advance(1_000);
    const returnedAt = h.clock.now();
    mkdirSync(join(h.rootDir, 'pods', 'pod1uid', 'volumes', 'fake-plugin', 'vol-a'));
    const back = await refresh(h);
    await h.until(() => h.vm.getPlannedOperations().length === 4);

    // Assert: a new plan, with a new firstPlannedAt
    expect(back.added).toEqual([volA]);
    const times = firstPlannedAt(h);
    expect(times[`volume_unmount ${volA} ${pod1}`]).toBeGreaterThanOrEqual(returnedAt);
    expect(times[`unmount_device ${volA} `]).toBeGreaterThanOrEqual(returnedAt);
    expect(times[`volume_unmount ${volB} ${pod1}`]).toBeLessThanOrEqual(t0);
    expectNothingRan(h);
  });

  it('keeps what node status told about a volume across refreshes: a later failing Node GET holds nothing back', async () => {
    // Arrange
    const h = planHarness(['pod1uid/volumes/fake-plugin/vol-a']);
    h.kube.setVolumesAttached([{ name: volA, devicePath: '/dev/sda' }]);
    h.start();
    await h.until(() => h.vm.getPlannedOperations().length === 2);
    const planned = firstPlannedAt(h);
    const gets = h.kube.nodeGets;

    // Act
    h.kube.failNodeGet = true;
    const result = await refresh(h);
    await h.clock.advance(1_000);

    // Assert: no new GET, same attachability and device path, same plans
    expect(h.kube.nodeGets).toBe(gets);
    expect(result).toMatchObject({ added: [], removed: [], changed: [], waitingForNodeStatus: [] });
    expect(h.vm.getActualVolumes()[0]).toMatchObject({ attachability: 'True', devicePath: '/dev/sda' });
    expect(firstPlannedAt(h)).toEqual(planned);
    expectNothingRan(h);
  });

  it('replans nothing when nothing changes, and tells onChange listeners only of plan changes', async () => {
    // Arrange
    const h = planHarness([]);
    let changes = 0;
    h.vm.onChange(() => {
      changes++;
    });
    h.pods.add(makePod([diskA]));
    h.start();
    await h.until(() => h.vm.getPlannedOperations().length === 2);
    await h.clock.advance(1_000);
    const settled = changes;

    // Act + Assert: 10 s of passes with nothing changing: no notification
    await h.clock.advance(10_000);
    expect(changes).toBe(settled);

    // Act + Assert: the pod goes away: the plan empties and listeners hear of it
    h.pods.delete('pod1uid');
    h.vm.podsChanged();
    await h.until(() => h.vm.getPlannedOperations().length === 0);
    expect(changes).toBeGreaterThan(settled);
  });
});

// UNCERTAIN RECONSTRUCTED MOUNTS

describe('plan-only mode: uncertain reconstructed mounts', () => {
  it('does not plan the confirming mount of a desired one, but plans the unmount of another pod of the same volume, and no device unmount', async () => {
    // Arrange: vol-a mounted for pod1 (desired) and pod2 (gone)
    const h = planHarness(['pod1uid/volumes/fake-plugin/vol-a', 'pod2uid/volumes/fake-plugin/vol-a']);
    h.kube.setVolumesAttached([{ name: volA, devicePath: '/dev/sda' }]);
    h.pods.add(makePod([diskA]));

    // Act
    h.start();
    await h.until(() => h.vm.getPlannedOperations().length === 1);
    await h.clock.advance(1_000);

    // Assert
    expect(plan(h)).toEqual([op('volume_unmount', volA, 1, 'pod-not-desired', 'VolumeMountUncertain', { podName: pod2, outer: 'vol-a' }, true)]);
    expect(h.vm.getActualVolumes()[0]?.pods.map((p) => [p.podName, p.mountState, p.foundDuringReconstruction])).toEqual([
      [pod1, 'VolumeMountUncertain', true],
      [pod2, 'VolumeMountUncertain', true],
    ]);
    expect(h.vm.getReconstructionReport().entries.map((e) => [e.podName, e.outcome])).toEqual([
      [pod1, 'reconstructed'],
      [pod2, 'reconstructed'],
    ]);
    expectNothingRan(h);
  });

  it('plans unmap_volume then unmap_device for a block volume of a deleted pod', async () => {
    const h = planHarness(['pod1uid/volumeDevices/fake-plugin/vol-a']);
    h.kube.setVolumesAttached([{ name: volA, devicePath: '/dev/sda' }]);
    h.start();
    await h.until(() => h.vm.getPlannedOperations().length === 2);

    expect(plan(h)).toEqual([
      op('unmap_volume', volA, 1, 'pod-not-desired', 'VolumeMountUncertain', { podName: pod1, outer: 'vol-a' }, true),
      op('unmap_device', volA, 2, 'device-not-needed', 'DeviceMountUncertain', null, true),
    ]);
    expectNothingRan(h);
  });

  it('plans no unmount while node status is unknown (as the kubelet after a restart), then plans it once the Node GET answers', async () => {
    // Arrange
    const h = planHarness(['pod1uid/volumes/fake-plugin/vol-a']);
    h.kube.failNodeGet = true;

    // Act
    h.start();
    await h.clock.advance(5_000);

    // Assert
    expect(h.reconciler.getVolumesNeedUpdateFromNodeStatus()).toEqual([volA]);
    expect(h.vm.getPlannedOperations()).toEqual([]);
    const waiting = await refresh(h);
    expect(waiting.waitingForNodeStatus).toEqual([volA]);

    // Act: the API server answers
    h.kube.failNodeGet = false;
    h.kube.setVolumesAttached([]);
    await h.until(() => h.vm.getPlannedOperations().length === 2);

    // Assert
    expect(plan(h).map((p) => p.operationName)).toEqual(['volume_unmount', 'unmount_device']);
    expect(h.vm.getActualVolumes()[0]?.attachability).toBe('False');
    expectNothingRan(h);
  });
});

// NOTHING CHANGES ON DISK

describe('plan-only mode never changes anything on disk', () => {
  it('only lists directories, calls no plugin, and never cleans up volumes that failed reconstruction, through refreshes and pod changes', async () => {
    // Arrange: a desired volume not on disk, an on-disk one of a deleted pod, and one of an unknown plugin
    const hostFs = recordingHostFs();
    const cleanups: boolean[] = [];
    const h = planHarness(['pod1uid/volumes/fake-plugin/vol-a', 'pod2uid/volumes/missing-plugin/lost', 'pod2uid/volumeDevices/fake-plugin/vol-b'], {
      hostFs,
      metrics: {
        reconstructVolumeOperation: () => undefined,
        forceCleanedFailedVolumeOperation: (failed) => cleanups.push(failed),
      },
    });
    h.kube.setVolumesAttached([{ name: volA, devicePath: '/dev/sda' }]);
    h.pods.add(makePod([diskA, diskB]));
    const before = tree(h.rootDir);

    // Act
    h.start();
    await h.until(() => h.vm.getPlannedOperations().length > 0);
    await h.clock.advance(2_000);
    await refresh(h);
    h.pods.delete('pod1uid');
    h.vm.podsChanged();
    await h.clock.advance(2_000);
    await refresh(h);
    await h.clock.advance(2_000);

    // Assert: the plan covers everything, the disk is as it was, and nothing ran
    expect(plan(h).map((p) => [p.operationName, p.volumeName, p.podName])).toEqual([
      ['volume_unmount', volA, pod1],
      ['unmount_device', volA, null],
      ['unmap_volume', volB, pod2],
      ['unmap_device', volB, null],
    ]);
    expect(h.vm.getReconstructionReport().entries.find((e) => e.pluginName === 'missing-plugin')).toMatchObject({
      outcome: 'failed',
      error: 'no volume plugin matched name: missing-plugin',
    });
    expect(h.reconciler.getVolumesFailedReconstruction().map((v) => v.volumeSpecName)).toEqual(['lost']);
    expect(cleanups).toEqual([]);
    expect(tree(h.rootDir)).toEqual(before);
    expect(hostFs.reads.length).toBeGreaterThan(0);
    expect(hostFs.reads.every((p) => p.startsWith(join(h.rootDir, 'pods')))).toBe(true);
    expectNothingRan(h);
  });

  it('reads the mount table through the plugins mounter during reconstruction, and never mounts or unmounts', async () => {
    // Arrange: an emptyDir of a deleted pod, mounted as a tmpfs according to the mount table
    const rootDir = makeKubeletDir(['pod1uid/volumes/kubernetes.io~empty-dir/cache']);
    tempDirs.push(rootDir);
    const calls: string[] = [];
    const cacheDir = realpathSync(join(rootDir, 'pods', 'pod1uid', 'volumes', 'kubernetes.io~empty-dir', 'cache'));
    const table: MountInfo[] = [
      { id: 1, parentId: 0, major: 0, minor: 40, root: '/', mountPoint: cacheDir, mountOptions: ['rw'], optionalFields: [], fsType: 'tmpfs', source: 'tmpfs', superOptions: ['rw'] },
    ];
    const mounter = recordingMounter(calls, table);
    const plugin = new FakeVolumePlugin({ canSupport: (spec) => spec.volume?.emptyDir === undefined });
    const h = (harness = new Harness({ rootDir, planOnly: true, controllerAttachDetachEnabled: true, plugins: [plugin, new EmptyDirPlugin({ mounter, rootDir })], fakePlugin: plugin }));
    h.kube.setVolumesAttached([]);
    const before = tree(rootDir);
    const cache = uniqueVolumeName('kubernetes.io/empty-dir/pod1uid-cache');

    // Act: the emptyDir plugin resolves paths on the real disk (thread pool), so the rebuild is
    // awaited as such (it arms no timer); a refresh queued behind the start's resolves after both.
    h.start();
    await h.vm.refreshActualState();
    await h.until(() => h.vm.getPlannedOperations().length === 1);

    // Assert: the medium came from the mount table; the teardown is planned, not done
    expect(h.asw.getAllMountedVolumes()[0]?.volumeSpec.volume?.emptyDir).toEqual({ medium: 'Memory' });
    expect(plan(h)).toEqual([op('volume_unmount', cache, 1, 'pod-not-desired', 'VolumeMountUncertain', { podName: pod1, outer: 'cache' }, true)]);
    expect(calls.length).toBeGreaterThan(0);
    expect(calls.every((c) => c === 'list')).toBe(true);
    expect(tree(rootDir)).toEqual(before);
    expectNothingRan(h);
  });
});

// API

describe('plan-only mode API', () => {
  it('serialises refreshes: a call during a running refresh waits for a new scan, and calls queued together share it', async () => {
    // Arrange
    const hostFs = recordingHostFs();
    const h = planHarness([], { hostFs });
    h.start();
    await h.until(() => h.vm.reconcilerStatesHasBeenSynced());
    const podsDir = join(h.rootDir, 'pods');
    const scans = (): number => hostFs.reads.filter((p) => p === podsDir).length;
    const initial = scans();

    // Act
    const first = h.vm.refreshActualState();
    const second = h.vm.refreshActualState();
    const third = h.vm.refreshActualState();
    const all = await h.settle(Promise.all([first, second, third]));

    // Assert
    expect(all.result.status).toBe('fulfilled');
    expect(scans() - initial).toBe(2);
    expect(second).toBe(third);
    expect(first).not.toBe(second);
  });

  it('keeps the previous actual state when pods/ cannot be read, and reports why', async () => {
    // Arrange
    const h = planHarness(['pod1uid/volumes/fake-plugin/vol-a']);
    h.kube.setVolumesAttached([]);
    h.start();
    await h.until(() => h.vm.getPlannedOperations().length === 2);
    const planned = firstPlannedAt(h);
    renameSync(join(h.rootDir, 'pods'), join(h.rootDir, 'pods-away'));

    // Act
    const result = await refresh(h);
    await h.clock.advance(1_000);

    // Assert
    expect(result.error).toMatch(/^failed to read pods dir ".*\/pods": ENOENT/);
    expect(result).toMatchObject({ added: [], removed: [], changed: [] });
    expect(h.asw.volumeExists(volA)).toBe(true);
    expect(h.vm.getReconstructionReport()).toMatchObject({ state: 'done', error: result.error, entries: [expect.objectContaining({ volumeName: volA })] });
    expect(firstPlannedAt(h)).toEqual(planned);
    renameSync(join(h.rootDir, 'pods-away'), join(h.rootDir, 'pods'));
  });

  it('refuses refreshActualState outside plan-only mode, and verifyAttachedVolumes inside it', async () => {
    // Arrange
    const managed = new Harness();
    const observe = planHarness([]);

    // Act
    const refreshErr: unknown = await managed.vm.refreshActualState().catch((e: unknown) => e);
    const verifyErr: unknown = await observe.vm.verifyAttachedVolumes().catch((e: unknown) => e);
    await managed.close();

    // Assert
    expect(isPlanOnlyModeError(refreshErr)).toBe(true);
    expect((refreshErr as Error).message).toBe('refreshActualState is only available in plan-only mode: it replaces the actual state of world with what is on disk');
    expect(isPlanOnlyModeError(verifyErr)).toBe(true);
    expect((verifyErr as Error).message).toBe('verifyAttachedVolumes is not available in plan-only mode');
    expect(isPlanOnlyModeError(new Error('x'))).toBe(false);
    expect(managed.vm.getPlannedOperations()).toEqual([]);
    expect(managed.vm.planOnly).toBe(false);
    expect(observe.vm.planOnly).toBe(true);
  });
});

describe('plan-only mode: the executor that runs operations', () => {
  it('refuses to start anything, even when asked directly (as an API action would), and nothing runs', async () => {
    const h = planHarness(['pod1uid/volumes/fake-plugin/vol-a']);
    h.kube.setVolumesAttached([{ name: volA, devicePath: '/dev/sda' }]);
    h.start();
    await h.until(() => h.vm.getActualVolumes().length === 1);
    const mounted = h.asw.getPossiblyMountedVolumesForPod(pod1)[0];
    if (mounted === undefined) throw new Error('the reconstructed mount is missing');

    let thrown: unknown;
    try {
      h.operationExecutor.unmountVolume(mounted, h.asw, join(h.rootDir, 'pods'));
    } catch (err) {
      thrown = err;
    }

    expect(isReadOnlyExecutorError(thrown)).toBe(true);
    await h.clock.advance(1_000);
    expectNothingRan(h);
  });
});

describe('plan-only mode: a listed pod whose claim cannot be read (kubernetes#120150)', () => {
  it('plans the volume_unmount the kubelet beside it would run, since the kubelet keeps no mount of such a pod', async () => {
    // Arrange: the kubelet has pvname mounted for pod1; the claim GET fails.
    const h = planHarness(['pod1uid/volumes/fake-plugin/pvname']);
    h.kube.setVolumesAttached([{ name: 'fake-plugin/pvname', devicePath: '/dev/sdb' }]);
    h.kube.claimGetError = new Error('etcdserver: request timed out');
    h.pods.add(makePod([{ name: 'data', persistentVolumeClaim: { claimName: 'pvc' } }]));

    // Act
    h.start();
    await h.until(() => h.vm.getPlannedOperations().some((p) => p.operationName === 'volume_unmount'));

    // Assert
    expect(plan(h)[0]).toEqual(op('volume_unmount', uniqueVolumeName('fake-plugin/pvname'), 1, 'pod-not-desired', 'VolumeMountUncertain', { podName: pod1, outer: 'pvname' }, true));
    expect(h.vm.getPodsWithUnresolvedVolumes().get(pod1)).toContain('etcdserver: request timed out');
    expectNothingRan(h);
  });
});
