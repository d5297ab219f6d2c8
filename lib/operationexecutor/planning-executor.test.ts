/**
 * The planning executor of plan-only mode, driven by hand: what each reconciler call records
 * (operation names as the kubelet's, reasons, states, steps), the identity of an operation across
 * rounds (firstPlannedAt kept without a gap, restarted after one), scoped rounds, the outcomes it
 * projects between steps, and that it never touches any world but the round's projection.
 * The reconciler-driven behaviour is in lib/volumemanager/plan-only.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Logger } from '../volume/logger.ts';
import type { Pod } from '../volume/k8s-types.ts';
import { specFromPersistentVolume, specFromVolume, type Spec } from '../volume/spec.ts';
import { podUID, uniquePodName, uniqueVolumeName, type UniqueVolumeName } from '../volume/types.ts';
import type { ActualStateOfWorld } from '../volumemanager/cache/actual-state-of-world.ts';
import { gcePdVolume, Harness, makePod, testNodeName } from '../volumemanager/testing/harness.ts';
import { isPlanningRoundError, PlanningExecutor, PlanningRoundError, type PlannedOperation } from './planning-executor.ts';
import type { AttachedVolume, MountedVolume, VolumeToMount } from './types.ts';

// HELPERS

let harness: Harness | undefined;

afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** A (non-started) volume manager: only its worlds and clock are used. */
function newHarness(): Harness {
  harness = new Harness({ controllerAttachDetachEnabled: true });
  return harness;
}

const pod1 = uniquePodName('pod1uid');
const pod2 = uniquePodName('pod2uid');
const volA = uniqueVolumeName('fake-plugin/disk-a');
const volB = uniqueVolumeName('fake-plugin/disk-b');

function desire(h: Harness, pod: Pod, spec: Spec, outerName: string): VolumeToMount {
  const podName = uniquePodName(pod.metadata.uid ?? '');
  h.dsw.addPodToVolume(podName, pod, spec, outerName, '', []);
  const vtm = h.dsw.getVolumesToMount().find((v) => v.podName === podName && v.outerVolumeSpecName === outerName);
  if (vtm === undefined) throw new Error(`no VolumeToMount for ${outerName}`);
  return vtm;
}

/** A pod using the GCE PD `disk` under the volume name `name`. */
function gcePod(uid: string, name: string, disk: string): { pod: Pod; spec: Spec } {
  const volume = gcePdVolume(name, disk);
  return { pod: makePod([volume], { uid, name: uid }), spec: specFromVolume(volume) };
}

function mountedEntry(asw: ActualStateOfWorld, volumeName: UniqueVolumeName, podName: typeof pod1): MountedVolume {
  const mv = asw.getAllMountedVolumes().find((m) => m.volumeName === volumeName && m.podName === podName);
  if (mv === undefined) throw new Error('no such mounted entry');
  return mv;
}

function attached(asw: ActualStateOfWorld, volumeName: UniqueVolumeName): AttachedVolume {
  const av = asw.getAttachedVolume(volumeName);
  if (av === null) throw new Error('no such attached volume');
  return av;
}

/** Plans with the times left out, for readable expectations. */
function shapes(plans: PlannedOperation[]): Omit<PlannedOperation, 'firstPlannedAt' | 'lastPlannedAt'>[] {
  return plans.map(({ firstPlannedAt: _f, lastPlannedAt: _l, ...rest }) => rest);
}

function thrownBy(fn: () => void): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

// RECORDS

