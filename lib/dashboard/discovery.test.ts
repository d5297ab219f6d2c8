import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as clientNode from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { realClock } from '../clock/clock.ts';
import { FakeClock } from '../clock/fake-clock.ts';
import { FakeApiServer } from '../sources/kube/testing/fake-apiserver.ts';
import { writeKubeconfigFile } from '../sources/kube/testing/kubeconfig-file.ts';
import { waitFor } from '../clock/testing/wait-for.ts';
import { AgentDiscovery, agentsFromPods, loadDiscoveryKubeConfig, type AgentPod } from './discovery.ts';
import { DEFAULT_DISCOVERY_SELECTOR, isDiscoveryConfigError, parseDiscoverySettings, type DiscoverySettings } from './discovery-settings.ts';
import { fakeDiscoveryFiles as files } from './testing/discovery-files.ts';

// The informer tests run the real @kubernetes/client-node against a FakeApiServer over real
// HTTP on 127.0.0.1; waits poll with deadlines; backoffs are shortened so recovery happens
// within them.

const API_TOKEN = 'dashboard-sa-token-for-the-api';
const NAMESPACE = 'volumescope';
const AGENT_LABELS = { 'app.kubernetes.io/name': 'volumescope-agent' };

interface AgentPodOptions {
  readonly ip?: string;
  readonly phase?: string;
  readonly apiPort?: number;
  readonly namespace?: string;
  readonly labels?: Record<string, string>;
  readonly created?: string;
  readonly deleting?: boolean;
}

/** A pod as the API serves it (JSON), of which discovery reads the {@link AgentPod} fields. */
interface TestPod extends AgentPod {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { name: string; namespace: string; labels: Record<string, string>; creationTimestamp?: string; deletionTimestamp?: string };
  readonly spec: { nodeName: string; containers: { name: string; image: string; ports: { name: string; containerPort: number }[] }[] };
  readonly status: { phase: string; podIP?: string };
}

/** An agent DaemonSet pod on `node`. */
function agentPod(name: string, node: string, o: AgentPodOptions = {}): TestPod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: o.namespace ?? NAMESPACE,
      labels: o.labels ?? AGENT_LABELS,
      ...(o.created !== undefined ? { creationTimestamp: o.created } : {}),
      ...(o.deleting === true ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
    },
    spec: {
      nodeName: node,
      containers: [
        {
          name: 'agent',
          image: 'volumescope/agent',
          ports: [{ name: 'metrics', containerPort: 9100 }, ...(o.apiPort !== undefined ? [{ name: 'api', containerPort: o.apiPort }] : [])],
        },
      ],
    },
    status: { phase: o.phase ?? 'Running', ...(o.ip !== undefined ? { podIP: o.ip } : {}) },
  };
}

