import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { MarkVolumeOpts } from '../../operationexecutor/types.ts';
import type { PersistentVolume, Volume } from '../../volume/k8s-types.ts';
import { VolumePluginMgr, type Mounter, type VolumePlugin } from '../../volume/plugins.ts';
import { specFromPersistentVolume, specFromVolume, type Spec } from '../../volume/spec.ts';
import { FakeFileVolumePlugin, FakeVolumePlugin } from '../../volume/testing/fake-volume-plugin.ts';
import { nodeName, pluginName, podUID, uniquePodName, uniqueVolumeName, type UniquePodName, type UniqueVolumeName } from '../../volume/types.ts';
import {
  ActualStateOfWorld,
  FsResizeRequiredError,
  isActualStateError,
  isFsResizeRequiredError,
  isRemountRequiredError,
  isSELinuxMountMismatchError,
  isVolumeNotAttachedError,
  RemountRequiredError,
  SELinuxMountMismatchError,
  VolumeNotAttachedError,
} from './actual-state-of-world.ts';
import { errorMessage } from '../../volume/errors.ts';

const node = nodeName('mynodename');
const Gi = 2 ** 30;
const vol = uniqueVolumeName('fake-plugin/fake-device1');
const pod1 = uniquePodName('pod1uid');
const pod2 = uniquePodName('pod2uid');
const gceVolume: Volume = { name: 'volume-name', gcePersistentDisk: { pdName: 'fake-device1' } };
const gceSpec = (): Spec => specFromVolume(gceVolume);

/** The message of what `fn` throws ("" when it does not throw). */
/** The volume names of a sweep slice of the scan index, and the index's length. */
function sweep(asw: ActualStateOfWorld, start: number, count: number): { names: UniqueVolumeName[]; total: number } {
  const names: UniqueVolumeName[] = [];
  const total = asw.addVolumeNamesInRange(start, count, { add: (v) => names.push(v) });
  return { names, total };
}

function thrownMessage(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return errorMessage(err);
  }
  return '';
}

function newAsw(opts: { plugins?: VolumePlugin[]; seLinuxEnabled?: boolean } = {}): ActualStateOfWorld {
  return new ActualStateOfWorld({
    nodeName: node,
    pluginMgr: new VolumePluginMgr(opts.plugins ?? [new FakeVolumePlugin()], null),
    seLinuxEnabled: opts.seLinuxEnabled ?? false,
  });
}

function opts(overrides: Partial<MarkVolumeOpts> = {}): MarkVolumeOpts {
  return {
    podName: pod1,
    podUID: podUID('pod1uid'),
    volumeName: vol,
    mounter: null,
    blockVolumeMapper: null,
    outerVolumeSpecName: 'volume-name',
    volumeGidValue: '',
    volumeSpec: gceSpec(),
    volumeMountState: 'VolumeMounted',
    seLinuxMountContext: '',
    ...overrides,
  };
}

function fakeMounter(path: string): Mounter {
  return { getPath: () => path, setUp: () => Promise.resolve() };
}

/** An attached volume `fake-plugin/fake-device1` with pod1 in the given state. */
function aswWithPod(state: 'VolumeMounted' | 'VolumeMountUncertain' = 'VolumeMounted', seLinuxEnabled = false): ActualStateOfWorld {
  const asw = newAsw({ seLinuxEnabled });
  asw.markVolumeAsAttached('', gceSpec(), node, '/dev/sdb');
  asw.addPodToVolume(opts({ volumeMountState: state }));
  return asw;
}

function attached(asw: ActualStateOfWorld): Record<string, unknown>[] {
  return asw.getAttachedVolumes().map((v) => ({
    volumeName: v.volumeName,
    pluginIsAttachable: v.pluginIsAttachable,
    devicePath: v.devicePath,
    deviceMountPath: v.deviceMountPath,
    deviceMountState: v.deviceMountState,
    seLinuxMountContext: v.seLinuxMountContext,
  }));
}

describe('ActualStateOfWorld scenarios (actual_state_of_world_test.go)', () => {
  it('scenario 36: an uncertain mount is possibly mounted but neither mounted nor removed', () => {
    // Arrange
    const asw = newAsw();
    asw.markVolumeAsAttached('', gceSpec(), node, '/dev/sdb');

    // Act
    asw.addPodToVolume(opts({ volumeMountState: 'VolumeMountUncertain' }));

    // Assert
    expect(asw.getMountedVolumesForPod(pod1)).toEqual([]);
    expect(asw.getPossiblyMountedVolumesForPod(pod1).map((m) => [m.volumeName, m.podName, m.volumeMountState])).toEqual([
      [vol, pod1, 'VolumeMountUncertain'],
    ]);
    expect(asw.podExistsInVolume(pod1, vol, 0, '')).toEqual({ mounted: false, devicePath: '/dev/sdb', err: null });
    expect(asw.podRemovedFromVolume(pod1, vol)).toBe(false);
  });

  it('scenario 37: a device globally mounted with another SELinux context reports a mismatch', () => {
    // Arrange
    const asw = newAsw({ seLinuxEnabled: true });
    asw.markVolumeAsAttached('', gceSpec(), node, '/dev/sdb');
    asw.markDeviceAsMounted(vol, '/dev/sdb', '/var/lib/kubelet/plugins/global', 'system_u:object_r:container_file_t:s0:c1,c2');

    // Act
    const result = asw.podExistsInVolume(pod1, vol, 0, 'system_u:object_r:container_file_t:s0:c3,c4');

    // Assert
    expect(result.mounted).toBe(false);
    expect(result.devicePath).toBe('/dev/sdb');
    expect(isSELinuxMountMismatchError(result.err)).toBe(true);
    expect(result.err?.message).toBe(
      'waiting for unmount of volume "fake-plugin/fake-device1", because it is already mounted to a different pod with a different SELinux label',
    );
    expect(asw.podExistsInVolume(pod1, vol, 0, 'system_u:object_r:container_file_t:s0:c1,c2')).toEqual({ mounted: false, devicePath: '/dev/sdb', err: null });
  });

  it('scenario 37: without the SELinux gate the mount context is neither recorded nor compared', () => {
    // Arrange
    const asw = newAsw({ seLinuxEnabled: false });
    asw.markVolumeAsAttached('', gceSpec(), node, '/dev/sdb');
    asw.markDeviceAsMounted(vol, '/dev/sdb', '/global', 'ctx-x');

    // Act
    const result = asw.podExistsInVolume(pod1, vol, 0, 'ctx-y');

    // Assert
    expect(result).toEqual({ mounted: false, devicePath: '/dev/sdb', err: null });
    expect(asw.getAttachedVolume(vol)?.seLinuxMountContext).toBeNull();
  });
});

