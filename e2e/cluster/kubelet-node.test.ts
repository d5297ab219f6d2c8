/**
 * Node kubelet-0: the upstream kubelet without a container runtime (`kube kubelet`,
 * upstream/kube/cmd/kube/kubelet.go: kubemark's fake CRI and stub container manager, the real
 * mounter, volume plugins and events), started by the cluster (scripts/cluster/cluster.ts) with
 * the identity system:node:kubelet-0 and a csi-loop node instance of its own as its CSI node
 * plugin (own socket, on the controller instance's state dir).
 *
 * This process shares the cluster's private mount namespace (test.mjs runs vitest under
 * `unshare -m` and the cluster's processes are its children), so /proc/self/mountinfo here shows
 * the kubelet's mounts. What the real kubelet does is recorded here as it is (directory names,
 * which volumes are mounts, the exact event texts), for the side-by-side with the agent.
 */
import { existsSync, lstatSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KUBELET_NODE } from '../../scripts/cluster/cluster.ts';
import { waitUntil } from '../../scripts/demo/process.ts';
import { claimYaml, cluster, facts, mountTable, podEvents, podUid as podUidIn, tearDownWorkload, versionTag, waitForClaimBound, type KubeEvent } from './cluster-context.ts';
import type { MountInfo } from '../../lib/mount-utils/mountinfo.ts';

const KUBELET = versionTag('kubelet');
const ADC = versionTag('kube-controller-manager');
const ATTACHER = versionTag('csi-attacher');
const NS = 'kubelet-node-test';
const ROOT = facts.kubelet.rootDir;
/** hostPath volumes of the tests live below the state dir (removed with it, never in the host's /). */
const HOST_PATHS = join(facts.stateDir, 'host-paths', NS);

const firstEvent = (pod: string, reason: string): Promise<KubeEvent> =>
  waitUntil(`a ${reason} Event of pod ${pod}`, async () => (await podEvents(NS, pod, reason))[0], { deadlineMs: 90_000, intervalMs: 1000 });

const podUid = (pod: string): Promise<string> => podUidIn(NS, pod);

const container = (mounts: readonly string[]): string =>
  [
    '  containers:',
    '  - name: app',
    '    image: registry.k8s.io/pause:3.10',
    '    volumeMounts:',
    ...mounts.map((m) => `    - {name: ${m}, mountPath: /mnt/${m}}`),
  ].join('\n');

beforeAll(async () => {
  await cluster.kubectl(['create', 'namespace', NS]);
  await cluster.waitForKubeletNodeReady(60_000);
});

/**
 * The file's pods are gone before the next file starts: attachments.test.ts lists every pod on
 * kubelet-0 (the pods an out-of-service taint would force-delete). The kubelet ends a pod's
 * delete only once its volumes are torn down, so no mount of it is waited for separately.
 */
afterAll(async () => {
  await tearDownWorkload({ namespaces: [NS], ownsMount: () => false, deadlineMs: 120_000 });
});

