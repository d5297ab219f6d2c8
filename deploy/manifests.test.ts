/**
 * Checks of the cluster deployment (deploy/, Dockerfile, scripts/container-entrypoint.sh) that
 * need no cluster: the manifests parse, the kustomizations are complete, observe mode cannot
 * write and managed mode can, every agent flag exists, RBAC stays least-privilege, the dashboard
 * is configured with the variables it reads, and the image runs what the manifests ask of it.
 * Applying them to a real API server, and checking the RBAC there by impersonation, is
 * e2e/cluster/rbac.test.ts (`npm run test:cluster`).
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { helpText } from '../agent/node/flags.ts';

// TYPES: the parts of the Kubernetes objects these checks read.

interface Metadata {
  name?: string;
  namespace?: string;
  labels?: Record<string, string>;
}
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath?: string } };
}
interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  mountPropagation?: string;
}
interface Probe {
  httpGet?: { path?: string; port?: string | number };
  tcpSocket?: { port?: string | number };
}
interface SecurityContext {
  privileged?: boolean;
  allowPrivilegeEscalation?: boolean;
  readOnlyRootFilesystem?: boolean;
  runAsUser?: number;
  runAsNonRoot?: boolean;
  capabilities?: { add?: string[]; drop?: string[] } | null;
}
interface Container {
  name: string;
  image?: string;
  args?: string[];
  env?: EnvVar[];
  ports?: { name?: string; containerPort: number }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: SecurityContext;
  volumeMounts?: VolumeMount[];
}
interface Volume {
  name: string;
  hostPath?: { path: string };
  emptyDir?: object;
  secret?: { secretName: string; items?: { key: string; path: string }[] };
  projected?: { sources: { serviceAccountToken?: { audience?: string; expirationSeconds?: number; path: string } }[] };
}
interface NetworkPolicyPeer {
  podSelector?: { matchLabels?: Record<string, string> };
  namespaceSelector?: { matchLabels?: Record<string, string> };
}
interface PodSpec {
  serviceAccountName?: string;
  hostPID?: boolean;
  tolerations?: { key?: string; operator?: string; effect?: string }[];
  nodeSelector?: Record<string, string>;
  securityContext?: SecurityContext;
  containers: Container[];
  volumes?: Volume[];
}
interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
}
interface K8sObject {
  apiVersion?: string;
  kind?: string;
  metadata?: Metadata;
  spec?: {
    selector?: { matchLabels?: Record<string, string> } | Record<string, string>;
    template?: { metadata?: Metadata; spec?: PodSpec };
    type?: string;
    ports?: { name?: string; port: number; targetPort?: string | number }[];
    // NetworkPolicy
    podSelector?: { matchLabels?: Record<string, string> };
    policyTypes?: string[];
    ingress?: { from?: NetworkPolicyPeer[]; ports?: { port: number; protocol?: string }[] }[];
  };
  rules?: PolicyRule[];
  roleRef?: { kind: string; name: string };
  subjects?: { kind: string; name: string; namespace?: string }[];
  // Kustomization
  resources?: string[];
  patches?: { path?: string }[];
  images?: { name: string; newName?: string; newTag?: string }[];
}

// FILES

const root = fileURLToPath(new URL('..', import.meta.url));
const deployDir = join(root, 'deploy');
const entrypoint = join(root, 'scripts', 'container-entrypoint.sh');
const NAMESPACE = 'volumescope';
const KUBELET_DIR = '/var/lib/kubelet';

/** deploy/monitoring holds Prometheus rule files and promtool tests, not kustomized objects: its own test checks them. */
const NOT_KUSTOMIZED = new Set(['monitoring']);

function yamlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return dir === deployDir && NOT_KUSTOMIZED.has(e.name) ? [] : yamlFiles(path);
    return /\.ya?ml$/.test(e.name) ? [path] : [];
  });
}

/** Every document of a YAML file; throws with the file and the parser's messages on any error. */
function parseFile(path: string): K8sObject[] {
  const docs = parseAllDocuments(readFileSync(path, 'utf8'));
  if (!Array.isArray(docs)) throw new Error(`${relative(root, path)}: not a YAML stream`);
  return docs.map((doc, i) => {
    if (doc.errors.length > 0) throw new Error(`${relative(root, path)} document ${i + 1}: ${doc.errors.map((e) => e.message).join('; ')}`);
    return doc.toJS() as K8sObject;
  });
}

const allFiles = yamlFiles(deployDir);
const kustomizationFiles = allFiles.filter((f) => /kustomization\.ya?ml$/.test(f));
const objectFiles = allFiles.filter((f) => !kustomizationFiles.includes(f));
const base = (name: string): string => join(deployDir, 'base', name);
const baseObjects = readdirSync(join(deployDir, 'base'))
  .filter((f) => /\.ya?ml$/.test(f) && !/^kustomization\./.test(f))
  .flatMap((f) => parseFile(base(f)));
const managedRbac = parseFile(join(deployDir, 'managed', 'agent-rbac.yaml'));
const managedPatch = one(parseFile(join(deployDir, 'managed', 'agent-daemonset-patch.yaml')), 'DaemonSet', 'volumescope-agent');

function one(objects: readonly K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.filter((o) => o.kind === kind && o.metadata?.name === name);
  if (found.length !== 1) throw new Error(`expected one ${kind} ${name}, found ${found.length}`);
  return found[0] as K8sObject;
}

