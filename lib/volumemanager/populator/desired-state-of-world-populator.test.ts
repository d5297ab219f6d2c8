import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Pod, SELinuxOptions, Volume } from '../../volume/k8s-types.ts';
import { FakeFileVolumePlugin, FakeVolumePlugin } from '../../volume/testing/fake-volume-plugin.ts';
import { specFromPersistentVolume, specFromVolume } from '../../volume/spec.ts';
import { podUID, uniquePodName, uniqueVolumeName, type UniqueVolumeName } from '../../volume/types.ts';
import { newSELinuxLabelTranslator } from '../../volume/util/selinux.ts';
import { isFsResizeRequiredError } from '../cache/actual-state-of-world.ts';
import {
  dswpClaim,
  dswpClaimName,
  dswpContainer,
  dswpEphemeralObjects,
  dswpNamespace,
  dswpPersistentVolume,
  dswpPod,
  dswpPodUID,
  dswpUniqueVolumeName,
  dswpVolumeName,
  FakeSourcesReady,
  PopulatorRig,
} from '../testing/populator-fixtures.ts';
import { getPodVolumeNames } from './desired-state-of-world-populator.ts';

const podName = uniquePodName(dswpPodUID);
const Gi = 2 ** 30;

/** `prepareDswpWithVolume`: a rig serving the Filesystem PV and its bound PVC. */
function prepareDswpWithVolume(): PopulatorRig {
  const rig = new PopulatorRig();
  rig.serve(dswpPersistentVolume(), dswpClaim());
  return rig;
}

/** `prepareDSWPWithPodPV`: the fixture pod added and processed once. */
async function prepareDswpWithPodPV(): Promise<{ rig: PopulatorRig; pod: Pod }> {
  const rig = prepareDswpWithVolume();
  const pod = dswpPod();
  rig.podManager.add(pod);
  await rig.populator.findAndAddNewPods();
  expect(rig.populator.podPreviouslyProcessed(podName)).toBe(true);
  expect(rig.dsw.volumeExists(dswpUniqueVolumeName, '')).toBe(true);
  expect(rig.dsw.podExistsInVolume(podName, dswpUniqueVolumeName, '')).toBe(true);
  return { rig, pod };
}

function volumeNamesToMount(rig: PopulatorRig): UniqueVolumeName[] {
  return rig.dsw.getVolumesToMount().map((v) => v.volumeName);
}

function failPod(rig: PopulatorRig, pod: Pod): void {
  const stored = rig.podManager.getPodByUID(podUID(pod.metadata.uid ?? ''));
  if (stored !== undefined) stored.status = { phase: 'Failed' };
}

