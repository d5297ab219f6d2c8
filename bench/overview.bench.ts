/**
 * `npm run bench:overview [-- --only=browser,prometheus,fanout]`: the nodes overview at scale.
 * Three modes (all by default), reported as one JSON object on stdout:
 *
 * `browser` (issue "Kubernetes", requirement 6: "Overview of 200 nodes loads without opening 200
 * event streams"; its fields at the top level, as before): 200 fake agents
 * (lib/dashboard/testing/fake-agent.ts, real HTTP, 20 pods × 2 volumes each) behind the real
 * dashboard (`next start`), opened in Debian's Chromium:
 * - time from navigation to all 200 node cards rendered (cold: first load after the server
 *   started; warm: median of 3 reloads);
 * - the browser's requests during 10 s on the page: event streams opened (target 0) and summary
 *   polls (one request for all nodes per poll);
 * - what the agents saw: summary requests and event streams per agent during those 10 s;
 * - the page's JS heap.
 *
 * `prometheus` (issue "Cluster-wide", requirement 5; field `prometheus`): 5,000 simulated nodes
 * (bench/simulated-nodes.ts: one HTTP server, one path per node) scraped by a real Prometheus
 * (Debian's package; one target per node with its own `metrics_path` and a `node` label, every
 * 15 s), and the real dashboard (`next start`) with `VOLUMESCOPE_PROMETHEUS_URL`:
 * - `overviewCompleteMs`: `GET /api/agents/summary` (the overview's poll, the route the page
 *   calls) until its answer holds every node's counts (cold: the first request after the
 *   dashboard started; warm: median of 5, each after the relays' reuse windows); target ≤ 2 s;
 * - `dashboardCpuCores`: the dashboard processes' CPU time (user + system, /proc) over 30 s of
 *   one open overview (a poll every 3 s, as the page does) divided by the wall time; target ≤ 0.5;
 * - `prometheusReadMs`: the two PromQL queries and the rebuild of 5,000 summaries alone, in this
 *   process (lib/dashboard/prometheus/overview.ts), and Prometheus's own CPU over the window.
 * The page itself is not rendered with 5,000 cards here (the browser mode measures rendering).
 *
 * `fanout` (same requirement; field `fanout`): 1,000 simulated agents, no Prometheus: the relay
 * asks every agent's `GET /api/v1/summary`; `overviewCompleteMs` as above; target ≤ 3 s.
 *
 * Each result has `verdict` booleans and the machine's load average before and after.
 */
import { randomBytes } from 'node:crypto';
import { readdir, readFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from '@playwright/test';
import { PrometheusClient } from '../lib/dashboard/prometheus/client.ts';
import { PrometheusOverview } from '../lib/dashboard/prometheus/overview.ts';
import { PrometheusServer } from '../lib/dashboard/prometheus/testing/prometheus-server.ts';
import { SUMMARY_POLL_INTERVAL_MS, AgentSummariesSchema } from '../lib/dashboard/summary.ts';
import { startFakeAgent, type FakeAgent } from '../lib/dashboard/testing/fake-agent.ts';
import { startSimulatedNodes, type SimulatedNodes } from './simulated-nodes.ts';
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

/** The browser mode: 200 fake agents, the real page in Chromium (the fields of the original benchmark). */
async function browserMode(): Promise<Record<string, unknown>> {
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
  // On loopback (VOLUMESCOPE_LISTEN_HOST): the page gets the local session instead of a redirect to /login.
  const started = await startDashboard(dir, { VOLUMESCOPE_AGENTS: agents.map((a) => `${a.name}=${a.agent.url}`).join(','), VOLUMESCOPE_AGENT_TOKENS: `*=${tokenFile}` });
  const dashboardUrl = started.url;
  const dashboard = started.process;
  let browser: Browser | null = null;
  try {
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
    return result;
  } finally {
    await browser?.close();
    await dashboard.stop(10_000);
    for (const a of agents) await a.agent.close();
    await rm(dir, { recursive: true, force: true });
  }
}

// SCALE MODES

const PROMETHEUS_NODES = 5_000;
const FANOUT_AGENTS = 1_000;
const SCRAPE_INTERVAL_S = 15;
const CPU_WINDOW_MS = 30_000;
const WARM_RUNS = 5;
/** Longer than the relay's and the Prometheus reader's reuse windows (1 s each). */
const BETWEEN_RUNS_MS = 1_200;
const OVERVIEW_TARGET_MS = { prometheus: 2_000, fanout: 3_000 } as const;
const CPU_TARGET_CORES = 0.5;

/** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on Linux). */
const USER_HZ = 100;

/** The CPU seconds (user + system) of `pid` and every descendant, from /proc. */
async function processTreeCpuSeconds(pid: number): Promise<number> {
  const stats = new Map<number, { ppid: number; ticks: number }>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let text: string;
    try {
      text = await readFile(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    // Fields after the command (which may hold spaces) in parentheses: state ppid … utime(14) stime(15).
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    stats.set(Number(entry), { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) });
  }
  const tree = new Set([pid]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [p, s] of stats) {
      if (!tree.has(p) && tree.has(s.ppid)) {
        tree.add(p);
        grew = true;
      }
    }
  }
  let ticks = 0;
  for (const p of tree) ticks += stats.get(p)?.ticks ?? 0;
  return ticks / USER_HZ;
}

