import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock/fake-clock.ts';
import { defaultFeatureGates, type FeatureGates } from '../../volume/features.ts';
import type { Container, PersistentVolume, PersistentVolumeAccessMode, Pod, SELinuxOptions, Volume } from '../../volume/k8s-types.ts';
import { VolumePluginMgr, type VolumePlugin } from '../../volume/plugins.ts';
import { specFromPersistentVolume, specFromVolume, type Spec } from '../../volume/spec.ts';
import { FakeFileVolumePlugin, FakeVolumePlugin } from '../../volume/testing/fake-volume-plugin.ts';
import { uniquePodName, uniqueVolumeName, type UniquePodName, type UniqueVolumeName } from '../../volume/types.ts';
import { newSELinuxLabelTranslator } from '../../volume/util/selinux.ts';
import { DesiredStateOfWorld, isSELinuxConflictError, maxPodErrors } from './desired-state-of-world.ts';

const Gi = 2 ** 30;

interface DswRig {
  dsw: DesiredStateOfWorld;
  clock: FakeClock;
}

function newDsw(opts: { plugins?: VolumePlugin[]; gates?: Partial<FeatureGates>; seLinuxEnabled?: boolean } = {}): DswRig {
  const clock = new FakeClock();
  const dsw = new DesiredStateOfWorld({
    pluginMgr: new VolumePluginMgr(opts.plugins ?? [new FakeVolumePlugin()], null),
    seLinuxTranslator: newSELinuxLabelTranslator(opts.seLinuxEnabled ?? false),
    featureGates: { ...defaultFeatureGates, ...opts.gates },
    clock,
  });
  return { dsw, clock };
}

function makePod(name: string, volumes: Volume[], containers?: Container[]): Pod {
  return {
    metadata: { name, uid: `${name}uid`, namespace: 'default' },
    spec: { volumes, containers: containers ?? [{ name: 'c', volumeMounts: volumes.map((v) => ({ name: v.name, mountPath: `/mnt/${v.name}` })) }] },
  };
}

function podNameOf(pod: Pod): UniquePodName {
  return uniquePodName(pod.metadata.uid ?? '');
}

function gcePd(name: string, pdName: string): Volume {
  return { name, gcePersistentDisk: { pdName } };
}

/** Adds every volume of the pod with its volume name as outer name. */
function addPod(dsw: DesiredStateOfWorld, pod: Pod, contexts: readonly (SELinuxOptions | undefined)[] = []): UniqueVolumeName[] {
  return (pod.spec.volumes ?? []).map((v) => dsw.addPodToVolume(podNameOf(pod), pod, specFromVolume(v), v.name, '', contexts));
}

function pvSpec(name: string, accessModes: PersistentVolumeAccessMode[], capacity?: string): Spec {
  const pv: PersistentVolume = {
    metadata: { name },
    spec: { accessModes, ...(capacity !== undefined ? { capacity: { storage: capacity } } : {}) },
  };
  return specFromPersistentVolume(pv);
}

function reportedInUse(dsw: DesiredStateOfWorld): Record<string, boolean> {
  return Object.fromEntries(dsw.getVolumesToMount().map((v) => [v.volumeName, v.reportedInUse]));
}

