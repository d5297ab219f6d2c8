import * as clientNode from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeApiServer } from '../../sources/kube/testing/fake-apiserver.ts';
import { fakeKubeConfig } from '../../sources/kube/testing/kubeconfig-file.ts';
import { currentOperator } from './current-operator.ts';
import type { PodObject } from './objects.ts';
import { deleteOutOfService, getOutOfService, postOutOfService, type OutOfServiceDeps } from './out-of-service-routes.ts';
import { ATTESTED_AT_ANNOTATION, ATTESTED_BY_ANNOTATION, planOutOfService, toleratesOutOfService, type OutOfServiceResponse } from './out-of-service.ts';
import { T0, node, pod } from './testing/fixtures.ts';

describe('planOutOfService', () => {
  it('refuses a Ready node (409 node-ready), a missing one (404) and one already marked (409)', () => {
    expect(planOutOfService('node-a', node('node-a'), []).refusal).toMatchObject({ status: 409, reason: 'node-ready' });
    expect(planOutOfService('node-a', undefined, []).refusal).toMatchObject({ status: 404, reason: 'node-not-found' });
    expect(planOutOfService('node-a', node('node-a', { ready: 'Unknown', outOfService: true }), []).refusal).toMatchObject({ status: 409, reason: 'already-out-of-service' });
    expect(planOutOfService('node-a', node('node-a', { ready: 'Unknown' }), []).refusal).toBeNull();
    expect(planOutOfService('node-a', node('node-a', { ready: 'False' }), []).refusal).toBeNull();
  });

  it('lists the pods of the node that will be force-deleted: not terminated, not tolerating the taint', () => {
    const tolerant: PodObject = { ...pod('tolerant', 'node-a', 'c'), spec: { ...pod('tolerant', 'node-a', 'c').spec, tolerations: [{ key: 'node.kubernetes.io/out-of-service', operator: 'Exists', effect: 'NoExecute' }] } };
    const pods = [pod('db-0', 'node-a', 'data-db-0'), pod('done', 'node-a', 'c', { phase: 'Succeeded', running: false }), pod('elsewhere', 'node-b', 'c'), tolerant];
    const plan = planOutOfService('node-a', node('node-a', { ready: 'Unknown', attached: ['pv-1'] }), pods);
    expect(plan.podsToForceDelete).toEqual([{ namespace: 'default', name: 'db-0', phase: 'Running', claims: ['data-db-0'] }]);
    expect(plan.volumesAttached).toEqual(['kubernetes.io/csi/csi-loop.volumescope.dev^handle-pv-1']);
  });

  it('toleratesOutOfService: Exists with no key tolerates everything; another effect or key does not', () => {
    expect(toleratesOutOfService({ spec: { tolerations: [{ operator: 'Exists' }] } })).toBe(true);
    expect(toleratesOutOfService({ spec: { tolerations: [{ key: 'node.kubernetes.io/out-of-service', value: 'nodeshutdown', effect: 'NoExecute' }] } })).toBe(true);
    expect(toleratesOutOfService({ spec: { tolerations: [{ key: 'node.kubernetes.io/out-of-service', value: 'other' }] } })).toBe(false);
    expect(toleratesOutOfService({ spec: { tolerations: [{ operator: 'Exists', effect: 'NoSchedule' }] } })).toBe(false);
    expect(toleratesOutOfService({ spec: { tolerations: [{ key: 'node.kubernetes.io/unreachable', operator: 'Exists' }] } })).toBe(false);
  });
});

describe('currentOperator', () => {
  it('is the login session\'s user; no session or a name with control characters gives none', () => {
    expect(currentOperator({ username: ' alice ' })).toEqual({ name: 'alice', source: 'session' });
    expect(currentOperator({ username: 'evil\nname' })).toBeNull();
    expect(currentOperator({ username: '' })).toBeNull();
    expect(currentOperator(null)).toBeNull();
  });
});

// The handlers against the real client-node and a FakeApiServer on 127.0.0.1.
let api: FakeApiServer | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

/** The session user of a request in these tests: the `x-test-session` header (absent: not logged in). */
const testSession = (req: Request): Promise<{ username: string } | null> => {
  const user = req.headers.get('x-test-session');
  return Promise.resolve(user === null ? null : { username: user });
};

async function deps(ready: 'True' | 'Unknown'): Promise<{ deps: OutOfServiceDeps; server: FakeApiServer; audit: string[] }> {
  const server = await FakeApiServer.start();
  api = server;
  server.put('nodes', { apiVersion: 'v1', kind: 'Node', ...node('node-a', { ready, attached: ['pv-1'], inUse: ['pv-1'] }) });
  server.put('pods', { apiVersion: 'v1', kind: 'Pod', ...pod('db-0', 'node-a', 'data') });
  const audit: string[] = [];
  const kubeConfig = fakeKubeConfig({ server: server.url });
  return { deps: { api: () => Promise.resolve({ k8s: clientNode, kubeConfig }), now: () => T0, audit: (l) => audit.push(l), session: testSession }, server, audit };
}

