/**
 * Side by side: the same workload on node kubelet-0 (the upstream kubelet) and on node agent-0
 * (the agent in managed mode), the facts of both read and normalised (side-by-side-compare.ts),
 * and the comparison asserted equal but for the deliberate differences listed in DELIBERATE below
 * (docs/engine.md "Side by side with the kubelet" gives the same list with the reasons;
 * docs/side-by-side.md has the measured table).
 *
 * The workload, in namespace `sbs-<node>` on each node (pods pinned by nodeName):
 * - pod `volumes`: emptyDir on disk and `medium: Memory`, configMap, secret, projected (a
 *   service-account token and a configMap), downwardAPI, hostPath of every type (unset,
 *   DirectoryOrCreate, Directory, FileOrCreate, File, Socket, CharDevice, BlockDevice), a
 *   csi-hostpath claim (expanded from 16Mi to 32Mi while in use), and the admission plugin's
 *   kube-api-access volume;
 * - pod `failing`: a hostPath `Directory` that does not exist (its back-off progression is compared);
 * - pod `inline`: an inline ephemeral CSI volume of the cluster's driver, whose CSIDriver lists
 *   only `Persistent` (both nodes refuse it).
 *
 * This process shares the cluster's mount namespace (scripts/cluster/test.mjs), so its
 * mountinfo is both nodes' mount table.
 */
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVER, KUBELET_NODE, NODE } from '../../scripts/cluster/cluster.ts';
import { parseSnapshot } from '../../lib/api/compact-snapshot.ts';
import { waitFor } from '../../lib/clock/testing/wait-for.ts';
import { nodeAllocatableMemoryBytes } from '../../lib/volume/plugins/util/memory-size.ts';
import { cluster, facts, mountTable, tearDownWorkload, versionTag } from './cluster-context.ts';
import { BACKOFF_INITIAL_MS, RUN_NAMES, agentBackoff, differences, explain, goDuration, kubeletBackoff, normaliser, renderTable, type Attempt, type Deliberate, type Facts, type Side } from './side-by-side-compare.ts';

const VERSIONS = [versionTag('kubelet'), versionTag('kube-apiserver'), versionTag('kube-controller-manager'), versionTag('csi-attacher'), versionTag('csi-provisioner'), versionTag('csi-resizer')].join(', ');
const STEP_MS = 120_000;
/** A pod sync (1 min on both nodes) plus the resizer and the node expansion, with room for a loaded machine. */
const EXPAND_MS = 240_000;
/** Back-off windows compared: 500ms … 8s, about 16 s of failures. */
const BACKOFF_STEPS = 5;

interface NodeSide {
  readonly side: Side;
  readonly node: string;
  readonly ns: string;
  readonly root: string;
  readonly hostPaths: string;
}

const SIDES: readonly NodeSide[] = [
  { side: 'kubelet', node: KUBELET_NODE, ns: `sbs-${KUBELET_NODE}`, root: facts.kubelet.rootDir, hostPaths: join(facts.stateDir, 'host-paths', 'sbs', KUBELET_NODE) },
  { side: 'agent', node: NODE, ns: `sbs-${NODE}`, root: facts.agent.rootDir, hostPaths: join(facts.stateDir, 'host-paths', 'sbs', NODE) },
];

/**
 * The differences kept on purpose, each with its reason (the same list, with more words, is in
 * docs/engine.md "Side by side with the kubelet"). Everything else must be equal.
 */