describe('DesiredStateOfWorld scenarios (desired_state_of_world_test.go)', () => {
  it('scenario 33: MarkVolumesReportedInUse sets reportedInUse exactly for the listed volumes', () => {
    // Arrange
    const { dsw } = newDsw();
    const [v1] = addPod(dsw, makePod('pod1', [gcePd('volume1-name', 'fake-device1')]));
    const [v2] = addPod(dsw, makePod('pod2', [gcePd('volume2-name', 'fake-device2')]));
    const [v3] = addPod(dsw, makePod('pod3', [gcePd('volume3-name', 'fake-device3')]));
    expect([v1, v2, v3]).toEqual(['fake-plugin/fake-device1', 'fake-plugin/fake-device2', 'fake-plugin/fake-device3']);
    expect(reportedInUse(dsw)).toEqual({ 'fake-plugin/fake-device1': false, 'fake-plugin/fake-device2': false, 'fake-plugin/fake-device3': false });

    // Act
    dsw.markVolumesReportedInUse([uniqueVolumeName('fake-plugin/fake-device2')]);

    // Assert
    expect(reportedInUse(dsw)).toEqual({ 'fake-plugin/fake-device1': false, 'fake-plugin/fake-device2': true, 'fake-plugin/fake-device3': false });

    // Act
    dsw.markVolumesReportedInUse([uniqueVolumeName('fake-plugin/fake-device3')]);

    // Assert
    expect(reportedInUse(dsw)).toEqual({ 'fake-plugin/fake-device1': false, 'fake-plugin/fake-device2': false, 'fake-plugin/fake-device3': true });
    for (const pod of ['pod1uid', 'pod2uid', 'pod3uid']) expect(dsw.getPods().has(uniquePodName(pod))).toBe(true);
  });

  const limitedContainers: Container[] = [
    { name: 'c1', resources: { limits: { 'ephemeral-storage': '1Gi' } } },
    { name: 'c2', resources: { limits: { 'ephemeral-storage': '1Gi' } } },
  ];
  it.each([
    { pod: 'pod1', containers: limitedContainers, expected: [1 * Gi, 2 * Gi, 2 * Gi, 2 * Gi] },
    { pod: 'pod2', containers: [{ name: 'c' }], expected: [1 * Gi, 2 * Gi, 3 * Gi, 0] },
  ])('scenario 34: emptyDir size limits of $pod are [1Gi, 2Gi, 3Gi, none] capped by the pod ephemeral-storage limit', ({ pod: name, containers, expected }) => {
    // Arrange
    const { dsw } = newDsw({ plugins: [new FakeFileVolumePlugin()] });
    const volumes: Volume[] = [
      { name: 'empty-1', emptyDir: { sizeLimit: '1Gi' } },
      { name: 'empty-2', emptyDir: { sizeLimit: '2Gi' } },
      { name: 'empty-3', emptyDir: { sizeLimit: '3Gi' } },
      { name: 'empty-none', emptyDir: {} },
    ];
    const pod = makePod(name, volumes, containers);

    // Act
    const names = addPod(dsw, pod);

    // Assert
    const limits = new Map(dsw.getVolumesToMount().map((v) => [v.volumeName, v.desiredSizeLimit]));
    expect(names.map((n) => limits.get(n))).toEqual(expected);
    expect(names).toEqual(volumes.map((v) => `fake-file-plugin/${name}uid-${v.name}`));
  });

  describe('scenario 35: SELinux labels with SELinuxMountReadWriteOncePod', () => {
    const context1: SELinuxOptions = { user: 'system_u', role: 'object_r', type: 'container_t', level: 's0:c1,c2' };
    const context2: SELinuxOptions = { user: 'system_u', role: 'object_r', type: 'container_t', level: 's0:c3,c4' };
    const label1 = 'system_u:object_r:container_file_t:s0:c1,c2';
    const label2 = 'system_u:object_r:container_file_t:s0:c3,c4';
    const basic = () => new FakeVolumePlugin({ name: 'basic', supportsSELinux: true });
    const rwopSpec = () => pvSpec('basic-pv', ['ReadWriteOncePod']);
    const rig = () => newDsw({ plugins: [basic()], seLinuxEnabled: true, gates: { SELinuxMountReadWriteOncePod: true } });
    const pod1 = makePod('pod1', [{ name: 'vol', persistentVolumeClaim: { claimName: 'claim' } }]);
    const pod2 = makePod('pod2', [{ name: 'vol', persistentVolumeClaim: { claimName: 'claim' } }]);

    it('a second pod with the same context gets the same volume name and no error', () => {
      // Arrange
      const { dsw } = rig();
      const first = dsw.addPodToVolume(podNameOf(pod1), pod1, rwopSpec(), 'vol', '', [context1]);

      // Act
      const second = dsw.addPodToVolume(podNameOf(pod2), pod2, rwopSpec(), 'vol', '', [context1]);

      // Assert
      expect(first).toBe('basic/basic-pv');
      expect(second).toBe(first);
      expect(dsw.getVolumesToMount().map((v) => [v.podName, v.seLinuxLabel]).sort()).toEqual([
        ['pod1uid', label1],
        ['pod2uid', label1],
      ]);
      expect(dsw.volumeExists(first, label1)).toBe(true);
    });

    it('a second pod with another context is refused and the first pod keeps the original label', () => {
      // Arrange
      const { dsw } = rig();
      const vol = dsw.addPodToVolume(podNameOf(pod1), pod1, rwopSpec(), 'vol', '', [context1]);

      // Act
      const add = () => dsw.addPodToVolume(podNameOf(pod2), pod2, rwopSpec(), 'vol', '', [context2]);

      // Assert
      expect(add).toThrow(`conflicting SELinux labels of volume basic-pv: "${label1}" and "${label2}"`);
      let thrown: unknown;
      try {
        add();
      } catch (err) {
        thrown = err;
      }
      expect(isSELinuxConflictError(thrown)).toBe(true);
      expect(dsw.podExistsInVolume(podNameOf(pod1), vol, label1)).toBe(true);
      expect(dsw.podExistsInVolume(podNameOf(pod2), vol, label1)).toBe(false);
      expect(dsw.podExistsInVolume(podNameOf(pod2), vol, label2)).toBe(false);
      expect(dsw.getVolumesToMount().map((v) => [v.podName, v.seLinuxLabel])).toEqual([['pod1uid', label1]]);
    });

    it.each<{ name: string; plugin: FakeVolumePlugin; spec: Spec; seLinuxEnabled: boolean; gate: boolean; contexts: (SELinuxOptions | undefined)[] }>([
      { name: 'the PV is ReadWriteMany', plugin: basic(), spec: pvSpec('basic-pv', ['ReadWriteMany']), seLinuxEnabled: true, gate: true, contexts: [context1] },
      { name: 'the PV has two access modes', plugin: basic(), spec: pvSpec('basic-pv', ['ReadWriteOncePod', 'ReadOnlyMany']), seLinuxEnabled: true, gate: true, contexts: [context1] },
      { name: 'the volume is inline', plugin: basic(), spec: specFromVolume({ name: 'basic-pv' }), seLinuxEnabled: true, gate: true, contexts: [context1] },
      { name: 'the plugin does not support SELinux mounts', plugin: new FakeVolumePlugin({ name: 'basic' }), spec: rwopSpec(), seLinuxEnabled: true, gate: true, contexts: [context1] },
      { name: 'SELinux is disabled on the host', plugin: basic(), spec: rwopSpec(), seLinuxEnabled: false, gate: true, contexts: [context1] },
      { name: 'the SELinuxMountReadWriteOncePod gate is off', plugin: basic(), spec: rwopSpec(), seLinuxEnabled: true, gate: false, contexts: [context1] },
      { name: 'no container asks for a context', plugin: basic(), spec: rwopSpec(), seLinuxEnabled: true, gate: true, contexts: [] },
    ])('the label is "" when $name', ({ plugin, spec, seLinuxEnabled, gate, contexts }) => {
      // Arrange
      const { dsw } = newDsw({ plugins: [plugin], seLinuxEnabled, gates: { SELinuxMountReadWriteOncePod: gate } });

      // Act
      const vol = dsw.addPodToVolume(podNameOf(pod1), pod1, spec, 'vol', '', contexts);

      // Assert
      expect(dsw.getVolumesToMount().map((v) => v.seLinuxLabel)).toEqual(['']);
      expect(dsw.getVolumes().map((v) => v.seLinuxLabel)).toEqual(['']);
      expect(dsw.volumeExists(vol, '')).toBe(true);
    });

    it('a second pod with another context on a ReadWriteMany volume is accepted (warning only)', () => {
      // Arrange
      const { dsw } = rig();
      const rwx = () => pvSpec('basic-pv', ['ReadWriteMany']);
      const vol = dsw.addPodToVolume(podNameOf(pod1), pod1, rwx(), 'vol', '', [context1]);

      // Act
      const second = dsw.addPodToVolume(podNameOf(pod2), pod2, rwx(), 'vol', '', [context2]);

      // Assert
      expect(second).toBe(vol);
      expect(dsw.podExistsInVolume(podNameOf(pod2), vol, '')).toBe(true);
    });

    it('containers of one pod with different contexts on a RWOP volume are refused', () => {
      // Arrange
      const { dsw } = rig();

      // Act
      const add = () => dsw.addPodToVolume(podNameOf(pod1), pod1, rwopSpec(), 'vol', '', [context2, context1]);

      // Assert
      expect(add).toThrow(`volume basic-pv is used with two different SELinux contexts in the same pod: "${label2}", "${label1}"`);
      expect(dsw.getPods().size).toBe(0);
    });

    it('containers of one pod with different contexts on a ReadWriteMany volume are accepted with label ""', () => {
      // Arrange
      const { dsw } = rig();

      // Act
      const vol = dsw.addPodToVolume(podNameOf(pod1), pod1, pvSpec('basic-pv', ['ReadWriteMany']), 'vol', '', [context1, context2]);

      // Assert
      expect(dsw.podExistsInVolume(podNameOf(pod1), vol, '')).toBe(true);
    });
  });
});