const post = (body: unknown, headers: Record<string, string> = { 'x-test-session': 'alice' }) =>
  new Request('http://dash/api/attachments/nodes/node-a/out-of-service', { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });

type Taints = { spec?: { taints?: { key: string; value: string; effect: string }[] }; metadata: { annotations?: Record<string, string> } };

describe('out-of-service routes', () => {
  it('refuses a Ready node with 409 node-ready, and the Node is not changed', async () => {
    const { deps: d, server } = await deps('True');
    const res = await postOutOfService(post({ attestNodeOff: true, operator: 'alice' }), 'node-a', d);
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({ reason: 'node-ready' });
    expect((server.get('nodes', undefined, 'node-a') as Taints).spec?.taints).toBeUndefined();
  });

  it('needs the attestation and a name; refuses cross-site requests', async () => {
    const { deps: d } = await deps('Unknown');
    expect((await postOutOfService(post({ operator: 'alice' }), 'node-a', d)).status).toBe(400);
    const anonymous = await postOutOfService(post({ attestNodeOff: true, operator: 'alice' }, {}), 'node-a', d);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ reason: 'no-operator' });
    expect((await postOutOfService(post({ attestNodeOff: true }, { 'x-test-session': 'alice', 'sec-fetch-site': 'cross-site' }), 'node-a', d)).status).toBe(403);
  });

  it('records the session\'s user, never an X-Forwarded-User header or a name in the body', async () => {
    const { deps: d, server, audit } = await deps('Unknown');
    const res = await postOutOfService(post({ attestNodeOff: true, operator: 'mallory' }, { 'x-test-session': 'alice', 'x-forwarded-user': 'mallory', 'x-remote-user': 'mallory' }), 'node-a', d);
    expect(res.status).toBe(200);
    expect(((await res.json()) as OutOfServiceResponse).appliedBy).toEqual({ name: 'alice', source: 'session' });
    expect((server.get('nodes', undefined, 'node-a') as Taints).metadata.annotations?.[ATTESTED_BY_ANNOTATION]).toBe('alice');
    expect(audit.join('\n')).not.toContain('mallory');
    // Without a session the header alone names no one (refused before the Node is read).
    const forged = await postOutOfService(post({ attestNodeOff: true }, { 'x-forwarded-user': 'mallory' }), 'node-a', d);
    expect(forged.status).toBe(401);
  });

  it('shows the plan, applies the taint with the attestation recorded, and removes it', async () => {
    const { deps: d, server, audit } = await deps('Unknown');
    const plan = (await (await getOutOfService('node-a', d)).json()) as OutOfServiceResponse;
    expect(plan.plan).toMatchObject({ refusal: null, outOfService: false, podsToForceDelete: [{ namespace: 'default', name: 'db-0' }] });

    const res = await postOutOfService(post({ attestNodeOff: true, operator: 'alice' }), 'node-a', d);
    expect(res.status).toBe(200);
    const body = (await res.json()) as OutOfServiceResponse;
    expect(body.appliedBy).toEqual({ name: 'alice', source: 'session' });
    expect(body.plan).toMatchObject({ outOfService: true, attestedBy: 'alice', attestedAt: new Date(T0).toISOString() });
    const stored = server.get('nodes', undefined, 'node-a') as Taints;
    expect(stored.spec?.taints).toEqual([expect.objectContaining({ key: 'node.kubernetes.io/out-of-service', value: 'nodeshutdown', effect: 'NoExecute' })]);
    expect(stored.metadata.annotations?.[ATTESTED_BY_ANNOTATION]).toBe('alice');
    expect(stored.metadata.annotations?.[ATTESTED_AT_ANNOTATION]).toBe(new Date(T0).toISOString());
    expect(audit).toEqual([expect.stringContaining('attested powered off by "alice" (session); pods to be force-deleted: default/db-0')]);
    // A second POST: already marked.
    expect((await postOutOfService(post({ attestNodeOff: true, operator: 'alice' }), 'node-a', d)).status).toBe(409);

    const removed = (await (await deleteOutOfService(new Request('http://dash/x', { method: 'DELETE' }), 'node-a', d)).json()) as OutOfServiceResponse;
    expect(removed.plan.outOfService).toBe(false);
    expect((server.get('nodes', undefined, 'node-a') as Taints).spec?.taints).toEqual([]);
  });
});
