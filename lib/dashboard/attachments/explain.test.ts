import { describe, expect, it } from 'vitest';
import { maxWaitForUnmountDurationMs } from './adc-constants.ts';
import { explainVolume, problemVolumes, type Verdict } from './explain.ts';
import { buildAttachmentModel, detachRequestKey, type DetachRequest } from './model.ts';
import type { AttachmentObjects } from './objects.ts';
import { T0, lease, node, objects, pod, pv, pvc, va } from './testing/fixtures.ts';

function verdicts(o: AttachmentObjects, nowMs = T0, requests: ReadonlyMap<string, DetachRequest> = new Map()): Verdict[] {
  const { model } = buildAttachmentModel(o, { nowMs, detachRequests: requests, baseline: false });
  const v = model.volumes.find((x) => x.pv === 'pv-1');
  if (v === undefined) throw new Error('pv-1 not in the model');
  return [...explainVolume(v, model, nowMs).verdicts];
}

/** RWO pv-1: the new pod on node-b, still attached to node-a (VolumeAttachment and status). */
function rescheduled(o: { holderReady?: 'True' | 'Unknown'; holderPod?: boolean; holderInUse?: boolean; outOfService?: boolean } = {}): AttachmentObjects {
  return objects({
    persistentVolumes: [pv('pv-1')],
    persistentVolumeClaims: [pvc('pv-1')],
    pods: [pod('app-new', 'node-b', 'claim-pv-1'), ...(o.holderPod === true ? [pod('app-old', 'node-a', 'claim-pv-1')] : [])],
    nodes: [
      node('node-a', { ready: o.holderReady ?? 'True', attached: ['pv-1'], inUse: o.holderInUse === false ? [] : ['pv-1'], outOfService: o.outOfService ?? false }),
      node('node-b'),
    ],
    volumeAttachments: [va('pv-1', 'node-a')],
    leases: [lease('node-a', T0 - 95_000), lease('node-b', T0 - 2_000)],
  });
}

const kinds = (vs: readonly Verdict[]): string[] => vs.map((v) => v.kind);
const multiAttach = (vs: readonly Verdict[]): Verdict => {
  const m = vs.find((v) => v.kind === 'multi-attach');
  if (m === undefined) throw new Error(`no multi-attach verdict in ${kinds(vs).join(', ')}`);
  return m;
};
const evidence = (v: Verdict, label: string): string | undefined => v.evidence.find((e) => e.label === label)?.value;