describe('DesiredStateOfWorld.addPodToVolume', () => {
  class NamelessPlugin extends FakeVolumePlugin {
    override getVolumeName(): string {
      throw new Error('volume has no PD name');
    }
  }

  it.each([
    {
      name: 'no plugin supports the spec',
      plugins: () => [new FakeVolumePlugin({ canSupport: () => false })],
      error: 'failed to get Plugin from volumeSpec for volume "volume-name" err=no volume plugin matched',
    },
    {
      name: 'two plugins support the spec',
      plugins: () => [new FakeVolumePlugin(), new FakeFileVolumePlugin()],
      error: 'failed to get Plugin from volumeSpec for volume "volume-name" err=multiple volume plugins matched: fake-plugin,fake-file-plugin',
    },
    {
      name: 'the plugin cannot name the volume',
      plugins: () => [new NamelessPlugin()],
      error: 'failed to GetUniqueVolumeNameFromSpec for volumeSpec "volume-name" using volume plugin "fake-plugin" err=volume has no PD name',
    },
  ])('fails when $name', ({ plugins, error }) => {
    // Arrange
    const { dsw } = newDsw({ plugins: plugins() });
    const pod = makePod('pod1', [gcePd('volume-name', 'fake-device1')]);

    // Act
    const add = () => addPod(dsw, pod);

    // Assert
    expect(add).toThrow(new Error(error));
    expect(dsw.getVolumesToMount()).toEqual([]);
  });

  it.each([
    { name: 'attachable', plugin: () => new FakeVolumePlugin({ name: 'attachable' }), attachable: true, deviceMountable: true, pod1: 'attachable/pd1', pod2: 'attachable/pd1' },
    {
      name: 'device-mountable only',
      plugin: () => new FakeVolumePlugin({ name: 'device-mountable', nonAttachable: true }),
      attachable: false,
      deviceMountable: true,
      pod1: 'device-mountable/pd1',
      pod2: 'device-mountable/pd1',
    },
    { name: 'neither', plugin: () => new FakeFileVolumePlugin(), attachable: false, deviceMountable: false, pod1: 'fake-file-plugin/pod1uid-vol', pod2: 'fake-file-plugin/pod2uid-vol' },
  ])('names a volume of a plugin that is $name', ({ plugin, attachable, deviceMountable, pod1, pod2 }) => {
    // Arrange
    const { dsw } = newDsw({ plugins: [plugin()] });

    // Act
    const [name1] = addPod(dsw, makePod('pod1', [gcePd('vol', 'pd1')]));
    const [name2] = addPod(dsw, makePod('pod2', [gcePd('vol', 'pd1')]));

    // Assert
    expect([name1, name2]).toEqual([pod1, pod2]);
    expect(dsw.getVolumes().map((v) => [v.volumeName, v.pluginIsAttachable, v.pluginIsDeviceMountable, v.pods.length])).toEqual(
      pod1 === pod2 ? [[pod1, attachable, deviceMountable, 2]] : [[pod1, attachable, deviceMountable, 1], [pod2, attachable, deviceMountable, 1]],
    );
  });

  it('names a PV-backed volume after the PV and records the PV as inner spec name', () => {
    // Arrange
    const { dsw } = newDsw();
    const pod = makePod('pod1', [{ name: 'data', persistentVolumeClaim: { claimName: 'claim' } }]);

    // Act
    const vol = dsw.addPodToVolume(podNameOf(pod), pod, pvSpec('pv-1', ['ReadWriteOnce'], '10Gi'), 'data', '1234', []);

    // Assert
    expect(vol).toBe('fake-plugin/pv-1');
    expect(dsw.volumeExistsWithSpecName(podNameOf(pod), 'pv-1')).toBe(true);
    expect(dsw.volumeExistsWithSpecName(podNameOf(pod), 'data')).toBe(false);
    expect(dsw.volumeExistsWithSpecName(uniquePodName('other'), 'pv-1')).toBe(false);
    const [vtm] = dsw.getVolumesToMount();
    expect(vtm).toMatchObject({
      volumeName: 'fake-plugin/pv-1',
      podName: 'pod1uid',
      outerVolumeSpecName: 'data',
      volumeGidValue: '1234',
      pluginIsAttachable: true,
      pluginIsDeviceMountable: true,
      reportedInUse: false,
      devicePath: '',
      desiredSizeLimit: null,
      desiredPersistentVolumeSize: 10 * Gi,
      seLinuxLabel: '',
    });
  });

  it('refreshes the pod object, spec and outer name of a pod added again', () => {
    // Arrange
    const { dsw } = newDsw();
    const pod = makePod('pod1', [gcePd('volume-name', 'fake-device1')]);
    const [vol] = addPod(dsw, pod);
    const updated: Pod = { ...pod, metadata: { ...pod.metadata, labels: { version: '2' } } };

    // Act
    const again = dsw.addPodToVolume(podNameOf(pod), updated, specFromVolume(gcePd('renamed', 'fake-device1')), 'renamed', '', []);

    // Assert
    expect(again).toBe(vol);
    const vtms = dsw.getVolumesToMount();
    expect(vtms.map((v) => [v.outerVolumeSpecName, v.pod.metadata.labels, v.volumeSpec.volume?.name])).toEqual([['renamed', { version: '2' }, 'renamed']]);
  });

  it.each([
    { requiresRemount: false, expectedDelayMs: 0 },
    { requiresRemount: true, expectedDelayMs: 1000 },
  ])('keeps mountRequestTime of a re-added pod unless the plugin requires remounts (requiresRemount=$requiresRemount)', async ({ requiresRemount, expectedDelayMs }) => {
    // Arrange
    const { dsw, clock } = newDsw({ plugins: [new FakeVolumePlugin({ supportsRemount: requiresRemount })] });
    const pod = makePod('pod1', [gcePd('volume-name', 'fake-device1')]);
    const start = clock.now();
    addPod(dsw, pod);
    expect(dsw.getVolumesToMount().map((v) => v.mountRequestTime)).toEqual([start]);
    await clock.advance(1000);

    // Act
    addPod(dsw, pod);

    // Assert
    expect(dsw.getVolumesToMount().map((v) => v.mountRequestTime)).toEqual([start + expectedDelayMs]);
  });

  it('gives a new pod on an existing volume its own mountRequestTime', async () => {
    // Arrange
    const { dsw, clock } = newDsw();
    const start = clock.now();
    addPod(dsw, makePod('pod1', [gcePd('volume-name', 'fake-device1')]));
    await clock.advance(500);

    // Act
    addPod(dsw, makePod('pod2', [gcePd('volume-name', 'fake-device1')]));

    // Assert
    const times = Object.fromEntries(dsw.getVolumesToMount().map((v) => [v.podName, v.mountRequestTime]));
    expect(times).toEqual({ pod1uid: start, pod2uid: start + 500 });
  });

  it.each<{ name: string; volume: Volume; expected: number | null }>([
    { name: 'a disk-backed emptyDir', volume: { name: 'v', emptyDir: { sizeLimit: '1Gi' } }, expected: 1 * Gi },
    { name: 'a configMap', volume: { name: 'v', configMap: { name: 'cm' } }, expected: 2 * Gi },
    { name: 'a memory-backed emptyDir', volume: { name: 'v', emptyDir: { medium: 'Memory', sizeLimit: '1Gi' } }, expected: null },
    { name: 'a hostPath', volume: { name: 'v', hostPath: { path: '/tmp' } }, expected: null },
  ])('computes desiredSizeLimit for $name', ({ volume, expected }) => {
    // Arrange
    const { dsw } = newDsw({ plugins: [new FakeFileVolumePlugin()] });
    const pod = makePod('pod1', [volume], [{ name: 'c', resources: { limits: { 'ephemeral-storage': '2Gi' } }, volumeMounts: [{ name: 'v', mountPath: '/v' }] }]);

    // Act
    addPod(dsw, pod);

    // Assert
    expect(dsw.getVolumesToMount().map((v) => v.desiredSizeLimit)).toEqual([expected]);
  });

  it('takes the largest init container limit when it exceeds the sum of the regular containers', () => {
    // Arrange
    const { dsw } = newDsw({ plugins: [new FakeFileVolumePlugin()] });
    const pod = makePod('pod1', [{ name: 'v', emptyDir: {} }], [{ name: 'c', resources: { limits: { 'ephemeral-storage': '1Gi' } } }]);
    pod.spec.initContainers = [{ name: 'init', resources: { limits: { 'ephemeral-storage': '3Gi' } } }];

    // Act
    addPod(dsw, pod);

    // Assert
    expect(dsw.getVolumesToMount().map((v) => v.desiredSizeLimit)).toEqual([3 * Gi]);
  });
});