describe('DesiredStateOfWorldPopulator scenarios (desired_state_of_world_populator_test.go)', () => {
  it.each([
    { hasAddedPods: false, state: 'removed', added: false },
    { hasAddedPods: false, state: 'terminating', added: true },
    { hasAddedPods: false, state: 'other', added: true },
    { hasAddedPods: true, state: 'terminating', added: false },
    { hasAddedPods: true, state: 'removed', added: false },
    { hasAddedPods: true, state: 'other', added: true },
  ])(
    'scenario 25: findAndAddNewPods with hasAddedPods=$hasAddedPods and pod state "$state" adds the pod: $added',
    async ({ hasAddedPods, state, added }) => {
      // Arrange
      const rig = prepareDswpWithVolume();
      rig.podManager.add(dswpPod());
      if (state === 'removed') rig.podState.removed.add(dswpPodUID);
      if (state === 'terminating') rig.podState.terminating.add(dswpPodUID);
      rig.populator.setHasAddedPods(hasAddedPods);

      // Act
      await rig.populator.findAndAddNewPods();

      // Assert
      expect(rig.dsw.getPods().has(podName)).toBe(added);
      expect(rig.populator.podPreviouslyProcessed(podName)).toBe(added);
    },
  );

  it('scenario 26: a pod processed once stays processed when reprocessing hits a volume retrieval error', async () => {
    // Arrange
    const rig = prepareDswpWithVolume();
    rig.podManager.add(dswpPod());
    await rig.populator.findAndAddNewPods();
    expect(rig.populator.podPreviouslyProcessed(podName)).toBe(true);
    rig.kube.failClaims = true;

    // Act
    rig.populator.reprocessPod(podName);
    expect(rig.populator.podPreviouslyProcessed(podName)).toBe(false);
    await rig.populator.findAndAddNewPods();

    // Assert
    expect(rig.populator.podPreviouslyProcessed(podName)).toBe(true);
    expect(rig.dsw.getPodErrors(podName)).toEqual([
      'error processing PVC ns/file-bound: failed to fetch PVC from API server: persistentvolumeclaims "file-bound" not found',
    ]);
    expect(rig.dsw.podExistsInVolume(podName, dswpUniqueVolumeName, '')).toBe(true);
  });

  it('scenario 27: a volume retrieval error on the first pass leaves the pod neither processed nor seen once', async () => {
    // Arrange
    const rig = prepareDswpWithVolume();
    rig.kube.failClaims = true;
    rig.podManager.add(dswpPod());

    // Act
    await rig.populator.findAndAddNewPods();

    // Assert
    expect(rig.populator.podPreviouslyProcessed(podName)).toBe(false);
    expect(rig.populator.podHasBeenSeenOnce(podName)).toBe(false);
    expect(rig.dsw.getPods().size).toBe(0);
    expect(rig.dsw.getPodErrors(podName)).toEqual([
      'error processing PVC ns/file-bound: failed to fetch PVC from API server: persistentvolumeclaims "file-bound" not found',
    ]);

    // Act: the API recovers; the next pass (100 ms later) retries the pod and clears its errors.
    rig.kube.failClaims = false;
    await rig.populator.findAndAddNewPods();

    // Assert
    expect(rig.populator.podPreviouslyProcessed(podName)).toBe(true);
    expect(rig.dsw.getPodsWithErrors()).toEqual([]);
    expect(rig.dsw.podExistsInVolume(podName, dswpUniqueVolumeName, '')).toBe(true);
  });

  it('a loop over processed pods that are all still wanted reads no mounted volume and materialises no volume to mount', async () => {
    // Arrange
    const { rig } = await prepareDswpWithPodPV();
    const allMounted = vi.spyOn(rig.asw, 'getMountedVolumes');
    const podMounted = vi.spyOn(rig.asw, 'getMountedVolumesForPod');
    const allToMount = vi.spyOn(rig.dsw, 'getVolumesToMount');
    const collected = vi.spyOn(rig.dsw, 'collectVolumesToMountOfPods');

    // Act
    await rig.populator.runLoop();

    // Assert: upstream indexes every mounted volume and walks every volume to mount, each loop.
    expect(allMounted).not.toHaveBeenCalled();
    expect(podMounted).not.toHaveBeenCalled();
    expect(allToMount).not.toHaveBeenCalled();
    expect(collected.mock.results.map((r) => (r.value as unknown[]).length)).toEqual([rig.dsw.getVolumesToMount().filter((v) => v.pluginIsAttachable).length]);
    expect(rig.dsw.podExistsInVolume(podName, dswpUniqueVolumeName, '')).toBe(true);
  });

  it('scenario 28: findAndRemoveDeletedPods drops a deleted pod only once its runtime is removed, then forgets the orphaned key', async () => {
    // Arrange
    const { rig, pod } = await prepareDswpWithPodPV();
    failPod(rig, pod);
    rig.podManager.delete(dswpPodUID);

    // Act: the pod state does not say "removed" yet.
    rig.populator.findAndRemoveDeletedPods();

    // Assert
    expect(rig.populator.podPreviouslyProcessed(podName)).toBe(true);
    expect(rig.dsw.podExistsInVolume(podName, dswpUniqueVolumeName, '')).toBe(true);

    // Act: the pod state marks the pod removed.
    rig.podState.removed.add(dswpPodUID);
    rig.populator.findAndRemoveDeletedPods();

    // Assert
    expect(rig.populator.podPreviouslyProcessed(podName)).toBe(false);
    expect(rig.populator.podHasBeenSeenOnce(podName)).toBe(false);
    expect(rig.dsw.volumeExists(dswpUniqueVolumeName, '')).toBe(false);
    expect(rig.dsw.podExistsInVolume(podName, dswpUniqueVolumeName, '')).toBe(false);
    expect(volumeNamesToMount(rig)).toEqual([]);

    // Act: a late pod sync reprocesses the pod, leaving an orphaned processedPods key.
    rig.populator.reprocessPod(podName);
    expect(rig.populator.podHasBeenSeenOnce(podName)).toBe(true);
    rig.populator.findAndRemoveDeletedPods();

    // Assert
    expect(rig.populator.podHasBeenSeenOnce(podName)).toBe(false);
    expect(rig.dsw.volumeExists(dswpUniqueVolumeName, '')).toBe(false);
    expect(rig.dsw.podExistsInVolume(podName, dswpUniqueVolumeName, '')).toBe(false);
    expect(volumeNamesToMount(rig)).toEqual([]);
  });

  it('scenario 29: a failed pod still in the pod manager keeps its volume until it was mounted and its runtime is removed', async () => {
    // Arrange
    const { rig, pod } = await prepareDswpWithPodPV();
    failPod(rig, pod);

    // Act: runtime not removed, nothing in the actual state.
    rig.populator.findAndRemoveDeletedPods();

    // Assert
    expect(rig.dsw.volumeExists(dswpUniqueVolumeName, '')).toBe(true);
    expect(rig.dsw.podExistsInVolume(podName, dswpUniqueVolumeName, '')).toBe(true);

    // Act: runtime removed, but the actual state never had the volume mounted for the pod.
    rig.podState.removed.add(dswpPodUID);
    rig.populator.findAndRemoveDeletedPods();

    // Assert
    expect(rig.dsw.podExistsInVolume(podName, dswpUniqueVolumeName, '')).toBe(true);

    // Act: the volume gets mounted; the runtime is not removed.
    rig.podState.removed.delete(dswpPodUID);
    rig.reconcileASW();
    rig.populator.findAndRemoveDeletedPods();

    // Assert
    expect(rig.dsw.volumeExists(dswpUniqueVolumeName, '')).toBe(true);

    // Act: the runtime is removed.
    rig.podState.removed.add(dswpPodUID);
    rig.populator.findAndRemoveDeletedPods();

    // Assert
    expect(rig.dsw.volumeExists(dswpUniqueVolumeName, '')).toBe(false);
    expect(rig.dsw.podExistsInVolume(podName, dswpUniqueVolumeName, '')).toBe(false);
    expect(rig.populator.podHasBeenSeenOnce(podName)).toBe(false);
  });

  it('scenario 30: a removed pod whose mount is uncertain leaves processedPods and the desired state', async () => {
    // Arrange
    const { rig, pod } = await prepareDswpWithPodPV();
    failPod(rig, pod);
    rig.podManager.delete(dswpPodUID);
    rig.podState.removed.add(dswpPodUID);
    rig.reconcileASW();
    rig.asw.markVolumeMountAsUncertain({
      podName,
      podUID: podUID(dswpPodUID),
      volumeName: dswpUniqueVolumeName,
      mounter: null,
      blockVolumeMapper: null,
      outerVolumeSpecName: dswpVolumeName,
      volumeGidValue: '',
      volumeSpec: specFromPersistentVolume(dswpPersistentVolume()),
      volumeMountState: 'VolumeMountUncertain',
      seLinuxMountContext: '',
    });
    expect(rig.asw.getVolumeMountState(dswpUniqueVolumeName, podName)).toBe('VolumeMountUncertain');

    // Act
    rig.populator.findAndRemoveDeletedPods();

    // Assert
    expect(rig.populator.podHasBeenSeenOnce(podName)).toBe(false);
    expect(rig.dsw.volumeExists(dswpUniqueVolumeName, '')).toBe(false);
    expect(rig.dsw.podExistsInVolume(podName, dswpUniqueVolumeName, '')).toBe(false);
    expect(volumeNamesToMount(rig)).toEqual([]);
  });

  it('scenario 31: a volume whose plugin stops being attachable is marked non-attachable and kept', async () => {
    // Arrange
    const { rig } = await prepareDswpWithPodPV();
    expect(rig.dsw.getVolumesToMount().map((v) => v.pluginIsAttachable)).toEqual([true]);
    rig.plugin.nonAttachable = true;

    // Act
    rig.populator.findAndRemoveDeletedPods();

    // Assert
    const vtms = rig.dsw.getVolumesToMount();
    expect(vtms.map((v) => [v.volumeName, v.podName, v.pluginIsAttachable])).toEqual([[dswpUniqueVolumeName, podName, false]]);
    expect(rig.dsw.volumeExists(dswpUniqueVolumeName, '')).toBe(true);
  });

  it('scenario 32: a generic ephemeral volume whose PVC the pod does not own is not processed and reports the owner error', async () => {
    // Arrange
    const rig = new PopulatorRig();
    const { pod, pv, pvc } = dswpEphemeralObjects({ owned: false });
    rig.serve(pv, pvc);
    rig.podManager.add(pod);

    // Act
    await rig.populator.findAndAddNewPods();

    // Assert
    expect(rig.populator.podPreviouslyProcessed(podName)).toBe(false);
    expect(rig.dsw.popPodErrors(podName)).toEqual([
      'PVC dswp-test/dswp-test-pod-dswp-test-volume-name was not created for pod dswp-test/dswp-test-pod (pod is not owner)',
    ]);
    expect(rig.dsw.getPods().size).toBe(0);
  });

  it('scenario 32: a generic ephemeral volume whose PVC the pod owns is added under the PV name', async () => {
    // Arrange
    const rig = new PopulatorRig();
    const { pod, pv, pvc } = dswpEphemeralObjects({ owned: true });
    rig.serve(pv, pvc);
    rig.podManager.add(pod);

    // Act
    await rig.populator.findAndAddNewPods();

    // Assert
    expect(rig.populator.podPreviouslyProcessed(podName)).toBe(true);
    expect(rig.dsw.getPodsWithErrors()).toEqual([]);
    expect(volumeNamesToMount(rig)).toEqual([dswpUniqueVolumeName]);
  });
});

