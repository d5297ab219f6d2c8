/**
 * The plugin's sections rendered in Headlamp's own test setup (`headlamp-plugin test`: vitest,
 * jsdom and Testing Library from @kinvolk/headlamp-plugin), from the contract's example snapshot
 * (lib/api/testing): a pod with a volume in backoff, a ready pod, the node's counts, and the
 * request the data hook makes through the API server's service proxy.
 */
import { act, render, screen, within } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';
import { exampleSnapshot, FIXTURE_T0 } from '../../../../lib/api/testing/snapshot-fixtures.ts';
import { NodeCounts, PodVolumes } from '../../volumes-views.tsx';
import { DASHBOARD_SERVICE_PROXY, HEADLAMP_POLL_MS, readAgentSnapshot, useAgentSnapshot, type HeadlampRequest } from '../../volumescope-source.ts';

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

describe('the data source', () => {
  it('reads the snapshot from the dashboard through the API server service proxy and validates it', async () => {
    const paths: string[] = [];
    const read = await readAgentSnapshot((path) => {
      paths.push(path);
      return Promise.resolve(JSON.parse(JSON.stringify(snapshot)) as unknown);
    }, 'node/with space');
    expect(paths).toEqual([`${DASHBOARD_SERVICE_PROXY}/api/agents/node%2Fwith%20space/snapshot`]);
    expect(read.seq).toBe(snapshot.seq);
    await expect(readAgentSnapshot(() => Promise.resolve({ not: 'a snapshot' }), 'n')).rejects.toThrow();
  });
});

function Live({ request }: { request: HeadlampRequest }) {
  const state = useAgentSnapshot(request, snapshot.nodeName);
  if (state.kind !== 'ready') return <p>{state.kind === 'error' ? `error: ${state.message}` : 'loading'}</p>;
  return <NodeCounts snapshot={state.snapshot} dashboardUrl={null} />;
}

describe('live sections', () => {
  it('read again every poll interval and show the new state; a failed read keeps the last one', async () => {
    vi.useFakeTimers();
    try {
      const answers: unknown[] = [
        JSON.parse(JSON.stringify(snapshot)),
        { ...JSON.parse(JSON.stringify(snapshot)), operations: [], operationHistory: [], podErrors: {}, recentEvents: [] },
      ];
      let calls = 0;
      const request: HeadlampRequest = () => {
        calls++;
        const next = answers.shift();
        return next === undefined ? Promise.reject(new Error('HTTP 503')) : Promise.resolve(next);
      };
      render(<Live request={request} />);
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
      expect(calls).toBe(3);
      expect(screen.getByText(/in backoff 0/)).toBeTruthy();
    } finally {
      vi.useRealTimers();
    }
  });
});