describe(`node ${KUBELET_NODE}: the upstream kubelet (${KUBELET}) with real mounts`, () => {
  it(`${KUBELET_NODE} is Ready, controller-managed attach/detach, ${KUBELET} (${KUBELET})`, async () => {
    const node = JSON.parse(await cluster.kubectl(['get', 'node', KUBELET_NODE, '-o', 'json'])) as {
      metadata: { annotations: Record<string, string> };
      status: { conditions: { type: string; status: string }[]; nodeInfo: { kubeletVersion: string; containerRuntimeVersion: string } };
    };
    expect(node.metadata.annotations['volumes.kubernetes.io/controller-managed-attach-detach']).toBe('true');
    expect(node.status.conditions.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(node.status.nodeInfo.kubeletVersion).toBe(KUBELET.split(' ')[1]);
    expect(node.status.nodeInfo.containerRuntimeVersion).toBe('fakeRuntime://0.1.0');
  });

  it(`CSINode ${KUBELET_NODE} lists ${facts.driverName} with node id ${KUBELET_NODE}, written by the kubelet after registration (${KUBELET})`, async () => {
    const drivers = await waitUntil(
      `CSINode ${KUBELET_NODE} with a driver`,
      async () => {
        const r = await cluster.kubectlRun(['get', 'csinode', KUBELET_NODE, '-o', 'json']);
        if (r.code !== 0) return undefined;
        const d = (JSON.parse(r.stdout) as { spec: { drivers: { name: string; nodeID: string }[] | null } }).spec.drivers ?? [];
        return d.length > 0 ? d : undefined;
      },
      { deadlineMs: 30_000, intervalMs: 500 },
    );
    expect(drivers.map((d) => [d.name, d.nodeID])).toEqual([[facts.driverName, KUBELET_NODE]]);
    const node = JSON.parse(await cluster.kubectl(['get', 'node', KUBELET_NODE, '-o', 'json'])) as { metadata: { annotations: Record<string, string> } };
    expect(JSON.parse(node.metadata.annotations['csi.volume.kubernetes.io/nodeid'] ?? '{}')).toEqual({ [facts.driverName]: KUBELET_NODE });
  });

  it(`a pod's emptyDir (disk, Memory), configMap, secret, downwardAPI, projected and hostPath volumes are real directories and mounts (${KUBELET})`, async () => {
    const hostDir = join(HOST_PATHS, 'created');
    const pod = 'volumes';
    await cluster.kubectl(['apply', '-f', '-'], {
      input: [
        'apiVersion: v1',
        'kind: ConfigMap',
        `metadata: {name: settings, namespace: ${NS}}`,
        'data: {mode: fast, level: "3"}',
        '---',
        'apiVersion: v1',
        'kind: Secret',
        `metadata: {name: creds, namespace: ${NS}}`,
        'stringData: {password: s3cret}',
        '---',
        'apiVersion: v1',
        'kind: Pod',
        `metadata: {name: ${pod}, namespace: ${NS}, labels: {app: volumes}}`,
        'spec:',
        `  nodeName: ${KUBELET_NODE}`,
        container(['disk', 'mem', 'cm', 'secret', 'downward', 'projected', 'host']),
        '  volumes:',
        '  - {name: disk, emptyDir: {}}',
        '  - {name: mem, emptyDir: {medium: Memory}}',
        '  - {name: cm, configMap: {name: settings}}',
        '  - {name: secret, secret: {secretName: creds}}',
        '  - {name: downward, downwardAPI: {items: [{path: name, fieldRef: {fieldPath: metadata.name}}, {path: labels, fieldRef: {fieldPath: metadata.labels}}]}}',
        '  - {name: projected, projected: {sources: [{serviceAccountToken: {path: token, expirationSeconds: 3600}}, {configMap: {name: settings, items: [{key: mode, path: mode}]}}]}}',
        `  - {name: host, hostPath: {path: ${hostDir}, type: DirectoryOrCreate}}`,
      ].join('\n'),
    });
    const uid = await podUid(pod);
    const volumes = join(ROOT, 'pods', uid, 'volumes');
    const file = (plugin: string, name: string, path: string): string => join(volumes, plugin, name, path);
    await waitUntil(
      `the volumes of pod ${pod} set up`,
      () => Promise.resolve(existsSync(file('kubernetes.io~projected', 'projected', 'token')) && existsSync(file('kubernetes.io~secret', 'secret', 'password')) && existsSync(file('kubernetes.io~downward-api', 'downward', 'labels')) && existsSync(hostDir) &&
          // and the service account token (its TokenRequest may wait behind the client's throttling)
          readdirSync(join(volumes, 'kubernetes.io~projected')).some((n) => n.startsWith('kube-api-access-') && existsSync(join(volumes, 'kubernetes.io~projected', n, 'token')))),
      { deadlineMs: 90_000, intervalMs: 500 },
    );

    // The tree: one directory per plugin (escaped name), one per volume below it; hostPath has none.
    expect(readdirSync(volumes).sort()).toEqual(['kubernetes.io~configmap', 'kubernetes.io~downward-api', 'kubernetes.io~empty-dir', 'kubernetes.io~projected', 'kubernetes.io~secret']);
    expect(readdirSync(join(volumes, 'kubernetes.io~empty-dir')).sort()).toEqual(['disk', 'mem']);
    const apiAccess = readdirSync(join(volumes, 'kubernetes.io~projected')).filter((n) => n !== 'projected');
    expect(apiAccess).toHaveLength(1);
    expect(apiAccess[0]).toMatch(/^kube-api-access-[a-z0-9]{5}$/);

    // Mounts: tmpfs for emptyDir Memory and for the volumes the kubelet wraps in a Memory emptyDir
    // (secret, downwardAPI, projected); configMap and emptyDir on disk are plain directories.
    const podDir = join(ROOT, 'pods', uid);
    const mounts = mountTable()
      .filter((m) => m.mountPoint.startsWith(`${podDir}/`))
      .map((m) => [m.mountPoint.slice(volumes.length + 1), m.fsType])
      .sort();
    expect(mounts).toEqual(
      [
        ['kubernetes.io~downward-api/downward', 'tmpfs'],
        ['kubernetes.io~empty-dir/mem', 'tmpfs'],
        [`kubernetes.io~projected/${apiAccess[0] ?? ''}`, 'tmpfs'],
        ['kubernetes.io~projected/projected', 'tmpfs'],
        ['kubernetes.io~secret/secret', 'tmpfs'],
      ].sort(),
    );
    expect(mountTable().some((m) => m.mountPoint === hostDir)).toBe(false);

    // Files: the atomic writer's layout (..data → timestamped dir, each key a symlink into ..data).
    expect(readFileSync(file('kubernetes.io~configmap', 'cm', 'mode'), 'utf8')).toBe('fast');
    expect(readFileSync(file('kubernetes.io~configmap', 'cm', 'level'), 'utf8')).toBe('3');
    expect(lstatSync(file('kubernetes.io~configmap', 'cm', 'mode')).isSymbolicLink()).toBe(true);
    expect(lstatSync(file('kubernetes.io~configmap', 'cm', '..data')).isSymbolicLink()).toBe(true);
    expect(readFileSync(file('kubernetes.io~secret', 'secret', 'password'), 'utf8')).toBe('s3cret');
    expect(readFileSync(file('kubernetes.io~downward-api', 'downward', 'name'), 'utf8')).toBe(pod);
    expect(readFileSync(file('kubernetes.io~downward-api', 'downward', 'labels'), 'utf8')).toBe('app="volumes"');
    expect(readFileSync(file('kubernetes.io~projected', 'projected', 'mode'), 'utf8')).toBe('fast');
    const token = readFileSync(file('kubernetes.io~projected', 'projected', 'token'), 'utf8');
    const claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { sub: string; 'kubernetes.io': { pod: { name: string; uid: string }; node?: { name: string } } };
    expect(claims.sub).toBe(`system:serviceaccount:${NS}:default`);
    expect(claims['kubernetes.io'].pod).toEqual({ name: pod, uid });
    expect(claims['kubernetes.io'].node?.name).toBe(KUBELET_NODE);
    expect(readdirSync(join(volumes, 'kubernetes.io~projected', apiAccess[0] ?? '')).filter((n) => !n.startsWith('..')).sort()).toEqual(['ca.crt', 'namespace', 'token']);

    // Permissions: emptyDir is 0777 on disk and in memory; hostPath DirectoryOrCreate made 0755.
    expect(statSync(join(volumes, 'kubernetes.io~empty-dir', 'disk')).mode & 0o777).toBe(0o777);
    expect(statSync(join(volumes, 'kubernetes.io~empty-dir', 'mem')).mode & 0o777).toBe(0o777);
    expect(statSync(hostDir).isDirectory()).toBe(true);
    expect(statSync(hostDir).mode & 0o777).toBe(0o755);
  });

  it(`a hostPath of type Directory that does not exist: the kubelet's FailedMount Event (${KUBELET})`, async () => {
    const missing = join(HOST_PATHS, 'missing');
    const pod = 'missing-host-path';
    await cluster.kubectl(['apply', '-f', '-'], {
      input: ['apiVersion: v1', 'kind: Pod', `metadata: {name: ${pod}, namespace: ${NS}}`, 'spec:', `  nodeName: ${KUBELET_NODE}`, container(['gone']), '  volumes:', `  - {name: gone, hostPath: {path: ${missing}, type: Directory}}`].join('\n'),
    });
    const event = await firstEvent(pod, 'FailedMount');
    expect(event).toMatchObject({ type: 'Warning', reason: 'FailedMount', source: { component: 'kubelet', host: KUBELET_NODE } });
    expect(event.message).toBe(`MountVolume.SetUp failed for volume "gone" : hostPath type check failed: ${missing} is not a directory`);
    // The backoff text is the kubelet log's (nestedpendingoperations), not the Event's.
    expect(event.message).not.toContain('No retries permitted until');
    expect(await cluster.kubeletLog()).toMatch(/No retries permitted until .*MountVolume\.SetUp failed for volume "gone"/);
    expect(existsSync(missing)).toBe(false);
  });

  it(`a csi-hostpath claim on ${KUBELET_NODE}: the real ADC attaches (${ADC}, ${ATTACHER}), the kubelet stages and publishes through ${KUBELET_NODE}'s csi-loop on the shared state dir (real ext4 mounts), data written in the pod's volume is in the staging mount; deleting the pod unpublishes, unstages and detaches (${KUBELET})`, async () => {
    const pod = 'csi-claim';
    await cluster.kubectl(['apply', '-f', '-'], {
      input: [
        claimYaml(NS, 'data'),
        '---',
        'apiVersion: v1',
        'kind: Pod',
        `metadata: {name: ${pod}, namespace: ${NS}}`,
        'spec:',
        `  nodeName: ${KUBELET_NODE}`,
        container(['data']),
        '  volumes:',
        '  - {name: data, persistentVolumeClaim: {claimName: data}}',
      ].join('\n'),
    });
    const pv = await waitForClaimBound(NS, 'data');
    interface Attachment {
      metadata: { name: string };
      spec: { attacher: string; nodeName: string; source: { persistentVolumeName?: string } };
      status?: { attached: boolean; attachmentMetadata?: Record<string, string> };
    }
    const attachments = async (): Promise<Attachment[]> => (JSON.parse(await cluster.kubectl(['get', 'volumeattachments', '-o', 'json'])) as { items: Attachment[] }).items.filter((a) => a.spec.source.persistentVolumeName === pv);
    const attached = await waitUntil(`VolumeAttachment of ${pv} attached`, async () => (await attachments()).find((a) => a.status?.attached === true), { deadlineMs: 90_000, intervalMs: 1000 });
    expect(attached.spec).toMatchObject({ attacher: facts.driverName, nodeName: KUBELET_NODE });
    // The controller instance attached the disk for kubelet-0 (a loop device, host-wide).
    expect(attached.status?.attachmentMetadata?.devicePath).toMatch(/^\/dev\/loop[0-9]+$/);
    expect((await firstEvent(pod, 'SuccessfulAttachVolume')).message).toBe(`AttachVolume.Attach succeeded for volume "${pv}" `);

    // The kubelet stages (MountDevice) below its plugins dir and publishes (SetUp) into the pod's dir.
    const uid = await podUid(pod);
    const target = join(ROOT, 'pods', uid, 'volumes', 'kubernetes.io~csi', pv, 'mount');
    const pluginDir = join(ROOT, 'plugins', 'kubernetes.io', 'csi', facts.driverName);
    const csiMounts = (): MountInfo[] => mountTable().filter((m) => m.mountPoint === target || (m.mountPoint.startsWith(`${pluginDir}/`) && m.mountPoint.endsWith('/globalmount')));
    const mounted = await waitUntil(`the staging and target mounts of ${pv}`, () => Promise.resolve(csiMounts().length === 2 ? csiMounts() : undefined), { deadlineMs: 90_000, intervalMs: 500 });
    expect(mounted.map((m) => m.fsType)).toEqual(['ext4', 'ext4']);
    const staging = mounted.find((m) => m.mountPoint !== target)?.mountPoint ?? '';
    writeFileSync(join(target, 'written-in-pod.txt'), `pod ${pod} on ${KUBELET_NODE}`);
    expect(readFileSync(join(staging, 'written-in-pod.txt'), 'utf8')).toBe(`pod ${pod} on ${KUBELET_NODE}`);
    expect((await waitUntil(`pod ${pod} Running`, async () => {
      const phase = (await cluster.kubectl(['get', 'pod', pod, '-n', NS, '-o', 'jsonpath={.status.phase}'])).trim();
      return phase === 'Running' ? phase : undefined;
    }, { deadlineMs: 90_000, intervalMs: 1000 }))).toBe('Running');

    // kubelet-0's csi-loop served the node calls; the shared state says where the volume is.
    const control = async <T>(route: string): Promise<T> => (await (await fetch(`${facts.kubelet.csiControlUrl}${route}`, { signal: AbortSignal.timeout(10_000) })).json()) as T;
    interface Call { method: string; volumeId?: string; code: string; stagingPath?: string; targetPath?: string }
    const codesOf = async (): Promise<string[]> => (await control<Call[]>('/calls')).filter((c) => c.volumeId === pv && c.method !== 'NodeGetVolumeStats').map((c) => `${c.method} ${c.code}`);
    expect(await codesOf()).toEqual(['NodeStageVolume OK', 'NodePublishVolume OK']);
    const calls = await control<Call[]>('/calls');
    expect(calls.find((c) => c.method === 'NodeStageVolume' && c.volumeId === pv)?.stagingPath).toBe(staging);
    expect(calls.find((c) => c.method === 'NodePublishVolume' && c.volumeId === pv)?.targetPath).toBe(target);
    interface SharedState { nodeId: string; nodes: string[]; volumes: Record<string, { devicePath: string | null; publishedNodes: Record<string, unknown>; staged: { path: string; nodeId?: string } | null; publishedTargets: Record<string, unknown> }> }
    const shared = await control<SharedState>('/state');
    expect({ nodeId: shared.nodeId, nodes: shared.nodes }).toEqual({ nodeId: KUBELET_NODE, nodes: [facts.agent.nodeName, KUBELET_NODE].sort() });
    expect(shared.volumes[pv]).toMatchObject({ publishedNodes: { [KUBELET_NODE]: { accessMode: 'SINGLE_NODE_WRITER' } }, staged: { path: staging, nodeId: KUBELET_NODE }, publishedTargets: { [target]: { accessType: 'mount' } } });

    await cluster.kubectl(['delete', 'pod', pod, '-n', NS, '--wait=false']);
    await waitUntil(`pod ${pod} gone`, async () => {
      const r = await cluster.kubectlRun(['get', 'pod', pod, '-n', NS, '--ignore-not-found', '-o', 'name']);
      return r.code === 0 && r.stdout.trim() === '';
    }, { deadlineMs: 90_000, intervalMs: 1000 });
    await waitUntil(`VolumeAttachment of ${pv} deleted (detached)`, async () => (await attachments()).length === 0, { deadlineMs: 120_000, intervalMs: 1000 });
    expect(csiMounts()).toEqual([]);
    expect(await codesOf()).toEqual(['NodeStageVolume OK', 'NodePublishVolume OK', 'NodeUnpublishVolume OK', 'NodeUnstageVolume OK']);
    const after = (await control<SharedState>('/state')).volumes[pv];
    expect({ nodes: Object.keys(after?.publishedNodes ?? {}), device: after?.devicePath, staged: after?.staged ?? null, targets: Object.keys(after?.publishedTargets ?? {}) }).toEqual({ nodes: [], device: null, staged: null, targets: [] });
  });
});