const DELIBERATE: readonly Deliberate[] = [
  {
    section: 'events',
    side: 'kubelet',
    line: /Pod\/volumes Normal (Pulling|Pulled|Created|Started) <node component> .*/,
    reason: 'container events: kubelet-0 starts the containers (through a fake CRI); the agent runs no containers',
  },
  {
    section: 'events',
    side: 'kubelet',
    line: /Pod\/volumes Warning MissingClusterDNS <node component> .*/,
    reason: "the kubelet's DNS configuration of the pod's sandbox (container runtime side)",
  },
  {
    section: 'events',
    side: 'kubelet',
    line: /Pod\/\w+ Warning FailedMount <node component> Unable to attach or mount volumes: .*/,
    reason: "the kubelet's pod worker (SyncPod waiting in WaitForAttachAndMount) reports a pod whose volumes are not ready: at once when one cannot be processed (a claim not bound yet), else after 2 min; the agent has no pod worker and shows the populator's errors per pod in its snapshot (podErrors)",
    optional: true,
  },
  {
    section: 'events',
    side: 'kubelet',
    line: /Pod\/volumes Warning FailedMount <node component> MountVolume\.SetUp failed for volume "[^"]+" : failed to sync (configmap|secret) cache: timed out waiting for the condition/,
    reason:
      "the kubelet's watch-based ConfigMap and Secret managers (pkg/kubelet/util/manager/watch_based_manager.go@v1.34) wait 1 s for a new object's reflector to sync, then fail the SetUp and retry; on a loaded machine the first attempt can time out. The agent reads the object from its informer or the API and has no such wait",
    optional: true,
  },
  {
    section: 'event sources',
    side: 'kubelet',
    line: /kubelet/,
    reason: 'each node signs its Events with its own component name: the kubelet as `kubelet`, the agent as `volumescope-agent`',
  },
  { section: 'event sources', side: 'agent', line: /volumescope-agent/, reason: 'each node signs its Events with its own component name (see above)' },
  {
    section: 'root',
    side: 'kubelet',
    line: /(actuated_pods_state|allocated_pods_state|checkpoints|pod-logs|pod-resources) .*/,
    reason: "the kubelet's pod admission and resize state, checkpoints, container logs and pod-resources socket: not volume manager state",
  },
  { section: 'root', side: 'kubelet', line: /volume-plugins d 0750/, reason: "the kubelet's FlexVolume plugin dir (--volume-plugin-dir); the agent has no FlexVolume (docs/engine.md)" },
  { section: 'root', side: 'kubelet', line: /fake-cri-cwd d 0755/, reason: "the cluster's working dir for kubelet-0's fake CRI (scripts/cluster/cluster.ts), not the kubelet's" },
  { section: 'root', side: 'agent', line: /agent-token f 0600/, reason: "the cluster's static token for agent-0's API (scripts/cluster/cluster.ts), not the agent's" },
  { section: 'root', side: 'agent', line: /volumescope d 0750/, reason: "the agent's own records kept across restarts (operation history, events, audit)" },
  {
    section: 'tree',
    side: 'kubelet',
    line: /pods\/<uid:\w+>\/(containers|etc-hosts)(\/.*)? .*/,
    reason: "written by the kubelet's container side (container log dirs, the pod's /etc/hosts), not by the volume manager; the agent starts no containers",
  },
  {
    section: 'tree',
    side: 'agent',
    line: /pods\/<uid:volumes>\/volumes\/kubernetes\.io~host-path(\/host-[a-z]+)? d 0750/,
    reason: 'the agent keeps an empty record dir per hostPath volume so that reconstruction after a restart finds it (lib/volume/plugins/host-path); the kubelet keeps nothing and forgets the volume',
  },
  {
    section: 'mounts',
    side: 'kubelet',
    line: /<root> ext4 .*/,
    reason: "the kubelet bind-mounts its root dir on itself to make it rshared (MakeRShared); the agent leaves the propagation of its root dir to its deployment (the managed DaemonSet mounts it Bidirectional; in the cluster both run in one private mount namespace)",
  },
  { section: 'mount propagation', side: 'kubelet', line: /.* shared/, reason: 'below the kubelet\'s rshared root dir every mount is shared (see mounts)' },
  { section: 'mount propagation', side: 'agent', line: /.* private/, reason: 'the agent does not change the propagation of its root dir (see mounts)' },
];

// ---- the workload -----------------------------------------------------------------------------

const container = (mounts: readonly string[]): unknown => ({ name: 'app', image: 'registry.k8s.io/pause:3.10', volumeMounts: mounts.map((m) => ({ name: m, mountPath: `/mnt/${m}` })) });

const HOST_TYPES = ['unset', 'DirectoryOrCreate', 'Directory', 'FileOrCreate', 'File', 'Socket', 'CharDevice', 'BlockDevice'] as const;

