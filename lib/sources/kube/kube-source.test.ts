import { CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { realClock } from '../../clock/clock.ts';
import { FakeClock } from '../../clock/fake-clock.ts';
import type { ManifestSource } from '../manifest/index.ts';
import { isKubeSourceStateError } from './errors.ts';
import { KubeSource } from './kube-source.ts';
import type { KubeSourceChange, KubeSourceOptions } from './kube-source.ts';
import { FakeApiServer } from './testing/fake-apiserver.ts';
import type { FakeApiServerOptions, GoneStyle } from './testing/fake-apiserver.ts';
import { claim, configMap, csiDriver, csiPersistentVolume, node, pod, secret } from './testing/fixtures.ts';
import { fakeKubeConfig } from './testing/kubeconfig-file.ts';
import { waitFor } from '../../clock/testing/wait-for.ts';
import { discardLogger } from '../../volume/logger.ts';

// Every test runs the real @kubernetes/client-node against a FakeApiServer over real HTTP on
// 127.0.0.1. Waits poll with deadlines of a few seconds; backoffs are shortened so recovery
// happens within them.
const token = 'source-test-token';

let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function startServer(options: FakeApiServerOptions = {}): Promise<FakeApiServer> {
  const server = await FakeApiServer.start({ token, ...options });
  cleanups.push(() => server.close());
  return server;
}

interface LogLine {
  level: 'info' | 'warn';
  msg: string;
}

function newSource(server: FakeApiServer, options: Partial<KubeSourceOptions> = {}) {
  const logs: LogLine[] = [];
  const source = new KubeSource({
    kubeConfig: fakeKubeConfig({ server: server.url, token }),
    nodeName: 'node-a',
    clock: realClock,
    logger: {
      ...discardLogger,
      info: (msg) => logs.push({ level: 'info', msg }),
      warn: (msg) => logs.push({ level: 'warn', msg }),
    },
    restartBackoff: { initialMs: 50, maxMs: 200 },
    referencedObjectTtlMs: 10_000,
    referencedObjectRetry: { initialMs: 50, maxMs: 200 },
    // The PV informer (observe mode's way); the GET way has its own tests below.
    persistentVolumes: 'informer',
    ...options,
  });
  const changes: KubeSourceChange[] = [];
  source.onChange((change) => changes.push(change));
  cleanups.push(() => source.stop());
  return { source, changes, logs };
}

async function startSynced(source: KubeSource): Promise<void> {
  await source.start();
  await source.waitUntilSynced();
}

const podNames = (source: KubeSource) => source.listPods().map((p) => p.metadata.name).sort();
const uidOf = (server: FakeApiServer, name: string, namespace = 'default') => {
  const metadata = server.get('pods', namespace, name)?.metadata;
  const uid = typeof metadata === 'object' && metadata !== null && !Array.isArray(metadata) ? metadata.uid : undefined;
  if (typeof uid !== 'string') throw new Error(`pod ${namespace}/${name} has no uid`);
  return uid;
};

describe('KubeSource pods', () => {
  it('lists the pods bound to its node and never a pod of another node', async () => {
    const server = await startServer();
    server.put('pods', pod('web', 'node-a'));
    server.put('pods', pod('elsewhere', 'node-b'));
    const { source } = newSource(server);

    await startSynced(source);
    expect(podNames(source)).toEqual(['web']);

    server.put('pods', pod('elsewhere-later', 'node-b'));
    server.put('pods', pod('web-2', 'node-a'));
    await waitFor(() => podNames(source).includes('web-2'), { what: 'web-2 listed' });

    // The later pod of node-b was written first, so it would have arrived first if sent at all.
    expect(podNames(source)).toEqual(['web', 'web-2']);
    const podRequests = server.requests({ resource: 'pods' }).filter((r) => r.verb === 'list' || r.verb === 'watch');
    expect(podRequests.length).toBeGreaterThanOrEqual(2);
    for (const request of podRequests) expect(request.query.fieldSelector).toBe('spec.nodeName=node-a');
    // Consistent lists: never one from a watch cache that may lag (see the pod informer).
    for (const request of podRequests.filter((r) => r.verb === 'list')) expect(request.query.resourceVersion).toBeUndefined();
  });

  it('publishes pod updates and deletions by uid', async () => {
    const server = await startServer();
    server.put('pods', pod('web', 'node-a'));
    const { source, changes } = newSource(server);
    await startSynced(source);
    const uid = uidOf(server, 'web');
    expect(changes.flatMap((c) => c.pods.added)).toEqual([uid]);

    server.put('pods', pod('web', 'node-a', { labels: { tier: 'front' } }));
    await waitFor(() => changes.some((c) => c.pods.updated.includes(uid)), { what: 'update published' });
    expect(source.getPodByUID(uid)?.metadata.labels).toEqual({ tier: 'front' });

    server.remove('pods', 'default', 'web');
    await waitFor(() => changes.some((c) => c.pods.removed.includes(uid)), { what: 'removal published' });
    expect(source.getPodByUID(uid)).toBeUndefined();
    expect(source.listPods()).toEqual([]);
  });

  it('serves timestamps as RFC 3339 strings and drops fields it does not model, from lists and watches alike', async () => {
    const server = await startServer();
    const withExtras = (name: string) => ({
      ...pod(name, 'node-a'),
      metadata: { name, namespace: 'default', deletionTimestamp: '2024-01-01T12:00:00Z', finalizers: ['x'] },
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2024-01-01T11:00:00Z' }] },
    });
    server.put('pods', withExtras('listed'));
    const { source } = newSource(server);
    await startSynced(source);
    server.put('pods', withExtras('watched'));
    await waitFor(() => podNames(source).includes('watched'), { what: 'watched pod listed' });

    for (const p of source.listPods()) {
      expect(p.metadata.deletionTimestamp).toBe('2024-01-01T12:00:00Z');
      expect(p.status).toEqual({ phase: 'Running' });
      expect(p.metadata).not.toHaveProperty('finalizers');
      expect(p.apiVersion).toBe('v1');
      expect(p.kind).toBe('Pod');
      expect(Object.isFrozen(p.spec)).toBe(true);
    }
  });

  it('does not publish a pod update that changes nothing it serves', async () => {
    const server = await startServer();
    server.put('pods', pod('web', 'node-a'));
    const { source, changes } = newSource(server);
    await startSynced(source);
    const uid = uidOf(server, 'web');
    const before = changes.length;

    // A status change the source drops (conditions): the stored pod gets the new
    // resourceVersion, but no update is published. Then a change it serves (a label).
    const written = server.put('pods', { ...pod('web', 'node-a'), status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } });
    const writtenRV = (written.metadata as { resourceVersion?: string }).resourceVersion;
    await waitFor(() => source.getPodByUID(uid)?.metadata.resourceVersion === writtenRV, { what: 'status-only change seen' });
    server.put('pods', pod('web', 'node-a', { labels: { v: '2' } }));
    await waitFor(() => source.getPodByUID(uid)?.metadata.labels?.v === '2', { what: 'label seen' });

    expect(changes.slice(before).flatMap((c) => c.pods.updated)).toEqual([uid]);
  });

  it('keeps the container states beside the pods: a status-only change publishes containerStatesChanged, never a pod update', async () => {
    // Arrange
    const server = await startServer();
    server.put('pods', pod('web', 'node-a'));
    const { source, changes } = newSource(server);
    await startSynced(source);
    const uid = uidOf(server, 'web');
    expect(source.getContainerStates(uid)).toBeUndefined();
    const before = changes.length;

    // Act: the kubelet reports the container waiting in ContainerCreating
    server.put('pods', { ...pod('web', 'node-a'), status: { phase: 'Running', containerStatuses: [{ name: 'app', state: { waiting: { reason: 'ContainerCreating' } }, ready: false, restartCount: 0 }] } });
    await waitFor(() => source.getContainerStates(uid) !== undefined, { what: 'container state seen' });

    // Assert
    expect(source.getContainerStates(uid)).toMatchObject([{ name: 'app', kind: 'container', state: 'waiting', reason: 'ContainerCreating', sinceObserved: true }]);
    await waitFor(() => changes.slice(before).some((c) => c.containerStatesChanged), { what: 'containerStatesChanged published' });
    expect(changes.slice(before).filter((c) => c.containerStatesChanged).flatMap((c) => c.pods.updated)).toEqual([]);

    // A deleted pod has no states any more.
    server.remove('pods', 'default', 'web');
    await waitFor(() => source.getPodByUID(uid) === undefined, { what: 'pod removed' });
    expect(source.getContainerStates(uid)).toBeUndefined();
  });

  it('keeps a pod with an unsupported volume, without that volume source, and reports it', async () => {
    const server = await startServer();
    server.put('pods', {
      ...pod('nfs-user', 'node-a'),
      spec: {
        nodeName: 'node-a',
        containers: [{ name: 'app' }],
        volumes: [
          { name: 'share', nfs: { server: 'nfs.example.com', path: '/export' } },
          { name: 'scratch', emptyDir: {} },
        ],
      },
    });
    const { source } = newSource(server);
    await startSynced(source);

    expect(source.listPods()[0]?.spec.volumes).toEqual([{ name: 'share' }, { name: 'scratch', emptyDir: {} }]);
    expect(source.sourceErrors()).toEqual([
      { file: '/api/v1/namespaces/default/pods/nfs-user', message: 'Pod default/nfs-user: spec.volumes[0] (share): unsupported volume source nfs' },
    ]);
  });
});