describe('agents from pods', () => {
  const settings = { tokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token', defaultPort: 7070 };

  it('one agent per Running pod with an IP, named by its node, at the api port or the default', () => {
    // Act
    const agents = agentsFromPods(
      [agentPod('agent-b', 'node-b', { ip: '10.0.0.6' }), agentPod('agent-a', 'node-a', { ip: '10.0.0.5', apiPort: 8443 }), agentPod('agent-c', 'node-c', { ip: 'fd00::7' })],
      settings,
    );

    // Assert
    expect(agents).toEqual([
      { name: 'node-a', url: 'http://10.0.0.5:8443', tokenFile: settings.tokenFile },
      { name: 'node-b', url: 'http://10.0.0.6:7070', tokenFile: settings.tokenFile },
      { name: 'node-c', url: 'http://[fd00::7]:7070', tokenFile: settings.tokenFile },
    ]);
  });

  it.each([
    { name: 'a pod without an IP', pod: agentPod('p', 'node-a') },
    { name: 'a Pending pod', pod: agentPod('p', 'node-a', { ip: '10.0.0.5', phase: 'Pending' }) },
    { name: 'a Succeeded pod', pod: agentPod('p', 'node-a', { ip: '10.0.0.5', phase: 'Succeeded' }) },
    { name: 'a pod on no node', pod: agentPod('p', '', { ip: '10.0.0.5' }) },
  ])('ignores $name', ({ pod }) => {
    expect(agentsFromPods([pod], settings)).toEqual([]);
  });

  it('of two agent pods on one node (a rolling update) takes the one not being deleted, then the newest', () => {
    const old = agentPod('agent-old', 'node-a', { ip: '10.0.0.5', created: '2026-01-01T00:00:00Z' });
    const fresh = agentPod('agent-new', 'node-a', { ip: '10.0.0.9', created: '2026-01-02T00:00:00Z' });
    const leaving = agentPod('agent-newest', 'node-a', { ip: '10.0.0.10', created: '2026-01-03T00:00:00Z', deleting: true });

    expect(agentsFromPods([old, fresh], settings).map((a) => a.url)).toEqual(['http://10.0.0.9:7070']);
    expect(agentsFromPods([fresh, old], settings).map((a) => a.url)).toEqual(['http://10.0.0.9:7070']);
    expect(agentsFromPods([leaving, old], settings).map((a) => a.url)).toEqual(['http://10.0.0.5:7070']);
    expect(agentsFromPods([leaving], settings).map((a) => a.url)).toEqual(['http://10.0.0.10:7070']);
  });
});

describe('AgentDiscovery against a Kubernetes API', () => {
  let cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    cleanups = [];
  });

  async function cluster(): Promise<{ api: FakeApiServer; kubeconfig: string }> {
    const api = await FakeApiServer.start({ token: API_TOKEN });
    cleanups.push(() => api.close());
    const dir = mkdtempSync(join(tmpdir(), 'vs-discovery-'));
    cleanups.push(() => {
      rmSync(dir, { recursive: true, force: true });
    });
    const kubeconfig = await writeKubeconfigFile(join(dir, 'kubeconfig.yaml'), { server: api.url, token: API_TOKEN });
    return { api, kubeconfig };
  }

  function discover(kubeconfig: string, env: Record<string, string> = {}): { discovery: AgentDiscovery; settings: DiscoverySettings; changes: () => number } {
    const settings = parseDiscoverySettings({ KUBECONFIG: kubeconfig, VOLUMESCOPE_DISCOVERY_NAMESPACE: NAMESPACE, ...env }, files({ cwd: '/' }));
    let changes = 0;
    const discovery = new AgentDiscovery({
      settings,
      clock: realClock,
      backoff: { initialMs: 20, maxMs: 100 },
      onChange: () => {
        changes++;
      },
    });
    cleanups.push(() => discovery.stop());
    return { discovery, settings, changes: () => changes };
  }

  const names = (d: AgentDiscovery): string[] => d.agents().map((a) => a.name);

  it('lists the agent pods: Running ones with an IP become agents; they appear and disappear with their pods', async () => {
    // Arrange: two agents, one pod without an IP yet, one not Running, and pods that do not match.
    const { api, kubeconfig } = await cluster();
    api.put('pods', agentPod('agent-a', 'node-a', { ip: '10.0.0.5' }));
    api.put('pods', agentPod('agent-b', 'node-b', { ip: '10.0.0.6', apiPort: 9443 }));
    api.put('pods', agentPod('agent-c', 'node-c'));
    api.put('pods', agentPod('agent-d', 'node-d', { ip: '10.0.0.8', phase: 'Pending' }));
    api.put('pods', agentPod('web', 'node-e', { ip: '10.0.0.9', labels: { app: 'web' } }));
    api.put('pods', agentPod('agent-x', 'node-x', { ip: '10.0.0.10', namespace: 'elsewhere' }));
    const { discovery, settings } = discover(kubeconfig);

    // Act
    await discovery.start();
    await discovery.whenSettled(4_000);

    // Assert
    expect(discovery.status()).toEqual({ namespace: NAMESPACE, selector: DEFAULT_DISCOVERY_SELECTOR, listed: true, error: null });
    expect(discovery.agents()).toEqual([
      { name: 'node-a', url: 'http://10.0.0.5:7070', tokenFile: settings.tokenFile },
      { name: 'node-b', url: 'http://10.0.0.6:9443', tokenFile: settings.tokenFile },
    ]);
    // The list and the watch used the label selector.
    const listed = api.requests({ resource: 'pods' });
    expect(listed.length).toBeGreaterThan(0);
    expect(listed.every((r) => r.namespace === NAMESPACE && r.query.labelSelector === DEFAULT_DISCOVERY_SELECTOR)).toBe(true);

    // A third agent pod appears; the one without an IP gets one.
    api.put('pods', agentPod('agent-f', 'node-f', { ip: '10.0.0.11' }));
    api.put('pods', agentPod('agent-c', 'node-c', { ip: '10.0.0.7' }));
    await waitFor(() => names(discovery).join() === 'node-a,node-b,node-c,node-f', { what: 'node-c and node-f discovered' });

    // One is deleted; one stops running.
    api.remove('pods', NAMESPACE, 'agent-a');
    api.put('pods', agentPod('agent-f', 'node-f', { ip: '10.0.0.11', phase: 'Failed' }));
    await waitFor(() => names(discovery).join() === 'node-b,node-c', { what: 'node-a and node-f gone' });
  });

  it('an empty namespace is listed, with no agents', async () => {
    const { kubeconfig } = await cluster();
    const { discovery } = discover(kubeconfig);

    await discovery.start();
    await discovery.whenSettled(4_000);

    expect(discovery.status()).toMatchObject({ listed: true, error: null });
    expect(discovery.agents()).toEqual([]);
  });

  it('keeps the last list while the API refuses (RBAC), names the namespace variable, and recovers', async () => {
    // Arrange: discovered two agents.
    const { api, kubeconfig } = await cluster();
    api.put('pods', agentPod('agent-a', 'node-a', { ip: '10.0.0.5' }));
    api.put('pods', agentPod('agent-b', 'node-b', { ip: '10.0.0.6' }));
    const { discovery, changes } = discover(kubeconfig);
    await discovery.start();
    await discovery.whenSettled(4_000);
    expect(names(discovery)).toEqual(['node-a', 'node-b']);
    const changesBefore = changes();

    // Act: the Role is gone; the watch breaks and every list and watch is forbidden.
    const allow = api.failRequests({ resource: 'pods', status: 403, message: 'pods is forbidden: User "system:serviceaccount:volumescope:dashboard" cannot watch resource "pods"' });
    api.dropWatches('pods');
    await waitFor(() => discovery.status().error !== null, { what: 'the failure reported' });

    // Assert: the variable to check, the status, and the agents kept. (A failed watch carries
    // only its status; a failed list also the API's message, see the selector test.)
    const failing = discovery.status();
    expect(failing.listed).toBe(true);
    expect(failing.error?.variable).toBe('VOLUMESCOPE_DISCOVERY_NAMESPACE');
    expect(failing.error?.message).toContain('HTTP 403 Forbidden');
    expect(failing.error?.message).toContain('namespace "volumescope"');
    expect(names(discovery)).toEqual(['node-a', 'node-b']);
    expect(changes()).toBeGreaterThan(changesBefore);

    // While forbidden, a pod goes away; once allowed again the list follows and the error clears.
    api.remove('pods', NAMESPACE, 'agent-b');
    expect(names(discovery)).toEqual(['node-a', 'node-b']);
    allow();
    await waitFor(() => discovery.status().error === null && names(discovery).join() === 'node-a', { what: 'recovered without node-b' });
  });

  it('a rejected selector is blamed on the selector variable', async () => {
    const { kubeconfig } = await cluster();
    const { discovery } = discover(kubeconfig, { VOLUMESCOPE_DISCOVERY_SELECTOR: 'app==a==b' });

    await discovery.start();
    await discovery.whenSettled(4_000);

    expect(discovery.status().listed).toBe(false);
    expect(discovery.status().error).toMatchObject({ variable: 'VOLUMESCOPE_DISCOVERY_SELECTOR' });
    expect(discovery.status().error?.message).toContain('HTTP 400 Bad Request: invalid label selector term');
  });

  it('rejected credentials are blamed on KUBECONFIG; nothing listed, nothing invented', async () => {
    const { api } = await cluster();
    const dir = mkdtempSync(join(tmpdir(), 'vs-discovery-'));
    cleanups.push(() => {
      rmSync(dir, { recursive: true, force: true });
    });
    const wrong = await writeKubeconfigFile(join(dir, 'kubeconfig.yaml'), { server: api.url, token: 'not-the-token' });
    api.put('pods', agentPod('agent-a', 'node-a', { ip: '10.0.0.5' }));
    const { discovery } = discover(wrong);

    await discovery.start();
    await discovery.whenSettled(4_000);

    expect(discovery.status()).toMatchObject({ listed: false, error: { variable: 'KUBECONFIG' } });
    expect(discovery.status().error?.message).toContain('HTTP 401');
    expect(discovery.agents()).toEqual([]);
  });

  it('keeps the last list while the API server is down, and follows it again after its restart', async () => {
    // Arrange
    const { api, kubeconfig } = await cluster();
    api.put('pods', agentPod('agent-a', 'node-a', { ip: '10.0.0.5' }));
    const { discovery } = discover(kubeconfig);
    await discovery.start();
    await discovery.whenSettled(4_000);

    // Act: the API server goes away.
    await api.stop();
    await waitFor(() => discovery.status().error !== null, { what: 'the outage reported' });

    // Assert
    expect(discovery.status().error).toMatchObject({ variable: 'KUBECONFIG' });
    expect(discovery.status().error?.message).toContain(`cannot list the agent pods at ${api.url}`);
    expect(names(discovery)).toEqual(['node-a']);

    // It comes back with one more agent pod.
    api.put('pods', agentPod('agent-b', 'node-b', { ip: '10.0.0.6' }));
    await api.restart();
    await waitFor(() => discovery.status().error === null && names(discovery).join() === 'node-a,node-b', { what: 'recovered with node-b', timeoutMs: 6_000 });
  });

  it('stop is final: no watch is opened afterwards', async () => {
    const { api, kubeconfig } = await cluster();
    const { discovery } = discover(kubeconfig);
    await discovery.start();
    await discovery.whenSettled(4_000);
    await waitFor(() => api.watchCount('pods') === 1, { what: 'the watch open' });

    await discovery.stop();

    await waitFor(() => api.watchCount('pods') === 0, { what: 'the watch closed' });
    api.put('pods', agentPod('agent-a', 'node-a', { ip: '10.0.0.5' }));
    expect(discovery.agents()).toEqual([]);
  });

  it('a LIST that gets no answer is given up after the list timeout on the clock, reported, and retried', async () => {
    // Arrange: the API server holds every LIST of pods; time is a FakeClock.
    const { api, kubeconfig } = await cluster();
    api.put('pods', agentPod('agent-a', 'node-a', { ip: '10.0.0.5' }));
    const held = api.holdRequests({ resource: 'pods', verb: 'list' });
    cleanups.push(() => {
      held.release();
    });
    const clock = new FakeClock();
    const settings = parseDiscoverySettings({ KUBECONFIG: kubeconfig, VOLUMESCOPE_DISCOVERY_NAMESPACE: NAMESPACE }, files({ cwd: '/' }));
    const discovery = new AgentDiscovery({ settings, clock, backoff: { initialMs: 1_000, maxMs: 1_000 }, listTimeoutMs: 5_000 });
    cleanups.push(() => discovery.stop());
    const started = discovery.start();
    await waitFor(() => api.requests({ resource: 'pods', verb: 'list' }).length === 1, { what: 'the LIST sent' });

    // Act
    await clock.advance(5_000);
    await started;

    // Assert: reported against the API configuration, then listed once the server answers.
    expect(discovery.status().error).toMatchObject({
      variable: 'KUBECONFIG',
      message: `cannot list the agent pods at ${api.url}: LIST /api/v1/namespaces/${NAMESPACE}/pods?labelSelector=${DEFAULT_DISCOVERY_SELECTOR} timed out after 5000 ms`,
    });
    held.release();
    await clock.advance(1_000);
    await waitFor(() => discovery.status().error === null && names(discovery).join() === 'node-a', { what: 'listed after the retry' });
  });
});

