import * as clientNode from '@kubernetes/client-node';
import type { V1Pod } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { realClock } from '../clock/clock.ts';
import { FakeClock } from '../clock/fake-clock.ts';
import { FakeApiServer } from '../sources/kube/testing/fake-apiserver.ts';
import { pod } from '../sources/kube/testing/fixtures.ts';
import { fakeKubeConfig } from '../sources/kube/testing/kubeconfig-file.ts';
import { waitFor } from '../clock/testing/wait-for.ts';
import { apiErrorStatus, isConnectionRefused } from './api-errors.ts';
import type { Backoff } from './backoff.ts';
import { RequestDeadlines } from './request-deadline.ts';
import { RestartingInformer, type InformerPhase } from './restarting-informer.ts';

// The real client-node against the Kubernetes-protocol test server over HTTP. Time is a
// FakeClock: restarts, ListWatch's reconnect delays and request deadlines fire only when a test
// advances it; waits for the network are `waitFor` conditions with real-time deadlines.

let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

interface Failure {
  status: number | undefined;
  refused: boolean;
  phase: InformerPhase;
  retryInMs: number;
}

interface Calls {
  upserts: string[];
  removes: string[];
  listed: number;
  established: number;
  failures: Failure[];
}

const NODE_SELECTOR = 'spec.nodeName=node-a';

async function setup(restartBackoff: Backoff = { initialMs: 1_000, maxMs: 4_000 }): Promise<{ api: FakeApiServer; clock: FakeClock; informer: RestartingInformer<V1Pod>; calls: Calls }> {
  const api = await FakeApiServer.start({ token: 't' });
  cleanups.push(() => api.close());
  const kubeConfig = fakeKubeConfig({ server: api.url, token: 't' });
  const core = kubeConfig.makeApiClient(clientNode.CoreV1Api);
  const clock = new FakeClock();
  const deadlines = new RequestDeadlines({ clientNode, clock, timeoutMs: 10_000 });
  const calls: Calls = { upserts: [], removes: [], listed: 0, established: 0, failures: [] };
  const informer = new RestartingInformer<V1Pod>({
    clientNode,
    kubeConfig,
    clock,
    path: '/api/v1/pods',
    fieldSelector: NODE_SELECTOR,
    list: () => deadlines.run('LIST pods', (options) => core.listPodForAllNamespaces({ fieldSelector: NODE_SELECTOR }, options)),
    restartBackoff,
    handlers: {
      upsert: (p) => calls.upserts.push(p.metadata?.name ?? ''),
      remove: (p) => calls.removes.push(p.metadata?.name ?? ''),
      listed: () => {
        calls.listed++;
      },
      established: () => {
        calls.established++;
      },
      failed: (err, phase, retryInMs) => calls.failures.push({ status: apiErrorStatus(err), refused: isConnectionRefused(err), phase, retryInMs }),
    },
  });
  cleanups.push(() => informer.stop());
  return { api, clock, informer, calls };
}

/**
 * Advances the clock in `stepMs` steps until `condition` holds, polling the network (5 ms of
 * real time) between steps so that answers to the requests a step set off can arrive: both the
 * informer's restarts and ListWatch's own reconnect delays run on the clock.
 */
async function advanceUntil(clock: FakeClock, condition: () => boolean, what: string, stepMs = 250, limitMs = 120_000): Promise<void> {
  for (let elapsed = 0; !condition(); elapsed += stepMs) {
    if (elapsed >= limitMs) throw new Error(`${what}: not reached within ${limitMs} ms of clock time`);
    await clock.advance(stepMs);
    await new Promise<void>((resolve) => realClock.setTimeout(resolve, 5));
  }
}

const names = (informer: RestartingInformer<V1Pod>): string[] => informer.objects().map((p) => p.metadata?.name ?? '').sort();