describe('DesiredStateOfWorldPopulator.start: hasAddedPods', () => {
  let rig: PopulatorRig | undefined;
  afterEach(async () => {
    await rig?.populator.stop();
    rig = undefined;
  });

  it('runs the first loop one period after start and sets hasAddedPods after a loop that began with sources ready', async () => {
    // Arrange
    rig = prepareDswpWithVolume();
    rig.podManager.add(dswpPod());
    const sources = new FakeSourcesReady();
    sources.ready = true;

    // Act
    rig.populator.start(sources);
    await rig.clock.advance(99);

    // Assert: no loop yet (wait.PollUntil calls the condition after one period).
    expect(rig.dsw.getPods().size).toBe(0);
    expect(rig.populator.hasAddedPods()).toBe(false);

    // Act
    await rig.clock.advance(1);

    // Assert
    expect(rig.dsw.getPods().has(podName)).toBe(true);
    expect(rig.populator.hasAddedPods()).toBe(true);
  });

  it('polls at the poll period until hasAddedPods, then loops on the grid of the loop period', async () => {
    // Arrange: a 1 s loop (the agent's) with the kubelet's 100 ms polls.
    rig = new PopulatorRig({ loopSleepDurationMs: 1000, pollPeriodMs: 100 });
    rig.serve(dswpPersistentVolume(), dswpClaim());
    const sources = new FakeSourcesReady();
    rig.populator.start(sources);
    await rig.clock.advance(200);
    expect(rig.populator.hasAddedPods()).toBe(false);

    // Act: sources become ready; the next poll is at most one poll period away.
    sources.ready = true;
    await rig.clock.advance(100);

    // Assert
    expect(rig.populator.hasAddedPods()).toBe(true);

    // Act: a pod appears without a kick; only a loop finds it, at the loop's next tick on the
    // clock's 1 s grid (the fake clock starts on a whole second; 300 ms have passed).
    rig.podManager.add(dswpPod());
    await rig.clock.advance(699);
    expect(rig.dsw.getPods().size).toBe(0);
    await rig.clock.advance(1);

    // Assert
    expect(rig.dsw.getPods().has(podName)).toBe(true);
  });

  it('keeps hasAddedPods false while sources are not ready, although loops add pods', async () => {
    // Arrange
    rig = prepareDswpWithVolume();
    rig.podManager.add(dswpPod());
    const sources = new FakeSourcesReady();

    // Act
    rig.populator.start(sources);
    await rig.clock.advance(500);

    // Assert
    expect(rig.dsw.getPods().has(podName)).toBe(true);
    expect(rig.populator.hasAddedPods()).toBe(false);

    // Act
    sources.ready = true;
    await rig.clock.advance(100);

    // Assert
    expect(rig.populator.hasAddedPods()).toBe(true);
  });

  it('does not count a loop that began before sources were ready, even if it ends after they are', async () => {
    // Arrange
    rig = prepareDswpWithVolume();
    rig.podManager.add(dswpPod());
    const sources = new FakeSourcesReady();
    const release = rig.client.hold();
    rig.populator.start(sources);
    await rig.clock.advance(100);
    expect(rig.dsw.getPods().size).toBe(0);

    // Act: sources become ready while that loop waits for the API server.
    sources.ready = true;
    release();
    await rig.clock.flush();

    // Assert: the loop finished and added the pod, but it began with sources not ready.
    expect(rig.dsw.getPods().has(podName)).toBe(true);
    expect(rig.populator.hasAddedPods()).toBe(false);

    // Act: the next loop begins with sources ready.
    await rig.clock.advance(100);

    // Assert
    expect(rig.populator.hasAddedPods()).toBe(true);
  });
});

