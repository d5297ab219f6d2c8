/**
 * Dashboard discovery with two agents, end to end inside one process: a Kubernetes API (the
 * FakeApiServer, spoken to by the real client-node) lists two agent pods whose pod IP is
 * 127.0.0.1 and whose `api` container ports are those of two real agent servers; the dashboard's
 * own route handlers, configured only through the environment, find them and reach both with the
 * discovery token file.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GET as getAgentList } from '../../app/api/agents/route.ts';
import { GET as getSnapshot } from '../../app/api/agents/[agent]/snapshot/route.ts';
import { GET as getSummaries } from '../../app/api/agents/summary/route.ts';
import { mountPod1, startServer, TEST_TOKEN, type ServerFixture } from '../../agent/server/testing/server-fixture.ts';
import { parseSnapshot } from '../api/index.ts';
import { FakeApiServer } from '../sources/kube/testing/fake-apiserver.ts';
import { writeKubeconfigFile } from '../sources/kube/testing/kubeconfig-file.ts';
import { DashboardErrorBodySchema } from './dashboard-error.ts';
import { stopServerDiscovery } from './discovery.ts';
import { AgentSummariesSchema } from './summary.ts';

const API_TOKEN = 'dashboard-kube-api-token';
const NAMESPACE = 'volumescope';

/** An agent pod as the API serves it (JSON). */
function agentPod(name: string, node: string, port: number): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NAMESPACE, labels: { 'app.kubernetes.io/name': 'volumescope-agent' } },
    spec: { nodeName: node, containers: [{ name: 'agent', image: 'volumescope/agent', ports: [{ name: 'api', containerPort: port }] }] },
    status: { phase: 'Running', podIP: '127.0.0.1' },
  };
}

const ENV_NAMES = [
  'VOLUMESCOPE_LOCAL_SESSION',
  'VOLUMESCOPE_DISCOVERY',
  'VOLUMESCOPE_DISCOVERY_NAMESPACE',
  'VOLUMESCOPE_DISCOVERY_SELECTOR',
  'VOLUMESCOPE_DISCOVERY_TOKEN_FILE',
  'VOLUMESCOPE_AGENT_PORT',
  'VOLUMESCOPE_AGENTS',
  'VOLUMESCOPE_AGENT_TOKENS',
  'VOLUMESCOPE_DASHBOARD_CONFIG',
  'KUBECONFIG',
] as const;

async function summaries() {
  const res = await getSummaries(new Request('http://dashboard/api/agents/summary'));
  expect(res.status).toBe(200);
  const text = await res.text();
  expect(text).not.toContain(TEST_TOKEN);
  return AgentSummariesSchema.parse(JSON.parse(text));
}

async function listedNames(): Promise<string[]> {
  const body = (await (await getAgentList()).json()) as { agents: { name: string }[] };
  return body.agents.map((a) => a.name);
}