describe('the discovery kubeconfig', () => {
  let dir = '';
  afterEach(() => {
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
    dir = '';
  });

  function serviceAccount(withToken: boolean): string {
    dir = mkdtempSync(join(tmpdir(), 'vs-discovery-sa-'));
    const sa = join(dir, 'serviceaccount');
    mkdirSync(sa);
    writeFileSync(join(sa, 'ca.crt'), 'not a real certificate');
    if (withToken) writeFileSync(join(sa, 'token'), 'dashboard-token');
    return sa;
  }

  it('in-cluster, it is the agent loader\'s configuration, built from the environment the settings came from', () => {
    const sa = serviceAccount(true);

    const kc = loadDiscoveryKubeConfig(clientNode, { kind: 'in-cluster', variable: 'KUBERNETES_SERVICE_HOST' }, { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '6443' }, sa);

    expect(kc.getCurrentCluster()).toMatchObject({ server: 'https://[fd00::1]:6443', caFile: join(sa, 'ca.crt'), skipTLSVerify: false });
    expect(kc.getCurrentUser()?.authProvider).toEqual({ name: 'tokenFile', config: { tokenFile: join(sa, 'token') } });
  });

  it.each([
    { name: 'an in-cluster setup without a token', source: { kind: 'in-cluster', variable: 'KUBERNETES_SERVICE_HOST' } as const, detail: 'no service account token at' },
    { name: 'a kubeconfig that cannot be read', source: { kind: 'kubeconfig', files: ['/nonexistent/kubeconfig'], variable: 'KUBECONFIG' } as const, detail: 'kubeconfig /nonexistent/kubeconfig cannot be loaded' },
  ])('$name is a settings error naming $source.variable', ({ source, detail }) => {
    const sa = serviceAccount(false);
    const env = { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' };

    const namesIt = (err: unknown): boolean => isDiscoveryConfigError(err) && err.variable === source.variable && err.detail.startsWith(detail);
    expect(() => loadDiscoveryKubeConfig(clientNode, source, env, sa)).toThrow(expect.toSatisfy(namesIt) as Error);
  });
});