describe('DesiredStateOfWorld.deletePodFromVolume', () => {
  it('removes the pod, and the volume with its last pod', () => {
    // Arrange
    const { dsw } = newDsw();
    const pod1 = makePod('pod1', [gcePd('volume-name', 'fake-device1')]);
    const pod2 = makePod('pod2', [gcePd('volume-name', 'fake-device1')]);
    const [vol] = addPod(dsw, pod1);
    addPod(dsw, pod2);
    if (vol === undefined) throw new Error('no volume added');

    // Act
    dsw.deletePodFromVolume(podNameOf(pod1), vol);

    // Assert
    expect(dsw.podExistsInVolume(podNameOf(pod1), vol, '')).toBe(false);
    expect(dsw.podExistsInVolume(podNameOf(pod2), vol, '')).toBe(true);
    expect(dsw.volumeExistsWithSpecName(podNameOf(pod1), 'volume-name')).toBe(false);

    // Act
    dsw.deletePodFromVolume(podNameOf(pod2), vol);

    // Assert
    expect(dsw.volumeExists(vol, '')).toBe(false);
    expect(dsw.getVolumesToMount()).toEqual([]);
    expect(dsw.getPods().size).toBe(0);
  });

  it('hasPod answers for a pod while it has a volume, also when one is added again or deleted twice', () => {
    // Arrange
    const { dsw } = newDsw();
    const pod = makePod('pod1', [gcePd('a', 'fake-device1'), gcePd('b', 'fake-device2')]);
    const [a, b] = addPod(dsw, pod);
    addPod(dsw, pod);
    if (a === undefined || b === undefined) throw new Error('no volumes added');
    expect(dsw.hasPod(podNameOf(pod))).toBe(true);
    expect(dsw.hasPod(uniquePodName('other-uid'))).toBe(false);

    // Act: one of two volumes, then the same one again (a no-op)
    dsw.deletePodFromVolume(podNameOf(pod), a);
    dsw.deletePodFromVolume(podNameOf(pod), a);

    // Assert
    expect(dsw.hasPod(podNameOf(pod))).toBe(true);

    // Act
    dsw.deletePodFromVolume(podNameOf(pod), b);

    // Assert
    expect(dsw.hasPod(podNameOf(pod))).toBe(false);
  });

  it.each([
    { name: 'the volume is unknown', volume: 'fake-plugin/unknown', pod: 'pod1uid' },
    { name: 'the pod is not in the volume', volume: 'fake-plugin/fake-device1', pod: 'other-uid' },
  ])('is a no-op that still drops the pod errors when $name', ({ volume, pod }) => {
    // Arrange
    const { dsw } = newDsw();
    addPod(dsw, makePod('pod1', [gcePd('volume-name', 'fake-device1')]));
    dsw.addErrorToPod(uniquePodName(pod), 'some error');

    // Act
    dsw.deletePodFromVolume(uniquePodName(pod), uniqueVolumeName(volume));

    // Assert
    expect(dsw.getVolumesToMount().map((v) => [v.volumeName, v.podName])).toEqual([['fake-plugin/fake-device1', 'pod1uid']]);
    expect(dsw.popPodErrors(uniquePodName(pod))).toEqual([]);
  });
});

