/**
 * The plugin's sections rendered in Headlamp's own test setup (`headlamp-plugin test`: vitest,
 * jsdom and Testing Library from @kinvolk/headlamp-plugin), from the contract's example snapshot
 * (lib/api/testing): a pod per pipeline state (uncertain, backoff, ready, unmounting), the node's
 * counts, and the request the data hook makes: the dashboard's snapshot route with the user's
 * session cookie (`credentials: 'include'`).
 */
import { act, render, screen, within } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';
import type { Snapshot } from '../../../../lib/api/index.ts';
import { exampleSnapshot, FIXTURE_T0 } from '../../../../lib/api/testing/snapshot-fixtures.ts';
import { NodeCounts, PodVolumes } from '../../volumes-views.tsx';
import { HEADLAMP_POLL_MS, isDashboardLoginNeededError, readAgentSnapshot, useAgentSnapshot, type FetchLike } from '../../volumescope-source.ts';

const snapshot = exampleSnapshot();
const db = snapshot.desired.pods.find((p) => p.name === 'db-0');
const web = snapshot.desired.pods.find((p) => p.name === 'web-0');

describe('Volumes section of the pod page', () => {
  it('shows the blocked volume: state, pipeline with the blocking stage, the error verbatim, the next retry, and the link for actions', () => {
    const op = snapshot.operations.find((o) => o.podUid === db?.uid);
    render(<PodVolumes snapshot={snapshot} podUid={db?.uid ?? ''} now={FIXTURE_T0 + 62_000} dashboardUrl="https://volumescope.example.com" />);
    const row = screen.getByRole('row', { name: /pgdata/ });
    // The device mount is uncertain: shown as its own state, never as mounted or failed.
    expect(within(row).getAllByRole('cell')[0]?.textContent).toBe('uncertainuncertain: device mounted');
    const pipeline = within(row).getByRole('list', { name: 'mount pipeline of pgdata' });
    expect(within(pipeline).getByText(/\(blocking\)/).getAttribute('aria-current')).toBe('step');
    expect(row.textContent).toContain(op?.lastError ?? 'no error in the fixture');
    expect(row.textContent).toMatch(/retry in \d+:\d\d|retry due/);
    expect(screen.getByText(/unmounted volumes=\[pgdata\], unattached volumes=\[\]/)).toBeTruthy();
    expect(screen.getByRole('link', { name: /Open in VolumeScope/ }).getAttribute('href')).toBe(`https://volumescope.example.com/nodes/${snapshot.nodeName}/pods/${db?.uid ?? ''}`);
  });

  it('a ready pod: every volume ready, no blocking stage, no link without a dashboard URL', () => {
    render(<PodVolumes snapshot={snapshot} podUid={web?.uid ?? ''} now={FIXTURE_T0} dashboardUrl={null} />);
    expect(screen.getByText('unmounted volumes=[], unattached volumes=[]')).toBeTruthy();
    expect(screen.queryByText(/\(blocking\)/)).toBeNull();
    expect(screen.queryByRole('link')).toBeNull();
  });

  it('a volume in backoff: the blocking stage is the missing device mount, the error verbatim, the retry countdown', () => {
    // The database's device mount failed outright (not uncertain): the operation's backoff decides the state.
    const pg = db?.volumes[0]?.uniqueVolumeName;
    const failed: Snapshot = { ...snapshot, actual: { volumes: snapshot.actual.volumes.map((v) => (v.uniqueVolumeName === pg ? { ...v, deviceMountState: 'not-mounted' as const, pods: [] } : v)) } };
    const op = failed.operations.find((o) => o.podUid === db?.uid);
    render(<PodVolumes snapshot={failed} podUid={db?.uid ?? ''} now={FIXTURE_T0 + 62_000} dashboardUrl={null} />);
    const row = screen.getByRole('row', { name: /pgdata/ });
    expect(within(row).getAllByRole('cell')[0]?.textContent).toMatch(/^backoff/);
    expect(within(row).getByText(/\(blocking\)/).textContent).toContain('device mounted');
    expect(row.textContent).toContain(op?.lastError ?? 'no error in the fixture');
    expect(row.textContent).toMatch(/retry in \d+:\d\d|retry due/);
  });

  it('a pod that left the desired world: its still-mounted volumes are unmounting, and the section says why', () => {
    // As the agent reports it: the pod is gone from the desired world, its mounts are still in the actual world.
    const gone: Snapshot = { ...snapshot, desired: { pods: snapshot.desired.pods.filter((p) => p.uid !== web?.uid) } };
    render(<PodVolumes snapshot={gone} podUid={web?.uid ?? ''} now={FIXTURE_T0} dashboardUrl={null} />);
    expect(screen.getByText(/not in the desired world: its volumes are being unmounted/)).toBeTruthy();
    const states = screen.getAllByRole('row').slice(1).map((r) => within(r).getAllByRole('cell')[0]?.textContent ?? '');
    expect(states.length).toBe(2);
    for (const state of states) expect(state).toMatch(/^unmounting/);
  });

  it('a pod the agent does not know says so', () => {
    render(<PodVolumes snapshot={snapshot} podUid="no-such-uid" now={FIXTURE_T0} dashboardUrl={null} />);
    expect(screen.getByText(/does not know this pod/)).toBeTruthy();
  });
});