describe('KubeSource sync', () => {
  it('is synced only after every informer has listed once', async () => {
    const server = await startServer();
    server.put('pods', pod('web', 'node-a'));
    server.put('nodes', node('node-a'));
    const held = server.holdRequests({ resource: 'csidrivers', verb: 'list' });
    const { source, changes } = newSource(server);

    const started = source.start();
    await waitFor(() => source.listPods().length === 1 && source.getNode() !== undefined, { what: 'pods and node listed' });
    await waitFor(() => server.requests({ resource: 'persistentvolumes', verb: 'watch' }).length > 0, { what: 'PV informer watching' });
    expect(source.isSynced()).toBe(false);

    held.release();
    await started;
    await waitFor(() => source.isSynced(), { what: 'synced' });
    expect(changes.filter((c) => c.syncedChanged)).toHaveLength(1);
  });

  it('is synced only after the first GET of every object its pods reference has been answered', async () => {
    const server = await startServer();
    server.put('secrets', secret('db', { password: 'hunter2' }));
    server.put('pods', pod('web', 'node-a', { volumes: [{ name: 'creds', secret: { secretName: 'db' } }] }));
    const held = server.holdRequests({ resource: 'secrets', verb: 'get' });
    const { source } = newSource(server);

    await source.start();
    await waitFor(() => server.requests({ resource: 'secrets', verb: 'get' }).length === 1, { what: 'secret GET sent' });
    expect(source.listPods()).toHaveLength(1);
    expect(source.isSynced()).toBe(false);

    held.release();
    await source.waitUntilSynced();
    expect(source.getSecret('default', 'db')?.data).toEqual({ password: Buffer.from('hunter2').toString('base64') });
  });
});