describe('ActualStateOfWorld.markVolumeAsAttached', () => {
  it.each([
    { name: 'an attachable plugin', plugin: () => new FakeVolumePlugin(), volumeName: 'fake-plugin/fake-device1', attachable: true },
    { name: 'a non-attachable device-mountable plugin', plugin: () => new FakeVolumePlugin({ nonAttachable: true }), volumeName: 'fake-plugin/fake-device1', attachable: false },
    { name: 'a plain file plugin', plugin: () => new FakeFileVolumePlugin(), volumeName: 'fake-file-plugin/volume-name', attachable: false },
  ])('adds a new volume of $name with its device not mounted', ({ plugin, volumeName, attachable }) => {
    // Arrange
    const asw = newAsw({ plugins: [plugin()] });

    // Act
    asw.markVolumeAsAttached('', gceSpec(), node, '/dev/vdb');

    // Assert
    expect(attached(asw)).toEqual([
      { volumeName, pluginIsAttachable: attachable, devicePath: '/dev/vdb', deviceMountPath: '', deviceMountState: 'DeviceNotMounted', seLinuxMountContext: null },
    ]);
    expect(asw.getVolumes().map((v) => v.attachability)).toEqual([attachable ? 'True' : 'False']);
    expect(asw.getVolumes().map((v) => v.pluginName)).toEqual([volumeName.split('/')[0]]);
  });

  it('keeps a given volume name instead of computing one', () => {
    // Arrange
    const asw = newAsw();

    // Act
    asw.markVolumeAsAttached(uniqueVolumeName('fake-plugin/given'), gceSpec(), node, '');

    // Assert
    expect(asw.volumeExists(uniqueVolumeName('fake-plugin/given'))).toBe(true);
    expect(asw.volumeExists(vol)).toBe(false);
  });

  it('only overwrites the device path of an existing volume', () => {
    // Arrange
    const asw = newAsw();
    asw.addAttachUncertainReconstructedVolume(vol, gceSpec(), node, '/dev/old');
    asw.markDeviceAsMounted(vol, '/dev/old', '/global/path', '');

    // Act
    asw.markVolumeAsAttached('', gceSpec(), node, '/dev/new');

    // Assert
    expect(attached(asw)).toEqual([
      { volumeName: vol, pluginIsAttachable: false, devicePath: '/dev/new', deviceMountPath: '/global/path', deviceMountState: 'DeviceGloballyMounted', seLinuxMountContext: null },
    ]);
    expect(asw.getVolumes().map((v) => v.attachability)).toEqual(['Uncertain']);
  });

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
      name: 'the plugin cannot name the volume',
      plugins: () => [new NamelessPlugin()],
      error: 'failed to GetUniqueVolumeNameFromSpec for volumeSpec "volume-name" using volume plugin "fake-plugin" err=volume has no PD name',
    },
  ])('fails when $name', ({ plugins, error }) => {
    // Arrange
    const asw = newAsw({ plugins: plugins() });

    // Act
    const mark = () => {
      asw.markVolumeAsAttached('', gceSpec(), node, '');
    };

    // Assert
    expect(thrownMessage(mark)).toBe(error);
    expect(asw.getAttachedVolumes()).toEqual([]);
  });
});

describe('ActualStateOfWorld attachability', () => {
  it('reads an Uncertain reconstructed volume as not attachable until node status resolves it', () => {
    // Arrange
    const asw = newAsw();
    asw.addAttachUncertainReconstructedVolume(vol, gceSpec(), node, '');
    expect(asw.getAttachedVolume(vol)?.pluginIsAttachable).toBe(false);
    expect(asw.getVolumes().map((v) => v.attachability)).toEqual(['Uncertain']);

    // Act
    asw.updateReconstructedVolumeAttachability(vol, true);

    // Assert
    expect(asw.getAttachedVolume(vol)?.pluginIsAttachable).toBe(true);
    expect(asw.getVolumes().map((v) => v.attachability)).toEqual(['True']);

    // Act: only an Uncertain attachability is updated.
    asw.updateReconstructedVolumeAttachability(vol, false);

    // Assert
    expect(asw.getVolumes().map((v) => v.attachability)).toEqual(['True']);
  });

  it.each([
    { attachable: true, expected: 'True' },
    { attachable: false, expected: 'False' },
  ])('resolves Uncertain attachability to $expected', ({ attachable, expected }) => {
    // Arrange
    const asw = newAsw();
    asw.addAttachUncertainReconstructedVolume(vol, gceSpec(), node, '');

    // Act
    asw.updateReconstructedVolumeAttachability(vol, attachable);
    asw.updateReconstructedVolumeAttachability(uniqueVolumeName('fake-plugin/unknown'), attachable);

    // Assert
    expect(asw.getVolumes().map((v) => v.attachability)).toEqual([expected]);
  });

  it('never changes the attachability of a volume marked attached', () => {
    // Arrange
    const asw = newAsw({ plugins: [new FakeVolumePlugin({ nonAttachable: true })] });
    asw.markVolumeAsAttached('', gceSpec(), node, '');

    // Act
    asw.updateReconstructedVolumeAttachability(vol, true);

    // Assert
    expect(asw.getVolumes().map((v) => v.attachability)).toEqual(['False']);
  });
});

describe('ActualStateOfWorld volume removal', () => {
  it('markVolumeAsUncertain is a no-op', () => {
    // Arrange
    const asw = aswWithPod();
    const before = asw.getVolumes();

    // Act
    asw.markVolumeAsUncertain(vol, gceSpec(), node);
    asw.markVolumeAsUncertain(uniqueVolumeName('fake-plugin/unknown'), gceSpec(), node);

    // Assert
    expect(asw.getVolumes()).toEqual(before);
    expect(asw.volumeExists(uniqueVolumeName('fake-plugin/unknown'))).toBe(false);
  });

  it('refuses to delete a volume that still has pods', () => {
    // Arrange
    const asw = aswWithPod();
    asw.addPodToVolume(opts({ podName: pod2, podUID: podUID('pod2uid'), volumeMountState: 'VolumeMountUncertain' }));

    // Act
    const del = () => {
      asw.markVolumeAsDetached(vol, node);
    };

    // Assert
    expect(thrownMessage(del)).toBe('failed to DeleteVolume "fake-plugin/fake-device1", it still has 2 mountedPods');
    let thrown: unknown;
    try {
      asw.deleteVolume(vol);
    } catch (err) {
      thrown = err;
    }
    expect(isActualStateError(thrown)).toBe(true);
    expect(asw.volumeExists(vol)).toBe(true);
  });

  it('deletes a volume without pods, with its reconstruction record, and ignores unknown volumes', () => {
    // Arrange
    const asw = newAsw();
    asw.markVolumeAsAttached('', gceSpec(), node, '');
    asw.checkAndMarkVolumeAsUncertainViaReconstruction(opts());
    asw.markVolumeAsUnmounted(pod1, vol);
    expect(asw.isVolumeDeviceReconstructed(vol)).toBe(true);

    // Act
    asw.markVolumeAsDetached(vol, node);
    asw.deleteVolume(uniqueVolumeName('fake-plugin/unknown'));

    // Assert
    expect(asw.volumeExists(vol)).toBe(false);
    expect(asw.isVolumeDeviceReconstructed(vol)).toBe(false);
    expect(asw.getAttachedVolumes()).toEqual([]);
  });
});

