/**
 * The agent API in webhook mode against a real kube-apiserver, and the dashboard's discovery of
 * the agents through it.
 *
 * An agent for node `agent-webhook` runs with `--authentication-token-webhook` and
 * `--authorization-mode=Webhook` (agent/server/webhook-auth.ts: a TokenReview for each new bearer
 * token, then a SubjectAccessReview of verb `get` for reads and `update` for actions on
 * `nodes/volumemanager` named after its node). It runs as the node identity
 * system:node:agent-webhook (group system:nodes), as agent-0 does: the reviews are allowed by the
 * Node authorizer's static rules (create tokenreviews and subjectaccessreviews), no RBAC binding
 * needed. The callers are real service-account tokens (`kubectl create token`) bound to the
 * ClusterRoles of deploy/base/user-rbac.yaml.
 *
 * Discovery (lib/dashboard/discovery.ts) finds agents as the Running pods with a pod IP in its
 * namespace matching its selector. No kubelet or DaemonSet controller runs here, so the test
 * creates the agent pods the way the DaemonSet of deploy/ would (its labels, container port
 * `api`, spec.nodeName) and sets their status as a kubelet would (Running, pod IP 127.0.0.1).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSnapshot } from '../../lib/api/compact-snapshot.ts';
import { realClock } from '../../lib/clock/clock.ts';
import { AgentDiscovery } from '../../lib/dashboard/discovery.ts';
import { parseDiscoverySettings, processDiscoveryFiles } from '../../lib/dashboard/discovery-settings.ts';
import { NODE, type ClusterAgent } from '../../scripts/cluster/cluster.ts';
import { waitUntil } from '../../scripts/demo/process.ts';
import { cluster, facts, versionTag } from './cluster-context.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const API = versionTag('kube-apiserver');
const TEST_NS = 'webhook-test';
const WEBHOOK_NODE = 'agent-webhook';

let agent: ClusterAgent;
const tokens: Record<'viewer' | 'operator' | 'nobody' | 'otherNode' | 'dashboard', string> = { viewer: '', operator: '', nobody: '', otherNode: '', dashboard: '' };

async function call(method: 'GET' | 'POST', url: string, token: string): Promise<{ status: number; body: string }> {
  const res = await fetch(url, { method, headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(30_000) });
  return { status: res.status, body: await res.text() };
}
const read = (token: string, base = agent.facts.url): Promise<{ status: number; body: string }> => call('GET', `${base}/api/v1/snapshot`, token);
const act = (token: string, base = agent.facts.url): Promise<{ status: number; body: string }> => call('POST', `${base}/api/v1/resync`, token);

const createToken = async (sa: string, namespace = TEST_NS): Promise<string> => (await cluster.kubectl(['create', 'token', sa, '-n', namespace, '--duration=1h'])).trim();

beforeAll(async () => {
  await cluster.kubectl(['apply', '-f', join(REPO, 'deploy', 'base', 'namespace.yaml')]);
  await cluster.kubectl(['apply', '-k', join(REPO, 'deploy')]);
  const binding = (role: string, sa: string): string =>
    [
      'apiVersion: rbac.authorization.k8s.io/v1',
      'kind: ClusterRoleBinding',
      `metadata: {name: ${TEST_NS}-${sa}}`,
      `roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ${role}}`,
      `subjects: [{kind: ServiceAccount, name: ${sa}, namespace: ${TEST_NS}}]`,
    ].join('\n');
  const sa = (name: string): string => `apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: ${name}, namespace: ${TEST_NS}}`;
  await cluster.kubectl(['apply', '-f', '-'], {
    input: [
      `apiVersion: v1\nkind: Namespace\nmetadata: {name: ${TEST_NS}}`,
      sa('viewer'),
      sa('operator'),
      sa('nobody'),
      sa('other-node'),
      binding('volumescope-viewer', 'viewer'),
      binding('volumescope-operator', 'operator'),
      // get and update, but only on another node: the agent's review names its own node.
      ['apiVersion: rbac.authorization.k8s.io/v1', 'kind: ClusterRole', `metadata: {name: ${TEST_NS}-agent-0-only}`, 'rules: [{apiGroups: [""], resources: [nodes/volumemanager], resourceNames: [agent-0], verbs: [get, update]}]'].join('\n'),
      binding(`${TEST_NS}-agent-0-only`, 'other-node'),
    ].join('\n---\n'),
  });
  tokens.viewer = await createToken('viewer');
  tokens.operator = await createToken('operator');
  tokens.nobody = await createToken('nobody');
  tokens.otherNode = await createToken('other-node');
  tokens.dashboard = await createToken('volumescope-dashboard', 'volumescope');
  agent = await cluster.startAgent({ nodeName: WEBHOOK_NODE, args: ['--authentication-token-webhook', '--authorization-mode=Webhook'] });
});

afterAll(async () => {
  const exit = await agent.stop();
  // A clean stop: the agent exits 0 on SIGTERM.
  expect(exit?.code, await agent.log()).toBe(0);
});

describe(`agent API with --authentication-token-webhook and --authorization-mode=Webhook (${API})`, () => {
  it(`a token bound to volumescope-viewer reads (200) and may not act (403) (${API})`, async () => {
    expect((await read(tokens.viewer)).status).toBe(200);
    const refused = await act(tokens.viewer);
    expect(refused.status).toBe(403);
    expect(refused.body).toContain(`user=system:serviceaccount:${TEST_NS}:viewer, verb=update, resource=nodes, subresource=volumemanager`);
  });

  it(`a token bound to volumescope-operator reads and acts (200), and the audit log names it (${API})`, async () => {
    expect((await read(tokens.operator)).status).toBe(200);
    const resync = await act(tokens.operator);
    expect(resync.status, resync.body).toBe(200);
    const snapshot = parseSnapshot(JSON.parse((await read(tokens.operator)).body));
    expect(snapshot.audit).toContainEqual(expect.objectContaining({ caller: `system:serviceaccount:${TEST_NS}:operator`, action: 'resync' }));
  });

  it(`a valid token without a grant gets 403 on a read and on an action (${API})`, async () => {
    const refused = await read(tokens.nobody);
    expect(refused.status).toBe(403);
    expect(refused.body).toContain(`user=system:serviceaccount:${TEST_NS}:nobody, verb=get`);
    expect((await act(tokens.nobody)).status).toBe(403);
  });

  it(`a grant on another node (resourceNames: [agent-0]) gets 403 here: the review names this node (${API})`, async () => {
    expect((await read(tokens.otherNode)).status).toBe(403);
    expect((await act(tokens.otherNode)).status).toBe(403);
  });

  it(`a bogus token gets 401, and so does a token the API server rejects after a TokenReview (${API})`, async () => {
    const bogus = await read('not-a-token');
    expect(bogus.status).toBe(401);
    // A well-formed JWT signed by nobody the API server trusts.
    const [header, payload] = tokens.viewer.split('.');
    expect((await read(`${header ?? ''}.${payload ?? ''}.c2lnbmF0dXJl`)).status).toBe(401);
    expect((await call('GET', `${agent.facts.url}/api/v1/snapshot`, '')).status).toBe(401);
  });

  it(`with --authentication-token-audience=volumescope-agent a token for that audience is reviewed for real and accepted, an API server token refused (401); without the flag the reverse (${API})`, async () => {
    const audienced = await cluster.startAgent({ nodeName: 'agent-audience', args: ['--authentication-token-webhook', '--authorization-mode=Webhook', '--authentication-token-audience=volumescope-agent'] });
    try {
      const forAgents = (await cluster.kubectl(['create', 'token', 'operator', '-n', TEST_NS, '--duration=1h', '--audience', 'volumescope-agent'])).trim();
      expect((await read(forAgents, audienced.facts.url)).status).toBe(200);
      expect((await act(forAgents, audienced.facts.url)).status).toBe(200);
      expect((await read(tokens.operator, audienced.facts.url)).status).toBe(401);
      expect((await read(forAgents)).status).toBe(401);
    } finally {
      await audienced.stop();
    }
  });

  it(`the agent's static token still works beside the webhook (${API})`, async () => {
    const token = readFileSync(agent.facts.tokenFile, 'utf8').trim();
    expect((await read(token)).status).toBe(200);
    expect((await act(token)).status).toBe(200);
  });
});

describe(`dashboard discovery through the API server (${API})`, () => {
  const agentPod = (nodeName: string, port: number): string =>
    [
      'apiVersion: v1',
      'kind: Pod',
      'metadata:',
      `  name: volumescope-agent-${nodeName}`,
      '  namespace: volumescope',
      '  labels: {app.kubernetes.io/name: volumescope-agent, app.kubernetes.io/part-of: volumescope, app.kubernetes.io/component: node-agent}',
      'spec:',
      `  nodeName: ${nodeName}`,
      '  serviceAccountName: volumescope-agent',
      '  automountServiceAccountToken: false',
      `  containers: [{name: agent, image: "volumescope:0.1.0", ports: [{name: api, containerPort: ${port}, protocol: TCP}]}]`,
    ].join('\n');
  const pods = (): { node: string; url: string }[] => [
    { node: NODE, url: facts.agent.url },
    { node: WEBHOOK_NODE, url: agent.facts.url },
  ];

  afterAll(async () => {
    for (const { node } of pods()) {
      await cluster.kubectl(['delete', 'pod', '-n', 'volumescope', `volumescope-agent-${node}`, '--grace-period=0', '--force', '--ignore-not-found']);
    }
  });

  it(`finds agent-0 and ${WEBHOOK_NODE} with their URLs, as the dashboard's service account, and the agents refuse the dashboard's own token (${API})`, async () => {
    for (const { node, url } of pods()) {
      await cluster.kubectl(['apply', '-f', '-'], { input: agentPod(node, Number(new URL(url).port)) });
      await cluster.kubectl([
        'patch',
        'pod',
        '-n',
        'volumescope',
        `volumescope-agent-${node}`,
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify({ status: { phase: 'Running', podIP: '127.0.0.1', podIPs: [{ ip: '127.0.0.1' }] } }),
      ]);
    }
    // A pod that is not Running is no agent.
    await cluster.kubectl(['apply', '-f', '-'], { input: agentPod('pending-node', 7070).replace('volumescope-agent-pending-node', 'volumescope-agent-pending') });

    const tokenFile = join(facts.stateDir, 'dashboard-token');
    writeFileSync(tokenFile, tokens.dashboard, { mode: 0o600 });
    const env = {
      VOLUMESCOPE_DISCOVERY: 'kubernetes',
      VOLUMESCOPE_DISCOVERY_NAMESPACE: 'volumescope',
      VOLUMESCOPE_DISCOVERY_TOKEN_FILE: tokenFile,
      KUBECONFIG: cluster.tokenKubeconfig('dashboard', tokens.dashboard),
    };
    const discovery = new AgentDiscovery({ settings: parseDiscoverySettings(env, processDiscoveryFiles()), clock: realClock, env });
    try {
      await discovery.start();
      const agents = await waitUntil('discovery lists both agents', () => Promise.resolve(discovery.agents().length >= 2 && discovery.agents()), { deadlineMs: 30_000, intervalMs: 200 });
      expect(discovery.status()).toMatchObject({ namespace: 'volumescope', selector: 'app.kubernetes.io/name=volumescope-agent', listed: true, error: null });
      expect(agents).toEqual(pods().map(({ node, url }) => ({ name: node, url, tokenFile })));
    } finally {
      await discovery.stop();
      await cluster.kubectl(['delete', 'pod', '-n', 'volumescope', 'volumescope-agent-pending', '--grace-period=0', '--force', '--ignore-not-found']);
    }
    // The dashboard's own ServiceAccount has no rights on the agents' API (it sends the logged-in
    // user's token): the webhook agent refuses it both.
    expect((await read(tokens.dashboard, agent.facts.url)).status).toBe(403);
    expect((await act(tokens.dashboard, agent.facts.url)).status).toBe(403);
  });
});
