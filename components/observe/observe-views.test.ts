import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { summarizeSnapshot } from '../../lib/api/summary.ts';
import { describeResync } from '../../lib/dashboard/action-guards.ts';
import { observedSnapshot } from '../../lib/api/testing/observe-fixtures.ts';
import { exampleSnapshot } from '../../lib/api/testing/snapshot-fixtures.ts';
import { summarizeNode } from '../../lib/dashboard/node-summary.ts';
import { deriveVolumeRows, type VolumeRow } from '../../lib/dashboard/pipeline.ts';
import { toNodeSummary } from '../../lib/dashboard/summary.ts';
import { ChecksList } from '../dialogs/checks-list.tsx';
import { nodeCountItems } from '../node/node-counts.tsx';
import { volumeTableColumns } from '../node/volume-table.tsx';
import { VolumePipeline } from '../volume/volume-pipeline.tsx';

const rows = deriveVolumeRows(observedSnapshot());
function rowOf(podUid: string, volume: string): VolumeRow {
  const found = rows.find((r) => r.podUid === podUid && r.volumeName === volume);
  if (found === undefined) throw new Error(`no row ${podUid}/${volume}`);
  return found;
}
const render = (row: VolumeRow, compact = false) =>
  renderToStaticMarkup(createElement(VolumePipeline, { node: 'observer', row, phase: 'live', synced: true, observing: true, onAction: () => undefined, compact }));

describe('observe-mode views', () => {
  it('the pod and volume pages’ pipeline of a pod stuck in the kubelet carries its error, event and backoff, with no action and no managed wording', () => {
    const html = render(rowOf('uid-b', 'scratch'));
    expect(html).toContain('<code>MountVolume.SetUp</code> failed for this volume');
    expect(html).toContain('mkdir: no space left on device');
    expect(html).toContain('durationBeforeRetry 1m4s');
    expect(html).toContain('FailedMount event seen');
    expect(html).toContain('(7 times)');
    expect(html).toContain('href="/nodes/observer#observe-plan"');
    expect(html).not.toContain('Retry now');
    expect(html).not.toContain('reconciler');
    expect(html).not.toContain('not verified yet');
    const flagged = /<li class="stage [^"]*stage--blocking"[^>]*><span class="stage__label">([^<]*)</.exec(html);
    expect(flagged?.[1]).toBe('mounted into pod');
  });

  it('the embed’s compact pipeline shows the kubelet’s countdown and error cause', () => {
    const html = render(rowOf('uid-b', 'scratch'), true);
    expect(html).toContain('compact-error');
    expect(html).toContain('mkdir: no space left on device');
  });

  it('a volume rebuilt from disk reads "found on disk, not confirmed", settled by the kubelet; an orphan’s row offers no Unmount', () => {
    const uncertain = render(rowOf('uid-a', 'cache'));
    expect(uncertain).toContain('Found on disk, not confirmed: the agent rebuilt it from the kubelet’s root dir; the kubelet settles it.');
    expect(uncertain).not.toContain('reconciler');
    const orphan = render(rowOf('uid-o2', 'x'));
    expect(orphan).not.toContain('>Unmount</button>');
    expect(orphan).toContain('the kubelet tears it down (unmounts or removes it)');
  });

  it('Force resync is described in the words of the mode', () => {
    expect(describeResync('observer', true)).toContain('It never mounts or unmounts anything (the kubelet does)');
    expect(describeResync('observer', true)).not.toContain('corrected');
    expect(describeResync('node-a')).toContain('the actual state is corrected where it was wrong');
  });

  it('observe mode’s pods table has no Actions column (no Unmount, no Retry now)', () => {
    expect(volumeTableColumns(true).map((c) => c.label)).not.toContain('Actions');
    expect(volumeTableColumns(false).map((c) => c.label)).toContain('Actions');
  });

  it('the counts show the kubelet’s outstanding work instead of the agent’s pending and backoff counts, the same from a snapshot and a summary', () => {
    const snapshot = observedSnapshot();
    const items = nodeCountItems(summarizeNode(snapshot));
    expect(items).toEqual(nodeCountItems(toNodeSummary(summarizeSnapshot(snapshot))));
    const labels = items.map(([label, value]) => `${label}=${value}`);
    expect(labels).toEqual(['pods=2', 'desired volumes=3', 'mounted=0', 'found on disk, not confirmed=4', 'outstanding (kubelet)=3', 'failing in the kubelet=1', 'pod errors=0', 'source errors=0']);
    expect(nodeCountItems(summarizeNode(exampleSnapshot())).map(([label]) => label)).toContain('pending');
  });

  it('check lists read as questions with answers', () => {
    const html = renderToStaticMarkup(
      createElement(ChecksList, {
        checks: [
          { name: 'pod-known-to-api', ok: true, detail: 'no' },
          { name: 'kubelet-must-unmount', ok: false, detail: 'the kubelet has to unmount before the directory can go' },
        ],
      }),
    );
    expect(html).toContain('Pod still known to the API? <strong>no</strong>');
    expect(html).toContain('Left to the kubelet to unmount first? <strong>yes</strong> — the kubelet has to unmount before the directory can go');
    expect(html).toContain('<code class="muted small">pod-known-to-api</code>');
  });
});