describe('getPodVolumeNames', () => {
  const podOpts: SELinuxOptions = { user: 'pod_u', role: 'pod_r', type: 'pod_t', level: 's0:c1,c2' };
  const containerOpts: SELinuxOptions = { level: 's0:c3,c4' };

  it('collects mounts and devices of init, regular and ephemeral containers', () => {
    // Arrange
    const pod: Pod = {
      metadata: { name: 'p', uid: 'u' },
      spec: {
        initContainers: [dswpContainer(['init-vol'], { name: 'init' })],
        containers: [dswpContainer(['app-vol'], { name: 'app' }), dswpContainer(['block-vol'], { name: 'blk', device: true })],
        ephemeralContainers: [dswpContainer(['debug-vol'], { name: 'debug' })],
      },
    };

    // Act
    const names = getPodVolumeNames(pod);

    // Assert
    expect([...names.mounts].sort()).toEqual(['app-vol', 'debug-vol', 'init-vol']);
    expect([...names.devices]).toEqual(['block-vol']);
    expect(names.seLinuxContainerContexts.size).toBe(0);
  });

  it.each([
    { name: 'no SELinux options anywhere', pod: undefined, container: undefined, expected: undefined },
    { name: 'pod-level options only', pod: podOpts, container: undefined, expected: [podOpts] },
    { name: 'container-level options only', pod: undefined, container: containerOpts, expected: [containerOpts] },
    { name: 'container options replace the pod options as a whole', pod: podOpts, container: containerOpts, expected: [containerOpts] },
  ])('gives each mount the effective SELinux options of its container: $name', ({ pod: podLevel, container, expected }) => {
    // Arrange
    const pod: Pod = {
      metadata: { name: 'p', uid: 'u' },
      spec: {
        ...(podLevel !== undefined ? { securityContext: { seLinuxOptions: podLevel } } : {}),
        containers: [{ ...dswpContainer(['vol']), ...(container !== undefined ? { securityContext: { seLinuxOptions: container } } : {}) }],
      },
    };

    // Act
    const names = getPodVolumeNames(pod);

    // Assert
    expect(names.seLinuxContainerContexts.get('vol')).toEqual(expected);
  });

  it('lists one context per container using the volume, init containers first, and none for devices', () => {
    // Arrange
    const pod: Pod = {
      metadata: { name: 'p', uid: 'u' },
      spec: {
        securityContext: { seLinuxOptions: podOpts },
        initContainers: [{ ...dswpContainer(['vol'], { name: 'init' }), securityContext: { seLinuxOptions: containerOpts } }],
        containers: [dswpContainer(['vol'], { name: 'app' }), dswpContainer(['blk'], { name: 'blk', device: true })],
      },
    };

    // Act
    const names = getPodVolumeNames(pod);

    // Assert
    expect(names.seLinuxContainerContexts.get('vol')).toEqual([containerOpts, podOpts]);
    expect(names.seLinuxContainerContexts.has('blk')).toBe(false);
  });
});

