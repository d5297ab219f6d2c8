/**
 * The attachment explainer against the real attach/detach controller (ADC), external-attacher
 * and csi-loop of the local cluster. The dashboard's informer set runs in the test process on the
 * admin kubeconfig; every verdict is compared with what the real controller does next.
 *
 * (a) Multi-Attach: an RWO csi-hostpath claim in use on kubelet-0, a second pod on agent-0: the
 *     verdict names kubelet-0, its pod and volumesInUse, and the ADC's event text is the one the
 *     real ADC posts (verbatim).
 * (b) The node stops with the volume attached: kubelet-0's kubelet is stopped, its pod
 *     force-deleted (as the pod garbage collector does on a node marked out of service): the
 *     ADC now wants the volume detached but kubelet-0 still reports it in use. No
 *     node-lifecycle controller runs here, so the Node stays Ready: the verdict says the ADC will
 *     not force-detach, and it does not. Marking the node NotReady (the status the node-lifecycle
 *     controller would write) makes it qualify, with the timer at detach request + 6 min (not
 *     waited out). The out-of-service taint then makes the real ADC detach without waiting;
 *     csi-loop refuses ControllerUnpublish while kubelet-0 still has the volume staged (its
 *     documented FAILED_PRECONDITION), so the explainer shows the detach error, until kubelet-0's
 *     kubelet comes back, unstages, and the ADC's detach and the attach to agent-0 finish.
 * The dashboard side runs with the dashboard's ServiceAccount and deploy/opt-in's roles only,
 * and the out-of-service taint is applied and removed through the guided action's handlers
 * (refused with 409 while the node is Ready).
 * (c) An attach error injected into the controller instance of csi-loop (its control API): the
 *     verdict quotes the VolumeAttachment's attachError, and is gone once the fault is cleared.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as clientNode from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realClock } from '../../lib/clock/clock.ts';
import { loadKubeConfigFiles } from '../../lib/kube-client/kubeconfig.ts';
import { AttachmentInformers } from '../../lib/dashboard/attachments/attachment-informers.ts';
import { maxWaitForUnmountDurationMs } from '../../lib/dashboard/attachments/adc-constants.ts';
import { explainVolume, type Verdict, type VolumeExplanation } from '../../lib/dashboard/attachments/explain.ts';
import type { VolumeOnNode } from '../../lib/dashboard/attachments/model.ts';
import { deleteOutOfService, getOutOfService, postOutOfService, type OutOfServiceDeps } from '../../lib/dashboard/attachments/out-of-service-routes.ts';
import type { OutOfServiceResponse } from '../../lib/dashboard/attachments/out-of-service.ts';
import type { KubeApi } from '../../lib/dashboard/attachments/server-attachments.ts';
import { KUBELET_NODE, NODE } from '../../scripts/cluster/cluster.ts';
import { waitUntil } from '../../scripts/demo/process.ts';
import { claimYaml, cluster, facts, podEvents, versionTag, waitForClaimBound } from './cluster-context.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const ADC = versionTag('kube-controller-manager');
const ATTACHER = versionTag('csi-attacher');
const NS = 'attachments';
const CLAIM = 'data';
const STEP_MS = 120_000;

let informers: AttachmentInformers;
let pv = '';

function podYaml(name: string, nodeName: string): string {
  return [
    'apiVersion: v1',
    'kind: Pod',
    `metadata: {name: ${name}, namespace: ${NS}}`,
    'spec:',
    `  nodeName: ${nodeName}`,
    '  terminationGracePeriodSeconds: 5',
    '  containers:',
    '  - name: app',
    '    image: registry.k8s.io/pause:3.10',
    '    volumeMounts: [{name: data, mountPath: /data}]',
    `  volumes: [{name: data, persistentVolumeClaim: {claimName: ${CLAIM}}}]`,
  ].join('\n');
}

interface Attachment {
  metadata: { name: string; deletionTimestamp?: string };
  spec: { nodeName: string; source: { persistentVolumeName?: string } };
  status?: { attached?: boolean; attachError?: { message?: string }; detachError?: { message?: string } };
}

const allAttachments = async (): Promise<Attachment[]> => (JSON.parse(await cluster.kubectl(['get', 'volumeattachments', '-o', 'json'])) as { items: Attachment[] }).items;
const attachments = async (): Promise<Attachment[]> => (await allAttachments()).filter((a) => a.spec.source.persistentVolumeName === pv);

/** The explainer's view of the claim's PV now (the dashboard server's code path). */
const explained = (): ReturnType<typeof explainedOf> => explainedOf(pv);

