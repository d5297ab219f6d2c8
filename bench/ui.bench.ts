/**
 * `npm run bench:ui`: the dashboard's node page at scale, measured in Chromium; JSON on stdout
 * (progress on stderr).
 *
 * Setup: the fake agent (lib/dashboard/testing/fake-agent.ts) in this process with 2,000 pods ×
 * 5 volumes (10,000 rows plus its hand-written ones) and its timer off, so every change is one
 * this benchmark makes with `step()`; the built dashboard (`next start`, built first when missing
 * or stale) configured with that agent, listening on loopback (VOLUMESCOPE_LISTEN_HOST) so the
 * page gets the login-free local session instead of a redirect to /login; Debian's Chromium (VOLUMESCOPE_CHROMIUM overrides,
 * `playwright` = Playwright's own).
 *
 * Measurements (issue "Dashboard", requirement 6):
 * - timeToFirstRowsMs: navigation start → the first row of the pods table in the DOM (a
 *   MutationObserver installed before any page script), for a cold first load and then warm
 *   loads (median). Target ≤ 1,000 ms cold (issue "Performance", requirement 2).
 * - changeToDomMs: a change published by the agent (one operation fails into backoff) → the
 *   changed row shows the backoff state in the DOM (MutationObserver callback time). Both sides
 *   read the same wall clock. The page is sorted by next retry, so the changed row is in view.
 *   Sampled once the page has the whole node (the stream's snapshot replaced the server-rendered
 *   first screen) and is live.
 *   Samples are 600 ms apart (the stream's flush interval is 32 ms). Target: median ≤ 40 ms,
 *   p95 ≤ 100 ms.
 * - burst: 500 changes published back to back (20 ms pauses every 10 changes; the fake agent
 *   needs a few ms per change at this size, so this takes about 3 s); the longest main-thread task of the
 *   renderer meanwhile, from a Chromium trace (`RunTask` events of CrRendererMain), plus the
 *   Long Tasks API's view (tasks over 50 ms). Target: no task over 50 ms.
 * - jsHeapBytes: used JS heap of the page after a garbage collection, after the burst.
 *
 * VOLUMESCOPE_BENCH_TRACE=<file> also writes the burst's Chromium trace there (Perfetto opens it).
 * VOLUMESCOPE_BENCH_CPU=1 adds V8's CPU samples to that trace, to see which functions a long task
 * ran (build with `next build --no-mangling` for readable names). For attribution only: starting
 * the sampler shows up as one long task of its own, so the longest-task figure of such a run is
 * not the page's.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from '@playwright/test';
import { summarizeNode } from '../lib/dashboard/node-summary.ts';
import { startFakeAgent, type FakeAgent } from '../lib/dashboard/testing/fake-agent.ts';
import { ensureDashboardBuild } from '../scripts/dashboard-build.mjs';
import { ManagedProcess, childEnv, freePort, httpStatus, pause, waitUntil } from '../scripts/demo/process.ts';

const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
const NODE = 'bench-node';
const PODS = 2000;
const VOLUMES_PER_POD = 5;
const LATENCY_SAMPLES = 15;
const BURST_CHANGES = 500;
/** The fake agent adds one failing operation every third step (lib/dashboard/testing/fake-agent.ts). */
const STEPS_PER_CHANGE = 3;

