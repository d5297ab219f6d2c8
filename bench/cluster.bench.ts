/**
 * `npm run bench:cluster` (through bench/cluster.bench.mjs: a private mount namespace as root):
 * the agent side by side with the upstream kubelet on the local cluster (scripts/cluster/cluster.ts:
 * real kube-apiserver, etcd, kube-controller-manager with the attach/detach controller; node
 * `kubelet-0` runs the upstream kubelet v1.34 without a container runtime, node `agent-0` the agent
 * in managed mode). One JSON document on stdout (every figure), progress on stderr.
 *
 * mountLatency: the same `LATENCY_PODS` pods (one emptyDir on disk + one configMap, referenced by
 * the container's volumeMounts, no service-account volume) are created through the API server on
 * both nodes, pod i of each node together (two POSTs in parallel), one pair every
 * `--interval-ms` (default 100 ms) so the figure is a pod's latency, not a backlog's.
 * - "API-pod-created" = the moment this process has the API server's 201 answer to the POST (the
 *   pod's creationTimestamp has whole seconds only). The POST's round trip is reported too.
 * - "mounted" = both volumes are set up on the node's disk, as both nodes' plugins leave them
 *   (the layout is the same on both, docs/side-by-side.md): the emptyDir's ready file
 *   `pods/<uid>/plugins/kubernetes.io~empty-dir/scratch/ready` (written at the end of the
 *   emptyDir's SetUp) and the configMap's key `pods/<uid>/volumes/kubernetes.io~configmap/config/mode`
 *   resolving through the atomic writer's `..data` symlink (published last by the writer).
 *   Neither volume is a mount point (an emptyDir on disk and a configMap are plain directories on
 *   both nodes), so the mount table has nothing to show; this process polls the files of every
 *   pod still pending every `POLL_MS` (the gaps between polls, i.e. the resolution, are reported).
 *
 * restart: `RESTART_PODS` pods × 5 volumes (2 emptyDir, 3 configMap) = 1,000 volumes on each node;
 * once each node's `volume_manager_total_volumes{state="actual_state_of_world"}` sums to 1,000,
 * the node process is stopped (SIGTERM; its mounts and pod dirs stay) and started again, one node
 * after the other, each once the machine is quiet (at most a quarter of a core busy over two
 * 500 ms windows, `quietBefore` in the figures). "All confirmed" = the restarted process's own
 * `volume_manager_total_volumes{state="actual_state_of_world"}` sums to 1,000 again: the metric
 * counts only volumes marked mounted, not the ones reconstructed from disk and still uncertain
 * (kubernetes/kubernetes pkg/kubelet/volumemanager/metrics/metrics.go@v1.34 counts
 * `GetMountedVolumes`; the agent counts
 * the same, lib/volumemanager/metrics.ts), so it reaches 1,000 once every volume was set up again
 * and confirmed. The kubelet serves it on its API port (`--port`; plain HTTP without TLS files,
 * anonymous, AlwaysAllow), the
 * agent on `/metrics` with its token; both scraped every `SCRAPE_MS`. Timed from the start of the
 * new process (spawn), so the process start (Go binary / Node with tsx) is included.
 * `cpuMsToAllConfirmed`: the CPU time (user + system, all threads) the new process had used by
 * then, read from /proc; on a shared 2-core machine it varies much less than the wall time.
 *
 * Target (issue "performance", requirement 5): the agent at least 3× faster at p50 than the
 * kubelet on both (mount latency p50; restart to all confirmed), in the same run.
 *
 * Flags: `--pods N` (latency pods per node), `--interval-ms N`, `--restart-pods N` (× 5 volumes),
 * `--skip-restart`, `--restarts N` (restart each node N times, alternating; the JSON then has every
 * round in `rounds` and `ratio` is the kubelet's median over the agent's), `--agent-from-source` (agent-0 from agent/main.ts through tsx instead of the
 * image's esbuild bundle), `--agent-cpu-prof DIR` (every agent-0 process writes a V8 CPU profile
 * into DIR when it exits: Node's `--cpu-prof`; the profiler's overhead is in that run's figures).
 * `VOLUMESCOPE_CLUSTER_BENCH_DIR` (absolute) moves the cluster's state dir.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { KUBELET_NODE, NODE, componentVersion, startCluster, stateDirFor, type ClusterFacts, type RunningCluster } from '../scripts/cluster/cluster.ts';
import { freePort, waitUntil } from '../scripts/demo/process.ts';
import { clockTicks, parseProcStat } from './proc-stat.ts';

const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
const TARGET_RATIO = 3;
const POLL_MS = 2;
const SCRAPE_MS = 25;
const CLOCK_TICKS = clockTicks();
const CONFIG_KEY = 'mode';
const RESTART_VOLUMES_PER_POD = 5;
const QUIET_WINDOW_MS = 500;
const QUIET_BUSY_CORES = 0.25;
const QUIET_DEADLINE_MS = 30_000;

const { values: flags } = parseArgs({
  options: {
    pods: { type: 'string', default: '100' },
    'interval-ms': { type: 'string', default: '100' },
    'restart-pods': { type: 'string', default: '200' },
    'skip-restart': { type: 'boolean', default: false },
    restarts: { type: 'string', default: '1' },
    'agent-from-source': { type: 'boolean', default: false },
    'agent-cpu-prof': { type: 'string' },
  },
});
const LATENCY_PODS = Number(flags.pods);
const INTERVAL_MS = Number(flags['interval-ms']);
const RESTART_PODS = Number(flags['restart-pods']);
const RESTARTS = Number(flags.restarts);
if (!Number.isInteger(RESTARTS) || RESTARTS < 1) throw new Error(`--restarts: want a whole number of at least 1, got ${flags.restarts ?? ''}`);

const progress = (line: string): void => {
  process.stderr.write(`[bench:cluster] ${line}\n`);
};

function percentile(sorted: readonly number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] ?? Number.NaN;
}

const round = (n: number, digits = 1): number => Math.round(n * 10 ** digits) / 10 ** digits;

interface Distribution {
  readonly n: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
}

function distribution(values: readonly number[]): Distribution {
  const sorted = [...values].sort((a, b) => a - b);
  const mean = sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length);
  return { n: sorted.length, p50: round(percentile(sorted, 50)), p99: round(percentile(sorted, 99)), max: round(sorted.at(-1) ?? Number.NaN), mean: round(mean) };
}

const load = (): { loadavg1m: number; loadavg5m: number; loadavg15m: number; procLoadavg: string } => {
  const [a = 0, b = 0, c = 0] = loadavg();
  return { loadavg1m: round(a, 2), loadavg5m: round(b, 2), loadavg15m: round(c, 2), procLoadavg: readFileSync('/proc/loadavg', 'utf8').trim() };
};

// ---- the API server, as the cluster admin, over one keep-alive connection pool ------------------

/** An API call that did not answer with the status it needed; the message has the server's text. */
class ApiCallError extends Error {
  override readonly name = 'ApiCallError';
  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: number,
    body: string,
  ) {
    super(`${method} ${path}: ${status} ${body.slice(0, 300)}`);
  }
}
const isApiCallError = (e: unknown): e is ApiCallError => e instanceof ApiCallError;

