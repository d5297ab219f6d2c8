import { describe, expect, it } from 'vitest';
import { exampleSnapshot, FIXTURE_T0 } from '../api/testing/snapshot-fixtures.ts';
import { markdownCell, nodeMarkdownSummary, podMarkdownSummary, rowStageText } from './markdown-summary.ts';
import { summarizeNode } from './node-summary.ts';
import { deriveVolumeRows, findPod } from './pipeline.ts';

const DB_UID = 'a7d9e3b1-6c45-4b8a-8f2d-0e1c9b7a5d33';
const NOW = FIXTURE_T0 + 62_000;

describe('Copy as Markdown', () => {
  it('a stuck pod reads as its node, time, summary line and one row per volume with the error verbatim and the next retry', () => {
    // Arrange
    const snapshot = exampleSnapshot();
    const pod = findPod(snapshot, DB_UID);
    if (pod === null) throw new Error('fixture');

    // Act
    const text = podMarkdownSummary({ node: 'node-a', pod, now: NOW, seq: snapshot.seq, url: 'https://vs.example/nodes/node-a/pods/x' });

    // Assert
    expect(text).toBe(
      [
        `**Pod default/db-0** (uid \`${DB_UID}\`) on node **node-a**`,
        '_2026-11-30 08:01:02 UTC, agent seq 42_',
        '',
        '`unmounted volumes=[pgdata], unattached volumes=[]`',
        '',
        '| volume | state | stage | error | next retry |',
        '|---|---|---|---|---|',
        '| pgdata | uncertain | uncertain: device mounted | MountVolume.MountDevice failed for volume "pgdata" : rpc error: code = DeadlineExceeded desc = context deadline exceeded | retry in 0:01 (2026-11-30 08:01:03 UTC) |',
        '',
        'Pod errors:',
        '- MountVolume.MountDevice failed for volume "pgdata": context deadline exceeded',
        '',
        '[Open in VolumeScope](https://vs.example/nodes/node-a/pods/x)',
        '',
      ].join('\n'),
    );
  });

  it('a node lists its counts and only the volumes that are not ready', () => {
    const snapshot = exampleSnapshot();
    const text = nodeMarkdownSummary({ node: 'node-a', summary: summarizeNode(snapshot), rows: deriveVolumeRows(snapshot), now: NOW, url: null });
    expect(text).toContain('**Node node-a**: degraded (1 in backoff, 1 uncertain, 1 pod with errors)');
    expect(text).toContain('| default/db-0 | pgdata | uncertain |');
    expect(text).not.toContain('web-0');
  });

  it.each([
    ['a | b', 'a \\| b'],
    ['line one\nline two', 'line one line two'],
    ['back\\slash', 'back\\\\slash'],
  ])('table cells stay one cell: %j', (input, output) => {
    expect(markdownCell(input)).toBe(output);
  });

  it('the stage text says where a waiting volume is stuck', () => {
    const snapshot = exampleSnapshot();
    const rows = deriveVolumeRows({ ...snapshot, actual: { volumes: [] } });
    // The configMap is not attachable: its stage is the kubelet's verification, never "attached".
    expect(rows.map(rowStageText)).toEqual(['waiting: verified on node', 'waiting: attached', 'waiting: attached']);
  });
});
