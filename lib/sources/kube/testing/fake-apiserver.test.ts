import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ApiException,
  AuthenticationV1Api,
  AuthorizationV1Api,
  CoreV1Api,
  CoreV1Event,
  PatchStrategy,
  setHeaderOptions,
  V1ConfigMap,
  V1ObjectMeta,
  V1ObjectReference,
  V1ResourceAttributes,
  V1SubjectAccessReview,
  V1SubjectAccessReviewSpec,
  V1TokenReview,
  V1TokenReviewSpec,
  Watch,
} from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import * as clientNode from '@kubernetes/client-node';
import { describeApiError } from '../../../kube-client/api-errors.ts';
import { loadKubeConfig } from '../../../kube-client/kubeconfig.ts';
import { isJsonObject } from '../plain-json.ts';
import { FakeApiServer } from './fake-apiserver.ts';
import type { AccessRequest, FakeApiServerOptions, GoneStyle } from './fake-apiserver.ts';
import { configMap, node, pod } from './fixtures.ts';
import { fakeKubeConfig, writeKubeconfigFile } from './kubeconfig-file.ts';
import { waitFor } from '../../../clock/testing/wait-for.ts';
import { model } from '../../../kube-client/model.ts';

// The fake API server is exercised only through the real @kubernetes/client-node over HTTP.
const token = 'fake-server-test-token';

let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function startServer(options: FakeApiServerOptions = {}): Promise<{ server: FakeApiServer; kc: KubeConfig; core: CoreV1Api }> {
  const server = await FakeApiServer.start({ token, ...options });
  cleanups.push(() => server.close());
  const kc = fakeKubeConfig({ server: server.url, token });
  return { server, kc, core: kc.makeApiClient(CoreV1Api) };
}

interface WatchRecord {
  events: { type: string; object: unknown }[];
  done: boolean;
  error: unknown;
}

/** A raw client-node watch, recording its events; aborted at cleanup. */
async function watchRaw(kc: KubeConfig, path: string, query: Record<string, string | boolean>): Promise<WatchRecord> {
  const record: WatchRecord = { events: [], done: false, error: undefined };
  const controller = await new Watch(kc).watch(
    path,
    query,
    (type: string, object: unknown) => {
      record.events.push({ type, object });
    },
    (err: unknown) => {
      record.done = true;
      record.error = err;
    },
  );
  cleanups.push(() => {
    controller.abort();
    return Promise.resolve();
  });
  return record;
}

function nameOf(object: unknown): string | undefined {
  if (!isJsonObject(object) || !isJsonObject(object.metadata)) return undefined;
  return typeof object.metadata.name === 'string' ? object.metadata.name : undefined;
}

async function apiError(promise: Promise<unknown>): Promise<ApiException<unknown>> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ApiException) return err;
    throw err;
  }
  throw new Error('the request succeeded');
}

describe('FakeApiServer reads', () => {
  it('answers a LIST with its resourceVersion, honouring a spec.nodeName field selector', async () => {
    const { server, core } = await startServer();
    server.put('pods', pod('a1', 'node-a'));
    server.put('pods', pod('b1', 'node-b'));
    server.put('pods', pod('a2', 'node-a', { namespace: 'prod' }));

    const list = await core.listPodForAllNamespaces({ fieldSelector: 'spec.nodeName=node-a' });

    expect(list.items.map((p) => `${p.metadata?.namespace ?? ''}/${p.metadata?.name ?? ''}`)).toEqual(['default/a1', 'prod/a2']);
    expect(list.metadata?.resourceVersion).toBe(String(server.store.currentResourceVersion()));
    expect((await core.listNamespacedPod({ namespace: 'prod' })).items).toHaveLength(1);
  });

  it('refuses a field selector on a field the kind does not support, as the real server does', async () => {
    const { core } = await startServer();
    const err = await apiError(core.listPersistentVolume({ fieldSelector: 'spec.nodeName=node-a' }));
    expect(err.code).toBe(400);
  });

  it('filters by label selector', async () => {
    const { server, core } = await startServer();
    server.put('pods', pod('front', 'node-a', { labels: { tier: 'front' } }));
    server.put('pods', pod('back', 'node-a', { labels: { tier: 'back' } }));
    server.put('pods', pod('none', 'node-a'));

    const names = async (labelSelector: string) => (await core.listNamespacedPod({ namespace: 'default', labelSelector })).items.map((p) => p.metadata?.name);
    expect(await names('tier=front')).toEqual(['front']);
    expect(await names('tier notin (front)')).toEqual(['back', 'none']);
    expect(await names('!tier')).toEqual(['none']);
  });

  it('answers a GET of a missing object with a NotFound Status', async () => {
    const { core } = await startServer();
    const err = await apiError(core.readNamespacedSecret({ namespace: 'default', name: 'nope' }));
    expect(err.code).toBe(404);
    // The body is the Status as JSON text; describeApiError reads its message.
    expect(describeApiError(err)).toEqual({ status: 404, message: 'HTTP 404 Not Found: secrets "nope" not found' });
  });
});