function explainedOf(pvName: string): { explanation: VolumeExplanation; nodes: readonly VolumeOnNode[] } | undefined {
  const model = informers.view().model;
  const volume = model?.volumes.find((v) => v.pv === pvName);
  if (model === null || model === undefined || volume === undefined) return undefined;
  return { explanation: explainVolume(volume, model, realClock.now()), nodes: volume.nodes };
}

const verdict = (kind: Verdict['kind'], node: string): Verdict | undefined => explained()?.explanation.verdicts.find((v) => v.kind === kind && v.node === node);
const evidence = (v: Verdict, label: string): string | undefined => v.evidence.find((e) => e.label === label)?.value;
const waitVerdict = (what: string, probe: () => Verdict | undefined | false): Promise<Verdict> =>
  waitUntil(what, () => Promise.resolve(probe() || undefined), { deadlineMs: STEP_MS, intervalMs: 250 });

/** The dashboard's identity: its ServiceAccount with deploy/opt-in's roles, nothing else. */
let dashboardApi: KubeApi;
const audit: string[] = [];
// The attestation is recorded under the login session's user: here the operator of each request (the `attest` argument).
const outOfServiceDeps = (): OutOfServiceDeps => ({
  api: () => Promise.resolve(dashboardApi),
  now: () => realClock.now(),
  audit: (line) => audit.push(line),
  session: (req) => Promise.resolve(req.headers.has('x-test-operator') ? { username: req.headers.get('x-test-operator') ?? '' } : null),
});
const attest = (operator: string): Request =>
  new Request(`http://dashboard/api/attachments/nodes/${KUBELET_NODE}/out-of-service`, { method: 'POST', body: JSON.stringify({ attestNodeOff: true }), headers: { 'content-type': 'application/json', 'x-test-operator': operator } });

beforeAll(async () => {
  await cluster.kubectl(['create', 'namespace', NS]);
  await cluster.waitForKubeletNodeReady(60_000);
  await cluster.kubectl(['apply', '-f', join(REPO, 'deploy', 'base', 'namespace.yaml')]);
  await cluster.kubectl(['apply', '-f', '-'], { input: 'apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: volumescope-dashboard, namespace: volumescope}\n' });
  await cluster.kubectl(['apply', '-f', join(REPO, 'deploy', 'opt-in', 'dashboard-attachments-rbac.yaml')]);
  const token = (await cluster.kubectl(['create', 'token', 'volumescope-dashboard', '-n', 'volumescope', '--duration=1h'])).trim();
  dashboardApi = { k8s: clientNode, kubeConfig: loadKubeConfigFiles(clientNode, [cluster.tokenKubeconfig('dashboard-attachments', token)]) };
  informers = new AttachmentInformers({ clientNode, kubeConfig: dashboardApi.kubeConfig, clock: realClock, idleMs: 3_600_000 });
  await informers.whenListed(30_000);
  // The opt-in roles are enough for every informer.
  expect(informers.view()).toMatchObject({ listed: true, problems: [] });
});

afterAll(async () => {
  await informers.stop();
  // A failed step may leave kubelet-0 stopped; the next test files expect it running.
  await cluster.startKubelet().catch(() => undefined);
  await cluster.kubectlRun(['taint', 'nodes', KUBELET_NODE, 'node.kubernetes.io/out-of-service-']);
  await cluster.kubectlRun(['delete', 'namespace', NS, '--wait=false']);
  // The opt-in roles go again: rbac.test.ts reads the dashboard's default permissions.
  await cluster.kubectl(['delete', '--ignore-not-found', '-f', join(REPO, 'deploy', 'opt-in', 'dashboard-attachments-rbac.yaml')]);
});