describe('DesiredStateOfWorld.markVolumesReportedInUse', () => {
  it('ignores unknown names and clears every flag on an empty list', () => {
    // Arrange
    const { dsw } = newDsw();
    const [vol] = addPod(dsw, makePod('pod1', [gcePd('volume-name', 'fake-device1')]));

    // Act
    dsw.markVolumesReportedInUse(['fake-plugin/unknown', 'fake-plugin/fake-device1']);

    // Assert
    expect(reportedInUse(dsw)).toEqual({ 'fake-plugin/fake-device1': true });
    expect(dsw.volumeExists(uniqueVolumeName('fake-plugin/unknown'), '')).toBe(false);

    // Act
    dsw.markVolumesReportedInUse([]);

    // Assert
    expect(reportedInUse(dsw)).toEqual({ [vol ?? '']: false });
  });
});

describe('DesiredStateOfWorld.volumeExists / podExistsInVolume', () => {
  const label = 'system_u:object_r:container_file_t:s0:c1,c2';
  function rigWithLabel(gate: boolean): { dsw: DesiredStateOfWorld; vol: UniqueVolumeName; pod: UniquePodName } {
    const { dsw } = newDsw({ plugins: [new FakeVolumePlugin({ supportsSELinux: true })], seLinuxEnabled: true, gates: { SELinuxMountReadWriteOncePod: gate } });
    const pod = makePod('pod1', [{ name: 'vol', persistentVolumeClaim: { claimName: 'c' } }]);
    const vol = dsw.addPodToVolume(podNameOf(pod), pod, pvSpec('pv', ['ReadWriteOncePod']), 'vol', '', [{ level: 's0:c1,c2' }]);
    return { dsw, vol, pod: podNameOf(pod) };
  }

  it.each([
    { gate: true, context: label, exists: true },
    { gate: true, context: '', exists: false },
    { gate: true, context: null, exists: false },
    { gate: true, context: 'system_u:object_r:container_file_t:s0:c9,c10', exists: false },
    { gate: false, context: 'anything', exists: true },
    { gate: false, context: null, exists: true },
  ])('with the gate $gate and mount context "$context" the volume and pod exist: $exists', ({ gate, context, exists }) => {
    // Arrange
    const { dsw, vol, pod } = rigWithLabel(gate);

    // Act
    const volumeExists = dsw.volumeExists(vol, context);
    const podExists = dsw.podExistsInVolume(pod, vol, context);

    // Assert
    expect(volumeExists).toBe(exists);
    expect(podExists).toBe(exists);
  });

  it('reports an unknown pod of a desired volume as absent, and an unknown volume as absent', () => {
    // Arrange
    const { dsw, vol } = rigWithLabel(true);

    // Act & Assert
    expect(dsw.podExistsInVolume(uniquePodName('other'), vol, label)).toBe(false);
    expect(dsw.volumeExists(uniqueVolumeName('fake-plugin/unknown'), label)).toBe(false);
    expect(dsw.podExistsInVolume(uniquePodName('pod1uid'), uniqueVolumeName('fake-plugin/unknown'), label)).toBe(false);
  });
});