describe('explainVolume: Multi-Attach', () => {
  it('the old pod still runs on a Ready holder: blocked, the ADC event names the pod, the step is to stop it', () => {
    const m = multiAttach(verdicts(rescheduled({ holderPod: true })));
    expect(m).toMatchObject({ severity: 'blocked', node: 'node-b', timer: null });
    expect(m.expectedEvent).toBe('Multi-Attach error for volume "pv-1" Volume is already used by pod(s) app-old');
    expect(evidence(m, 'Holder node')).toBe('node-a');
    expect(evidence(m, 'Pods still using it on the holder')).toBe('default/app-old (Running)');
    expect(evidence(m, 'Holder reports it in volumesInUse')).toBe('yes');
    expect(evidence(m, 'Holder Lease (kube-node-lease)')).toBe('renewed 1 min 35 s ago');
    expect(m.nextStep).toMatch(/^Stop the pod\(s\) on node-a/);
    expect(m.checks.join(' ')).toMatch(/Do not delete the VolumeAttachment/);
  });

  it('the old pod on a NotReady holder: no timer runs, the step is the out-of-service taint guarded by "the node is off"', () => {
    const m = multiAttach(verdicts(rescheduled({ holderPod: true, holderReady: 'Unknown' })));
    expect(m.timer).toBeNull();
    expect(m.explanation.join(' ')).toMatch(/The 6-minute force detach does not start while a pod keeps the volume desired/);
    expect(m.nextStep).toContain('kubectl taint nodes node-a node.kubernetes.io/out-of-service=nodeshutdown:NoExecute');
    expect(m.checks[0]).toMatch(/confirmed powered off/);
    expect(evidence(m, 'Holder state')).toBe('Ready=Unknown (NodeStatusUnknown) for 1 h');
  });

  it('no pod left on a NotReady holder that reports it in use: the timed force detach at detach request + 6 min', () => {
    const since = T0 - 60_000;
    const requests = new Map([[detachRequestKey('pv-1', 'node-a'), { sinceMs: since, lowerBound: false }]]);
    const vs = verdicts(rescheduled({ holderReady: 'Unknown' }), T0, requests);
    const m = multiAttach(vs);
    expect(m.expectedEvent).toBe('Multi-Attach error for volume "pv-1" Volume is already exclusively attached to one node and can\'t be attached to another');
    expect(m.timer).toMatchObject({ node: 'node-a', detachRequestedAtMs: since, forceDetachPossibleAtMs: since + maxWaitForUnmountDurationMs, nodeQualifies: true, mountedByNode: true, outOfService: false });
    expect(m.timer?.text).toBe('The ADC force-detaches in 5 min (6 min after it started waiting) if node-a is still not Ready then.');
    // The holder's own verdict says the same, and is blocked too.
    const own = vs.find((v) => v.kind === 'waiting-for-unmount');
    expect(own).toMatchObject({ node: 'node-a', severity: 'blocked', title: 'Stuck on node-a (not Ready): force detach possible in 5 min' });
  });

  it('after the 6 minutes on a NotReady holder the force detach is due', () => {
    const requests = new Map([[detachRequestKey('pv-1', 'node-a'), { sinceMs: T0 - 7 * 60_000, lowerBound: true }]]);
    const m = multiAttach(verdicts(rescheduled({ holderReady: 'Unknown' }), T0, requests));
    expect(m.timer?.text).toMatch(/^maxWaitForUnmountDuration \(6 min\) has passed at the latest 1 min ago and node-a is not Ready: the ADC force-detaches/);
  });

  it('a Ready holder that keeps reporting it in use never qualifies for the timed force detach', () => {
    const requests = new Map([[detachRequestKey('pv-1', 'node-a'), { sinceMs: T0 - 30 * 60_000, lowerBound: false }]]);
    const vs = verdicts(rescheduled(), T0, requests);
    const m = multiAttach(vs);
    expect(m.timer).toMatchObject({ nodeQualifies: false });
    expect(m.timer?.text).toBe('The ADC waits for the node to unmount; it will not force-detach while node-a is Ready, however long that takes.');
    expect(m.nextStep).toMatch(/why the kubelet on node-a does not unmount/);
    expect(vs.find((v) => v.kind === 'waiting-for-unmount')?.severity).toBe('suspect');
  });

  it('with the out-of-service taint the ADC detaches without waiting; the taint is reported', () => {
    const requests = new Map([[detachRequestKey('pv-1', 'node-a'), { sinceMs: T0 - 10_000, lowerBound: false }]]);
    const vs = verdicts(rescheduled({ holderReady: 'Unknown', outOfService: true }), T0, requests);
    expect(multiAttach(vs).timer).toMatchObject({ outOfService: true });
    expect(kinds(vs)).toEqual(expect.arrayContaining(['multi-attach', 'detach-pending', 'out-of-service']));
    expect(vs.find((v) => v.kind === 'out-of-service')?.nextStep).toBe('Remove the taint once node-a is back and clean (kubectl taint nodes node-a node.kubernetes.io/out-of-service-).');
  });

  it('ReadWriteMany volumes never get a Multi-Attach verdict', () => {
    const o = rescheduled({ holderPod: true });
    const rwx = { ...o, persistentVolumes: [pv('pv-1', ['ReadWriteMany'])] };
    expect(kinds(verdicts(rwx))).not.toContain('multi-attach');
  });
});

