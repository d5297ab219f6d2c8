/**
 * Integration tests of the node agent PROCESS with the Kubernetes API source in managed mode
 * (issue "Kubernetes", requirements 1, 2 and 7): the real agent (`agent/main.ts --kubeconfig`)
 * talks through the real `@kubernetes/client-node` to the Kubernetes-protocol test server
 * (lib/sources/kube/testing/fake-apiserver.ts, real HTTP) and real CSI over gRPC to the real
 * csi-loop driver. No attach/detach controller can run here, so the test plays it
 * (TestAttachDetachController): it attaches only after the agent reported the volume in
 * `node.status.volumesInUse`, exactly the handshake a real controller relies on.
 *
 * Mode: privileged csi-loop (loop devices, ext4) as root in a private mount namespace, else
 * unprivileged (symlinks); chosen by the run, never by skipping.
 */
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Snapshot } from '../lib/api/snapshot.ts';
import { cleanUpTempDir, makeTempDir, mountMode, realMountsAllowed } from '../lib/mount-utils/testing/mount-test-env.ts';
import { FakeApiServer, TOKEN_REQUEST_RESOURCE } from '../lib/sources/kube/testing/fake-apiserver.ts';
import { writeKubeconfigFile } from '../lib/sources/kube/testing/kubeconfig-file.ts';
import { CsiLoopProcess } from '../lib/volume/csi/testing/csi-loop-process.ts';
import { AgentProcess, mountsBelow, standInMounter } from './node/testing/agent-process.ts';
import { waitFor } from '../lib/clock/testing/wait-for.ts';
import { csiClaimObjects, csiDriverObject, csiLoopDriverName, csiUniqueVolumeName } from './node/testing/csi-manifests.ts';
import { TestAttachDetachController } from './node/testing/test-attach-detach-controller.ts';

const NODE = 'node-a';
const MOUNT_DEADLINE_MS = 20_000;

interface Env {
  base: string;
  rootDir: string;
  api: FakeApiServer;
  driver: CsiLoopProcess;
  agent: AgentProcess;
  adc: TestAttachDetachController;
}

let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function startEnv(extraArgs: readonly string[] = [], opts: { registerNode?: boolean } = {}): Promise<Env> {
  const base = await makeTempDir('volumescope-kube-');
  const rootDir = join(base, 'root');
  await mkdir(join(base, 'manifests'), { recursive: true });
  const driver = await CsiLoopProcess.start({ dir: join(base, 'driver'), nodeId: NODE });
  cleanups.push(async () => {
    await driver.stop();
    await driver.forceCleanUp(base);
    await cleanUpTempDir(base, realMountsAllowed ? undefined : standInMounter(rootDir));
  });
  // --register-node: the agent is the node's kubelet (identity system:node:<node>), and creates its Node.
  const registering = opts.registerNode === true;
  const api = await FakeApiServer.start({ token: 'agent-sa-token', ...(registering ? { nodeAuthorizer: NODE } : {}) });
  cleanups.push(() => api.close());
  if (!registering) api.put('nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: NODE }, status: { volumesAttached: [], volumesInUse: [] } });
  api.put('csidrivers', csiDriverObject());
  const kubeconfig = await writeKubeconfigFile(join(base, 'kubeconfig'), { server: api.url, token: 'agent-sa-token' });
  const agent = await AgentProcess.start({
    rootDir,
    manifestDir: join(base, 'manifests'),
    nodeName: NODE,
    extraArgs: ['--kubeconfig', kubeconfig, '--csi-driver', `${csiLoopDriverName}=${driver.socketPath}`, '--csi-timeout', '2s', '--node-status-update-frequency', '1s', ...(registering ? ['--register-node'] : []), ...extraArgs],
  });
  cleanups.push(async () => {
    await agent.stop('SIGKILL');
  });
  const adc = new TestAttachDetachController({ api, nodeName: NODE, nodeId: NODE, driverName: csiLoopDriverName, driverEndpoint: driver.socketPath });
  cleanups.push(() => {
    adc.close();
    return Promise.resolve();
  });
  await agent.waitForSnapshot('the agent is synced with the API server and the CSI driver is registered', (s) => s.statesSynced && s.drivers.some((d) => d.registered), MOUNT_DEADLINE_MS);
  return { base, rootDir, api, driver, agent, adc };
}

/** PV `pv-<handle>` and its bound claim `claim-<handle>` in the API server. */
function addStorage(env: Env, handle: string): void {
  for (const object of csiClaimObjects({ handle })) env.api.put(object['kind'] === 'PersistentVolume' ? 'persistentvolumes' : 'persistentvolumeclaims', object);
}

/** A pod on this node with the claims of `handles` (volumes `data-<i>`) and optionally an emptyDir `scratch`. */
function addPod(env: Env, name: string, handles: readonly string[], opts: { emptyDir?: boolean } = {}): string {
  const uid = `${name}-uid`;
  const volumes: Record<string, unknown>[] = handles.map((h, i) => ({ name: `data-${String(i)}`, persistentVolumeClaim: { claimName: `claim-${h}` } }));
  if (opts.emptyDir === true) volumes.push({ name: 'scratch', emptyDir: {} });
  env.api.put('pods', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', uid },
    spec: {
      nodeName: NODE,
      containers: [{ name: 'app', image: 'busybox', volumeMounts: volumes.map((v) => ({ name: v['name'], mountPath: `/${String(v['name'])}` })) }],
      volumes,
    },
    status: { phase: 'Pending' },
  });
  return uid;
}

