/**
 * `kubectl volumescope` against the real kube-apiserver: the pod's node read with the user's
 * kubeconfig, the node's agent found as the dashboard's discovery finds it (a Running agent pod
 * with a pod IP on that node, by label in namespace volumescope), and the agent asked with the
 * USER's bearer token, which the agent (--authentication-token-webhook
 * --authorization-mode=Webhook) reviews with the real API server: the user's RBAC decides.
 *
 * No kubelet or DaemonSet controller runs for node agent-kubectl, so the test creates the agent
 * pod the way the DaemonSet of deploy/ would and sets its status as a kubelet would (Running, pod
 * IP 127.0.0.1, where the agent listens), as webhook-auth.test.ts does. The pod IP is reached
 * directly (`--transport=direct`); port-forward needs a kubelet with a container runtime in front
 * of the agent pod, which this cluster does not have, so only its failure report is checked.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterAgent } from '../../scripts/cluster/cluster.ts';
import { waitUntil } from '../../scripts/demo/process.ts';
import { runCli } from '../../scripts/kubectl-volumescope/cli.ts';
import { EXIT } from '../../scripts/kubectl-volumescope/cli-args.ts';
import { PodReportSchema } from '../../scripts/kubectl-volumescope/views.ts';
import { cluster, facts, versionTag } from './cluster-context.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const API = versionTag('kube-apiserver');
const NS = 'kubectl-test';
const AGENT_NODE = 'agent-kubectl';

let agent: ClusterAgent;
const kubeconfigs = { viewer: '', nobody: '' };

async function cli(args: readonly string[], kubeconfig: string): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli([...args, `--kubeconfig=${kubeconfig}`], {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    env: {},
    now: () => Date.now(),
  });
  return { code, stdout, stderr };
}

const podYaml = (name: string, volume: string): string =>
  [
    'apiVersion: v1',
    'kind: Pod',
    `metadata: {name: ${name}, namespace: ${NS}}`,
    'spec:',
    `  nodeName: ${AGENT_NODE}`,
    '  containers: [{name: app, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]',
    `  volumes: [{name: data, ${volume}}]`,
  ].join('\n');

beforeAll(async () => {
  await cluster.kubectl(['apply', '-f', join(REPO, 'deploy', 'base', 'namespace.yaml')]);
  await cluster.kubectl(['apply', '-k', join(REPO, 'deploy')]);
  const sa = (name: string): string => `apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: ${name}, namespace: ${NS}}`;
  await cluster.kubectl(['apply', '-f', '-'], {
    input: [
      `apiVersion: v1\nkind: Namespace\nmetadata: {name: ${NS}}`,
      sa('viewer'),
      sa('nobody'),
      // What a person using the plugin gets: the viewer ClusterRole (get nodes/volumemanager), the
      // port-forward Role in the agents' namespace (list the agent pods), and reading pods here.
      `apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: ${NS}-viewer}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: volumescope-viewer}\nsubjects: [{kind: ServiceAccount, name: viewer, namespace: ${NS}}]`,
      `apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: read-pods, namespace: ${NS}}\nrules: [{apiGroups: [""], resources: [pods], verbs: [get]}]`,
      ...['viewer', 'nobody'].flatMap((who) => [
        `apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: ${who}-read-pods, namespace: ${NS}}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: read-pods}\nsubjects: [{kind: ServiceAccount, name: ${who}, namespace: ${NS}}]`,
        `apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: ${NS}-${who}-port-forward, namespace: volumescope}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: volumescope-port-forward}\nsubjects: [{kind: ServiceAccount, name: ${who}, namespace: ${NS}}]`,
      ]),
    ].join('\n---\n'),
  });
  for (const who of ['viewer', 'nobody'] as const) {
    const token = (await cluster.kubectl(['create', 'token', who, '-n', NS, '--duration=1h'])).trim();
    kubeconfigs[who] = cluster.tokenKubeconfig(`kubectl-plugin-${who}`, token);
  }
  agent = await cluster.startAgent({ nodeName: AGENT_NODE, args: ['--authentication-token-webhook', '--authorization-mode=Webhook'] });
  const port = Number(new URL(agent.facts.url).port);
  await cluster.kubectl(['apply', '-f', '-'], {
    input: [
      'apiVersion: v1',
      'kind: Pod',
      'metadata:',
      `  name: volumescope-agent-${AGENT_NODE}`,
      '  namespace: volumescope',
      '  labels: {app.kubernetes.io/name: volumescope-agent, app.kubernetes.io/part-of: volumescope, app.kubernetes.io/component: node-agent}',
      'spec:',
      `  nodeName: ${AGENT_NODE}`,
      '  serviceAccountName: volumescope-agent',
      '  automountServiceAccountToken: false',
      `  containers: [{name: agent, image: "volumescope:0.1.0", ports: [{name: api, containerPort: ${port}, protocol: TCP}]}]`,
    ].join('\n'),
  });
  await cluster.kubectl(['patch', 'pod', '-n', 'volumescope', `volumescope-agent-${AGENT_NODE}`, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { phase: 'Running', podIP: '127.0.0.1', podIPs: [{ ip: '127.0.0.1' }] } })]);
  await cluster.kubectl(['apply', '-f', '-'], { input: [podYaml('app', 'emptyDir: {}'), podYaml('stuck', `hostPath: {path: ${join(facts.stateDir, 'kubectl-no-such-dir')}, type: Directory}`)].join('\n---\n') });
});

afterAll(async () => {
  await cluster.kubectl(['delete', 'namespace', NS, '--wait=false', '--ignore-not-found']);
  await cluster.kubectl(['delete', 'pod', '-n', 'volumescope', `volumescope-agent-${AGENT_NODE}`, '--grace-period=0', '--force', '--ignore-not-found']);
  await cluster.kubectl(['delete', 'pod', '-n', NS, 'app', 'stuck', '--grace-period=0', '--force', '--ignore-not-found']);
  const exit = await agent.stop();
  expect(exit?.code, await agent.log()).toBe(0);
});

describe(`kubectl volumescope through the real API server, with the user's RBAC (${API})`, { timeout: 90_000 }, () => {
  it(`pod: finds the node and its agent, reads with the viewer's own token, exit 0 once mounted (${API})`, async () => {
    const r = await waitUntil(
      'app is mounted as the plugin sees it',
      async () => {
        const out = await cli(['pod', 'app', '-n', NS, '--transport=direct'], kubeconfigs.viewer);
        return out.code === EXIT.healthy && out;
      },
      { deadlineMs: 60_000, intervalMs: 500 },
    );
    expect(r.stdout).toContain(`Pod ${NS}/app (uid `);
    expect(r.stdout).toContain(`on node ${AGENT_NODE}`);
    expect(r.stdout).toContain('unmounted volumes=[], unattached volumes=[]');
    const json = await cli(['pod', 'app', '-n', NS, '--transport=direct', '-o', 'json'], kubeconfigs.viewer);
    const report = PodReportSchema.parse(JSON.parse(json.stdout));
    expect(report.uid).toBe((await cluster.kubectl(['get', 'pod', 'app', '-n', NS, '-o', 'jsonpath={.metadata.uid}'])).trim());
  });

  it(`pod: a hostPath that does not exist backs off: the kubelet's error verbatim, exit 1 (${API})`, async () => {
    const r = await waitUntil(
      'stuck backs off',
      async () => {
        const out = await cli(['pod', 'stuck', '-n', NS, '--transport=direct'], kubeconfigs.viewer);
        return out.stdout.includes('hostPath type check failed') && out;
      },
      { deadlineMs: 60_000, intervalMs: 500 },
    );
    expect(r.code).toBe(EXIT.blocked);
    expect(r.stdout).toContain('unmounted volumes=[data], unattached volumes=[]');
    expect(r.stdout).toMatch(/next retry: (retry in \d+:\d\d|retry due)/);
  });

  it(`node: the counts as the viewer reads them (${API})`, async () => {
    const r = await cli(['node', AGENT_NODE, '--transport=direct'], kubeconfigs.viewer);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain(`Node ${AGENT_NODE}: degraded`);
    expect(r.code).toBe(EXIT.blocked);
  });

  it(`a user without get on nodes/volumemanager: the agent's 403 is printed with the verb and resource, exit 3 (${API})`, async () => {
    const r = await cli(['pod', 'app', '-n', NS, '--transport=direct'], kubeconfigs.nobody);
    expect(r.code).toBe(EXIT.unavailable);
    expect(r.stderr).toContain(`user=system:serviceaccount:${NS}:nobody, verb=get, resource=nodes, subresource=volumemanager`);
    expect(r.stderr).toContain('volumescope-viewer');
  });

  it(`a user who may not read the pod: the API server's 403 is printed, exit 3 (${API})`, async () => {
    const r = await cli(['pod', 'app', '-n', 'default', '--transport=direct'], kubeconfigs.viewer);
    expect(r.code).toBe(EXIT.unavailable);
    expect(r.stderr).toContain('forbidden by your RBAC');
  });

  it(`--transport=port-forward goes through the API server's pods/portforward; without a kubelet in front of the agent pod it fails with the agent named, exit 3 (${API})`, async () => {
    const r = await cli(['node', AGENT_NODE], kubeconfigs.viewer);
    expect(r.code).toBe(EXIT.unavailable);
    expect(r.stderr).toContain(`cannot reach the agent of node ${AGENT_NODE}`);
    expect(r.stderr).toContain(`port-forward to pod volumescope/volumescope-agent-${AGENT_NODE}`);
  });
});
