import { describe, expect, it } from 'vitest';
import { buildAttachmentModel, detachRequestKey, isMultiAttachAllowed, isPodTerminated, type BuildOptions, type DetachRequest } from './model.ts';
import { T0, csiDriver, iso, lease, node, objects, pod, pv, pvc, uniqueName, va } from './testing/fixtures.ts';
import type { AttachmentObjects } from './objects.ts';

const first: BuildOptions = { nowMs: T0, detachRequests: new Map(), baseline: true };

function build(o: AttachmentObjects, options: BuildOptions = first) {
  return buildAttachmentModel(o, options);
}

describe('buildAttachmentModel: desired and actual', () => {
  it('a running pod with an attached volume: desired and attached on its node, nothing to detach', () => {
    const { model, detachRequests } = build(
      objects({
        persistentVolumes: [pv('pv-1')],
        persistentVolumeClaims: [pvc('pv-1')],
        pods: [pod('app-0', 'node-a', 'claim-pv-1')],
        nodes: [node('node-a', { attached: ['pv-1'], inUse: ['pv-1'] }), node('node-b')],
        volumeAttachments: [va('pv-1', 'node-a')],
      }),
    );
    expect(model.volumes).toHaveLength(1);
    const v = model.volumes[0];
    expect(v).toMatchObject({ pv: 'pv-1', driver: 'csi-loop.volumescope.dev', uniqueVolumeName: uniqueName('pv-1'), multiAttachAllowed: false, claim: { namespace: 'default', name: 'claim-pv-1' } });
    expect(v?.nodes).toEqual([
      expect.objectContaining({ node: 'node-a', desired: true, attached: true, reportedAttached: true, inUse: true, detachRequest: null, pods: [expect.objectContaining({ name: 'app-0' })] }),
    ]);
    expect(detachRequests.size).toBe(0);
    // Only nodes the volumes mention are described.
    expect(Object.keys(model.nodes)).toEqual(['node-a']);
  });

  it('a terminated pod does not keep its volume desired; a deleted pod whose containers still run does', () => {
    const o = objects({
      persistentVolumes: [pv('pv-1'), pv('pv-2'), pv('pv-3')],
      persistentVolumeClaims: [pvc('pv-1'), pvc('pv-2'), pvc('pv-3')],
      pods: [
        pod('done', 'node-a', 'claim-pv-1', { phase: 'Succeeded', running: false }),
        pod('deleting-running', 'node-a', 'claim-pv-2', { deletingSinceMs: T0 - 1000 }),
        pod('deleting-stopped', 'node-a', 'claim-pv-3', { deletingSinceMs: T0 - 1000, running: false }),
      ],
      nodes: [node('node-a')],
    });
    const byPv = new Map(build(o).model.volumes.map((v) => [v.pv, v.nodes[0]]));
    expect(byPv.get('pv-1')).toMatchObject({ desired: false, pods: [], terminatedPods: [expect.objectContaining({ name: 'done' })] });
    expect(byPv.get('pv-2')).toMatchObject({ desired: true, pods: [expect.objectContaining({ name: 'deleting-running', deleting: true, deletionMs: T0 - 1000 })] });
    expect(byPv.get('pv-3')).toMatchObject({ desired: false, terminatedPods: [expect.objectContaining({ name: 'deleting-stopped' })] });
  });

  it('isPodTerminated follows IsPodTerminated: a deleted pod without container statuses counts as terminated', () => {
    expect(isPodTerminated({ metadata: { deletionTimestamp: iso(T0) }, status: { phase: 'Running' } })).toBe(true);
    expect(isPodTerminated({ status: { phase: 'Running' } })).toBe(false);
    expect(isPodTerminated({ status: { phase: 'Failed' } })).toBe(true);
    expect(isPodTerminated({ metadata: { deletionTimestamp: iso(T0) }, status: { containerStatuses: [{ state: { waiting: {} } }, { state: { running: {} } }] } })).toBe(false);
  });

  it('drivers with attachRequired: false are left out; a driver without a CSIDriver object needs attaching', () => {
    const other = { ...pv('pv-2'), spec: { ...pv('pv-2').spec, csi: { driver: 'no-csidriver.example', volumeHandle: 'h' } } };
    const o = objects({
      csiDrivers: [csiDriver('csi-loop.volumescope.dev', false)],
      persistentVolumes: [pv('pv-1'), other],
      persistentVolumeClaims: [pvc('pv-1'), pvc('pv-2')],
      pods: [pod('a', 'node-a', 'claim-pv-1'), pod('b', 'node-a', 'claim-pv-2')],
      nodes: [node('node-a')],
    });
    const { model } = build(o);
    expect(model.volumes.map((v) => [v.pv, v.attachRequired, v.csiDriverKnown])).toEqual([['pv-2', true, false]]);
  });

  it('a node without the controller-managed annotation, or one that does not exist, is not a desired target', () => {
    const o = objects({
      persistentVolumes: [pv('pv-1'), pv('pv-2')],
      persistentVolumeClaims: [pvc('pv-1'), pvc('pv-2')],
      pods: [pod('a', 'self-attaching', 'claim-pv-1'), pod('b', 'gone', 'claim-pv-2')],
      nodes: [node('self-attaching', { managed: false })],
    });
    const { model } = build(o);
    expect(model.volumes.map((v) => v.nodes[0]?.desired)).toEqual([false, false]);
    expect(model.nodes['self-attaching']).toMatchObject({ exists: true, controllerManaged: false });
    expect(model.nodes.gone).toMatchObject({ exists: false, healthy: false, ready: null });
  });

  it('a VolumeAttachment of a deleted PV is kept (driver from the attacher), node status of untracked volumes is not', () => {
    const o = objects({
      nodes: [node('node-a', { attached: ['pv-x'], inUse: ['pv-x'] })],
      volumeAttachments: [va('pv-deleted', 'node-a')],
    });
    const { model } = build(o);
    expect(model.volumes).toEqual([expect.objectContaining({ pv: 'pv-deleted', pvExists: false, driver: 'csi-loop.volumescope.dev', uniqueVolumeName: '' })]);
    expect(model.volumes[0]?.nodes[0]).toMatchObject({ attached: true, desired: false, reportedAttached: false });
  });

  it('IsMultiAttachAllowed: ReadWriteOnce and ReadWriteOncePod allow one node; none, ReadOnlyMany, ReadWriteMany allow several', () => {
    expect(isMultiAttachAllowed(['ReadWriteOnce'])).toBe(false);
    expect(isMultiAttachAllowed(['ReadWriteOncePod'])).toBe(false);
    expect(isMultiAttachAllowed(['ReadOnlyMany', 'ReadWriteOnce'])).toBe(false);
    expect(isMultiAttachAllowed(['ReadWriteMany'])).toBe(true);
    expect(isMultiAttachAllowed(['ReadOnlyMany'])).toBe(true);
    expect(isMultiAttachAllowed([])).toBe(true);
  });

  it('node facts: Ready condition, Lease renew time, the out-of-service taint, CSINode drivers', () => {
    const o = objects({
      persistentVolumes: [pv('pv-1')],
      persistentVolumeClaims: [pvc('pv-1')],
      pods: [pod('a', 'node-a', 'claim-pv-1')],
      nodes: [node('node-a', { ready: 'Unknown', readySinceMs: T0 - 90_000, outOfService: true })],
      leases: [lease('node-a', T0 - 120_000)],
      csiNodes: [{ metadata: { name: 'node-a' }, spec: { drivers: [{ name: 'csi-loop.volumescope.dev', nodeID: 'node-a' }] } }],
    });
    expect(build(o).model.nodes['node-a']).toEqual({
      name: 'node-a',
      exists: true,
      ready: 'Unknown',
      readyReason: 'NodeStatusUnknown',
      readySinceMs: T0 - 90_000,
      healthy: false,
      leaseRenewedMs: T0 - 120_000,
      outOfService: { value: 'nodeshutdown', effect: 'NoExecute', sinceMs: T0 },
      controllerManaged: true,
      csiDrivers: ['csi-loop.volumescope.dev'],
    });
  });
});

