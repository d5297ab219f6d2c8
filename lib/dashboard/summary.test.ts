import { describe, expect, it } from 'vitest';
import { summarizeSnapshot, type Snapshot } from '../api/index.ts';
import { FIXTURE_T0, emptySnapshot, exampleSnapshot, largeSnapshot } from '../api/testing/snapshot-fixtures.ts';
import { isAgentUnavailableError } from './dashboard-error.ts';
import { summarizeNode } from './node-summary.ts';
import {
  SUMMARY_STALE_AFTER_MS,
  fetchSummaries,
  isPollStale,
  isSummariesResponseError,
  overviewCards,
  toNodeSummary,
  type AgentSummaries,
  type SummaryPoll,
} from './summary.ts';

/** The example node with everything the health reasons look at going wrong. */
function troubledSnapshot(): Snapshot {
  const s = exampleSnapshot();
  return {
    ...s,
    sourceErrors: [{ file: '/etc/kubernetes/manifests/bad.yaml', message: 'not YAML' }],
    drivers: s.drivers.map((d) => ({ ...d, lastError: 'probe failed' })),
    attachVerification: { lastRunAt: FIXTURE_T0, checked: 2, foundDetached: ['kubernetes.io/csi/csi-loop.volumescope.dev^vol-data'] },
    reconstruction: {
      ...s.reconstruction,
      volumes: [...s.reconstruction.volumes, { podUid: 'gone', volumeName: 'v', pluginName: 'kubernetes.io/csi', outcome: 'failed', error: 'no such device', at: FIXTURE_T0 }],
    },
  };
}

/** An observe section with one orphaned pod directory. */
const OBSERVE_WITH_ORPHAN = {
  kubeletRootDir: '/var/lib/kubelet',
  refreshedAt: null,
  refreshError: null,
  plan: [],
  orphans: [{ podUid: 'gone', path: '/var/lib/kubelet/pods/gone', modifiedAt: 0, verdict: 'no-volume-dirs' as const, explanation: '', volumes: [], leftovers: [], mounts: [] }],
  orphansTruncated: false,
  truthDiff: [],
  cleanupAllowed: false,
};

describe('the overview numbers of a summary', () => {
  it('carry the mode and the observe-mode counts', () => {
    expect(toNodeSummary(summarizeSnapshot({ ...exampleSnapshot(), observe: OBSERVE_WITH_ORPHAN }))).toMatchObject({ mode: 'observe', observe: { orphans: 1, attachErrors: 0 } });
    expect(toNodeSummary(summarizeSnapshot(exampleSnapshot()))).toMatchObject({ mode: 'managed', observe: null });
  });

  it.each([
    { name: 'the example node', snapshot: exampleSnapshot() },
    { name: 'a node with every health reason', snapshot: troubledSnapshot() },
    { name: 'a node that is not synced', snapshot: { ...troubledSnapshot(), statesSynced: false } },
    { name: 'an empty node', snapshot: emptySnapshot() },
    { name: 'a healthy node', snapshot: largeSnapshot(25) },
    { name: 'a node in observe mode', snapshot: { ...exampleSnapshot(), observe: OBSERVE_WITH_ORPHAN } },
  ])('are those of the snapshot it summarizes: $name', ({ snapshot }) => {
    // summarizeNode (node-summary.ts) is what the overview showed from the snapshot.
    expect(toNodeSummary(summarizeSnapshot(snapshot))).toEqual(summarizeNode(snapshot));
  });

  it('a troubled node is degraded with every reason', () => {
    expect(toNodeSummary(summarizeSnapshot(troubledSnapshot())).reasons).toEqual([
      '1 in backoff',
      '1 uncertain',
      '1 pod with errors',
      '1 source errors',
      '1 failed reconstructions',
      '1 driver errors',
      '1 found detached',
    ]);
  });
});

const SERVER_T = 1_800_000_000_000;
/** The browser's clock runs 5 s behind the dashboard server's. */
const BROWSER_RECEIVED = SERVER_T - 5_000;

function answer(agents: AgentSummaries['agents']): AgentSummaries {
  return { fetchedAt: SERVER_T, source: 'env', agents, discovery: null, configError: null };
}

const SUMMARY = summarizeSnapshot(exampleSnapshot());

function poll(data: AgentSummaries | undefined, overrides: Partial<SummaryPoll> = {}): SummaryPoll {
  return { data, dataUpdatedAt: data === undefined ? 0 : BROWSER_RECEIVED, error: null, errorUpdatedAt: 0, ...overrides };
}

