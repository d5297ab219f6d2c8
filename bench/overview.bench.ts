/**
 * `npm run bench:overview`: the nodes overview with 200 agents (issue "Kubernetes", requirement
 * 6: "Overview of 200 nodes loads without opening 200 event streams"). 200 fake agents
 * (lib/dashboard/testing/fake-agent.ts, real HTTP, 20 pods × 2 volumes each) behind the real
 * dashboard (`next start`), opened in Debian's Chromium. Reports as JSON on stdout:
 *
 * - time from navigation to all 200 node cards rendered (cold: first load after the server
 *   started; warm: median of 3 reloads);
 * - the browser's requests during 10 s on the page: event streams opened (target 0) and summary
 *   polls (one request for all nodes per poll);
 * - what the agents saw: summary requests and event streams per agent during those 10 s;
 * - the page's JS heap.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from '@playwright/test';
import { startFakeAgent, type FakeAgent } from '../lib/dashboard/testing/fake-agent.ts';
import { ensureDashboardBuild } from '../scripts/dashboard-build.mjs';
import { ManagedProcess, childEnv, freePort, httpStatus, pause, waitUntil } from '../scripts/demo/process.ts';

const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
const NODES = 200;
const OBSERVE_MS = 10_000;

function progress(message: string): void {
  process.stderr.write(`bench:overview: ${message}\n`);
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

const cardSelector = 'li:has(h2)';

async function timeToAllCards(page: Page, url: string): Promise<number> {
  const started = performance.now();
  await page.goto(url, { waitUntil: 'commit' });
  await page.waitForFunction((n) => document.querySelectorAll('li:has(h2) [data-testid="connection-status"][data-phase="live"]').length >= n, NODES, { timeout: 60_000 });
  return performance.now() - started;
}

async function main(): Promise<void> {
  ensureDashboardBuild({ frameAncestors: null, log: progress });
  const dir = await mkdtemp(join(tmpdir(), 'volumescope-bench-overview-'));
  const token = randomBytes(24).toString('hex');
  const tokenFile = join(dir, 'agents.token');
  await writeFile(tokenFile, `${token}\n`, { mode: 0o600 });
  progress(`starting ${NODES} fake agents`);
  const agents: { name: string; agent: FakeAgent }[] = [];
  for (let i = 0; i < NODES; i++) {
    const name = `node-${String(i).padStart(3, '0')}`;
    agents.push({ name, agent: await startFakeAgent({ token, port: 0, nodeName: name, pods: 20, volumesPerPod: 2, tickMs: 0 }) });
  }
  const port = await freePort();
  const dashboardUrl = `http://127.0.0.1:${port}`;
  const dashboard = ManagedProcess.start({
    name: 'dashboard',
    args: [join(REPO_ROOT, 'node_modules', 'next', 'dist', 'bin', 'next'), 'start', '-H', '127.0.0.1', '-p', String(port)],
    cwd: REPO_ROOT,
    env: childEnv({
      NEXT_TELEMETRY_DISABLED: '1',
      VOLUMESCOPE_AGENTS: agents.map((a) => `${a.name}=${a.agent.url}`).join(','),
      VOLUMESCOPE_AGENT_TOKENS: `*=${tokenFile}`,
    }),
    logFile: join(dir, 'dashboard.log'),
  });
  let browser: Browser | null = null;
  try {
    await waitUntil('the dashboard answers', async () => (await httpStatus(`${dashboardUrl}/api/agents`)) === 200, { deadlineMs: 60_000, process: dashboard });
    const executable = process.env['VOLUMESCOPE_CHROMIUM'] ?? '/usr/bin/chromium';
    browser = await chromium.launch({
      ...(executable === 'playwright' ? {} : { executablePath: executable }),
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
    const page = await (await browser.newContext({ viewport: { width: 1400, height: 1000 } })).newPage();

    const cold = await timeToAllCards(page, `${dashboardUrl}/`);
    const warm: number[] = [];
    for (let i = 0; i < 3; i++) warm.push(await timeToAllCards(page, `${dashboardUrl}/`));
    progress(`all ${NODES} cards live: cold ${round(cold)} ms, warm median ${round(median(warm))} ms`);
    const cards = await page.locator(cardSelector).count();

    // Requests while the page stays open.
    const requests: string[] = [];
    page.on('request', (r) => requests.push(new URL(r.url()).pathname));
    const before = agents.map((a) => a.agent.requestCounts());
    await pause(OBSERVE_MS);
    const after = agents.map((a) => a.agent.requestCounts());
    const streamsFromBrowser = requests.filter((p) => p.endsWith('/events')).length;
    const summaryPolls = requests.filter((p) => p === '/api/agents/summary').length;
    const perAgent = after.map((c, i) => ({ summaries: c.summary - (before[i]?.summary ?? 0), streams: c.events - (before[i]?.events ?? 0) }));
    const heap = await page.evaluate(() => (performance as unknown as { memory?: { usedJSHeapSize: number } }).memory?.usedJSHeapSize ?? null);

    const result = {
      benchmark: 'overview',
      nodes: NODES,
      cardsRendered: cards,
      timeToAllCardsLiveMs: { cold: round(cold), warmMedian: round(median(warm)), warm: warm.map(round) },
      during: { ms: OBSERVE_MS, browserRequests: requests.length, summaryPolls, eventStreamsOpenedByBrowser: streamsFromBrowser },
      agents: {
        summaryRequestsPerAgent: { min: Math.min(...perAgent.map((p) => p.summaries)), max: Math.max(...perAgent.map((p) => p.summaries)) },
        eventStreamsOpened: perAgent.reduce((n, p) => n + p.streams, 0),
      },
      jsHeapBytes: heap,
      verdict: { allCards: cards === NODES, noEventStreams: streamsFromBrowser === 0 && perAgent.every((p) => p.streams === 0) },
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    await browser?.close();
    await dashboard.stop(10_000);
    for (const a of agents) await a.agent.close();
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:overview failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
