import { CoreV1Api } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../lib/clock/fake-clock.ts';
import { waitFor } from '../../lib/clock/testing/wait-for.ts';
import { FakeApiServer } from '../../lib/sources/kube/testing/fake-apiserver.ts';
import { fakeKubeConfig } from '../../lib/sources/kube/testing/kubeconfig-file.ts';
import { discardLogger } from '../../lib/volume/logger.ts';
import {
  agentKubeletVersion,
  ControllerManagedAttachAnnotation,
  goArch,
  initialNode,
  NodeRegistration,
  NodeStatusBuilder,
  reconcileExistingNode,
  type NodeIdentity,
} from './node-registration.ts';

// Registration runs the real client against the fake API server as system:node:node-a (Node
// authorizer and NodeRestriction refusals on); retry delays run on a fake clock.
let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

const identity: NodeIdentity = {
  nodeName: 'node-a',
  hostname: 'node-a',
  internalIp: '10.0.0.7',
  os: 'linux',
  arch: 'amd64',
  cpu: 4,
  memoryBytes: 8 * 2 ** 30,
  maxPods: 110,
  kernelVersion: '6.1.0',
  kubeletVersion: agentKubeletVersion('0.1.0'),
  port: 7070,
  controllerAttachDetach: true,
};

async function setup() {
  const server = await FakeApiServer.start({ token: 't', nodeAuthorizer: 'node-a' });
  cleanups.push(() => server.close());
  const kubeConfig = fakeKubeConfig({ server: server.url, token: 't' });
  const clock = new FakeClock(Date.UTC(2026, 0, 1, 0, 0, 0));
  const status = new NodeStatusBuilder(identity, clock);
  const registration = new NodeRegistration({ kubeConfig, identity, status, clock, logger: discardLogger });
  cleanups.push(() => {
    registration.stop();
    return Promise.resolve();
  });
  return { server, clock, status, registration, core: kubeConfig.makeApiClient(CoreV1Api) };
}

describe('NodeRegistration', () => {
  it('creates the Node as the kubelet: default labels, the attach/detach annotation, addresses, resources, nodeInfo and Ready', async () => {
    const { registration, core } = await setup();

    expect(await registration.register()).toBe(true);

    const node = await core.readNode({ name: 'node-a' });
    expect(node.metadata?.labels).toEqual({
      'kubernetes.io/hostname': 'node-a',
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': 'amd64',
      'beta.kubernetes.io/os': 'linux',
      'beta.kubernetes.io/arch': 'amd64',
    });
    expect(node.metadata?.annotations).toEqual({ [ControllerManagedAttachAnnotation]: 'true' });
    expect(node.status?.addresses).toEqual([{ type: 'InternalIP', address: '10.0.0.7' }, { type: 'Hostname', address: 'node-a' }]);
    expect(node.status?.capacity).toEqual({ cpu: '4', memory: '8388608Ki', pods: '110' });
    expect(node.status?.allocatable).toEqual(node.status?.capacity);
    expect(node.status?.nodeInfo?.kubeletVersion).toBe('v1.34.4-volumescope.0.1.0');
    expect(node.status?.daemonEndpoints?.kubeletEndpoint?.Port).toBe(7070);
    const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
    expect(ready).toMatchObject({ status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status' });
    expect(node.status?.conditions?.map((c) => `${c.type}=${c.status}`)).toEqual(['MemoryPressure=False', 'DiskPressure=False', 'PIDPressure=False', 'Ready=True']);
    expect(registration.node()?.metadata?.uid).toBe(node.metadata?.uid);
  });

  it('on AlreadyExists reconciles the attach/detach annotation and the default labels of the existing node, keeping its other labels', async () => {
    const { server, registration, core } = await setup();
    server.put('nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-a', labels: { 'kubernetes.io/hostname': 'old-name', 'example.com/pool': 'blue' } }, status: {} });

    expect(await registration.register()).toBe(true);

    const node = await core.readNode({ name: 'node-a' });
    expect(node.metadata?.annotations?.[ControllerManagedAttachAnnotation]).toBe('true');
    expect(node.metadata?.labels).toMatchObject({ 'kubernetes.io/hostname': 'node-a', 'kubernetes.io/os': 'linux', 'example.com/pool': 'blue' });
    expect(server.requests({ resource: 'nodes', verb: 'create' })).toHaveLength(1);
    expect(server.requests({ resource: 'nodes', verb: 'patch' })).toHaveLength(1);
  });

  it('retries a failed registration after 100 ms, doubling', async () => {
    const { server, clock, registration } = await setup();
    server.failRequests({ resource: 'nodes', verb: 'create', status: 500, times: 2 });

    const registered = registration.register();
    await waitFor(() => server.requests({ resource: 'nodes', verb: 'create' }).length === 1 && clock.pendingTimers() > 0, { what: 'first attempt failed' });
    await clock.advance(99);
    expect(server.requests({ resource: 'nodes', verb: 'create' })).toHaveLength(1);
    await clock.advance(1);
    await waitFor(() => server.requests({ resource: 'nodes', verb: 'create' }).length === 2 && clock.pendingTimers() > 0, { what: 'second attempt failed' });
    await clock.advance(200);

    expect(await registered).toBe(true);
    expect(server.get('nodes', undefined, 'node-a')).toBeDefined();
  });
});