// A batched attach verification (VolumesAreAttached) found the volume detached. Upstream's
// MarkVolumeAsDetached is DeleteVolume: it refuses while pods are mounted and would drop a
// volume whose device is still mounted. Here no entry that stands for a mount is ever dropped.
describe('ActualStateOfWorld.markVolumeAsFoundDetached (MarkVolumeAsDetached from VolumesAreAttached)', () => {
  it('MarkVolumeAsDetached found by verification: keeps every pod entry as Uncertain and the device mount as Uncertain, and reads as not attached', () => {
    // Arrange: pod1 Mounted, pod2 Uncertain (a failed TearDown), device globally mounted
    const asw = aswWithPod();
    asw.addPodToVolume(opts({ podName: pod2, podUID: podUID('pod2uid'), volumeMountState: 'VolumeMountUncertain' }));
    asw.markDeviceAsMounted(vol, '/dev/sdb', '/var/lib/kubelet/plugins/fake/mounts/fake-device1', '');

    // Act
    asw.markVolumeAsFoundDetached(vol, node);

    // Assert: nothing dropped; everything may still be mounted and must be torn down or set up again
    expect(asw.volumeExists(vol)).toBe(true);
    expect(asw.isVolumeFoundDetached(vol)).toBe(true);
    expect(asw.isVolumeAttached(vol)).toBe(false);
    expect(asw.getVolumes().map((v) => v.foundDetached)).toEqual([true]);
    expect(asw.getVolumeMountState(vol, pod1)).toBe('VolumeMountUncertain');
    expect(asw.getVolumeMountState(vol, pod2)).toBe('VolumeMountUncertain');
    expect(asw.getAllMountedVolumes().map((m) => m.podName).sort()).toEqual([pod1, pod2]);
    expect(asw.getDeviceMountState(vol)).toBe('DeviceMountUncertain');
    const exists = asw.podExistsInVolume(pod1, vol, 0, '');
    expect(exists.mounted).toBe(false);
    expect(isVolumeNotAttachedError(exists.err)).toBe(true);
    expect(exists.devicePath).toBe('/dev/sdb');
    expect(asw.isMountedAndCurrent(pod1, vol, 0, '')).toBe(false);
    expect(asw.getUnmountedVolume(vol)).toBeNull();
  });

  it('MarkVolumeAsDetached found by verification: a volume with neither pod entries nor a device mount leaves, as DeleteVolume; unknown volumes are ignored', () => {
    // Arrange
    const asw = newAsw();
    asw.markVolumeAsAttached('', gceSpec(), node, '/dev/sdb');

    // Act
    asw.markVolumeAsFoundDetached(vol, node);
    asw.markVolumeAsFoundDetached(uniqueVolumeName('fake-plugin/unknown'), node);

    // Assert
    expect(asw.volumeExists(vol)).toBe(false);
    expect(asw.getAttachedVolumes()).toEqual([]);
  });

  it('MarkVolumeAsDetached found by verification: a device mount without pods stays, Uncertain, for UnmountDevice', () => {
    // Arrange: the last pod was torn down, UnmountDevice has not run yet
    const asw = newAsw();
    asw.markVolumeAsAttached('', gceSpec(), node, '/dev/sdb');
    asw.markDeviceAsMounted(vol, '/dev/sdb', '/mnt/global', '');

    // Act
    asw.markVolumeAsFoundDetached(vol, node);

    // Assert
    expect(asw.getAttachedVolume(vol)).toMatchObject({ deviceMountState: 'DeviceMountUncertain', deviceMountPath: '/mnt/global' });
    expect(asw.getUnmountedVolumes().map((v) => v.volumeName)).toEqual([vol]);
  });

  it('MarkVolumeAsDetached found by verification: mounts finishing before the re-attach stay Uncertain; MarkVolumeAsAttached ends the state', () => {
    // Arrange
    const asw = aswWithPod();
    asw.markVolumeAsFoundDetached(vol, node);

    // Act: a SetUp and a MountDevice that started before the verification finish now
    asw.markVolumeAsMounted(opts());
    asw.markDeviceAsMounted(vol, '/dev/sdb', '/mnt/global', '');

    // Assert
    expect(asw.getVolumeMountState(vol, pod1)).toBe('VolumeMountUncertain');
    expect(asw.getDeviceMountState(vol)).toBe('DeviceMountUncertain');

    // Act: attached again (Attach or VerifyControllerAttachedVolume succeeded)
    asw.markVolumeAsAttached('', gceSpec(), node, '/dev/sdc');

    // Assert: the pod is set up again (Uncertain → not mounted), then mounts are certain again
    expect(asw.isVolumeFoundDetached(vol)).toBe(false);
    expect(asw.isVolumeAttached(vol)).toBe(true);
    expect(asw.podExistsInVolume(pod1, vol, 0, '')).toEqual({ mounted: false, devicePath: '/dev/sdc', err: null });
    asw.markVolumeAsMounted(opts());
    expect(asw.getVolumeMountState(vol, pod1)).toBe('VolumeMounted');
  });
});

describe('ActualStateOfWorld.addPodToVolume', () => {
  it('fails for a volume that is not attached', () => {
    // Arrange
    const asw = newAsw();

    // Act
    const add = () => {
      asw.addPodToVolume(opts());
    };

    // Assert
    expect(thrownMessage(add)).toBe('no volume with the name "fake-plugin/fake-device1" exists in the list of attached volumes');
    expect(thrownMessage(() => {
      asw.markVolumeAsMounted(opts());
    })).toBe('no volume with the name "fake-plugin/fake-device1" exists in the list of attached volumes');
  });

  it('records a new pod with everything given, as a MountedVolume with the volume paths', () => {
    // Arrange
    const asw = newAsw();
    asw.markVolumeAsAttached('', gceSpec(), node, '/dev/sdb');
    asw.markDeviceAsMounted(vol, '/dev/sdb', '/global/fake-device1', '');
    const mounter = fakeMounter('/pods/pod1uid/volumes/fake-plugin/volume-name');

    // Act
    asw.markVolumeAsMounted(opts({ mounter, outerVolumeSpecName: 'outer', volumeGidValue: '1234' }));

    // Assert
    const [mv] = asw.getMountedVolumes();
    expect(mv).toMatchObject({
      podName: pod1,
      volumeName: vol,
      innerVolumeSpecName: 'volume-name',
      outerVolumeSpecName: 'outer',
      pluginName: 'fake-plugin',
      podUID: 'pod1uid',
      volumeGidValue: '1234',
      deviceMountPath: '/global/fake-device1',
      seLinuxMountContext: null,
      volumeMountState: 'VolumeMounted',
    });
    expect(mv?.mounter).toBe(mounter);
    expect(asw.countMountedVolumes()).toBe(1);
  });

  it('replaces an Uncertain entry with a fresh one but only refreshes state and mounter of a Mounted one', () => {
    // Arrange
    const asw = aswWithPod('VolumeMountUncertain');
    const mounter = fakeMounter('/new');

    // Act: Uncertain → fresh entry (≥1.29).
    asw.markVolumeAsMounted(opts({ outerVolumeSpecName: 'fresh-outer' }));

    // Assert
    expect(asw.getMountedVolumesForPod(pod1).map((m) => m.outerVolumeSpecName)).toEqual(['fresh-outer']);

    // Act: Mounted → the entry is kept; the state and a given mounter are updated.
    asw.markVolumeAsMounted(opts({ outerVolumeSpecName: 'ignored-outer', mounter }));

    // Assert
    const [mv] = asw.getMountedVolumesForPod(pod1);
    expect(mv?.outerVolumeSpecName).toBe('fresh-outer');
    expect(mv?.mounter).toBe(mounter);

    // Act: a null mounter does not erase the stored one.
    asw.markVolumeAsMounted(opts({ mounter: null }));

    // Assert
    expect(asw.getMountedVolumesForPod(pod1)[0]?.mounter).toBe(mounter);
  });

  it('resets remountRequired and forces Uncertain through markVolumeMountAsUncertain', () => {
    // Arrange
    const asw = newAsw({ plugins: [new FakeVolumePlugin({ supportsRemount: true })] });
    asw.markVolumeAsAttached('', gceSpec(), node, '');
    asw.markVolumeAsMounted(opts());
    asw.markRemountRequired(pod1);
    expect(isRemountRequiredError(asw.podExistsInVolume(pod1, vol, 0, '').err)).toBe(true);

    // Act
    asw.markVolumeAsMounted(opts());

    // Assert
    expect(asw.podExistsInVolume(pod1, vol, 0, '')).toEqual({ mounted: true, devicePath: '', err: null });

    // Act
    asw.markVolumeMountAsUncertain(opts({ volumeMountState: 'VolumeMounted' }));

    // Assert
    expect(asw.getVolumeMountState(vol, pod1)).toBe('VolumeMountUncertain');
  });

  it.each([
    { seLinuxEnabled: true, first: 'ctx-a', expected: 'ctx-a' },
    { seLinuxEnabled: true, first: '', expected: '' },
    { seLinuxEnabled: false, first: 'ctx-a', expected: null },
  ])('sets the volume SELinux context once from the first mount (enabled=$seLinuxEnabled, first="$first")', ({ seLinuxEnabled, first, expected }) => {
    // Arrange
    const asw = newAsw({ seLinuxEnabled });
    asw.markVolumeAsAttached('', gceSpec(), node, '');

    // Act
    asw.markVolumeAsMounted(opts({ seLinuxMountContext: first }));
    asw.markVolumeAsMounted(opts({ podName: pod2, podUID: podUID('pod2uid'), seLinuxMountContext: 'ctx-b' }));

    // Assert
    expect(asw.getAttachedVolume(vol)?.seLinuxMountContext).toBe(expected);
    expect(asw.getMountedVolumes().map((m) => m.seLinuxMountContext)).toEqual([expected, expected]);
  });
});