function hostPathVolume(s: NodeSide, type: (typeof HOST_TYPES)[number]): unknown {
  const path = {
    unset: join(s.hostPaths, 'plain'),
    DirectoryOrCreate: join(s.hostPaths, 'created-dir'),
    Directory: join(s.hostPaths, 'dir'),
    FileOrCreate: join(s.hostPaths, 'created-file'),
    File: join(s.hostPaths, 'file'),
    Socket: join(s.hostPaths, 'sock'),
    CharDevice: '/dev/null',
    BlockDevice: '/dev/loop0',
  }[type];
  return { name: `host-${type.toLowerCase()}`, hostPath: type === 'unset' ? { path } : { path, type } };
}

function manifests(s: NodeSide): unknown[] {
  const pod = (name: string, volumes: readonly { name: string }[]): unknown => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: s.ns, labels: { app: name } },
    spec: { nodeName: s.node, terminationGracePeriodSeconds: 5, containers: [container(volumes.map((v) => v.name))], volumes },
  });
  const volumes = [
    { name: 'disk', emptyDir: {} },
    { name: 'mem', emptyDir: { medium: 'Memory' } },
    { name: 'cm', configMap: { name: 'settings' } },
    { name: 'secret', secret: { secretName: 'creds' } },
    { name: 'downward', downwardAPI: { items: [{ path: 'name', fieldRef: { fieldPath: 'metadata.name' } }, { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
    { name: 'projected', projected: { sources: [{ serviceAccountToken: { path: 'token', expirationSeconds: 3600 } }, { configMap: { name: 'settings', items: [{ key: 'mode', path: 'mode' }] } }] } },
    ...HOST_TYPES.map((t) => hostPathVolume(s, t) as { name: string }),
    { name: 'data', persistentVolumeClaim: { claimName: 'data' } },
  ];
  return [
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: s.ns }, data: { mode: 'fast', level: '3' } },
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'creds', namespace: s.ns }, stringData: { password: 's3cret' } },
    { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'data', namespace: s.ns }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'csi-hostpath', resources: { requests: { storage: '16Mi' } } } },
    pod('volumes', volumes),
    pod('failing', [{ name: 'gone', hostPath: { path: join(s.hostPaths, 'missing'), type: 'Directory' } } as { name: string }]),
    pod('inline', [{ name: 'scratch', csi: { driver: DRIVER, volumeAttributes: { capacity: '16Mi' } } } as { name: string }]),
  ];
}

// ---- reading the facts ------------------------------------------------------------------------

const getJson = async <T>(args: readonly string[]): Promise<T> => JSON.parse(await cluster.kubectl([...args, '-o', 'json'])) as T;

interface Meta {
  name: string;
  uid: string;
  namespace?: string;
  ownerReferences?: { kind: string; name: string }[];
  annotations?: Record<string, string>;
}
interface KubeEvent {
  involvedObject: { kind: string; name: string };
  type: string;
  reason: string;
  message: string;
  count?: number;
  source?: { component?: string };
  reportingComponent?: string;
}
interface CsiNode {
  metadata: Meta;
  spec: { drivers: { name: string; nodeID: string; topologyKeys: string[] | null; allocatable?: { count?: number } }[] | null };
}
interface NodeObject {
  metadata: Meta;
  status: { volumesInUse?: string[]; volumesAttached?: { name: string; devicePath: string }[]; allocatable?: Record<string, string> };
}
interface Claim {
  metadata: Meta;
  spec: { volumeName?: string };
  status: { phase?: string; capacity?: { storage?: string }; conditions?: { type: string }[] };
}

/** What is known of one side's objects once created: the pods' UIDs and the claim's PV (csi-loop's handle is the PV name). */
interface Objects {
  readonly pods: Readonly<Record<string, string>>;
  readonly pv: string;
}

async function objectsOf(s: NodeSide): Promise<Objects> {
  const pods: Record<string, string> = {};
  for (const name of ['volumes', 'failing', 'inline']) pods[name] = (await getJson<{ metadata: Meta }>(['get', 'pod', '-n', s.ns, name])).metadata.uid;
  const claim = await waitFor(
    async () => {
      const c = await getJson<Claim>(['get', 'pvc', '-n', s.ns, 'data']);
      return c.status.phase === 'Bound' ? c : undefined;
    },
    { what: `claim ${s.ns}/data Bound`, timeoutMs: STEP_MS, pollMs: 500 },
  );
  return { pods, pv: claim.spec.volumeName ?? '' };
}

