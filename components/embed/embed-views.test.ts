import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { Snapshot } from '../../lib/api/index.ts';
import { exampleSnapshot } from '../../lib/api/testing/snapshot-fixtures.ts';
import { historyByOperationKey } from '../../lib/dashboard/incident-history.ts';
import { deriveVolumeRows } from '../../lib/dashboard/pipeline.ts';
import { EmbedNodeVolumes, EmbedPodVolumes } from './embed-views.tsx';

const DB_UID = 'a7d9e3b1-6c45-4b8a-8f2d-0e1c9b7a5d33';

/** db-0 with a second, mounted volume listed before the failing one (the web pod's configMap, moved over). */
function podWithHealthyFirst(snapshot: Snapshot): Snapshot {
  const [web, db] = snapshot.desired.pods;
  if (web === undefined || db === undefined) throw new Error('fixture');
  const config = web.volumes[0];
  if (config === undefined) throw new Error('fixture');
  const actual = snapshot.actual.volumes.map((v) =>
    v.uniqueVolumeName === config.uniqueVolumeName ? { ...v, pods: v.pods.map((m) => ({ ...m, podUid: DB_UID, podName: DB_UID })) } : v,
  );
  return { ...snapshot, desired: { pods: [web, { ...db, volumes: [config, ...db.volumes] }] }, actual: { volumes: actual } };
}

describe('the pod embed', () => {
  it('shows the failing volume first with its error and history, and the healthy ones in a closed, unrendered <details>', () => {
    // Arrange
    const snapshot = podWithHealthyFirst(exampleSnapshot());
    const rows = deriveVolumeRows(snapshot).filter((r) => r.podUid === DB_UID);
    expect(rows.map((r) => `${r.volumeName}:${r.state}`)).toEqual(['config:ready', 'pgdata:uncertain']);

    // Act
    const html = renderToStaticMarkup(
      createElement(EmbedPodVolumes, { agent: 'node-a', rows, phase: 'live', synced: true, history: historyByOperationKey(snapshot.operationHistory) }),
    );

    // Assert: pgdata's card, with the cause of its error and its history, comes first.
    const pgdata = html.indexOf('>pgdata</a>');
    const details = html.indexOf('<details');
    expect(pgdata).toBeGreaterThan(-1);
    expect(details).toBeGreaterThan(pgdata);
    const failing = html.slice(0, details);
    expect(failing).toContain('rpc error: code = DeadlineExceeded desc = context deadline exceeded');
    expect(failing).toContain('data-testid="operation-history-line"');
    expect(failing).toContain('3 attempts in all');
    // The error and its history sit above the stages, so a 400 px frame shows them first.
    expect(failing.indexOf('class="compact-error"')).toBeGreaterThan(-1);
    expect(failing.indexOf('data-testid="operation-history-line"')).toBeLessThan(failing.indexOf('<ol class="pipeline"'));
    expect(failing.indexOf('class="compact-error"')).toBeLessThan(failing.indexOf('<ol class="pipeline"'));
    // The healthy volume is collapsed: a closed <details> that says how many, without its cards.
    const collapsed = html.slice(details);
    expect(collapsed).toMatch(/^<details class="embed__healthy" data-testid="embed-healthy"><summary>1 ready volume<\/summary><\/details>/);
    expect(html).not.toContain('>config</a>');
  });

  it('a pod whose volumes are all ready shows only the collapsed list', () => {
    const rows = deriveVolumeRows(exampleSnapshot()).filter((r) => r.podName === 'web-0');
    const html = renderToStaticMarkup(createElement(EmbedPodVolumes, { agent: 'node-a', rows, phase: 'live', synced: true, history: new Map() }));
    expect(html).toBe('<details class="embed__healthy" data-testid="embed-healthy"><summary>2 ready volumes</summary></details>');
  });
});

describe('the node embed', () => {
  it('lists the failing volumes with the cause of their error, and collapses the healthy ones', () => {
    const rows = deriveVolumeRows(exampleSnapshot());
    const html = renderToStaticMarkup(createElement(EmbedNodeVolumes, { agent: 'node-a', rows }));
    const details = html.indexOf('<details');
    expect(html.slice(0, details).match(/data-testid="embed-failing-row"/g)).toHaveLength(1);
    expect(html.slice(0, details)).toContain('rpc error: code = DeadlineExceeded desc = context deadline exceeded');
    expect(html.slice(details)).toBe('<details class="embed__healthy" data-testid="embed-healthy"><summary>2 ready volumes</summary></details>');
    expect(html).not.toContain('web-0');
  });
});