describe('dashboard discovery with two agents', () => {
  let api: FakeApiServer;
  let nodeA: ServerFixture;
  let nodeB: ServerFixture;
  let dir: string;
  let tokenFile: string;
  const savedEnv = new Map<string, string | undefined>();

  beforeAll(async () => {
    nodeA = await startServer();
    nodeB = await startServer();
    await mountPod1(nodeA);
    api = await FakeApiServer.start({ token: API_TOKEN });
    api.put('pods', agentPod('agent-a', 'node-a', Number(new URL(nodeA.baseUrl).port)));
    api.put('pods', agentPod('agent-b', 'node-b', Number(new URL(nodeB.baseUrl).port)));
    dir = mkdtempSync(join(tmpdir(), 'vs-discovery-relay-'));
    tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, `${TEST_TOKEN}\n`);
    const kubeconfig = await writeKubeconfigFile(join(dir, 'kubeconfig.yaml'), { server: api.url, token: API_TOKEN });
    for (const name of ENV_NAMES) savedEnv.set(name, process.env[name]);
    for (const name of ENV_NAMES) Reflect.deleteProperty(process.env, name);
    process.env.VOLUMESCOPE_DISCOVERY = 'kubernetes';
    process.env.VOLUMESCOPE_DISCOVERY_NAMESPACE = NAMESPACE;
    process.env.VOLUMESCOPE_DISCOVERY_TOKEN_FILE = tokenFile;
    process.env.KUBECONFIG = kubeconfig;
    // The requests carry no session: the local session (the agents' token files), as in the demo.
    process.env.VOLUMESCOPE_LOCAL_SESSION = 'on';
  });

  afterAll(async () => {
    await stopServerDiscovery();
    for (const [name, value] of savedEnv) {
      if (value === undefined) Reflect.deleteProperty(process.env, name);
      else process.env[name] = value;
    }
    await nodeA.close();
    await nodeB.close();
    await api.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the summary relay finds both agent pods and reaches both agents with the discovery token', async () => {
    // Act: the first request starts discovery and waits for its first list.
    const body = await summaries();

    // Assert
    expect(body.source).toBe('kubernetes');
    expect(body.discovery).toEqual({ namespace: NAMESPACE, selector: 'app.kubernetes.io/name=volumescope-agent', listed: true, error: null });
    expect(body.agents.map((e) => ({ name: e.name, url: e.url, error: e.error, pods: e.summary?.counts.pods }))).toEqual([
      { name: 'node-a', url: nodeA.baseUrl, error: null, pods: 1 },
      { name: 'node-b', url: nodeB.baseUrl, error: null, pods: 0 },
    ]);
    // The agents accepted the token: each logged its summary read with the authenticated caller.
    for (const fx of [nodeA, nodeB]) {
      const reads = fx.runtime.logger.lines.filter((l) => l.msg === 'http request' && l.fields.path === '/api/v1/summary');
      expect(reads.map((l) => [l.fields.status, l.fields.caller])).toContainEqual([200, 'test-client']);
    }
  });

  it("relays a discovered node's snapshot, reading the token file on every request", async () => {
    // Act
    const ok = await getSnapshot(new Request('http://dashboard/api/agents/node-b/snapshot'), { params: Promise.resolve({ agent: 'node-b' }) });
    writeFileSync(tokenFile, 'a-rotated-token-the-agent-does-not-know\n');
    const rotated = await getSnapshot(new Request('http://dashboard/api/agents/node-b/snapshot'), { params: Promise.resolve({ agent: 'node-b' }) });
    writeFileSync(tokenFile, `${TEST_TOKEN}\n`);

    // Assert
    expect(ok.status).toBe(200);
    expect(parseSnapshot(await ok.json()).nodeName).toBe(nodeB.runtime.nodeName);
    expect(rotated.status).toBe(502);
    expect(DashboardErrorBodySchema.parse(await rotated.json()).dashboardError).toMatchObject({ code: 'agent-unauthorized', agent: 'node-b' });
  });

  it('a node disappears when its agent pod is deleted, and appears again with a new one', async () => {
    api.remove('pods', NAMESPACE, 'agent-b');
    await waitForNames(['node-a']);

    const gone = await getSnapshot(new Request('http://dashboard/api/agents/node-b/snapshot'), { params: Promise.resolve({ agent: 'node-b' }) });
    expect(gone.status).toBe(404);

    api.put('pods', agentPod('agent-b2', 'node-b', Number(new URL(nodeB.baseUrl).port)));
    await waitForNames(['node-a', 'node-b']);
  });
});

/** Waits until `GET /api/agents` lists exactly `names` (polling, with a deadline). */
async function waitForNames(names: string[]): Promise<void> {
  const deadline = performance.now() + 5_000;
  for (;;) {
    const last = await listedNames();
    if (last.join() === names.join()) return;
    if (performance.now() > deadline) throw new Error(`GET /api/agents lists ${last.join()} instead of ${names.join()} after 5 s`);
    await new Promise<void>((resolve) => setTimeout(resolve, 10));
  }
}
