import { ApiException, CoreV1Api, HttpMethod, Observable, PatchStrategy, RequestContext, setHeaderOptions, Watch } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { abortableRequestOptions } from '../../kube-client/request-deadline.ts';
import { waitFor } from '../../clock/testing/wait-for.ts';
import { makeApiClient, shareConnections } from './api-client.ts';
import { FakeApiServer } from './testing/fake-apiserver.ts';
import { configMap, pod } from './testing/fixtures.ts';
import { fakeKubeConfig } from './testing/kubeconfig-file.ts';

const token = 'api-client-test-token';
let server: FakeApiServer | null = null;

afterEach(async () => {
  await server?.close();
  server = null;
});

async function client(): Promise<{ server: FakeApiServer; core: CoreV1Api }> {
  server = await FakeApiServer.start({ token });
  return { server, core: makeApiClient(fakeKubeConfig({ server: server.url, token }), CoreV1Api) };
}

describe('makeApiClient (undici request instead of fetch)', () => {
  it('lists, reads and patches through the generated client, authenticated as the kubeconfig says', async () => {
    const { server, core } = await client();
    for (let i = 0; i < 50; i++) server.put('pods', pod(`web-${String(i)}`, 'node-a'));
    server.put('configmaps', configMap('settings', { mode: 'fast' }));
    server.put('configmaps', configMap('created', { k: 'v' }));

    const list = await core.listPodForAllNamespaces({ fieldSelector: 'spec.nodeName=node-a' });
    const read = await core.readNamespacedConfigMap({ namespace: 'default', name: 'settings' });
    await core.patchNamespacedConfigMap(
      { namespace: 'default', name: 'created', body: [{ op: 'replace', path: '/data/k', value: 'w' }] },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );

    expect(list.items).toHaveLength(50);
    expect(list.metadata?.resourceVersion).toMatch(/^\d+$/);
    expect(read.data).toEqual({ mode: 'fast' });
    expect((await core.readNamespacedConfigMap({ namespace: 'default', name: 'created' })).data).toEqual({ k: 'w' });
    expect(server.requests({ resource: 'configmaps', verb: 'patch' })).toEqual([expect.objectContaining({ contentType: 'application/json-patch+json', authorization: `Bearer ${token}` })]);
  });

  it('rejects with client-node ApiException carrying the status and the Status body', async () => {
    const { core } = await client();

    const err: unknown = await core.readNamespacedConfigMap({ namespace: 'default', name: 'missing' }).catch((e: unknown) => e);

    expect(err).toBeInstanceOf(ApiException);
    expect((err as ApiException<unknown>).code).toBe(404);
    expect(String((err as ApiException<unknown>).body)).toContain('"reason":"NotFound"');
  });

  it('aborts a request whose signal fires (the agent\'s request deadlines)', async () => {
    const { server, core } = await client();
    server.holdRequests({ resource: 'configmaps', verb: 'get' });
    const controller = new AbortController();

    const pending = core.readNamespacedConfigMap({ namespace: 'default', name: 'held' }, abortableRequestOptions({ Observable }, controller.signal)).catch((e: unknown) => e);
    controller.abort(new Error('deadline'));

    expect(await pending).toBeInstanceOf(Error);
  });
});

describe('makeApiClient connections', () => {
  // undici hands a connection back to its pool just after the body's end: a request sent at once
  // after another may open a second connection. Never one per request, as client-node did.
  const connections = (requests: readonly { connection: number }[]) => new Set(requests.map((r) => r.connection));

  it('sends the requests of every API client made from one KubeConfig on the same few connections', async () => {
    server = await FakeApiServer.start({ token });
    server.put('configmaps', configMap('settings', { mode: 'fast' }));
    const kc = fakeKubeConfig({ server: server.url, token });
    const first = makeApiClient(kc, CoreV1Api);
    const second = makeApiClient(kc, CoreV1Api);

    for (let i = 0; i < 5; i++) {
      await first.readNamespacedConfigMap({ namespace: 'default', name: 'settings' });
      await second.listPodForAllNamespaces({});
    }

    expect(server.requests()).toHaveLength(10);
    expect(connections(server.requests()).size).toBeLessThanOrEqual(2);
  });

  it('leaves the old connections once the KubeConfig\'s connection settings change', async () => {
    server = await FakeApiServer.start({ token });
    server.put('configmaps', configMap('settings', { mode: 'fast' }));
    const kc = fakeKubeConfig({ server: server.url, token });
    const core = makeApiClient(kc, CoreV1Api);
    for (let i = 0; i < 3; i++) await core.readNamespacedConfigMap({ namespace: 'default', name: 'settings' });
    const before = connections(server.requests());
    server.clearRequests();

    // Another user of the same cluster: what a rewritten kubeconfig can bring.
    kc.loadFromString(kc.exportConfig().replaceAll('fake-user', 'rotated-user'));
    for (let i = 0; i < 3; i++) await core.readNamespacedConfigMap({ namespace: 'default', name: 'settings' });
    const after = connections(server.requests());

    expect(before.size).toBeLessThanOrEqual(2);
    expect(after.size).toBeLessThanOrEqual(2);
    expect([...after].filter((c) => before.has(c))).toEqual([]);
  });
});

describe('shareConnections', () => {
  it("hands client-node's own authentication (what its Watch calls) one dispatcher, with the credentials", async () => {
    server = await FakeApiServer.start({ token });
    const kc = fakeKubeConfig({ server: server.url, token });
    shareConnections(kc);
    shareConnections(kc);
    const first = new RequestContext(`${server.url}/api/v1/pods`, HttpMethod.GET);
    const second = new RequestContext(`${server.url}/api/v1/nodes`, HttpMethod.GET);

    await kc.applySecurityAuthentication(first);
    await kc.applySecurityAuthentication(second);

    expect(first.getDispatcher()).toBeDefined();
    expect(second.getDispatcher()).toBe(first.getDispatcher());
    expect(second.getHeaders()).toMatchObject({ Authorization: `Bearer ${token}` });
  });

  it('leaves a Watch working beside the API clients of the same KubeConfig', async () => {
    server = await FakeApiServer.start({ token });
    const kc = fakeKubeConfig({ server: server.url, token });
    shareConnections(kc);
    const core = makeApiClient(kc, CoreV1Api);
    const seen: string[] = [];
    const watch = await new Watch(kc).watch('/api/v1/pods', {}, (type: string) => seen.push(type), () => undefined);

    try {
      server.put('pods', pod('web-0', 'node-a'));
      await waitFor(() => seen.length > 0, { what: 'the watch event' });
      const list = await core.listPodForAllNamespaces({});

      expect(seen).toEqual(['ADDED']);
      expect(list.items.map((p) => p.metadata?.name)).toEqual(['web-0']);
    } finally {
      watch.abort();
    }
  });
});