function normaliserOf(s: NodeSide, o: Objects): (text: string) => string {
  return normaliser([
    [s.root, '<root>'],
    [s.hostPaths, '<host>'],
    [facts.stateDir, '<state>'],
    ...Object.entries(o.pods).map(([name, uid]): [string, string] => [uid, `<uid:${name}>`]),
    ...Object.entries(o.pods).map(([name, uid]): [string, string] => [uid.replace(/-/g, ''), `<uid:${name}>`]),
    [o.pv, '<pv>'],
    [s.ns, '<ns>'],
    [s.node, '<node>'],
    ...RUN_NAMES,
  ]);
}

const mode = (m: number): string => (m & 0o7777).toString(8).padStart(4, '0');

/** Files whose contents are compared (small, node-independent once normalised). */
const CONTENT_FILES = /\/(mode|level|password|name|labels|namespace)$/;

/**
 * `<relative path> <type> <mode>[ -> <link>][ = <content>]` for everything below `dir` (volume
 * mounts are directories here, so the walk goes into them); the paths of the `vol_data.json`
 * files it passes are added to `volData`.
 */
function walk(base: string, dir: string, n: (t: string) => string, out: string[], volData: string[] = []): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const path = join(dir, name);
    // Gone between readdir and lstat (the atomic writer swaps its dirs on a change): not listed.
    const st = lstatSync(path, { throwIfNoEntry: false });
    if (st === undefined) continue;
    const rel = n(relative(base, path));
    if (st.isSymbolicLink()) out.push(`${rel} l -> ${n(readlinkSync(path))}`);
    else if (st.isDirectory()) {
      out.push(`${rel} d ${mode(st.mode)}`);
      walk(base, path, n, out, volData);
    } else if (st.isFile()) {
      const content = CONTENT_FILES.test(path) && st.size < 256 ? ` = ${JSON.stringify(n(readFileSync(path, 'utf8')))}` : '';
      out.push(`${rel} f ${mode(st.mode)}${content}`);
      if (name === 'vol_data.json') volData.push(path);
    } else if (st.isSocket()) out.push(`${rel} s ${mode(st.mode)}`);
    else out.push(`${rel} ? ${mode(st.mode)}`);
  }
}

/** The fields of `vol_data.json` files: `<relative path> <key>=<normalised value>`. */
function volDataFields(s: NodeSide, n: (t: string) => string, files: readonly string[]): string[] {
  return files.flatMap((path) => Object.entries(JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>).map(([k, v]) => `${n(relative(s.root, path))} ${k}=${n(JSON.stringify(v))}`));
}

/**
 * The mounts at or below the root dir, in three sections: the mount itself (relative mount
 * point, file system, source, options), its propagation (`shared`, `master`… without peer
 * group numbers, or `private`), and a tmpfs' size option (`size=<n>k` or `no size`), so that
 * a difference in one does not hide the others.
 */
function mounts(s: NodeSide, n: (t: string) => string, allocatableBytes: number | null): { mounts: string[]; propagation: string[]; sizes: string[] } {
  // tmpfs reports its size in KiB of whole pages.
  const allocatable = allocatableBytes === null ? null : `size=${Math.ceil(allocatableBytes / 4096) * 4}k`;
  const out = { mounts: [] as string[], propagation: [] as string[], sizes: [] as string[] };
  for (const m of mountTable()) {
    if (m.mountPoint !== s.root && !m.mountPoint.startsWith(`${s.root}/`)) continue;
    const at = n(m.mountPoint);
    // Other tests' pods (still being torn down) are not part of the comparison.
    if (/^<root>\/pods\/(?!<uid:)/.test(at)) continue;
    const size = m.superOptions.find((o) => o.startsWith('size='));
    out.mounts.push(`${at} ${m.fsType} ${n(m.source)} root=${n(m.root)} opts=${m.mountOptions.join(',')} super=${m.superOptions.filter((o) => o !== size).join(',')}`);
    out.propagation.push(`${at} ${m.optionalFields.map((f) => f.replace(/:\d+$/, '')).join(',') || 'private'}`);
    if (m.fsType === 'tmpfs') out.sizes.push(`${at} ${size === undefined ? 'no size' : size === allocatable ? "size=<the node's allocatable memory>" : size.replace(/\d+/, '<n>')}`);
  }
  return out;
}