function load(): { load1: number; load5: number; cores: number } {
  const [load1 = 0, load5 = 0] = loadavg();
  return { load1: Math.round(load1 * 100) / 100, load5: Math.round(load5 * 100) / 100, cores: cpus().length };
}

/** A `next start` on loopback (the local session) with `env`; resolves once it answers. */
async function startDashboard(dir: string, env: NodeJS.ProcessEnv): Promise<{ url: string; process: ManagedProcess }> {
  const port = await freePort();
  const dashboard = ManagedProcess.start({
    name: 'dashboard',
    args: [join(REPO_ROOT, 'node_modules', 'next', 'dist', 'bin', 'next'), 'start', '-H', '127.0.0.1', '-p', String(port)],
    cwd: REPO_ROOT,
    env: childEnv({ NEXT_TELEMETRY_DISABLED: '1', VOLUMESCOPE_LISTEN_HOST: '127.0.0.1', ...env }),
    logFile: join(dir, 'dashboard.log'),
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitUntil('the dashboard answers', async () => (await httpStatus(`${url}/api/agents`)) === 200, { deadlineMs: 60_000, process: dashboard });
  } catch (err) {
    await dashboard.stop(10_000);
    throw err;
  }
  return { url, process: dashboard };
}

/** The agents file of the simulated nodes (too many for `VOLUMESCOPE_AGENTS`: one variable is at most 128 KiB). */
async function writeAgentsFile(dir: string, nodes: SimulatedNodes, tokenFile: string): Promise<string> {
  const file = join(dir, 'agents.json');
  await writeFile(file, JSON.stringify({ agents: nodes.names.map((name) => ({ name, url: nodes.agentUrl(name), tokenFile })) }));
  return file;
}

/** One overview poll through the route: its time until the whole answer is parsed, and what it holds. */
async function overviewPoll(dashboardUrl: string): Promise<{ ms: number; nodes: number; withCounts: number; viaPrometheus: number; errors: number; source: string }> {
  const started = performance.now();
  const res = await fetch(`${dashboardUrl}/api/agents/summary`, { headers: { Accept: 'application/json' }, signal: AbortSignal.timeout(60_000) });
  const body = AgentSummariesSchema.parse(await res.json());
  const ms = performance.now() - started;
  const p = body.prometheus ?? null;
  return {
    ms,
    nodes: body.agents.length,
    withCounts: body.agents.filter((a) => a.summary !== null && a.error === null).length,
    viaPrometheus: body.agents.filter((a) => a.via === 'prometheus').length,
    errors: body.agents.filter((a) => a.error !== null).length,
    source: p === null ? 'agents' : p.error === null ? `Prometheus (as of ${new Date(p.asOf ?? 0).toISOString()})` : `agents (Prometheus failed: ${p.error})`,
  };
}

/** The overview's poll timed cold (first request) and warm ({@link WARM_RUNS}, spaced past the reuse windows). */
async function timeOverview(dashboardUrl: string, expected: number): Promise<{ cold: Awaited<ReturnType<typeof overviewPoll>>; warm: number[]; complete: boolean; last: Awaited<ReturnType<typeof overviewPoll>> }> {
  const cold = await overviewPoll(dashboardUrl);
  const warm: number[] = [];
  let last = cold;
  for (let i = 0; i < WARM_RUNS; i++) {
    await pause(BETWEEN_RUNS_MS);
    last = await overviewPoll(dashboardUrl);
    warm.push(last.ms);
  }
  return { cold, warm, last, complete: cold.withCounts === expected && last.withCounts === expected };
}

/**
 * CPU of the dashboard (and of Prometheus, for the machine's picture) while one overview is
 * open: a poll every {@link SUMMARY_POLL_INTERVAL_MS}, as the page does, for {@link CPU_WINDOW_MS}.
 */
async function cpuWhileOpen(
  dashboardUrl: string,
  pids: { dashboard: number; prometheus?: number },
): Promise<{ windowMs: number; polls: number; dashboardCores: number; dashboardCpuMsPerPoll: number; prometheusCores: number | null }> {
  const before = { d: await processTreeCpuSeconds(pids.dashboard), p: pids.prometheus === undefined ? 0 : await processTreeCpuSeconds(pids.prometheus) };
  const started = performance.now();
  let polls = 0;
  while (performance.now() - started < CPU_WINDOW_MS) {
    const tick = performance.now();
    await overviewPoll(dashboardUrl);
    polls++;
    const rest = SUMMARY_POLL_INTERVAL_MS - (performance.now() - tick);
    if (rest > 0) await pause(rest);
  }
  const wall = (performance.now() - started) / 1000;
  const after = { d: await processTreeCpuSeconds(pids.dashboard), p: pids.prometheus === undefined ? 0 : await processTreeCpuSeconds(pids.prometheus) };
  const r3 = (n: number): number => Math.round(n * 1000) / 1000;
  return {
    windowMs: Math.round(wall * 1000),
    polls,
    dashboardCores: r3((after.d - before.d) / wall),
    dashboardCpuMsPerPoll: Math.round(((after.d - before.d) * 1000) / polls),
    prometheusCores: pids.prometheus === undefined ? null : r3((after.p - before.p) / wall),
  };
}

/** A temporary directory with a token file, and `count` simulated nodes that want that token. */
async function simulatedSetup(mode: string, count: number): Promise<{ dir: string; tokenFile: string; nodes: SimulatedNodes }> {
  const dir = await mkdtemp(join(tmpdir(), `volumescope-bench-overview-${mode}-`));
  const token = randomBytes(24).toString('hex');
  const tokenFile = join(dir, 'agents.token');
  await writeFile(tokenFile, `${token}\n`, { mode: 0o600 });
  return { dir, tokenFile, nodes: await startSimulatedNodes({ count, token, prefix: 'node', now: Date.now() }) };
}

/** The `prometheus` mode (see the module comment). */
async function prometheusMode(): Promise<Record<string, unknown>> {
  const loadBefore = load();
  const { dir, tokenFile, nodes } = await simulatedSetup('prom', PROMETHEUS_NODES);
  let prometheus: PrometheusServer | null = null;
  let dashboard: { url: string; process: ManagedProcess } | null = null;
  try {
    progress(`prometheus: starting Prometheus with ${PROMETHEUS_NODES} targets (scrape every ${SCRAPE_INTERVAL_S} s)`);
    const address = `127.0.0.1:${nodes.port}`;
    prometheus = await PrometheusServer.start({
      targets: nodes.names.map((name) => ({ address, metricsPath: `/nodes/${name}/metrics`, labels: { node: name } })),
      scrapeIntervalSeconds: SCRAPE_INTERVAL_S,
      bearerTokenFile: tokenFile,
    });
    const settleStarted = performance.now();
    await prometheus.waitForTargetsUp(PROMETHEUS_NODES, { deadlineMs: 180_000, intervalMs: 2_000 });
    const reader = new PrometheusOverview(new PrometheusClient(prometheus.url, { timeoutMs: 30_000 }), { reuseMs: 0 });
    await waitUntil(`Prometheus has all ${PROMETHEUS_NODES} summaries`, async () => (await reader.read()).nodes.size === PROMETHEUS_NODES, { deadlineMs: 120_000, intervalMs: 1_000, process: prometheus.process });
    const settledMs = performance.now() - settleStarted;
    progress(`prometheus: all targets up and all summaries queryable after ${Math.round(settledMs / 1000)} s`);
    const readMs: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      await reader.read();
      readMs.push(performance.now() - t);
    }

    const agentsFile = await writeAgentsFile(dir, nodes, tokenFile);
    dashboard = await startDashboard(dir, { VOLUMESCOPE_DASHBOARD_CONFIG: agentsFile, VOLUMESCOPE_PROMETHEUS_URL: prometheus.url });
    const summaryRequestsBefore = nodes.requests().summary;
    const timed = await timeOverview(dashboard.url, PROMETHEUS_NODES);
    progress(`prometheus: overview complete cold ${round(timed.cold.ms)} ms, warm median ${round(median(timed.warm))} ms (${timed.last.viaPrometheus} via Prometheus)`);
    const cpu = await cpuWhileOpen(dashboard.url, { dashboard: dashboard.process.pid ?? 0, ...(prometheus.process.pid === undefined ? {} : { prometheus: prometheus.process.pid }) });
    progress(`prometheus: dashboard ${cpu.dashboardCores} cores over ${cpu.windowMs} ms (${cpu.polls} polls)`);
    const warmMedian = median(timed.warm);
    return {
      nodes: PROMETHEUS_NODES,
      scrapeIntervalSeconds: SCRAPE_INTERVAL_S,
      settledMs: Math.round(settledMs),
      overviewCompleteMs: { cold: round(timed.cold.ms), warmMedian: round(warmMedian), warm: timed.warm.map(round) },
      nodesWithCounts: timed.last.withCounts,
      nodesViaPrometheus: timed.last.viaPrometheus,
      source: timed.last.source,
      agentSummaryRequestsDuringPolls: nodes.requests().summary - summaryRequestsBefore,
      prometheusReadMs: { median: round(median(readMs)), runs: readMs.map(round) },
      cpu,
      load: { before: loadBefore, after: load() },
      verdict: {
        complete: timed.complete && timed.last.viaPrometheus === PROMETHEUS_NODES,
        overviewWithinTarget: warmMedian <= OVERVIEW_TARGET_MS.prometheus,
        dashboardCpuWithinTarget: cpu.dashboardCores <= CPU_TARGET_CORES,
      },
    };
  } finally {
    await dashboard?.process.stop(10_000);
    await prometheus?.stop();
    await nodes.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The `fanout` mode (see the module comment). */
async function fanoutMode(): Promise<Record<string, unknown>> {
  const loadBefore = load();
  const { dir, tokenFile, nodes } = await simulatedSetup('fanout', FANOUT_AGENTS);
  let dashboard: { url: string; process: ManagedProcess } | null = null;
  try {
    dashboard = await startDashboard(dir, { VOLUMESCOPE_DASHBOARD_CONFIG: await writeAgentsFile(dir, nodes, tokenFile) });
    const before = nodes.requests().summary;
    const timed = await timeOverview(dashboard.url, FANOUT_AGENTS);
    const asked = nodes.requests().summary - before;
    progress(`fanout: ${FANOUT_AGENTS} agents, overview complete cold ${round(timed.cold.ms)} ms, warm median ${round(median(timed.warm))} ms`);
    const warmMedian = median(timed.warm);
    return {
      agents: FANOUT_AGENTS,
      overviewCompleteMs: { cold: round(timed.cold.ms), warmMedian: round(warmMedian), warm: timed.warm.map(round) },
      nodesWithCounts: timed.last.withCounts,
      errors: timed.last.errors,
      summaryRequestsPerPoll: asked / (WARM_RUNS + 1),
      load: { before: loadBefore, after: load() },
      verdict: { complete: timed.complete, overviewWithinTarget: warmMedian <= OVERVIEW_TARGET_MS.fanout },
    };
  } finally {
    await dashboard?.process.stop(10_000);
    await nodes.close();
    await rm(dir, { recursive: true, force: true });
  }
}

const MODES = ['browser', 'prometheus', 'fanout'] as const;
type Mode = (typeof MODES)[number];

function selectedModes(argv: readonly string[]): Mode[] {
  const only = argv.find((a) => a.startsWith('--only='))?.slice('--only='.length);
  if (only === undefined) return [...MODES];
  const picked = only.split(',').map((m) => m.trim());
  for (const m of picked) if (!(MODES as readonly string[]).includes(m)) throw new Error(`--only: unknown mode ${JSON.stringify(m)} (modes: ${MODES.join(', ')})`);
  return MODES.filter((m) => picked.includes(m));
}

async function main(): Promise<void> {
  const modes = selectedModes(process.argv.slice(2));
  ensureDashboardBuild({ frameAncestors: null, log: progress });
  let result: Record<string, unknown> = { benchmark: 'overview', modes };
  if (modes.includes('browser')) result = { ...result, ...(await browserMode()) };
  if (modes.includes('prometheus')) result = { ...result, prometheus: await prometheusMode() };
  if (modes.includes('fanout')) result = { ...result, fanout: await fanoutMode() };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:overview failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
