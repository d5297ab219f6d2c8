/**
 * `npm run demo:cluster` (scripts/cluster/demo.ts) on the test cluster: the demo's own pieces —
 * the observe-mode agent beside kubelet-0 (startKubeletObserver), the demo workload applied through
 * the API server (applyClusterDemo), and the dashboard's agent list as the demo configures it
 * (clusterDemoAgents → the VOLUMESCOPE_AGENTS/VOLUMESCOPE_AGENT_TOKENS environment of the dashboard
 * process). The dashboard's route code runs in-process (`listAgents` is GET /api/agents,
 * `fetchAgentSnapshot` what its pages read through the proxy), so no dashboard build is needed.
 *
 * The workload lives in a namespace of its own; the pods are deleted at the end (no namespace
 * controller runs here, so deleting the namespace alone would leave them on the nodes).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { KUBELET_NODE, NODE, type ClusterAgent } from '../../scripts/cluster/cluster.ts';
import { OBSERVER_NAME, applyClusterDemo, clusterDemoAgents, clusterDemoOptions } from '../../scripts/cluster/demo.ts';
import { claimName, stuckHostPath } from '../../scripts/cluster/demo-workload.ts';
import { startKubeletObserver } from '../../scripts/cluster/observer.ts';
import { dashboardEnv } from '../../scripts/demo/dashboard.ts';
import { waitUntil } from '../../scripts/demo/process.ts';
import { fetchAgentSnapshot, listAgents, type AgentProxyDeps } from '../../lib/dashboard/agent-proxy.ts';
import { loadAgentsConfig } from '../../lib/dashboard/agents-config.ts';
import { realProxyDeps } from '../../lib/dashboard/testing/real-proxy-deps.ts';
import type { Snapshot } from '../../lib/api/snapshot.ts';
import { cluster, facts, versionTag } from './cluster-context.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const NS = 'demo-cluster-test';
const STEP_MS = 150_000;
const VERSIONS = [versionTag('kubelet'), versionTag('kube-apiserver')].join(', ');
const options = clusterDemoOptions(facts, NS);

let observer: ClusterAgent | null = null;
let deps: AgentProxyDeps;
let observerUrl = '';

async function podUid(name: string): Promise<string> {
  return (await cluster.kubectl(['get', 'pod', '-n', NS, name, '-o', 'jsonpath={.metadata.uid}'])).trim();
}

/** Polls the agent's snapshot, through the dashboard's proxy code, until `probe` accepts it. */
function snapshotUntil<T>(agent: string, what: string, probe: (s: Snapshot) => T | undefined): Promise<T> {
  return waitUntil(`${agent}: ${what}`, async () => probe(await fetchAgentSnapshot(agent, deps)), { deadlineMs: STEP_MS, intervalMs: 1000 });
}

beforeAll(async () => {
  await Promise.all([cluster.waitForNodeReady(60_000), cluster.waitForKubeletNodeReady(60_000)]);
  observer = await startKubeletObserver(facts, { name: OBSERVER_NAME });
  await applyClusterDemo(facts, options, STEP_MS);
  const config = loadAgentsConfig(dashboardEnv(clusterDemoAgents(facts, observer)), REPO);
  observerUrl = observer.facts.url;
  deps = realProxyDeps(() => config, { connectTimeoutMs: 5_000, actionTimeoutMs: 30_000 });
}, 2 * STEP_MS);

afterAll(async () => {
  await observer?.stop();
  await cluster.kubectlRun(['delete', 'pods', '--all', '-n', NS, '--wait=false']);
  await cluster.kubectlRun(['delete', 'pvc', '--all', '-n', NS, '--wait=false']);
});

describe(`npm run demo:cluster on the cluster (${VERSIONS})`, () => {
  it(`the dashboard's GET /api/agents lists ${NODE} and ${OBSERVER_NAME}, at their APIs`, async () => {
    const body = (await listAgents(deps).json()) as { agents: { name: string; url: string }[] };
    expect(body.agents.map((a) => [a.name, a.url])).toEqual([
      [NODE, facts.agent.url],
      [OBSERVER_NAME, observerUrl],
    ]);
  });

  it(`${NODE} (managed): the demo's pods, db-0's csi-hostpath claim mounted, log-shipper-0 stuck on its hostPath`, async () => {
    const [db, stuck] = await Promise.all([podUid('db-0'), podUid('log-shipper-0')]);
    const first = await fetchAgentSnapshot(NODE, deps);
    expect(first.nodeName).toBe(NODE);
    expect(first.observe).toBeUndefined();
    await snapshotUntil(NODE, 'web-0, db-0 and log-shipper-0 desired', (s) => {
      const names = s.desired.pods.filter((p) => p.namespace === NS).map((p) => p.name);
      return ['web-0', 'db-0', 'log-shipper-0'].every((n) => names.includes(n)) ? names : undefined;
    });
    const csi = await snapshotUntil(NODE, `db-0's claim ${claimName(NODE)} mounted`, (s) =>
      s.actual.volumes.find((v) => v.pluginName === 'kubernetes.io/csi' && v.pods.some((p) => p.podUid === db && p.outerVolumeName === 'pgdata' && p.mountState === 'mounted')),
    );
    expect(csi.deviceMountState).toBe('mounted');
    const failing = await snapshotUntil(NODE, 'the mount of log-shipper-0 failing', (s) => s.operations.find((o) => o.podUid === stuck && o.lastError !== null));
    expect(failing.lastError).toContain(`hostPath type check failed: ${stuckHostPath(options, NODE)} is not a directory`);
  });

  it(`${OBSERVER_NAME} (observe mode beside ${KUBELET_NODE}): the kubelet's pods, reports-0's claim mounted by the kubelet, log-shipper-1 outstanding with the kubelet's error`, async () => {
    const [reports, stuck] = await Promise.all([podUid('reports-0'), podUid('log-shipper-1')]);
    const first = await fetchAgentSnapshot(OBSERVER_NAME, deps);
    expect(first.nodeName).toBe(KUBELET_NODE);
    expect(first.observe?.kubeletRootDir).toBe(facts.kubelet.rootDir);
    expect(first.observe?.cleanupAllowed).toBe(false);
    await snapshotUntil(OBSERVER_NAME, 'api-0, reports-0 and log-shipper-1 desired', (s) => {
      const names = s.desired.pods.filter((p) => p.namespace === NS).map((p) => p.name);
      return ['api-0', 'reports-0', 'log-shipper-1'].every((n) => names.includes(n)) ? names : undefined;
    });
    await snapshotUntil(OBSERVER_NAME, `reports-0's claim ${claimName(KUBELET_NODE)} seen mounted`, (s) =>
      // Rebuilt from disk as the kubelet's reconstruction does: the pod mount is named after the volume's directory (the PV).
      s.actual.volumes.find((v) => v.pluginName === 'kubernetes.io/csi' && v.pods.some((p) => p.podUid === reports)),
    );
    const planned = await snapshotUntil(OBSERVER_NAME, "log-shipper-1's mount outstanding with the kubelet's backoff", (s) =>
      s.observe?.plan.find((o) => o.podUid === stuck && o.kubeletBackoff !== null),
    );
    expect(planned.operation).toBe('volume_mount');
    expect(planned.kubeletBackoff?.error).toContain(`hostPath type check failed: ${stuckHostPath(options, KUBELET_NODE)} is not a directory`);
  });
});