describe('ActualStateOfWorld.markVolumeAsUnmounted', () => {
  it('deletes the pod and its reconstruction record', () => {
    // Arrange
    const asw = newAsw();
    asw.markVolumeAsAttached('', gceSpec(), node, '');
    asw.checkAndMarkVolumeAsUncertainViaReconstruction(opts());
    expect(asw.isVolumeReconstructed(vol, pod1)).toBe(true);

    // Act
    asw.markVolumeAsUnmounted(pod1, vol);
    asw.markVolumeAsUnmounted(pod2, vol);

    // Assert
    expect(asw.getAllMountedVolumes()).toEqual([]);
    expect(asw.isVolumeReconstructed(vol, pod1)).toBe(false);
    expect(asw.getVolumes().map((v) => v.pods)).toEqual([[]]);
    expect(asw.getUnmountedVolumes().map((v) => v.volumeName)).toEqual([vol]);
  });

  it('fails for a volume that is not attached', () => {
    // Arrange
    const asw = newAsw();

    // Act
    const unmount = () => {
      asw.markVolumeAsUnmounted(pod1, vol);
    };

    // Assert
    expect(thrownMessage(unmount)).toBe('no volume with the name "fake-plugin/fake-device1" exists in the list of attached volumes');
  });
});

describe('ActualStateOfWorld device mount state', () => {
  it.each([
    { name: 'a non-empty device path is overwritten', devicePath: '/dev/new', context: '', expectedPath: '/dev/new', expectedContext: null },
    { name: 'an empty device path keeps the old one', devicePath: '', context: '', expectedPath: '/dev/old', expectedContext: null },
    { name: 'a non-empty SELinux context is recorded', devicePath: '', context: 'ctx', expectedPath: '/dev/old', expectedContext: 'ctx' },
  ])('setDeviceMountState: $name', ({ devicePath, context, expectedPath, expectedContext }) => {
    // Arrange
    const asw = newAsw({ seLinuxEnabled: true });
    asw.markVolumeAsAttached('', gceSpec(), node, '/dev/old');

    // Act
    asw.setDeviceMountState(vol, 'DeviceMountUncertain', devicePath, '/global/new', context);

    // Assert
    expect(attached(asw)).toEqual([
      { volumeName: vol, pluginIsAttachable: true, devicePath: expectedPath, deviceMountPath: '/global/new', deviceMountState: 'DeviceMountUncertain', seLinuxMountContext: expectedContext },
    ]);
  });

  it('an empty SELinux context does not clear a recorded one', () => {
    // Arrange
    const asw = newAsw({ seLinuxEnabled: true });
    asw.markVolumeAsAttached('', gceSpec(), node, '');
    asw.markDeviceAsMounted(vol, '/dev/sdb', '/global', 'ctx');

    // Act
    asw.markDeviceAsUncertain(vol, '', '/global', '');

    // Assert
    expect(asw.getAttachedVolume(vol)?.seLinuxMountContext).toBe('ctx');
    expect(asw.getDeviceMountState(vol)).toBe('DeviceMountUncertain');
  });

  it('markDeviceAsUnmounted clears the mount path but keeps the device path', () => {
    // Arrange
    const asw = newAsw();
    asw.markVolumeAsAttached('', gceSpec(), node, '/dev/sdb');
    asw.markDeviceAsMounted(vol, '/dev/sdb', '/global', '');
    expect(asw.getGloballyMountedVolumes().map((v) => v.volumeName)).toEqual([vol]);

    // Act
    asw.markDeviceAsUnmounted(vol);

    // Assert
    expect(attached(asw)).toEqual([
      { volumeName: vol, pluginIsAttachable: true, devicePath: '/dev/sdb', deviceMountPath: '', deviceMountState: 'DeviceNotMounted', seLinuxMountContext: null },
    ]);
    expect(asw.getGloballyMountedVolumes()).toEqual([]);
  });

  it('fails for a volume that is not attached', () => {
    // Arrange
    const asw = newAsw();

    // Act & Assert
    expect(thrownMessage(() => {
      asw.markDeviceAsMounted(vol, '/dev/sdb', '/global', '');
    })).toBe('no volume with the name "fake-plugin/fake-device1" exists in the list of attached volumes');
    expect(asw.getDeviceMountState(vol)).toBe('DeviceNotMounted');
  });

  it.each([
    { state: 'DeviceMountUncertain' as const, expected: '/dev/from-node-status' },
    { state: 'DeviceGloballyMounted' as const, expected: '/dev/reconstructed' },
    { state: 'DeviceNotMounted' as const, expected: '/dev/reconstructed' },
  ])('updateReconstructedDevicePath applies only while the device is Uncertain (state $state)', ({ state, expected }) => {
    // Arrange
    const asw = newAsw();
    asw.addAttachUncertainReconstructedVolume(vol, gceSpec(), node, '/dev/reconstructed');
    asw.setDeviceMountState(vol, state, '', '/global', '');

    // Act
    asw.updateReconstructedDevicePath(vol, '/dev/from-node-status');
    asw.updateReconstructedDevicePath(uniqueVolumeName('fake-plugin/unknown'), '/dev/x');

    // Assert
    expect(asw.getAttachedVolume(vol)?.devicePath).toBe(expected);
  });

  it('reports deviceMayBeMounted states through getAttachedVolume', () => {
    // Arrange
    const asw = newAsw();
    asw.markVolumeAsAttached('', gceSpec(), node, '');

    // Act
    asw.markDeviceAsUncertain(vol, '/dev/sdb', '/global', '');

    // Assert
    expect(asw.getAttachedVolume(vol)).toMatchObject({ volumeName: vol, nodeName: 'mynodename', deviceMountState: 'DeviceMountUncertain', pluginName: 'fake-plugin' });
    expect(asw.getAttachedVolume(uniqueVolumeName('fake-plugin/unknown'))).toBeNull();
  });
});

describe('ActualStateOfWorld.markRemountRequired', () => {
  it('flags only entries of the pod whose plugin requires remounts', () => {
    // Arrange
    const pd = new FakeVolumePlugin({ canSupport: (s) => s.volume?.gcePersistentDisk !== undefined });
    const cm = new FakeVolumePlugin({ name: 'configmap-plugin', supportsRemount: true, canSupport: (s) => s.volume?.configMap !== undefined });
    const asw = newAsw({ plugins: [pd, cm] });
    const cmSpec = specFromVolume({ name: 'cm', configMap: { name: 'cm' } });
    const cmVol = uniqueVolumeName('configmap-plugin/cm');
    asw.markVolumeAsAttached('', gceSpec(), node, '');
    asw.markVolumeAsAttached('', cmSpec, node, '');
    asw.markVolumeAsMounted(opts());
    asw.markVolumeAsMounted(opts({ volumeName: cmVol, volumeSpec: cmSpec, outerVolumeSpecName: 'cm' }));
    asw.markVolumeAsMounted(opts({ volumeName: cmVol, volumeSpec: cmSpec, outerVolumeSpecName: 'cm', podName: pod2, podUID: podUID('pod2uid') }));

    // Act
    asw.markRemountRequired(pod1);

    // Assert
    expect(asw.podExistsInVolume(pod1, vol, 0, '').err).toBeNull();
    const cmResult = asw.podExistsInVolume(pod1, cmVol, 0, '');
    expect(cmResult.mounted).toBe(true);
    expect(cmResult.err?.message).toBe('volumeName "configmap-plugin/cm" is mounted to "pod1uid" but should be remounted');
    expect(asw.podExistsInVolume(pod2, cmVol, 0, '').err).toBeNull();
    expect(asw.getVolumes().find((v) => v.volumeName === cmVol)?.pods.map((p) => [p.podName, p.remountRequired])).toEqual([
      [pod1, true],
      [pod2, false],
    ]);
  });
});