interface Snapshot {
  operationHistory: { operationName: string; volume: string; podUid: string | null; attempts: (Attempt & { error: string | null })[] }[];
}

async function agentSnapshot(): Promise<Snapshot> {
  const token = readFileSync(facts.agent.tokenFile, 'utf8').trim();
  const res = await fetch(`${facts.agent.url}/api/v1/snapshot`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(10_000) });
  if (res.status !== 200) throw new Error(`agent snapshot: ${res.status} ${await res.text()}`);
  // The default encoding is compact/v2; parseSnapshot gives the full form.
  return parseSnapshot(await res.json());
}

/** The failing hostPath volume's back-off windows, in order (kubelet: its log; agent: its operation history). */
async function backoffOf(s: NodeSide, o: Objects): Promise<number[]> {
  const volume = `kubernetes.io/host-path/${o.pods.failing ?? ''}-gone`;
  if (s.side === 'kubelet') return kubeletBackoff(await cluster.kubeletLog(), volume);
  const history = (await agentSnapshot()).operationHistory.find((h) => h.volume === volume && h.operationName === 'volume_mount');
  return agentBackoff(history?.attempts ?? []);
}

/** What each node writes as the source component of its Events. */
const NODE_COMPONENT: Readonly<Record<Side, string>> = { kubelet: 'kubelet', agent: 'volumescope-agent' };
const componentOf = (e: KubeEvent): string => e.source?.component ?? e.reportingComponent ?? '';

async function collect(s: NodeSide, o: Objects): Promise<Facts> {
  const n = normaliserOf(s, o);
  const tree: string[] = [];
  const volData: string[] = [];
  for (const uid of Object.values(o.pods)) {
    const podDir = join(s.root, 'pods', uid);
    tree.push(`${n(relative(s.root, podDir))} d ${mode(lstatSync(podDir).mode)}`);
    walk(s.root, podDir, n, tree, volData);
  }
  const plugins: string[] = [];
  const pluginVolData: string[] = [];
  walk(s.root, join(s.root, 'plugins'), n, plugins, pluginVolData);
  const root = readdirSync(s.root).map((name) => `${name} ${lstatSync(join(s.root, name)).isDirectory() ? 'd' : 'f'} ${mode(lstatSync(join(s.root, name)).mode)}`);
  for (const p of plugins) if (/^plugins\/[^/]+( |$)/.test(p)) root.push(p);
  const host: string[] = [];
  walk(s.hostPaths, s.hostPaths, n, host);

  const ours = (name: string): boolean => name.includes(o.pv) || Object.values(o.pods).some((uid) => name.includes(uid));
  const csiNode = await getJson<CsiNode>(['get', 'csinode', s.node]);
  const events = (await getJson<{ items: KubeEvent[] }>(['get', 'events', '-n', s.ns])).items;
  const token = readFileSync(join(s.root, 'pods', o.pods.volumes ?? '', 'volumes', 'kubernetes.io~projected', 'projected', 'token'), 'utf8');
  const claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
  const flat = (prefix: string, v: unknown, out: string[]): string[] => {
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) for (const [k, x] of Object.entries(v)) flat(prefix === '' ? k : `${prefix}.${k}`, x, out);
    else out.push(`${prefix}=${/^(iat|exp|nbf)$/.test(prefix) ? '<time>' : /\.(uid|jti)$|^jti$/.test(prefix) ? '<id>' : n(JSON.stringify(v))}`);
    return out;
  };
  const backoff = await backoffOf(s, o);
  const node = await getJson<NodeObject>(['get', 'node', s.node]);
  const mountFacts = mounts(s, n, nodeAllocatableMemoryBytes({ metadata: { name: s.node }, status: { allocatable: node.status.allocatable ?? {} } }));

  return {
    root,
    tree: [...tree, ...plugins.filter((p) => p.includes('kubernetes.io/csi') && ours(p.replace(/<pv>/g, o.pv)))],
    'host paths': host,
    vol_data: volDataFields(s, n, [...volData, ...pluginVolData]).filter((l) => l.includes('<pv>') || l.includes('<uid:')),
    mounts: mountFacts.mounts,
    'mount propagation': mountFacts.propagation,
    'tmpfs size': mountFacts.sizes,
    'node status': [
      ...(node.status.volumesInUse ?? []).filter(ours).map((v) => `volumesInUse ${n(v)}`),
      ...(node.status.volumesAttached ?? []).filter((v) => ours(v.name)).map((v) => `volumesAttached ${n(v.name)} ${n(v.devicePath)}`),
      ...Object.entries(node.metadata.annotations ?? {})
        .filter(([k]) => k.startsWith('csi.volume.kubernetes.io/') || k.startsWith('volumes.kubernetes.io/'))
        .map(([k, v]) => `annotation ${k}=${n(v)}`),
    ],
    csinode: [
      ...(csiNode.spec.drivers ?? []).map((d) => `driver ${d.name} nodeID=${n(d.nodeID)} topologyKeys=${JSON.stringify(d.topologyKeys)} allocatable=${JSON.stringify(d.allocatable ?? null)}`),
      ...(csiNode.metadata.ownerReferences ?? []).map((r) => `ownerReference ${r.kind}/${n(r.name)}`),
    ],
    // The node's own component is compared once, in 'event sources'; the controllers' by name.
    events: events.map((e) => `${e.involvedObject.kind}/${e.involvedObject.name} ${e.type} ${e.reason} ${componentOf(e) === NODE_COMPONENT[s.side] ? '<node component>' : componentOf(e)} ${n(e.message)}`),
    'event sources': [...new Set(events.map(componentOf))].sort(),
    token: flat('', claims, []),
    backoff: backoff.slice(0, BACKOFF_STEPS).map((ms, i) => `failure ${i + 1}: durationBeforeRetry ${goDuration(ms)}`),
  };
}

