/**
 * Auth and RBAC for real: deploy/ applied to a real kube-apiserver, and each identity's rights
 * read back from it by impersonation (`kubectl auth can-i --list --as=…`, and targeted `can-i`).
 *
 * "What a component needs" comes from its code: {@link AGENT_CALLS} and {@link DASHBOARD_CALLS}
 * name every Kubernetes API call (client-node method) the agent and the dashboard make, with the
 * permission each needs. The first tests check that table against the sources (a new call fails
 * until it is listed here and its permission decided); the RBAC tests then compare what the API
 * server grants with the table exactly, so a permission the code does not use fails as much as a
 * missing one. The defaults every authenticated user has (discovery, self reviews) are read from an
 * identity without any binding and subtracted.
 *
 * deploy/ is applied for real (the namespace first: a server-side dry run persists nothing, so
 * the objects of a new namespace would be rejected as "namespace not found"). The agent
 * DaemonSet and the dashboard Deployment stay inert (no controller runs for them here).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { AGENT_API_RESOURCE } from '../../agent/server/webhook-auth.ts';
import { cluster, versionTag } from './cluster-context.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const NS = 'volumescope';
const AGENT_SA = `system:serviceaccount:${NS}:volumescope-agent`;
const DASHBOARD_SA = `system:serviceaccount:${NS}:volumescope-dashboard`;
const API = versionTag('kube-apiserver');
const KUBECTL = versionTag('kubectl');

// WHAT THE CODE CALLS

/** A permission as `kubectl auth can-i --list` prints it: `<verb> <resource>[.<group>][/<subresource>]`. */
type Grant = string;

interface ApiCall {
  readonly needs: readonly Grant[];
  /**
   * `observe`: made in both modes; `managed`: only in managed mode (writes, and volume contents);
   * `node`: only with `--register-node`, where the agent is the node towards the API server and runs
   * as `system:node:<name>`: the Node authorizer grants these, never deploy/'s roles (beside a real
   * kubelet, the kubelet owns the Node, its Lease and CSINode, and deletes the pods); `user`: the
   * dashboard makes it with the logged-in user's token, never its own (system:basic-user grants
   * it to every authenticated user); `opt-in`: the dashboard makes it with its own account only
   * where deploy/opt-in/ is applied (the attachment view and the guided out-of-service taint), never
   * with deploy/'s roles.
   */
  readonly mode: 'observe' | 'managed' | 'node' | 'user' | 'opt-in';
  readonly why: string;
}