describe('KubeSource referenced objects', () => {
  it('serves the config maps, secrets and claims its pods reference, and fetches nothing else', async () => {
    const server = await startServer();
    server.put('configmaps', configMap('settings', { mode: 'fast' }, 'prod'));
    server.put('configmaps', configMap('ca', { 'ca.crt': 'PEM' }, 'prod'));
    server.put('secrets', secret('creds', { user: 'u' }, 'prod'));
    server.put('secrets', secret('token', { t: 'x' }, 'prod'));
    server.put('secrets', secret('unrelated', { other: 'y' }, 'prod'));
    server.put('persistentvolumeclaims', claim('data', { namespace: 'prod', volumeName: 'pv-data' }));
    server.put('persistentvolumes', csiPersistentVolume('pv-data', { claimNamespace: 'prod', claimName: 'data' }));
    server.put('pods', pod('api', 'node-a', {
      namespace: 'prod',
      volumes: [
        { name: 'settings', configMap: { name: 'settings' } },
        { name: 'creds', secret: { secretName: 'creds' } },
        { name: 'bundle', projected: { sources: [{ configMap: { name: 'ca' } }, { secret: { name: 'token' } }] } },
        { name: 'data', persistentVolumeClaim: { claimName: 'data' } },
      ],
    }));
    const { source } = newSource(server);
    await startSynced(source);

    expect(source.getConfigMap('prod', 'settings')?.data).toEqual({ mode: 'fast' });
    expect(source.getConfigMap('prod', 'ca')?.data).toEqual({ 'ca.crt': 'PEM' });
    expect(source.getSecret('prod', 'creds')?.type).toBe('Opaque');
    expect(source.getSecret('prod', 'token')).toBeDefined();
    expect(source.getPersistentVolumeClaim('prod', 'data')?.spec.volumeName).toBe('pv-data');
    expect(source.getPersistentVolume('pv-data')?.spec.csi?.volumeHandle).toBe('handle-pv-data');
    // A secret and a config map of the same name are different objects.
    expect(source.getSecret('prod', 'settings')).toBeUndefined();
    expect(source.getSecret('prod', 'unrelated')).toBeUndefined();
    expect(server.requests({ resource: 'secrets', name: 'unrelated' })).toEqual([]);
    expect(server.requests({ resource: 'secrets', verb: 'list' })).toEqual([]);
    expect(server.requests({ resource: 'secrets', verb: 'watch' })).toEqual([]);
  });

  it('sees a changed config map after the cache lifetime and publishes it as an object change, but not its first GET', async () => {
    const server = await startServer();
    server.put('configmaps', configMap('settings', { mode: 'fast' }));
    server.put('pods', pod('web', 'node-a', { volumes: [{ name: 'settings', configMap: { name: 'settings' } }] }));
    const { source, changes } = newSource(server, { referencedObjectTtlMs: 100 });
    await startSynced(source);
    // Synced means the first GET was answered; its SetUps waited for it, so nothing is to be redone.
    expect(source.getConfigMap('default', 'settings')?.data).toEqual({ mode: 'fast' });
    expect(changes.filter((c) => c.objectsChanged)).toEqual([]);
    const before = changes.length;

    server.put('configmaps', configMap('settings', { mode: 'safe' }));
    await waitFor(() => source.getConfigMap('default', 'settings')?.data?.mode === 'safe', { what: 'new config map content' });
    await waitFor(() => changes.slice(before).some((c) => c.objectsChanged), { what: 'object change published' });
  });

  it('fetches a pending claim again until it is bound, then the CSI secret of its volume', async () => {
    const server = await startServer();
    server.put('persistentvolumeclaims', claim('data'));
    server.put('secrets', secret('publish-creds', { key: 'v' }, 'storage'));
    server.put('pods', pod('db', 'node-a', { volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }] }));
    const { source } = newSource(server);
    await startSynced(source);
    expect(source.getPersistentVolumeClaim('default', 'data')?.status?.phase).toBe('Pending');

    server.put('persistentvolumes', csiPersistentVolume('pv-1', { claimName: 'data', nodePublishSecret: { name: 'publish-creds', namespace: 'storage' } }));
    server.put('persistentvolumeclaims', claim('data', { volumeName: 'pv-1' }));

    await waitFor(() => source.getPersistentVolumeClaim('default', 'data')?.status?.phase === 'Bound', { what: 'claim bound' });
    await waitFor(() => source.getSecret('storage', 'publish-creds') !== undefined, { what: 'CSI publish secret fetched' });
  });

  it('drops referenced objects once no pod references them', async () => {
    const server = await startServer();
    server.put('configmaps', configMap('settings', { mode: 'fast' }));
    server.put('pods', pod('web', 'node-a', { volumes: [{ name: 'settings', configMap: { name: 'settings' } }] }));
    const { source } = newSource(server);
    await startSynced(source);
    expect(source.getConfigMap('default', 'settings')).toBeDefined();

    server.remove('pods', 'default', 'web');
    await waitFor(() => source.listPods().length === 0, { what: 'pod removed' });
    expect(source.getConfigMap('default', 'settings')).toBeUndefined();
  });

  it('reports a failing claim GET as a source error while the pod and its other volumes stay', async () => {
    const server = await startServer();
    server.put('persistentvolumeclaims', claim('data', { volumeName: 'pv-1' }));
    server.put('configmaps', configMap('settings', { mode: 'fast' }));
    server.put('pods', pod('db', 'node-a', {
      volumes: [
        { name: 'data', persistentVolumeClaim: { claimName: 'data' } },
        { name: 'settings', configMap: { name: 'settings' } },
      ],
    }));
    const clearFailure = server.failRequests({ resource: 'persistentvolumeclaims', verb: 'get', status: 403, message: 'persistentvolumeclaims "data" is forbidden' });
    const { source } = newSource(server);
    await startSynced(source);

    expect(podNames(source)).toEqual(['db']);
    expect(source.getConfigMap('default', 'settings')).toBeDefined();
    expect(source.getPersistentVolumeClaim('default', 'data')).toBeUndefined();
    const [error] = source.sourceErrors();
    expect(error?.file).toBe('/api/v1/namespaces/default/persistentvolumeclaims/data');
    expect(error?.message).toContain('HTTP 403 Forbidden: persistentvolumeclaims "data" is forbidden');

    clearFailure();
    await waitFor(() => source.getPersistentVolumeClaim('default', 'data') !== undefined, { what: 'claim fetched after recovery' });
    expect(source.sourceErrors()).toEqual([]);
  });

  it('keeps the last fetched claim when a later GET fails', async () => {
    const server = await startServer();
    server.put('persistentvolumeclaims', claim('data', { volumeName: 'pv-1' }));
    server.put('pods', pod('db', 'node-a', { volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }] }));
    const { source } = newSource(server, { referencedObjectTtlMs: 50 });
    await startSynced(source);

    server.failRequests({ resource: 'persistentvolumeclaims', verb: 'get', status: 500 });
    await waitFor(() => source.sourceErrors().length === 1, { what: 'GET failure reported' });
    expect(source.sourceErrors()[0]?.message).toContain('keeping the last fetched version');
    expect(source.getPersistentVolumeClaim('default', 'data')?.spec.volumeName).toBe('pv-1');
    expect(podNames(source)).toEqual(['db']);
  });

  it('fetches a claim on demand, answering undefined for a missing one', async () => {
    const server = await startServer();
    server.put('persistentvolumeclaims', claim('data', { volumeName: 'pv-1' }));
    const { source } = newSource(server);
    await startSynced(source);

    expect((await source.fetchPersistentVolumeClaim('default', 'data'))?.spec.volumeName).toBe('pv-1');
    expect(await source.fetchPersistentVolumeClaim('default', 'missing')).toBeUndefined();
    server.failRequests({ resource: 'persistentvolumeclaims', verb: 'get', status: 500 });
    await expect(source.fetchPersistentVolumeClaim('default', 'data')).rejects.toThrow(/HTTP 500/);
  });
});