describe('overview cards', () => {
  const initial = [
    { name: 'node-a', url: 'http://10.0.0.5:7070' },
    { name: 'node-b', url: 'http://10.0.0.6:7070' },
  ];

  it('before the first answer: the server-rendered agents, connecting', () => {
    const cards = overviewCards(initial, poll(undefined), false);
    expect(cards.map((c) => [c.name, c.status.phase, c.summary])).toEqual([
      ['node-a', 'connecting', null],
      ['node-b', 'connecting', null],
    ]);
  });

  it("after an answer: its agents (they come and go with it); live, or unavailable since the failure began, in the browser's clock", () => {
    // Arrange: node-a answered; node-c failed since 20 s before the round; node-b is gone.
    const data = answer([
      { name: 'node-a', url: 'http://10.0.0.5:7070', summary: SUMMARY, receivedAt: SERVER_T - 10, lastSeenAt: SERVER_T - 10, error: null },
      {
        name: 'node-c',
        url: 'http://10.0.0.7:7070',
        summary: SUMMARY,
        receivedAt: SERVER_T - 60_000,
        lastSeenAt: SERVER_T - 60_000,
        error: { code: 'agent-unreachable', message: 'cannot reach http://10.0.0.7:7070: connect ECONNREFUSED', since: SERVER_T - 20_000 },
      },
    ]);

    // Act
    const cards = overviewCards(initial, poll(data), false);

    // Assert
    expect(cards.map((c) => c.name)).toEqual(['node-a', 'node-c']);
    expect(cards[0]?.status).toEqual({ phase: 'live', disconnectedSince: null, lastSeenAt: BROWSER_RECEIVED - 10, error: null });
    expect(cards[0]?.summary).toEqual(toNodeSummary(SUMMARY));
    expect(cards[1]?.status).toEqual({
      phase: 'unavailable',
      disconnectedSince: BROWSER_RECEIVED - 20_000,
      lastSeenAt: BROWSER_RECEIVED - 60_000,
      error: 'cannot reach http://10.0.0.7:7070: connect ECONNREFUSED',
    });
    // The last known numbers stay on the card.
    expect(cards[1]?.summary?.pods).toBe(2);
  });

  it('when the poll itself fails, answered agents are reconnecting since the last good answer', () => {
    const data = answer([{ name: 'node-a', url: 'u', summary: SUMMARY, receivedAt: SERVER_T, lastSeenAt: SERVER_T, error: null }]);

    const cards = overviewCards(initial, poll(data, { error: new Error('Failed to fetch'), errorUpdatedAt: BROWSER_RECEIVED + 3_000 }), false);

    expect(cards[0]?.status).toMatchObject({ phase: 'reconnecting', disconnectedSince: BROWSER_RECEIVED, error: 'the dashboard server did not answer: Failed to fetch' });
  });

  it('an old answer is stale even without an error (a poll that hangs)', () => {
    const data = answer([{ name: 'node-a', url: 'u', summary: SUMMARY, receivedAt: SERVER_T, lastSeenAt: SERVER_T, error: null }]);
    const p = poll(data);

    expect(isPollStale(p, BROWSER_RECEIVED + SUMMARY_STALE_AFTER_MS)).toBe(false);
    expect(isPollStale(p, BROWSER_RECEIVED + SUMMARY_STALE_AFTER_MS + 1)).toBe(true);
    expect(overviewCards(initial, p, true)[0]?.status.phase).toBe('reconnecting');
  });
});

describe('fetchSummaries', () => {
  const json = (status: number, body: unknown): typeof fetch => () =>
    Promise.resolve(new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } }));

  it('parses the answer', async () => {
    const data = answer([]);
    await expect(fetchSummaries(json(200, data))).resolves.toEqual(data);
  });

  it("turns the dashboard's own error shape into its error", async () => {
    const err: unknown = await fetchSummaries(json(502, { dashboardError: { code: 'agent-unreachable', agent: '*', message: 'down', lastSeenAt: null } })).catch((e: unknown) => e);
    expect(isAgentUnavailableError(err)).toBe(true);
  });

  it('refuses an answer that breaks the schema', async () => {
    const err: unknown = await fetchSummaries(json(200, { agents: 'none' })).catch((e: unknown) => e);
    expect(isSummariesResponseError(err)).toBe(true);
  });
});