describe('explainVolume: VolumeAttachment errors, gone nodes, slow operations', () => {
  const base = (vaOptions: Parameters<typeof va>[2], extra: Partial<AttachmentObjects> = {}) =>
    objects({
      persistentVolumes: [pv('pv-1')],
      persistentVolumeClaims: [pvc('pv-1')],
      pods: [pod('app', 'node-a', 'claim-pv-1')],
      nodes: [node('node-a')],
      volumeAttachments: [va('pv-1', 'node-a', vaOptions)],
      ...extra,
    });

  it('an attach error: blocked, the driver message verbatim', () => {
    const message = 'rpc error: code = ResourceExhausted desc = injected fault';
    const [v] = verdicts(base({ attached: false, attachError: message }));
    expect(v).toMatchObject({ kind: 'attach-error', severity: 'blocked', node: 'node-a', title: `Attach to node-a fails: ${message}` });
    expect(evidence(v as Verdict, 'attachError')).toBe(message);
    expect(evidence(v as Verdict, 'attachError time')).toBe('5 s ago');
  });

  it('a detach error on a volume no pod needs', () => {
    const vs = verdicts(base({ detachError: 'rpc error: code = Internal desc = backend busy', deletingSinceMs: T0 - 30_000 }, { pods: [] }));
    expect(kinds(vs)).toEqual(['detach-error']);
  });

  it('a VolumeAttachment to a node that no longer exists: blocked, with the force-detach timer', () => {
    const vs = verdicts(base({}, { pods: [], nodes: [] }), T0, new Map([[detachRequestKey('pv-1', 'node-a'), { sinceMs: T0 - 60_000, lowerBound: false }]]));
    expect(vs).toHaveLength(1);
    expect(vs[0]).toMatchObject({ kind: 'node-gone', severity: 'blocked', timer: { nodeQualifies: true, forceDetachPossibleAtMs: T0 + 5 * 60_000 } });
  });

  it('a deletion that has not finished for more than 2 minutes is suspect', () => {
    const vs = verdicts(base({ deletingSinceMs: T0 - 3 * 60_000 }, { pods: [] }));
    expect(vs[0]).toMatchObject({ kind: 'detaching-stuck', severity: 'suspect', title: 'Detach from node-a has not finished for 3 min' });
    expect(evidence(vs[0] as Verdict, 'Finalizers')).toBe('external-attacher/csi-loop-volumescope-dev');
  });

  it('an attachment pending without an error: suspect only after 2 minutes', () => {
    expect(verdicts(base({ attached: false, createdMs: T0 - 30_000 }))).toEqual([]);
    expect(kinds(verdicts(base({ attached: false, createdMs: T0 - 150_000 })))).toEqual(['attaching']);
  });

  it('the node status lists a volume that has no VolumeAttachment: stale actual state', () => {
    const o = objects({ ...base({}), volumeAttachments: [], nodes: [node('node-a', { attached: ['pv-1'], inUse: ['pv-1'] })] });
    expect(kinds(verdicts(o))).toEqual(['status-without-attachment']);
  });

  it('a healthy attachment has no verdict and is not a problem volume', () => {
    const o = base({});
    expect(verdicts(o)).toEqual([]);
    const { model } = buildAttachmentModel(o, { nowMs: T0, detachRequests: new Map(), baseline: false });
    expect(problemVolumes(model, T0)).toEqual([]);
  });

  it('problemVolumes lists blocked before suspect', () => {
    const o = objects({
      persistentVolumes: [pv('pv-1'), pv('pv-2')],
      persistentVolumeClaims: [pvc('pv-1'), pvc('pv-2')],
      pods: [pod('a', 'node-a', 'claim-pv-1'), pod('b', 'node-a', 'claim-pv-2')],
      nodes: [node('node-a')],
      volumeAttachments: [va('pv-1', 'node-a', { attached: false, createdMs: T0 - 150_000 }), va('pv-2', 'node-a', { attached: false, attachError: 'boom' })],
    });
    const { model } = buildAttachmentModel(o, { nowMs: T0, detachRequests: new Map(), baseline: false });
    expect(problemVolumes(model, T0).map((p) => [p.pv, p.severity])).toEqual([
      ['pv-2', 'blocked'],
      ['pv-1', 'suspect'],
    ]);
  });
});
