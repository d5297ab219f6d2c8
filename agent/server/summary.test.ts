import { afterEach, describe, expect, it } from 'vitest';
import { type Snapshot } from '../../lib/api/snapshot.ts';
import { parseSnapshot } from '../../lib/api/compact-snapshot.ts';
import { exampleSnapshot } from '../../lib/api/testing/snapshot-fixtures.ts';
import { AgentSummarySchema, type AgentSummary } from '../../lib/api/summary.ts';
import { summarizeNode } from '../../lib/dashboard/node-summary.ts';
import { FailOnSetupVolumeName } from '../../lib/volume/testing/fake-volume-plugin.ts';
import { gcePdVolume, makePod } from '../../lib/volumemanager/testing/harness.ts';
import { SummaryCache } from './summary.ts';
import { startServer, type ServerFixture } from './testing/server-fixture.ts';

/** The overview's numbers (lib/dashboard/node-summary.ts, computed independently) in the summary's shape. */
function overviewNumbers(snapshot: Snapshot) {
  const n = summarizeNode(snapshot);
  return {
    seq: n.seq,
    statesSynced: n.statesSynced,
    agent: { version: n.agentVersion, startedAt: n.agentStartedAt },
    counts: {
      pods: n.pods,
      desiredVolumes: n.desiredVolumes,
      mounted: n.mounted,
      uncertain: n.uncertain,
      pending: n.pending,
      inBackoff: n.inBackoff,
      running: n.running,
      podErrors: n.podErrors,
      sourceErrors: n.sourceErrors,
    },
    reconstruction: n.reconstruction,
    drivers: n.drivers,
  };
}

describe('GET /api/v1/summary', () => {
  let fx: ServerFixture | undefined;
  afterEach(async () => {
    await fx?.close();
    fx = undefined;
  });

  it('needs the bearer token like the other reads', async () => {
    fx = await startServer();

    const res = await fx.client.get('/api/v1/summary', { token: null });

    expect(res.status).toBe(401);
  });

  it('has the counts of the snapshot at the same seq, for a node with a mounted pod, a failing one and a source error', async () => {
    // Arrange: pod1 mounted; a second pod whose SetUp keeps failing (pending, in backoff); a source error.
    fx = await startServer();
    const { harness, runtime } = fx;
    harness.pods.add(makePod([gcePdVolume()]));
    harness.pods.add(makePod([gcePdVolume(FailOnSetupVolumeName, 'pd-fail')], { name: 'pod2', uid: 'pod2uid' }));
    runtime.setSourceErrors([{ file: '/etc/kubernetes/manifests/bad.yaml', message: 'not YAML' }]);
    harness.start();
    await harness.until(() => harness.asw.getMountedVolumes().length === 1 && harness.vm.getPendingOperations().some((op) => !op.pending && op.failures > 0));

    // Act
    const summaryRes = await fx.client.get('/api/v1/summary');
    const snapshotRes = await fx.client.get('/api/v1/snapshot');

    // Assert: the same seq, and the overview's numbers for that snapshot.
    expect(summaryRes.status).toBe(200);
    const summary: AgentSummary = AgentSummarySchema.parse(summaryRes.json);
    const snapshot = parseSnapshot(snapshotRes.json);
    expect(summary.seq).toBe(snapshot.seq);
    expect(summary).toMatchObject(overviewNumbers(snapshot));
    expect(summary).toMatchObject({
      nodeName: snapshot.nodeName,
      mode: 'managed',
      mounter: { kind: 'unprivileged', privileged: false },
      counts: { pods: 2, desiredVolumes: 2, mounted: 1, pending: 1, inBackoff: 1, sourceErrors: 1, foundDetached: 0 },
    });
  });

  it('follows changes: a deleted pod leaves the counts', async () => {
    fx = await startServer();
    const { harness } = fx;
    harness.pods.add(makePod([gcePdVolume()]));
    harness.start();
    await harness.until(() => harness.asw.getMountedVolumes().length === 1 && harness.vm.reconcilerStatesHasBeenSynced());
    const before = AgentSummarySchema.parse((await fx.client.get('/api/v1/summary')).json);

    harness.pods.delete('pod1uid');
    await harness.until(() => harness.asw.getMountedVolumes().length === 0);
    const after = AgentSummarySchema.parse((await fx.client.get('/api/v1/summary')).json);

    expect(before.counts).toMatchObject({ pods: 1, mounted: 1 });
    expect(after.counts).toMatchObject({ pods: 0, mounted: 0, pending: 0 });
    expect(after.seq).toBeGreaterThan(before.seq);
  });
});

describe('SummaryCache', () => {
  it('asks the feed for its current build (published when due) and counts once per snapshot', () => {
    // Arrange
    let current = exampleSnapshot();
    let flushes = 0;
    const cache = new SummaryCache({
      publishIfDue: () => {
        flushes++;
        return current;
      },
      publishIfOlderThan: () => {
        throw new Error('the summary route publishes when due');
      },
    });

    // Act
    const first = cache.current();
    const again = cache.current();
    current = { ...current, seq: current.seq + 1, desired: { pods: [] } };
    const changed = cache.current();

    // Assert
    expect(flushes).toBe(3);
    expect(again).toBe(first);
    expect(changed).not.toBe(first);
    expect(changed.counts.pods).toBe(0);
    expect(first.counts.pods).toBe(2);
  });

  it('reads the metrics’ summary through publishIfOlderThan with the age it is given, from the same memo', () => {
    const current = exampleSnapshot();
    const ages: number[] = [];
    const cache = new SummaryCache({
      publishIfDue: () => current,
      publishIfOlderThan: (maxAgeMs) => {
        ages.push(maxAgeMs);
        return current;
      },
    });

    const forMetrics = cache.atMostOld(1_000);

    expect(ages).toEqual([1_000]);
    expect(cache.current()).toBe(forMetrics);
  });
});
