import { describe, expect, it } from 'vitest';
import { isAgentApiError } from '../api/index.ts';
import { orphanCleanup, postResync, postRetry, postUnmount } from './actions-client.ts';
import { isAgentUnavailableError } from './dashboard-error.ts';

/** The URL of a fetch input. */
function urlOf(input: string | URL | Request): string {
  return typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
}


function fakeFetch(status: number, body: unknown) {
  const calls: { url: string; init: RequestInit | undefined }[] = [];
  const fn: typeof fetch = (input, init) => {
    calls.push({ url: urlOf(input), init });
    return Promise.resolve(Response.json(body, { status }));
  };
  return { fetch: fn, calls };
}

describe('actions from the browser', () => {
  it('a retry posts the body as JSON to the dashboard route and returns the cleared key', async () => {
    const f = fakeFetch(200, { cleared: 'volume_mount|v|p|' });
    await expect(postRetry('node-a', { volume: 'v', podUid: 'p' }, f.fetch)).resolves.toEqual({ cleared: 'volume_mount|v|p|' });
    expect(f.calls[0]?.url).toBe('/api/agents/node-a/operations/retry');
    expect(f.calls[0]?.init?.body).toBe('{"volume":"v","podUid":"p"}');
    expect(new Headers(f.calls[0]?.init?.headers).get('content-type')).toBe('application/json');
    // The CSRF header the dashboard's proxy requires of every state-changing request.
    expect(new Headers(f.calls[0]?.init?.headers).get('x-volumescope-request')).toBe('1');
  });

  it('a resync (no body) carries the CSRF header too', async () => {
    const f = fakeFetch(200, { resyncedAt: 1 });
    await postResync('node-a', f.fetch).catch(() => undefined);
    expect(new Headers(f.calls[0]?.init?.headers).get('x-volumescope-request')).toBe('1');
  });

  it('a refused unmount is an AgentApiError with the reason and the checks', async () => {
    const checks = [{ name: 'pod-not-desired', ok: false, detail: 'pod default/db-0 is in the desired state' }];
    const f = fakeFetch(409, { error: { code: 'conflict', message: 'pod still wants volume pgdata', checks } });
    const err: unknown = await postUnmount('node-a', { podUid: 'p', volume: 'v' }, f.fetch).catch((e: unknown) => e);
    expect(isAgentApiError(err)).toBe(true);
    expect(err).toMatchObject({ status: 409, code: 'conflict', message: 'pod still wants volume pgdata', checks });
  });

  it('an unmount answers its outcome, or the still-running answer (202) of a TearDown that has not ended', async () => {
    const checks = [{ name: 'operation-lock', ok: true, detail: 'volume_unmount started' }];
    const done = { podUid: 'p', volume: 'v', outcome: 'unmounted', error: null, checks, startedAt: 1, finishedAt: 2 };
    const running = { podUid: 'p', volume: 'v', status: 'running', operation: 'volume_unmount|v|p|', message: 'TearDown started and is still running', checks, startedAt: 1 };
    await expect(postUnmount('node-a', { podUid: 'p', volume: 'v' }, fakeFetch(200, done).fetch)).resolves.toEqual(done);
    await expect(postUnmount('node-a', { podUid: 'p', volume: 'v' }, fakeFetch(202, running).fetch)).resolves.toEqual(running);
    await expect(postUnmount('node-a', { podUid: 'p', volume: 'v' }, fakeFetch(202, { ...running, status: 'queued' }).fetch)).rejects.toThrow();
  });

  it('an unreachable agent is an AgentUnavailableError', async () => {
    const f = fakeFetch(502, { dashboardError: { code: 'agent-unreachable', agent: 'node-a', message: 'cannot reach', lastSeenAt: null } });
    const err: unknown = await postResync('node-a', f.fetch).catch((e: unknown) => e);
    expect(isAgentUnavailableError(err)).toBe(true);
  });

  it('an answer that breaks the contract is an error, not a wrong result', async () => {
    const f = fakeFetch(200, { cleared: 5 });
    await expect(postRetry('node-a', { volume: 'v' }, f.fetch)).rejects.toThrow();
  });

  it('an orphan dry run posts podUid and dryRun to the dashboard route and returns the plan', async () => {
    const plan = {
      podUid: 'uid-1',
      outcome: 'planned',
      unmounts: ['/var/lib/kubelet/pods/uid-1/volumes/kubernetes.io~csi/pv-1/mount'],
      removals: ['/var/lib/kubelet/pods/uid-1/volumes/kubernetes.io~csi/pv-1'],
      kept: [{ path: '/var/lib/kubelet/pods/uid-1/etc-hosts', reason: 'a file' }],
      failures: [],
      checks: [{ name: 'pod-not-known-to-api', ok: true, detail: 'the API server has no pod uid-1' }],
    };
    const f = fakeFetch(200, plan);
    await expect(orphanCleanup('node a', { podUid: 'uid-1', dryRun: true }, f.fetch)).resolves.toEqual(plan);
    expect(f.calls[0]?.url).toBe('/api/agents/node%20a/orphans/cleanup');
    expect(f.calls[0]?.init?.method).toBe('POST');
    expect(f.calls[0]?.init?.body).toBe('{"podUid":"uid-1","dryRun":true}');
    expect(new Headers(f.calls[0]?.init?.headers).get('content-type')).toBe('application/json');
    expect(new Headers(f.calls[0]?.init?.headers).has('authorization')).toBe(false);
  });

  it('a refused orphan cleanup is an AgentApiError with every check', async () => {
    const checks = [
      { name: 'cleanup-enabled', ok: false, detail: 'the orphan cleanup is disabled: the agent runs without --allow-orphan-cleanup' },
    ];
    const f = fakeFetch(409, { error: { code: 'conflict', message: checks[0]?.detail, checks } });
    const err: unknown = await orphanCleanup('node-a', { podUid: 'uid-1' }, f.fetch).catch((e: unknown) => e);
    expect(isAgentApiError(err)).toBe(true);
    expect(err).toMatchObject({ status: 409, code: 'conflict', checks });
  });

  it('an agent not in observe mode answers 404, which is an AgentApiError too', async () => {
    const f = fakeFetch(404, { error: { code: 'not-found', message: 'orphan cleanup exists only in observe mode (--mode=observe)' } });
    const err: unknown = await orphanCleanup('node-a', { podUid: 'uid-1' }, f.fetch).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 404, code: 'not-found' });
  });

  it('an orphan cleanup answer with an unknown outcome is an error, not a wrong result', async () => {
    const f = fakeFetch(200, { podUid: 'uid-1', outcome: 'deleted-everything', unmounts: [], removals: [], kept: [], failures: [], checks: [] });
    await expect(orphanCleanup('node-a', { podUid: 'uid-1' }, f.fetch)).rejects.toThrow();
  });
});