describe('ActualStateOfWorld claim sizes', () => {
  it('initializes the claim size only while unknown and resizes existing volumes only', () => {
    // Arrange
    const asw = newAsw();
    asw.markVolumeAsAttached('', gceSpec(), node, '');
    expect(asw.getClaimSize(vol)).toBeNull();

    // Act
    asw.initializeClaimSize(vol, null);
    const afterNull = asw.getClaimSize(vol);
    asw.initializeClaimSize(vol, Gi);
    asw.initializeClaimSize(vol, 2 * Gi);

    // Assert
    expect(afterNull).toBeNull();
    expect(asw.getClaimSize(vol)).toBe(Gi);

    // Act
    const resized = asw.markVolumeAsResized(vol, 3 * Gi);
    const resizedUnknown = asw.markVolumeAsResized(uniqueVolumeName('fake-plugin/unknown'), Gi);

    // Assert
    expect([resized, resizedUnknown]).toEqual([true, false]);
    expect(asw.getClaimSize(vol)).toBe(3 * Gi);
    expect(asw.getClaimSize(uniqueVolumeName('fake-plugin/unknown'))).toBeNull();
  });

  it('markForInUseExpansionError stops file-system resize requests', () => {
    // Arrange
    const asw = aswWithPod();
    asw.initializeClaimSize(vol, Gi);
    expect(isFsResizeRequiredError(asw.podExistsInVolume(pod1, vol, 2 * Gi, '').err)).toBe(true);

    // Act
    asw.markForInUseExpansionError(vol);
    asw.markForInUseExpansionError(uniqueVolumeName('fake-plugin/unknown'));

    // Assert
    expect(asw.podExistsInVolume(pod1, vol, 2 * Gi, '')).toEqual({ mounted: true, devicePath: '/dev/sdb', err: null });
    expect(asw.getVolumes().map((v) => v.volumeInUseErrorForExpansion)).toEqual([true]);
  });
});

describe('ActualStateOfWorld reconstruction records', () => {
  it('checkAndMarkVolumeAsUncertainViaReconstruction adds an absent pod as Uncertain and records it', () => {
    // Arrange
    const asw = newAsw();
    asw.markVolumeAsAttached('', gceSpec(), node, '');

    // Act
    const added = asw.checkAndMarkVolumeAsUncertainViaReconstruction(opts({ volumeMountState: 'VolumeMounted' }));
    const again = asw.checkAndMarkVolumeAsUncertainViaReconstruction(opts());
    const unknown = asw.checkAndMarkVolumeAsUncertainViaReconstruction(opts({ volumeName: uniqueVolumeName('fake-plugin/unknown') }));

    // Assert
    expect([added, again, unknown]).toEqual([true, false, false]);
    expect(asw.getVolumeMountState(vol, pod1)).toBe('VolumeMountUncertain');
    expect(asw.isVolumeReconstructed(vol, pod1)).toBe(true);
    expect(asw.isVolumeDeviceReconstructed(vol)).toBe(true);
    expect(asw.getVolumes().map((v) => [v.foundDuringReconstruction, v.pods.map((p) => p.foundDuringReconstruction)])).toEqual([[true, [true]]]);
  });

  it('does not mark a pod that is already Mounted', () => {
    // Arrange
    const asw = aswWithPod('VolumeMounted');

    // Act
    const added = asw.checkAndMarkVolumeAsUncertainViaReconstruction(opts());

    // Assert
    expect(added).toBe(false);
    expect(asw.getVolumeMountState(vol, pod1)).toBe('VolumeMounted');
    expect(asw.isVolumeDeviceReconstructed(vol)).toBe(false);
  });

  it('a successful mount ends IsVolumeReconstructed but the volume stays device-reconstructed', () => {
    // Arrange
    const asw = newAsw();
    asw.markVolumeAsAttached('', gceSpec(), node, '');
    asw.checkAndMarkVolumeAsUncertainViaReconstruction(opts());

    // Act: an Uncertain re-mark keeps the record.
    asw.markVolumeMountAsUncertain(opts());

    // Assert
    expect(asw.isVolumeReconstructed(vol, pod1)).toBe(true);

    // Act
    asw.markVolumeAsMounted(opts());

    // Assert
    expect(asw.isVolumeReconstructed(vol, pod1)).toBe(false);
    expect(asw.isVolumeDeviceReconstructed(vol)).toBe(true);

    // Act: back to Uncertain, but no longer found during reconstruction.
    asw.markVolumeMountAsUncertain(opts());

    // Assert
    expect(asw.isVolumeReconstructed(vol, pod1)).toBe(false);
  });

  it.each([
    { state: 'DeviceNotMounted' as const, marked: true, expectedState: 'DeviceMountUncertain', expectedPath: '/reconstructed/global' },
    { state: 'DeviceMountUncertain' as const, marked: false, expectedState: 'DeviceMountUncertain', expectedPath: '/old/global' },
    { state: 'DeviceGloballyMounted' as const, marked: false, expectedState: 'DeviceGloballyMounted', expectedPath: '/old/global' },
  ])('checkAndMarkDeviceUncertainViaReconstruction only changes a NotMounted device (from $state)', ({ state, marked, expectedState, expectedPath }) => {
    // Arrange
    const asw = newAsw();
    asw.markVolumeAsAttached('', gceSpec(), node, '/dev/sdb');
    asw.setDeviceMountState(vol, state, '', '/old/global', '');

    // Act
    const result = asw.checkAndMarkDeviceUncertainViaReconstruction(vol, '/reconstructed/global');

    // Assert
    expect(result).toBe(marked);
    expect(asw.getAttachedVolume(vol)).toMatchObject({ deviceMountState: expectedState, deviceMountPath: expectedPath, devicePath: '/dev/sdb' });
    expect(asw.checkAndMarkDeviceUncertainViaReconstruction(uniqueVolumeName('fake-plugin/unknown'), '/x')).toBe(false);
  });
});

