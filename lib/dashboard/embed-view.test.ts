import { describe, expect, it } from 'vitest';
import type { Snapshot } from '../api/index.ts';
import { FIXTURE_T0, exampleSnapshot, generatedOperation, generatedPod, generatedVolume } from '../api/testing/snapshot-fixtures.ts';
import { failingFirst, healthySummary } from './embed-view.ts';
import { deriveVolumeRows } from './pipeline.ts';

/** The example node plus generated pods: 1 and 2 in backoff, 3 mounted, 4 running. */
function mixedNode(): Snapshot {
  const example = exampleSnapshot();
  return {
    ...example,
    desired: { pods: [...example.desired.pods, generatedPod(1), generatedPod(2), generatedPod(3), generatedPod(4)] },
    actual: { volumes: [...example.actual.volumes, generatedVolume(3)] },
    operations: [
      ...example.operations,
      generatedOperation(2, 3),
      generatedOperation(1, 1),
      { ...generatedOperation(4, 0), state: 'running', lastError: null, lastErrorAt: null, retryAt: null, startedAt: FIXTURE_T0 },
    ],
  };
}

describe('embeds: failing volumes first, healthy ones collapsed', () => {
  it('puts every volume that is not ready first, most urgent state first, then by pod and volume', () => {
    // Arrange
    const rows = deriveVolumeRows(mixedNode());

    // Act
    const { failing, healthy } = failingFirst(rows);

    // Assert
    expect(failing.map((r) => `${r.podName}/${r.volumeName}:${r.state}`)).toEqual(['db-0/pgdata:uncertain', 'load-1/data:backoff', 'load-2/data:backoff', 'load-4/data:running']);
    expect(healthy.map((r) => `${r.podName}/${r.volumeName}`)).toEqual(['web-0/config', 'web-0/data', 'load-3/data']);
  });

  it('every row lands in exactly one part, and healthy rows keep their given order', () => {
    const rows = deriveVolumeRows(mixedNode());
    const reversed = [...rows].reverse();
    const { failing, healthy } = failingFirst(reversed);
    expect(failing.length + healthy.length).toBe(rows.length);
    expect(new Set([...failing, ...healthy])).toEqual(new Set(rows));
    expect(healthy.every((r) => r.state === 'ready')).toBe(true);
    expect(healthy.map((r) => r.id)).toEqual(reversed.filter((r) => r.state === 'ready').map((r) => r.id));
    // The failing order does not depend on the input's.
    expect(failing.map((r) => r.id)).toEqual(failingFirst(rows).failing.map((r) => r.id));
  });

  it('an all-healthy pod has nothing failing', () => {
    const web = deriveVolumeRows(exampleSnapshot()).filter((r) => r.podName === 'web-0');
    expect(failingFirst(web)).toEqual({ failing: [], healthy: web });
  });

  it('says how many ready volumes are collapsed', () => {
    expect(healthySummary(1)).toBe('1 ready volume');
    expect(healthySummary(12)).toBe('12 ready volumes');
  });
});
