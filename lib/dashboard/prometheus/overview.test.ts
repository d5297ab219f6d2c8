/**
 * The overview from a real Prometheus (Debian's package) scraping a real agent's `/metrics`:
 * the relay reads the scraped node from Prometheus, asks the agent Prometheus lacks directly,
 * and asks every agent when Prometheus fails, saying why.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountPod1, startServer, TEST_TOKEN, type ServerFixture } from '../../../agent/server/testing/server-fixture.ts';
import { freePort } from '../../../scripts/demo/process.ts';
import { AgentSummarySchema, type AgentSummary } from '../../api/index.ts';
import type { AgentProxyDeps } from '../agent-proxy.ts';
import type { AgentConfig } from '../agents-config.ts';
import { realProxyDeps } from '../testing/real-proxy-deps.ts';
import { SummaryRelay } from '../summary-relay.ts';
import { PrometheusClient, isPrometheusQueryError } from './client.ts';
import { PrometheusOverview, SUMMARY_VALUES_QUERY, summariesFromSamples } from './overview.ts';
import { summarySeries } from '../../api/index.ts';
import { PrometheusServer } from './testing/prometheus-server.ts';

let dir: string;
let tokenFile: string;
let scraped: ServerFixture;
let unscraped: ServerFixture;
let prometheus: PrometheusServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vs-prom-test-'));
  tokenFile = join(dir, 'agents.token');
  writeFileSync(tokenFile, `${TEST_TOKEN}\n`);
  scraped = await startServer();
  unscraped = await startServer();
  await mountPod1(scraped);
  prometheus = await PrometheusServer.start({ targets: [{ address: new URL(scraped.baseUrl).host, labels: { node: 'ignored-by-the-dashboard' } }], scrapeIntervalSeconds: 1, bearerTokenFile: tokenFile });
  await prometheus.waitForTargetsUp(1, { deadlineMs: 30_000 });
}, 60_000);

afterAll(async () => {
  await prometheus.stop();
  await scraped.close();
  await unscraped.close();
  rmSync(dir, { recursive: true, force: true });
});

function deps(agents: AgentConfig[]): AgentProxyDeps {
  return realProxyDeps(() => ({ source: 'env', agents }));
}

const agentSummary = async (fx: ServerFixture): Promise<AgentSummary> => AgentSummarySchema.parse((await fx.client.get('/api/v1/summary')).json);

describe('the overview from a real Prometheus', () => {
  it('reads the scraped node from Prometheus (the summary the agent serves) and asks the node Prometheus lacks directly', async () => {
    // Arrange: the scraped agent under its node name; the other under a name Prometheus has no series for.
    const expected = await agentSummary(scraped);
    const agents: AgentConfig[] = [
      { name: expected.nodeName, url: scraped.baseUrl, tokenFile },
      { name: 'not-in-prometheus', url: unscraped.baseUrl, tokenFile },
    ];
    const relay = new SummaryRelay({ prometheus: new PrometheusOverview(new PrometheusClient(prometheus.url)) });
    const summaryRequests = (): number => scraped.runtime.logger.lines.filter((l) => l.msg === 'http request' && l.fields.path === '/api/v1/summary').length;
    const before = summaryRequests();

    // Act
    const answer = await relay.collect(deps(agents));

    // Assert
    const [fromPrometheus, direct] = answer.agents;
    expect(fromPrometheus).toMatchObject({ name: expected.nodeName, via: 'prometheus', error: null });
    expect(fromPrometheus?.summary).toEqual(expected);
    expect(direct).toMatchObject({ name: 'not-in-prometheus', via: 'agent', error: null });
    expect(direct?.summary?.counts.pods).toBe(0);
    expect(answer.prometheus).toMatchObject({ url: prometheus.url, nodes: 1, fallback: { count: 1, names: ['not-in-prometheus'] }, error: null });
    expect(answer.prometheus?.asOf).toBe(fromPrometheus?.receivedAt);
    expect(Date.now() - (answer.prometheus?.asOf ?? 0)).toBeLessThan(30_000);
    // The scraped agent was not asked for its summary.
    expect(summaryRequests()).toBe(before);
    expect(before).toBeGreaterThan(0);
  });

  it('asks every agent when Prometheus cannot be reached, and says so naming its URL', async () => {
    const expected = await agentSummary(scraped);
    const down = `http://127.0.0.1:${await freePort()}`;
    const relay = new SummaryRelay({ prometheus: new PrometheusOverview(new PrometheusClient(down, { timeoutMs: 2_000 })) });

    const answer = await relay.collect(deps([{ name: expected.nodeName, url: scraped.baseUrl, tokenFile }]));

    expect(answer.agents.map((e) => [e.via, e.error, e.summary?.counts.mounted])).toEqual([['agent', null, 1]]);
    expect(answer.prometheus).toMatchObject({ nodes: 0, fallback: { count: 1 }, asOf: null });
    expect(answer.prometheus?.error).toContain(`${down}/api/v1/query`);
  });

  it('the client: an instant vector, and a refused query as a PrometheusQueryError naming the URL and the reason', async () => {
    const client = new PrometheusClient(`${prometheus.url}/`);
    const samples = await client.query(SUMMARY_VALUES_QUERY);
    expect(samples.find((s) => s.labels['field'] === 'counts.mounted')?.value).toBe(1);
    const err: unknown = await client.query('max by (').catch((e: unknown) => e);
    expect(isPrometheusQueryError(err)).toBe(true);
    expect((err as Error).message).toMatch(new RegExp(`^Prometheus at ${prometheus.url}/api/v1/query refused the query with HTTP 400: bad_data: `));
  });
});

describe('summariesFromSamples', () => {
  const at = 1_800_000_000_000;
  const summary: AgentSummary = {
    nodeName: 'node-a',
    seq: 7,
    statesSynced: true,
    agent: { version: '0.1.0', startedAt: at - 60_000 },
    mode: 'managed',
    mounter: { kind: 'linux', privileged: true },
    counts: { pods: 2, desiredVolumes: 3, mounted: 2, uncertain: 0, pending: 1, inBackoff: 1, running: 0, retrying: 0, podErrors: 0, sourceErrors: 0, foundDetached: 0 },
    reconstruction: { state: 'done', startedAt: at - 50_000, finishedAt: at - 40_000, outcomes: { reconstructed: 0, 'confirmed-mounted': 1, 'cleaned-up': 0, failed: 0 } },
    drivers: { total: 1, registered: 1, failing: 0 },
  };
  const samples = (s: AgentSummary, scrapedAt: number, drop?: string) => {
    const series = summarySeries(s);
    return {
      values: [...series.values].filter(([f]) => f !== drop).map(([field, value]) => ({ labels: { node_name: s.nodeName, field }, value, at })),
      info: [{ labels: { node_name: s.nodeName, ...series.info }, value: scrapedAt / 1000, at }],
    };
  };

  it('rebuilds a whole, recent summary; leaves out a node without its seq or with a sample older than the limit', () => {
    const whole = samples(summary, at - 5_000);
    const partial = samples({ ...summary, nodeName: 'node-b' }, at - 5_000, 'seq');
    const stale = samples({ ...summary, nodeName: 'node-c' }, at - 200_000);
    const nodes = summariesFromSamples([...whole.values, ...partial.values, ...stale.values], [...whole.info, ...partial.info, ...stale.info], 120_000);
    expect([...nodes.keys()]).toEqual(['node-a']);
    expect(nodes.get('node-a')).toEqual({ summary, sampledAt: at - 5_000 });
  });
});