function podSpec(workload: K8sObject): PodSpec {
  const spec = workload.spec?.template?.spec;
  if (spec === undefined) throw new Error(`${workload.kind ?? '?'} ${workload.metadata?.name ?? '?'} has no pod template`);
  return spec;
}

function container(workload: K8sObject, name: string): Container {
  const c = podSpec(workload).containers.find((x) => x.name === name);
  if (c === undefined) throw new Error(`no container ${name} in ${workload.metadata?.name ?? '?'}`);
  return c;
}

function mount(c: Container, mountPath: string): VolumeMount {
  const m = c.volumeMounts?.find((x) => x.mountPath === mountPath);
  if (m === undefined) throw new Error(`container ${c.name} does not mount ${mountPath}`);
  return m;
}

/** `--name=value` → `--name`; `--name` stays. Positional words (the entrypoint command) are skipped. */
function flagNames(args: readonly string[]): string[] {
  return args.filter((a) => a.startsWith('--')).map((a) => a.split('=')[0] as string);
}

function flagValue(args: readonly string[], flag: string): string | undefined {
  const a = args.find((x) => x.startsWith(`${flag}=`));
  return a?.slice(flag.length + 1);
}

const underPath = (path: string, dir: string): boolean => path === dir || path.startsWith(`${dir.replace(/\/$/, '')}/`);

const agentDaemonSet = one(baseObjects, 'DaemonSet', 'volumescope-agent');
const dashboardDeployment = one(baseObjects, 'Deployment', 'volumescope-dashboard');

// PARSING AND KUSTOMIZATIONS

describe('deploy/ files', () => {
  it.each(allFiles.map((f) => ({ file: relative(root, f), path: f })))('$file parses and every document has an apiVersion and a kind', ({ path }) => {
    const docs = parseFile(path);
    expect(docs.length).toBeGreaterThan(0);
    for (const doc of docs) {
      expect(doc.apiVersion, 'apiVersion').toEqual(expect.any(String));
      expect(doc.kind, 'kind').toEqual(expect.any(String));
    }
  });

  it.each(kustomizationFiles.map((f) => ({ file: relative(root, f), path: f })))('$file lists only files and directories that exist', ({ path }) => {
    const [doc] = parseFile(path);
    expect(doc?.kind).toBe('Kustomization');
    const dir = dirname(path);
    const listed = [...(doc?.resources ?? []), ...(doc?.patches ?? []).flatMap((p) => (p.path === undefined ? [] : [p.path]))];
    expect(listed.length).toBeGreaterThan(0);
    for (const entry of listed) {
      const target = join(dir, entry);
      expect(existsSync(target), `${entry} (listed in ${relative(root, path)})`).toBe(true);
      if (statSync(target).isDirectory()) expect(existsSync(join(target, 'kustomization.yaml')), `${entry}/kustomization.yaml`).toBe(true);
    }
  });

  it('every object file is listed by the kustomization of its directory (none is silently left out)', () => {
    for (const file of objectFiles) {
      const k = join(dirname(file), 'kustomization.yaml');
      expect(existsSync(k), `${relative(root, file)} has no kustomization.yaml beside it`).toBe(true);
      const [doc] = parseFile(k);
      const listed = [...(doc?.resources ?? []), ...(doc?.patches ?? []).flatMap((p) => (p.path === undefined ? [] : [p.path]))];
      expect(listed, relative(root, k)).toContain(relative(dirname(file), file));
    }
  });

  it('deploy/ builds observe mode and deploy/managed builds on the same base, not on deploy/ (kustomize refuses a cycle)', () => {
    expect(parseFile(join(deployDir, 'kustomization.yaml'))[0]?.resources).toEqual(['base']);
    expect(parseFile(join(deployDir, 'managed', 'kustomization.yaml'))[0]?.resources).toContain('../base');
  });

  it('labels every object part-of=volumescope, the agent and dashboard objects with their name, and puts namespaced objects in volumescope', () => {
    const clusterScoped = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding']);
    for (const o of [...baseObjects, ...managedRbac]) {
      const what = `${o.kind ?? '?'} ${o.metadata?.name ?? '?'}`;
      expect(o.metadata?.labels?.['app.kubernetes.io/part-of'], what).toBe('volumescope');
      const name = o.metadata?.name ?? '';
      if (name.startsWith('volumescope-agent')) expect(o.metadata?.labels?.['app.kubernetes.io/name'], what).toBe('volumescope-agent');
      if (name.startsWith('volumescope-dashboard')) expect(o.metadata?.labels?.['app.kubernetes.io/name'], what).toBe('volumescope-dashboard');
      if (!clusterScoped.has(o.kind ?? '')) expect(o.metadata?.namespace, what).toBe(NAMESPACE);
    }
  });

  it.each([
    { workload: agentDaemonSet, name: 'volumescope-agent' },
    { workload: dashboardDeployment, name: 'volumescope-dashboard' },
  ])('$name selects its own pods by app.kubernetes.io/name', ({ workload, name }) => {
    const selector = workload.spec?.selector as { matchLabels?: Record<string, string> } | undefined;
    expect(selector?.matchLabels).toEqual({ 'app.kubernetes.io/name': name });
    expect(workload.spec?.template?.metadata?.labels).toMatchObject({ 'app.kubernetes.io/name': name, 'app.kubernetes.io/part-of': 'volumescope' });
  });

  it('runs the agent and the dashboard from the one image that base/kustomization.yaml sets', () => {
    const agentImage = container(agentDaemonSet, 'agent').image;
    expect(container(dashboardDeployment, 'dashboard').image).toBe(agentImage);
    const images = parseFile(base('kustomization.yaml'))[0]?.images ?? [];
    expect(images.map((i) => i.name)).toContain(agentImage?.split(':')[0]);
  });
});