describe('VolumeScope section of the node page', () => {
  it('shows health and the counts line of the dashboard, linking to the node', () => {
    render(<NodeCounts snapshot={snapshot} dashboardUrl="https://volumescope.example.com/" />);
    expect(screen.getByText('degraded')).toBeTruthy();
    expect(screen.getByText(/^pods 2 · desired volumes 3 · /)).toBeTruthy();
    expect(screen.getByRole('link', { name: 'Open node in VolumeScope' }).getAttribute('href')).toBe(`https://volumescope.example.com/nodes/${snapshot.nodeName}`);
  });
});

/** A `fetch` answering with `answers` in turn (JSON bodies), recording each call. */
function fakeFetch(answers: Array<{ status: number; body: unknown }>, calls: Array<{ url: string; init: RequestInit }> = []): FetchLike {
  return (url, init) => {
    calls.push({ url, init });
    const next = answers.shift();
    if (next === undefined) return Promise.reject(new TypeError('Failed to fetch'));
    return Promise.resolve(new Response(JSON.stringify(next.body), { status: next.status, headers: { 'Content-Type': 'application/json' } }));
  };
}

const DASHBOARD = 'https://volumescope.example.com/';

describe('the data source', () => {
  it("reads the dashboard's snapshot route with the session cookie (credentials: include) and validates it", async () => {
    const calls: Array<{ url: string; init: RequestInit }> = [];
    const read = await readAgentSnapshot(fakeFetch([{ status: 200, body: JSON.parse(JSON.stringify(snapshot)) }], calls), DASHBOARD, 'node/with space');
    expect(calls.map((c) => c.url)).toEqual(['https://volumescope.example.com/api/agents/node%2Fwith%20space/snapshot']);
    expect(calls[0]?.init.credentials).toBe('include');
    expect(read.seq).toBe(snapshot.seq);
    await expect(readAgentSnapshot(fakeFetch([{ status: 200, body: { not: 'a snapshot' } }]), DASHBOARD, 'n')).rejects.toThrow();
  });

  it('a 401 asks the user to log in to the dashboard; another failure carries the dashboard error verbatim', async () => {
    const login = await readAgentSnapshot(fakeFetch([{ status: 401, body: { dashboardError: { code: 'not-logged-in', agent: '', message: 'log in first', lastSeenAt: null } } }]), DASHBOARD, 'n').catch((err: unknown) => err);
    expect(isDashboardLoginNeededError(login)).toBe(true);
    expect((login as Error).message).toContain(`log in to VolumeScope at ${DASHBOARD}`);
    const down = { dashboardError: { code: 'agent-unreachable', agent: 'n', message: 'connect ECONNREFUSED 10.0.0.7:8443', lastSeenAt: null } };
    await expect(readAgentSnapshot(fakeFetch([{ status: 502, body: down }]), DASHBOARD, 'n')).rejects.toThrow('connect ECONNREFUSED 10.0.0.7:8443');
  });
});

function Live({ fetchFn, dashboardUrl = DASHBOARD }: { fetchFn: FetchLike; dashboardUrl?: string | null }) {
  const state = useAgentSnapshot(fetchFn, dashboardUrl, snapshot.nodeName);
  if (state.kind !== 'ready') return <p>{state.kind === 'error' ? `error: ${state.message}` : state.kind}</p>;
  return <NodeCounts snapshot={state.snapshot} dashboardUrl={null} />;
}

describe('live sections', () => {
  it('read again every poll interval and show the new state; a failed read keeps the last one', async () => {
    vi.useFakeTimers();
    try {
      const calls: Array<{ url: string; init: RequestInit }> = [];
      const fetchFn = fakeFetch(
        [
          { status: 200, body: JSON.parse(JSON.stringify(snapshot)) },
          { status: 200, body: { ...JSON.parse(JSON.stringify(snapshot)), operations: [], operationHistory: [], podErrors: {}, recentEvents: [] } },
        ],
        calls,
      );
      render(<Live fetchFn={fetchFn} />);
      await act(async () => {
        await Promise.resolve();
      });
      expect(screen.getByText(/in backoff 1/)).toBeTruthy();
      await act(async () => {
        await vi.advanceTimersByTimeAsync(HEADLAMP_POLL_MS);
      });
      expect(screen.getByText(/in backoff 0/)).toBeTruthy();
      await act(async () => {
        await vi.advanceTimersByTimeAsync(HEADLAMP_POLL_MS);
      });
      expect(calls.length).toBe(3);
      expect(screen.getByText(/in backoff 0/)).toBeTruthy();
    } finally {
      vi.useRealTimers();
    }
  });

  it('a lost session replaces the last state at once with the log-in message', async () => {
    vi.useFakeTimers();
    try {
      const fetchFn = fakeFetch([
        { status: 200, body: JSON.parse(JSON.stringify(snapshot)) },
        { status: 401, body: { dashboardError: { code: 'not-logged-in', agent: '', message: 'log in first', lastSeenAt: null } } },
      ]);
      render(<Live fetchFn={fetchFn} />);
      await act(async () => {
        await vi.advanceTimersByTimeAsync(0);
      });
      expect(screen.getByText(/in backoff 1/)).toBeTruthy();
      await act(async () => {
        await vi.advanceTimersByTimeAsync(HEADLAMP_POLL_MS);
      });
      expect(screen.getByText(/log in to VolumeScope at/)).toBeTruthy();
    } finally {
      vi.useRealTimers();
    }
  });

  it('without a dashboard URL nothing is read', () => {
    const calls: Array<{ url: string; init: RequestInit }> = [];
    render(<Live fetchFn={fakeFetch([], calls)} dashboardUrl={null} />);
    expect(screen.getByText('unconfigured')).toBeTruthy();
    expect(calls).toEqual([]);
  });
});