describe('processPodVolumes', () => {
  it('skips pod volumes that no container uses', async () => {
    // Arrange
    const rig = new PopulatorRig();
    const used: Volume = { name: 'used', gcePersistentDisk: { pdName: 'pd-used' } };
    const unused: Volume = { name: 'unused', persistentVolumeClaim: { claimName: 'missing-claim' } };
    rig.podManager.add(dswpPod({ volumes: [used, unused], containers: [dswpContainer(['used'])] }));

    // Act
    await rig.populator.findAndAddNewPods();

    // Assert
    expect(volumeNamesToMount(rig)).toEqual([uniqueVolumeName('fake-plugin/pd-used')]);
    expect(rig.dsw.getPodsWithErrors()).toEqual([]);
    expect(rig.populator.podPreviouslyProcessed(podName)).toBe(true);
  });

  it('passes each volume the SELinux contexts of the containers that mount it', async () => {
    // Arrange
    const plugin = new FakeVolumePlugin({ supportsSELinux: true });
    const rig = new PopulatorRig({ plugins: [plugin], seLinuxTranslator: newSELinuxLabelTranslator(true) });
    const pv = dswpPersistentVolume();
    pv.spec.accessModes = ['ReadWriteOncePod'];
    rig.serve(pv, dswpClaim());
    const pod = dswpPod();
    pod.spec.securityContext = { seLinuxOptions: { level: 's0:c1,c2' } };
    rig.podManager.add(pod);

    // Act
    await rig.populator.findAndAddNewPods();

    // Assert
    expect(rig.dsw.getVolumesToMount().map((v) => v.seLinuxLabel)).toEqual(['system_u:object_r:container_file_t:s0:c1,c2']);
  });

  it('drops the stored errors of pods that left the pod manager', async () => {
    // Arrange
    const rig = prepareDswpWithVolume();
    rig.kube.failClaims = true;
    rig.podManager.add(dswpPod());
    await rig.populator.findAndAddNewPods();
    expect(rig.dsw.getPodsWithErrors()).toEqual([podName]);
    rig.podManager.delete(dswpPodUID);

    // Act
    rig.populator.findAndRemoveDeletedPods();

    // Assert
    expect(rig.dsw.getPodsWithErrors()).toEqual([]);
  });
});

