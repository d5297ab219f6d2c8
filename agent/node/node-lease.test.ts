import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../lib/clock/fake-clock.ts';
import { waitFor } from '../../lib/clock/testing/wait-for.ts';
import { FakeApiServer } from '../../lib/sources/kube/testing/fake-apiserver.ts';
import { fakeKubeConfig } from '../../lib/sources/kube/testing/kubeconfig-file.ts';
import type { JsonObject } from '../../lib/sources/kube/plain-json.ts';
import { discardLogger } from '../../lib/volume/logger.ts';
import { NodeLeaseController, nodeLeaseNamespace, nodeLeaseRenewIntervalMs } from './node-lease.ts';

// The lease controller with the real client against the fake API server as system:node:node-a;
// its timers run on a fake clock.
let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function setup(nodeUid: string | null = 'uid-node-a') {
  const server = await FakeApiServer.start({ token: 't', nodeAuthorizer: 'node-a' });
  cleanups.push(() => server.close());
  const clock = new FakeClock(Date.UTC(2026, 0, 1, 0, 0, 0));
  const lease = new NodeLeaseController({ kubeConfig: fakeKubeConfig({ server: server.url, token: 't' }), nodeName: 'node-a', clock, logger: discardLogger, nodeUid: () => nodeUid });
  cleanups.push(() => lease.stop());
  const stored = (): JsonObject | undefined => server.get('leases', nodeLeaseNamespace, 'node-a');
  const spec = (): JsonObject => (stored()?.spec ?? {}) as JsonObject;
  return { server, clock, lease, stored, spec };
}

describe('NodeLeaseController', () => {
  it('creates the node lease owned by the Node, with the kubelet holder, duration and a microsecond renew time', async () => {
    const { lease, stored, spec } = await setup();

    await lease.sync();

    expect(spec()).toEqual({ holderIdentity: 'node-a', leaseDurationSeconds: 40, renewTime: '2026-01-01T00:00:00.000000Z' });
    expect((stored()?.metadata as JsonObject).ownerReferences).toEqual([{ apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: 'uid-node-a' }]);
  });

  it('renews every 10 s with an update of the lease it holds', async () => {
    const { server, clock, lease, spec } = await setup();
    lease.start();
    await clock.advance(0);
    await waitFor(() => spec().renewTime !== undefined && clock.pendingTimers() > 0, { what: 'lease created and renewal scheduled' });

    await clock.advance(nodeLeaseRenewIntervalMs);
    await waitFor(() => spec().renewTime === '2026-01-01T00:00:10.000000Z', { what: 'lease renewed' });
    expect(server.requests({ resource: 'leases', verb: 'create' })).toHaveLength(1);
    expect(server.requests({ resource: 'leases', verb: 'update' })).toHaveLength(1);
  });

  it('creates the lease again when it was deleted, and adds the owner once the node exists', async () => {
    let uid: string | null = null;
    const server = await FakeApiServer.start({ token: 't', nodeAuthorizer: 'node-a' });
    cleanups.push(() => server.close());
    const lease = new NodeLeaseController({ kubeConfig: fakeKubeConfig({ server: server.url, token: 't' }), nodeName: 'node-a', clock: new FakeClock(), logger: discardLogger, nodeUid: () => uid });
    cleanups.push(() => lease.stop());

    await lease.sync();
    expect((server.get('leases', nodeLeaseNamespace, 'node-a')?.metadata as JsonObject).ownerReferences).toBeUndefined();
    uid = 'uid-later';
    await lease.sync();
    expect((server.get('leases', nodeLeaseNamespace, 'node-a')?.metadata as JsonObject).ownerReferences).toEqual([{ apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: 'uid-later' }]);

    server.remove('leases', nodeLeaseNamespace, 'node-a');
    await lease.sync();
    expect(server.get('leases', nodeLeaseNamespace, 'node-a')).toBeDefined();
    expect(server.requests({ resource: 'leases', verb: 'create' })).toHaveLength(2);
  });

  it('retries a failed ensure after 200 ms, not after the renew interval', async () => {
    const { server, clock, lease, spec } = await setup();
    server.failRequests({ resource: 'leases', verb: 'get', status: 503, times: 1 });
    lease.start();
    await clock.advance(0);
    await waitFor(() => server.requests({ resource: 'leases', verb: 'get' }).length === 1 && clock.pendingTimers() > 0, { what: 'failed attempt' });
    expect(spec().renewTime).toBeUndefined();

    await clock.advance(200);
    await waitFor(() => spec().renewTime !== undefined, { what: 'lease created on the retry' });
  });
});