// ---- the test ---------------------------------------------------------------------------------

const objects = new Map<Side, Objects>();
const sockets: Server[] = [];

beforeAll(async () => {
  await cluster.waitForKubeletNodeReady(STEP_MS);
  await cluster.waitForNodeReady(STEP_MS);
  // The claim is attached at once: an attach before a node registered the driver is refused by
  // the ADC with a FailedAttachVolume Event, which the comparison would count.
  for (const s of SIDES) await cluster.waitForCsiDriver(s.node, STEP_MS);
  for (const s of SIDES) {
    mkdirSync(join(s.hostPaths, 'plain'), { recursive: true });
    mkdirSync(join(s.hostPaths, 'dir'), { recursive: true });
    writeFileSync(join(s.hostPaths, 'file'), 'a file\n');
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(join(s.hostPaths, 'sock'), resolve));
    sockets.push(server);
    await cluster.kubectl(['create', 'namespace', s.ns]);
  }
  for (const s of SIDES) {
    const input = manifests(s).map((m) => JSON.stringify(m)).join('\n');
    // The ServiceAccount admission plugin refuses pods until the controller created `default`.
    await waitFor(async () => (await cluster.kubectlRun(['apply', '-f', '-'], { input })).code === 0, { what: `the workload in ${s.ns} admitted`, timeoutMs: STEP_MS, pollMs: 500 });
  }
  for (const s of SIDES) objects.set(s.side, await objectsOf(s));
});

/**
 * Leaves both nodes as the file found them, and waits for it: the files after this one read every
 * CSI mount and VolumeAttachment of the nodes, so a staging mount or an attachment still being
 * torn down here would be counted there. Done: the pods and claims are gone, no mount is left
 * below either node's pods dir or CSI plugin dir for this file's volumes, and no VolumeAttachment
 * names one of its PVs (tearDownWorkload).
 */
afterAll(async () => {
  const pvs = new Set(
    SIDES.flatMap((s) => {
      const pv = objects.get(s.side)?.pv;
      return pv === undefined ? [] : [pv];
    }),
  );
  const podUids = new Set(SIDES.flatMap((s) => Object.values(objects.get(s.side)?.pods ?? {})));
  for (const server of sockets) server.close();
  await tearDownWorkload({
    namespaces: SIDES.map((s) => s.ns),
    ownsMount: (mp) => SIDES.some((s) => mp.startsWith(join(s.root, 'plugins', 'kubernetes.io', 'csi')) || [...podUids].some((uid) => mp.startsWith(join(s.root, 'pods', uid)))),
    pvs,
    deadlineMs: STEP_MS,
  });
});