describe('ActualStateOfWorld queries', () => {
  /** vol: pod1 Mounted, pod2 Uncertain, device globally mounted; vol2: no pods, device NotMounted. */
  function populated(): ActualStateOfWorld {
    const asw = newAsw();
    asw.markVolumeAsAttached('', gceSpec(), node, '/dev/sdb');
    asw.markDeviceAsMounted(vol, '/dev/sdb', '/global', '');
    asw.markVolumeAsMounted(opts());
    asw.markVolumeMountAsUncertain(opts({ podName: pod2, podUID: podUID('pod2uid'), outerVolumeSpecName: 'other-outer' }));
    asw.markVolumeAsAttached('', specFromVolume({ name: 'v2', gcePersistentDisk: { pdName: 'fake-device2' } }), node, '/dev/sdc');
    return asw;
  }
  const vol2 = uniqueVolumeName('fake-plugin/fake-device2');
  const pairs = (list: { volumeName: string; podName: string }[]) => list.map((m) => `${m.volumeName}@${m.podName}`).sort();

  it('separates Mounted from possibly mounted entries', () => {
    // Arrange
    const asw = populated();

    // Act & Assert
    expect(pairs(asw.getMountedVolumes())).toEqual(['fake-plugin/fake-device1@pod1uid']);
    expect(pairs(asw.getAllMountedVolumes())).toEqual(['fake-plugin/fake-device1@pod1uid', 'fake-plugin/fake-device1@pod2uid']);
    expect(pairs(asw.getMountedVolumesForPod(pod1))).toEqual(['fake-plugin/fake-device1@pod1uid']);
    expect(pairs(asw.getMountedVolumesForPod(pod2))).toEqual([]);
    expect(pairs(asw.getPossiblyMountedVolumesForPod(pod2))).toEqual(['fake-plugin/fake-device1@pod2uid']);
    expect(asw.countMountedVolumes()).toBe(1);
  });

  it('lists the uncertain parts only: attach, device and each pod mount', () => {
    // Arrange
    const asw = populated();
    const vol3 = uniqueVolumeName('fake-plugin/fake-device3');
    asw.addAttachUncertainReconstructedVolume(vol3, specFromVolume({ name: 'v3', gcePersistentDisk: { pdName: 'fake-device3' } }), node, '');
    asw.markDeviceAsUncertain(vol3, '', '/global3', '');
    const converged = newAsw();
    converged.markVolumeAsAttached('', gceSpec(), node, '/dev/sdb');
    converged.markVolumeAsMounted(opts());

    // Act & Assert
    expect(asw.getUncertainEntries()).toEqual([
      { volumeName: vol, kind: 'mount', podUID: podUID('pod2uid') },
      { volumeName: vol3, kind: 'attach', podUID: null },
      { volumeName: vol3, kind: 'device', podUID: null },
    ]);
    expect(converged.getUncertainEntries()).toEqual([]);
  });

  it('lists globally mounted, unmounted and all attached volumes', () => {
    // Arrange
    const asw = populated();

    // Act & Assert
    expect(asw.getGloballyMountedVolumes().map((v) => v.volumeName)).toEqual([vol]);
    expect(asw.getUnmountedVolumes().map((v) => v.volumeName)).toEqual([vol2]);
    expect(asw.getAttachedVolumes().map((v) => v.volumeName).sort()).toEqual([vol, vol2]);
  });

  it('answers existence questions', () => {
    // Arrange
    const asw = populated();

    // Act & Assert
    expect(asw.volumeExists(vol)).toBe(true);
    expect(asw.volumeExists(uniqueVolumeName('fake-plugin/unknown'))).toBe(false);
    expect(asw.volumeExistsWithSpecName(pod1, 'volume-name')).toBe(true);
    expect(asw.volumeExistsWithSpecName(pod1, 'v2')).toBe(false);
    expect(asw.volumeExistsWithSpecName(uniquePodName('nobody'), 'volume-name')).toBe(false);
    expect([asw.podRemovedFromVolume(pod1, vol), asw.podRemovedFromVolume(pod2, vol)]).toEqual([false, false]);
    expect(asw.podRemovedFromVolume(pod1, vol2)).toBe(true);
    expect(asw.podRemovedFromVolume(pod1, uniqueVolumeName('fake-plugin/unknown'))).toBe(true);
    expect(asw.isVolumeMountedElsewhere(vol, pod1)).toBe(true);
    expect(asw.isVolumeMountedElsewhere(vol, pod2)).toBe(true);
    expect(asw.isVolumeMountedElsewhere(vol2, pod1)).toBe(false);
    expect(asw.isVolumeMountedElsewhere(uniqueVolumeName('fake-plugin/unknown'), pod1)).toBe(false);
  });

  it('reports NotMounted states for absent volumes and pods', () => {
    // Arrange
    const asw = populated();

    // Act & Assert
    expect(asw.getVolumeMountState(vol, pod1)).toBe('VolumeMounted');
    expect(asw.getVolumeMountState(vol, pod2)).toBe('VolumeMountUncertain');
    expect(asw.getVolumeMountState(vol, uniquePodName('nobody'))).toBe('VolumeNotMounted');
    expect(asw.getVolumeMountState(uniqueVolumeName('fake-plugin/unknown'), pod1)).toBe('VolumeNotMounted');
    expect(asw.getDeviceMountState(vol)).toBe('DeviceGloballyMounted');
    expect(asw.getDeviceMountState(vol2)).toBe('DeviceNotMounted');
    expect(asw.getDeviceMountState(uniqueVolumeName('fake-plugin/unknown'))).toBe('DeviceNotMounted');
  });

  it('a pod that is the only one mounting a volume is not mounted elsewhere', () => {
    // Arrange
    const asw = aswWithPod();

    // Act & Assert
    expect(asw.isVolumeMountedElsewhere(vol, pod1)).toBe(false);
    expect(asw.isVolumeMountedElsewhere(vol, pod2)).toBe(true);
  });

  it('isPersistentVolumeMountedElsewhere finds a PV mounted by another pod under a per-pod volume name, and reconstructed entries by spec name', () => {
    // Arrange: pod1 has PV "pv-1" under a per-pod unique name; pod2 was reconstructed with an inline spec named "pv-2"
    const plugin = new FakeFileVolumePlugin();
    const asw = newAsw({ plugins: [plugin] });
    const perPod1 = uniqueVolumeName('fake-file-plugin/pod1uid-pv-1');
    const perPod2 = uniqueVolumeName('fake-file-plugin/pod2uid-pv-2');
    const pv1 = specFromPersistentVolume({ metadata: { name: 'pv-1' }, spec: { accessModes: ['ReadWriteOncePod'] } });
    asw.markVolumeAsAttached(perPod1, pv1, node, '');
    asw.addPodToVolume(opts({ volumeName: perPod1, volumeSpec: pv1 }));
    asw.markVolumeAsAttached(perPod2, specFromVolume({ name: 'pv-2' }), node, '');
    asw.checkAndMarkVolumeAsUncertainViaReconstruction(opts({ podName: pod2, podUID: podUID('pod2uid'), volumeName: perPod2, volumeSpec: specFromVolume({ name: 'pv-2' }) }));

    // Act & Assert
    expect(asw.isPersistentVolumeMountedElsewhere('pv-1', plugin.name, pod2)).toBe(true);
    expect(asw.isPersistentVolumeMountedElsewhere('pv-1', plugin.name, pod1)).toBe(false);
    expect(asw.isPersistentVolumeMountedElsewhere('pv-1', pluginName('other-plugin'), pod2)).toBe(false);
    expect(asw.isPersistentVolumeMountedElsewhere('pv-2', plugin.name, pod1)).toBe(true);
    expect(asw.isPersistentVolumeMountedElsewhere('pv-3', plugin.name, pod1)).toBe(false);
    // An inline volume that is not reconstructed never stands for a PV of the same name.
    asw.markVolumeAsMounted(opts({ podName: pod2, podUID: podUID('pod2uid'), volumeName: perPod2, volumeSpec: specFromVolume({ name: 'pv-2' }) }));
    expect(asw.isPersistentVolumeMountedElsewhere('pv-2', plugin.name, pod1)).toBe(false);
  });
});