/** Every client-node call of the agent (agent/, lib/sources/kube/, lib/kube-client/). */
const AGENT_CALLS: Readonly<Record<string, ApiCall>> = {
  listPodForAllNamespaces: { needs: ['list pods', 'watch pods'], mode: 'observe', why: "the pod informer (spec.nodeName=<node>, list then watch) and the live list of the node's pods" },
  listNode: { needs: ['list nodes', 'watch nodes'], mode: 'observe', why: 'the node informer (metadata.name=<node>)' },
  readNode: { needs: ['get nodes'], mode: 'observe', why: 'status.volumesAttached of this node' },
  listPersistentVolume: { needs: ['list persistentvolumes', 'watch persistentvolumes'], mode: 'observe', why: 'the PV informer' },
  readPersistentVolume: { needs: ['get persistentvolumes'], mode: 'observe', why: 'a PV the informer has not seen yet' },
  readNamespacedPersistentVolumeClaim: { needs: ['get persistentvolumeclaims'], mode: 'observe', why: "the claims of the node's pods, by name" },
  listCSIDriver: { needs: ['list csidrivers.storage.k8s.io', 'watch csidrivers.storage.k8s.io'], mode: 'observe', why: 'the CSIDriver informer' },
  readVolumeAttachment: { needs: ['get volumeattachments.storage.k8s.io'], mode: 'observe', why: 'the attach state of one volume' },
  listVolumeAttachment: { needs: ['list volumeattachments.storage.k8s.io'], mode: 'observe', why: "this node's attachments (no field selector exists for spec.nodeName)" },
  listNamespacedEvent: { needs: ['list events'], mode: 'observe', why: "the kubelet's FailedMount events of a pod (observe mode)" },
  createTokenReview: { needs: ['create tokenreviews.authentication.k8s.io'], mode: 'observe', why: '--authentication-token-webhook' },
  createSubjectAccessReview: { needs: ['create subjectaccessreviews.authorization.k8s.io'], mode: 'observe', why: '--authorization-mode=Webhook' },
  readNamespacedConfigMap: { needs: ['get configmaps'], mode: 'managed', why: 'configMap and projected volume contents (observe mode fetches claims only)' },
  readNamespacedSecret: { needs: ['get secrets'], mode: 'managed', why: 'secret volume contents and node-side CSI secrets' },
  patchNodeStatus: { needs: ['patch nodes/status'], mode: 'managed', why: 'status.volumesInUse' },
  patchNamespacedPersistentVolumeClaimStatus: { needs: ['patch persistentvolumeclaims/status'], mode: 'managed', why: 'the end of a node expansion' },
  createNamespacedEvent: { needs: ['create events'], mode: 'managed', why: 'FailedMount, SuccessfulAttachVolume… on the pods' },
  patchNamespacedEvent: { needs: ['patch events'], mode: 'managed', why: 'a repeated event is counted on the existing one' },
  createNamespacedServiceAccountToken: { needs: ['create serviceaccounts/token'], mode: 'managed', why: 'bound tokens of projected serviceAccountToken sources (the token manager)' },
  createNode: { needs: ['create nodes'], mode: 'node', why: 'registration of the Node (registerWithAPIServer)' },
  readNamespacedLease: { needs: ['get leases.coordination.k8s.io'], mode: 'node', why: 'the node Lease in kube-node-lease, read when an update failed' },
  createNamespacedLease: { needs: ['create leases.coordination.k8s.io'], mode: 'node', why: 'the node Lease, created when absent' },
  replaceNamespacedLease: { needs: ['update leases.coordination.k8s.io'], mode: 'node', why: 'the node Lease renewal every 10 s' },
  readCSINode: { needs: ['get csinodes.storage.k8s.io'], mode: 'node', why: "the node's CSINode, before a driver is added or removed" },
  createCSINode: { needs: ['create csinodes.storage.k8s.io'], mode: 'node', why: 'the CSINode, created with the first registered driver' },
  replaceCSINode: { needs: ['update csinodes.storage.k8s.io'], mode: 'node', why: 'a driver added to or removed from the CSINode' },
  deleteNamespacedPod: { needs: ['delete pods'], mode: 'node', why: "the end of a graceful delete once the pod's volumes are unmounted (the status manager)" },
};

/** Every client-node call of the dashboard (lib/dashboard/, app/). */
const DASHBOARD_CALLS: Readonly<Record<string, ApiCall>> = {
  listNamespacedPod: { needs: ['list pods', 'watch pods'], mode: 'observe', why: 'agent discovery: list, then watch, the agent pods of its namespace' },
  createSelfSubjectReview: { needs: ['create selfsubjectreviews.authentication.k8s.io'], mode: 'user', why: 'token login: who the pasted token is' },
  createSelfSubjectAccessReview: { needs: ['create selfsubjectaccessreviews.authorization.k8s.io'], mode: 'user', why: "the user's get/update on nodes/volumemanager, to disable what the agent would refuse" },
  listVolumeAttachment: { needs: ['list volumeattachments.storage.k8s.io', 'watch volumeattachments.storage.k8s.io'], mode: 'opt-in', why: 'the attachment view: actual attachments' },
  listPersistentVolume: { needs: ['list persistentvolumes', 'watch persistentvolumes'], mode: 'opt-in', why: 'the attachment view: access modes and CSI sources' },
  listPersistentVolumeClaimForAllNamespaces: { needs: ['list persistentvolumeclaims', 'watch persistentvolumeclaims'], mode: 'opt-in', why: "the attachment view: pods' claims to PVs" },
  listPodForAllNamespaces: { needs: ['list pods', 'watch pods'], mode: 'opt-in', why: 'the attachment view: desired attachments; the pods an out-of-service taint force-deletes' },
  listNode: { needs: ['list nodes', 'watch nodes'], mode: 'opt-in', why: 'the attachment view: volumesAttached/volumesInUse, conditions, taints' },
  listCSIDriver: { needs: ['list csidrivers.storage.k8s.io', 'watch csidrivers.storage.k8s.io'], mode: 'opt-in', why: 'the attachment view: attachRequired' },
  listCSINode: { needs: ['list csinodes.storage.k8s.io', 'watch csinodes.storage.k8s.io'], mode: 'opt-in', why: "the attachment view: the nodes' drivers" },
  listNamespacedLease: { needs: ['list leases.coordination.k8s.io', 'watch leases.coordination.k8s.io'], mode: 'opt-in', why: 'the attachment view: node lease age (kube-node-lease)' },
  readNode: { needs: ['get nodes'], mode: 'opt-in', why: 'the out-of-service taint: a live read of the node before the patch' },
  patchNode: { needs: ['patch nodes'], mode: 'opt-in', why: 'the out-of-service taint and its attestation annotations' },
};