describe('PlanningExecutor records', () => {
  it('records each reconciler call under the kubelet operation name, with reason, state and step, and runs nothing', () => {
    // Arrange: volume A not attached (pod1 wants it); volume B mounted for pod2, which no longer wants it
    const h = newHarness();
    const a = gcePod('pod1uid', 'data', 'disk-a');
    const vtmA = desire(h, a.pod, a.spec, 'data');
    const b = gcePod('pod2uid', 'logs', 'disk-b');
    h.asw.markVolumeAsAttached(volB, b.spec, testNodeName, '/dev/sdb');
    h.asw.markDeviceAsMounted(volB, '/dev/sdb', '/plugins/fake-plugin/mounts/disk-b', '');
    h.asw.markVolumeAsMounted({
      podName: pod2, podUID: podUID(pod2), volumeName: volB, mounter: null, blockVolumeMapper: null,
      outerVolumeSpecName: 'logs', volumeGidValue: '', volumeSpec: b.spec, volumeMountState: 'VolumeMounted', seLinuxMountContext: '',
    });
    const planner = new PlanningExecutor({ clock: h.clock });
    const projection = h.asw.cloneVolumes(null);

    // Act: step 1 as the reconciler would start it, step 2 after its outcomes
    planner.beginRound(projection, null);
    planner.verifyControllerAttachedVolume(vtmA, testNodeName, projection);
    planner.unmountVolume(mountedEntry(projection, volB, pod2), projection, '/pods');
    const step1 = planner.endStep();
    planner.mountVolume(1_000, { ...vtmA, devicePath: '' }, projection, false);
    planner.unmountDevice(attached(projection, volB), projection);
    const step2 = planner.endStep();
    const step3 = planner.endStep();
    planner.endRound();

    // Assert
    expect([step1, step2, step3]).toEqual([new Set([volA, volB]), new Set([volA, volB]), new Set()]);
    expect(shapes(planner.list())).toEqual([
      { operationName: 'verify_controller_attached_volume', volumeName: volA, podName: null, podUid: null, outerVolumeSpecName: null, reason: 'attach-verification-required', state: 'VolumeNotAttached', reconstructed: false, step: 1 },
      { operationName: 'volume_mount', volumeName: volA, podName: pod1, podUid: 'pod1uid', outerVolumeSpecName: 'data', reason: 'mount-required', state: 'VolumeNotMounted', reconstructed: false, step: 2 },
      { operationName: 'volume_unmount', volumeName: volB, podName: pod2, podUid: 'pod2uid', outerVolumeSpecName: 'logs', reason: 'pod-not-desired', state: 'VolumeMounted', reconstructed: false, step: 1 },
      { operationName: 'unmount_device', volumeName: volB, podName: null, podUid: null, outerVolumeSpecName: null, reason: 'device-not-needed', state: 'DeviceGloballyMounted', reconstructed: false, step: 2 },
    ]);
    // The projection moved on; the actual world did not.
    expect(projection.getVolumeMountState(volA, pod1)).toBe('VolumeMounted');
    expect(projection.getDeviceMountState(volB)).toBe('DeviceNotMounted');
    expect(h.asw.volumeExists(volA)).toBe(false);
    expect(h.asw.getVolumeMountState(volB, pod2)).toBe('VolumeMounted');
    expect(h.asw.getDeviceMountState(volB)).toBe('DeviceGloballyMounted');
    expect(planner.isOperationPending(volB, pod2, testNodeName)).toBe(false);
    expect(h.plugin.counts).toEqual({
      attach: 0, waitForAttach: 0, mountDevice: 0, setUp: 0, tearDown: 0, unmountDevice: 0, detach: 0,
      mapPodDevice: 0, setUpDevice: 0, tearDownDevice: 0, unmapPodDevice: 0, nodeExpand: 0, volumesAreAttached: 0,
    });
  });

  it('names block operations map_volume, unmap_volume and unmap_device, and kubelet-managed ones volume_attach, volume_detach and volume_fs_resize', () => {
    // Arrange
    const h = newHarness();
    const pv = specFromPersistentVolume({ metadata: { name: 'blk' }, spec: { volumeMode: 'Block', accessModes: ['ReadWriteOnce'], gcePersistentDisk: { pdName: 'blk' } } });
    const blk = uniqueVolumeName('fake-plugin/blk');
    const vtm = desire(h, makePod([{ name: 'raw', persistentVolumeClaim: { claimName: 'c' } }], { devices: true }), pv, 'raw');
    const planner = new PlanningExecutor({ clock: h.clock });
    const projection = h.asw.cloneVolumes(null);
    projection.markVolumeAsAttached(blk, pv, testNodeName, '/dev/sdb');
    projection.markVolumeAsMounted({
      podName: pod2, podUID: podUID(pod2), volumeName: blk, mounter: null, blockVolumeMapper: null,
      outerVolumeSpecName: 'raw', volumeGidValue: '', volumeSpec: pv, volumeMountState: 'VolumeMountUncertain', seLinuxMountContext: '',
    });

    // Act
    planner.beginRound(projection, null);
    planner.attachVolume({ volumeName: blk, volumeSpec: pv, nodeName: testNodeName, scheduledPods: [vtm.pod] }, projection);
    planner.mountVolume(1_000, vtm, projection, false);
    planner.unmountVolume(mountedEntry(projection, blk, pod2), projection, '/pods');
    planner.unmountDevice(attached(projection, blk), projection);
    planner.detachVolume(attached(projection, blk), projection);
    planner.expandInUseVolume(vtm, projection, 1);
    planner.endStep();
    planner.endRound();

    // Assert
    expect(planner.list().map((p) => [p.operationName, p.podName, p.reason, p.state])).toEqual([
      ['unmap_device', null, 'device-not-needed', 'DeviceNotMounted'],
      ['volume_attach', null, 'attach-required', 'VolumeNotAttached'],
      ['volume_detach', null, 'volume-not-needed', 'DeviceNotMounted'],
      ['volume_fs_resize', null, 'fs-resize-required', 'VolumeMounted'],
      ['map_volume', pod1, 'mount-required', 'VolumeNotMounted'],
      ['unmap_volume', pod2, 'pod-not-desired', 'VolumeMountUncertain'],
    ]);
  });

  it('records a verification still waiting for the volume to be reported in use with its own reason', () => {
    const h = newHarness();
    const a = gcePod('pod1uid', 'data', 'disk-a');
    const vtm = desire(h, a.pod, a.spec, 'data');
    const planner = new PlanningExecutor({ clock: h.clock });
    const projection = h.asw.cloneVolumes(null);

    planner.beginRound(projection, null);
    planner.volumeNotReportedInUse(vtm, testNodeName, projection);
    planner.endStep();
    planner.endRound();

    expect(planner.list().map((p) => [p.operationName, p.reason])).toEqual([['verify_controller_attached_volume', 'awaiting-reported-in-use']]);
    expect(projection.volumeExists(volA)).toBe(true);
  });

  it('does not plan the confirming mount of an entry found by reconstruction, but projects it as mounted', () => {
    // Arrange: pod1's entry of volume A was reconstructed (Uncertain), and a mount had been planned for it before
    const h = newHarness();
    const a = gcePod('pod1uid', 'data', 'disk-a');
    const vtm = desire(h, a.pod, a.spec, 'data');
    const planner = new PlanningExecutor({ clock: h.clock });
    const empty = h.asw.cloneVolumes(null);
    planner.beginRound(empty, null);
    planner.mountVolume(1_000, vtm, empty, false);
    planner.endStep();
    planner.endRound();
    expect(planner.list()).toHaveLength(1);
    h.asw.addAttachUncertainReconstructedVolume(volA, a.spec, testNodeName, '');
    h.asw.checkAndMarkVolumeAsUncertainViaReconstruction({
      podName: pod1, podUID: podUID(pod1), volumeName: volA, mounter: null, blockVolumeMapper: null,
      outerVolumeSpecName: 'data', volumeGidValue: '', volumeSpec: a.spec, volumeMountState: 'VolumeMountUncertain', seLinuxMountContext: '',
    });
    h.asw.markDeviceAsUncertain(volA, '', '/plugins/fake-plugin/mounts/disk-a', '');
    const projection = h.asw.cloneVolumes(null);

    // Act
    planner.beginRound(projection, null);
    planner.mountVolume(1_000, vtm, projection, false);
    const confirmed = planner.endStep();
    planner.mountVolume(1_000, vtm, projection, false);
    const again = planner.endStep();
    planner.endRound();

    // Assert: the earlier plan is gone; the projection has the mount confirmed
    expect([confirmed, again]).toEqual([new Set([volA]), new Set()]);
    expect(planner.list()).toEqual([]);
    expect(projection.getVolumeMountState(volA, pod1)).toBe('VolumeMounted');
    expect(projection.getDeviceMountState(volA)).toBe('DeviceGloballyMounted');
    expect(h.asw.getVolumeMountState(volA, pod1)).toBe('VolumeMountUncertain');
  });

  it('plans a remount of a reconstructed entry (only a new mount confirms)', () => {
    const h = newHarness();
    const a = gcePod('pod1uid', 'data', 'disk-a');
    const vtm = desire(h, a.pod, a.spec, 'data');
    h.asw.addAttachUncertainReconstructedVolume(volA, a.spec, testNodeName, '');
    h.asw.checkAndMarkVolumeAsUncertainViaReconstruction({
      podName: pod1, podUID: podUID(pod1), volumeName: volA, mounter: null, blockVolumeMapper: null,
      outerVolumeSpecName: 'data', volumeGidValue: '', volumeSpec: a.spec, volumeMountState: 'VolumeMountUncertain', seLinuxMountContext: '',
    });
    const planner = new PlanningExecutor({ clock: h.clock });
    const projection = h.asw.cloneVolumes(null);

    planner.beginRound(projection, null);
    planner.mountVolume(1_000, vtm, projection, true);
    planner.endStep();
    planner.endRound();

    expect(shapes(planner.list())).toEqual([
      { operationName: 'volume_mount', volumeName: volA, podName: pod1, podUid: 'pod1uid', outerVolumeSpecName: 'data', reason: 'remount-required', state: 'VolumeMountUncertain', reconstructed: true, step: 1 },
    ]);
  });

  it('keeps the earliest step of an operation asked for again later in the round', () => {
    const h = newHarness();
    const a = gcePod('pod1uid', 'data', 'disk-a');
    const vtm = desire(h, a.pod, a.spec, 'data');
    const planner = new PlanningExecutor({ clock: h.clock });
    const projection = h.asw.cloneVolumes(null);

    planner.beginRound(projection, null);
    planner.verifyControllerAttachedVolume(vtm, testNodeName, projection);
    planner.verifyControllerAttachedVolume(vtm, testNodeName, projection);
    const first = planner.endStep();
    planner.verifyControllerAttachedVolume(vtm, testNodeName, projection);
    const second = planner.endStep();
    planner.endRound();

    expect([first, second]).toEqual([new Set([volA]), new Set()]);
    expect(planner.list().map((p) => p.step)).toEqual([1]);
  });
});

