import * as clientNode from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake-clock.ts';
import { FakeApiServer } from '../sources/kube/testing/fake-apiserver.ts';
import { fakeKubeConfig } from '../sources/kube/testing/kubeconfig-file.ts';
import { waitFor } from '../clock/testing/wait-for.ts';
import { isKubeApiRequestError, isKubeRequestTimeoutError } from './api-errors.ts';
import { RequestDeadlines } from './request-deadline.ts';

// The real client-node against the test server; the deadline runs on a FakeClock.

let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function setup(): Promise<{ api: FakeApiServer; clock: FakeClock; deadlines: RequestDeadlines; list: () => Promise<unknown> }> {
  const api = await FakeApiServer.start({ token: 't' });
  cleanups.push(() => api.close());
  const core = fakeKubeConfig({ server: api.url, token: 't' }).makeApiClient(clientNode.CoreV1Api);
  const clock = new FakeClock();
  const deadlines = new RequestDeadlines({ clientNode, clock, timeoutMs: 100 });
  const list = (): Promise<unknown> => deadlines.run('LIST /api/v1/pods', (options) => core.listPodForAllNamespaces({}, options));
  return { api, clock, deadlines, list };
}

/** The server holds every LIST of pods until the test ends. */
function holdPodLists(api: FakeApiServer): void {
  const held = api.holdRequests({ resource: 'pods', verb: 'list' });
  cleanups.push(() => {
    held.release();
    return Promise.resolve();
  });
}

describe('RequestDeadlines', () => {
  it('a request that gets no answer fails when its deadline passes on the clock, and not before', async () => {
    // Arrange: no answer to the LIST.
    const { api, clock, list } = await setup();
    holdPodLists(api);
    let outcome: unknown = 'pending';
    void list().then(
      () => {
        outcome = 'answered';
      },
      (err: unknown) => {
        outcome = err;
      },
    );
    await waitFor(() => api.requests({ resource: 'pods', verb: 'list' }).length === 1, { what: 'the LIST sent' });

    // Act + Assert
    await clock.advance(99);
    expect(outcome).toBe('pending');
    await clock.advance(1);
    await waitFor(() => outcome !== 'pending', { what: 'the LIST given up' });
    expect(isKubeRequestTimeoutError(outcome)).toBe(true);
    expect((outcome as Error).message).toBe('LIST /api/v1/pods timed out after 100 ms');
    expect(clock.pendingTimers()).toBe(0);
  });

  it('a request answered in time clears its deadline', async () => {
    const { clock, list } = await setup();
    await expect(list()).resolves.toMatchObject({ items: [] });
    expect(clock.pendingTimers()).toBe(0);
  });

  it('abortAll ends every request in flight with a request error', async () => {
    const { api, deadlines, list } = await setup();
    holdPodLists(api);
    const pending = list().then(() => null, (err: unknown) => err);
    await waitFor(() => api.requests({ resource: 'pods', verb: 'list' }).length === 1, { what: 'the LIST sent' });

    deadlines.abortAll();

    const err = await pending;
    expect(isKubeApiRequestError(err) && !isKubeRequestTimeoutError(err)).toBe(true);
    expect((err as Error).message).toBe('the API source stopped');
  });
});