function podMount(s: Snapshot, volume: string, uid: string): string | undefined {
  return s.actual.volumes.find((v) => v.uniqueVolumeName === volume)?.pods.find((p) => p.podUid === uid)?.mountState;
}

function emptyDirMounted(s: Snapshot, uid: string): boolean {
  return s.actual.volumes.some((v) => v.pluginName === 'kubernetes.io/empty-dir' && v.pods.some((p) => p.podUid === uid && p.mountState === 'mounted'));
}

function waitMounted(env: Env, handle: string, uid: string): Promise<Snapshot> {
  return env.agent.waitForSnapshot(`the CSI volume ${handle} is mounted for ${uid}`, (s) => podMount(s, csiUniqueVolumeName(handle), uid) === 'mounted' && s, MOUNT_DEADLINE_MS);
}

function desiredVolume(s: Snapshot, uid: string, volume: string): Snapshot['desired']['pods'][number]['volumes'][number] | undefined {
  return s.desired.pods.find((p) => p.uid === uid)?.volumes.find((v) => v.uniqueVolumeName === volume);
}

/**
 * Resolves after `n` more node-status reports (the agent re-asserts volumesInUse every
 * `--node-status-update-frequency` = 1 s here): a condition that marks elapsed agent time without sleeping.
 */
async function waitForStatusReports(env: Env, n: number): Promise<void> {
  const count = (): number => env.api.requests({ resource: 'nodes', verb: 'patch' }).filter((r) => r.subresource === 'status').length;
  const target = count() + n;
  await waitFor(() => count() >= target, { what: `${String(n)} more node status reports`, timeoutMs: MOUNT_DEADLINE_MS });
}

/** Names of the driver calls for `handle`, in order. */
async function driverCalls(env: Env, handle: string): Promise<string[]> {
  return (await env.driver.calls()).filter((c) => c.volumeId === handle).map((c) => c.method);
}