describe('DesiredStateOfWorld pod errors', () => {
  it('keeps at most maxPodErrors+1 distinct strings and pops them sorted', () => {
    // Arrange
    const { dsw } = newDsw();
    const pod = uniquePodName('pod1uid');
    const messages = Array.from({ length: 14 }, (_, i) => `error ${String(13 - i).padStart(2, '0')}`);

    // Act
    for (const m of messages) dsw.addErrorToPod(pod, m);
    dsw.addErrorToPod(pod, 'error 13');

    // Assert
    expect(maxPodErrors).toBe(10);
    expect(dsw.getPodsWithErrors()).toEqual([pod]);
    const popped = dsw.popPodErrors(pod);
    expect(popped).toEqual(messages.slice(0, 11).sort());
    expect(popped).toHaveLength(11);
    expect(dsw.popPodErrors(pod)).toEqual([]);
    expect(dsw.getPodsWithErrors()).toEqual([]);
  });

  it('stores a repeated error once and keeps errors per pod', () => {
    // Arrange
    const { dsw } = newDsw();

    // Act
    dsw.addErrorToPod(uniquePodName('a'), 'b error');
    dsw.addErrorToPod(uniquePodName('a'), 'a error');
    dsw.addErrorToPod(uniquePodName('a'), 'b error');
    dsw.addErrorToPod(uniquePodName('b'), 'other');

    // Assert
    expect([...dsw.getPodsWithErrors()].sort()).toEqual(['a', 'b']);
    expect(dsw.getPodErrors(uniquePodName('a'))).toEqual(['a error', 'b error']);
    expect(dsw.popPodErrors(uniquePodName('a'))).toEqual(['a error', 'b error']);
    expect(dsw.popPodErrors(uniquePodName('b'))).toEqual(['other']);
  });
});