interface ApiAnswer {
  readonly status: number;
  readonly body: string;
}

function apiClient(facts: ClusterFacts): (method: string, path: string, body?: unknown) => Promise<ApiAnswer> {
  const url = new URL(facts.apiServerUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: 8, ca: readFileSync(facts.pki.caCert), cert: readFileSync(facts.pki.adminCert), key: readFileSync(facts.pki.adminKey) });
  return (method, path, body) =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = request({ host: url.hostname, port: url.port, path, method, agent, headers: payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, body: text });
        });
      });
      req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${path}: no answer within 30 s`)));
      req.on('error', reject);
      req.end(payload);
    });
}

// ---- the two nodes ------------------------------------------------------------------------------

type SideName = 'kubelet' | 'agent';

interface Side {
  readonly name: SideName;
  readonly node: string;
  readonly root: string;
  readonly ns: string;
  /** `volume_manager_total_volumes` of the node's process, as Prometheus text. */
  readonly scrape: () => Promise<string>;
}

/** GET with a 5 s timeout; resolves with the body of a 200, rejects otherwise. */
async function fetchText(url: string, headers: Record<string, string>): Promise<string> {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(5000) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${text.slice(0, 200)}`);
  return text;
}

/** The sum of `volume_manager_total_volumes{state="<state>"}` over every plugin. */
export function totalVolumes(metricsText: string, state: 'actual_state_of_world' | 'desired_state_of_world'): number {
  let sum = 0;
  for (const line of metricsText.split('\n')) {
    if (!line.startsWith('volume_manager_total_volumes{') || !line.includes(`state="${state}"`)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

// ---- the workload --------------------------------------------------------------------------------

/** A pause pod bound to the side's node, with no service-account volume: only `volumes` are set up. */
function benchPod(side: Side, name: string, volumes: readonly BenchVolume[], mountPath: (volume: string) => string): unknown {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: side.ns },
    spec: {
      nodeName: side.node,
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 0,
      containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10', volumeMounts: volumes.map((v) => ({ name: v.name, mountPath: mountPath(v.name) })) }],
      volumes,
    },
  };
}

type BenchVolume = { name: string; emptyDir: Record<string, never> } | { name: string; configMap: { name: string } };

function latencyPod(side: Side, i: number): unknown {
  return benchPod(side, `lat-${i}`, [
    { name: 'scratch', emptyDir: {} },
    { name: 'config', configMap: { name: 'bench-config' } },
  ], (volume) => `/${volume}`);
}

function restartPod(side: Side, i: number): unknown {
  return benchPod(side, `restart-${i}`, [
    { name: 'e0', emptyDir: {} },
    { name: 'e1', emptyDir: {} },
    { name: 'c0', configMap: { name: 'bench-config' } },
    { name: 'c1', configMap: { name: 'bench-config' } },
    { name: 'c2', configMap: { name: 'bench-config' } },
  ], (volume) => `/mnt/${volume}`);
}

/** The two files whose presence means a latency pod's volumes are set up (see the file comment). */
const mountedFiles = (side: Side, uid: string): readonly string[] => [
  join(side.root, 'pods', uid, 'plugins', 'kubernetes.io~empty-dir', 'scratch', 'ready'),
  join(side.root, 'pods', uid, 'volumes', 'kubernetes.io~configmap', 'config', CONFIG_KEY),
];

// ---- measurements --------------------------------------------------------------------------------

type Api = ReturnType<typeof apiClient>;

async function prepareNamespace(api: Api, ns: string): Promise<void> {
  const created = await api('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  if (created.status !== 201) throw new ApiCallError('POST', '/api/v1/namespaces', created.status, created.body);
  const cm = await api('POST', `/api/v1/namespaces/${ns}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'bench-config' }, data: { [CONFIG_KEY]: 'fast', level: '3' } });
  if (cm.status !== 201) throw new ApiCallError('POST', `/api/v1/namespaces/${ns}/configmaps`, cm.status, cm.body);
  // The ServiceAccount admission plugin refuses pods until the namespace's `default` account exists.
  await waitUntil(`serviceaccount ${ns}/default`, async () => (await api('GET', `/api/v1/namespaces/${ns}/serviceaccounts/default`)).status === 200, { deadlineMs: 60_000, intervalMs: 200 });
}

/** POSTs a pod; resolves with its uid and the times (performance.now) the request left and the 201 arrived. */
async function createPod(api: Api, ns: string, pod: unknown): Promise<{ uid: string; sentAt: number; createdAt: number }> {
  const sentAt = performance.now();
  const res = await api('POST', `/api/v1/namespaces/${ns}/pods`, pod);
  const createdAt = performance.now();
  if (res.status !== 201) throw new ApiCallError('POST', `/api/v1/namespaces/${ns}/pods`, res.status, res.body);
  return { uid: (JSON.parse(res.body) as { metadata: { uid: string } }).metadata.uid, sentAt, createdAt };
}

interface Pending {
  readonly side: Side;
  readonly files: readonly string[];
  readonly createdAt: number;
}

async function measureMountLatency(api: Api, sides: readonly Side[]): Promise<Record<string, unknown>> {
  const latencies = new Map<SideName, number[]>(sides.map((s) => [s.name, []]));
  const roundTrips: number[] = [];
  const pending = new Set<Pending>();
  const gaps: number[] = [];
  let polling = true;
  let lastPoll = performance.now();
  // The poller: every POLL_MS, each pending pod's files; a pod is mounted at the first poll that
  // finds both (so the figure is late by at most one gap, reported as pollGapMs).
  const poller = new Promise<void>((resolve) => {
    const poll = (): void => {
      const now = performance.now();
      gaps.push(now - lastPoll);
      lastPoll = now;
      for (const p of pending) {
        if (p.files.every((f) => existsSync(f))) {
          latencies.get(p.side.name)?.push(now - p.createdAt);
          pending.delete(p);
        }
      }
      if (polling) setTimeout(poll, POLL_MS);
      else resolve();
    };
    setTimeout(poll, POLL_MS);
  });

  const started = performance.now();
  for (let i = 0; i < LATENCY_PODS; i++) {
    const due = started + i * INTERVAL_MS;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait)); // pacing of the creations, not synchronisation
    const created = await Promise.all(sides.map(async (side) => ({ side, ...(await createPod(api, side.ns, latencyPod(side, i))) })));
    for (const c of created) {
      roundTrips.push(c.createdAt - c.sentAt);
      pending.add({ side: c.side, files: mountedFiles(c.side, c.uid), createdAt: c.createdAt });
    }
  }
  progress(`${LATENCY_PODS} pods created on each node in ${round((performance.now() - started) / 1000)} s; waiting for their volumes…`);
  try {
    await waitUntil('every latency pod mounted', () => Promise.resolve(pending.size === 0), { deadlineMs: 300_000, intervalMs: 100 });
  } finally {
    polling = false;
    await poller;
  }
  const bySide = Object.fromEntries(sides.map((s) => [s.name, distribution(latencies.get(s.name) ?? [])])) as Record<SideName, Distribution>;
  return {
    pods: LATENCY_PODS,
    volumesPerPod: 2,
    volumes: 'emptyDir (disk) + configMap, referenced by the container; automountServiceAccountToken: false',
    intervalMs: INTERVAL_MS,
    from: 'the 201 of POST /api/v1/namespaces/<ns>/pods received by this process',
    to: 'pods/<uid>/plugins/kubernetes.io~empty-dir/scratch/ready and pods/<uid>/volumes/kubernetes.io~configmap/config/mode both exist (polled)',
    pollIntervalMs: POLL_MS,
    pollGapMs: distribution(gaps.slice(1)),
    createRoundTripMs: distribution(roundTrips),
    kubeletMs: bySide.kubelet,
    agentMs: bySide.agent,
    ratioP50: round(bySide.kubelet.p50 / bySide.agent.p50, 2),
    ratioP99: round(bySide.kubelet.p99 / bySide.agent.p99, 2),
  };
}

/** Polls the node's metric every SCRAPE_MS until `probe` holds; resolves with the time it did and the first answer's time. */
async function scrapeUntil(side: Side, what: string, probe: (text: string) => boolean, deadlineMs: number): Promise<{ at: number; firstAnswerAt: number | null }> {
  const deadline = performance.now() + deadlineMs;
  let firstAnswerAt: number | null = null;
  let last: string;
  for (;;) {
    try {
      const text = await side.scrape();
      firstAnswerAt ??= performance.now();
      if (probe(text)) return { at: performance.now(), firstAnswerAt };
      last = `actual ${totalVolumes(text, 'actual_state_of_world')}, desired ${totalVolumes(text, 'desired_state_of_world')}`;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    if (performance.now() > deadline) throw new Error(`${side.node}: ${what} not reached within ${deadlineMs / 1000} s (last: ${last})`);
    await new Promise((r) => setTimeout(r, SCRAPE_MS)); // the scrape interval
  }
}

/**
 * CPU time (user + system, every thread) a process has used since it started, in ms; null when it
 * cannot be read. Read right after "all confirmed", it is the CPU the restart took: less noisy than
 * the wall time on a shared machine, where the other processes take the cores in turns.
 */
function processCpuMs(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    return round((parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8')).cpuTicks * 1000) / CLOCK_TICKS);
  } catch {
    return null;
  }
}

/** Busy and total jiffies of the whole machine (the aggregate `cpu` line of /proc/stat). */
function machineJiffies(): { busy: number; total: number } {
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  // idle and iowait are the 4th and 5th fields.
  return { busy: total - (fields[3] ?? 0) - (fields[4] ?? 0), total };
}

/**
 * Waits until the machine is quiet: at most QUIET_BUSY_CORES cores busy over two consecutive
 * QUIET_WINDOW_MS windows (everything on the machine counts: the cluster's processes, the node
 * that was just restarted, this bench). Each restart then starts on the same idle machine: without
 * it the second one (the agent's) started while the first node was still updating its pods
 * through the API server, on the same 2 cores. Gives up after QUIET_DEADLINE_MS and says so in
 * the figures (`quiet: false`).
 */
async function waitForQuietMachine(): Promise<{ quiet: boolean; waitedMs: number; busyCores: number }> {
  const started = performance.now();
  const cores = cpus().length;
  let calm = 0;
  let busyCores = Number.NaN;
  while (performance.now() - started < QUIET_DEADLINE_MS) {
    const a = machineJiffies();
    await new Promise((r) => setTimeout(r, QUIET_WINDOW_MS)); // the sampling window
    const b = machineJiffies();
    busyCores = round(((b.busy - a.busy) / Math.max(1, b.total - a.total)) * cores, 2);
    calm = busyCores <= QUIET_BUSY_CORES ? calm + 1 : 0;
    if (calm >= 2) return { quiet: true, waitedMs: round(performance.now() - started), busyCores };
  }
  return { quiet: false, waitedMs: round(performance.now() - started), busyCores };
}

async function measureRestart(api: Api, cluster: RunningCluster, sides: readonly Side[]): Promise<Record<string, unknown>> {
  const volumes = RESTART_PODS * RESTART_VOLUMES_PER_POD;
  const started = performance.now();
  for (let i = 0; i < RESTART_PODS; i++) {
    await Promise.all(sides.map((side) => createPod(api, side.ns, restartPod(side, i))));
  }
  progress(`${RESTART_PODS} pods × ${RESTART_VOLUMES_PER_POD} volumes created on each node in ${round((performance.now() - started) / 1000)} s`);
  const total = volumes;
  const allMounted = (text: string): boolean => totalVolumes(text, 'actual_state_of_world') >= total;
  const settle = await Promise.all(sides.map(async (side) => ({ side, at: (await scrapeUntil(side, `${total} volumes mounted`, allMounted, 600_000)).at })));
  const settled = Object.fromEntries(settle.map((s) => [s.side.name, round((s.at - started) / 1000, 2)]));
  progress(`every volume mounted (${total} per node): ${JSON.stringify(settled)} s after the first create`);

  const rounds: Record<string, unknown>[] = [];
  for (let round_ = 0; round_ < RESTARTS; round_++) {
    const result: Record<string, unknown> = {};
    for (const side of sides) await restartOnce(side, result);
    const msOf = (name: SideName): number => (result[name] as { startToAllConfirmedMs: number }).startToAllConfirmedMs;
    rounds.push({ ...result, ratio: round(msOf('kubelet') / msOf('agent'), 2) });
  }
  const medianMs = (name: SideName): number => round(percentile([...rounds.map((r) => (r[name] as { startToAllConfirmedMs: number }).startToAllConfirmedMs)].sort((a, b) => a - b), 50));
  const medianCpuMs = (name: SideName): number | null => {
    const values = rounds.map((r) => (r[name] as { cpuMsToAllConfirmed: number | null }).cpuMsToAllConfirmed);
    return values.every((v): v is number => v !== null) ? round(percentile([...values].sort((a, b) => a - b), 50)) : null;
  };
  return {
    pods: RESTART_PODS,
    volumesPerPod: RESTART_VOLUMES_PER_POD,
    volumesPerNode: total,
    volumesNote: 'the latency pods were deleted (and every volume of theirs torn down) first',
    confirmed: 'the new process\'s volume_manager_total_volumes{state="actual_state_of_world"} sums to volumesPerNode (mounted only; reconstructed-uncertain volumes are not counted)',
    scrapeIntervalMs: SCRAPE_MS,
    settledAfterCreateS: settled,
    kubelet: rounds[0]?.kubelet,
    agent: rounds[0]?.agent,
    restarts: RESTARTS,
    ...(RESTARTS > 1
      ? { rounds, medianStartToAllConfirmedMs: { kubelet: medianMs('kubelet'), agent: medianMs('agent') }, medianCpuMsToAllConfirmed: { kubelet: medianCpuMs('kubelet'), agent: medianCpuMs('agent') } }
      : {}),
    ratio: round(medianMs('kubelet') / medianMs('agent'), 2),
  };

  async function restartOnce(side: Side, result: Record<string, unknown>): Promise<void> {
    const quiet = await waitForQuietMachine();
    progress(`before the ${side.node} restart: ${JSON.stringify(quiet)}`);
    const stopStarted = performance.now();
    if (side.name === 'kubelet') await cluster.stopKubelet();
    else await cluster.agent.stop();
    const stopMs = performance.now() - stopStarted;
    const t0 = performance.now();
    const start = side.name === 'kubelet' ? cluster.startKubelet(120_000) : cluster.agent.start();
    const startDone = start.then(() => performance.now());
    const confirmed = await scrapeUntil(side, `${total} volumes confirmed`, allMounted, 600_000);
    const cpuMs = processCpuMs(side.name === 'kubelet' ? cluster.kubelet.pid : cluster.agent.process?.pid);
    const readyAt = await startDone;
    const figures = {
      stopMs: round(stopMs),
      startToFirstMetricsMs: confirmed.firstAnswerAt === null ? null : round(confirmed.firstAnswerAt - t0),
      startToAllConfirmedMs: round(confirmed.at - t0),
      startToReadyMs: round(readyAt - t0),
      cpuMsToAllConfirmed: cpuMs,
      ready: side.name === 'kubelet' ? 'Node Ready with a heartbeat after the start' : 'agent /healthz 200',
      quietBefore: quiet,
    };
    progress(`${side.node} restart: ${JSON.stringify(figures)}`);
    result[side.name] = figures;
  }
}

/** Deletes pods `names` by name on both nodes (no namespace controller runs here) and waits until both nodes' actual worlds are empty. */
async function deletePods(api: Api, sides: readonly Side[], names: readonly string[]): Promise<number> {
  const started = performance.now();
  for (const side of sides) {
    for (const name of names) {
      const res = await api('DELETE', `/api/v1/namespaces/${side.ns}/pods/${name}?gracePeriodSeconds=0`);
      if (res.status !== 200 && res.status !== 404) throw new ApiCallError('DELETE', `/api/v1/namespaces/${side.ns}/pods/${name}`, res.status, res.body);
    }
  }
  await Promise.all(sides.map((side) => scrapeUntil(side, 'no volume left', (t) => totalVolumes(t, 'actual_state_of_world') === 0, 300_000)));
  return round((performance.now() - started) / 1000, 2);
}

const podNames = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

async function main(): Promise<void> {
  const fromEnv = process.env.VOLUMESCOPE_CLUSTER_BENCH_DIR;
  const state = fromEnv === undefined ? stateDirFor(join(REPO_ROOT, '.volumescope', 'cluster-bench'), 'cluster-bench') : { dir: fromEnv, moved: false, note: undefined };
  if (state.note !== undefined) progress(state.note);
  const kubeletPort = await freePort();
  // The kubelet admits 110 pods by default (kubemark's --max-pods): the bench's pods of one phase must fit.
  const maxPods = Math.max(LATENCY_PODS, RESTART_PODS) + 10;
  // agent-0 as the container image runs it: the esbuild bundle (below the repository, so its npm
  // packages resolve from node_modules); --agent-from-source runs agent/main.ts through tsx.
  const agentBundle = flags['agent-from-source'] ? undefined : join(REPO_ROOT, '.volumescope', 'cluster-bench-agent', 'agent.mjs');
  if (agentBundle !== undefined) {
    const built = spawnSync(process.execPath, [join(REPO_ROOT, 'deploy', 'image', 'bundle-agent.mjs'), agentBundle], { cwd: REPO_ROOT, stdio: ['ignore', 2, 2] });
    if (built.status !== 0) throw new Error(`bundle-agent.mjs exited ${String(built.status)}`);
  }
  const loadBefore = load();
  const clusterStarted = performance.now();
  const cluster = await startCluster({ stateDir: state.dir, reset: true, waitForNodeReady: true, ...(agentBundle === undefined ? {} : { agentBundle }), ...(flags['agent-cpu-prof'] === undefined ? {} : { agentNodeArgs: ['--cpu-prof', `--cpu-prof-dir=${resolve(flags['agent-cpu-prof'])}`] }), kubeletArgs: [`--port=${kubeletPort}`, `--max-pods=${maxPods}`], log: (line) => {
      progress(`cluster: ${line}`);
    },
  });
  const stopOnSignal = (): void => {
    void cluster.stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', stopOnSignal);
  process.once('SIGTERM', stopOnSignal);
  try {
    const { facts } = cluster;
    progress(`cluster started in ${round((performance.now() - clusterStarted) / 1000)} s`);
    const agentToken = readFileSync(facts.agent.tokenFile, 'utf8').trim();
    const sides: readonly Side[] = [
      { name: 'kubelet', node: KUBELET_NODE, root: facts.kubelet.rootDir, ns: `bench-${KUBELET_NODE}`, scrape: () => fetchText(`http://127.0.0.1:${kubeletPort}/metrics`, {}) },
      { name: 'agent', node: NODE, root: facts.agent.rootDir, ns: `bench-${NODE}`, scrape: () => fetchText(`${facts.agent.url}/metrics`, { authorization: `Bearer ${agentToken}` }) },
    ];
    const api = apiClient(facts);
    for (const side of sides) await prepareNamespace(api, side.ns);
    // Both metrics endpoints answer before the first pod (the kubelet's server starts with it).
    await Promise.all(sides.map((side) => scrapeUntil(side, 'metrics', () => true, 60_000)));

    progress(`mount latency: ${LATENCY_PODS} pods per node, one pair every ${INTERVAL_MS} ms…`);
    const mountLatency = await measureMountLatency(api, sides);
    progress(`mount latency: ${JSON.stringify(mountLatency)}`);
    progress('deleting the latency pods (by name)…');
    const latencyTeardownS = await deletePods(api, sides, podNames('lat', LATENCY_PODS));
    const restart = flags['skip-restart'] ? null : await measureRestart(api, cluster, sides);
    progress('deleting the restart pods (by name)…');
    const restartTeardownS = flags['skip-restart'] ? null : await deletePods(api, sides, podNames('restart', RESTART_PODS));
    const latencyRatio = mountLatency.ratioP50 as number;
    const restartRatio = restart === null ? null : (restart.ratio as number);
    const report = {
      bench: 'cluster',
      agentRunAs: agentBundle === undefined ? 'agent/main.ts through tsx' : 'the esbuild bundle of deploy/image/bundle-agent.mjs with NODE_COMPILE_CACHE (as the image runs it, plus the cache)',
      machine: { cores: cpus().length, shared: 'yes: other jobs run on the same cores; see load' },
      versions: { kubelet: componentVersion(facts.versions, 'kubelet'), 'kube-apiserver': componentVersion(facts.versions, 'kube-apiserver'), 'kube-controller-manager': componentVersion(facts.versions, 'kube-controller-manager') },
      load: { before: loadBefore, after: load() },
      mountLatency,
      restart,
      teardownS: { latencyPods: latencyTeardownS, restartPods: restartTeardownS, until: 'both actual worlds empty (volume_manager_total_volumes)' },
      target: {
        ratio: TARGET_RATIO,
        mountLatencyP50Ratio: latencyRatio,
        restartRatio,
        met: latencyRatio >= TARGET_RATIO && restartRatio !== null && restartRatio >= TARGET_RATIO,
      },
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } finally {
    progress('stopping the cluster…');
    await cluster.stop();
  }
}

main().catch((err: unknown) => {
  progress(`failed: ${isApiCallError(err) ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
