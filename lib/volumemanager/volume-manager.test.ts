import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { Pod } from '../volume/k8s-types.ts';
import { specFromVolume, type Spec } from '../volume/spec.ts';
import { FakeVolumePlugin, TimeoutOnSetupVolumeName } from '../volume/testing/fake-volume-plugin.ts';
import { podUID, uniquePodName, uniqueVolumeName } from '../volume/types.ts';
import { gcePdVolume, Harness, makeKubeletDir, makePod, syncHostFs, testNodeName, type HarnessOptions } from './testing/harness.ts';
import { isWaitForVolumesError } from './volume-manager.ts';
import { errorMessage } from '../volume/errors.ts';

describe('VolumeManager', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('attaches and mounts a new pod volume, then tears it down when the pod goes away', async () => {
    h = new Harness({ controllerAttachDetachEnabled: false });
    h.pods.add(makePod([gcePdVolume()]));
    h.start();
    const vol = uniqueVolumeName('fake-plugin/fake-device1');
    await h.until(() => h?.asw.getMountedVolumes().length === 1);
    expect(h.plugin.counts).toMatchObject({ attach: 1, waitForAttach: 1, mountDevice: 1, setUp: 1 });
    expect(h.asw.getVolumeMountState(vol, uniquePodName('pod1uid'))).toBe('VolumeMounted');

    h.pods.delete('pod1uid');
    await h.until(() => !h?.asw.volumeExists(vol));
    expect(h.plugin.counts).toMatchObject({ tearDown: 1, unmountDevice: 1, detach: 1 });
  });
});

// FACADE: scenarios 41–42 and the kubelet API