function progress(message: string): void {
  process.stderr.write(`bench:ui: ${message}\n`);
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

const round = (n: number): number => Math.round(n * 10) / 10;

/** Name of the generated pod the n-th change (1-based) touches: the fake agent's `app-<5 digits>`. */
function changedPodName(n: number): string {
  return `app-${String(n % PODS).padStart(5, '0')}`;
}

// In-page helpers, installed before any page script runs. Plain JavaScript in a string: it runs
// in the browser, not here.
const PAGE_PROBES = `
(() => {
  window.__firstRowAt = null;
  const first = new MutationObserver(() => {
    if (window.__firstRowAt === null && document.querySelector('[role="row"][data-index]') !== null) {
      window.__firstRowAt = performance.now();
      first.disconnect();
    }
  });
  first.observe(document, { subtree: true, childList: true });
  window.__longTasks = [];
  try {
    new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__longTasks.push(e.duration); })
      .observe({ type: 'longtask', buffered: true });
  } catch {}
  // Resolves with Date.now() when the node's "in backoff" count shows \`n\`.
  window.__watchBackoffCount = (n) => new Promise((resolve) => {
    const shown = () => [...document.querySelectorAll('.counts__item')].some(
      (item) => item.querySelector('dt')?.textContent === 'in backoff' && item.querySelector('dd')?.textContent === String(n));
    if (shown()) { resolve(Date.now()); return; }
    const obs = new MutationObserver(() => { if (shown()) { obs.disconnect(); resolve(Date.now()); } });
    obs.observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  // Resolves with Date.now() when a rendered row of the pod shows the backoff state.
  window.__watchRow = (podName) => new Promise((resolve) => {
    const shown = () => [...document.querySelectorAll('[role="row"][data-index]')].some(
      (row) => (row.querySelector('.vt__pod')?.textContent ?? '').includes(podName) && row.querySelector('[data-state="backoff"]') !== null);
    if (shown()) { resolve(Date.now()); return; }
    const obs = new MutationObserver(() => { if (shown()) { obs.disconnect(); resolve(Date.now()); } });
    obs.observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
  });
})();
`;

interface Probes {
  __firstRowAt: number | null;
  __longTasks: number[];
  __watchRow: (podName: string) => Promise<number>;
  __watchBackoffCount: (n: number) => Promise<number>;
  __pending?: Promise<number>;
}

async function timeToFirstRows(page: Page, url: string): Promise<number> {
  await page.goto(url, { waitUntil: 'commit' });
  await page.waitForFunction(() => (window as unknown as Probes).__firstRowAt !== null, undefined, { timeout: 60_000 });
  return page.evaluate(() => (window as unknown as Probes).__firstRowAt ?? -1);
}

/** One change (one operation into backoff) → its row shows it; ms. */
async function changeToDom(page: Page, agent: FakeAgent, n: number): Promise<number> {
  const pod = changedPodName(n);
  await page.evaluate((name) => {
    const w = window as unknown as Probes;
    w.__pending = w.__watchRow(name);
  }, pod);
  const before = agent.snapshot().seq;
  const publishedAt = Date.now();
  for (let i = 0; i < STEPS_PER_CHANGE; i++) agent.step();
  if (!agent.snapshot().operations.some((o) => o.podUid === `load-${String(n % PODS).padStart(5, '0')}-uid`) || agent.snapshot().seq === before) {
    throw new Error(`the fake agent did not make the expected change for ${pod}`);
  }
  const shownAt = await page.evaluate(() => (window as unknown as Probes).__pending ?? Promise.resolve(-1));
  return shownAt - publishedAt;
}

interface TraceEvent {
  name: string;
  ph: string;
  pid: number;
  tid: number;
  dur?: number;
  args?: { name?: string };
}

/** The longest `RunTask` of the renderer main thread(s) in a Chromium trace, in ms. */
function longestRendererTask(trace: Buffer): { longestMs: number; tasks: number; over50: number } {
  const events = (JSON.parse(trace.toString('utf8')) as { traceEvents: TraceEvent[] }).traceEvents;
  const mainThreads = new Set(events.filter((e) => e.name === 'thread_name' && e.args?.name === 'CrRendererMain').map((e) => `${e.pid}:${e.tid}`));
  const tasks = events.filter((e) => e.ph === 'X' && e.name === 'RunTask' && mainThreads.has(`${e.pid}:${e.tid}`)).map((e) => (e.dur ?? 0) / 1000);
  return { longestMs: tasks.length === 0 ? 0 : Math.max(...tasks), tasks: tasks.length, over50: tasks.filter((t) => t > 50).length };
}

async function main(): Promise<void> {
  ensureDashboardBuild({ frameAncestors: null, log: progress });
  const dir = await mkdtemp(join(tmpdir(), 'volumescope-bench-ui-'));
  const token = randomBytes(24).toString('hex');
  const tokenFile = join(dir, `${NODE}.token`);
  await writeFile(tokenFile, `${token}\n`, { mode: 0o600 });
  const agent = await startFakeAgent({ token, port: 0, nodeName: NODE, pods: PODS, volumesPerPod: VOLUMES_PER_POD, tickMs: 0 });
  const port = await freePort();
  const dashboardUrl = `http://127.0.0.1:${port}`;
  const dashboard = ManagedProcess.start({
    name: 'dashboard',
    args: [join(REPO_ROOT, 'node_modules', 'next', 'dist', 'bin', 'next'), 'start', '-H', '127.0.0.1', '-p', String(port)],
    cwd: REPO_ROOT,
    env: childEnv({ NEXT_TELEMETRY_DISABLED: '1', VOLUMESCOPE_LISTEN_HOST: '127.0.0.1', VOLUMESCOPE_AGENTS: `${NODE}=${agent.url}`, VOLUMESCOPE_AGENT_TOKENS: `${NODE}=${tokenFile}` }),
    logFile: join(dir, 'dashboard.log'),
  });
  let browser: Browser | null = null;
  try {
    await waitUntil('the dashboard answers', async () => (await httpStatus(`${dashboardUrl}/`)) === 200, { deadlineMs: 60_000, process: dashboard });
    const executable = process.env['VOLUMESCOPE_CHROMIUM'] ?? '/usr/bin/chromium';
    browser = await chromium.launch({
      ...(executable === 'playwright' ? {} : { executablePath: executable }),
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
    const launched = browser;
    launched.on('disconnected', () => {
      if (launched === browser) progress('the browser disconnected unexpectedly');
    });
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    await context.addInitScript(PAGE_PROBES);
    const page = await context.newPage();
    page.on('crash', () => {
      progress('the page crashed');
    });
    const nodeUrl = `${dashboardUrl}/nodes/${NODE}`;

    // Time to first rows: the first load after the server started, then warm loads.
    progress(`node page with ${PODS} pods × ${VOLUMES_PER_POD} volumes (${agent.snapshot().actual.volumes.length} volumes in the snapshot)`);
    const cold = await timeToFirstRows(page, nodeUrl);
    const warm: number[] = [];
    for (let i = 0; i < 5; i++) warm.push(await timeToFirstRows(page, nodeUrl));
    progress(`time to first rows: cold ${round(cold)} ms, warm median ${round(median(warm))} ms`);

    // Change → DOM, on the page sorted by next retry (the new operation's row is in view).
    await timeToFirstRows(page, `${nodeUrl}?sort=retry`);
    await page.waitForFunction(() => document.querySelector('[data-testid="connection-status"][data-phase="live"]') !== null);
    // The server renders only the first screen; the page has the node once the stream's first
    // snapshot replaced it (what a prefetched snapshot gave at once before).
    await page.waitForFunction(() => document.querySelector('[data-testid="node-first-screen"]') === null, undefined, { timeout: 60_000 });
    await pause(1000);
    const latencies: number[] = [];
    let changes = 0;
    for (let i = 0; i < LATENCY_SAMPLES; i++) {
      latencies.push(await changeToDom(page, agent, ++changes));
      // Spaced samples: each change arrives on an idle stream (its flush is not throttled).
      await pause(600);
    }
    progress(`change → DOM: median ${round(median(latencies))} ms, max ${round(Math.max(...latencies))} ms (${latencies.map(round).join(', ')})`);

    // A burst of 500 changes within about a second, traced.
    await page.evaluate(() => {
      (window as unknown as Probes).__longTasks.length = 0;
    });
    const seqBefore = agent.snapshot().seq;
    const categories = ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'toplevel'];
    // VOLUMESCOPE_BENCH_CPU=1: the trace also carries V8's CPU samples (see the module comment).
    if (process.env['VOLUMESCOPE_BENCH_CPU'] === '1') categories.push('disabled-by-default-v8.cpu_profiler');
    await browser.startTracing(page, { categories });
    const burstStart = Date.now();
    for (let batch = 0; batch < BURST_CHANGES / 10; batch++) {
      for (let i = 0; i < 10 * STEPS_PER_CHANGE; i++) agent.step();
      await pause(20);
    }
    changes += BURST_CHANGES;
    const burstPublishedMs = Date.now() - burstStart;
    // Done when the page's "in backoff" count (always in view) shows the agent's.
    const expectedBackoff = summarizeNode(agent.snapshot()).inBackoff;
    const lastShownAt = await page.evaluate((n) => (window as unknown as Probes).__watchBackoffCount(n), expectedBackoff);
    await pause(500);
    const trace = await browser.stopTracing();
    const traceFile = process.env['VOLUMESCOPE_BENCH_TRACE'];
    if (traceFile !== undefined) await writeFile(traceFile, trace);
    const published = agent.snapshot().seq - seqBefore;
    const tasks = longestRendererTask(trace);
    const longTasks = await page.evaluate(() => (window as unknown as Probes).__longTasks);
    progress(`burst: ${published} deltas in ${burstPublishedMs} ms; longest renderer task ${round(tasks.longestMs)} ms`);

    // Heap after the burst, after a GC.
    const cdp = await context.newCDPSession(page);
    await cdp.send('HeapProfiler.collectGarbage');
    const heap = await cdp.send('Runtime.getHeapUsage');

    const result = {
      node: { pods: PODS, volumesPerPod: VOLUMES_PER_POD, rows: agent.snapshot().actual.volumes.length },
      browser: `Chromium ${browser.version()}`,
      timeToFirstRowsMs: { cold: round(cold), warmMedian: round(median(warm)), warm: warm.map(round), target: 1000 },
      changeToDomMs: { samples: latencies.length, median: round(median(latencies)), p95: round(percentile(latencies, 95)), max: round(Math.max(...latencies)), target: 40, p95Target: 100 },
      burst: {
        changes: BURST_CHANGES,
        deltasPublished: published,
        publishedWithinMs: burstPublishedMs,
        allChangesVisibleAfterMs: lastShownAt - burstStart,
        longestTaskMs: round(tasks.longestMs),
        rendererTasksTraced: tasks.tasks,
        tasksOver50Ms: tasks.over50,
        longTasksApiMs: longTasks.map(round),
        target: 'no task over 50 ms',
      },
      jsHeapBytes: { used: heap.usedSize, total: heap.totalSize },
      verdict: {
        timeToFirstRows: cold <= 1000,
        changeToDom: median(latencies) <= 40 && percentile(latencies, 95) <= 100,
        longestTask: tasks.longestMs <= 50,
      },
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    const closing = browser;
    browser = null;
    await closing?.close();
    await dashboard.stop(10_000);
    await agent.close();
    await rm(dir, { recursive: true, force: true });
  }
}

// Ctrl-C: exit through process.exit, so the exit hooks stop the dashboard and the browser.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.exit(130);
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:ui failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