// IDENTITY ACROSS ROUNDS

describe('PlanningExecutor rounds', () => {
  /** One round in which `plan` runs as step 1. */
  function round(planner: PlanningExecutor, projection: ActualStateOfWorld, scope: Set<UniqueVolumeName> | null, plan: () => void): void {
    planner.beginRound(projection, scope);
    plan();
    planner.endStep();
    planner.endRound();
  }

  it('keeps firstPlannedAt while every round plans the operation, drops it after a round that does not, and restarts it on a new plan', async () => {
    // Arrange
    const h = newHarness();
    const a = gcePod('pod1uid', 'data', 'disk-a');
    const vtm = desire(h, a.pod, a.spec, 'data');
    const planner = new PlanningExecutor({ clock: h.clock });
    const t0 = h.clock.now();
    const verify = (projection: ActualStateOfWorld) => () => {
      planner.verifyControllerAttachedVolume(vtm, testNodeName, projection);
    };

    // Act + Assert
    let p = h.asw.cloneVolumes(null);
    round(planner, p, null, verify(p));
    await h.clock.advance(1_000);
    p = h.asw.cloneVolumes(null);
    round(planner, p, null, verify(p));
    expect(planner.list().map((x) => [x.firstPlannedAt, x.lastPlannedAt])).toEqual([[t0, t0 + 1_000]]);

    await h.clock.advance(1_000);
    round(planner, h.asw.cloneVolumes(null), null, () => undefined);
    expect(planner.list()).toEqual([]);

    await h.clock.advance(1_000);
    p = h.asw.cloneVolumes(null);
    round(planner, p, null, verify(p));
    expect(planner.list().map((x) => [x.firstPlannedAt, x.lastPlannedAt])).toEqual([[t0 + 3_000, t0 + 3_000]]);
  });

  it('re-plans only the volumes of a scoped round and leaves the others untouched', async () => {
    // Arrange: both volumes planned at t0
    const h = newHarness();
    const a = gcePod('pod1uid', 'data', 'disk-a');
    const b = gcePod('pod2uid', 'logs', 'disk-b');
    const vtmA = desire(h, a.pod, a.spec, 'data');
    const vtmB = desire(h, b.pod, b.spec, 'logs');
    const planner = new PlanningExecutor({ clock: h.clock });
    const t0 = h.clock.now();
    let p = h.asw.cloneVolumes(null);
    round(planner, p, null, () => {
      planner.verifyControllerAttachedVolume(vtmA, testNodeName, p);
      planner.verifyControllerAttachedVolume(vtmB, testNodeName, p);
    });
    await h.clock.advance(1_000);

    // Act: a round over volume A only, which no longer plans anything for it
    p = h.asw.cloneVolumes(new Set([volA]));
    round(planner, p, new Set([volA]), () => undefined);

    // Assert
    expect(planner.list().map((x) => [x.volumeName, x.firstPlannedAt, x.lastPlannedAt])).toEqual([[volB, t0, t0]]);
  });

  it('lists in a stable order: by volume, step, pod, operation name', () => {
    const h = newHarness();
    const a1 = gcePod('pod1uid', 'data', 'disk-a');
    const a2 = gcePod('pod2uid', 'data', 'disk-a');
    const b = gcePod('pod1uid', 'logs', 'disk-b');
    const vtmA2 = desire(h, a2.pod, a2.spec, 'data');
    const vtmA1 = desire(h, a1.pod, a1.spec, 'data');
    const vtmB = desire(h, b.pod, b.spec, 'logs');
    const planner = new PlanningExecutor({ clock: h.clock });
    const p = h.asw.cloneVolumes(null);

    planner.beginRound(p, null);
    planner.verifyControllerAttachedVolume(vtmB, testNodeName, p);
    planner.verifyControllerAttachedVolume(vtmA2, testNodeName, p);
    planner.endStep();
    planner.mountVolume(1_000, vtmB, p, false);
    planner.mountVolume(1_000, vtmA2, p, false);
    planner.mountVolume(1_000, vtmA1, p, false);
    planner.endStep();
    planner.endRound();

    expect(planner.list().map((x) => [x.volumeName, x.step, x.podName, x.operationName])).toEqual([
      [volA, 1, null, 'verify_controller_attached_volume'],
      [volA, 2, pod1, 'volume_mount'],
      [volA, 2, pod2, 'volume_mount'],
      [volB, 1, null, 'verify_controller_attached_volume'],
      [volB, 2, pod1, 'volume_mount'],
    ]);
  });

  it('tells its listener after a round that changed the plan, and only then', async () => {
    const h = newHarness();
    const a = gcePod('pod1uid', 'data', 'disk-a');
    const vtm = desire(h, a.pod, a.spec, 'data');
    let changes = 0;
    const planner = new PlanningExecutor({
      clock: h.clock,
      onChange: () => {
        changes++;
      },
    });
    const verify = (p: ActualStateOfWorld) => () => {
      planner.verifyControllerAttachedVolume(vtm, testNodeName, p);
    };

    let p = h.asw.cloneVolumes(null);
    round(planner, p, null, verify(p));
    expect(changes).toBe(1);
    p = h.asw.cloneVolumes(null);
    round(planner, p, null, verify(p)); // same instant: nothing changed
    expect(changes).toBe(1);
    await h.clock.advance(10);
    p = h.asw.cloneVolumes(null);
    round(planner, p, null, verify(p)); // lastPlannedAt moved on
    expect(changes).toBe(2);
    round(planner, h.asw.cloneVolumes(null), null, () => undefined); // dropped
    expect(changes).toBe(3);
    round(planner, h.asw.cloneVolumes(null), null, () => undefined);
    expect(changes).toBe(3);
  });
});