describe('unresolved pod volumes (kubernetes#120150)', () => {
  it('processPodVolumes records each volume it cannot resolve, by pod volume name, and forgets it once added', async () => {
    // Arrange: the claim volume fails, the inline one resolves.
    const rig = prepareDswpWithVolume();
    rig.kube.failClaims = true;
    const pod = dswpPod({
      volumes: [{ name: dswpVolumeName, persistentVolumeClaim: { claimName: dswpClaimName } }, { name: 'scratch', emptyDir: {} }],
      containers: [dswpContainer([dswpVolumeName, 'scratch'])],
    });
    rig.podManager.add(pod);
    const unresolved = rig.populator.getUnresolvedPodVolumes();

    // Act
    await rig.populator.findAndAddNewPods();

    // Assert
    const error = 'error processing PVC ns/file-bound: failed to fetch PVC from API server: persistentvolumeclaims "file-bound" not found';
    expect(unresolved.get(podName)).toEqual([{ outerVolumeSpecName: dswpVolumeName, reason: error }]);
    expect(unresolved.describe(podName)).toBe(`${dswpVolumeName}: ${error}`);

    // Act: the claim resolves on the next loop.
    rig.kube.failClaims = false;
    await rig.populator.findAndAddNewPods();

    // Assert
    expect(unresolved.hasUnresolved(podName)).toBe(false);
    expect(unresolved.pods()).toEqual([]);
  });

  it('findAndRemoveDeletedPods forgets the unresolved volumes of a pod only once its runtime may be removed', async () => {
    // Arrange
    const rig = prepareDswpWithVolume();
    rig.kube.failClaims = true;
    rig.podManager.add(dswpPod());
    await rig.populator.findAndAddNewPods();
    const unresolved = rig.populator.getUnresolvedPodVolumes();
    expect(unresolved.hasUnresolved(podName)).toBe(true);

    // Act: listed and running; then deleted from the source while its containers may still run.
    rig.populator.findAndRemoveDeletedPods();
    const whileListed = unresolved.hasUnresolved(podName);
    rig.podManager.delete(dswpPodUID);
    rig.populator.findAndRemoveDeletedPods();
    const whileContainersMayRun = unresolved.hasUnresolved(podName);
    rig.podState.removed.add(dswpPodUID);
    rig.populator.findAndRemoveDeletedPods();

    // Assert
    expect(whileListed).toBe(true);
    expect(whileContainersMayRun).toBe(true);
    expect(unresolved.hasUnresolved(podName)).toBe(false);
  });
});

