import { afterEach, describe, expect, it } from 'vitest';
import { realClock } from '../../lib/clock/clock.ts';
import { FakeClock } from '../../lib/clock/fake-clock.ts';
import { isKubeApiRequestError } from '../../lib/kube-client/api-errors.ts';
import { KubeSource } from '../../lib/sources/kube/kube-source.ts';
import { FakeApiServer, TOKEN_REQUEST_RESOURCE } from '../../lib/sources/kube/testing/fake-apiserver.ts';
import { pod } from '../../lib/sources/kube/testing/fixtures.ts';
import { fakeKubeConfig } from '../../lib/sources/kube/testing/kubeconfig-file.ts';
import { waitFor } from '../../lib/clock/testing/wait-for.ts';
import type { PersistentVolumeClaim } from '../../lib/volume/k8s-types.ts';
import { nodeName } from '../../lib/volume/types.ts';
import { isObjectNotFoundError } from '../../lib/volume/kube-client.ts';
import { formatQuantity, isKubeObjectGetError, kubeObjectGetTimeoutMs, KubeObjects } from './kube-objects.ts';

// The real @kubernetes/client-node against the Kubernetes-protocol test server over HTTP.
let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function setup(): Promise<{ api: FakeApiServer; objects: KubeObjects }> {
  const api = await FakeApiServer.start({ token: 't' });
  cleanups.push(() => api.close());
  const kubeConfig = fakeKubeConfig({ server: api.url, token: 't' });
  const source = new KubeSource({ kubeConfig, nodeName: 'node-a', clock: realClock });
  cleanups.push(() => source.stop());
  return { api, objects: new KubeObjects(source, kubeConfig) };
}

const claim: PersistentVolumeClaim = {
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name: 'data', namespace: 'apps' },
  spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '2Gi' } }, volumeName: 'pv-data' },
  status: { phase: 'Bound', capacity: { storage: '1Gi' } },
};

describe('KubeObjects', () => {
  it('markFSResizeFinished sets the new capacity, drops FileSystemResizePending and clears the allocated resource status, keeping other conditions', async () => {
    const { api, objects } = await setup();
    api.put('persistentvolumeclaims', {
      ...claim,
      status: {
        phase: 'Bound',
        capacity: { storage: '1Gi' },
        allocatedResourceStatuses: { storage: 'NodeResizePending' },
        conditions: [
          { type: 'FileSystemResizePending', status: 'True', message: 'Waiting for user to (re-)start a pod to finish file system resize of volume on node.' },
          { type: 'ModifyingVolume', status: 'True' },
        ],
      },
    });

    await objects.markFSResizeFinished(claim, 2 * 2 ** 30);

    const status = api.get('persistentvolumeclaims', 'apps', 'data')?.['status'];
    expect(status).toMatchObject({ phase: 'Bound', capacity: { storage: '2Gi' }, conditions: [{ type: 'ModifyingVolume', status: 'True' }] });
    expect(JSON.stringify(status)).not.toContain('NodeResizePending');
    const patch = api.requests({ resource: 'persistentvolumeclaims', verb: 'patch' })[0];
    expect([patch?.subresource, patch?.contentType]).toEqual(['status', 'application/merge-patch+json']);
  });

  it('markFSResizeFinished fails with ObjectNotFoundError for a claim that is gone, and with the API error when the patch is refused', async () => {
    const { api, objects } = await setup();
    const missing = await objects.markFSResizeFinished(claim, 2 ** 30).then(() => null, (err: unknown) => err);
    expect(isObjectNotFoundError(missing)).toBe(true);

    api.put('persistentvolumeclaims', claim);
    api.failRequests({ resource: 'persistentvolumeclaims', verb: 'patch', status: 403, message: 'persistentvolumeclaims "data" is forbidden' });
    const refused = await objects.markFSResizeFinished(claim, 2 ** 30).then(() => null, (err: unknown) => err);
    expect(isKubeObjectGetError(refused) && refused.status).toBe(403);
  });

  it('listNodePodsLive reads the node\'s pods from the API server itself (not an informer), with mirror pods\' static UIDs, and fails with the API error', async () => {
    // Arrange: the source was never started, so no informer holds any pod.
    const { api, objects } = await setup();
    const pod = (name: string, uid: string, nodeName: string, annotations?: Record<string, string>) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'apps', uid, ...(annotations === undefined ? {} : { annotations }) },
      spec: { nodeName, containers: [{ name: 'c', image: 'i' }] },
    });
    api.put('pods', pod('a', 'uid-a', 'node-a'));
    api.put('pods', pod('mirror', 'uid-m', 'node-a', { 'kubernetes.io/config.mirror': 'static-hash' }));
    api.put('pods', pod('elsewhere', 'uid-x', 'node-b'));

    // Act
    const live = await objects.listNodePodsLive('node-a');

    // Assert
    expect(live.sort((x, y) => x.uid.localeCompare(y.uid))).toEqual([
      { uid: 'uid-a', namespace: 'apps', name: 'a', phase: null },
      { uid: 'uid-m', namespace: 'apps', name: 'mirror', phase: null, mirrorOf: 'static-hash' },
    ]);
    const list = api.requests({ resource: 'pods', verb: 'list' });
    expect(list.map((r) => [r.path, r.query['fieldSelector'], r.query['resourceVersion']])).toEqual([['/api/v1/pods', 'spec.nodeName=node-a', undefined]]);
    api.failRequests({ resource: 'pods', verb: 'list', status: 500, message: 'etcdserver: request timed out' });
    const failed = await objects.listNodePodsLive('node-a').then(() => null, (err: unknown) => err);
    expect(isKubeObjectGetError(failed) && failed.message).toBe('LIST /api/v1/pods?fieldSelector=spec.nodeName=node-a: HTTP 500 Internal Server Error: etcdserver: request timed out');
  });

  it('a GET without an answer fails when its deadline passes on the injected clock, naming the path', async () => {
    // Arrange: the API server never answers a GET of a node.
    const api = await FakeApiServer.start({ token: 't' });
    cleanups.push(() => api.close());
    const held = api.holdRequests({ resource: 'nodes', verb: 'get' });
    cleanups.push(() => {
      held.release();
      return Promise.resolve();
    });
    const kubeConfig = fakeKubeConfig({ server: api.url, token: 't' });
    const clock = new FakeClock();
    const objects = new KubeObjects(new KubeSource({ kubeConfig, nodeName: 'node-a', clock }), kubeConfig, clock);
    let outcome: unknown = 'pending';
    void objects.getNode(nodeName('node-a')).then(
      () => {
        outcome = 'answered';
      },
      (err: unknown) => {
        outcome = err;
      },
    );
    await waitFor(() => api.requests({ resource: 'nodes', verb: 'get' }).length === 1, { what: 'the GET sent' });

    // Act + Assert
    await clock.advance(kubeObjectGetTimeoutMs - 1);
    expect(outcome).toBe('pending');
    await clock.advance(1);
    await waitFor(() => outcome !== 'pending', { what: 'the GET given up' });
    expect(isKubeObjectGetError(outcome) && isKubeApiRequestError(outcome) && [outcome.path, outcome.status, outcome.message]).toEqual([
      '/api/v1/nodes/node-a',
      undefined,
      `GET /api/v1/nodes/node-a: the request timed out after ${kubeObjectGetTimeoutMs} ms`,
    ]);
  });

  it.each([
    [2 * 2 ** 30, '2Gi'],
    [1536 * 2 ** 20, '1536Mi'],
    [3 * 2 ** 40, '3Ti'],
    [4096, '4Ki'],
    [1000, '1000'],
  ])('formatQuantity(%d) is %s', (bytes, text) => {
    expect(formatQuantity(bytes)).toBe(text);
  });
});

