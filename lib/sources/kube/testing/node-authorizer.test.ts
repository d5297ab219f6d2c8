// The fake API server with `nodeAuthorizer`: the refusals the real API server (Node,RBAC
// authorization, NodeRestriction admission) gives a kubelet, through the real client over HTTP.
import { ApiException, CoordinationV1Api, CoreV1Api, PatchStrategy, setHeaderOptions, StorageV1Api, V1CSINode, V1CSINodeSpec, V1DeleteOptions, V1Lease, V1LeaseSpec, V1ObjectMeta, V1Preconditions } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { model } from '../../../kube-client/model.ts';
import { FakeApiServer } from './fake-apiserver.ts';
import { claim, configMap, csiPersistentVolume, node, pod, secret } from './fixtures.ts';
import { fakeKubeConfig } from './kubeconfig-file.ts';
import { nodeMaySetLabel } from './node-authorizer.ts';

const token = 'node-authorizer-test-token';
let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function startAsNode(nodeName = 'node-a') {
  const server = await FakeApiServer.start({ token, nodeAuthorizer: nodeName });
  cleanups.push(() => server.close());
  const kc = fakeKubeConfig({ server: server.url, token });
  return { server, core: kc.makeApiClient(CoreV1Api), storage: kc.makeApiClient(StorageV1Api), coordination: kc.makeApiClient(CoordinationV1Api) };
}

/** The HTTP status and message of a request; any success reads as 200. */
async function status(promise: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await promise;
    return { code: 200, message: '' };
  } catch (err) {
    if (!(err instanceof ApiException)) throw err;
    const body: unknown = typeof err.body === 'string' ? JSON.parse(err.body) : err.body;
    const message = typeof body === 'object' && body !== null && 'message' in body && typeof body.message === 'string' ? body.message : '';
    return { code: err.code, message };
  }
}