describe('ActualStateOfWorld.podExistsInVolume', () => {
  const pvSpec = (): Spec => {
    const pv: PersistentVolume = { metadata: { name: 'pv-1' }, spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'] } };
    return specFromPersistentVolume(pv);
  };
  const pvVol = uniqueVolumeName('fake-plugin/pv-1');

  interface Setup {
    pod?: 'VolumeMounted' | 'VolumeMountUncertain';
    remount?: boolean;
    claimSize?: number;
    deviceContext?: string;
    inUseError?: boolean;
  }

  function build(s: Setup): ActualStateOfWorld {
    const plugin = new FakeVolumePlugin({ supportsRemount: true });
    const asw = newAsw({ plugins: [plugin], seLinuxEnabled: true });
    asw.markVolumeAsAttached('', pvSpec(), node, '/dev/sdb');
    if (s.deviceContext !== undefined) asw.markDeviceAsMounted(pvVol, '', '/global', s.deviceContext);
    if (s.pod !== undefined) asw.addPodToVolume(opts({ volumeName: pvVol, volumeSpec: pvSpec(), volumeMountState: s.pod, seLinuxMountContext: 'ctx-a' }));
    if (s.remount === true) asw.markRemountRequired(pod1);
    if (s.claimSize !== undefined) asw.initializeClaimSize(pvVol, s.claimSize);
    if (s.inUseError === true) asw.markForInUseExpansionError(pvVol);
    return asw;
  }

  const notAttached = 'volumeName "fake-plugin/pv-1" does not exist in the list of attached volumes';
  const mismatch = 'waiting for unmount of volume "fake-plugin/pv-1", because it is already mounted to a different pod with a different SELinux label';
  const remount = 'volumeName "fake-plugin/pv-1" is mounted to "pod1uid" but should be remounted';
  const resize = 'volumeName "fake-plugin/pv-1" mounted to "pod1uid" needs to resize file system';

  it.each<{ name: string; setup: Setup | null; desired: number; label: string; mounted: boolean; devicePath: string; error: string | null }>([
    { name: 'absent volume → not attached', setup: null, desired: 2 * Gi, label: '', mounted: false, devicePath: '', error: notAttached },
    {
      name: 'SELinux mismatch beats an Uncertain, remount-requiring, growing pod',
      setup: { pod: 'VolumeMountUncertain', remount: true, claimSize: Gi, deviceContext: 'ctx-a' },
      desired: 2 * Gi,
      label: 'ctx-b',
      mounted: false,
      devicePath: '/dev/sdb',
      error: mismatch,
    },
    {
      name: 'SELinux mismatch is reported even for a pod not in the volume',
      setup: { deviceContext: 'ctx-a' },
      desired: 0,
      label: 'ctx-b',
      mounted: false,
      devicePath: '/dev/sdb',
      error: mismatch,
    },
    {
      name: 'Uncertain beats remount and resize',
      setup: { pod: 'VolumeMountUncertain', remount: true, claimSize: Gi },
      desired: 2 * Gi,
      label: 'ctx-a',
      mounted: false,
      devicePath: '/dev/sdb',
      error: null,
    },
    { name: 'remount beats resize', setup: { pod: 'VolumeMounted', remount: true, claimSize: Gi }, desired: 2 * Gi, label: 'ctx-a', mounted: true, devicePath: '/dev/sdb', error: remount },
    { name: 'resize of a mounted pod', setup: { pod: 'VolumeMounted', claimSize: Gi }, desired: 2 * Gi, label: 'ctx-a', mounted: true, devicePath: '/dev/sdb', error: resize },
    { name: 'absent pod, even with a growing volume', setup: { claimSize: Gi }, desired: 2 * Gi, label: '', mounted: false, devicePath: '/dev/sdb', error: null },
    { name: 'mounted, nothing to do', setup: { pod: 'VolumeMounted', claimSize: Gi }, desired: Gi, label: 'ctx-a', mounted: true, devicePath: '/dev/sdb', error: null },
    { name: 'no resize after an in-use expansion error', setup: { pod: 'VolumeMounted', claimSize: Gi, inUseError: true }, desired: 2 * Gi, label: 'ctx-a', mounted: true, devicePath: '/dev/sdb', error: null },
    { name: 'no resize while the claim size is unknown', setup: { pod: 'VolumeMounted' }, desired: 2 * Gi, label: 'ctx-a', mounted: true, devicePath: '/dev/sdb', error: null },
    { name: 'no resize for a zero desired size', setup: { pod: 'VolumeMounted', claimSize: Gi }, desired: 0, label: 'ctx-a', mounted: true, devicePath: '/dev/sdb', error: null },
    { name: 'no resize for a smaller desired size', setup: { pod: 'VolumeMounted', claimSize: 2 * Gi }, desired: Gi, label: 'ctx-a', mounted: true, devicePath: '/dev/sdb', error: null },
  ])('$name', ({ setup, desired, label, mounted, devicePath, error }) => {
    // Arrange
    const asw = setup === null ? newAsw({ seLinuxEnabled: true }) : build(setup);

    // Act
    const result = asw.podExistsInVolume(pod1, pvVol, desired, label);

    // Assert
    expect(result.mounted).toBe(mounted);
    expect(result.devicePath).toBe(devicePath);
    expect(result.err?.message ?? null).toBe(error);
  });

  it('does not ask for a resize when no node-expandable plugin claims the spec', () => {
    // Arrange
    const asw = newAsw({ plugins: [new FakeFileVolumePlugin()], seLinuxEnabled: true });
    const fileVol = uniqueVolumeName('fake-file-plugin/pv-1');
    asw.markVolumeAsAttached('', pvSpec(), node, '');
    asw.addPodToVolume(opts({ volumeName: fileVol, volumeSpec: pvSpec() }));
    asw.initializeClaimSize(fileVol, Gi);

    // Act
    const result = asw.podExistsInVolume(pod1, fileVol, 2 * Gi, '');

    // Assert
    expect(result).toEqual({ mounted: true, devicePath: '', err: null });
  });

  it('reports the current claim size with FsResizeRequired', () => {
    // Arrange
    const asw = build({ pod: 'VolumeMounted', claimSize: Gi });

    // Act
    const { err } = asw.podExistsInVolume(pod1, pvVol, 3 * Gi, 'ctx-a');

    // Assert
    expect(isFsResizeRequiredError(err)).toBe(true);
    expect(err instanceof FsResizeRequiredError ? err.currentSize : -1).toBe(Gi);
  });
});

describe('ActualStateOfWorld error predicates', () => {
  const errors = {
    notAttached: new VolumeNotAttachedError(vol),
    remount: new RemountRequiredError(vol, pod1),
    resize: new FsResizeRequiredError(vol, pod1, Gi),
    mismatch: new SELinuxMountMismatchError(vol),
    plain: new Error('volumeName "fake-plugin/fake-device1" does not exist in the list of attached volumes'),
  };
  const predicates = {
    notAttached: isVolumeNotAttachedError,
    remount: isRemountRequiredError,
    resize: isFsResizeRequiredError,
    mismatch: isSELinuxMountMismatchError,
  };

  it.each(Object.keys(predicates) as (keyof typeof predicates)[])('%s matches only its own error class', (kind) => {
    // Arrange
    const predicate = predicates[kind];

    // Act
    const matches = Object.entries(errors).filter(([, err]) => predicate(err)).map(([k]) => k);

    // Assert
    expect(matches).toEqual([kind]);
    expect(predicate(null)).toBe(false);
    expect(predicate(errors[kind].message)).toBe(false);
  });

  it('formats the kubelet texts', () => {
    // Arrange & Act
    const texts = [errors.notAttached.message, errors.remount.message, errors.resize.message, errors.mismatch.message];

    // Assert
    expect(texts).toEqual([
      'volumeName "fake-plugin/fake-device1" does not exist in the list of attached volumes',
      'volumeName "fake-plugin/fake-device1" is mounted to "pod1uid" but should be remounted',
      'volumeName "fake-plugin/fake-device1" mounted to "pod1uid" needs to resize file system',
      'waiting for unmount of volume "fake-plugin/fake-device1", because it is already mounted to a different pod with a different SELinux label',
    ]);
  });
});

describe('ActualStateOfWorld whole-world copies (plan-only mode)', () => {
  const vol2 = uniqueVolumeName('fake-plugin/fake-device2');
  const gce2: Volume = { name: 'other', gcePersistentDisk: { pdName: 'fake-device2' } };

  /** Volume 1 with pod1 reconstructed (Uncertain, device Uncertain), volume 2 with pod2 mounted. */
  function twoVolumes(): ActualStateOfWorld {
    const asw = newAsw();
    asw.addAttachUncertainReconstructedVolume(vol, gceSpec(), node, '');
    asw.checkAndMarkVolumeAsUncertainViaReconstruction(opts());
    asw.markDeviceAsUncertain(vol, '', '/plugins/fake-plugin/mounts/fake-device1', '');
    asw.markVolumeAsAttached('', specFromVolume(gce2), node, '/dev/sdc');
    asw.addPodToVolume(opts({ podName: pod2, podUID: podUID('pod2uid'), volumeName: vol2, volumeSpec: specFromVolume(gce2), outerVolumeSpecName: 'other' }));
    return asw;
  }

  it('cloneVolumes copies the chosen volumes with pods and reconstruction marks; the copies are independent', () => {
    // Arrange
    const asw = twoVolumes();
    const heard: string[] = [];
    asw.onChange((v) => heard.push(v));

    // Act
    const all = asw.cloneVolumes(null);
    const one = asw.cloneVolumes(new Set([vol]));
    all.markVolumeAsUnmounted(pod1, vol);
    all.markDeviceAsUnmounted(vol);
    all.markVolumeAsDetached(vol, node);

    // Assert
    expect(one.getVolumes()).toEqual(asw.getVolumes().filter((v) => v.volumeName === vol));
    expect(one.isVolumeReconstructed(vol, pod1)).toBe(true);
    expect(one.volumeExists(vol2)).toBe(false);
    expect(all.volumeExists(vol)).toBe(false);
    expect(asw.getVolumeMountState(vol, pod1)).toBe('VolumeMountUncertain');
    expect(asw.getDeviceMountState(vol)).toBe('DeviceMountUncertain');
    expect(asw.isVolumeReconstructed(vol, pod1)).toBe(true);
    expect(heard).toEqual([]);
    // The scan index of a copy lists the same pairs.
    expect(sweep(one, 0, 10)).toEqual({ names: [vol], total: 1 });
  });

  it('replaceContent moves the source in, reports and announces only the volumes that were added, removed or changed', () => {
    // Arrange: now: vol (reconstructed) + vol2 (mounted); next: vol as reconstructed again, vol2 gone, vol3 new
    const asw = twoVolumes();
    const next = asw.newEmpty();
    next.addAttachUncertainReconstructedVolume(vol, gceSpec(), node, '');
    next.checkAndMarkVolumeAsUncertainViaReconstruction(opts());
    next.markDeviceAsUncertain(vol, '', '/plugins/fake-plugin/mounts/fake-device1', '');
    const vol3 = uniqueVolumeName('fake-plugin/fake-device3');
    const gce3: Volume = { name: 'third', gcePersistentDisk: { pdName: 'fake-device3' } };
    next.markVolumeAsAttached('', specFromVolume(gce3), node, '');
    const heard: string[] = [];
    asw.onChange((v) => heard.push(v));

    // Act
    const diff = asw.replaceContent(next);

    // Assert
    expect(diff).toEqual({ added: [vol3], removed: [vol2], changed: [] });
    expect(heard).toEqual([vol2, vol3]);
    expect(asw.getVolumes().map((v) => v.volumeName)).toEqual([vol, vol3]);
    expect(asw.isVolumeReconstructed(vol, pod1)).toBe(true);
    expect(asw.getAllMountedVolumes().map((m) => [m.volumeName, m.podName])).toEqual([[vol, pod1]]);
    expect(sweep(asw, 0, 10)).toEqual({ names: [vol], total: 1 });
    expect(next.getVolumes()).toEqual([]);
  });

  it.each([
    { name: 'attachability', change: (a: ActualStateOfWorld) => { a.updateReconstructedVolumeAttachability(vol, true); } },
    { name: 'device path', change: (a: ActualStateOfWorld) => { a.updateReconstructedDevicePath(vol, '/dev/sdz'); } },
    { name: 'device state', change: (a: ActualStateOfWorld) => { a.markDeviceAsUnmounted(vol); } },
    { name: 'pod mount state', change: (a: ActualStateOfWorld) => { a.markVolumeAsMounted(opts()); } },
    { name: 'a pod gone', change: (a: ActualStateOfWorld) => { a.markVolumeAsUnmounted(pod1, vol); } },
    { name: 'claim size', change: (a: ActualStateOfWorld) => { a.initializeClaimSize(vol, Gi); } },
  ])('replaceContent announces a volume whose $name differs', ({ change }) => {
    const asw = twoVolumes();
    const next = asw.cloneVolumes(null);
    change(next);
    const heard: string[] = [];
    asw.onChange((v) => heard.push(v));

    const diff = asw.replaceContent(next);

    expect(diff).toEqual({ added: [], removed: [], changed: [vol] });
    expect(heard).toEqual([vol]);
  });

  it('getAttachability returns the tri-state, null when the volume is absent', () => {
    const asw = twoVolumes();
    expect(asw.getAttachability(vol)).toBe('Uncertain');
    expect(asw.getAttachability(vol2)).toBe('True');
    expect(asw.getAttachability(uniqueVolumeName('fake-plugin/none'))).toBeNull();
  });
});

describe('per-pod questions (answered from the per-pod index)', () => {
  it('answer what a filter over every entry answers, in the same order, through adds, unmounts, copies and swaps', () => {
    const podNames = ['pa', 'pb', 'pc'].map(uniquePodName);
    const volumes = ['v0', 'v1', 'v2', 'v3'];
    fc.assert(
      fc.property(
        fc.array(fc.record({ op: fc.constantFrom('mount', 'uncertain', 'unmount', 'swap'), pod: fc.nat(2), volume: fc.nat(3) }), { maxLength: 40 }),
        (steps) => {
          let asw = newAsw();
          for (const step of steps) {
            const podName = podNames[step.pod] as UniquePodName;
            const spec = volumes[step.volume] as string;
            const volumeName = uniqueVolumeName(`fake-plugin/${spec}`);
            if (step.op === 'swap') {
              // A copy swapped back in (the plan-only rebuild's path).
              const next = newAsw();
              next.replaceContent(asw.cloneVolumes(null));
              asw = next;
            } else if (step.op === 'unmount') {
              if (asw.volumeExists(volumeName)) asw.markVolumeAsUnmounted(podName, volumeName);
            } else {
              if (!asw.volumeExists(volumeName)) asw.markVolumeAsAttached(volumeName, specFromVolume({ name: spec }), node, '');
              asw.addPodToVolume(
                opts({ podName, podUID: podUID(podName), volumeName, volumeSpec: specFromVolume({ name: spec }), volumeMountState: step.op === 'mount' ? 'VolumeMounted' : 'VolumeMountUncertain' }),
              );
            }
            for (const p of podNames) {
              const all = asw.getAllMountedVolumes().filter((m) => m.podName === p);
              expect(asw.getPossiblyMountedVolumesForPod(p)).toEqual(all);
              expect(asw.getMountedVolumesForPod(p)).toEqual(all.filter((m) => m.volumeMountState === 'VolumeMounted'));
              for (const v of volumes) expect(asw.volumeExistsWithSpecName(p, v)).toBe(all.some((m) => m.innerVolumeSpecName === v));
            }
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
