import { describe, expect, it } from 'vitest';
import { normalizeSnapshot, type RecentEvent } from '../api/index.ts';
import { FIXTURE_T0, generatedOperation, largeSnapshot } from '../api/testing/snapshot-fixtures.ts';
import { FIRST_SCREEN_ROWS, nodeFirstScreen } from './node-first-screen.ts';
import { summarizeNode } from './node-summary.ts';
import { deriveVolumeRows } from './pipeline.ts';
import { applyVolumeFilters, DEFAULT_VOLUME_FILTERS, namespacesOf } from './volume-filters.ts';

// 3,000 pods (one volume each), a few in backoff, one gone pod named only by its event.
const goneEvent: RecentEvent = { time: FIXTURE_T0, type: 'Warning', reason: 'FailedMount', podUid: 'pod-000007', message: 'gone', podNamespace: 'load', podName: 'old-7' };
const base = largeSnapshot(3000);
const snapshot = normalizeSnapshot({ ...base, operations: [generatedOperation(2500, 2), generatedOperation(10, 1)], recentEvents: [goneEvent] });

describe('the node page’s first screen', () => {
  it('holds the first rows the URL’s filters show, and the whole node’s counts', () => {
    // Arrange
    const filters = { ...DEFAULT_VOLUME_FILTERS, sort: 'retry' as const };

    // Act
    const first = nodeFirstScreen(snapshot, filters);

    // Assert
    const rows = deriveVolumeRows(snapshot);
    expect(first.table.rows).toStrictEqual(applyVolumeFilters(rows, filters).slice(0, FIRST_SCREEN_ROWS));
    expect(first.table.rows.slice(0, 2).map((r) => r.operation?.podUid)).toEqual(['pod-000010', 'pod-002500']);
    expect(first.table).toMatchObject({ shown: 3000, total: 3000, namespaces: namespacesOf(rows), filters });
    expect(first.summary).toStrictEqual(summarizeNode(snapshot));
    expect(first.problems.label).toBe('Jump to problems: 2 volumes failing or uncertain, 2 operations in backoff');
  });

  it('counts the rows a filter leaves', () => {
    const first = nodeFirstScreen(snapshot, { ...DEFAULT_VOLUME_FILTERS, state: 'backoff' });
    expect(first.table.rows).toHaveLength(2);
    expect(first.table.shown).toBe(2);
    expect(first.table.total).toBe(3000);
  });

  it('names only the pods of its rows', () => {
    const first = nodeFirstScreen(snapshot, DEFAULT_VOLUME_FILTERS);
    const uids = new Set(first.table.rows.map((r) => r.podUid));
    expect(first.podNames.length).toBeGreaterThan(0);
    expect(first.podNames.every(([uid]) => uids.has(uid))).toBe(true);
  });

  it('is a small fraction of the snapshot (the page’s HTML and payload carry it)', () => {
    const size = JSON.stringify(nodeFirstScreen(snapshot, DEFAULT_VOLUME_FILTERS)).length;
    expect(size).toBeLessThan(JSON.stringify(snapshot).length / 20);
  });
});
