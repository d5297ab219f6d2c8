import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { RecentEvent, Snapshot } from '../../lib/api/index.ts';
import { exampleSnapshot, FIXTURE_T0 } from '../../lib/api/testing/snapshot-fixtures.ts';
import { EventsTable } from './events-table.tsx';
import { OperationHistoryTable } from './operation-history-table.tsx';

const PG = 'kubernetes.io/csi/csi-loop.volumescope.dev^vol-pg';
const DB = 'a7d9e3b1-6c45-4b8a-8f2d-0e1c9b7a5d33';
const example = exampleSnapshot();
const failedMount = (time: number): RecentEvent => ({ time, type: 'Warning', reason: 'FailedMount', podUid: DB, message: 'MountVolume.MountDevice failed for volume "pgdata"', volume: PG });
const events = Array.from({ length: 9 }, (_, i) => failedMount(FIXTURE_T0 + i * 7_625));

/** The example node once the database volume is mounted, the mount having succeeded at T0+62 s. */
function mountedSnapshot(): Snapshot {
  const succeededAt = FIXTURE_T0 + 62_000;
  return {
    ...example,
    actual: {
      volumes: [
        ...example.actual.volumes.filter((v) => v.uniqueVolumeName !== PG),
        {
          uniqueVolumeName: PG,
          pluginName: 'kubernetes.io/csi',
          attachState: 'attached',
          devicePath: '',
          deviceMountState: 'mounted',
          deviceMountPath: '',
          pods: [{ podUid: DB, podName: DB, outerVolumeName: 'pgdata', mountState: 'mounted', remountRequired: false }],
        },
      ],
    },
    operationHistory: example.operationHistory.map((h) => ({
      ...h,
      attemptsTotal: h.attemptsTotal + 1,
      attempts: [...h.attempts, { startedAt: succeededAt - 400, durationMs: 400, error: null }],
      succeededAt,
    })),
  };
}

const render = (snapshot: Snapshot): string =>
  renderToStaticMarkup(createElement(EventsTable, { node: 'node-a', events, snapshot, podNames: new Map([[DB, 'db']]) }));

describe('EventsTable', () => {
  it('shows nine FailedMount events of one volume as one kubectl-like line under the volume, failing while not mounted', () => {
    const html = render(example);

    expect(html).toMatch(/FailedMount ×9 over 61 s, last [^<]+ ago/);
    expect(html).toContain(`aria-label="Events of volume ${PG}"`);
    expect(html).toContain(' · failing');
    expect(html).not.toContain('resolved');
  });

  it('marks the group resolved with the mount time once the volume is mounted', () => {
    const html = render(mountedSnapshot());

    expect(html).toMatch(/resolved: mounted at <time dateTime="2026-11-30T08:01:02.000Z"/);
    expect(html).not.toContain(' · failing');
  });
});

describe('OperationHistoryTable', () => {
  it('shows a failing operation with its attempts in all, each attempt, and "stuck for"', () => {
    const html = renderToStaticMarkup(createElement(OperationHistoryTable, { node: 'node-a', history: example.operationHistory, podNames: new Map([[DB, 'db']]) }));

    expect(html).toContain('<summary>3 attempts</summary>');
    expect(html.match(/<li>/g)).toHaveLength(3);
    expect(html).toMatch(/role="timer"[^>]*>stuck for /);
    expect(html).toContain('>failing</span>');
  });

  it('shows the success time and how long it was stuck once it succeeded', () => {
    const html = renderToStaticMarkup(createElement(OperationHistoryTable, { node: 'node-a', history: mountedSnapshot().operationHistory, podNames: new Map() }));

    expect(html).toContain('<summary>4 attempts</summary>');
    expect(html).toContain('recovered after 3 s');
    expect(html).toMatch(/succeeded at <time dateTime="2026-11-30T08:01:02.000Z"/);
  });
});

describe('OperationHistoryTable with a limit', () => {
  const entry = example.operationHistory[0];
  if (entry === undefined) throw new Error('the example snapshot has no operation history');
  const many = Array.from({ length: 7 }, (_, i) => ({ ...entry, volume: `${entry.volume}-${i}` }));

  it('renders only the first `limit` entries and offers the rest', () => {
    const html = renderToStaticMarkup(createElement(OperationHistoryTable, { node: 'node-a', history: many, podNames: new Map(), limit: 3 }));

    expect(html.match(/<tr>/g)).toHaveLength(1 + 3);
    expect(html).toContain('The first 3 of 7 operations.');
    expect(html).toContain('>Show all 7</button>');
  });

  it('renders every entry when they fit', () => {
    const html = renderToStaticMarkup(createElement(OperationHistoryTable, { node: 'node-a', history: many, podNames: new Map(), limit: 7 }));

    expect(html.match(/<tr>/g)).toHaveLength(1 + 7);
    expect(html).not.toContain('Show all');
  });
});