// THE AGENT DAEMONSET

/** What holds for the agent container in either mode. */
function checkAgentCommon(ds: K8sObject): { c: Container; args: string[] } {
  const c = container(ds, 'agent');
  const args = c.args ?? [];
  expect(args[0], 'the entrypoint command').toBe('agent');
  expect(args).toContain('--root-dir=/var/lib/kubelet');
  expect(args).toContain('--listen=0.0.0.0:7070');
  expect(args).toContain('--node-name=$(NODE_NAME)');
  expect(args).toContain('--authentication-token-webhook');
  expect(args).toContain('--authorization-mode=Webhook');
  expect(c.env?.find((e) => e.name === 'NODE_NAME')?.valueFrom?.fieldRef?.fieldPath).toBe('spec.nodeName');
  expect(c.ports).toContainEqual(expect.objectContaining({ name: 'api', containerPort: 7070 }));
  expect(c.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'api', scheme: 'HTTPS' });
  expect(c.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'api', scheme: 'HTTPS' });
  expect(podSpec(ds).volumes?.find((v) => v.name === mount(c, KUBELET_DIR).name)?.hostPath?.path).toBe(KUBELET_DIR);
  expect(c.securityContext?.readOnlyRootFilesystem).toBe(true);
  // The compile and code cache goes to a writable emptyDir (the root filesystem is read-only), which a restarted container keeps.
  const cacheDir = c.env?.find((e) => e.name === 'NODE_COMPILE_CACHE')?.value ?? '';
  const cacheMount = (c.volumeMounts ?? []).find((m) => cacheDir.startsWith(`${m.mountPath}/`));
  expect(cacheMount?.readOnly, cacheDir).not.toBe(true);
  expect(podSpec(ds).volumes?.find((v) => v.name === cacheMount?.name)?.emptyDir, cacheDir).toBeDefined();
  expect(c.securityContext?.runAsUser).toBe(0);
  // The token file is written at start: its directory must be a writable volume, since the root
  // filesystem and (in observe mode) the kubelet dir are read-only.
  const tokenFile = flagValue(args, '--token-file');
  expect(tokenFile, '--token-file').toBeDefined();
  const holder = (c.volumeMounts ?? []).filter((m) => underPath(tokenFile ?? '', m.mountPath)).sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
  expect(holder, `a volume holding ${tokenFile ?? ''}`).toBeDefined();
  expect(holder?.readOnly ?? false, `${holder?.mountPath ?? ''} is writable`).toBe(false);
  expect(podSpec(ds).volumes?.find((v) => v.name === holder?.name)?.emptyDir).toBeDefined();
  return { c, args };
}

function checkObserve(ds: K8sObject): void {
  const { c, args } = checkAgentCommon(ds);
  expect(args).toContain('--mode=observe');
  expect(args).toContain('--mountinfo=/proc/1/mountinfo');
  expect(podSpec(ds).hostPID).toBe(true);
  const kubelet = mount(c, KUBELET_DIR);
  expect(kubelet.readOnly).toBe(true);
  expect(kubelet.mountPropagation).toBe('HostToContainer');
  expect(c.volumeMounts?.map((m) => m.mountPropagation)).not.toContain('Bidirectional');
  expect(c.securityContext?.privileged ?? false).toBe(false);
  expect(c.securityContext?.allowPrivilegeEscalation).toBe(false);
  expect(c.securityContext?.capabilities?.drop).toEqual(['ALL']);
  expect(c.securityContext?.capabilities?.add ?? []).toEqual([]);
}

describe('agent DaemonSet, observe mode (deploy/base)', () => {
  it('mounts the kubelet dir read-only with HostToContainer, reads the host mountinfo through hostPID, and is not privileged', () => {
    checkObserve(agentDaemonSet);
  });

  it('runs on every node: one toleration that matches every taint', () => {
    expect(podSpec(agentDaemonSet).tolerations).toContainEqual({ operator: 'Exists' });
  });

  it('sets requests and limits, with room above the agent target of 150 MB RSS', () => {
    const r = container(agentDaemonSet, 'agent').resources;
    for (const key of ['cpu', 'memory']) {
      expect(r?.requests?.[key], `requests.${key}`).toEqual(expect.any(String));
      expect(r?.limits?.[key], `limits.${key}`).toEqual(expect.any(String));
    }
    const mi = Number(/^(\d+)Mi$/.exec(r?.limits?.['memory'] ?? '')?.[1]);
    expect(mi).toBeGreaterThan(150);
  });

  it('runs as the agent ServiceAccount bound to the observe ClusterRole', () => {
    const sa = podSpec(agentDaemonSet).serviceAccountName;
    expect(sa).toBe('volumescope-agent');
    expect(one(baseObjects, 'ClusterRoleBinding', 'volumescope-agent-observe').subjects).toEqual([{ kind: 'ServiceAccount', name: sa, namespace: NAMESPACE }]);
  });
});

