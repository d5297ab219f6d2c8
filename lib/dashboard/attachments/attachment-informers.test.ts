import * as clientNode from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { realClock } from '../../clock/clock.ts';
import { waitFor } from '../../clock/testing/wait-for.ts';
import { FakeApiServer } from '../../sources/kube/testing/fake-apiserver.ts';
import { fakeKubeConfig } from '../../sources/kube/testing/kubeconfig-file.ts';
import { AttachmentInformers } from './attachment-informers.ts';
import type { AttachmentModel } from './model.ts';
import { pod } from './testing/fixtures.ts';
import { seedAttachedVolume } from './testing/seed.ts';

// The real @kubernetes/client-node against a FakeApiServer over real HTTP on 127.0.0.1; the
// idle stop runs on a short real timeout; waits poll with deadlines.

const TOKEN = 'dashboard-token';
let api: FakeApiServer | undefined;
let informers: AttachmentInformers | undefined;

afterEach(async () => {
  await informers?.stop();
  await api?.close();
  informers = undefined;
  api = undefined;
});

async function started(idleMs = 60_000): Promise<{ api: FakeApiServer; informers: AttachmentInformers; builds: AttachmentModel[] }> {
  api = await FakeApiServer.start({ token: TOKEN });
  seedAttachedVolume(api, [pod('app-0', 'node-a', 'claim-pv-1')], realClock.now());
  const builds: AttachmentModel[] = [];
  informers = new AttachmentInformers({
    clientNode,
    kubeConfig: fakeKubeConfig({ server: api.url, token: TOKEN }),
    clock: realClock,
    idleMs,
    backoff: { initialMs: 50, maxMs: 200 },
    onRebuild: (m) => builds.push(m),
  });
  return { api, informers, builds };
}

describe('AttachmentInformers', () => {
  it('lists every resource, builds the model, and follows a pod moving to another node (Multi-Attach in the model)', async () => {
    const { api: server, informers: set, builds } = await started();
    expect(set.view()).toMatchObject({ listed: false, model: null });
    await set.whenListed(10_000);
    const first = set.view();
    expect(first.listed).toBe(true);
    expect(first.problems).toEqual([]);
    expect(first.model?.volumes[0]?.nodes).toEqual([expect.objectContaining({ node: 'node-a', desired: true, attached: true, inUse: true })]);
    expect(first.model?.nodes['node-a']?.leaseRenewedMs).not.toBeNull();
    // One LIST per resource, including the node Leases of kube-node-lease.
    expect(server.requests({ verb: 'list' }).map((r) => r.resource).sort()).toEqual(
      ['csidrivers', 'csinodes', 'leases', 'nodes', 'persistentvolumeclaims', 'persistentvolumes', 'pods', 'volumeattachments'].sort(),
    );

    const before = Date.now();
    server.remove('pods', 'default', 'app-0');
    server.put('pods', { apiVersion: 'v1', kind: 'Pod', ...pod('app-1', 'node-b', 'claim-pv-1') });
    await waitFor(() => set.view().model?.volumes[0]?.nodes.length === 2, { what: 'the moved pod in the model' });
    const [a, b] = set.view().model?.volumes[0]?.nodes ?? [];
    expect(b).toMatchObject({ node: 'node-b', desired: true, attached: false });
    expect(a).toMatchObject({ node: 'node-a', desired: false, attached: true });
    // The detach request was taken when the change arrived, not at the baseline.
    expect(a?.detachRequest?.lowerBound).toBe(false);
    expect(a?.detachRequest?.sinceMs).toBeGreaterThanOrEqual(before);
    expect(builds.length).toBeGreaterThanOrEqual(2);
  });

  it('reports a resource it may not list, keeps the others, and recovers', async () => {
    const { api: server, informers: set } = await started();
    const release = server.failRequests({ resource: 'leases', status: 403 });
    set.view();
    await waitFor(() => set.view().problems.length > 0, { what: 'the leases problem' });
    expect(set.view().problems).toEqual([expect.objectContaining({ kind: 'leases', path: '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', message: expect.stringMatching(/^HTTP 403/) as string })]);
    expect(set.view().listed).toBe(false);
    release();
    await waitFor(() => set.view().listed && set.view().problems.length === 0, { what: 'recovery', timeoutMs: 15_000 });
  });

  it('stops when no request came for the idle time, and starts again on the next', async () => {
    const { api: server, informers: set } = await started(300);
    await set.whenListed(10_000);
    expect(set.isRunning()).toBe(true);
    await waitFor(() => !set.isRunning(), { what: 'the idle stop' });
    await waitFor(() => server.watchCount() === 0, { what: 'every watch closed' });
    expect(set.view().listed).toBe(false);
    expect(set.isRunning()).toBe(true);
    await set.whenListed(10_000);
    expect(set.view().model?.volumes).toHaveLength(1);
  });
});