describe('NodeStatusBuilder', () => {
  it('sends a new heartbeat every report and keeps the transition time; leaves volumesInUse out until given', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 0, 0, 0, 500));
    const builder = new NodeStatusBuilder(identity, clock);
    const first = builder.status(null);
    await clock.advance(10_000);
    const second = builder.status(['kubernetes.io/csi/d^v1']);

    const ready = (s: Record<string, unknown>) => (s.conditions as { type: string; lastHeartbeatTime: string; lastTransitionTime: string }[]).find((c) => c.type === 'Ready');
    expect(ready(first)).toMatchObject({ lastHeartbeatTime: '2026-01-01T00:00:00Z', lastTransitionTime: '2026-01-01T00:00:00Z' });
    expect(ready(second)).toMatchObject({ lastHeartbeatTime: '2026-01-01T00:00:10Z', lastTransitionTime: '2026-01-01T00:00:00Z' });
    expect('volumesInUse' in first).toBe(false);
    expect(second.volumesInUse).toEqual(['kubernetes.io/csi/d^v1']);
    expect(second.daemonEndpoints).toEqual({ kubeletEndpoint: { Port: 7070 } });
  });

  it('adopts the transition time of an existing node whose condition already has the reported status', () => {
    const builder = new NodeStatusBuilder(identity, new FakeClock(Date.UTC(2026, 0, 2)));
    builder.adoptExisting({ status: { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date(Date.UTC(2025, 5, 1)) }, { type: 'DiskPressure', status: 'True', lastTransitionTime: '2025-06-01T00:00:00Z' }] } });

    const conditions = builder.status(null).conditions as { type: string; lastTransitionTime: string }[];
    expect(conditions.find((c) => c.type === 'Ready')?.lastTransitionTime).toBe('2025-06-01T00:00:00Z');
    // DiskPressure was True; the agent reports False: a transition now.
    expect(conditions.find((c) => c.type === 'DiskPressure')?.lastTransitionTime).toBe('2026-01-02T00:00:00Z');
  });
});

describe('node registration helpers', () => {
  it('initialNode has no attach/detach annotation when the agent attaches itself; reconcile removes one', () => {
    const own = { ...identity, controllerAttachDetach: false };
    const node = initialNode(own, new NodeStatusBuilder(own, new FakeClock()));
    expect((node.metadata as { annotations: object }).annotations).toEqual({});
    expect(reconcileExistingNode(own, { metadata: { labels: initialLabels(), annotations: { [ControllerManagedAttachAnnotation]: 'true' } } })).toEqual({
      metadata: { annotations: { [ControllerManagedAttachAnnotation]: null } },
    });
    expect(reconcileExistingNode(identity, { metadata: { labels: initialLabels(), annotations: { [ControllerManagedAttachAnnotation]: 'true' } } })).toBeNull();
  });

  it('spells the architecture as Go does', () => {
    expect(goArch('x64')).toBe('amd64');
    expect(goArch('arm64')).toBe('arm64');
  });
});

function initialLabels(): Record<string, string> {
  return { 'kubernetes.io/hostname': 'node-a', 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', 'beta.kubernetes.io/os': 'linux', 'beta.kubernetes.io/arch': 'amd64' };
}