describe('FakeApiServer watches', () => {
  it('streams the writes after a resourceVersion, as selected, with bookmarks when asked', async () => {
    const { server, kc } = await startServer();
    server.put('pods', pod('before', 'node-a'));
    const from = server.store.currentResourceVersion();
    server.put('pods', pod('replayed', 'node-a'));
    const watch = await watchRaw(kc, '/api/v1/pods', { resourceVersion: String(from), labelSelector: 'app=web', allowWatchBookmarks: true });
    server.put('pods', pod('other-app', 'node-a', { labels: { app: 'db' } }));
    server.put('pods', pod('web', 'node-a', { labels: { app: 'web' } }));
    server.put('pods', pod('web', 'node-a', { labels: { app: 'web', v: '2' } }));
    server.sendBookmarks('pods');
    server.put('pods', pod('web', 'node-a', { labels: { app: 'other' } }));

    await waitFor(() => watch.events.length === 4, { what: 'four events' });
    expect(watch.events.map((e) => `${e.type} ${nameOf(e.object) ?? '-'}`)).toEqual(['ADDED web', 'MODIFIED web', 'BOOKMARK -', 'DELETED web']);
    expect(watch.done).toBe(false);
  });

  it('replays the writes after the requested resourceVersion before streaming', async () => {
    const { server, kc } = await startServer();
    const from = server.store.currentResourceVersion();
    server.put('configmaps', configMap('one', { a: '1' }));
    server.remove('configmaps', 'default', 'one');
    const watch = await watchRaw(kc, '/api/v1/namespaces/default/configmaps', { resourceVersion: String(from) });

    await waitFor(() => watch.events.length === 2, { what: 'replayed events' });
    expect(watch.events.map((e) => e.type)).toEqual(['ADDED', 'DELETED']);
  });

  it.each<{ style: GoneStyle; title: string }>([
    { style: 'event', title: 'an ERROR event with code 410, then the end of the stream' },
    { style: 'http', title: 'an HTTP 410 answer' },
  ])('refuses a watch from a compacted resourceVersion with $title', async ({ style }) => {
    const { server, kc } = await startServer({ goneStyle: style });
    const from = server.store.currentResourceVersion();
    server.put('pods', pod('p', 'node-a'));
    server.compact();

    const watch = await watchRaw(kc, '/api/v1/pods', { resourceVersion: String(from) });

    await waitFor(() => watch.done, { what: 'watch ended' });
    if (style === 'event') {
      expect(watch.error).toBeNull();
      expect(watch.events).toEqual([{ type: 'ERROR', object: expect.objectContaining({ code: 410, reason: 'Expired' }) as unknown }]);
    } else {
      expect(watch.error).toMatchObject({ statusCode: 410 });
    }
  });

  it('forces 410 Gone on the next watch of a kind only', async () => {
    const { server, kc } = await startServer();
    const rv = String(server.store.currentResourceVersion());
    server.failNextWatch('pods', 'http');

    const first = await watchRaw(kc, '/api/v1/pods', { resourceVersion: rv });
    const second = await watchRaw(kc, '/api/v1/pods', { resourceVersion: rv });

    await waitFor(() => first.done, { what: 'first watch refused' });
    expect(first.error).toMatchObject({ statusCode: 410 });
    expect(second.done).toBe(false);
    expect(server.watchCount('pods')).toBe(1);
  });

  it('ends watch streams cleanly on dropWatches', async () => {
    const { server, kc } = await startServer();
    const watch = await watchRaw(kc, '/api/v1/nodes', { resourceVersion: '0' });
    server.dropWatches('nodes');
    await waitFor(() => watch.done, { what: 'watch ended' });
    expect(watch.error).toBeNull();
  });
});