// SAFETY

describe('PlanningExecutor safety', () => {
  it('refuses operations outside a round with PlanningRoundError', () => {
    const h = newHarness();
    const a = gcePod('pod1uid', 'data', 'disk-a');
    const vtm = desire(h, a.pod, a.spec, 'data');
    const planner = new PlanningExecutor({ clock: h.clock });

    const err = thrownBy(() => {
      planner.mountVolume(1_000, vtm, h.asw, false);
    });

    expect(err).toBeInstanceOf(PlanningRoundError);
    expect(isPlanningRoundError(err)).toBe(true);
    expect((err as Error).message).toBe('planning executor: mountVolume outside a planning round');
    expect(isPlanningRoundError(new Error('x'))).toBe(false);
    expect(planner.list()).toEqual([]);
  });

  it('never applies an outcome to a world other than the round projection (it records, logs, and leaves that world alone)', () => {
    // Arrange
    const h = newHarness();
    const a = gcePod('pod1uid', 'data', 'disk-a');
    const vtm = desire(h, a.pod, a.spec, 'data');
    const errors: string[] = [];
    const logger: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: (m) => errors.push(m) };
    const planner = new PlanningExecutor({ clock: h.clock, logger });
    const projection = h.asw.cloneVolumes(null);

    // Act: handed the live actual world instead of the projection
    planner.beginRound(projection, null);
    planner.verifyControllerAttachedVolume(vtm, testNodeName, h.asw);
    planner.endStep();
    planner.endRound();

    // Assert
    expect(planner.list().map((p) => p.operationName)).toEqual(['verify_controller_attached_volume']);
    expect(h.asw.volumeExists(volA)).toBe(false);
    expect(projection.volumeExists(volA)).toBe(false);
    expect(errors).toEqual([
      "planning: verify_controller_attached_volume fake-plugin/disk-a was handed a world other than the round's projection; its outcome is not projected",
    ]);
  });

  it('ends the chain where the projection refuses an outcome', () => {
    // Unmounting a pod of a volume that is not in the projection: nothing to apply, nothing thrown.
    const h = newHarness();
    const a = gcePod('pod1uid', 'data', 'disk-a');
    const planner = new PlanningExecutor({ clock: h.clock });
    const projection = h.asw.cloneVolumes(null);
    const mv: MountedVolume = {
      podName: pod1, volumeName: volA, innerVolumeSpecName: 'data', outerVolumeSpecName: 'data', pluginName: h.plugin.name,
      podUID: podUID(pod1), mounter: null, blockVolumeMapper: null, volumeGidValue: '', volumeSpec: a.spec,
      deviceMountPath: '', seLinuxMountContext: null, volumeMountState: 'VolumeMounted',
    };

    planner.beginRound(projection, null);
    planner.unmountVolume(mv, projection, '/pods');
    expect(() => planner.endStep()).not.toThrow();
    planner.endRound();

    expect(planner.list().map((p) => p.operationName)).toEqual(['volume_unmount']);
  });
});