describe('KubeSource claimsOnly (observe mode)', () => {
  it('fetches the claims pods reference but never their ConfigMaps and Secrets', async () => {
    const server = await startServer();
    server.put('persistentvolumeclaims', claim('data', { volumeName: 'pv-data' }));
    server.put('configmaps', configMap('settings', { a: '1' }));
    server.put('secrets', secret('creds', { b: 'Mg==' }));
    server.put('pods', pod('web', 'node-a', {
      volumes: [
        { name: 'data', persistentVolumeClaim: { claimName: 'data' } },
        { name: 'settings', configMap: { name: 'settings' } },
        { name: 'creds', secret: { secretName: 'creds' } },
      ],
    }));
    const { source } = newSource(server, { claimsOnly: true });
    await startSynced(source);
    expect(source.getPersistentVolumeClaim('default', 'data')?.spec.volumeName).toBe('pv-data');
    expect(source.getConfigMap('default', 'settings')).toBeUndefined();
    expect(source.getSecret('default', 'creds')).toBeUndefined();
    expect(server.requests({ resource: 'configmaps' })).toEqual([]);
    expect(server.requests({ resource: 'secrets' })).toEqual([]);
    expect(source.sourceErrors()).toEqual([]);
  });
});

describe('KubeSource watch failures', () => {
  it.each<{ style: GoneStyle; title: string }>([
    { style: 'event', title: 'an ERROR event with code 410' },
    { style: 'http', title: 'an HTTP 410 answer' },
  ])('relists after $title without losing pods or repeating unchanged ones', async ({ style }) => {
    const server = await startServer();
    for (const name of ['keep', 'gone', 'changed']) server.put('pods', pod(name, 'node-a'));
    const { source, changes } = newSource(server);
    await startSynced(source);
    const [keep, gone, changed] = ['keep', 'gone', 'changed'].map((name) => uidOf(server, name));
    const listsBefore = server.requests({ resource: 'pods', verb: 'list' }).length;
    const watchesBefore = server.requests({ resource: 'pods', verb: 'watch' }).length;

    // Cut the watch and hold the re-watch while the store moves on and forgets its history.
    const held = server.holdRequests({ resource: 'pods', verb: 'watch' });
    server.dropWatches('pods');
    await waitFor(() => server.requests({ resource: 'pods', verb: 'watch' }).length > watchesBefore, { what: 're-watch sent' });
    server.remove('pods', 'default', 'gone');
    server.put('pods', pod('changed', 'node-a', { labels: { v: '2' } }));
    server.put('pods', pod('added', 'node-a'));
    server.compact();
    server.failNextWatch('pods', style);
    const changesBefore = changes.length;
    held.release();

    await waitFor(() => podNames(source).join() === 'added,changed,keep', { what: 'relisted pods' });
    const after = changes.slice(changesBefore);
    expect(after.flatMap((c) => c.pods.added)).toEqual([uidOf(server, 'added')]);
    expect(after.flatMap((c) => c.pods.removed)).toEqual([gone]);
    expect(after.flatMap((c) => c.pods.updated)).toEqual([changed]);
    expect(after.flatMap((c) => [...c.pods.added, ...c.pods.updated, ...c.pods.removed])).not.toContain(keep);
    expect(server.requests({ resource: 'pods', verb: 'list' }).length).toBe(listsBefore + 1);
    expect(source.sourceErrors()).toEqual([]);
  });

  it('gives up a LIST that does not answer in time and retries it', async () => {
    const server = await startServer();
    server.put('pods', pod('web', 'node-a'));
    const held = server.holdRequests({ resource: 'pods', verb: 'list' });
    const { source } = newSource(server, { requestTimeoutMs: 100 });

    await source.start();
    await waitFor(() => source.sourceErrors().some((e) => e.message.includes('timed out after 100 ms')), { what: 'LIST timeout reported' });
    await waitFor(() => server.requests({ resource: 'pods', verb: 'list' }).length >= 2, { what: 'LIST retried' });
    expect(source.isSynced()).toBe(false);

    held.release();
    await source.waitUntilSynced();
    expect(podNames(source)).toEqual(['web']);
    await waitFor(() => source.sourceErrors().length === 0, { what: 'errors cleared' });
  });

  it('counts a referenced GET that does not answer in time as answered for sync, and reports it', async () => {
    const server = await startServer();
    server.put('secrets', secret('db', { password: 'p' }));
    server.put('pods', pod('web', 'node-a', { volumes: [{ name: 'creds', secret: { secretName: 'db' } }] }));
    const held = server.holdRequests({ resource: 'secrets', verb: 'get' });
    const { source } = newSource(server, { requestTimeoutMs: 100 });

    await startSynced(source);
    expect(source.sourceErrors()).toEqual([
      {
        file: '/api/v1/namespaces/default/secrets/db',
        message: 'Secret default/db: GET failed: GET /api/v1/namespaces/default/secrets/db timed out after 100 ms (not available until a GET succeeds; retrying)',
      },
    ]);

    held.release();
    await waitFor(() => source.getSecret('default', 'db') !== undefined, { what: 'secret fetched' });
  });

  it('watches on from its last resourceVersion when the server ends a watch cleanly', async () => {
    const server = await startServer();
    server.put('pods', pod('web', 'node-a'));
    const { source } = newSource(server);
    await startSynced(source);
    const listsBefore = server.requests({ resource: 'pods', verb: 'list' }).length;

    server.dropWatches();
    server.put('pods', pod('web-2', 'node-a'));
    await waitFor(() => podNames(source).includes('web-2'), { what: 'web-2 listed' });
    expect(server.requests({ resource: 'pods', verb: 'list' }).length).toBe(listsBefore);
  });

  it('restarts its informers after the API server was down, keeping its pods meanwhile', async () => {
    const server = await startServer();
    server.put('pods', pod('web', 'node-a'));
    const { source, logs } = newSource(server);
    await startSynced(source);

    await server.stop();
    await waitFor(() => source.sourceErrors().some((e) => e.file === '/api/v1/pods?fieldSelector=spec.nodeName=node-a'), { what: 'pod informer failure reported' });
    expect(podNames(source)).toEqual(['web']);
    expect(source.sourceErrors().every((e) => e.message.includes('retrying'))).toBe(true);

    server.put('pods', pod('web-2', 'node-a'));
    await server.restart();
    await waitFor(() => podNames(source).includes('web-2'), { what: 'web-2 listed after restart' });
    await waitFor(() => source.sourceErrors().length === 0, { what: 'errors cleared' });
    expect(logs.some((l) => l.level === 'info' && l.msg.includes('watching again'))).toBe(true);
  });

  it('restarts an informer whose watch failed with a server error', async () => {
    const server = await startServer();
    server.put('pods', pod('web', 'node-a'));
    const { source } = newSource(server);
    const seenErrors: string[] = [];
    source.onChange((change) => {
      if (change.errorsChanged) seenErrors.push(...source.sourceErrors().map((e) => e.message));
    });
    await startSynced(source);
    const watchesBefore = server.requests({ resource: 'pods', verb: 'watch' }).length;

    server.failRequests({ resource: 'pods', verb: 'watch', status: 500, times: 2 });
    server.dropWatches('pods');
    // Two failed watches, then one that succeeds: three more watch requests.
    await waitFor(() => server.requests({ resource: 'pods', verb: 'watch' }).length >= watchesBefore + 3 && server.watchCount('pods') === 1, {
      what: 'watch re-established',
    });
    server.put('pods', pod('web-2', 'node-a'));
    await waitFor(() => podNames(source).includes('web-2'), { what: 'web-2 listed' });
    await waitFor(() => source.sourceErrors().length === 0, { what: 'errors cleared' });
    expect(seenErrors.some((m) => m.startsWith('pods on node node-a: watch failed: HTTP 500'))).toBe(true);
  });
});