describe('FakeApiServer writes', () => {
  it('patches node status with merge, strategic merge and JSON patches', async () => {
    const { server, core } = await startServer();
    server.put('nodes', {
      ...node('node-a', [{ name: 'vol-old', devicePath: '/dev/sda' }]),
      status: { volumesAttached: [{ name: 'vol-old', devicePath: '/dev/sda' }], conditions: [{ type: 'Ready', status: 'False' }, { type: 'DiskPressure', status: 'False' }] },
    });

    await core.patchNodeStatus({ name: 'node-a', body: { status: { volumesInUse: ['vol-a', 'vol-b'] } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    await core.patchNodeStatus(
      { name: 'node-a', body: { status: { conditions: [{ type: 'Ready', status: 'True' }], volumesAttached: [{ name: 'vol-new', devicePath: '/dev/sdb' }] } } },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    const patched = await core.patchNodeStatus({ name: 'node-a', body: [{ op: 'remove', path: '/status/volumesInUse/0' }] });

    expect(patched.status?.volumesInUse).toEqual(['vol-b']);
    // Conditions merge on their key `type`; volumesAttached has no merge key and is replaced.
    expect(patched.status?.conditions?.map((c) => `${c.type}=${c.status}`)).toEqual(['Ready=True', 'DiskPressure=False']);
    expect(patched.status?.volumesAttached).toEqual([{ name: 'vol-new', devicePath: '/dev/sdb' }]);
    const statusPatches = server.requests({ resource: 'nodes', verb: 'patch' });
    expect(statusPatches.map((r) => r.contentType)).toEqual(['application/merge-patch+json', 'application/strategic-merge-patch+json', 'application/json-patch+json']);
    expect(statusPatches.every((r) => r.path === '/api/v1/nodes/node-a/status')).toBe(true);
  });

  it('keeps the status when the main resource is patched, and the spec when the status is', async () => {
    const { server, core } = await startServer();
    server.put('nodes', { ...node('node-a', [{ name: 'vol-1', devicePath: '' }]), spec: { podCIDR: '10.0.0.0/24' } });

    await core.patchNode({ name: 'node-a', body: { metadata: { labels: { zone: 'a' } }, status: { volumesAttached: [] } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    expect((await core.readNode({ name: 'node-a' })).status?.volumesAttached).toEqual([{ name: 'vol-1', devicePath: '' }]);
    await core.patchNodeStatus({ name: 'node-a', body: { spec: { podCIDR: '10.9.9.0/24' }, status: { volumesAttached: [] } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));

    const stored = await core.readNode({ name: 'node-a' });
    expect(stored.spec?.podCIDR).toBe('10.0.0.0/24');
    expect(stored.status?.volumesAttached).toEqual([]);
  });

  it('keeps label and annotation changes written through nodes/status, as the real nodes/status strategy', async () => {
    const { server, core } = await startServer();
    server.put('nodes', node('node-a'));

    await core.patchNodeStatus({ name: 'node-a', body: { metadata: { labels: { zone: 'b' }, annotations: { 'csi.volume.kubernetes.io/nodeid': '{"d":"n"}' } } } }, setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch));

    const stored = await core.readNode({ name: 'node-a' });
    expect(stored.metadata?.labels?.zone).toBe('b');
    expect(stored.metadata?.annotations?.['csi.volume.kubernetes.io/nodeid']).toBe('{"d":"n"}');
  });

  it('refuses an update from a stale resourceVersion with 409 Conflict', async () => {
    const { server, core } = await startServer();
    const stale = server.put('configmaps', configMap('settings', { a: '1' }));
    server.put('configmaps', configMap('settings', { a: '2' }));

    const err = await apiError(core.replaceNamespacedConfigMap({ namespace: 'default', name: 'settings', body: model(V1ConfigMap, { ...stale, data: { a: '3' } }) }));
    expect(err.code).toBe(409);
    expect(server.get('configmaps', 'default', 'settings')?.data).toEqual({ a: '2' });
  });

  it('stores Events created through the API and lists them', async () => {
    const { server, core } = await startServer();
    await core.createNamespacedEvent({
      namespace: 'prod',
      body: model(CoreV1Event, {
        metadata: model(V1ObjectMeta, { generateName: 'web.' }),
        involvedObject: model(V1ObjectReference, { kind: 'Pod', namespace: 'prod', name: 'web' }),
        reason: 'FailedMount',
        message: 'secret "db" not found',
        type: 'Warning',
      }),
    });

    const listed = await core.listNamespacedEvent({ namespace: 'prod', fieldSelector: 'involvedObject.name=web' });
    expect(listed.items.map((e) => e.reason)).toEqual(['FailedMount']);
    expect(listed.items[0]?.metadata.name).toMatch(/^web\.[0-9a-f]{5}$/);
    expect(server.events('prod').map((e) => e.message)).toEqual(['secret "db" not found']);
  });
});

describe('FakeApiServer reviews', () => {
  it('answers TokenReviews per token', async () => {
    const { server, kc } = await startServer();
    server.setTokenUser('good', { username: 'alice', groups: ['viewers'] });
    const authn = kc.makeApiClient(AuthenticationV1Api);

    const review = (spec: Partial<V1TokenReviewSpec>) => authn.createTokenReview({ body: model(V1TokenReview, { spec: model(V1TokenReviewSpec, spec) }) });
    const accepted = await review({ token: 'good', audiences: ['volumescope'] });
    const refused = await review({ token: 'bad' });

    expect(accepted.status).toMatchObject({ authenticated: true, user: { username: 'alice', groups: ['viewers'] }, audiences: ['volumescope'] });
    expect(refused.status?.authenticated).toBe(false);
  });

  it('answers SubjectAccessReviews per user, with a default for others', async () => {
    const { server, kc } = await startServer();
    const seen: AccessRequest[] = [];
    server.setAccessPolicy('alice', (request) => {
      seen.push(request);
      return { allowed: request.resourceAttributes?.verb === 'get', reason: 'alice may read' };
    });
    server.setDefaultAccessPolicy({ allowed: false, denied: true, reason: 'nobody else' });
    const authz = kc.makeApiClient(AuthorizationV1Api);
    const review = (user: string, verb: string) =>
      authz.createSubjectAccessReview({
        body: model(V1SubjectAccessReview, {
          spec: model(V1SubjectAccessReviewSpec, {
            user,
            groups: ['g'],
            resourceAttributes: model(V1ResourceAttributes, { verb, resource: 'nodes', subresource: 'proxy' }),
          }),
        }),
      });

    expect((await review('alice', 'get')).status).toEqual({ allowed: true, reason: 'alice may read' });
    expect((await review('alice', 'create')).status?.allowed).toBe(false);
    expect((await review('bob', 'get')).status).toEqual({ allowed: false, denied: true, reason: 'nobody else' });
    expect(seen[0]).toEqual({ user: 'alice', groups: ['g'], resourceAttributes: { verb: 'get', resource: 'nodes', subresource: 'proxy' } });
  });
});

describe('FakeApiServer controls', () => {
  it('refuses requests without its bearer token, and takes a kubeconfig file written for it', async () => {
    const { server } = await startServer();
    const wrong = fakeKubeConfig({ server: server.url, token: 'wrong' }).makeApiClient(CoreV1Api);
    expect((await apiError(wrong.listNode())).code).toBe(401);

    const dir = await mkdtemp(join(tmpdir(), 'kubeconfig-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const path = await writeKubeconfigFile(join(dir, 'config'), { server: server.url, token });
    const core = loadKubeConfig({ clientNode, kubeconfig: path, env: {} }).makeApiClient(CoreV1Api);
    server.put('nodes', node('node-a'));

    expect((await core.listNode()).items.map((n) => n.metadata?.name)).toEqual(['node-a']);
    expect(server.requests({ resource: 'nodes', verb: 'list' }).at(-1)?.authorization).toBe(`Bearer ${token}`);
  });

  it('fails requests of a kind and verb with a status, as often as asked', async () => {
    const { server, core } = await startServer();
    server.put('configmaps', configMap('settings', { a: '1' }));
    server.failRequests({ resource: 'configmaps', verb: 'get', status: 503, times: 1 });

    expect((await apiError(core.readNamespacedConfigMap({ namespace: 'default', name: 'settings' }))).code).toBe(503);
    expect((await core.readNamespacedConfigMap({ namespace: 'default', name: 'settings' })).data).toEqual({ a: '1' });
    expect((await core.listNamespacedConfigMap({ namespace: 'default' })).items).toHaveLength(1);
  });

  it('holds requests until released', async () => {
    const { server, core } = await startServer();
    const held = server.holdRequests({ resource: 'nodes', verb: 'list' });
    let answered = false;
    const pending = core.listNode().then((list) => {
      answered = true;
      return list;
    });
    await waitFor(() => server.requests({ resource: 'nodes', verb: 'list' }).length === 1, { what: 'request received' });
    // A request that is not held goes through meanwhile.
    await core.listPersistentVolume();
    expect(answered).toBe(false);

    held.release();
    await pending;
    expect(answered).toBe(true);
  });

  it('restarts on the same port with the same objects after a stop', async () => {
    const { server, core } = await startServer();
    server.put('nodes', node('node-a'));
    const url = server.url;

    await server.stop();
    await expect(core.listNode()).rejects.toThrow();
    await server.restart();

    expect(server.url).toBe(url);
    expect((await core.listNode()).items).toHaveLength(1);
  });
});