describe('DesiredStateOfWorld.onPodErrorsChange', () => {
  it.each([
    {
      name: 'a new error',
      act: (d: DesiredStateOfWorld) => {
        d.addErrorToPod(uniquePodName('a'), 'second');
      },
      want: ['a'],
    },
    {
      name: 'an error the pod already has (no change)',
      act: (d: DesiredStateOfWorld) => {
        d.addErrorToPod(uniquePodName('a'), 'first');
      },
      want: [],
    },
    { name: 'popping the errors', act: (d: DesiredStateOfWorld) => void d.popPodErrors(uniquePodName('a')), want: ['a'] },
    { name: 'popping a pod without errors (no change)', act: (d: DesiredStateOfWorld) => void d.popPodErrors(uniquePodName('b')), want: [] },
    { name: 'peeking (no change)', act: (d: DesiredStateOfWorld) => void d.getPodErrors(uniquePodName('a')), want: [] },
  ])('notifies the pod for $name', ({ act, want }) => {
    // Arrange: pod a has one error
    const { dsw } = newDsw();
    dsw.addErrorToPod(uniquePodName('a'), 'first');
    const changed: string[] = [];
    dsw.onPodErrorsChange((pod) => changed.push(pod));

    // Act
    act(dsw);

    // Assert
    expect(changed).toEqual(want);
  });

  it('notifies when deleting the pod from a volume drops its errors, and not the volume listeners for an error', () => {
    // Arrange
    const { dsw } = newDsw();
    const pod = makePod('pod1', [gcePd('vol1', 'pd1')]);
    const [volume] = addPod(dsw, pod);
    if (volume === undefined) throw new Error('no volume');
    const volumeChanges: string[] = [];
    dsw.onChange((v) => volumeChanges.push(v));
    const errorChanges: string[] = [];
    dsw.onPodErrorsChange((p) => errorChanges.push(p));

    // Act
    dsw.addErrorToPod(podNameOf(pod), 'error');
    const afterError = [...volumeChanges];
    dsw.deletePodFromVolume(podNameOf(pod), volume);

    // Assert
    expect(afterError).toEqual([]);
    expect(errorChanges).toEqual(['pod1uid', 'pod1uid']);
    expect(volumeChanges).toEqual([volume]);
  });
});

describe('DesiredStateOfWorld departed pods', () => {
  it('remembers the namespace of a pod removed from a volume until it is desired again or forgotten', () => {
    // Arrange
    const { dsw } = newDsw();
    const pod: Pod = { ...makePod('pod1', [gcePd('vol1', 'pd1')]), metadata: { name: 'pod1', uid: 'pod1uid', namespace: 'team-a' } };
    const [volume] = addPod(dsw, pod);
    if (volume === undefined) throw new Error('no volume');
    const podName = podNameOf(pod);
    const never = dsw.getDepartedPodNamespace(podName);

    // Act + Assert: removed, remembered
    dsw.deletePodFromVolume(podName, volume);
    expect([never, dsw.getDepartedPodNamespace(podName), dsw.countDepartedPods()]).toEqual([undefined, 'team-a', 1]);

    // Act + Assert: desired again, its pod object tells
    addPod(dsw, pod);
    expect([dsw.getDepartedPodNamespace(podName), dsw.countDepartedPods()]).toEqual([undefined, 0]);

    // Act + Assert: removed again, then forgotten
    dsw.deletePodFromVolume(podName, volume);
    dsw.forgetDepartedPods((p) => p !== podName);
    expect([dsw.getDepartedPodNamespace(podName), dsw.countDepartedPods()]).toEqual([undefined, 0]);
  });

  it('remembers a pod without a namespace in its manifest as in the default namespace', () => {
    const { dsw } = newDsw();
    const pod: Pod = { ...makePod('pod1', [gcePd('vol1', 'pd1')]), metadata: { name: 'pod1', uid: 'pod1uid' } };
    const [volume] = addPod(dsw, pod);
    if (volume === undefined) throw new Error('no volume');

    dsw.deletePodFromVolume(podNameOf(pod), volume);

    expect(dsw.getDepartedPodNamespace(podNameOf(pod))).toBe('default');
  });

  it('keeps the departed pods forgetDepartedPods is told to keep', () => {
    const { dsw } = newDsw();
    const pods = ['a', 'b', 'c'].map((n) => makePod(n, [gcePd(`vol-${n}`, `pd-${n}`)]));
    for (const pod of pods) {
      const [volume] = addPod(dsw, pod);
      if (volume !== undefined) dsw.deletePodFromVolume(podNameOf(pod), volume);
    }

    dsw.forgetDepartedPods((p) => p === uniquePodName('buid'));

    expect(pods.map((p) => dsw.getDepartedPodNamespace(podNameOf(p)) ?? null)).toEqual([null, 'default', null]);
  });
});