describe('agent DaemonSet patch, managed mode (deploy/managed)', () => {
  it('makes the kubelet dir writable with Bidirectional propagation and the container privileged', () => {
    const c = container(managedPatch, 'agent');
    const kubelet = mount(c, KUBELET_DIR);
    expect(kubelet.mountPropagation).toBe('Bidirectional');
    expect(kubelet.readOnly).toBe(false);
    expect(c.securityContext?.privileged).toBe(true);
    expect(c.securityContext?.allowPrivilegeEscalation).toBe(true);
    expect(c.args).toContain('--mode=managed');
    expect(c.args).toContain('--controller-attach-detach=true');
  });

  it('reaches plugins_registry through the kubelet dir and nests no mount below a Bidirectional one', () => {
    const mounts = [...(container(agentDaemonSet, 'agent').volumeMounts ?? []), ...(container(managedPatch, 'agent').volumeMounts ?? [])];
    const merged = new Map(mounts.map((m) => [m.mountPath, m]));
    expect([...merged.keys()].some((p) => underPath(`${KUBELET_DIR}/plugins_registry`, p))).toBe(true);
    for (const shared of [...merged.values()].filter((m) => m.mountPropagation === 'Bidirectional')) {
      const nested = [...merged.keys()].filter((p) => p !== shared.mountPath && underPath(p, shared.mountPath));
      expect(nested, `mounts below ${shared.mountPath}`).toEqual([]);
    }
  });

  it('mounts the host /dev and runs only on nodes labelled for managed mode', () => {
    expect(mount(container(managedPatch, 'agent'), '/dev').name).toBe('dev');
    expect(podSpec(managedPatch).volumes?.find((v) => v.name === 'dev')?.hostPath?.path).toBe('/dev');
    expect(podSpec(managedPatch).nodeSelector).toEqual({ 'volumescope/managed': 'true' });
  });
});

describe('agent flags used in the manifests', () => {
  const help = helpText();
  const argLists = [
    { where: 'deploy/base/agent-daemonset.yaml', args: container(agentDaemonSet, 'agent').args ?? [] },
    { where: 'deploy/managed/agent-daemonset-patch.yaml', args: container(managedPatch, 'agent').args ?? [] },
  ];
  const used = argLists.flatMap(({ where, args }) => flagNames(args).map((flag) => ({ where, flag })));

  it.each(used)('$flag ($where) is a flag of the agent (helpText)', ({ flag }) => {
    expect(help).toMatch(new RegExp(`^\\s+${flag.replace(/[-]/g, '\\-')}(\\s|$)`, 'm'));
  });
});

// RBAC

const READ_VERBS = new Set(['get', 'list', 'watch']);

/** One entry per (group/resource, verb) a role grants. */
function grants(role: K8sObject): { resource: string; verb: string }[] {
  return (role.rules ?? []).flatMap((r) =>
    (r.apiGroups ?? ['']).flatMap((g) =>
      (r.resources ?? []).flatMap((res) => r.verbs.map((verb) => ({ resource: g === '' ? res : `${g}/${res}`, verb }))),
    ),
  );
}