describe('RestartingInformer', () => {
  it('lists, then watches with bookmarks: objects arrive through upsert and remove; listed and established are told once', async () => {
    // Arrange
    const { api, informer, calls } = await setup();
    api.put('pods', pod('a', 'node-a'));
    api.put('pods', pod('elsewhere', 'node-b'));

    // Act
    await informer.start();
    await waitFor(() => calls.established === 1, { what: 'the watch established' });

    // Assert
    expect(informer.hasListed()).toBe(true);
    expect(calls.listed).toBe(1);
    expect(names(informer)).toEqual(['a']);
    expect(api.requests({ resource: 'pods', verb: 'watch' }).map((r) => [r.query.fieldSelector, r.query.allowWatchBookmarks])).toEqual([[NODE_SELECTOR, 'true']]);

    api.put('pods', pod('b', 'node-a'));
    api.remove('pods', 'default', 'a');
    await waitFor(() => calls.removes.includes('a'), { what: 'a removed' });
    expect(names(informer)).toEqual(['b']);
    expect(calls.upserts).toEqual(['a', 'b']);
    expect(calls.failures).toEqual([]);
  });

  it('restarts a failed list only when the backoff has passed on the clock, doubling up to the cap', async () => {
    // Arrange: every LIST fails.
    const { api, clock, informer, calls } = await setup({ initialMs: 1_000, maxMs: 4_000 });
    const allow = api.failRequests({ resource: 'pods', verb: 'list', status: 500, message: 'etcdserver: request timed out' });
    const lists = (): number => api.requests({ resource: 'pods', verb: 'list' }).length;

    // Act + Assert: the first attempt fails and waits 1 s of clock time.
    await informer.start();
    expect(calls.failures).toEqual([{ status: 500, refused: false, phase: 'list', retryInMs: 1_000 }]);
    await clock.advance(999);
    expect(lists()).toBe(1);
    for (const [advanceMs, retryInMs] of [[1, 2_000], [2_000, 4_000], [4_000, 4_000]] as const) {
      const before = calls.failures.length;
      await clock.advance(advanceMs);
      await waitFor(() => calls.failures.length === before + 1, { what: `failure ${before + 1}` });
      expect(calls.failures.at(-1)).toEqual({ status: 500, refused: false, phase: 'list', retryInMs });
    }
    expect(lists()).toBe(4);
    expect(informer.hasListed()).toBe(false);

    // The API recovers: the next restart lists and watches.
    allow();
    await clock.advance(4_000);
    await waitFor(() => calls.established === 1, { what: 'the watch established' });
    expect(calls.listed).toBe(1);
  });

  it('keeps its objects while the watch is forbidden, and a failure after a recovery starts the backoff over', async () => {
    // Arrange: listed and watching, after one failed list (backoff raised to 1 s, then reset).
    const { api, clock, informer, calls } = await setup({ initialMs: 1_000, maxMs: 8_000 });
    api.put('pods', pod('a', 'node-a'));
    const once = api.failRequests({ resource: 'pods', verb: 'list', status: 500, times: 1 });
    await informer.start();
    await clock.advance(1_000);
    await waitFor(() => calls.established === 1, { what: 'the watch established' });
    once();

    // Act: the Role goes; the open watch ends and the re-watch is refused.
    const allow = api.failRequests({ resource: 'pods', verb: 'watch', status: 403, message: 'pods is forbidden' });
    api.dropWatches('pods');
    await advanceUntil(clock, () => calls.failures.length === 2, 'the watch failure');

    // Assert: the delay starts from the initial value again; the objects stay.
    expect(calls.failures.at(-1)).toEqual({ status: 403, refused: false, phase: 'watch', retryInMs: 1_000 });
    expect(names(informer)).toEqual(['a']);
    expect(calls.removes).toEqual([]);

    // Allowed again: the restart watches again.
    allow();
    await advanceUntil(clock, () => calls.established === 2, 'watching again');
  });

  it('reports an API server that is gone as connection refused, and follows it again after its restart', async () => {
    const { api, clock, informer, calls } = await setup();
    api.put('pods', pod('a', 'node-a'));
    await informer.start();
    await waitFor(() => calls.established === 1, { what: 'the watch established' });

    await api.stop();
    await advanceUntil(clock, () => calls.failures.some((f) => f.refused), 'connection refused');
    expect(calls.failures.filter((f) => f.refused)[0]).toMatchObject({ status: undefined });
    expect(names(informer)).toEqual(['a']);

    api.put('pods', pod('b', 'node-a'));
    await api.restart();
    await advanceUntil(clock, () => calls.established === 2 && names(informer).join() === 'a,b', 'recovered with b');
  });

  it('relist replaces its objects with a fresh list: what the new list lacks is removed', async () => {
    const { api, informer, calls } = await setup();
    api.put('pods', pod('a', 'node-a'));
    api.put('pods', pod('b', 'node-a'));
    await informer.start();
    await waitFor(() => calls.established === 1, { what: 'the watch established' });

    // The watch misses b's deletion (held watch requests see nothing; the list has the truth).
    const held = api.holdRequests({ resource: 'pods', verb: 'watch' });
    api.dropWatches('pods');
    api.remove('pods', 'default', 'b');
    held.release();
    await informer.relist();
    await waitFor(() => calls.established === 2, { what: 'watching after the relist' });

    expect(names(informer)).toEqual(['a']);
    expect(calls.removes).toEqual(['b']);
    expect(calls.listed).toBe(1);
  });

  it('stop is final: the reconnect delay is released, no watch is opened and no callback runs afterwards', async () => {
    // Arrange: a clean close, so ListWatch waits its reconnect delay on the clock.
    const { api, clock, informer, calls } = await setup();
    await informer.start();
    await waitFor(() => calls.established === 1, { what: 'the watch established' });
    // ListWatch re-watches at once after the first close, and waits after the next ones.
    api.dropWatches('pods');
    await waitFor(() => api.requests({ resource: 'pods', verb: 'watch' }).length === 2 && api.watchCount('pods') === 1, { what: 'watching again' });
    const watches = api.requests({ resource: 'pods', verb: 'watch' }).length;
    api.dropWatches('pods');
    await waitFor(() => clock.pendingTimers() > 0, { what: 'the reconnect delay armed' });

    // Act
    await informer.stop();
    expect(clock.pendingTimers()).toBe(0);
    await clock.advance(60_000);
    api.put('pods', pod('late', 'node-a'));

    // Assert
    expect(api.watchCount('pods')).toBe(0);
    expect(api.requests({ resource: 'pods', verb: 'watch' }).length).toBe(watches);
    expect(calls.upserts).toEqual([]);
    expect(calls.failures).toEqual([]);
  });
});