describe('buildAttachmentModel: detach requests (the ADC detachRequestedTime)', () => {
  const attachedNotDesired = objects({
    persistentVolumes: [pv('pv-1')],
    persistentVolumeClaims: [pvc('pv-1')],
    nodes: [node('node-a', { attached: ['pv-1'], inUse: ['pv-1'] })],
    volumeAttachments: [va('pv-1', 'node-a')],
  });

  it('starts when an attached volume is first seen undesired and is carried over; a lower bound on the baseline build', () => {
    const one = build(attachedNotDesired, { nowMs: T0, detachRequests: new Map(), baseline: false });
    expect(one.model.volumes[0]?.nodes[0]?.detachRequest).toEqual({ sinceMs: T0, lowerBound: false });
    const two = build(attachedNotDesired, { nowMs: T0 + 60_000, detachRequests: one.detachRequests, baseline: false });
    expect(two.model.volumes[0]?.nodes[0]?.detachRequest).toEqual({ sinceMs: T0, lowerBound: false });
    const baseline = build(attachedNotDesired, { nowMs: T0, detachRequests: new Map(), baseline: true });
    expect(baseline.detachRequests.get(detachRequestKey('pv-1', 'node-a'))).toEqual({ sinceMs: T0, lowerBound: true });
  });

  it('is reset when a pod needs the volume there again, and dropped once detached', () => {
    const previous = new Map<string, DetachRequest>([[detachRequestKey('pv-1', 'node-a'), { sinceMs: T0 - 100_000, lowerBound: false }]]);
    const wanted = objects({ ...attachedNotDesired, pods: [pod('a', 'node-a', 'claim-pv-1')] });
    const again = build(wanted, { nowMs: T0, detachRequests: previous, baseline: false });
    expect(again.model.volumes[0]?.nodes[0]?.detachRequest).toBeNull();
    expect(again.detachRequests.size).toBe(0);
    const detached = objects({ ...attachedNotDesired, nodes: [node('node-a')], volumeAttachments: [] });
    expect(build(detached, { nowMs: T0, detachRequests: previous, baseline: false }).detachRequests.size).toBe(0);
  });
});