describe('createVolumeSpec', () => {
  type ApiChange = (rig: PopulatorRig) => void;
  const mutatePvc = (f: (pvc: ReturnType<typeof dswpClaim>) => void): ApiChange => (rig) => {
    const pvc = dswpClaim();
    f(pvc);
    rig.kube.pvcs.set(`${dswpNamespace}/${dswpClaimName}`, pvc);
  };
  const mutatePv = (f: (pv: ReturnType<typeof dswpPersistentVolume>) => void): ApiChange => (rig) => {
    const pv = dswpPersistentVolume();
    f(pv);
    rig.kube.pvs.set(dswpVolumeName, pv);
  };

  it.each<{ name: string; change: ApiChange; device?: boolean; error: string }>([
    {
      name: 'the PVC cannot be fetched',
      change: (rig) => {
        rig.kube.pvcs.clear();
      },
      error: 'error processing PVC ns/file-bound: failed to fetch PVC from API server: persistentvolumeclaims "file-bound" not found',
    },
    {
      name: 'the PVC is being deleted',
      change: mutatePvc((pvc) => {
        pvc.metadata.deletionTimestamp = '2024-01-01T00:00:00Z';
      }),
      error: 'error processing PVC ns/file-bound: PVC is being deleted',
    },
    {
      name: 'the PVC is not bound',
      change: mutatePvc((pvc) => {
        pvc.status = { phase: 'Pending' };
      }),
      error: 'error processing PVC ns/file-bound: PVC is not bound',
    },
    {
      name: 'the PVC has no volume name',
      change: mutatePvc((pvc) => {
        pvc.spec.volumeName = '';
      }),
      error: 'error processing PVC ns/file-bound: PVC has empty pvc.Spec.VolumeName',
    },
    {
      name: 'the PV cannot be fetched',
      change: (rig) => {
        rig.kube.pvs.clear();
      },
      error: 'error processing PVC ns/file-bound: failed to fetch PV dswp-test-volume-name from API server: persistentvolumes "dswp-test-volume-name" not found',
    },
    {
      name: 'the PV has no claimRef',
      change: mutatePv((pv) => {
        delete pv.spec.claimRef;
      }),
      error:
        'error processing PVC ns/file-bound: found PV object dswp-test-volume-name but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim',
    },
    {
      name: 'the PV claimRef UID differs from the claim UID',
      change: (rig) => {
        mutatePvc((pvc) => {
          pvc.metadata.uid = 'claim-uid';
        })(rig);
        mutatePv((pv) => {
          pv.spec.claimRef = { namespace: dswpNamespace, name: dswpClaimName, uid: 'other-uid' };
        })(rig);
      },
      error: 'error processing PVC ns/file-bound: found PV object dswp-test-volume-name but its pv.Spec.ClaimRef.UID other-uid does not point to claim.UID claim-uid',
    },
    {
      name: 'a Block PV is used in volumeMounts',
      change: mutatePv((pv) => {
        pv.spec.volumeMode = 'Block';
      }),
      error: 'volume dswp-test-volume-name has volumeMode Block, but is specified in volumeMounts',
    },
    {
      name: 'a Filesystem PV is used in volumeDevices',
      change: () => undefined,
      device: true,
      error: 'volume dswp-test-volume-name has volumeMode Filesystem, but is specified in volumeDevices',
    },
  ])('fails when $name', async ({ change, device, error }) => {
    // Arrange
    const rig = prepareDswpWithVolume();
    change(rig);
    const pod = dswpPod({ containers: [dswpContainer([dswpVolumeName], { device: device === true })] });
    const { mounts, devices } = getPodVolumeNames(pod);
    const podVolume = pod.spec.volumes?.[0] as Volume;

    // Act
    const result = rig.populator.createVolumeSpec(podVolume, pod, mounts, devices);

    // Assert
    await expect(result).rejects.toThrow(new Error(error));
  });

  it.each([
    { name: 'a Filesystem PV in volumeMounts', mode: 'Filesystem' as const, device: false },
    { name: 'a PV without volumeMode in volumeMounts', mode: undefined, device: false },
    { name: 'a Block PV in volumeDevices', mode: 'Block' as const, device: true },
  ])('builds the spec from $name', async ({ mode, device }) => {
    // Arrange
    const rig = new PopulatorRig();
    const pv = dswpPersistentVolume();
    if (mode === undefined) delete pv.spec.volumeMode;
    else pv.spec.volumeMode = mode;
    rig.serve(pv, dswpClaim());
    const pod = dswpPod({ containers: [dswpContainer([dswpVolumeName], { device })] });
    const { mounts, devices } = getPodVolumeNames(pod);

    // Act
    const created = await rig.populator.createVolumeSpec(pod.spec.volumes?.[0] as Volume, pod, mounts, devices);

    // Assert
    expect(created.spec.persistentVolume?.metadata.name).toBe(dswpVolumeName);
    expect(created.pvc?.metadata.name).toBe(dswpClaimName);
    expect(created.volumeGidValue).toBe('');
  });

  it('takes readOnly from the pod claim entry and the gid from the PV annotation', async () => {
    // Arrange
    const rig = new PopulatorRig();
    const pv = dswpPersistentVolume();
    pv.metadata.annotations = { 'pv.beta.kubernetes.io/gid': '1234' };
    rig.serve(pv, dswpClaim());
    const pod = dswpPod({ claimReadOnly: true });
    const { mounts, devices } = getPodVolumeNames(pod);

    // Act
    const created = await rig.populator.createVolumeSpec(pod.spec.volumes?.[0] as Volume, pod, mounts, devices);

    // Assert
    expect(created.spec.readOnly).toBe(true);
    expect(created.volumeGidValue).toBe('1234');
  });

  it('uses a deep copy of an inline volume as the spec', async () => {
    // Arrange
    const rig = new PopulatorRig();
    const inline: Volume = { name: 'inline', gcePersistentDisk: { pdName: 'pd' } };
    const pod = dswpPod({ volumes: [inline], containers: [dswpContainer(['inline'])] });
    const { mounts, devices } = getPodVolumeNames(pod);

    // Act
    const created = await rig.populator.createVolumeSpec(inline, pod, mounts, devices);
    inline.gcePersistentDisk = { pdName: 'changed' };

    // Assert
    expect(created).toEqual({ pvc: null, spec: specFromVolume({ name: 'inline', gcePersistentDisk: { pdName: 'pd' } }), volumeGidValue: '' });
  });
});