describe('KubeObjects.createServiceAccountToken (TokenRequest)', () => {
  async function nodeSetup(): Promise<{ api: FakeApiServer; objects: KubeObjects; uid: string }> {
    const api = await FakeApiServer.start({ token: 't', nodeAuthorizer: 'node-a' });
    cleanups.push(() => api.close());
    const kubeConfig = fakeKubeConfig({ server: api.url, token: 't' });
    const source = new KubeSource({ kubeConfig, nodeName: 'node-a', clock: realClock });
    cleanups.push(() => source.stop());
    api.put('pods', { ...pod('web', 'node-a', { namespace: 'apps' }), spec: { ...pod('web', 'node-a').spec, serviceAccountName: 'builder' } });
    api.put('pods', pod('elsewhere', 'node-b', { namespace: 'apps' }));
    const uid = String((api.get('pods', 'apps', 'web')?.['metadata'] as { uid?: string } | undefined)?.uid);
    return { api, objects: new KubeObjects(source, kubeConfig), uid };
  }

  it('POSTs the spec and returns the token with the spec the server defaulted', async () => {
    const { api, objects, uid } = await nodeSetup();
    const boundObjectRef = { apiVersion: 'v1', kind: 'Pod', name: 'web', uid };

    const tr = await objects.createServiceAccountToken('apps', 'builder', { audiences: [], boundObjectRef });

    const sent = api.requests({ resource: TOKEN_REQUEST_RESOURCE, verb: 'create' });
    expect(sent.map((r) => [r.path, r.status])).toEqual([['/api/v1/namespaces/apps/serviceaccounts/builder/token', 201]]);
    expect(sent[0]?.body).toMatchObject({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { audiences: [], boundObjectRef } });
    expect(tr.spec).toEqual({ audiences: ['https://kubernetes.default.svc.cluster.local'], expirationSeconds: 3600, boundObjectRef });
    const claims = JSON.parse(Buffer.from(tr.status.token.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
    expect(claims).toMatchObject({ sub: 'system:serviceaccount:apps:builder', 'kubernetes.io': { namespace: 'apps', pod: { name: 'web', uid } } });
    expect(Date.parse(tr.status.expirationTimestamp) - (claims['iat'] as number) * 1000).toBe(3600_000);
  });

  it('a refusal rejects with the API path and message (NodeRestriction: a pod of another node)', async () => {
    const { objects } = await nodeSetup();
    const err: unknown = await objects
      .createServiceAccountToken('apps', 'default', { audiences: ['vault'], expirationSeconds: 600, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'elsewhere', uid: '' } })
      .catch((e: unknown) => e);
    expect(isKubeObjectGetError(err) && [err.path, err.status]).toEqual(['/api/v1/namespaces/apps/serviceaccounts/default/token', 403]);
    expect((err as Error).message).toContain('POST /api/v1/namespaces/apps/serviceaccounts/default/token: ');
    expect((err as Error).message).toContain('node requested token bound to a pod scheduled on a different node');
  });
});