describe('VolumeManager facade', () => {
  let h: Harness | undefined;
  const tempDirs: string[] = [];
  afterEach(async () => {
    await h?.close();
    h = undefined;
    for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  const newHarness = (opts: HarnessOptions = {}): Harness => {
    h = new Harness(opts);
    return h;
  };
  const pod1 = uniquePodName('pod1uid');
  const device1 = uniqueVolumeName('fake-plugin/fake-device1');
  const deadlineMs = 2 * 60_000 + 3_000;

  /** Settles a promise that is expected to fail, returning its error text and the fake time taken. */
  async function failure(harness: Harness, p: Promise<unknown>, limitMs: number, stepMs = 10): Promise<{ message: string; elapsedMs: number; isWaitError: boolean }> {
    const { result, elapsedMs } = await harness.settle(p, limitMs, stepMs);
    if (result.status === 'fulfilled') throw new Error('expected the wait to fail');
    const reason: unknown = result.reason;
    return { message: errorMessage(reason), elapsedMs, isWaitError: isWaitForVolumesError(reason) };
  }

  it('scenario 41: states are not synced while the Node GET keeps failing after reconstruction, and no reconstructed volume is unmounted meanwhile', async () => {
    // Arrange: a reconstructed volume of a pod that no longer exists
    const root = makeKubeletDir(['pod1uid/volumes/fake-plugin/pvc-abcdef']);
    tempDirs.push(root);
    const harness = newHarness({ rootDir: root, hostFs: syncHostFs, controllerAttachDetachEnabled: true });
    const vol = uniqueVolumeName('fake-plugin/pvc-abcdef');
    harness.kube.failNodeGet = true;

    // Act
    harness.start();
    await harness.clock.advance(10_000);

    // Assert: still waiting for node status; GET retried every pass; nothing unmounted
    expect(harness.vm.reconcilerStatesHasBeenSynced()).toBe(false);
    expect(harness.populator.hasAddedPods()).toBe(true);
    // One GET per pass, a pass every 100 ms.
    expect(harness.kube.nodeGets).toBeGreaterThanOrEqual(100);
    expect(harness.kube.nodeGets).toBeLessThanOrEqual(101);
    expect(harness.reconciler.getVolumesNeedUpdateFromNodeStatus()).toEqual([vol]);
    expect(harness.asw.getAllMountedVolumes().map((m) => [m.podName, m.volumeMountState])).toEqual([['pod1uid', 'VolumeMountUncertain']]);
    expect(harness.plugin.counts).toMatchObject({ tearDown: 0, unmountDevice: 0, detach: 0 });
    expect(harness.records).toEqual([]);

    // Act: the API server answers again (the node does not list the volume)
    harness.kube.failNodeGet = false;
    harness.kube.setVolumesAttached([]);
    await harness.until(() => harness.vm.reconcilerStatesHasBeenSynced());
    await harness.until(() => !harness.asw.volumeExists(vol));

    // Assert: only now is the reconstructed volume torn down
    expect(harness.plugin.counts).toMatchObject({ tearDown: 1, unmountDevice: 1, detach: 0 });
  });

  it('scenario 42: WaitForAttachAndMount for a pod whose PVC is not bound fails quickly with the pod error', async () => {
    // Arrange
    const harness = newHarness({ controllerAttachDetachEnabled: true });
    harness.kube.pvcs.set('ns/c', { metadata: { name: 'c', namespace: 'ns', uid: 'cuid' }, spec: {}, status: { phase: 'Pending' } });
    const pod = makePod([{ name: 'v', persistentVolumeClaim: { claimName: 'c' } }], { namespace: 'ns' });
    harness.pods.add(pod);
    harness.start();

    // Act
    const { message, elapsedMs, isWaitError } = await failure(harness, harness.vm.waitForAttachAndMount(pod), deadlineMs);

    // Assert
    expect(isWaitError).toBe(true);
    expect(message).toBe('unmounted volumes=[v], unattached volumes=[], failed to process volumes=[v]: error processing PVC ns/c: PVC is not bound');
    // The poll at 0 ms precedes the populator's first loop (100 ms); the poll at 300 ms sees the pod error.
    expect(elapsedMs).toBe(300);
  });

  describe('waitForAttachAndMount', () => {
    it('resolves at the first poll (every 300 ms) after every used volume is mounted', async () => {
      // Arrange
      const harness = newHarness({ controllerAttachDetachEnabled: false });
      const pod = makePod([gcePdVolume()]);
      harness.pods.add(pod);
      harness.start();

      // Act
      const { result, elapsedMs } = await harness.settle(harness.vm.waitForAttachAndMount(pod));

      // Assert
      expect(result).toEqual({ status: 'fulfilled', value: undefined });
      expect(harness.asw.getVolumeMountState(device1, pod1)).toBe('VolumeMounted');
      // Mounted at 100 ms (the populator's first loop); seen by the poll at 300 ms.
      expect(elapsedMs).toBe(300);
    });

    it('resolves at once for a pod whose containers use no volume', async () => {
      // Arrange
      const harness = newHarness();
      const pod: Pod = { metadata: { name: 'pod1', uid: 'pod1uid', namespace: 'default' }, spec: { volumes: [gcePdVolume()], containers: [{ name: 'c' }] } };

      // Act
      const { result, elapsedMs } = await harness.settle(harness.vm.waitForAttachAndMount(pod));

      // Assert
      expect(result.status).toBe('fulfilled');
      expect(elapsedMs).toBe(0);
    });

    it('times out after 2m3s listing unmounted, unattached and unprocessed volumes', async () => {
      // Arrange: controller-managed attach. `timeout-setup-volume` is attached but its SetUp stays
      // uncertain; `disk-b` is never reported in use, so never attached; `ghost` is mounted by the
      // container but not a pod volume, so it never reaches the desired state.
      const harness = newHarness({ controllerAttachDetachEnabled: true });
      const pod = makePod([gcePdVolume(TimeoutOnSetupVolumeName, TimeoutOnSetupVolumeName), gcePdVolume('disk-b', 'disk-b')]);
      pod.spec.containers[0]?.volumeMounts?.push({ name: 'ghost', mountPath: '/ghost' });
      harness.kube.setVolumesAttached([{ name: `fake-plugin/${TimeoutOnSetupVolumeName}`, devicePath: '/dev/sdb' }]);
      harness.pods.add(pod);
      harness.start();
      await harness.until(() => harness.dsw.getVolumesToMount().length === 2, 1_000);
      harness.vm.markVolumesAsReportedInUse([`fake-plugin/${TimeoutOnSetupVolumeName}`]);

      // Act
      const { message, elapsedMs, isWaitError } = await failure(harness, harness.vm.waitForAttachAndMount(pod), deadlineMs + 10_000, 1_000);

      // Assert
      expect(isWaitError).toBe(true);
      expect(message).toBe(
        `unmounted volumes=[disk-b ghost ${TimeoutOnSetupVolumeName}], unattached volumes=[disk-b], failed to process volumes=[ghost]: context deadline exceeded`,
      );
      expect(elapsedMs).toBe(deadlineMs);
      expect(harness.asw.getVolumeMountState(uniqueVolumeName(`fake-plugin/${TimeoutOnSetupVolumeName}`), pod1)).toBe('VolumeMountUncertain');
    });
  });

  describe('waitForUnmount', () => {
    it('resolves once the deleted pod has no mounted volume left', async () => {
      // Arrange
      const harness = newHarness({ controllerAttachDetachEnabled: false });
      const pod = makePod([gcePdVolume()]);
      harness.pods.add(pod);
      harness.start();
      await harness.until(() => harness.asw.getMountedVolumes().length === 1);
      harness.pods.delete('pod1uid');

      // Act
      const { result } = await harness.settle(harness.vm.waitForUnmount(pod));

      // Assert
      expect(result.status).toBe('fulfilled');
      expect(harness.asw.getMountedVolumesForPod(pod1)).toEqual([]);
      expect(harness.plugin.counts.tearDown).toBe(1);
    });

    it('times out after 2m3s listing the volumes still mounted', async () => {
      // Arrange: the pod keeps running, so its volume stays mounted
      const harness = newHarness({ controllerAttachDetachEnabled: false });
      const pod = makePod([gcePdVolume()]);
      harness.pods.add(pod);
      harness.start();
      await harness.until(() => harness.asw.getMountedVolumes().length === 1);

      // Act
      const { message, elapsedMs, isWaitError } = await failure(harness, harness.vm.waitForUnmount(pod), deadlineMs + 10_000, 1_000);

      // Assert
      expect(isWaitError).toBe(true);
      expect(message).toBe('mounted volumes=[volume-name]: context deadline exceeded');
      expect(elapsedMs).toBe(deadlineMs);
    });

    it('resolves at once for a pod with nothing mounted', async () => {
      // Arrange
      const harness = newHarness();

      // Act
      const { result, elapsedMs } = await harness.settle(harness.vm.waitForUnmount(makePod([gcePdVolume()])));

      // Assert
      expect(result.status).toBe('fulfilled');
      expect(elapsedMs).toBe(0);
    });
  });

  it('getVolumesInUse reports attachable volumes of both worlds, sorted and de-duplicated', () => {
    // Arrange: `fake-plugin` is attachable; `local-plugin` is not.
    const pdIs = (prefix: string) => (spec: Spec): boolean => (spec.volume?.gcePersistentDisk?.pdName ?? '').startsWith(prefix);
    const fake = new FakeVolumePlugin({ canSupport: pdIs('fake-') });
    const local = new FakeVolumePlugin({ name: 'local-plugin', nonAttachable: true, canSupport: pdIs('local-') });
    const harness = newHarness({ plugins: [fake, local], fakePlugin: fake });
    const add = (uid: string, volumeName: string, pd: string): void => {
      const v = gcePdVolume(volumeName, pd);
      harness.dsw.addPodToVolume(uniquePodName(uid), makePod([v], { uid }), specFromVolume(v), volumeName, '', []);
    };
    add('pod1uid', 'b', 'fake-device2');
    add('pod1uid', 'l', 'local-disk1');
    add('pod2uid', 'b', 'fake-device2');
    add('pod2uid', 'a', 'fake-device1');
    harness.asw.markVolumeAsAttached('', specFromVolume(gcePdVolume('c', 'fake-device3')), testNodeName, '/dev/sdc');
    harness.asw.addAttachUncertainReconstructedVolume(uniqueVolumeName('fake-plugin/fake-device4'), specFromVolume(gcePdVolume('d', 'fake-device4')), testNodeName, '');
    harness.asw.markVolumeAsAttached('', specFromVolume(gcePdVolume('m', 'local-disk2')), testNodeName, '');

    // Act
    const inUse = harness.vm.getVolumesInUse();

    // Assert: local volumes are not attachable; a reconstructed volume of uncertain attachability is not reported
    expect(inUse).toEqual(['fake-plugin/fake-device1', 'fake-plugin/fake-device2', 'fake-plugin/fake-device3']);
  });

  describe('retryNow', () => {
    /** A started harness whose one mount failed four times ('disk not ready') and is in backoff. */
    async function mountFailedFourTimes(): Promise<{ harness: Harness; stopFailing: () => void }> {
      const harness = newHarness({ controllerAttachDetachEnabled: false });
      let failing = true;
      harness.plugin.waitForAttachHook = () => (failing ? Promise.reject(new Error('disk not ready')) : Promise.resolve('/dev/sdb'));
      harness.pods.add(makePod([gcePdVolume()]));
      harness.start();
      await harness.until(() => harness.records.filter((r) => r.outcome === 'failure').length === 4);
      return {
        harness,
        stopFailing: () => {
          failing = false;
        },
      };
    }

    it('clears the backoff of a failed key so the next pass retries at once', async () => {
      // Arrange: the mount keeps failing until its backoff reached 4 s
      const { harness, stopFailing } = await mountFailedFourTimes();
      stopFailing();
      const [entry] = harness.vm.getPendingOperations();
      expect(entry).toMatchObject({ operationName: 'volume_mount', pending: false, failures: 4, durationBeforeRetry: 4_000 });
      const retryAt = entry?.retryAt ?? 0;
      const clearedAt = harness.clock.now();

      // Act
      const result = harness.vm.retryNow(device1, null);
      await harness.until(() => harness.asw.getVolumeMountState(device1, pod1) === 'VolumeMounted');

      // Assert: retried within one pass, long before the backoff would have allowed it
      expect(result).toBe('cleared');
      expect(harness.clock.now() - clearedAt).toBeLessThanOrEqual(100);
      expect(harness.clock.now()).toBeLessThan(retryAt);
      expect(harness.plugin.counts.waitForAttach).toBe(5);
      expect(harness.vm.getPendingOperations()).toEqual([]);
    });

    it('keeps the attempt count of the history across a retry now, and records the success', async () => {
      // Arrange: four failures, then a retry now that succeeds
      const { harness, stopFailing } = await mountFailedFourTimes();
      const firstFailureAt = harness.records.find((r) => r.outcome === 'failure')?.finishedAt;
      stopFailing();

      // Act
      harness.vm.retryNow(device1, null);
      await harness.until(() => harness.asw.getVolumeMountState(device1, pod1) === 'VolumeMounted');

      // Assert: the table forgot the key, the history did not
      expect(harness.vm.getPendingOperations()).toEqual([]);
      const [history] = harness.vm.getOperationHistory().filter((h) => h.operationName === 'volume_mount');
      expect(history).toMatchObject({ volume: device1, pod: '', node: '', firstFailureAt, attemptsTotal: 5 });
      expect(history?.attempts.map((a) => a.error)).toEqual([
        ...Array.from({ length: 4 }, () => expect.stringContaining('disk not ready') as unknown),
        null,
      ]);
      expect(history?.succeededAt).toBe(harness.records.findLast((r) => r.operationName === 'volume_mount')?.finishedAt);
    });

    it("answers 'running' for a key whose operation runs, and leaves it running", async () => {
      // Arrange
      const harness = newHarness({ controllerAttachDetachEnabled: false });
      let release: (devicePath: string) => void = () => undefined;
      harness.plugin.waitForAttachHook = () =>
        new Promise((resolve) => {
          release = resolve;
        });
      harness.pods.add(makePod([gcePdVolume()]));
      harness.start();
      await harness.until(() => harness.operationExecutor.isOperationPending(device1, pod1, testNodeName) && harness.plugin.counts.waitForAttach === 1);

      // Act
      const result = harness.vm.retryNow(device1, pod1);

      // Assert
      expect(result).toBe('running');
      expect(harness.vm.getPendingOperations()).toMatchObject([{ operationName: 'volume_mount', pending: true }]);
      release('/dev/sdb');
      await harness.until(() => harness.asw.getVolumeMountState(device1, pod1) === 'VolumeMounted');
    });

    it("answers 'not-found' for a key without an entry", () => {
      // Arrange
      const harness = newHarness();

      // Act
      const result = harness.vm.retryNow(uniqueVolumeName('fake-plugin/unknown'), null);

      // Assert
      expect(result).toBe('not-found');
    });
  });

  // Views subscribe to onChange and never poll.
  describe('onChange', () => {
    /** Everything the views answer that neither world's own listeners cover. */
    const views = (vm: Harness['vm']): string =>
      JSON.stringify({
        report: vm.getReconstructionReport(),
        synced: vm.reconcilerStatesHasBeenSynced(),
        podErrors: [...vm.getPodErrors()],
        verification: vm.getLastAttachVerification(),
      });

    it('is called after every change of the reconstruction report, the sync flag and the pod errors, through reconstruction, cleanup and mounting', async () => {
      // Arrange: one reconstructed volume of a desired pod (confirmed by its mount), one of a pod
      // that is gone (cleaned up), and a desired pod whose claim is not bound (a pod error)
      const root = makeKubeletDir(['pod1uid/volumes/fake-plugin/fake-device1', 'gone-uid/volumes/fake-plugin/pvc-gone']);
      tempDirs.push(root);
      const harness = newHarness({ rootDir: root, hostFs: syncHostFs });
      harness.kube.setVolumesAttached([]);
      harness.pods.add(makePod([gcePdVolume()]));
      harness.pods.add(makePod([{ name: 'data', persistentVolumeClaim: { claimName: 'unbound' } }], { uid: 'pvc-pod-uid', name: 'pvc-pod' }));
      let notified = views(harness.vm);
      let notifications = 0;
      harness.vm.onChange(() => {
        notifications++;
        notified = views(harness.vm);
      });
      const unnotified: string[] = [];

      // Act: between any two steps of fake time, the views must be what the last notification saw
      harness.start();
      await harness.until(() => {
        const now = views(harness.vm);
        if (now !== notified) unnotified.push(now);
        const report = harness.vm.getReconstructionReport();
        return harness.vm.reconcilerStatesHasBeenSynced() && report.state === 'done' && report.entries.every((e) => e.resolvedAt !== null) && harness.vm.getPodErrors().size > 0;
      });

      // Assert
      expect(unnotified).toEqual([]);
      expect(notifications).toBeGreaterThan(0);
      expect(harness.vm.getReconstructionReport().entries.map((e) => [e.podName, e.outcome])).toEqual([
        ['gone-uid', 'cleaned-up'],
        ['pod1uid', 'confirmed-mounted'],
      ]);
    });

    it('forgets departed pods whose mounts are gone once many pods departed, and keeps those still mounted', () => {
      // Arrange: 300 pods desired; pod 0 also mounted
      const harness = newHarness();
      const { dsw, asw } = harness;
      const names = Array.from({ length: 300 }, (_, i) => {
        const volume = gcePdVolume(`vol-${i}`, `pd-${i}`);
        const pod = makePod([volume], { uid: `uid-${i}`, name: `pod-${i}`, namespace: 'team-a' });
        return { podName: uniquePodName(`uid-${i}`), spec: specFromVolume(volume), volumeName: dsw.addPodToVolume(uniquePodName(`uid-${i}`), pod, specFromVolume(volume), volume.name, '', []) };
      });
      const first = names[0];
      if (first === undefined) throw new Error('no pods');
      asw.markVolumeAsAttached(first.volumeName, first.spec, testNodeName, '/dev/sda');
      asw.markVolumeAsMounted({
        podName: first.podName,
        podUID: podUID('uid-0'),
        volumeName: first.volumeName,
        mounter: null,
        blockVolumeMapper: null,
        outerVolumeSpecName: 'vol-0',
        volumeGidValue: '',
        volumeSpec: first.spec,
        volumeMountState: 'VolumeMounted',
        seLinuxMountContext: '',
      });

      // Act: every pod leaves the desired state
      for (const { podName, volumeName } of names) dsw.deletePodFromVolume(podName, volumeName);

      // Assert: pruned past 256 departures; the mounted pod kept its namespace throughout
      expect(dsw.countDepartedPods()).toBeLessThan(300 - 256 + 1);
      expect(harness.vm.getDepartedPodNamespace(first.podName)).toBe('team-a');
      expect(harness.vm.getDepartedPodNamespace(uniquePodName('uid-1'))).toBeUndefined();
      expect(harness.vm.getDepartedPodNamespace(uniquePodName('uid-299'))).toBe('team-a');
    });
  });
});

// PUBLIC SURFACE: the parts are private, the views read-only

describe('VolumeManager public surface', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('keeps its worlds, operations table, executor, populator and reconciler private', () => {
    h = new Harness();
    const vm = h.vm;
    // Compile-time assertions: each line fails type-checking if the part becomes public again.
    // @ts-expect-error the desired state is read through desiredState()
    expect(vm.dsw).toBe(h.dsw);
    // @ts-expect-error the actual state is read through actualState()
    expect(vm.asw).toBe(h.asw);
    // @ts-expect-error the operations table is read through getPendingOperations()
    expect(vm.pendingOperations).toBe(h.pendingOperations);
    // @ts-expect-error operations start only through the reconciler and the operator actions
    expect(vm.operationExecutor).toBe(h.operationExecutor);
    // @ts-expect-error the populator is driven through podsChanged() and reprocessPod()
    expect(vm.populator).toBe(h.populator);
    // @ts-expect-error the reconciler is driven by the manager itself
    expect(vm.reconciler).toBe(h.reconciler);
    // @ts-expect-error plugins are looked up inside the engine
    expect(vm.pluginMgr).toBe(h.pluginMgr);
  });

  it('hands out views of both worlds without their mutators, and counts volumes by plugin for volume_manager_total_volumes', async () => {
    // Arrange: one pod with one attachable volume, mounted
    h = new Harness({ controllerAttachDetachEnabled: false });
    h.pods.add(makePod([gcePdVolume()]));
    h.start();
    await h.until(() => h?.asw.getMountedVolumes().length === 1);

    // Act
    const desired = h.vm.desiredState();
    const actual = h.vm.actualState();

    // Assert: the views answer from the live worlds
    expect([...desired.getPods().keys()]).toEqual([uniquePodName('pod1uid')]);
    expect(actual.getMountedVolumesForPod(uniquePodName('pod1uid')).map((m) => m.outerVolumeSpecName)).toEqual(['volume-name']);
    // @ts-expect-error a view of the desired state has no mutators
    expect(typeof desired.addPodToVolume).toBe('function');
    // @ts-expect-error a view of the actual state has no mutators
    expect(typeof actual.markVolumeAsUnmounted).toBe('function');
    expect(h.vm.getVolumeCount()).toEqual(
      new Map([
        ['actual_state_of_world', new Map([['fake-plugin', 1]])],
        ['desired_state_of_world', new Map([['fake-plugin', 1]])],
      ]),
    );
  });
});