describe('checkVolumeFSResize', () => {
  /** `getResizeRequiredVolumes`: volumes for which the actual state asks for a file-system resize. */
  function resizeRequiredVolumes(rig: PopulatorRig, newSize: number): { volume: UniqueVolumeName; currentSize: number }[] {
    const out: { volume: UniqueVolumeName; currentSize: number }[] = [];
    for (const vtm of rig.dsw.getVolumesToMount()) {
      const { err } = rig.asw.podExistsInVolume(vtm.podName, vtm.volumeName, newSize, '');
      if (isFsResizeRequiredError(err)) out.push({ volume: vtm.volumeName, currentSize: err.currentSize });
    }
    return out;
  }

  it.each<{
    name: string;
    resize: boolean;
    readOnly?: boolean;
    clearASW?: boolean;
    mode?: 'Filesystem' | 'Block';
    ephemeral?: boolean;
    desiredSize: number;
    claimSize: number | null;
    resizeRequired: boolean;
  }>([
    { name: 'no resize was requested', resize: false, desiredSize: Gi, claimSize: Gi, resizeRequired: false },
    { name: 'the pod uses the claim read-only', resize: true, readOnly: true, desiredSize: Gi, claimSize: null, resizeRequired: false },
    { name: 'the volume is not mounted', resize: true, clearASW: true, desiredSize: Gi, claimSize: null, resizeRequired: false },
    { name: 'a mounted Filesystem volume grew', resize: true, desiredSize: 2 * Gi, claimSize: Gi, resizeRequired: true },
    { name: 'a mounted Block volume grew', resize: true, mode: 'Block', desiredSize: 2 * Gi, claimSize: Gi, resizeRequired: true },
    { name: 'a mounted generic ephemeral volume grew', resize: true, ephemeral: true, desiredSize: 2 * Gi, claimSize: Gi, resizeRequired: true },
  ])('records sizes when $name', async (tc) => {
    // Arrange
    const rig = new PopulatorRig();
    let pod: Pod;
    let claimKey = `${dswpNamespace}/${dswpClaimName}`;
    if (tc.ephemeral === true) {
      const objs = dswpEphemeralObjects({ owned: true, capacity: '1Gi' });
      rig.serve(objs.pv, objs.pvc);
      pod = objs.pod;
      claimKey = `dswp-test/${objs.pvc.metadata.name}`;
    } else {
      rig.serve(dswpPersistentVolume({ capacity: '1Gi', mode: tc.mode ?? 'Filesystem' }), dswpClaim({ statusCapacity: '1Gi' }));
      pod = dswpPod({
        claimReadOnly: tc.readOnly === true,
        containers: [dswpContainer([dswpVolumeName], { device: tc.mode === 'Block', readOnly: tc.readOnly === true })],
      });
    }
    rig.podManager.add(pod);
    await rig.populator.findAndAddNewPods();
    rig.reconcileASW();
    if (tc.resize) {
      const pv = rig.kube.pvs.get(dswpVolumeName);
      if (pv !== undefined) pv.spec.capacity = { storage: '2Gi' };
    }
    if (tc.clearASW === true) rig.clearASW();
    expect(rig.kube.pvcs.get(claimKey)?.status?.capacity).toEqual({ storage: '1Gi' });

    // Act
    rig.populator.reprocessPod(podName);
    await rig.populator.findAndAddNewPods();

    // Assert
    expect(rig.dsw.getVolumesToMount().map((v) => v.desiredPersistentVolumeSize)).toEqual([tc.desiredSize]);
    expect(rig.asw.getClaimSize(dswpUniqueVolumeName)).toBe(tc.claimSize);
    expect(resizeRequiredVolumes(rig, tc.resize ? 2 * Gi : Gi)).toEqual(tc.resizeRequired ? [{ volume: dswpUniqueVolumeName, currentSize: Gi }] : []);
  });

  it('ignores inline volumes, which have no claim', async () => {
    // Arrange
    const rig = new PopulatorRig({ plugins: [new FakeFileVolumePlugin()] });
    const inline: Volume = { name: 'inline', emptyDir: {} };
    rig.podManager.add(dswpPod({ volumes: [inline], containers: [dswpContainer(['inline'])] }));
    await rig.populator.findAndAddNewPods();
    rig.reconcileASW();

    // Act
    rig.populator.reprocessPod(podName);
    await rig.populator.findAndAddNewPods();

    // Assert
    const inlineName = uniqueVolumeName(`fake-file-plugin/${dswpPodUID}-inline`);
    expect(rig.dsw.getVolumesToMount().map((v) => [v.volumeName, v.desiredPersistentVolumeSize])).toEqual([[inlineName, 0]]);
    expect(rig.asw.getClaimSize(inlineName)).toBeNull();
    expect(rig.asw.volumeExists(inlineName)).toBe(true);
  });
});

describe('findAndAddNewPods bookkeeping', () => {
  it('marks every remount-requiring volume of a newly processed pod for remount', async () => {
    // Arrange
    const plugin = new FakeVolumePlugin({ supportsRemount: true });
    const rig = new PopulatorRig({ plugins: [plugin] });
    rig.serve(dswpPersistentVolume(), dswpClaim());
    rig.podManager.add(dswpPod());
    await rig.populator.findAndAddNewPods();
    rig.reconcileASW();
    expect(rig.asw.podExistsInVolume(podName, dswpUniqueVolumeName, 0, '').err).toBeNull();

    // Act
    rig.populator.reprocessPod(podName);
    await rig.populator.findAndAddNewPods();

    // Assert
    const { mounted, err } = rig.asw.podExistsInVolume(podName, dswpUniqueVolumeName, 0, '');
    expect(mounted).toBe(true);
    expect(err?.message).toBe(`volumeName "fake-plugin/dswp-test-volume-name" is mounted to "${dswpPodUID}" but should be remounted`);
  });
});