describe('FakeApiServer as the Node authorizer', () => {
  it('refuses a LIST of persistentvolumes with the real message, and GETs only the PV of a claim of its pods', async () => {
    const { server, core } = await startAsNode();
    server.put('persistentvolumeclaims', claim('data', { volumeName: 'pv-1' }));
    server.put('persistentvolumes', csiPersistentVolume('pv-1', { claimName: 'data' }));
    server.put('persistentvolumes', csiPersistentVolume('pv-other'));
    server.put('pods', pod('db', 'node-a', { volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }] }));

    expect(await status(core.listPersistentVolume())).toEqual({
      code: 403,
      message: 'persistentvolumes is forbidden: User "system:node:node-a" cannot list resource "persistentvolumes" in API group "" at the cluster scope: can only get individual resources of this type',
    });
    expect((await status(core.readPersistentVolume({ name: 'pv-1' }))).code).toBe(200);
    expect((await status(core.readNamespacedPersistentVolumeClaim({ namespace: 'default', name: 'data' }))).code).toBe(200);
    expect(await status(core.readPersistentVolume({ name: 'pv-other' }))).toMatchObject({ code: 403, message: expect.stringContaining("no relationship found between node 'node-a' and this object") as unknown });
  });

  it('lets a node read the secrets and config maps of its own pods only', async () => {
    const { server, core } = await startAsNode();
    server.put('secrets', secret('mine', { k: 'v' }));
    server.put('secrets', secret('theirs', { k: 'v' }));
    server.put('configmaps', configMap('settings', { a: '1' }));
    server.put('pods', pod('web', 'node-a', { volumes: [{ name: 's', secret: { secretName: 'mine' } }, { name: 'c', configMap: { name: 'settings' } }] }));
    server.put('pods', pod('other', 'node-b', { volumes: [{ name: 's', secret: { secretName: 'theirs' } }] }));

    expect((await status(core.readNamespacedSecret({ namespace: 'default', name: 'mine' }))).code).toBe(200);
    expect((await status(core.readNamespacedConfigMap({ namespace: 'default', name: 'settings' }))).code).toBe(200);
    expect((await status(core.readNamespacedSecret({ namespace: 'default', name: 'theirs' }))).code).toBe(403);
    expect((await status(core.listNamespacedSecret({ namespace: 'default' }))).code).toBe(403);
  });

  it('lets a node write only its own Node, with the labels a kubelet may set', async () => {
    const { server, core } = await startAsNode();
    server.put('nodes', node('node-a'));
    server.put('nodes', node('node-b'));
    const patch = (name: string, body: object) => core.patchNodeStatus({ name, body }, setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch));

    expect((await status(patch('node-a', { metadata: { labels: { 'kubernetes.io/hostname': 'node-a', 'topology.example.com/rack': 'r1' } } }))).code).toBe(200);
    expect(await status(patch('node-b', { status: { volumesInUse: [] } }))).toEqual({ code: 403, message: 'nodes "node-b" is forbidden: node "node-a" is not allowed to modify node "node-b"' });
    expect(await status(patch('node-a', { metadata: { labels: { 'node-restriction.kubernetes.io/pool': 'x' } } }))).toEqual({
      code: 403,
      message: 'nodes "node-a" is forbidden: node "node-a" is not allowed to modify the following labels: node-restriction.kubernetes.io/pool',
    });
    expect((await status(core.listNode({ fieldSelector: 'metadata.name=node-a' }))).code).toBe(200);
    expect(nodeMaySetLabel('node-role.kubernetes.io/control-plane')).toBe(false);
    expect(nodeMaySetLabel('node.kubernetes.io/instance-type')).toBe(true);
    expect(nodeMaySetLabel('example.com/anything')).toBe(true);
  });

  it('lets a node write only its own Lease in kube-node-lease and its own CSINode', async () => {
    const { coordination, storage } = await startAsNode();
    const lease = (name: string, namespace: string) =>
      coordination.createNamespacedLease({ namespace, body: model(V1Lease, { metadata: model(V1ObjectMeta, { name, namespace }), spec: model(V1LeaseSpec, { holderIdentity: name }) }) });
    const csiNode = (name: string) => storage.createCSINode({ body: model(V1CSINode, { metadata: model(V1ObjectMeta, { name }), spec: model(V1CSINodeSpec, { drivers: [] }) }) });

    expect((await status(lease('node-a', 'kube-node-lease'))).code).toBe(200);
    expect(await status(lease('node-b', 'kube-node-lease'))).toEqual({ code: 403, message: 'leases "node-b" is forbidden: can only access node lease with the same name as the requesting node' });
    expect((await status(lease('node-a', 'default'))).code).toBe(403);
    expect((await status(csiNode('node-a'))).code).toBe(200);
    expect(await status(csiNode('node-b'))).toEqual({ code: 403, message: 'csinodes "node-b" is forbidden: can only access CSINode with the same name as the requesting node' });
  });
});

describe('FakeApiServer pod deletion', () => {
  it('deletes a bound pod gracefully, and removes it with grace period 0 and a matching UID precondition only', async () => {
    const { server, core } = await startAsNode();
    server.put('pods', pod('web', 'node-a'));
    server.put('pods', pod('elsewhere', 'node-b'));
    const uid = String((server.get('pods', 'default', 'web')?.metadata as { uid?: string }).uid);

    expect((await status(core.deleteNamespacedPod({ namespace: 'default', name: 'web' }))).code).toBe(200);
    const deleting = server.get('pods', 'default', 'web');
    expect(deleting?.metadata).toMatchObject({ deletionGracePeriodSeconds: 30, deletionTimestamp: expect.stringMatching(/Z$/) as unknown });

    const final = (preconditionUid: string) =>
      core.deleteNamespacedPod({ namespace: 'default', name: 'web', gracePeriodSeconds: 0, body: model(V1DeleteOptions, { gracePeriodSeconds: 0, preconditions: model(V1Preconditions, { uid: preconditionUid }) }) });
    expect(await status(final('not-the-uid'))).toMatchObject({ code: 409, message: expect.stringContaining(`Precondition failed: UID in precondition: not-the-uid, UID in object meta: ${uid}`) as unknown });
    expect((await status(final(uid))).code).toBe(200);
    expect(server.get('pods', 'default', 'web')).toBeUndefined();
    expect(await status(core.deleteNamespacedPod({ namespace: 'default', name: 'elsewhere', gracePeriodSeconds: 0 }))).toEqual({
      code: 403,
      message: 'pods "elsewhere" is forbidden: node "node-a" can only delete pods with spec.nodeName set to itself',
    });
  });
});
