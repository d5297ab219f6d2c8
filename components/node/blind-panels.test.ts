import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { exampleSnapshot } from '../../lib/api/testing/snapshot-fixtures.ts';
import type { TimerHandle } from '../../lib/clock/clock.ts';
import { useBefore } from '../hooks/use-agent-restart.ts';
import { Panel } from '../shared/panel.tsx';
import { StaleStampProvider } from '../shared/stale-frame.tsx';
import { ReconstructionPanel } from './reconstruction-panel.tsx';
import { RestartBanner } from './restart-banner.tsx';

function panelIn(stamp: { stale: boolean; text: string | null }): string {
  return renderToStaticMarkup(createElement(StaleStampProvider, { stamp, children: createElement(Panel, { id: 'pods', title: 'Pods and volumes', children: 'rows' }) }));
}

describe('Panel on an agent page', () => {
  it('is dimmed and stamped while the agent is unreachable', () => {
    const html = panelIn({ stale: true, text: 'as of 18:59:27 (agent unreachable)' });
    expect(html).toContain('class="panel is-stale"');
    expect(html).toContain('<span class="stale-mark" data-stale="true">as of 18:59:27 (agent unreachable)</span>');
  });

  it('keeps the (hidden, positioned) stamp element while live, so going stale changes no layout', () => {
    const html = panelIn({ stale: false, text: null });
    expect(html).toContain('class="panel"');
    expect(html).toContain('<span class="stale-mark" data-stale="false"></span>');
  });

  it('a lazy panel (below the fold) is marked for the browser to skip while off screen', () => {
    expect(renderToStaticMarkup(createElement(Panel, { id: 'x', title: 'X', lazy: true, children: 'body' }))).toContain('class="panel panel--lazy"');
  });

  it('has no stamp outside an agent page', () => {
    expect(renderToStaticMarkup(createElement(Panel, { id: 'x', title: 'X', children: 'body' }))).not.toContain('stale-mark');
  });
});

describe('RestartBanner', () => {
  it('says nothing (but keeps its live region) without a restart', () => {
    expect(renderToStaticMarkup(createElement(RestartBanner, { restart: null }))).toBe('<div class="restart-banner-region" role="status" aria-live="polite"></div>');
  });

  it('says the agent restarted, the previous uptime, and links to the reconstruction section', () => {
    const now = Date.now();
    const html = renderToStaticMarkup(createElement(RestartBanner, { restart: { restartedAt: now - 1_000, previousStartedAt: now - 7_201_000, previousUptimeMs: 7_200_000 } }));
    expect(html).toContain('its previous run was up 2 h.');
    expect(html).toContain('href="#reconstruction"');
  });

  it('is gone five minutes after the restart', () => {
    const now = Date.now();
    const html = renderToStaticMarkup(createElement(RestartBanner, { restart: { restartedAt: now - 5 * 60_000 - 1_000, previousStartedAt: now - 9e6, previousUptimeMs: 1_000 } }));
    expect(html).not.toContain('restart-banner"');
  });
});

describe('ReconstructionPanel', () => {
  it('opens with the plain sentence, then the legend, then the table', () => {
    const snapshot = exampleSnapshot();
    const html = renderToStaticMarkup(createElement(ReconstructionPanel, { agent: 'node-a', snapshot }));
    expect(html).toContain('id="reconstruction"');
    expect(html).toMatch(/<p class="plain-line">After the restart at [^:]+:\d\d:\d\d: 1 volume directory found, all 1 confirmed, 0 uncertain, 0 cleaned up, took 80 ms<\/p>/);
    expect(html.indexOf('plain-line')).toBeLessThan(html.indexOf('class="legend"'));
    expect(html.indexOf('class="legend"')).toBeLessThan(html.indexOf('<table'));
    for (const word of ['confirmed', 'uncertain', 'cleaned up', 'failed']) expect(html).toContain(`</span>${word}</span>`);
  });
});

describe('useBefore', () => {
  /** A clock stopped at `now` (no timer fires during a server render). */
  const stoppedAt = (now: number) => ({ now: () => now, setTimeout: () => ({}) as TimerHandle, clearTimeout: () => undefined });
  const probe = ({ deadline, now }: { deadline: number; now: number }) => (useBefore(deadline, stoppedAt(now)) ? 'before' : 'after');

  it('is true before the deadline and false from it', () => {
    expect(renderToStaticMarkup(createElement(probe, { deadline: 1_000, now: 999 }))).toBe('before');
    expect(renderToStaticMarkup(createElement(probe, { deadline: 1_000, now: 1_000 }))).toBe('after');
  });
});
