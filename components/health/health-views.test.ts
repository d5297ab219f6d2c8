/** The mount health table and the blocker report as rendered: states in words, affected pods, the verdict and every holder. */
import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { FIXTURE_T0 } from '../../lib/api/testing/snapshot-fixtures.ts';
import { BlockersReportView } from './blockers-panel.tsx';
import { MountHealthTable } from './mount-health-table.tsx';

describe('MountHealthTable', () => {
  it('shows the state in words with its error, the path and the affected pods by name', () => {
    const html = renderToStaticMarkup(
      createElement(MountHealthTable, {
        node: 'node-a',
        rows: [
          {
            entry: { path: '/r/plugins/x/globalmount', podUid: null, volume: 'v', kind: 'staging', state: 'not-connected', error: 'ENOTCONN: transport endpoint is not connected: /r/plugins/x/globalmount', checkedAt: FIXTURE_T0, since: FIXTURE_T0 },
            affectedPods: ['uid-1', 'uid-2'],
          },
        ],
        podNames: new Map([['uid-1', 'default/web']]),
        empty: 'none',
        caption: 'c',
      }),
    );
    expect(html).toContain('not connected (transport endpoint is not connected)');
    expect(html).toContain('ENOTCONN: transport endpoint is not connected: /r/plugins/x/globalmount');
    expect(html).toContain('staging (device mount)');
    expect(html).toContain('default/web');
    expect(html).toContain('uid-2');
  });

  it('says so when there is nothing to list', () => {
    expect(renderToStaticMarkup(createElement(MountHealthTable, { node: 'n', rows: [], podNames: new Map(), empty: 'Every checked mount answers.', caption: 'c' }))).toContain('Every checked mount answers.');
  });
});

describe('BlockersReportView', () => {
  it('shows the verdict and each holder with what it holds', () => {
    const html = renderToStaticMarkup(
      createElement(BlockersReportView, {
        title: 'TearDown failed: the target is busy',
        report: {
          path: '/r/pods/u/volumes/x/data',
          holders: [{ pid: 4242, command: 'sleep 600', kind: 'cwd', path: '/r/pods/u/volumes/x/data', container: { podUid: 'uid-9', containerId: 'c'.repeat(64), runtime: 'containerd' } }],
          truncated: false,
          incomplete: null,
          processesScanned: 12,
          checkedAt: FIXTURE_T0,
          durationMs: 4,
        },
      }),
    );
    expect(html).toContain('1 process(es) keep /r/pods/u/volumes/x/data busy.');
    expect(html).toContain('<td>4242</td>');
    expect(html).toContain('working directory');
    expect(html).toContain(`in container ${'c'.repeat(12)} of pod uid-9`);
  });
});