describe('KubeSource node', () => {
  it('serves volumesAttached and the conditions of its own Node and publishes their changes but not heartbeats', async () => {
    const server = await startServer();
    server.put('nodes', node('node-a', [{ name: 'kubernetes.io/csi/csi.example.com^vol-1', devicePath: '' }]));
    server.put('nodes', node('node-b', [{ name: 'other', devicePath: '/dev/sdz' }]));
    const { source, changes } = newSource(server);
    await startSynced(source);
    expect(source.getAttachedVolumesFromNodeStatus()).toEqual(new Map([['kubernetes.io/csi/csi.example.com^vol-1', '']]));
    expect(source.getNode()?.metadata.name).toBe('node-a');
    const core = fakeKubeConfig({ server: server.url, token }).makeApiClient(CoreV1Api);
    const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
    const ready = (heartbeat: string) => ({ status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', lastHeartbeatTime: heartbeat, lastTransitionTime: '2026-11-30T08:00:00Z' }] } });
    const initial = changes.length;
    await core.patchNodeStatus({ name: 'node-a', body: ready('2026-11-30T08:00:00Z') }, mergePatch);
    await waitFor(() => changes.slice(initial).some((c) => c.nodeChanged), { what: 'the new condition published' });
    expect(source.getNode()?.status?.conditions).toEqual([{ type: 'Ready', status: 'True', reason: 'KubeletReady', lastTransitionTime: '2026-11-30T08:00:00Z' }]);
    const before = changes.length;

    await core.patchNodeStatus({ name: 'node-a', body: ready('2026-11-30T08:00:10Z') }, mergePatch);
    await core.patchNodeStatus({ name: 'node-a', body: { status: { volumesAttached: [{ name: 'vol-2', devicePath: '/dev/sdb' }] } } }, mergePatch);

    await waitFor(() => source.getAttachedVolumesFromNodeStatus()?.has('vol-2') === true, { what: 'new attachment seen' });
    expect(source.getAttachedVolumesFromNodeStatus()).toEqual(new Map([['vol-2', '/dev/sdb']]));
    expect(changes.slice(before).filter((c) => c.nodeChanged)).toHaveLength(1);
  });

  it('has no attachment information until its Node exists', async () => {
    const server = await startServer();
    const { source } = newSource(server);
    await startSynced(source);
    expect(source.getAttachedVolumesFromNodeStatus()).toBeNull();

    server.put('nodes', node('node-a', [{ name: 'vol-1', devicePath: '/dev/sdc' }]));
    await waitFor(() => source.getAttachedVolumesFromNodeStatus() !== null, { what: 'node seen' });
    expect(source.getAttachedVolumesFromNodeStatus()).toEqual(new Map([['vol-1', '/dev/sdc']]));
  });
});

describe('KubeSource lifecycle', () => {
  it('offers the read API of the manifest source, so the agent can use either', async () => {
    const server = await startServer();
    const { source } = newSource(server);
    // Compile-time check (tsc fails if a method is missing or incompatible, onChange included).
    const asManifest: Pick<
      ManifestSource,
      'listPods' | 'getPodByUID' | 'getPersistentVolume' | 'getPersistentVolumeClaim' | 'getConfigMap' | 'getSecret' | 'getCSIDriver' | 'sourceErrors' | 'onChange' | 'isSynced' | 'start' | 'stop' | 'resync'
    > = source;
    await asManifest.start();
    await source.waitUntilSynced();
    expect(asManifest.isSynced()).toBe(true);
  });

  it('serves CSIDrivers and publishes their changes', async () => {
    const server = await startServer();
    server.put('csidrivers', csiDriver('csi.example.com', true));
    const { source, changes } = newSource(server);
    await startSynced(source);
    expect(source.getCSIDriver('csi.example.com')?.spec.attachRequired).toBe(true);
    const before = changes.length;

    server.remove('csidrivers', undefined, 'csi.example.com');
    await waitFor(() => source.getCSIDriver('csi.example.com') === undefined, { what: 'driver removed' });
    expect(changes.slice(before).some((c) => c.objectsChanged)).toBe(true);
  });

  it('lists everything again and refetches referenced objects on resync', async () => {
    const server = await startServer();
    server.put('configmaps', configMap('settings', { mode: 'fast' }));
    server.put('pods', pod('web', 'node-a', { volumes: [{ name: 'settings', configMap: { name: 'settings' } }] }));
    const { source } = newSource(server);
    await startSynced(source);
    const count = () => ({
      pods: server.requests({ resource: 'pods', verb: 'list' }).length,
      nodes: server.requests({ resource: 'nodes', verb: 'list' }).length,
      pvs: server.requests({ resource: 'persistentvolumes', verb: 'list' }).length,
      drivers: server.requests({ resource: 'csidrivers', verb: 'list' }).length,
      configMaps: server.requests({ resource: 'configmaps', verb: 'get' }).length,
    });
    const before = count();

    await source.resync();

    expect(count()).toEqual({ pods: before.pods + 1, nodes: before.nodes + 1, pvs: before.pvs + 1, drivers: before.drivers + 1, configMaps: before.configMaps + 1 });
    expect(podNames(source)).toEqual(['web']);
  });

  it('closes its watches on stop and runs only once', async () => {
    const server = await startServer();
    const { source } = newSource(server);
    await startSynced(source);
    await waitFor(() => server.watchCount() === 4, { what: 'four watches open' });

    await source.stop();
    await waitFor(() => server.watchCount() === 0, { what: 'watches closed' });
    await expect(source.start()).rejects.toSatisfy(isKubeSourceStateError);
    expect(source.isSynced()).toBe(true);
  });

  it('opens no watch after stop, even when stopped during a reconnect delay', async () => {
    const server = await startServer();
    // A fake clock only to see the reconnect delay pending: nothing else in this test needs a timer.
    const clock = new FakeClock();
    const { source } = newSource(server, { clock });
    await startSynced(source);
    const podWatches = () => server.requests({ resource: 'pods', verb: 'watch' }).length;

    // A clean close re-watches at once; a second one without events in between waits first.
    server.dropWatches('pods');
    await waitFor(() => podWatches() === 2 && server.watchCount('pods') === 1, { what: 'first re-watch' });
    expect(clock.pendingTimers()).toBe(0);
    server.dropWatches('pods');
    await waitFor(() => clock.pendingTimers() === 1, { what: 'reconnect delay pending' });
    await source.stop();

    // Round trips after stop: a watch opened by the stopped source would have been sent before them.
    const core = fakeKubeConfig({ server: server.url, token }).makeApiClient(CoreV1Api);
    await core.listNode();
    await core.listNode();
    expect(podWatches()).toBe(2);
    expect(server.watchCount()).toBe(0);
  });

  it('rejects a wait for sync that stop cuts short', async () => {
    const server = await startServer();
    server.holdRequests({ resource: 'pods', verb: 'list' });
    const { source } = newSource(server);
    void source.start();
    const synced = source.waitUntilSynced();

    await source.stop();
    await expect(synced).rejects.toSatisfy(isKubeSourceStateError);
  });
});

describe('KubeSource with persistentVolumes: get (a node identity)', () => {
  it('syncs as system:node without listing PVs, GETs the PV of each bound claim and the CSI secrets it names', async () => {
    const server = await startServer({ nodeAuthorizer: 'node-a' });
    server.put('nodes', node('node-a'));
    server.put('secrets', secret('publish-creds', { key: 'v' }, 'storage'));
    server.put('persistentvolumeclaims', claim('data', { volumeName: 'pv-1' }));
    server.put('persistentvolumes', csiPersistentVolume('pv-1', { claimName: 'data', nodePublishSecret: { name: 'publish-creds', namespace: 'storage' } }));
    server.put('persistentvolumes', csiPersistentVolume('pv-unrelated'));
    server.put('pods', pod('db', 'node-a', { volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }] }));
    const { source } = newSource(server, { persistentVolumes: 'get' });

    await startSynced(source);
    await waitFor(() => source.getSecret('storage', 'publish-creds') !== undefined, { what: 'CSI publish secret fetched' });

    expect(source.watchesPersistentVolumes()).toBe(false);
    expect(source.getPersistentVolume('pv-1')?.spec.csi?.volumeHandle).toBe('handle-pv-1');
    expect(source.listPersistentVolumes().map((pv) => pv.metadata.name)).toEqual(['pv-1']);
    expect(source.getPersistentVolume('pv-unrelated')).toBeUndefined();
    expect(server.requests({ resource: 'persistentvolumes', verb: 'list' })).toEqual([]);
    expect(server.requests({ resource: 'persistentvolumes', verb: 'watch' })).toEqual([]);
    expect(source.sourceErrors()).toEqual([]);
  });

  it('answers fetchPersistentVolume with a fresh GET, undefined for a missing PV, and rejects on an API error', async () => {
    const server = await startServer();
    server.put('persistentvolumes', csiPersistentVolume('pv-1'));
    const { source } = newSource(server, { persistentVolumes: 'get' });
    await startSynced(source);

    expect((await source.fetchPersistentVolume('pv-1'))?.spec.csi?.volumeHandle).toBe('handle-pv-1');
    server.put('persistentvolumes', { ...csiPersistentVolume('pv-1'), spec: { ...csiPersistentVolume('pv-1').spec, capacity: { storage: '2Gi' } } });
    expect((await source.fetchPersistentVolume('pv-1'))?.spec.capacity?.storage).toBe('2Gi');
    expect(await source.fetchPersistentVolume('missing')).toBeUndefined();
    server.failRequests({ resource: 'persistentvolumes', verb: 'get', status: 500, times: 1 });
    await expect(source.fetchPersistentVolume('pv-1')).rejects.toThrow(/HTTP 500|500/);
  });
});