describe(`the attachment explainer against the real ADC (${ADC}, ${ATTACHER})`, () => {
  it(`(a) Multi-Attach: an RWO csi-hostpath volume in use on ${KUBELET_NODE}, a second pod on ${NODE}: the verdict and the ADC's event text match the real ADC`, async () => {
    await cluster.kubectl(['apply', '-f', '-'], { input: [claimYaml(NS, CLAIM), '---', podYaml('app-old', KUBELET_NODE)].join('\n') });
    pv = await waitForClaimBound(NS, CLAIM);
    await waitUntil(`VolumeAttachment of ${pv} attached to ${KUBELET_NODE}`, async () => (await attachments()).find((a) => a.spec.nodeName === KUBELET_NODE && a.status?.attached === true), { deadlineMs: STEP_MS, intervalMs: 1000 });
    await waitUntil(`${KUBELET_NODE} reports ${pv} in volumesInUse, in the model`, () => Promise.resolve(explained()?.nodes.find((n) => n.node === KUBELET_NODE && n.inUse && n.attached && n.desired)), { deadlineMs: STEP_MS, intervalMs: 250 });
    expect(explained()?.explanation.verdicts).toEqual([]);

    await cluster.kubectl(['apply', '-f', '-'], { input: podYaml('app-new', NODE) });
    const event = await waitUntil('the ADC\'s FailedAttachVolume Event on app-new', async () => (await podEvents(NS, 'app-new', 'FailedAttachVolume'))[0], { deadlineMs: STEP_MS, intervalMs: 1000 });
    expect(event.source?.component).toBe('attachdetach-controller');
    const m = await waitVerdict('the Multi-Attach verdict', () => verdict('multi-attach', NODE));
    // The explainer's expectation of the event is the real ADC's message, verbatim.
    expect(m.expectedEvent).toBe(event.message);
    expect(event.message).toBe(`Multi-Attach error for volume "${pv}" Volume is already used by pod(s) app-old`);
    expect(m.severity).toBe('blocked');
    expect(evidence(m, 'Holder node')).toBe(KUBELET_NODE);
    expect(evidence(m, 'Pods still using it on the holder')).toMatch(new RegExp(`^${NS}/app-old \\(`));
    expect(evidence(m, 'Holder reports it in volumesInUse')).toBe('yes');
    expect(evidence(m, 'Holder state')).toMatch(/^Ready=True/);
    expect(evidence(m, 'Holder Lease (kube-node-lease)')).toMatch(/^renewed \d+ s ago$/);
    expect(m.timer).toBeNull();
    expect(m.nextStep).toMatch(new RegExp(`^Stop the pod\\(s\\) on ${KUBELET_NODE}`));
    // What the ADC does: nothing, the volume stays on kubelet-0 and app-new gets no attachment.
    expect((await attachments()).map((a) => [a.spec.nodeName, a.status?.attached])).toEqual([[KUBELET_NODE, true]]);
  });

  it(`(b) ${KUBELET_NODE} stopped with the volume attached: no force detach while Ready, the 6-minute timer once NotReady, the out-of-service taint makes the real ADC detach`, async () => {
    await cluster.stopKubelet();
    const forcedAt = realClock.now();
    await cluster.kubectl(['delete', 'pod', '-n', NS, 'app-old', '--grace-period=0', '--force']);
    const waiting = await waitVerdict('the detach waiting for the unmount', () => verdict('waiting-for-unmount', KUBELET_NODE));
    expect(waiting.severity).toBe('suspect');
    expect(waiting.timer).toMatchObject({ nodeQualifies: false, mountedByNode: true, outOfService: false, lowerBound: false });
    expect(waiting.timer?.text).toBe(`The ADC waits for the node to unmount; it will not force-detach while ${KUBELET_NODE} is Ready, however long that takes.`);
    // The guided shutdown refuses a Ready node, server-side, and writes nothing.
    const refused = await postOutOfService(attest('alice'), KUBELET_NODE, outOfServiceDeps());
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({ reason: 'node-ready' });
    const requestedAt = waiting.timer?.detachRequestedAtMs ?? 0;
    expect(requestedAt).toBeGreaterThanOrEqual(forcedAt);
    // The real ADC agrees: attached, not being detached.
    expect((await attachments()).map((a) => [a.spec.nodeName, a.status?.attached, a.metadata.deletionTimestamp])).toEqual([[KUBELET_NODE, true, undefined]]);

    // NotReady, as the node-lifecycle controller would write it for a silent kubelet.
    await cluster.kubectl([
      'patch', 'node', KUBELET_NODE, '--subresource=status', '--type=strategic',
      '-p', JSON.stringify({ status: { conditions: [{ type: 'Ready', status: 'Unknown', reason: 'NodeStatusUnknown', message: 'Kubelet stopped posting node status.' }] } }),
    ]);
    const qualifies = await waitVerdict('the force-detach timer of a NotReady node', () => {
      const v = verdict('waiting-for-unmount', KUBELET_NODE);
      return v?.timer?.nodeQualifies === true ? v : undefined;
    });
    expect(qualifies.severity).toBe('blocked');
    expect(qualifies.timer?.detachRequestedAtMs).toBe(requestedAt);
    expect(qualifies.timer?.forceDetachPossibleAtMs).toBe(requestedAt + maxWaitForUnmountDurationMs);
    expect(qualifies.nextStep).toContain(`kubectl taint nodes ${KUBELET_NODE} node.kubernetes.io/out-of-service=nodeshutdown:NoExecute`);
    const ma = verdict('multi-attach', NODE);
    expect(ma?.expectedEvent).toBe(`Multi-Attach error for volume "${pv}" Volume is already exclusively attached to one node and can't be attached to another`);
    expect(ma?.timer?.forceDetachPossibleAtMs).toBe(requestedAt + maxWaitForUnmountDurationMs);

    // Out of service, through the dashboard's guided action with the dashboard's own identity:
    // the real ADC detaches without waiting for the unmount.
    const plan = (await (await getOutOfService(KUBELET_NODE, outOfServiceDeps())).json()) as OutOfServiceResponse;
    expect(plan.plan).toMatchObject({ refusal: null, ready: 'Unknown', podsToForceDelete: [] });
    const applied = await postOutOfService(attest('alice'), KUBELET_NODE, outOfServiceDeps());
    expect(applied.status).toBe(200);
    expect(((await applied.json()) as OutOfServiceResponse).plan).toMatchObject({ outOfService: true, attestedBy: 'alice' });
    expect(audit).toEqual([expect.stringContaining(`out-of-service: ${KUBELET_NODE} tainted`)]);
    const detaching = await waitUntil(`the ADC deletes the VolumeAttachment of ${KUBELET_NODE}`, async () => (await attachments()).find((a) => a.spec.nodeName === KUBELET_NODE && a.metadata.deletionTimestamp !== undefined), { deadlineMs: STEP_MS, intervalMs: 500 });
    expect(detaching.metadata.deletionTimestamp).toBeDefined();
    const oos = await waitVerdict('the out-of-service note', () => verdict('out-of-service', KUBELET_NODE));
    expect(oos.severity).toBe('info');
    // csi-loop refuses ControllerUnpublishVolume while kubelet-0 still has the volume staged.
    const failed = await waitUntil('the detach error on the VolumeAttachment', async () => (await attachments()).find((a) => a.spec.nodeName === KUBELET_NODE && (a.status?.detachError?.message ?? '') !== '')?.status?.detachError?.message, { deadlineMs: STEP_MS, intervalMs: 500 });
    const de = await waitVerdict('the detach-error verdict', () => verdict('detach-error', KUBELET_NODE));
    expect(evidence(de, 'detachError')).toBe(failed);

    // kubelet-0 comes back: it unpublishes and unstages the force-deleted pod's volume; the
    // detach finishes and the ADC attaches the volume to agent-0.
    expect((await deleteOutOfService(new Request('http://dashboard/x', { method: 'DELETE' }), KUBELET_NODE, outOfServiceDeps())).status).toBe(200);
    expect(await cluster.kubectl(['get', 'node', KUBELET_NODE, '-o', 'jsonpath={.spec.taints}'])).not.toContain('node.kubernetes.io/out-of-service');
    await cluster.startKubelet();
    await waitUntil(`${pv} attached to ${NODE} only`, async () => {
      const list = await attachments();
      return list.length === 1 && list[0]?.spec.nodeName === NODE && list[0].status?.attached === true ? list : undefined;
    }, { deadlineMs: STEP_MS * 2, intervalMs: 1000 });
    await waitUntil('no blocked verdict left', () => Promise.resolve(explained()?.explanation.verdicts.every((v) => v.severity !== 'blocked') === true ? true : undefined), { deadlineMs: STEP_MS, intervalMs: 250 });
    expect(explained()?.nodes.find((n) => n.node === NODE)).toMatchObject({ desired: true, attached: true });
  });

  it(`(c) an attach error injected into csi-loop's ControllerPublishVolume: the verdict quotes the VolumeAttachment's attachError, and clears once the attach succeeds (${ATTACHER})`, async () => {
    const claim = 'faulty';
    const fault = 'injected by the attachments test: backend out of attach slots';
    const control = (method: string, body?: object): Promise<Response> =>
      fetch(`${facts.csiControlUrl}/faults/ControllerPublishVolume`, { method, ...(body === undefined ? {} : { body: JSON.stringify(body) }), signal: AbortSignal.timeout(10_000) });
    expect((await control('PUT', { code: 'RESOURCE_EXHAUSTED', message: fault })).ok).toBe(true);
    try {
      await cluster.kubectl(['apply', '-f', '-'], { input: [claimYaml(NS, claim), '---', podYaml('app-faulty', NODE).replace(`claimName: ${CLAIM}`, `claimName: ${claim}`)].join('\n') });
      const faultyPv = await waitForClaimBound(NS, claim);
      const faultyAttachments = async (): Promise<Attachment[]> => (await allAttachments()).filter((a) => a.spec.source.persistentVolumeName === faultyPv);
      const message = await waitUntil('the attachError on the VolumeAttachment', async () => (await faultyAttachments())[0]?.status?.attachError?.message || undefined, { deadlineMs: STEP_MS, intervalMs: 500 });
      expect(message).toContain(fault);
      const v = await waitUntil('the attach-error verdict', () => Promise.resolve(explainedOf(faultyPv)?.explanation.verdicts.find((x) => x.kind === 'attach-error' && x.node === NODE)), { deadlineMs: STEP_MS, intervalMs: 250 });
      expect(v.severity).toBe('blocked');
      expect(evidence(v, 'attachError')).toBe(message);
      expect(v.title).toBe(`Attach to ${NODE} fails: ${message}`);
      expect((await control('DELETE')).ok).toBe(true);
      await waitUntil('attached after the fault is cleared', async () => ((await faultyAttachments())[0]?.status?.attached === true ? true : undefined), { deadlineMs: STEP_MS * 2, intervalMs: 1000 });
      await waitUntil('no verdict left', () => Promise.resolve(explainedOf(faultyPv)?.explanation.verdicts.length === 0 ? true : undefined), { deadlineMs: STEP_MS, intervalMs: 250 });
      await cluster.kubectl(['delete', 'pod', '-n', NS, 'app-faulty', '--wait=false']);
      await waitUntil(`no VolumeAttachment of ${faultyPv}`, async () => ((await faultyAttachments()).length === 0 ? true : undefined), { deadlineMs: STEP_MS * 2, intervalMs: 1000 });
    } finally {
      await control('DELETE');
    }
  });

  it(`cleanup: app-new deleted, its volume detached from ${NODE}`, async () => {
    await cluster.kubectl(['delete', 'pod', '-n', NS, 'app-new', '--wait=false']);
    await waitUntil(`no VolumeAttachment of ${pv}`, async () => ((await attachments()).length === 0 ? true : undefined), { deadlineMs: STEP_MS * 2, intervalMs: 1000 });
  });
});
