import { describe, expect, it } from 'vitest';
import type { Snapshot } from '../api/index.ts';
import { emptySnapshot, exampleSnapshot, generatedOperation, largeSnapshot } from '../api/testing/snapshot-fixtures.ts';
import { summarizeSnapshot } from '../api/summary.ts';
import { summarizeNode } from './node-summary.ts';
import { toNodeSummary } from './summary.ts';

describe('node summary', () => {
  it('the example node: counts, degraded with its reasons, reconstruction outcomes', () => {
    // Act
    const s = summarizeNode(exampleSnapshot());

    // Assert
    expect(s).toMatchObject({
      health: 'degraded',
      reasons: ['1 in backoff', '1 uncertain', '1 pod with errors'],
      pods: 2,
      desiredVolumes: 3,
      mounted: 2,
      uncertain: 1,
      pending: 1,
      inBackoff: 1,
      running: 0,
      podErrors: 1,
      sourceErrors: 0,
      reconstruction: { state: 'done', outcomes: { reconstructed: 0, 'confirmed-mounted': 1, 'cleaned-up': 0, failed: 0 } },
      drivers: { total: 1, registered: 1, failing: 0 },
    });
  });

  it('a node whose states are not synced is syncing, whatever else is wrong', () => {
    expect(summarizeNode({ ...exampleSnapshot(), statesSynced: false }).health).toBe('syncing');
    expect(summarizeNode(emptySnapshot()).health).toBe('syncing');
  });

  it('a synced node with everything mounted is healthy', () => {
    const s = summarizeNode(largeSnapshot(10));
    expect(s).toMatchObject({ health: 'healthy', reasons: [], pods: 10, mounted: 10, pending: 0 });
  });

  it('an operation running again after a failure keeps the node degraded through the retry, from the snapshot and from the summary alike', () => {
    // Arrange: a node whose only trouble is a mount that failed once and is being retried now.
    const base = largeSnapshot(10);
    const retry = { ...generatedOperation(3, 1), state: 'running' as const, startedAt: base.agent.startedAt + 5_000 };
    const firstTry = { ...generatedOperation(4, 0), state: 'running' as const, lastError: null, lastErrorAt: null, retryAt: null, durationBeforeRetryMs: 0, startedAt: base.agent.startedAt + 5_000 };
    const retrying: Snapshot = { ...base, operations: [retry, firstTry] };

    // Act
    const fromSnapshot = summarizeNode(retrying);
    const fromSummary = toNodeSummary(summarizeSnapshot(retrying));
    const firstAttemptOnly = summarizeNode({ ...base, operations: [firstTry] });

    // Assert
    expect(fromSnapshot).toMatchObject({ health: 'degraded', reasons: ['1 retrying after a failure'], running: 2, retrying: 1, inBackoff: 0 });
    expect(fromSummary).toMatchObject({ health: 'degraded', reasons: ['1 retrying after a failure'], running: 2, retrying: 1, inBackoff: 0 });
    expect(firstAttemptOnly).toMatchObject({ health: 'healthy', reasons: [], running: 1, retrying: 0 });
  });

  it('is computed once per snapshot object', () => {
    const snapshot = exampleSnapshot();
    expect(summarizeNode(snapshot)).toBe(summarizeNode(snapshot));
  });

  it('successive snapshots that share collections and items are counted as if each were new', () => {
    // Arrange: a node, then one mount turned uncertain (new volumes array, other volumes reused),
    // then only an operation added, then a pod removed
    const s1 = largeSnapshot(20);
    const volumes = s1.actual.volumes.map((v, i) => (i === 4 ? { ...v, pods: v.pods.map((m) => ({ ...m, mountState: 'uncertain' as const })) } : v));
    const s2: Snapshot = { ...s1, seq: 2, actual: { volumes } };
    const s3: Snapshot = { ...s2, seq: 3, operations: [generatedOperation(4, 1)] };
    const s4: Snapshot = { ...s3, seq: 4, desired: { pods: s3.desired.pods.filter((_, i) => i !== 4) } };

    // Act
    const summaries = [s1, s2, s3, s4].map((s) => summarizeNode(s));

    // Assert: the same numbers as for deep copies (which share nothing with what was cached)
    const fresh = [s1, s2, s3, s4].map((s) => summarizeNode(structuredClone(s)));
    expect(summaries).toEqual(fresh);
    expect(summaries.map((s) => [s.mounted, s.uncertain, s.pending, s.desiredVolumes, s.inBackoff])).toEqual([
      [20, 0, 0, 20, 0],
      [19, 1, 1, 20, 0],
      [19, 1, 1, 20, 1],
      [19, 1, 0, 19, 1],
    ]);
  });
});