describe(`side by side: the same workload on ${KUBELET_NODE} (${versionTag('kubelet')}) and on ${NODE} (the agent), compared (${VERSIONS})`, () => {
  const compared = new Map<Side, Facts>();

  it('both nodes set the workload up: every volume of pod volumes, the claim expanded to 32Mi, the failing volumes failing', async () => {
    for (const s of SIDES) {
      const o = objects.get(s.side);
      if (o === undefined) throw new Error(`no objects for ${s.side}`);
      const volumes = join(s.root, 'pods', o.pods.volumes ?? '', 'volumes');
      const target = join(volumes, 'kubernetes.io~csi', o.pv, 'mount');
      await waitFor(
        () =>
          existsSync(join(volumes, 'kubernetes.io~projected', 'projected', 'token')) &&
          existsSync(join(volumes, 'kubernetes.io~secret', 'secret', 'password')) &&
          existsSync(join(volumes, 'kubernetes.io~downward-api', 'downward', 'labels')) &&
          existsSync(join(volumes, 'kubernetes.io~configmap', 'cm', 'mode')) &&
          mountTable().some((m) => m.mountPoint === target),
        { what: `the volumes of ${s.ns}/volumes set up on ${s.node}`, timeoutMs: STEP_MS, pollMs: 500 },
      );
    }
    for (const s of SIDES) await cluster.kubectl(['patch', 'pvc', '-n', s.ns, 'data', '--type=merge', '-p', JSON.stringify({ spec: { resources: { requests: { storage: '32Mi' } } } })]);
    for (const s of SIDES) {
      await waitFor(
        async () => {
          const c = await getJson<Claim>(['get', 'pvc', '-n', s.ns, 'data']);
          return c.status.capacity?.storage === '32Mi' && !(c.status.conditions ?? []).some((x) => x.type === 'FileSystemResizePending');
        },
        { what: `claim ${s.ns}/data expanded to 32Mi (node expansion by ${s.node})`, timeoutMs: EXPAND_MS, pollMs: 1000 },
      );
    }
    for (const s of SIDES) {
      const o = objects.get(s.side);
      if (o === undefined) throw new Error(`no objects for ${s.side}`);
      await waitFor(async () => (await backoffOf(s, o)).length >= BACKOFF_STEPS, { what: `${BACKOFF_STEPS} back-off windows of ${s.ns}/failing on ${s.node}`, timeoutMs: STEP_MS, pollMs: 1000 });
      await waitFor(async () => (await getJson<{ items: KubeEvent[] }>(['get', 'events', '-n', s.ns, '--field-selector', 'involvedObject.name=inline,reason=FailedMount'])).items.length > 0, { what: `a FailedMount Event of ${s.ns}/inline`, timeoutMs: STEP_MS, pollMs: 1000 });
    }
    for (const s of SIDES) {
      const o = objects.get(s.side);
      if (o !== undefined) compared.set(s.side, await collect(s, o));
    }
    const kubelet = compared.get('kubelet') ?? {};
    const agent = compared.get('agent') ?? {};
    writeFileSync(join(facts.stateDir, 'side-by-side.json'), JSON.stringify({ kubelet, agent }, null, 2));
    writeFileSync(join(facts.stateDir, 'side-by-side.md'), `${renderTable(kubelet, agent, DELIBERATE)}\n`);
    expect(kubelet.backoff?.[0]).toBe(`failure 1: durationBeforeRetry ${goDuration(BACKOFF_INITIAL_MS)}`);
  });

  it('the facts of both nodes are equal but for the deliberate differences, and every deliberate difference is still there', () => {
    const result = explain(differences(compared.get('kubelet') ?? {}, compared.get('agent') ?? {}), DELIBERATE);
    expect(result.unexplained).toEqual([]);
    expect(result.unused.map((d) => d.reason)).toEqual([]);
  });
});
