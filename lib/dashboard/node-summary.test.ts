import { describe, expect, it } from 'vitest';
import { emptySnapshot, exampleSnapshot, largeSnapshot } from '../api/snapshot-fixtures.ts';
import { summarizeNode } from './node-summary.ts';

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

  it('is computed once per snapshot object', () => {
    const snapshot = exampleSnapshot();
    expect(summarizeNode(snapshot)).toBe(summarizeNode(snapshot));
  });
});