describe('RBAC', () => {
  const observe = one(baseObjects, 'ClusterRole', 'volumescope-agent-observe');
  const managed = one(managedRbac, 'ClusterRole', 'volumescope-agent-managed');

  it('gives no role a wildcard', () => {
    for (const role of [...baseObjects, ...managedRbac].filter((o) => o.kind === 'Role' || o.kind === 'ClusterRole')) {
      for (const r of role.rules ?? []) {
        expect([...(r.apiGroups ?? []), ...(r.resources ?? []), ...r.verbs], role.metadata?.name).not.toContain('*');
      }
    }
  });

  it('observe ClusterRole: reads only, except create on tokenreviews and subjectaccessreviews', () => {
    const writes = grants(observe).filter((g) => !READ_VERBS.has(g.verb));
    expect(writes.sort((a, b) => a.resource.localeCompare(b.resource))).toEqual([
      { resource: 'authentication.k8s.io/tokenreviews', verb: 'create' },
      { resource: 'authorization.k8s.io/subjectaccessreviews', verb: 'create' },
    ]);
  });

  it('observe ClusterRole: the reads the agent makes (e2e/cluster/rbac.test.ts checks them per API call), and no configmaps or secrets', () => {
    const key = (x: { resource: string; verb: string }): string => `${x.verb} ${x.resource}`;
    expect(grants(observe).filter((x) => READ_VERBS.has(x.verb)).map(key).sort()).toEqual(
      [
        'list pods',
        'watch pods',
        'get nodes',
        'list nodes',
        'watch nodes',
        'get persistentvolumes',
        'list persistentvolumes',
        'watch persistentvolumes',
        'get persistentvolumeclaims',
        'list storage.k8s.io/csidrivers',
        'watch storage.k8s.io/csidrivers',
        'get storage.k8s.io/volumeattachments',
        'list storage.k8s.io/volumeattachments',
        'list events',
      ].sort(),
    );
    expect(grants(observe).map((x) => x.resource)).not.toContain('secrets');
    expect(grants(observe).map((x) => x.resource)).not.toContain('configmaps');
  });

  it('managed ClusterRole: exactly the writes and reads managed mode adds', () => {
    const key = (x: { resource: string; verb: string }): string => `${x.verb} ${x.resource}`;
    expect(grants(managed).map(key).sort()).toEqual(
      ['patch nodes/status', 'get configmaps', 'get secrets', 'create events', 'patch events', 'patch persistentvolumeclaims/status', 'create serviceaccounts/token'].sort(),
    );
    expect(one(managedRbac, 'ClusterRoleBinding', 'volumescope-agent-managed').subjects).toEqual([{ kind: 'ServiceAccount', name: 'volumescope-agent', namespace: NAMESPACE }]);
  });

  it('dashboard: list/watch pods in its namespace, nothing else (it calls the agents with the logged-in user’s token)', () => {
    const discovery = one(baseObjects, 'Role', 'volumescope-dashboard-discovery');
    expect(discovery.metadata?.namespace).toBe(NAMESPACE);
    expect(grants(discovery)).toEqual([
      { resource: 'pods', verb: 'list' },
      { resource: 'pods', verb: 'watch' },
    ]);
    expect(baseObjects.filter((o) => (o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding') && o.metadata?.name === 'volumescope-dashboard')).toEqual([]);
    const bound = baseObjects.filter((o) => (o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding') && (o.subjects ?? []).some((x) => x.name === 'volumescope-dashboard'));
    expect(bound.map((b) => b.roleRef?.name)).toEqual(['volumescope-dashboard-discovery']);
    expect(podSpec(dashboardDeployment).serviceAccountName).toBe('volumescope-dashboard');
  });

  it('people: viewer reads the agents, operator also acts, and port-forward stays in the namespace', () => {
    expect(grants(one(baseObjects, 'ClusterRole', 'volumescope-viewer'))).toEqual([{ resource: 'nodes/volumemanager', verb: 'get' }]);
    expect(grants(one(baseObjects, 'ClusterRole', 'volumescope-operator'))).toEqual([
      { resource: 'nodes/volumemanager', verb: 'get' },
      { resource: 'nodes/volumemanager', verb: 'update' },
    ]);
    const pf = one(baseObjects, 'Role', 'volumescope-port-forward');
    expect(pf.metadata?.namespace).toBe(NAMESPACE);
    expect(grants(pf)).toContainEqual({ resource: 'pods/portforward', verb: 'create' });
    expect(grants(pf).filter((g) => !READ_VERBS.has(g.verb))).toEqual([{ resource: 'pods/portforward', verb: 'create' }]);
  });

  it('every binding names a role and ServiceAccounts defined here', () => {
    const all = [...baseObjects, ...managedRbac];
    for (const b of all.filter((o) => o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding')) {
      const ref = b.roleRef;
      expect(ref, b.metadata?.name).toBeDefined();
      expect(all.some((o) => o.kind === ref?.kind && o.metadata?.name === ref?.name), `${ref?.kind ?? '?'} ${ref?.name ?? '?'}`).toBe(true);
      for (const s of b.subjects ?? []) {
        expect(s.kind).toBe('ServiceAccount');
        expect(all.some((o) => o.kind === 'ServiceAccount' && o.metadata?.name === s.name && o.metadata.namespace === s.namespace), s.name).toBe(true);
      }
    }
  });

  it('grants on nodes/volumemanager, the subresource the agent names in its SubjectAccessReviews', () => {
    // The agent's --authorization-mode help names the subresource its reviews ask about.
    expect(helpText()).toContain('nodes/volumemanager');
    for (const name of ['volumescope-viewer', 'volumescope-operator']) {
      expect(grants(one(baseObjects, 'ClusterRole', name)).map((g) => g.resource), name).toContain('nodes/volumemanager');
    }
  });
});

// DASHBOARD

describe('dashboard', () => {
  const c = container(dashboardDeployment, 'dashboard');
  const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value]));

  it('discovers the agents through the Kubernetes API with the documented variables', () => {
    expect(env).toEqual({
      VOLUMESCOPE_DISCOVERY: 'kubernetes',
      VOLUMESCOPE_DISCOVERY_NAMESPACE: 'volumescope',
      VOLUMESCOPE_DISCOVERY_SELECTOR: 'app.kubernetes.io/name=volumescope-agent',
      VOLUMESCOPE_AGENT_PORT: '7070',
      VOLUMESCOPE_AGENT_SCHEME: 'https',
      VOLUMESCOPE_AGENT_CA_FILE: '/etc/volumescope/agent-ca/ca.crt',
      VOLUMESCOPE_AGENT_TLS_SERVER_NAME: 'volumescope-agent.volumescope.svc',
    });
  });

  it('the discovery settings find the agent DaemonSet pods on their API port', () => {
    const [key, value] = (env['VOLUMESCOPE_DISCOVERY_SELECTOR'] ?? '').split('=');
    expect(agentDaemonSet.spec?.template?.metadata?.labels?.[key ?? '']).toBe(value);
    expect(agentDaemonSet.metadata?.namespace).toBe(env['VOLUMESCOPE_DISCOVERY_NAMESPACE']);
    const agent = container(agentDaemonSet, 'agent');
    expect(String(agent.ports?.find((p) => p.name === 'api')?.containerPort)).toBe(env['VOLUMESCOPE_AGENT_PORT']);
    expect(flagValue(agent.args ?? [], '--listen')?.split(':').at(-1)).toBe(env['VOLUMESCOPE_AGENT_PORT']);
  });

  it('every VOLUMESCOPE_ variable it sets is read by the dashboard code', () => {
    const sources = readdirSync(join(root, 'lib', 'dashboard'))
      .filter((f) => /\.(ts|js)$/.test(f) && !f.endsWith('.test.ts'))
      .map((f) => readFileSync(join(root, 'lib', 'dashboard', f), 'utf8'))
      .join('\n');
    for (const name of Object.keys(env).filter((n) => n.startsWith('VOLUMESCOPE_'))) {
      expect(sources, name).toContain(`'${name}'`);
    }
  });

  it('runs `dashboard` as non-root with a read-only root filesystem and a writable Next cache', () => {
    expect(c.args).toEqual(['dashboard']);
    const pod = podSpec(dashboardDeployment).securityContext;
    expect(pod?.runAsNonRoot).toBe(true);
    expect(pod?.runAsUser).toBeGreaterThan(0);
    expect(c.securityContext?.readOnlyRootFilesystem).toBe(true);
    expect(c.securityContext?.allowPrivilegeEscalation).toBe(false);
    expect(c.securityContext?.capabilities?.drop).toEqual(['ALL']);
    expect(mount(c, '/app/.next/cache').readOnly ?? false).toBe(false);
  });

  it('Service: ClusterIP port 80 to the container port 3000', () => {
    const svc = one(baseObjects, 'Service', 'volumescope-dashboard');
    expect(svc.spec?.type).toBe('ClusterIP');
    expect(svc.spec?.selector).toEqual({ 'app.kubernetes.io/name': 'volumescope-dashboard' });
    const port = svc.spec?.ports?.[0];
    expect(port?.port).toBe(80);
    expect(c.ports?.find((p) => p.name === port?.targetPort || p.containerPort === port?.targetPort)?.containerPort).toBe(3000);
  });
});

// IMAGE

describe('container entrypoint (scripts/container-entrypoint.sh)', () => {
  let dir = '';
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'volumescope-entrypoint-'));
    // A stand-in `node` that records how it was started.
    writeFileSync(join(dir, 'node'), '#!/bin/sh\n{ pwd; for a in "$@"; do printf "%s\\n" "$a"; done; } > "$STUB_OUT"\nexit "${STUB_EXIT:-0}"\n');
    chmodSync(join(dir, 'node'), 0o755);
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  function run(args: string[], extraEnv: Record<string, string> = {}): { status: number | null; stderr: string; recorded: string[] } {
    const out = join(dir, 'out.txt');
    rmSync(out, { force: true });
    const env: NodeJS.ProcessEnv = { PATH: `${dir}:/usr/bin:/bin`, STUB_OUT: out, VOLUMESCOPE_APP_DIR: '/srv/volumescope-app', ...extraEnv };
    const r = spawnSync('/bin/sh', [entrypoint, ...args], { env, encoding: 'utf8', cwd: dir });
    return { status: r.status, stderr: r.stderr, recorded: existsSync(out) ? readFileSync(out, 'utf8').trimEnd().split('\n') : [] };
  }

  it('`agent [flags…]` starts the bundled agent with the flags, and its exit code is the container’s', () => {
    const r = run(['agent', '--mode=observe', '--listen=0.0.0.0:7070'], { STUB_EXIT: '7' });
    expect(r.status).toBe(7);
    expect(r.recorded.slice(1)).toEqual(['--max-semi-space-size=8', '--expose-gc', '/srv/volumescope-app/dist/agent.mjs', '--mode=observe', '--listen=0.0.0.0:7070']);
  });

  it('`dashboard` runs next start on 0.0.0.0:3000 from the app directory, PORT changes the port', () => {
    // The dashboard case changes into the app dir, so it must exist: use the stub's directory.
    const r = run(['dashboard'], { VOLUMESCOPE_APP_DIR: dir });
    expect(r.status).toBe(0);
    expect(r.recorded).toEqual([dir, `${dir}/node_modules/next/dist/bin/next`, 'start', '-H', '0.0.0.0', '-p', '3000']);
    expect(run(['dashboard'], { VOLUMESCOPE_APP_DIR: dir, PORT: '8080' }).recorded.slice(-2)).toEqual(['-p', '8080']);
  });

  it.each([{ args: [] }, { args: ['sh'] }, { args: ['--mode=observe'] }])('refuses $args with exit code 2 and the usage', ({ args }) => {
    const r = run(args);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('Usage:');
    expect(r.recorded).toEqual([]);
  });
});

describe('Dockerfile and .dockerignore', () => {
  // Instructions with continuation lines joined; comments dropped.
  const lines = readFileSync(join(root, 'Dockerfile'), 'utf8')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const stages: string[][] = [];
  for (const l of lines) {
    if (/^FROM\s/i.test(l)) stages.push([l]);
    else stages.at(-1)?.push(l);
  }
  const runtime = stages.at(-1) ?? [];
  const build = stages.find((s) => /\sAS\s+build$/i.test(s[0] ?? '')) ?? [];

  it('builds in a stage that runs npm ci, next build and the agent bundle', () => {
    const runs = build.filter((l) => l.startsWith('RUN')).join('\n');
    expect(runs).toMatch(/npm ci/);
    expect(runs).toMatch(/next build/);
    expect(runs).toMatch(/deploy\/image\/bundle-agent\.mjs dist\/agent\.mjs/);
  });

  it('the runtime stage has mount/umount, a numeric non-root user and the entrypoint script', () => {
    expect(runtime.join('\n')).toMatch(/apt-get install[^\n]*\butil-linux\b[^\n]*\bmount\b/);
    const user = runtime.filter((l) => l.startsWith('USER')).at(-1);
    expect(user).toMatch(/^USER\s+[1-9]\d*(:\d+)?$/);
    expect(runtime.join('\n')).toContain('scripts/container-entrypoint.sh /usr/local/bin/volumescope-entrypoint');
    expect(runtime.find((l) => l.startsWith('ENTRYPOINT'))).toContain('/usr/local/bin/volumescope-entrypoint');
    expect(runtime.find((l) => l.startsWith('CMD'))).toContain('"dashboard"');
  });

  it('the runtime stage keeps the agent bundle beside lib/csi-spec and package.json (the bundle finds them relative to itself)', () => {
    const copies = runtime.filter((l) => l.startsWith('COPY')).join('\n');
    expect(copies).toMatch(/COPY --from=build \/app\/dist \.\/dist/);
    expect(copies).toMatch(/COPY lib\/csi-spec\/\*\.proto \.\/lib\/csi-spec\//);
    expect(copies).toMatch(/COPY agent\/node\/fs-probe\/probe-child\.mjs \.\/agent\/node\/fs-probe\//);
    expect(copies).toMatch(/COPY package\.json/);
  });

  it('every file the Dockerfile copies from the build context exists and is not excluded by .dockerignore', () => {
    const ignored = readFileSync(join(root, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));
    const sources = lines
      .filter((l) => l.startsWith('COPY') && !l.includes('--from='))
      .flatMap((l) => l.split(/\s+/).slice(1).filter((w) => !w.startsWith('--')).slice(0, -1))
      .filter((s) => s !== '.');
    expect(sources.length).toBeGreaterThan(0);
    for (const s of sources) {
      const matches = s.includes('*')
        ? readdirSync(join(root, posix.dirname(s))).filter((f) => new RegExp(`^${posix.basename(s).replace(/\./g, '\\.').replace(/\*/g, '.*')}$`).test(f))
        : existsSync(join(root, s)) ? [s] : [];
      expect(matches.length, s).toBeGreaterThan(0);
      expect(ignored.filter((p) => s === p || s.startsWith(`${p}/`)), `${s} excluded by .dockerignore`).toEqual([]);
    }
  });

  it('.dockerignore keeps dependencies, builds, git and local state (tokens) out of the context', () => {
    const ignored = readFileSync(join(root, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim());
    for (const p of ['node_modules', '.next', '.git', '.volumescope', 'dist']) expect(ignored, p).toContain(p);
  });
});

describe('agent bundle (deploy/image/bundle-agent.mjs)', () => {
  let dir = '';
  beforeAll(() => {
    // No node_modules beside it: the bundle carries its npm packages (only optional add-ons stay out).
    dir = mkdtempSync(join(tmpdir(), 'volumescope-bundle-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('bundles the agent with production dependencies only, and the bundle prints the agent’s --help', () => {
    const outfile = join(dir, 'dist', 'agent.mjs');
    const bundled = spawnSync(process.execPath, [join(deployDir, 'image', 'bundle-agent.mjs'), outfile], { cwd: root, encoding: 'utf8' });
    expect(bundled.stderr).toBe('');
    expect(bundled.status).toBe(0);
    const help = spawnSync(process.execPath, [outfile, '--help'], { cwd: dir, encoding: 'utf8' });
    expect(help.status).toBe(0);
    expect(help.stdout).toBe(helpText());
    // With --enable-source-maps the entry requires the bundle instead (Node maps only what its loader loaded).
    const mapped = spawnSync(process.execPath, ['--enable-source-maps', outfile, '--help'], { cwd: dir, encoding: 'utf8' });
    expect(mapped.stderr).toBe('');
    expect(mapped.stdout).toBe(helpText());
    // import.meta.url of each source file is kept: the .proto and package.json paths resolve to real files.
    const bundle = join(dir, 'dist', 'agent.cjs');
    const text = readFileSync(bundle, 'utf8');
    const kept = [...text.matchAll(/new URL\("([^"]+)", ?new URL\("([^"]+)", ?__volumescopeBundleUrl\)\.href\)/g)];
    expect(kept.length).toBeGreaterThan(0);
    for (const [, target, source] of kept) {
      const file = fileURLToPath(new URL(target ?? '', new URL(source ?? '', `file://${bundle}`)));
      expect(existsSync(file), file).toBe(true);
    }
    // The entry names the bundle's hash, so that a code cache of another build is never used.
    const hash = createHash('sha256').update(readFileSync(bundle)).digest('hex').slice(0, 16);
    expect(readFileSync(outfile, 'utf8')).toContain(`const BUNDLE_HASH = '${hash}';`);
  });

  it('writes a code cache of the bundle into NODE_COMPILE_CACHE, uses it on the next start, and replaces a damaged one', async () => {
    const entry = join(dir, 'dist', 'agent.mjs');
    const cacheRoot = join(dir, 'compile-cache');
    const state = join(dir, 'agent-state');
    mkdirSync(join(state, 'manifests'), { recursive: true });
    const cacheFiles = (): string[] => (existsSync(cacheRoot) ? readdirSync(cacheRoot, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.v8cache')) : []);
    // With a delay of 0 the entry's write runs at the first timers phase, long before the agent
    // serves its API: once it serves, a cache that was missing or rejected has been written.
    const startUntilServing = async (): Promise<void> => {
      const child = spawn(process.execPath, [entry, '--source=manifest', '--node-name=n1', `--root-dir=${join(state, 'root')}`, `--manifest-dir=${join(state, 'manifests')}`, '--allow-mount=false', '--listen=127.0.0.1:0'], {
        cwd: dir,
        env: { ...process.env, NODE_COMPILE_CACHE: cacheRoot, VOLUMESCOPE_CODE_CACHE_DELAY_MS: '0' },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const exited = new Promise<void>((resolve) => child.on('exit', () => { resolve(); }));
      try {
        await new Promise<void>((resolve, reject) => {
          let out = '';
          child.stdout.on('data', (d: Buffer) => {
            out += d.toString();
            if (out.includes('Serving the agent API')) resolve();
          });
          child.on('exit', (code) => { reject(new Error(`the agent exited (${String(code)}) before serving: ${out}`)); });
        });
      } finally {
        child.kill('SIGTERM');
        await exited;
      }
    };

    await startUntilServing();
    expect(cacheFiles()).toHaveLength(1);
    const path = join(cacheRoot, cacheFiles()[0] ?? '');
    const written = statSync(path);

    // Accepted: not written again (a write renames a new file over it).
    await startUntilServing();
    expect(statSync(path).ino).toBe(written.ino);

    // Damaged: rejected by V8, and written anew.
    writeFileSync(path, readFileSync(path).subarray(0, 1000));
    await startUntilServing();
    const rewritten = statSync(path);
    expect(rewritten.ino).not.toBe(written.ino);
    expect(rewritten.size).toBeGreaterThan(written.size / 2);
    expect(cacheFiles()).toHaveLength(1);
  });
});

describe('access and hardening (docs/cluster.md, "Access and hardening")', () => {
  const agent = container(agentDaemonSet, 'agent');
  const dashboard = container(dashboardDeployment, 'dashboard');
  const dashboardEnv = Object.fromEntries((dashboard.env ?? []).map((e) => [e.name, e.value]));
  const volume = (workload: K8sObject, name: string): Volume => {
    const v = podSpec(workload).volumes?.find((x) => x.name === name);
    if (v === undefined) throw new Error(`no volume ${name} in ${workload.metadata?.name ?? '?'}`);
    return v;
  };
  const volumeAt = (workload: K8sObject, c: Container, path: string): Volume => volume(workload, mount(c, path).name);

  it('lets only the dashboard reach the agents\' API port, and only labelled ingress namespaces reach the dashboard', () => {
    const toAgent = one(baseObjects, 'NetworkPolicy', 'volumescope-agent');
    const toDashboard = one(baseObjects, 'NetworkPolicy', 'volumescope-dashboard');

    expect(toAgent.spec?.podSelector?.matchLabels).toEqual(agentDaemonSet.spec?.selector?.matchLabels);
    expect(toAgent.spec?.policyTypes).toEqual(['Ingress']);
    expect(toAgent.spec?.ingress).toEqual([
      { from: [{ podSelector: { matchLabels: dashboardDeployment.spec?.selector?.matchLabels } }], ports: [{ port: agent.ports?.find((p) => p.name === 'api')?.containerPort, protocol: 'TCP' }] },
    ]);
    expect(toDashboard.spec?.podSelector?.matchLabels).toEqual(dashboardDeployment.spec?.selector?.matchLabels);
    expect(toDashboard.spec?.ingress).toEqual([
      { from: [{ namespaceSelector: { matchLabels: { 'volumescope.dev/dashboard-ingress': 'true' } } }], ports: [{ port: dashboard.ports?.find((p) => p.name === 'http')?.containerPort, protocol: 'TCP' }] },
    ]);
  });

  it('the agents serve TLS from the Secret volumescope-agent-tls, probed over HTTPS; the dashboard gets its CA only, never the key', () => {
    const certFile = flagValue(agent.args ?? [], '--tls-cert-file') ?? '';
    const keyFile = flagValue(agent.args ?? [], '--tls-private-key-file') ?? '';
    const certDir = certFile.slice(0, certFile.lastIndexOf('/'));
    const agentTls = volumeAt(agentDaemonSet, agent, certDir);
    const caFile = dashboardEnv['VOLUMESCOPE_AGENT_CA_FILE'] ?? '';
    const dashboardCa = volumeAt(dashboardDeployment, dashboard, caFile.slice(0, caFile.lastIndexOf('/')));

    expect(keyFile.startsWith(`${certDir}/`)).toBe(true);
    expect(agentTls.secret?.secretName).toBe('volumescope-agent-tls');
    expect(agentTls.secret?.items?.map((i) => i.path).sort()).toEqual([certFile, keyFile].map((f) => f.slice(certDir.length + 1)).sort());
    for (const probe of [agent.startupProbe, agent.livenessProbe, agent.readinessProbe]) expect(probe?.httpGet).toMatchObject({ port: 'api', scheme: 'HTTPS' });
    expect(dashboardEnv['VOLUMESCOPE_AGENT_SCHEME']).toBe('https');
    expect(dashboardCa.secret).toEqual({ secretName: 'volumescope-agent-tls', items: [{ key: 'ca.crt', path: 'ca.crt' }] });
    expect(dashboardEnv['VOLUMESCOPE_AGENT_TLS_SERVER_NAME']).toMatch(/^volumescope-agent\.volumescope\.svc$/);
  });

  it('the agents accept only tokens for their audience; the dashboard holds no agent token of its own (it sends the logged-in user\'s)', () => {
    expect(flagValue(agent.args ?? [], '--authentication-token-audience')).toBe('volumescope-agent');
    expect(agent.args).toContain('--authentication-token-webhook');
    expect(dashboardEnv['VOLUMESCOPE_DISCOVERY_TOKEN_FILE']).toBeUndefined();
    expect(dashboardEnv['VOLUMESCOPE_LOCAL_SESSION']).toBeUndefined();
    const podVolumes = dashboardDeployment.spec?.template?.spec?.volumes ?? [];
    expect(podVolumes.filter((v) => v.projected !== undefined)).toEqual([]);
  });
});