describe('DesiredStateOfWorld volume attributes', () => {
  it('copies the PV capacity as desired size and updates it only for existing volumes', () => {
    // Arrange
    const { dsw } = newDsw();
    const pod = makePod('pod1', [{ name: 'data', persistentVolumeClaim: { claimName: 'c' } }]);
    const vol = dsw.addPodToVolume(podNameOf(pod), pod, pvSpec('pv-1', ['ReadWriteOnce'], '1Gi'), 'data', '', []);
    expect(dsw.getVolumesToMount().map((v) => v.desiredPersistentVolumeSize)).toEqual([Gi]);

    // Act
    dsw.updatePersistentVolumeSize(vol, 2 * Gi);
    dsw.updatePersistentVolumeSize(uniqueVolumeName('fake-plugin/unknown'), 5 * Gi);

    // Assert
    expect(dsw.getVolumesToMount().map((v) => v.desiredPersistentVolumeSize)).toEqual([2 * Gi]);
    expect(dsw.getVolumes().map((v) => [v.volumeName, v.persistentVolumeSize])).toEqual([[vol, 2 * Gi]]);
  });

  it('reports desiredPersistentVolumeSize 0 for volumes without a PV capacity', () => {
    // Arrange
    const { dsw } = newDsw();

    // Act
    addPod(dsw, makePod('pod1', [gcePd('volume-name', 'fake-device1')]));

    // Assert
    expect(dsw.getVolumesToMount().map((v) => v.desiredPersistentVolumeSize)).toEqual([0]);
    expect(dsw.getVolumes().map((v) => v.persistentVolumeSize)).toEqual([null]);
  });

  it('marks attachability of existing volumes only', () => {
    // Arrange
    const { dsw } = newDsw();
    const [vol] = addPod(dsw, makePod('pod1', [gcePd('volume-name', 'fake-device1')]));
    if (vol === undefined) throw new Error('no volume added');

    // Act
    dsw.markVolumeAttachability(vol, false);
    dsw.markVolumeAttachability(uniqueVolumeName('fake-plugin/unknown'), false);

    // Assert
    expect(dsw.getVolumesToMount().map((v) => [v.volumeName, v.pluginIsAttachable])).toEqual([[vol, false]]);

    // Act
    dsw.markVolumeAttachability(vol, true);

    // Assert
    expect(dsw.getVolumesToMount().map((v) => v.pluginIsAttachable)).toEqual([true]);
  });

  it('lists every pod with at least one desired volume', () => {
    // Arrange
    const { dsw } = newDsw();
    const pod1 = makePod('pod1', [gcePd('a', 'pd-a'), gcePd('b', 'pd-b')]);
    const pod2 = makePod('pod2', [gcePd('a', 'pd-a')]);

    // Act
    addPod(dsw, pod1);
    addPod(dsw, pod2);

    // Assert
    expect([...dsw.getPods().keys()].sort()).toEqual(['pod1uid', 'pod2uid']);
    expect(dsw.getPods().get(podNameOf(pod2))).toBe(pod2);
    expect(dsw.countVolumesToMount()).toBe(3);
    expect(dsw.getVolumesToMount()).toHaveLength(3);
  });

  it('notifies listeners on volume changes but not on pod errors', () => {
    // Arrange
    const { dsw } = newDsw();
    let calls = 0;
    const off = dsw.onChange(() => {
      calls++;
    });

    // Act
    const [vol] = addPod(dsw, makePod('pod1', [gcePd('volume-name', 'fake-device1')]));
    dsw.addErrorToPod(uniquePodName('pod1uid'), 'x');
    dsw.markVolumesReportedInUse([vol ?? '']);
    dsw.markVolumesReportedInUse([vol ?? '']);
    off();
    dsw.deletePodFromVolume(uniquePodName('pod1uid'), vol ?? uniqueVolumeName('x'));

    // Assert
    expect(calls).toBe(2);
  });
});