describe(`node agent with the Kubernetes API source, managed mode (${mountMode})`, { timeout: 60_000 }, () => {
  it('as a registered node (system:node, --register-node): creates its Node Ready, its Lease and CSINode, GETs PVs, and deletes a deleted pod once unmounted', async () => {
    const env = await startEnv([], { registerNode: true });
    const nodeObject = await waitFor(() => env.api.get('nodes', undefined, NODE), { what: 'the Node is created', timeoutMs: MOUNT_DEADLINE_MS });
    expect((nodeObject.metadata as { annotations?: Record<string, string> }).annotations).toMatchObject({ 'volumes.kubernetes.io/controller-managed-attach-detach': 'true', 'csi.volume.kubernetes.io/nodeid': `{"${csiLoopDriverName}":"${NODE}"}` });
    const ready = (): unknown => (env.api.get('nodes', undefined, NODE)?.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions?.find((c) => c.type === 'Ready')?.status;
    await waitFor(() => ready() === 'True', { what: 'the node is Ready', timeoutMs: MOUNT_DEADLINE_MS });
    // The snapshot carries the Node's conditions as the node informer sees them.
    await env.agent.waitForSnapshot('the snapshot has the Node conditions', (s) => s.nodeConditions?.find((c) => c.type === 'Ready')?.status === 'True', MOUNT_DEADLINE_MS);
    await waitFor(() => env.api.get('leases', 'kube-node-lease', NODE), { what: 'the node lease', timeoutMs: MOUNT_DEADLINE_MS });
    expect((env.api.get('csinodes', undefined, NODE)?.spec as { drivers?: unknown[] }).drivers).toEqual([{ name: csiLoopDriverName, nodeID: NODE, topologyKeys: [] }]);

    addStorage(env, 'vol-1');
    const uid = addPod(env, 'web', ['vol-1']);
    await waitFor(() => env.adc.volumesInUse().includes(csiUniqueVolumeName('vol-1')), { what: 'vol-1 reported in use', timeoutMs: MOUNT_DEADLINE_MS });
    await env.adc.attach('vol-1');
    await waitMounted(env, 'vol-1', uid);

    // kubectl delete pod: graceful (a deletionTimestamp); the agent unmounts, then deletes it with grace 0.
    const core = env.api.url;
    const deleted = await fetch(`${core}/api/v1/namespaces/default/pods/web`, { method: 'DELETE', headers: { authorization: 'Bearer agent-sa-token' } });
    expect(deleted.status).toBe(200);
    expect(env.api.get('pods', 'default', 'web')?.metadata).toHaveProperty('deletionTimestamp');
    await waitFor(() => env.api.get('pods', 'default', 'web') === undefined, { what: 'the pod is deleted by the agent', timeoutMs: MOUNT_DEADLINE_MS });
    const finalDelete = env.api.requests({ resource: 'pods', verb: 'delete' }).at(-1);
    expect(finalDelete?.body).toMatchObject({ gracePeriodSeconds: 0, preconditions: { uid } });
    // The pod's own volume was unpublished before the delete (PodResourcesAreReclaimed); the device follows.
    expect((await driverCalls(env, 'vol-1')).slice(0, 4)).toEqual(['ControllerPublishVolume', 'NodeStageVolume', 'NodePublishVolume', 'NodeUnpublishVolume']);
    await waitFor(async () => (await driverCalls(env, 'vol-1')).includes('NodeUnstageVolume'), { what: 'the device is unstaged', timeoutMs: MOUNT_DEADLINE_MS });
    // Every request was one a kubelet may make: no 403 or 422; a 404 only for a GET of what does not exist yet (Lease, CSINode).
    expect(env.api.requests({ resource: 'persistentvolumes', verb: 'get' }).length).toBeGreaterThan(0);
    expect(env.api.requests().filter((r) => r.status === 403 || r.status === 422 || (r.status === 404 && r.verb !== 'get')).map((r) => `${r.method} ${r.path} ${String(r.status)}`)).toEqual([]);
  });

  it('mounts a pod scheduled to the node only after reporting the volume in node.status.volumesInUse and seeing it in volumesAttached', async () => {
    const env = await startEnv();
    addStorage(env, 'vol-1');
    const uid = addPod(env, 'web', ['vol-1']);
    const name = csiUniqueVolumeName('vol-1');

    // The handshake: reported in use first (a strategic merge patch of the node's status)…
    await waitFor(() => env.adc.volumesInUse().includes(name), { what: 'the agent reports the volume in node.status.volumesInUse', timeoutMs: MOUNT_DEADLINE_MS });
    const patches = env.api.requests({ resource: 'nodes', verb: 'patch' }).filter((r) => r.subresource === 'status');
    expect(patches.every((p) => p.contentType === 'application/strategic-merge-patch+json')).toBe(true);
    expect(patches.map((p) => p.body)).toContainEqual({ status: { volumesInUse: [name] } });
    // …and nothing is staged or published while the controller has not attached it.
    await env.agent.waitForSnapshot('the desired volume is marked reported in use', (s) => desiredVolume(s, uid, name)?.reportedInUse === true, MOUNT_DEADLINE_MS);
    await waitForStatusReports(env, 3);
    expect(podMount(await env.agent.snapshot(), name, uid)).toBeUndefined();
    expect(await driverCalls(env, 'vol-1')).toEqual([]);

    // The first NodePublishVolume fails: the FailedMount event reaches the API server (kubectl describe pod).
    await env.driver.fault('NodePublishVolume', { code: 'INTERNAL', message: 'publish refused by the test', failNext: 1 });
    await env.adc.attach('vol-1');
    const mounted = await waitMounted(env, 'vol-1', uid);
    expect(mounted.actual.volumes.find((v) => v.uniqueVolumeName === name)).toMatchObject({ attachState: 'attached', deviceMountState: 'mounted' });
    // The controller published; the agent staged and published, and never called ControllerPublish itself.
    expect(await driverCalls(env, 'vol-1')).toEqual(['ControllerPublishVolume', 'NodeStageVolume', 'NodePublishVolume', 'NodePublishVolume']);
    const event = await waitFor(() => env.api.events('default').find((e) => e['reason'] === 'FailedMount'), { what: 'the FailedMount event is in the API', timeoutMs: MOUNT_DEADLINE_MS });
    expect(event).toMatchObject({
      type: 'Warning',
      involvedObject: { kind: 'Pod', namespace: 'default', name: 'web', uid },
      source: { component: 'volumescope-agent', host: NODE },
    });
    expect(event['message']).toEqual(expect.stringContaining('publish refused by the test'));

    // The pod goes: unpublished and unstaged, and only then is it dropped from volumesInUse.
    env.api.remove('pods', 'default', 'web');
    await waitFor(() => !env.adc.volumesInUse().includes(name), { what: 'the volume leaves node.status.volumesInUse', timeoutMs: MOUNT_DEADLINE_MS });
    expect(await driverCalls(env, 'vol-1')).toEqual(['ControllerPublishVolume', 'NodeStageVolume', 'NodePublishVolume', 'NodePublishVolume', 'NodeUnpublishVolume', 'NodeUnstageVolume']);
    await env.agent.waitForSnapshot('the pod directory is cleaned', (s) => s.actual.volumes.length === 0, MOUNT_DEADLINE_MS);
    expect(await mountsBelow(env.rootDir)).toEqual([]);
  });

  it('starts no new mount for a volume missing from volumesAttached, and unmounts nothing already running when a volume is taken out of it', async () => {
    const env = await startEnv();
    addStorage(env, 'vol-1');
    addStorage(env, 'vol-2');
    const web = addPod(env, 'web', ['vol-1']);
    await waitFor(() => env.adc.volumesInUse().includes(csiUniqueVolumeName('vol-1')), { what: 'vol-1 reported in use', timeoutMs: MOUNT_DEADLINE_MS });
    await env.adc.attach('vol-1');
    await waitMounted(env, 'vol-1', web);

    // The controller drops vol-1 from the node status; a second pod wants vol-2, reported but never attached.
    env.adc.removeFromNodeStatus('vol-1');
    const db = addPod(env, 'db', ['vol-2']);
    await waitFor(() => env.adc.volumesInUse().includes(csiUniqueVolumeName('vol-2')), { what: 'vol-2 reported in use', timeoutMs: MOUNT_DEADLINE_MS });
    await env.agent.waitForSnapshot('vol-2 is desired and reported in use', (snap) => desiredVolume(snap, db, csiUniqueVolumeName('vol-2'))?.reportedInUse === true, MOUNT_DEADLINE_MS);
    // Three periodic status reports later (seconds of 100 ms reconciler passes): vol-1 is still mounted, vol-2 was never staged.
    await waitForStatusReports(env, 3);
    const later = await env.agent.snapshot();
    expect(podMount(later, csiUniqueVolumeName('vol-2'), db)).toBeUndefined();
    expect(podMount(later, csiUniqueVolumeName('vol-1'), web)).toBe('mounted');
    expect(await driverCalls(env, 'vol-1')).toEqual(['ControllerPublishVolume', 'NodeStageVolume', 'NodePublishVolume']);
    expect(await driverCalls(env, 'vol-2')).toEqual([]);
  });

  it('keeps the other volumes working and unmounts nothing while GETs of a claim fail (kubernetes#120150)', async () => {
    const env = await startEnv();
    addStorage(env, 'vol-1');
    const web = addPod(env, 'web', ['vol-1'], { emptyDir: true });
    await waitFor(() => env.adc.volumesInUse().includes(csiUniqueVolumeName('vol-1')), { what: 'vol-1 reported in use', timeoutMs: MOUNT_DEADLINE_MS });
    await env.adc.attach('vol-1');
    await waitMounted(env, 'vol-1', web);

    const restore = env.api.failRequests({ resource: 'persistentvolumeclaims', verb: 'get', status: 500, message: 'etcdserver: request timed out' });
    // The pod is updated (the agent processes it again and GETs its claim, which fails), and a new pod arrives.
    const updated = env.api.get('pods', 'default', 'web');
    env.api.put('pods', { ...updated, metadata: { ...(updated?.['metadata'] as object), labels: { touched: 'yes' } } });
    addStorage(env, 'vol-3');
    const api = addPod(env, 'api', ['vol-3'], { emptyDir: true });

    const s = await env.agent.waitForSnapshot(
      "the new pod's emptyDir is mounted and its claim reports the API error",
      (snap) => emptyDirMounted(snap, api) && (snap.podErrors[api] ?? []).some((e) => e.includes('etcdserver: request timed out')) && snap,
      MOUNT_DEADLINE_MS,
    );
    expect(podMount(s, csiUniqueVolumeName('vol-1'), web)).toBe('mounted');
    expect(emptyDirMounted(s, web)).toBe(true);
    expect(podMount(s, csiUniqueVolumeName('vol-3'), api)).toBeUndefined();
    expect(await driverCalls(env, 'vol-1')).toEqual(['ControllerPublishVolume', 'NodeStageVolume', 'NodePublishVolume']);

    // The API recovers: vol-3 is reported, attached and mounted; vol-1 was never touched.
    restore();
    await waitFor(() => env.adc.volumesInUse().includes(csiUniqueVolumeName('vol-3')), { what: 'vol-3 reported in use', timeoutMs: MOUNT_DEADLINE_MS });
    await env.adc.attach('vol-3');
    await waitMounted(env, 'vol-3', api);
    expect(await driverCalls(env, 'vol-1')).toEqual(['ControllerPublishVolume', 'NodeStageVolume', 'NodePublishVolume']);
  });

  it.each([
    {
      name: '500',
      message: 'etcdserver: request timed out',
      fault: (api: FakeApiServer) => api.failRequests({ resource: 'persistentvolumeclaims', verb: 'get', status: 500, message: 'etcdserver: request timed out' }),
    },
    {
      name: '403',
      message: 'persistentvolumeclaims "claim-vol-1" is forbidden',
      fault: (api: FakeApiServer) =>
        api.failRequests({ resource: 'persistentvolumeclaims', verb: 'get', status: 403, message: 'persistentvolumeclaims "claim-vol-1" is forbidden: User "system:node:node-a" cannot get resource "persistentvolumeclaims"' }),
    },
    {
      name: 'a timeout (no answer within --kube-request-timeout)',
      message: 'timed out after 1000 ms',
      fault: (api: FakeApiServer) => api.holdRequests({ resource: 'persistentvolumeclaims', verb: 'get' }).release,
    },
  ])(
    'kill -9 and restart while claim GETs fail with $name: the volume stays mounted (uncertain, with the reason) and is confirmed once the GET succeeds (kubernetes#120150)',
    async ({ message, fault }) => {
      // Arrange: web's CSI volume is staged and published.
      const env = await startEnv(['--kube-request-timeout', '1s']);
      addStorage(env, 'vol-1');
      const web = addPod(env, 'web', ['vol-1']);
      const name = csiUniqueVolumeName('vol-1');
      await waitFor(() => env.adc.volumesInUse().includes(name), { what: 'vol-1 reported in use', timeoutMs: MOUNT_DEADLINE_MS });
      await env.adc.attach('vol-1');
      await waitMounted(env, 'vol-1', web);
      const publishDir = join(env.rootDir, 'pods', web, 'volumes', 'kubernetes.io~csi', 'pv-vol-1', 'mount');
      const mountPoints = async (): Promise<string[]> => (await mountsBelow(env.rootDir)).map((m) => m.mountPoint);
      expect(await mountPoints()).toContain(publishDir);

      // Act: kill -9; every claim GET fails from now on; the agent restarts.
      expect(await env.agent.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
      const restore = fault(env.api);
      const callsBefore = (await driverCalls(env, 'vol-1')).length;
      const restarted = await AgentProcess.start(env.agent.args);
      cleanups.push(async () => {
        await restarted.stop('SIGKILL');
      });

      // Assert: the reconstructed mount is kept, uncertain, and every view says why.
      const kept = await restarted.waitForSnapshot(
        'the reconstructed volume is kept with the reason',
        (s) => (s.reconstruction.volumes.find((v) => v.podUid === web)?.keptBecause?.includes(message) ?? false) && s.statesSynced && s,
        MOUNT_DEADLINE_MS,
      );
      expect(kept.reconstruction.volumes.find((v) => v.podUid === web)).toMatchObject({ outcome: 'reconstructed', volumeName: 'pv-vol-1' });
      expect(kept.reconstruction.volumes.find((v) => v.podUid === web)?.keptBecause).toMatch(/^data-0: error processing PVC default\/claim-vol-1: failed to fetch PVC from API server: /);
      expect((kept.podErrors[web] ?? []).join('\n')).toContain(message);
      expect(podMount(kept, name, web)).toBe('uncertain');
      // Seconds of reconciler passes after the populator's first full loop (which allows unmounts):
      // three node status reports later, nothing was unpublished.
      await waitFor(() => restarted.logs.some((l) => l.msg === 'Finished populating initial desired state of world'), { what: 'the populator finished its initial loop', timeoutMs: MOUNT_DEADLINE_MS });
      await waitForStatusReports(env, 3);
      expect(podMount(await restarted.snapshot(), name, web)).toBe('uncertain');
      expect((await driverCalls(env, 'vol-1')).slice(callsBefore)).not.toContain('NodeUnpublishVolume');
      expect(await mountPoints()).toContain(publishDir);
      expect(restarted.logs.some((l) => /UnmountVolume|TearDown/.test(l.msg))).toBe(false);

      // Act: the API answers again.
      restore();

      // Assert: confirmed mounted by a normal mount, the same mount point, never unpublished.
      const confirmed = await restarted.waitForSnapshot(
        'the reconstructed volume is confirmed mounted',
        (s) => s.reconstruction.volumes.find((v) => v.podUid === web)?.outcome === 'confirmed-mounted' && s,
        MOUNT_DEADLINE_MS,
      );
      expect(podMount(confirmed, name, web)).toBe('mounted');
      expect(confirmed.reconstruction.volumes.find((v) => v.podUid === web)?.keptBecause).toBeUndefined();
      expect(confirmed.podErrors[web]).toBeUndefined();
      expect((await driverCalls(env, 'vol-1')).slice(callsBefore)).not.toContain('NodeUnpublishVolume');
      expect(await mountPoints()).toContain(publishDir);
    },
  );

  it('as a registered node: projected service account tokens (and kube-api-access) come from the TokenRequest API, bound to the pod', async () => {
    const env = await startEnv([], { registerNode: true });
    env.api.put('configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kube-root-ca.crt', namespace: 'default' }, data: { 'ca.crt': 'CA' } });
    const uid = 'tokens-uid';
    const volumes = [
      { name: 'bundle', projected: { sources: [{ serviceAccountToken: { audience: 'vault', expirationSeconds: 3600, path: 'vault-token' } }] } },
      {
        name: 'kube-api-access-x1',
        projected: {
          defaultMode: 0o644,
          sources: [
            { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
            { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
            { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
          ],
        },
      },
    ];
    env.api.put('pods', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'tokens', namespace: 'default', uid },
      spec: { nodeName: NODE, serviceAccountName: 'default', containers: [{ name: 'app', image: 'busybox', volumeMounts: volumes.map((v) => ({ name: v.name, mountPath: `/${v.name}` })) }], volumes },
      status: { phase: 'Pending' },
    });
    const dir = (volume: string): string => join(env.rootDir, 'pods', uid, 'volumes', 'kubernetes.io~projected', volume);
    const read = (volume: string, file: string): Promise<string> => readFile(join(dir(volume), file), 'utf8');
    const vaultToken = await waitFor(() => read('bundle', 'vault-token').catch(() => undefined), { what: 'the vault token written', timeoutMs: MOUNT_DEADLINE_MS });
    const accessToken = await waitFor(() => read('kube-api-access-x1', 'token').catch(() => undefined), { what: 'the kube-api-access token written', timeoutMs: MOUNT_DEADLINE_MS });
    expect([await read('kube-api-access-x1', 'ca.crt'), await read('kube-api-access-x1', 'namespace')]).toEqual(['CA', 'default']);

    const review = async (token: string): Promise<unknown> => {
      const res = await fetch(`${env.api.url}/apis/authentication.k8s.io/v1/tokenreviews`, {
        method: 'POST',
        headers: { authorization: 'Bearer agent-sa-token', 'content-type': 'application/json' },
        body: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } }),
      });
      return ((await res.json()) as { status: unknown }).status;
    };
    const user = { username: 'system:serviceaccount:default:default', extra: { 'authentication.kubernetes.io/pod-name': ['tokens'], 'authentication.kubernetes.io/pod-uid': [uid] } };
    expect(await review(vaultToken)).toMatchObject({ authenticated: true, user });
    expect(await review(accessToken)).toMatchObject({ authenticated: true, user });
    const sent = env.api.requests({ resource: TOKEN_REQUEST_RESOURCE, verb: 'create' });
    // The two volumes are set up concurrently: the requests may come in either order.
    expect(sent.map((r) => `${r.path} ${String(r.status)} ${JSON.stringify((r.body as { spec?: { audiences?: string[] } }).spec?.audiences)}`).sort()).toEqual([
      '/api/v1/namespaces/default/serviceaccounts/default/token 201 ["vault"]',
      '/api/v1/namespaces/default/serviceaccounts/default/token 201 []',
    ]);
  });

  it('with --authentication-token-webhook and --authorization-mode=Webhook: 401 for a token the TokenReview rejects, 403 for an action SAR denies, 200 for allowed reads; the static token still works', async () => {
    const env = await startEnv(['--authentication-token-webhook', '--authorization-mode=Webhook']);
    env.api.setTokenUser('alice-token', { username: 'alice', groups: ['system:authenticated'] });
    env.api.setAccessPolicy('alice', (req) => req.resourceAttributes?.resource === 'nodes' && req.resourceAttributes.subresource === 'volumemanager' && req.resourceAttributes.name === NODE && req.resourceAttributes.verb === 'get');
    const call = async (token: string, method: 'GET' | 'POST', path: string): Promise<number> =>
      (await fetch(`${env.agent.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${token}` } })).status;

    expect(await call('stolen-token', 'GET', '/api/v1/snapshot')).toBe(401);
    expect(await call('alice-token', 'GET', '/api/v1/snapshot')).toBe(200);
    expect(await call('alice-token', 'POST', '/api/v1/resync')).toBe(403);
    expect(await call(env.agent.token, 'POST', '/api/v1/resync')).toBe(200);
    const reviews = env.api.requests({ method: 'POST' }).map((r) => r.path);
    expect(reviews).toContain('/apis/authentication.k8s.io/v1/tokenreviews');
    expect(reviews).toContain('/apis/authorization.k8s.io/v1/subjectaccessreviews');
  });

  it('relists after a watch ends with 410 Gone: no pod is lost, none is unmounted, and a pod added meanwhile is mounted', async () => {
    const env = await startEnv();
    const a = addPod(env, 'a', [], { emptyDir: true });
    await env.agent.waitForSnapshot('pod a is mounted', (s) => emptyDirMounted(s, a), MOUNT_DEADLINE_MS);
    const listsBefore = env.api.requests({ resource: 'pods', verb: 'list' }).length;

    // The history is compacted and every watch dropped: the informer's resume point is gone.
    env.api.compact();
    env.api.failNextWatch('pods');
    env.api.dropWatches('pods');
    const b = addPod(env, 'b', [], { emptyDir: true });
    const s = await env.agent.waitForSnapshot('pod b is mounted after the relist', (snap) => emptyDirMounted(snap, b) && snap, MOUNT_DEADLINE_MS);
    expect(env.api.requests({ resource: 'pods', verb: 'list' }).length).toBeGreaterThan(listsBefore);
    expect(emptyDirMounted(s, a)).toBe(true);
    expect(s.desired.pods.map((p) => p.uid).sort()).toEqual([a, b].sort());
    expect(env.agent.logs.some((l) => /UnmountVolume|TearDown/.test(l.msg))).toBe(false);
    // Deleting the pods still cleans up through the relisted informer.
    env.api.remove('pods', 'default', 'a');
    env.api.remove('pods', 'default', 'b');
    await env.agent.waitForSnapshot('both pods are unmounted', (snap) => snap.actual.volumes.length === 0, MOUNT_DEADLINE_MS);
    await rm(join(env.base, 'manifests'), { recursive: true, force: true });
  });
  it('refuses POST /api/v1/unmount while the pod still exists in the API server, though the informer cache and the desired state lost it', async () => {
    // Arrange: the pod's volume is mounted; its TearDown keeps failing in the driver
    const env = await startEnv();
    addStorage(env, 'vol-1');
    const uid = addPod(env, 'web', ['vol-1']);
    const volume = csiUniqueVolumeName('vol-1');
    await waitFor(() => env.adc.volumesInUse().includes(volume), { what: 'the agent reports the volume in node.status.volumesInUse', timeoutMs: MOUNT_DEADLINE_MS });
    await env.adc.attach('vol-1');
    await waitMounted(env, 'vol-1', uid);
    await env.driver.fault('NodeUnpublishVolume', { code: 'INTERNAL', message: 'unpublish refused by the test' });
    const pod = env.api.get('pods', 'default', 'web');
    // The pod is deleted: the informer drops it, the reconciler's TearDown fails and backs off.
    env.api.remove('pods', 'default', 'web');
    await env.agent.waitForSnapshot('the TearDown is in backoff', (s) => s.operations.some((op) => op.operationName === 'volume_unmount' && op.podUid === uid && op.state === 'backoff'), MOUNT_DEADLINE_MS);
    // The pod comes back with the same UID while the informer's next watch hangs: the API server
    // has the pod, the agent's cache does not (and reports no error for it).
    const watches = env.api.requests({ resource: 'pods', verb: 'watch' }).length;
    const held = env.api.holdRequests({ resource: 'pods', verb: 'watch' });
    cleanups.push(() => {
      held.release();
      return Promise.resolve();
    });
    env.api.dropWatches('pods');
    await waitFor(() => env.api.requests({ resource: 'pods', verb: 'watch' }).length > watches, { what: 'the informer watches again (held)', timeoutMs: MOUNT_DEADLINE_MS });
    env.api.put('pods', pod ?? expect.fail('the pod was not stored'));

    // Act
    const res = await env.agent.post('/api/v1/unmount', { podUid: uid, volume });
    const after = await env.agent.snapshot();

    // Assert
    expect(res.status).toBe(409);
    const error = (res.body as { error: { message: string; checks: { name: string; ok: boolean; detail: string }[] } }).error;
    expect(error.checks.filter((c) => !c.ok).map((c) => c.name)).toEqual(['pod-absent-from-source']);
    expect(error.message).toBe(`pod ${uid} still exists in its source: pod default/web (uid ${uid}) exists in the API server (read just now)`);
    expect(after.desired.pods.map((p) => p.uid)).not.toContain(uid);
    expect(after.sourceErrors).toEqual([]);
    expect(after.audit.at(-1)).toMatchObject({ action: 'unmount', result: 'refused', target: `${uid}/${volume}` });
  });
});
