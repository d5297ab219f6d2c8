/** The overview's line saying where the counts come from when Prometheus is configured. */
import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { AgentSummaries, SummaryPoll } from '../../lib/dashboard/summary.ts';
import { CountsSource } from './nodes-overview.tsx';

const T = Date.UTC(2026, 0, 5, 10, 20, 30);

function poll(prometheus: AgentSummaries['prometheus']): SummaryPoll {
  return { data: { fetchedAt: T, source: 'env', agents: [], discovery: null, configError: null, prometheus }, dataUpdatedAt: T, error: null, errorUpdatedAt: 0 };
}

const html = (p: SummaryPoll): string => renderToStaticMarkup(createElement(CountsSource, { poll: p }));

describe('CountsSource', () => {
  it('says Prometheus and as of when, with the nodes asked directly', () => {
    const out = html(poll({ url: 'http://prom:9090', asOf: T - 10_000, nodes: 4998, fallback: { count: 7, names: ['a', 'b', 'c', 'd', 'e'] }, error: null }));
    expect(out).toContain('data-source="prometheus"');
    expect(out).toMatch(/source: Prometheus \(as of <time dateTime="2026-01-05T10:20:20.000Z"/);
    expect(out).toContain('4998 nodes');
    expect(out).toContain('asked directly, as Prometheus lacks them: a, b, c, d, e and 2 more');
  });

  it('says why Prometheus was not used, and nothing without Prometheus', () => {
    const failed = html(poll({ url: 'http://prom:9090', asOf: null, nodes: 0, fallback: { count: 3, names: ['a', 'b', 'c'] }, error: 'Prometheus at http://prom:9090/api/v1/query could not be queried: connect ECONNREFUSED' }));
    expect(failed).toContain('data-source="agents"');
    expect(failed).toContain('source: the agents (Prometheus failed, so every agent was asked: Prometheus at http://prom:9090/api/v1/query could not be queried: connect ECONNREFUSED)');
    expect(html(poll(null))).toBe('');
    expect(html(poll(undefined))).toBe('');
  });
});