/** The agents' own SubjectAccessReviews: get for reads, update for actions (webhook-auth.ts). */
const AGENT_API: readonly Grant[] = ['get', 'update'].map((verb) => `${verb} ${AGENT_API_RESOURCE.resource}/${AGENT_API_RESOURCE.subresource}`);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'testing' || name === 'node_modules' ? [] : sourceFiles(path);
    return /\.(ts|tsx|js|mjs)$/.test(name) && !/\.test\.|\.spec\./.test(name) ? [path] : [];
  });
}

/**
 * The client-node methods called in `dirs`: on every variable assigned from `makeApiClient(…)`
 * (`this.core = kc.makeApiClient(CoreV1Api)`, `const storage = …`), each `<variable>.<method>(`,
 * and each method called on `makeApiClient(…)` directly.
 */
function apiCallsIn(dirs: readonly string[]): Map<string, string[]> {
  const calls = new Map<string, string[]>();
  for (const file of dirs.flatMap((d) => sourceFiles(join(REPO, d)))) {
    const text = readFileSync(file, 'utf8');
    // `kc.makeApiClient(CoreV1Api)`, or the agent's `makeApiClient(kc, CoreV1Api)` (lib/sources/kube/api-client.ts).
    const clients = [...text.matchAll(/(?:this\.)?(\w+)\s*=\s*(?:[\w.]+\.)?makeApiClient\(/g)].map((m) => m[1] ?? '');
    // A client used inline, without a variable: `….makeApiClient(CoreV1Api).readNode(…)`.
    for (const m of text.matchAll(/\bmakeApiClient\([\w.]+(?:,\s*[\w.]+)?\)\.(\w+)\(/g)) {
      const method = m[1] ?? '';
      calls.set(method, [...(calls.get(method) ?? []), relative(REPO, file)]);
    }
    for (const client of new Set(clients)) {
      for (const m of text.matchAll(new RegExp(`\\b${client}\\.(\\w+)\\(`, 'g'))) {
        const method = m[1] ?? '';
        calls.set(method, [...(calls.get(method) ?? []), relative(REPO, file)]);
      }
    }
  }
  return calls;
}

const needsOf = (calls: Readonly<Record<string, ApiCall>>, modes: readonly ApiCall['mode'][]): Grant[] =>
  [...new Set(Object.values(calls).filter((c) => modes.includes(c.mode)).flatMap((c) => c.needs))].sort();

describe('what the code calls', () => {
  it('the agent: every Kubernetes API call in agent/, lib/sources/kube/ and lib/kube-client/ is listed with its permission', () => {
    const found = apiCallsIn(['agent', 'lib/sources/kube', 'lib/kube-client']);
    expect([...found.keys()].sort(), `calls found: ${JSON.stringify(Object.fromEntries(found))}`).toEqual(Object.keys(AGENT_CALLS).sort());
  });

  it('the dashboard: every Kubernetes API call in lib/dashboard/ and app/ is listed with its permission', () => {
    const found = apiCallsIn(['lib/dashboard', 'app']);
    expect([...found.keys()].sort(), `calls found: ${JSON.stringify(Object.fromEntries(found))}`).toEqual(Object.keys(DASHBOARD_CALLS).sort());
  });
});

// WHAT THE API SERVER GRANTS

/**
 * The rows of `kubectl auth can-i --list` as grants (`<verb> <resource>`, one per verb; a
 * non-resource URL as `<verb> url:<path>`), cut at the header's column offsets. A row with
 * resource names is kept as `<verb> <resource>[<names>]`.
 */
function parseCanIList(table: string): Grant[] {
  const [header, ...rows] = table.split('\n').filter((l) => l.trim() !== '');
  const h = header ?? '';
  const cols = ['Resources', 'Non-Resource URLs', 'Resource Names', 'Verbs'].map((name) => {
    const at = h.indexOf(name);
    if (at < 0) throw new Error(`kubectl auth can-i --list: no column ${name} in ${JSON.stringify(h)}`);
    return at;
  });
  const cell = (row: string, i: number): string => row.slice(cols[i], i + 1 < cols.length ? cols[i + 1] : undefined).trim();
  const list = (text: string): string[] => text.replace(/^\[|\]$/g, '').split(' ').filter((x) => x !== '');
  return rows.flatMap((row) => {
    const resource = cell(row, 0);
    const urls = list(cell(row, 1));
    const names = list(cell(row, 2));
    const verbs = list(cell(row, 3));
    const targets = resource === '' ? urls.map((u) => `url:${u}`) : [names.length === 0 ? resource : `${resource}[${names.join(',')}]`];
    return targets.flatMap((t) => verbs.map((v) => `${v} ${t}`));
  });
}

async function canIList(as: string, namespace = NS, groups: readonly string[] = []): Promise<Grant[]> {
  const out = await cluster.kubectl(['auth', 'can-i', '--list', `--as=${as}`, ...groups.map((g) => `--as-group=${g}`), '-n', namespace]);
  return [...new Set(parseCanIList(out))].sort();
}

/** `kubectl auth can-i <verb> <resource>`: exit 0 is yes, 1 is no. */
async function canI(as: string, verb: string, resource: string, options: { namespace?: string; subresource?: string; name?: string } = {}): Promise<boolean> {
  const args = ['auth', 'can-i', verb, options.name === undefined ? resource : `${resource}/${options.name}`, `--as=${as}`, '--quiet'];
  if (options.subresource !== undefined) args.push(`--subresource=${options.subresource}`);
  args.push(...(options.namespace === undefined ? ['--all-namespaces'] : ['-n', options.namespace]));
  const r = await cluster.kubectlRun(args);
  if (r.code !== 0 && r.code !== 1) throw new Error(`kubectl ${args.join(' ')}: exit ${r.code}: ${r.stderr}`);
  return r.code === 0;
}

/** What an identity without any binding gets (system:basic-user, system:discovery, …). */
let baselineSa: Grant[] = [];
let baselineUser: Grant[] = [];
const beyond = (grants: readonly Grant[], baseline: readonly Grant[]): Grant[] => grants.filter((g) => !baseline.includes(g));

describe(`deploy/ against ${API} (${KUBECTL})`, () => {
  it(`kubectl apply --dry-run=server -k deploy/ and -k deploy/managed: no error, no warning (${API})`, async () => {
    await cluster.kubectl(['apply', '-f', join(REPO, 'deploy', 'base', 'namespace.yaml')]);
    for (const dir of ['deploy', 'deploy/managed']) {
      const r = await cluster.kubectlRun(['apply', '--dry-run=server', '-k', join(REPO, dir)]);
      expect({ dir, code: r.code, stderr: r.stderr }).toEqual({ dir, code: 0, stderr: '' });
      expect(r.stdout, dir).toContain('(server dry run)');
    }
  });

  it(`kubectl apply -k deploy/ creates every object (${API})`, async () => {
    const out = await cluster.kubectl(['apply', '-k', join(REPO, 'deploy')]);
    for (const object of ['serviceaccount/volumescope-agent', 'clusterrole.rbac.authorization.k8s.io/volumescope-agent-observe', 'role.rbac.authorization.k8s.io/volumescope-dashboard-discovery', 'daemonset.apps/volumescope-agent']) {
      expect(out).toContain(object);
    }
    // A service account and a user without any binding: the defaults every identity has.
    await cluster.kubectl(['apply', '-f', '-'], { input: `apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: rbac-baseline, namespace: ${NS}}\n` });
    baselineSa = await canIList(`system:serviceaccount:${NS}:rbac-baseline`);
    baselineUser = await canIList('volumescope-test-nobody');
    // The defaults are self reviews and discovery URLs only; anything else would hide a grant.
    for (const baseline of [baselineSa, baselineUser]) {
      expect(baseline.filter((g) => !/ url:/.test(g) && !/ self\w+reviews\.(authentication|authorization)\.k8s\.io$/.test(g))).toEqual([]);
    }
  });
});

describe(`RBAC of deploy/ by impersonation (${API})`, () => {
  beforeAll(async () => {
    // Idempotent: this file's tests above applied it already; a filtered run starts here.
    await cluster.kubectl(['apply', '-f', join(REPO, 'deploy', 'base', 'namespace.yaml')]);
    await cluster.kubectl(['apply', '-k', join(REPO, 'deploy')]);
    if (baselineSa.length === 0) {
      await cluster.kubectl(['apply', '-f', '-'], { input: `apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: rbac-baseline, namespace: ${NS}}\n` });
      baselineSa = await canIList(`system:serviceaccount:${NS}:rbac-baseline`);
      baselineUser = await canIList('volumescope-test-nobody');
    }
  });

  it(`observe agent (${AGENT_SA}): exactly the calls of both modes (${API})`, async () => {
    await cluster.kubectl(['delete', 'clusterrolebinding', 'volumescope-agent-managed', '--ignore-not-found']);
    expect(beyond(await canIList(AGENT_SA), baselineSa)).toEqual(needsOf(AGENT_CALLS, ['observe']));
    expect(await canI(AGENT_SA, 'list', 'pods')).toBe(true);
    expect(await canI(AGENT_SA, 'get', 'secrets', { namespace: 'default' })).toBe(false);
    expect(await canI(AGENT_SA, 'get', 'configmaps', { namespace: 'default' })).toBe(false);
    expect(await canI(AGENT_SA, 'patch', 'nodes', { subresource: 'status', name: 'agent-0' })).toBe(false);
    expect(await canI(AGENT_SA, 'create', 'events', { namespace: 'default' })).toBe(false);
    expect(await canI(AGENT_SA, 'delete', 'pods', { namespace: 'default' })).toBe(false);
  });

  it(`managed agent (${AGENT_SA}, deploy/managed): exactly the calls of managed mode (${API})`, async () => {
    await cluster.kubectl(['apply', '-k', join(REPO, 'deploy', 'managed')]);
    expect(beyond(await canIList(AGENT_SA), baselineSa)).toEqual(needsOf(AGENT_CALLS, ['observe', 'managed']));
    expect(await canI(AGENT_SA, 'patch', 'nodes', { subresource: 'status', name: 'agent-0' })).toBe(true);
    expect(await canI(AGENT_SA, 'get', 'secrets', { namespace: 'default' })).toBe(true);
    expect(await canI(AGENT_SA, 'list', 'secrets', { namespace: 'default' })).toBe(false);
    expect(await canI(AGENT_SA, 'update', 'nodes', { name: 'agent-0' })).toBe(false);
    // Bound tokens of projected volumes (the token manager); RBAC cannot narrow it to the node's pods.
    expect(await canI(AGENT_SA, 'create', 'serviceaccounts', { namespace: 'default', subresource: 'token', name: 'default' })).toBe(true);
    expect(await canI(AGENT_SA, 'get', 'serviceaccounts', { namespace: 'default', name: 'default' })).toBe(false);
  });

  it(`dashboard (${DASHBOARD_SA}): its discovery calls in its namespace, nothing on the agents' API (${API})`, async () => {
    expect(beyond(await canIList(DASHBOARD_SA), baselineSa)).toEqual(needsOf(DASHBOARD_CALLS, ['observe']));
    // Outside its namespace: nothing (the agents are called with the logged-in user's token).
    expect(beyond(await canIList(DASHBOARD_SA, 'default'), baselineSa)).toEqual([]);
    for (const grant of AGENT_API) expect(await canIList(DASHBOARD_SA, 'default'), grant).not.toContain(grant);
    for (const grant of needsOf(DASHBOARD_CALLS, ['user'])) expect(baselineSa, grant).toContain(grant);
    expect(await canI(DASHBOARD_SA, 'watch', 'pods', { namespace: NS })).toBe(true);
    expect(await canI(DASHBOARD_SA, 'list', 'pods', { namespace: 'default' })).toBe(false);
    expect(await canI(DASHBOARD_SA, 'update', 'nodes', { subresource: 'volumemanager', name: 'agent-0' })).toBe(false);
    expect(await canI(DASHBOARD_SA, 'get', 'nodes', { subresource: 'volumemanager', name: 'agent-0' })).toBe(false);
    expect(await canI(DASHBOARD_SA, 'get', 'nodes', { name: 'agent-0' })).toBe(false);
  });

  it(`people: volumescope-viewer reads, volumescope-operator also acts, volumescope-port-forward reaches the pods (${API})`, async () => {
    const bind = (kind: 'ClusterRoleBinding' | 'RoleBinding', role: string, user: string): string =>
      [
        'apiVersion: rbac.authorization.k8s.io/v1',
        `kind: ${kind}`,
        `metadata: {name: test-${role}-${user}${kind === 'RoleBinding' ? `, namespace: ${NS}` : ''}}`,
        `roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ${kind === 'RoleBinding' ? 'Role' : 'ClusterRole'}, name: ${role}}`,
        `subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: ${user}}]`,
      ].join('\n');
    await cluster.kubectl(['apply', '-f', '-'], {
      input: [bind('ClusterRoleBinding', 'volumescope-viewer', 'alice'), bind('ClusterRoleBinding', 'volumescope-operator', 'bob'), bind('RoleBinding', 'volumescope-port-forward', 'carol')].join('\n---\n'),
    });
    expect(beyond(await canIList('alice'), baselineUser)).toEqual(['get nodes/volumemanager']);
    expect(beyond(await canIList('bob'), baselineUser)).toEqual(['get nodes/volumemanager', 'update nodes/volumemanager']);
    expect(beyond(await canIList('carol'), baselineUser)).toEqual(['create pods/portforward', 'get pods', 'get pods/portforward', 'get services', 'list pods']);
    expect(beyond(await canIList('carol', 'default'), baselineUser)).toEqual([]);
    expect(await canI('alice', 'update', 'nodes', { subresource: 'volumemanager', name: 'agent-0' })).toBe(false);
    expect(await canI('bob', 'update', 'nodes', { subresource: 'volumemanager', name: 'agent-0' })).toBe(true);
  });

  it(`a node identity (system:node:agent-0) may create TokenReviews and SubjectAccessReviews, and make the calls of --register-node: the Node authorizer's rules (${API})`, async () => {
    const node = ['system:node:agent-0', ['system:nodes']] as const;
    const nodeCanI = async (verb: string, resource: string): Promise<boolean> => {
      const r = await cluster.kubectlRun(['auth', 'can-i', verb, resource, `--as=${node[0]}`, ...node[1].map((g) => `--as-group=${g}`), '--quiet']);
      return r.code === 0;
    };
    expect(await nodeCanI('create', 'tokenreviews.authentication.k8s.io')).toBe(true);
    expect(await nodeCanI('create', 'subjectaccessreviews.authorization.k8s.io')).toBe(true);
    // Not through RBAC: the system:node ClusterRole has no subjects since Kubernetes 1.8.
    const binding = JSON.parse(await cluster.kubectl(['get', 'clusterrolebinding', 'system:node', '-o', 'json'])) as { subjects?: unknown[] };
    expect(binding.subjects ?? []).toEqual([]);
    // What only a registering agent calls: the Node authorizer grants each, for this node's own objects.
    const own = async (verb: string, resource: string, namespace?: string): Promise<boolean> => {
      const r = await cluster.kubectlRun(['auth', 'can-i', verb, resource, ...(namespace === undefined ? [] : ['-n', namespace]), `--as=${node[0]}`, ...node[1].map((g) => `--as-group=${g}`), '--quiet']);
      return r.code === 0;
    };
    const nodeOnly: Record<string, [verb: string, resource: string, namespace?: string]> = {
      'create nodes': ['create', 'nodes/agent-0'],
      'get leases.coordination.k8s.io': ['get', 'leases.coordination.k8s.io/agent-0', 'kube-node-lease'],
      'create leases.coordination.k8s.io': ['create', 'leases.coordination.k8s.io/agent-0', 'kube-node-lease'],
      'update leases.coordination.k8s.io': ['update', 'leases.coordination.k8s.io/agent-0', 'kube-node-lease'],
      'get csinodes.storage.k8s.io': ['get', 'csinodes.storage.k8s.io/agent-0'],
      'create csinodes.storage.k8s.io': ['create', 'csinodes.storage.k8s.io/agent-0'],
      'update csinodes.storage.k8s.io': ['update', 'csinodes.storage.k8s.io/agent-0'],
      'delete pods': ['delete', 'pods', 'default'],
    };
    expect(Object.keys(nodeOnly).sort()).toEqual(needsOf(AGENT_CALLS, ['node']));
    for (const [grant, [verb, resource, namespace]] of Object.entries(nodeOnly)) expect(await own(verb, resource, namespace), grant).toBe(true);
    // Another node's Lease and CSINode are refused.
    expect(await own('update', 'leases.coordination.k8s.io/agent-9', 'kube-node-lease')).toBe(false);
    expect(await own('update', 'csinodes.storage.k8s.io/agent-9')).toBe(false);
    // Without the group the Node authorizer does not recognise the node, and RBAC grants nothing.
    const r = await cluster.kubectlRun(['auth', 'can-i', 'create', 'tokenreviews.authentication.k8s.io', `--as=${node[0]}`, '--quiet']);
    expect(r.code).toBe(1);
  });
});
