/**
 * `npm run bench:agent`: the node agent PROCESS under load, as JSON on stdout (progress on stderr).
 *
 * One real agent (`node --import tsx agent/main.ts`) on a fresh root dir, driven through manifest
 * files and read through its HTTP API:
 *
 * - mountLatency: manifest written → volume mounted, for 100 pods with one emptyDir each, written
 *   one after the other. "Mounted" is the agent's `MountVolume.SetUp succeeded` log line (pino's
 *   millisecond timestamp, same machine clock as the write), so the figure is the agent's own
 *   latency, not the API's publication interval.
 * - idle: CPU % (utime + stime from /proc/<pid>/stat) over three 10 s windows (each and overall)
 *   and RSS with 1,000 mounted volumes, no API client connected; `referenceCpuPercent`: a bare
 *   Node process with a 1 s timer over the same windows (the machine's floor for the figure).
 * - snapshot (process): at 10,000 mounted volumes, GET /api/v1/snapshot round trips right after
 *   a change (the server rebuilds before answering when changes are pending) and when nothing
 *   changed (a published snapshot is encoded and sent), and the JSON size.
 * - delta: the `event: delta` messages an open event stream receives for one change at 10,000
 *   volumes (one more pod with one emptyDir being added and mounted), in bytes.
 * - restart (in this process, same root dir and manifests, after SIGTERM): reconstruction of the
 *   10,000 volumes until all are confirmed mounted, then the snapshot build itself without HTTP:
 *   the first (cold) build when the server is created, `JSON.stringify`, and one incremental
 *   build after a change (`server.snapshot()` publishes pending changes first).
 *
 * - csi (issue "Attachable volumes through CSI", requirement 9): a second agent with the csi-loop
 *   test driver (a separate process, registered with --csi-driver). For each driver mode (the
 *   privileged one only as root in a private mount namespace; otherwise reported as not run),
 *   `CSI_VOLUMES` attachable volumes (CSIDriver attachRequired, PV + bound PVC + pod) are added one
 *   after the other: time to mounted = manifest written → the pod's `MountVolume.SetUp succeeded`
 *   log line. Driver time = the call log's `durationMs` of ControllerPublishVolume + NodeStageVolume
 *   + NodePublishVolume for that volume; agent time = the rest (reconciler periods, manifest
 *   watch, gRPC, bookkeeping). Afterwards every pod is removed and the run fails if a loop device
 *   or a mount is left.
 *
 * - stats (issue 16, requirement 6): the extra CPU of the volume stats collection at 1,000
 *   mounted volumes. statfs volumes: two agent processes with `IDLE_VOLUMES` emptyDir volumes,
 *   one with `--volume-stats-agg-period=0` (no collection) and one with a period of
 *   `STATS_FAST_PERIOD_MS`; the CPU difference, scaled from that period to the default 1m, is the
 *   extra CPU of the default collection (statfs numbers, snapshot, metrics). CSI volumes: the
 *   agent-side CPU of one NodeGetVolumeStats call (gRPC client, call stats, metric) measured in
 *   this process over `STATS_CSI_CALLS` calls (after `STATS_CSI_WARMUP_CALLS`, one pass's worth)
 *   against csi-loop on one published volume, times 1,000 volumes asked at the kubelet's cadence
 *   (each pass 1–2 periods after the previous one: 1.5 × 1m on average). Target, with the health
 *   checks: ≤ 0.5 % of a core.
 *
 * - healthStats (`--only health-stats`, issue 16, requirement 6): the health checks and the
 *   volume stats together, as configured by default (the stats reuse the health checks' statfs
 *   numbers), at 1,000 emptyDir volumes. Two agent processes: both off
 *   (`--mount-health-period=0 --volume-stats-agg-period=0`), and both on at
 *   `HEALTH_STATS_SPEEDUP` times their default rates (health 1 s, stats 6 s), so the window of
 *   `HEALTH_STATS_WINDOW_MS` holds 30 health batches and 3–5 stats passes; CPU % of one core of
 *   the agent and its probe child (utime + stime from /proc, live and reaped children);
 *   `healthStatsCpuPercent` is the difference divided by the speedup, the cost at the default
 *   rates (1,000 paths every 40 s, stats every 1–2 min). Then, on the agent with them on, a
 *   bindfs mount over one pod's volume directory: GET /healthz, /api/v1/summary and
 *   /api/v1/snapshot timed `HUNG_MIN_REQUESTS` times each with it healthy (baseline), then with
 *   its daemon stopped (SIGSTOP) until the mount is reported hung, its stats entry carries the
 *   health check's error, and at least `HUNG_MIN_REQUESTS` times each; p50/p99/max. Targets:
 *   ≤ 0.5 % of a core, p99 ≤ 50 ms. `healthAndCsiStatsCpuPercent` adds the CSI stats cost of the
 *   stats section (`csiStatsCpuPercent`): 1,000 CSI volumes, health-checked and asked
 *   NodeGetVolumeStats. As root, run it in a private mount namespace (see `--only
 *   health`).
 *
 * `--only memory` (issue "Performance", requirement 3): idle CPU and RSS at 1,000 volumes and RSS,
 * V8 heap and external memory at 10,000 (`rssAt10kMB`) of one agent process, nothing else;
 * `--heap-snapshot <file>` also writes the agent's heap snapshot at 10,000 volumes.
 *
 * `--only csi` runs only the csi section; `--only stats` only the stats section;
 * `--only health-stats` only the healthStats section; `--only process` only the agent-process
 * figures (mountLatency, idle CPU and RSS at 1,000 volumes, snapshot and delta at 10,000, RSS at
 * 10,000).
 *
 * `--only restart` runs only a restart at scale, in this process: an agent brings up
 * `SNAPSHOT_VOLUMES` volumes of mixed plugins (emptyDir, configMap, secret; see mixedPod; and
 * `RESTART_CSI_VOLUMES` attachable CSI volumes of the csi-loop driver, unprivileged, which keeps
 * running across the restart as a node's driver does), is stopped, and a second agent over the
 * same root dir and manifests is timed until the reconciler's states are synced and every
 * reconstructed volume is confirmed mounted (each through its plugin's SetUp, as the kubelet
 * confirms them: NodeStageVolume and NodePublishVolume for each CSI volume), with the time to
 * each milestone and the driver's calls (count, time in the driver, first arrival and last
 * answer after the start). `--volumes N` changes the scale; `--cpu-profile <file>` writes a CPU
 * profile of the restart alone. In a private mount namespace (see `--only health`) the tmpfs
 * volumes are real mounts.
 *
 * `--only health` (issue "Node diagnostics", requirement 6): the cost of the mount health checks
 * and the API while a mount hangs. Two agent processes one after the other, each with
 * `IDLE_VOLUMES` volumes, checks on (the defaults: a batch of 250 paths every 10 s) and off
 * (`--mount-health-period=0`); CPU % of one core (utime + stime of the agent, its reaped children
 * and its live probe child, from /proc) over `HEALTH_WINDOW_MS` each, and the difference. Then, on
 * the agent with checks on, a real FUSE mount (bindfs) over one pod's volume directory has its
 * daemon stopped (SIGSTOP): GET /api/v1/snapshot and GET /api/v1/summary are timed one after the
 * other until the snapshot reports the mount `hung` and for `HUNG_EXTRA_MS` more, so the window
 * covers a check waiting on the hung mount; p50/p99/max of each. Target: ≤ 0.5 % of a core extra,
 * and answers within 50 ms while the mount hangs. As root, run it in a private mount namespace
 * (`unshare --mount --propagation private env VOLUMESCOPE_MOUNT_NS=1 npm run bench:agent -- --only health`)
 * so the FUSE mount never shows on the host; it is unmounted at the end either way.
 *
 * Pods carry no uid, so they get the 36-character uids the manifest source derives, as real
 * manifests do; names are short (`big-123`, volumes `v0`…`v4`).
 *
 * Targets (issue "Node agent"): p50 ≤ 50 ms, p99 ≤ 150 ms; snapshot ≤ 150 ms and ≤ 5 MB;
 * delta ≤ 2 KB; idle CPU ≤ 1 %; RSS ≤ 150 MB; at 10,000 volumes (issue "Performance",
 * requirement 3) RSS ≤ 250 MB.
 *
 * Mounting: emptyDir (disk medium) needs no mount. The agent may probe for real mounts only in a
 * private mount namespace (VOLUMESCOPE_MOUNT_NS=1); elsewhere it runs with --allow-mount=false.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector';
import { loadavg } from 'node:os';
import { dirname, join, resolve as resolvePath } from 'node:path';
import { parseAgentFlags } from '../agent/node/flags.ts';
import { createAgentLogger } from '../agent/node/logger.ts';
import { NodeAgent } from '../agent/node/node-agent.ts';
import { AgentProcess, standInMounter, type LogLine } from '../agent/node/testing/agent-process.ts';
import { waitFor } from '../lib/clock/testing/wait-for.ts';
import { createAgentMetrics, createAgentServer, staticTokenAuthenticator } from '../agent/server/index.ts';
import { realClock } from '../lib/clock/clock.ts';
import { cleanUpTempDir, makeTempDir, realMountsAllowed } from '../lib/mount-utils/testing/mount-test-env.ts';
import { deriveManifestPodUID } from '../lib/sources/manifest/index.ts';
import { CsiLoopProcess, driverPrivileged, type DriverCall } from '../lib/volume/csi/testing/csi-loop-process.ts';
import { CsiCallStats, CsiClient } from '../lib/volume/csi/index.ts';
import { uniquePodName } from '../lib/volume/types.ts';
import { csiClaimObjects, csiDriverObject, csiLoopDriverName, csiPodObject, csiUniqueVolumeName } from '../agent/node/testing/csi-manifests.ts';
import { clockTicks, parseProcStat, type ProcStat } from './proc-stat.ts';

const LATENCY_PODS = 100;
const VOLUMES_PER_POD = 5;
const IDLE_VOLUMES = 1_000;
const SNAPSHOT_VOLUMES = 10_000;
const PODS_PER_FILE = 100;
const IDLE_SAMPLE_MS = 10_000;
const IDLE_WINDOWS = 3;
const SETTLE_MS = 5_000;
/** How long the idle reference process runs before its CPU is sampled (its start stays out). */
const SETTLE_REFERENCE_MS = 2_000;
const NODE_NAME = 'bench-node';
const NAMESPACE = 'bench';
const CSI_VOLUMES = 20;
/** The CPU window of each health run (a whole cycle: 1,000 paths in batches of 250 every 10 s). */
const HEALTH_WINDOW_MS = 40_000;
/** How long the API is timed after the mount was reported hung. */
const HUNG_EXTRA_MS = 6_000;
/** The stats period of the measured agent in the stats section (30 passes a minute instead of 1). */
const STATS_FAST_PERIOD_MS = 2_000;
const STATS_SAMPLE_MS = 20_000;
const STATS_CSI_CALLS = 2_000;
/** Calls before the measured ones: one pass at `IDLE_VOLUMES` CSI volumes (the JIT is warm in a running agent). */
const STATS_CSI_WARMUP_CALLS = 1_000;
/** The kubelet's `--volume-stats-agg-period` default. */
const STATS_DEFAULT_PERIOD_MS = 60_000;
/** The mean time between two stats passes at the default period (period × (1 + random), the kubelet's jitter). */
const STATS_DEFAULT_MEAN_INTERVAL_MS = 1.5 * STATS_DEFAULT_PERIOD_MS;
/** The driver calls of one volume's way to mounted (attach, stage, publish). */
const CSI_SETUP_CALLS = ['ControllerPublishVolume', 'NodeStageVolume', 'NodePublishVolume'];

function progress(msg: string): void {
  process.stderr.write(`[bench:agent] ${msg}\n`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function percentile(sorted: readonly number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] ?? Number.NaN;
}

function round(n: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/** The uid the manifest source derives for a pod of the bench namespace. */
function uidOf(name: string): string {
  return deriveManifestPodUID(NODE_NAME, NAMESPACE, name);
}

function pod(name: string, volumes: number): Record<string, unknown> {
  const names = Array.from({ length: volumes }, (_, i) => `v${i}`);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NAMESPACE },
    spec: {
      containers: [{ name: 'app', image: 'busybox', volumeMounts: names.map((n) => ({ name: n, mountPath: `/m/${n}` })) }],
      volumes: names.map((n) => ({ name: n, emptyDir: {} })),
    },
  };
}

/** Writes the objects as one JSON file (a `List` when there are several), atomically. */
async function writeManifest(dir: string, file: string, docs: readonly Record<string, unknown>[]): Promise<void> {
  const tmp = join(dir, `.${file}.tmp`);
  await writeFile(tmp, JSON.stringify(docs.length === 1 ? docs[0] : { apiVersion: 'v1', kind: 'List', items: docs }));
  await rename(tmp, join(dir, file));
}

/** Mounted (pod, volume) pairs in a snapshot. */
async function mountedCount(agent: AgentProcess): Promise<number> {
  const s = await agent.snapshot();
  const problem = s.sourceErrors[0];
  if (problem !== undefined) throw new Error(`manifest error: ${problem.message}`);
  let n = 0;
  for (const v of s.actual.volumes) for (const p of v.pods) if (p.mountState === 'mounted') n++;
  return n;
}

/** Writes `pods` pods of `VOLUMES_PER_POD` volumes in files of 100 and waits until `total` volumes are mounted. */
async function scaleTo(agent: AgentProcess, manifestDir: string, prefix: string, pods: number, total: number): Promise<number> {
  const started = performance.now();
  for (let f = 0; f * PODS_PER_FILE < pods; f++) {
    const docs = [];
    for (let i = f * PODS_PER_FILE; i < Math.min(pods, (f + 1) * PODS_PER_FILE); i++) docs.push(pod(`${prefix}-${i}`, VOLUMES_PER_POD));
    await writeManifest(manifestDir, `${prefix}-${f}.json`, docs);
  }
  let last = 0;
  await waitFor(async () => {
      last = await mountedCount(agent);
      return last >= total;
    }, { what: `${total} volumes mounted`, timeoutMs: 300_000, describe: () => `${last} mounted` });
  return performance.now() - started;
}

/** CPU seconds (utime + stime) and RSS bytes of a process. */
async function processUsage(pid: number, ticksPerSecond: number): Promise<{ cpuSeconds: number; rssBytes: number }> {
  const { cpuTicks } = parseProcStat(await readFile(`/proc/${pid}/stat`, 'utf8'));
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const rssKb = Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1] ?? Number.NaN);
  return { cpuSeconds: cpuTicks / ticksPerSecond, rssBytes: rssKb * 1024 };
}

async function measureLatency(agent: AgentProcess, manifestDir: string): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < LATENCY_PODS; i++) {
    const uid = uidOf(`lat-${i}`);
    const mounted = setUpLogged(agent, uid);
    const writtenAt = Date.now();
    await writeManifest(manifestDir, `lat-${i}.json`, [pod(`lat-${i}`, 1)]);
    const line = await mounted;
    latencies.push(Number(line['time']) - writtenAt);
  }
  return latencies;
}

/** Reads SSE events from an open stream until `done` says stop; returns each event's text. */
async function readEvents(body: ReadableStream<Uint8Array>, done: (events: string[]) => boolean, deadlineMs: number): Promise<string[]> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const events: string[] = [];
  let buffer = '';
  const deadline = performance.now() + deadlineMs;
  try {
    while (!done(events)) {
      if (performance.now() > deadline) throw new Error(`event stream: condition not reached within ${deadlineMs} ms`);
      const { value, done: ended } = await reader.read();
      if (ended) break;
      buffer += decoder.decode(value, { stream: true });
      let at;
      while ((at = buffer.indexOf('\n\n')) >= 0) {
        const event = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        if (!event.startsWith(':')) events.push(event);
      }
    }
  } finally {
    await reader.cancel();
  }
  return events;
}

function eventData(event: string): string {
  return event
    .split('\n')
    .filter((l) => l.startsWith('data:'))
    .map((l) => l.slice(5).trimStart())
    .join('\n');
}

/** Resolves once a `MountVolume.SetUp succeeded` line for the pod's uid was logged. */
function setUpLogged(agent: AgentProcess, uid: string): Promise<LogLine> {
  return new Promise((resolve) => {
    const found = agent.logs.find((l) => isSetUpOf(l, uid));
    if (found !== undefined) {
      resolve(found);
      return;
    }
    const off = agent.onLog((line) => {
      if (!isSetUpOf(line, uid)) return;
      off();
      resolve(line);
    });
  });
}

function isSetUpOf(line: LogLine, uid: string): boolean {
  return line.msg.startsWith('MountVolume.SetUp succeeded') && line.msg.includes(`(UID: "${uid}")`);
}

/** One change observed through the event stream: the delta events until the new pod's volume is mounted. */
async function deltaForOneChange(agent: AgentProcess, manifestDir: string): Promise<{ snapshotEventBytes: number; deltaBytes: number[] }> {
  const stream = await fetch(`${agent.baseUrl}/api/v1/events`, { headers: { authorization: `Bearer ${agent.token}`, accept: 'text/event-stream' } });
  if (stream.body === null) throw new Error('the event stream has no body');
  const uid = uidOf('delta');
  let written = false;
  const events = await readEvents(
    stream.body,
    (evs) => {
      if (evs.length >= 1 && !written) {
        written = true;
        void writeManifest(manifestDir, 'delta.json', [pod('delta', 1)]);
      }
      const last = evs.at(-1);
      return last !== undefined && evs.length > 1 && last.includes(`"podUid":"${uid}"`) && last.includes('"mountState":"mounted"');
    },
    30_000,
  );
  return { snapshotEventBytes: Buffer.byteLength(eventData(events[0] ?? '')), deltaBytes: events.slice(1).map((e) => Buffer.byteLength(eventData(e))) };
}

async function getSnapshot(agent: AgentProcess): Promise<{ ms: number; bytes: number; gzipBytes: number; gzipMs: number }> {
  const t0 = performance.now();
  const res = await fetch(`${agent.baseUrl}/api/v1/snapshot`, { headers: { authorization: `Bearer ${agent.token}`, 'accept-encoding': 'identity' } });
  const text = await res.text();
  const ms = performance.now() - t0;
  // As a browser or the dashboard asks for it: the bytes on the wire are the compressed ones.
  const t1 = performance.now();
  const zipped = await fetch(`${agent.baseUrl}/api/v1/snapshot`, { headers: { authorization: `Bearer ${agent.token}`, 'accept-encoding': 'gzip' } });
  const wireBytes = Number(zipped.headers.get('content-length') ?? Number.NaN);
  await zipped.text();
  return { ms, bytes: Buffer.byteLength(text), gzipBytes: wireBytes, gzipMs: performance.now() - t1 };
}

function summary(values: number[]): { p50: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: round(percentile(sorted, 50)), max: round(sorted.at(-1) ?? Number.NaN) };
}

/**
 * Waits for the first mount health batch (the snapshot lists checked paths), which runs one
 * period (10 s) after the agent's start: it starts the fs-probe child process, a one-off of
 * about 60 ms of CPU (a Node process starting) that otherwise fell into the idle windows when
 * the scale-up took less than the period, and made one window of three read 1.6–1.8 %.
 */
async function afterFirstHealthBatch(agent: AgentProcess): Promise<void> {
  await agent.waitForSnapshot('the first mount health batch', (s) => s.mountHealth.length > 0, 60_000);
}

/**
 * The machine's floor for `idle.cpuPercent`: a bare Node process whose only work is a timer a
 * second, sampled over the same windows. On a shared VM each wake-up of a process is charged far
 * more CPU than its code takes (0.2–0.9 ms measured on one day, up to 17 ms on another), so the
 * agent's figure is only comparable across runs next to this one.
 */
function startReferenceProcess(): { pid: number; stop: () => void } {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore', env: { ...process.env, NODE_OPTIONS: '' } });
  if (child.pid === undefined) throw new Error('the idle reference process did not start');
  return { pid: child.pid, stop: () => child.kill('SIGKILL') };
}

/** Idle CPU over `IDLE_WINDOWS` windows of `IDLE_SAMPLE_MS` and the RSS at the end, of an agent at `IDLE_VOLUMES` volumes. */
async function sampleIdle(agent: AgentProcess, ticksPerSecond: number) {
  progress(`sampling idle CPU and RSS over ${IDLE_WINDOWS} windows of ${IDLE_SAMPLE_MS / 1000} s`);
  const reference = startReferenceProcess();
  try {
    // The reference's own start (about 40 ms of CPU) stays out of the windows.
    await sleep(SETTLE_REFERENCE_MS);
    const referenceFirst = await processUsage(reference.pid, ticksPerSecond);
    const figures = await sampleIdleWindows(agent, ticksPerSecond);
    const referenceLast = await processUsage(reference.pid, ticksPerSecond);
    return { ...figures, referenceCpuPercent: round(((referenceLast.cpuSeconds - referenceFirst.cpuSeconds) / figures.sampleSeconds) * 100, 2) };
  } finally {
    reference.stop();
  }
}

async function sampleIdleWindows(agent: AgentProcess, ticksPerSecond: number) {
  const windows: number[] = [];
  const first = await processUsage(agent.pid, ticksPerSecond);
  const sampleStart = performance.now();
  let before = first;
  let after = first;
  for (let w = 0; w < IDLE_WINDOWS; w++) {
    const t0 = performance.now();
    await sleep(IDLE_SAMPLE_MS);
    after = await processUsage(agent.pid, ticksPerSecond);
    windows.push(round(((after.cpuSeconds - before.cpuSeconds) / ((performance.now() - t0) / 1000)) * 100, 2));
    before = after;
  }
  const idleSeconds = (performance.now() - sampleStart) / 1000;
  return {
    volumes: IDLE_VOLUMES,
    sampleSeconds: round(idleSeconds, 2),
    cpuPercent: round(((after.cpuSeconds - first.cpuSeconds) / idleSeconds) * 100, 2),
    cpuPercentPerWindow: windows,
    rssMB: round(after.rssBytes / 1024 / 1024),
    targetCpuPercent: 1,
    targetRssMB: 150,
  };
}

/** The agent's V8 heap and external memory, from its `/metrics` (prom-client's `nodejs_*` gauges), in MB. */
async function heapFigures(agent: AgentProcess): Promise<Record<string, number>> {
  const res = await fetch(`${agent.baseUrl}/metrics`, { headers: { authorization: `Bearer ${agent.token}` } });
  const text = await res.text();
  const gauge = (name: string): number => round(Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN) / 1024 / 1024);
  return {
    heapUsedMB: gauge('nodejs_heap_size_used_bytes'),
    heapTotalMB: gauge('nodejs_heap_size_total_bytes'),
    externalMB: gauge('nodejs_external_memory_bytes'),
  };
}

/**
 * `--only memory` (issue "Performance", requirement 3): one agent process, idle CPU and RSS at
 * `IDLE_VOLUMES` volumes, then RSS, V8 heap and external memory at `SNAPSHOT_VOLUMES` (the
 * process section's `idle` and `rssAt10kMB`, without the latency, snapshot and delta figures),
 * `SETTLE_MS` after the scale-up, and the RSS again after as long idle as the 1,000-volume
 * figure (`at10k.rssSettledMB`: the agent's heap trim after a burst has run by then).
 * `--heap-snapshot <file>` also writes a heap snapshot of the agent at `SNAPSHOT_VOLUMES`
 * (`--heapsnapshot-signal`; the snapshot itself grows the RSS, so it is taken after the figures).
 */
async function measureMemory(rootDir: string, manifestDir: string, ticksPerSecond: number, heapSnapshotFile: string | null) {
  const heapDir = join(dirname(rootDir), 'heap');
  await mkdir(heapDir, { recursive: true });
  const nodeFlags = heapSnapshotFile === null ? [] : ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${heapDir}`];
  const agent = await AgentProcess.start({ rootDir, manifestDir, nodeName: NODE_NAME, nodeFlags });
  try {
    await agent.waitForSnapshot('states synced', (s) => s.statesSynced);
    progress(`scaling to ${IDLE_VOLUMES} volumes`);
    await scaleTo(agent, manifestDir, 'idle', IDLE_VOLUMES / VOLUMES_PER_POD, IDLE_VOLUMES);
    await afterFirstHealthBatch(agent);
    await sleep(SETTLE_MS);
    const idle = await sampleIdle(agent, ticksPerSecond);
    const heapAt1k = await heapFigures(agent);
    progress(`scaling to ${SNAPSHOT_VOLUMES} volumes`);
    await scaleTo(agent, manifestDir, 'big', (SNAPSHOT_VOLUMES - IDLE_VOLUMES) / VOLUMES_PER_POD, SNAPSHOT_VOLUMES);
    await sleep(SETTLE_MS);
    const rssAt10k = (await processUsage(agent.pid, ticksPerSecond)).rssBytes;
    const heapAt10k = await heapFigures(agent);
    // The same RSS after as long idle as the 1,000-volume figure is sampled after.
    await sleep(IDLE_WINDOWS * IDLE_SAMPLE_MS);
    const rssAt10kSettled = (await processUsage(agent.pid, ticksPerSecond)).rssBytes;
    if (heapSnapshotFile !== null) {
      process.kill(agent.pid, 'SIGUSR2');
      const written = await waitFor(async () => (await readdir(heapDir)).find((f) => f.endsWith('.heapsnapshot')), { what: 'the heap snapshot', timeoutMs: 120_000 });
      // The file is complete once its size stops changing.
      let size = -1;
      await waitFor(async () => {
        const now = (await stat(join(heapDir, written))).size;
        const done = now === size && now > 0;
        size = now;
        return done;
      }, { what: 'the heap snapshot written', timeoutMs: 120_000, pollMs: 1_000 });
      await rename(join(heapDir, written), heapSnapshotFile);
      progress(`heap snapshot written to ${heapSnapshotFile}`);
    }
    const exit = await agent.stop('SIGTERM');
    if (exit.code !== 0) throw new Error(`the agent exited with ${JSON.stringify(exit)}`);
    return {
      idle: { ...idle, ...heapAt1k },
      rssAt10kMB: round(rssAt10k / 1024 / 1024),
      at10k: { volumes: SNAPSHOT_VOLUMES, ...heapAt10k, rssSettledMB: round(rssAt10kSettled / 1024 / 1024), settledAfterSeconds: (IDLE_WINDOWS * IDLE_SAMPLE_MS) / 1000, targetRssMB: 250 },
    };
  } finally {
    await agent.stop('SIGKILL');
  }
}

/** The process part: latency, idle at 1k, snapshot and delta at 10k. */
async function measureProcess(rootDir: string, manifestDir: string, ticksPerSecond: number) {
  progress(`starting the agent (mounter: ${realMountsAllowed ? 'linux if the probe succeeds' : 'unprivileged'})`);
  const agent = await AgentProcess.start({ rootDir, manifestDir, nodeName: NODE_NAME });
  try {
    await agent.waitForSnapshot('states synced', (s) => s.statesSynced);
    const mounter = (await agent.snapshot()).mounter;

    progress(`mount latency over ${LATENCY_PODS} pods`);
    const latencies = (await measureLatency(agent, manifestDir)).sort((a, b) => a - b);

    progress(`scaling to ${IDLE_VOLUMES} volumes`);
    const toIdleMs = await scaleTo(agent, manifestDir, 'idle', (IDLE_VOLUMES - LATENCY_PODS) / VOLUMES_PER_POD, IDLE_VOLUMES);
    await afterFirstHealthBatch(agent);
    await sleep(SETTLE_MS);
    const idle = await sampleIdle(agent, ticksPerSecond);

    progress(`scaling to ${SNAPSHOT_VOLUMES} volumes`);
    const toBigMs = await scaleTo(agent, manifestDir, 'big', (SNAPSHOT_VOLUMES - IDLE_VOLUMES) / VOLUMES_PER_POD, SNAPSHOT_VOLUMES);
    await sleep(SETTLE_MS);
    const rssAt10k = (await processUsage(agent.pid, ticksPerSecond)).rssBytes;

    progress('snapshot requests at 10k volumes');
    const unchanged: number[] = [];
    let snapshotBytes = 0;
    let snapshotGzipBytes = 0;
    const gzipped: number[] = [];
    for (let i = 0; i < 10; i++) {
      const r = await getSnapshot(agent);
      unchanged.push(r.ms);
      gzipped.push(r.gzipMs);
      snapshotBytes = r.bytes;
      snapshotGzipBytes = r.gzipBytes;
    }
    const afterChange: number[] = [];
    for (let i = 0; i < 5; i++) {
      const mounted = setUpLogged(agent, uidOf(`rebuild-${i}`));
      await writeManifest(manifestDir, `rebuild-${i}.json`, [pod(`rebuild-${i}`, 1)]);
      await mounted;
      afterChange.push((await getSnapshot(agent)).ms);
    }

    progress('one change at 10k volumes through the event stream');
    const delta = await deltaForOneChange(agent, manifestDir);

    const exit = await agent.stop('SIGTERM');
    if (exit.code !== 0) throw new Error(`the agent exited with ${JSON.stringify(exit)}`);
    return {
      mounter,
      mountLatencyMs: { pods: LATENCY_PODS, p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: latencies.at(-1), targetP50: 50, targetP99: 150 },
      idle,
      snapshotHttp: {
        volumes: SNAPSHOT_VOLUMES,
        getAfterChangeMs: summary(afterChange),
        getUnchangedMs: summary(unchanged),
        jsonBytes: snapshotBytes,
        jsonMB: round(snapshotBytes / 1024 / 1024, 2),
        getGzipMs: summary(gzipped),
        gzipWireBytes: snapshotGzipBytes,
        gzipWireMB: round(snapshotGzipBytes / 1024 / 1024, 2),
        targetMs: 150,
        targetMB: 5,
      },
      delta: {
        volumes: SNAPSHOT_VOLUMES + LATENCY_PODS,
        eventsForOneChange: delta.deltaBytes.length,
        bytes: delta.deltaBytes,
        maxBytes: Math.max(...delta.deltaBytes),
        targetBytes: 2048,
      },
      rssAt10kMB: round(rssAt10k / 1024 / 1024),
      setupSeconds: { to1k: round(toIdleMs / 1000, 2), to10k: round(toBigMs / 1000, 2) },
    };
  } finally {
    await agent.stop('SIGKILL');
  }
}

/** The in-process part: restart over the same root dir, then snapshot builds without HTTP. */
async function measureRestartAndBuild(rootDir: string, manifestDir: string) {
  progress('restarting in this process over the same root dir');
  const parsed = parseAgentFlags(['--source=manifest', '--node-name', NODE_NAME, '--root-dir', rootDir, '--manifest-dir', manifestDir, `--allow-mount=${realMountsAllowed ? 'true' : 'false'}`]);
  if (parsed.help) throw new Error('unexpected --help');
  const log = createAgentLogger({ level: 'warn', nodeName: NODE_NAME, destination: { write: () => undefined } });
  const started = performance.now();
  const agent = await NodeAgent.start({ config: parsed.config, log, clock: realClock, version: 'bench' });
  const vm = agent.volumeManager;
  try {
    const total = (await waitFor(() => {
        const report = vm.getReconstructionReport();
        const open = report.entries.filter((e) => e.outcome === 'reconstructed').length;
        return report.state === 'done' && report.entries.length > 0 && open === 0 ? report.entries.length : undefined;
      }, { what: 'every reconstructed volume is confirmed mounted', timeoutMs: 300_000 }));
    const reconstructMs = performance.now() - started;

    const metrics = createAgentMetrics();
    const colds: number[] = [];
    let server: ReturnType<typeof createAgentServer> | null = null;
    for (let i = 0; i < 3; i++) {
      await server?.close();
      const t0 = performance.now();
      server = createAgentServer({ runtime: agent, authenticator: staticTokenAuthenticator('bench-token'), metrics });
      colds.push(performance.now() - t0);
    }
    if (server === null) throw new Error('no server');
    const stringify: number[] = [];
    let bytes = 0;
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      bytes = Buffer.byteLength(JSON.stringify(server.snapshot()));
      stringify.push(performance.now() - t0);
    }
    const incremental: number[] = [];
    for (let i = 0; i < 5; i++) {
      const name = `inproc-${i}`;
      await writeManifest(manifestDir, `${name}.json`, [pod(name, 1)]);
      await waitFor(() => vm.getMountedVolumesForPod(uniquePodName(uidOf(name))).size === 1, { what: 'the new pod is mounted' });
      const t0 = performance.now();
      server.snapshot();
      incremental.push(performance.now() - t0);
    }
    await server.close();
    return {
      restart: { volumesOnDisk: total, startToAllConfirmedMountedMs: Math.round(reconstructMs) },
      snapshotBuild: {
        volumes: vm.actualState().countMountedVolumes(),
        coldBuildMs: summary(colds),
        incrementalBuildMs: summary(incremental),
        jsonStringifyMs: summary(stringify),
        jsonBytes: bytes,
        targetMs: 150,
      },
    };
  } finally {
    await agent.stop(10_000);
  }
}

type CsiMode = 'privileged' | 'unprivileged';

/**
 * One driver mode: a fresh agent + driver, `CSI_VOLUMES` volumes mounted one after the other, then
 * all pods removed; fails if anything is left (loop devices, mounts, the volumes in the agent).
 */
async function measureCsiMode(mode: CsiMode) {
  const base = await makeTempDir(`volumescope-bench-csi-${mode}-`);
  const rootDir = join(base, 'root');
  const manifestDir = join(base, 'manifests');
  await mkdir(manifestDir, { recursive: true });
  const driver = await CsiLoopProcess.start({ dir: join(base, 'driver'), nodeId: NODE_NAME, mode });
  let agent: AgentProcess | null = null;
  try {
    agent = await AgentProcess.start({ rootDir, manifestDir, nodeName: NODE_NAME, extraArgs: ['--csi-driver', `${csiLoopDriverName}=${driver.socketPath}`] });
    await agent.waitForSnapshot('the CSI driver is registered', (s) => s.statesSynced && s.drivers.some((d) => d.name === csiLoopDriverName && d.registered), 30_000);
    await writeManifest(manifestDir, 'csidriver.json', [csiDriverObject()]);
    const totals: number[] = [];
    const driverMs: number[] = [];
    for (let i = 0; i < CSI_VOLUMES; i++) {
      const handle = `vol-${i}`;
      const uid = `csi-bench-${i}-uid`;
      // The storage objects first (no pod uses them yet): the measured change is the pod.
      await writeManifest(manifestDir, `storage-${i}.json`, csiClaimObjects({ handle, namespace: NAMESPACE }));
      const mounted = setUpLogged(agent, uid);
      const writtenAt = Date.now();
      await writeManifest(manifestDir, `pod-${i}.json`, [csiPodObject(`csi-${i}`, handle, { uid, namespace: NAMESPACE })]);
      const line = await mounted;
      totals.push(Number(line['time']) - writtenAt);
      const calls = await driver.calls();
      driverMs.push(calls.filter((c) => c.volumeId === handle && CSI_SETUP_CALLS.includes(c.method)).reduce((sum, c) => sum + c.durationMs, 0));
    }
    const agentMs = totals.map((t, i) => t - (driverMs[i] ?? 0));
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    const mounter = (await agent.snapshot()).mounter;

    progress(`csi (${mode}): removing the pods`);
    for (let i = 0; i < CSI_VOLUMES; i++) await rm(join(manifestDir, `pod-${i}.json`));
    await agent.waitForSnapshot('every CSI volume is unpublished, unstaged and detached', (s) => !s.actual.volumes.some((v) => v.uniqueVolumeName.startsWith(csiUniqueVolumeName(''))), 120_000);
    const left = await driver.leftovers(base);
    if (left.loopDevices.length > 0 || left.mounts.length > 0) throw new Error(`csi (${mode}): left behind ${JSON.stringify(left)}`);
    const sorted = [...totals].sort((a, b) => a - b);
    return {
      driverMode: mode,
      agentMounter: mounter,
      volumes: CSI_VOLUMES,
      timeToMountedMs: { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1) },
      driverMs: summary(driverMs),
      agentMs: summary(agentMs),
      agentShare: round(sum(agentMs) / sum(totals), 3),
      driverShare: round(sum(driverMs) / sum(totals), 3),
    };
  } finally {
    await agent?.stop('SIGKILL');
    await driver.stop();
    await driver.forceCleanUp(base);
    await cleanUpTempDir(base, realMountsAllowed ? undefined : standInMounter(rootDir));
  }
}

/** The csi section: both driver modes where allowed; the privileged one needs root in a private mount namespace. */
async function measureCsi() {
  progress(`csi: ${CSI_VOLUMES} attachable volumes per driver mode`);
  const unprivileged = await measureCsiMode('unprivileged');
  const privileged = driverPrivileged
    ? await measureCsiMode('privileged')
    : { notRun: 'the privileged driver needs root in a private mount namespace: VOLUMESCOPE_MOUNT_NS=1 unshare --mount --propagation private npm run bench:agent' };
  return {
    method: 'manifest write → MountVolume.SetUp succeeded (agent log time); driver = sum of durationMs of ControllerPublish/NodeStage/NodePublish in the call log; agent = the rest',
    unprivileged,
    privileged,
  };
}

/**
 * Pods of the `--only restart` run: five emptyDirs each, except every `MIXED_EVERY`th pod, which
 * has three emptyDirs, a configMap and a secret. (Fewer tmpfs volumes than emptyDirs: without
 * mount privileges every tmpfs is a stand-in entry in the unprivileged mounter's table, which is
 * rewritten durably on each mount, so bringing up thousands of them would dominate the run.)
 */
const MIXED_EVERY = 5;
function mixedPod(name: string, i: number): Record<string, unknown> {
  const mixed = i % MIXED_EVERY === 0;
  const volumes = [
    { name: 'v0', emptyDir: {} },
    { name: 'v1', emptyDir: {} },
    { name: 'v2', emptyDir: {} },
    mixed ? { name: 'cm', configMap: { name: 'bench-config' } } : { name: 'v3', emptyDir: {} },
    mixed ? { name: 'sec', secret: { secretName: 'bench-secret' } } : { name: 'v4', emptyDir: {} },
  ];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NAMESPACE },
    spec: { containers: [{ name: 'app', image: 'busybox', volumeMounts: volumes.map((v) => ({ name: v.name, mountPath: `/m/${v.name}` })) }], volumes },
  };
}

/** `--only restart`: mixed volumes brought up in-process, then one restart timed milestone by milestone. */
/**
 * A CPU profile of this process (node:inspector) from now until `stop`, written to `file` in the
 * `.cpuprofile` format (Chrome DevTools, speedscope). Null when no file was asked for.
 */
async function startProfiler(file: string | null): Promise<{ stop(): Promise<void> } | null> {
  if (file === null) return null;
  const session = new Session();
  session.connect();
  const post = (method: string): Promise<unknown> =>
    new Promise((resolve, reject) => {
      session.post(method, (err, result) => {
        if (err === null) resolve(result);
        else reject(err);
      });
    });
  await post('Profiler.enable');
  await post('Profiler.start');
  return {
    async stop() {
      const { profile } = (await post('Profiler.stop')) as { profile: unknown };
      await writeFile(file, JSON.stringify(profile));
      session.disconnect();
      progress(`CPU profile written to ${file}`);
    },
  };
}

/** Dirs, flags and a quiet logger for an agent run in this process (`--only restart`, `--only idle`). */
async function inProcessAgentSetup(base: string, extraFlags: readonly string[] = []) {
  const rootDir = join(base, 'root');
  const manifestDir = join(base, 'manifests');
  await mkdir(manifestDir, { recursive: true });
  const parsed = parseAgentFlags(['--source=manifest', '--node-name', NODE_NAME, '--root-dir', rootDir, '--manifest-dir', manifestDir, `--allow-mount=${realMountsAllowed ? 'true' : 'false'}`, ...extraFlags]);
  if (parsed.help) throw new Error('unexpected --help');
  const log = createAgentLogger({ level: 'warn', nodeName: NODE_NAME, destination: { write: () => undefined } });
  return { rootDir, manifestDir, config: parsed.config, log };
}

/** CSI volumes (csi-loop, attachable, one claim per pod) among the volumes of the `--only restart` run. */
const RESTART_CSI_VOLUMES = 200;

/**
 * The successful driver calls of `method` in the call log: how many, the time the driver spent on
 * them (sum, median, max: a call waiting for the driver's state lock counts), and when the first
 * arrived and the last was answered, in ms after `sinceEpochMs`.
 */
function callSpread(calls: readonly DriverCall[], method: string, sinceEpochMs: number) {
  const ok = calls.filter((c) => c.method === method && c.code === 'OK');
  const durations = ok.map((c) => c.durationMs).sort((a, b) => a - b);
  const arrivals = ok.map((c) => Date.parse(c.time) - sinceEpochMs);
  const answers = ok.map((c) => Date.parse(c.time) + c.durationMs - sinceEpochMs);
  return {
    calls: durations.length,
    sumDurationMs: Math.round(durations.reduce((a, b) => a + b, 0)),
    maxDurationMs: round(durations.at(-1) ?? Number.NaN, 1),
    p50DurationMs: round(percentile(durations, 50), 1),
    firstArrivalMs: Math.round(Math.min(...arrivals)),
    lastAnswerMs: Math.round(Math.max(...answers)),
  };
}

async function measureRestartOnly(volumes: number, profileFile: string | null) {
  const base = await makeTempDir('volumescope-bench-restart-');
  const driver = await CsiLoopProcess.start({ dir: join(base, 'driver'), nodeId: NODE_NAME, mode: 'unprivileged' });
  const { manifestDir, config, log } = await inProcessAgentSetup(base, ['--csi-driver', `${csiLoopDriverName}=${driver.socketPath}`]);
  try {
    const csiVolumes = Math.min(RESTART_CSI_VOLUMES, Math.floor(volumes / 10));
    await writeManifest(manifestDir, 'objects.json', [
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'bench-config', namespace: NAMESPACE }, data: { 'app.conf': 'level=info\n' } },
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'bench-secret', namespace: NAMESPACE }, data: { token: Buffer.from('s3cr3t').toString('base64') } },
      csiDriverObject(),
      ...Array.from({ length: csiVolumes }, (_, i) => csiClaimObjects({ handle: `vol-${i}`, namespace: NAMESPACE })).flat(),
    ]);
    const pods = Math.ceil((volumes - csiVolumes) / VOLUMES_PER_POD);
    for (let f = 0; f * PODS_PER_FILE < pods; f++) {
      const docs = [];
      for (let i = f * PODS_PER_FILE; i < Math.min(pods, (f + 1) * PODS_PER_FILE); i++) docs.push(mixedPod(`mix-${i}`, i));
      await writeManifest(manifestDir, `mix-${f}.json`, docs);
    }
    await writeManifest(manifestDir, 'csi-pods.json', Array.from({ length: csiVolumes }, (_, i) => csiPodObject(`csi-${i}`, `vol-${i}`, { namespace: NAMESPACE })));
    const expected = pods * VOLUMES_PER_POD + csiVolumes;
    progress(`bringing up ${expected} mixed volumes (${csiVolumes} CSI)`);
    const setupStarted = performance.now();
    const first = await NodeAgent.start({ config, log, clock: realClock, version: 'bench' });
    let upCount = 0;
    await waitFor(() => (upCount = first.volumeManager.actualState().countMountedVolumes()) >= expected, { what: `${expected} volumes mounted`, timeoutMs: 300_000, describe: () => `${upCount} mounted` });
    const setupMs = performance.now() - setupStarted;
    await first.stop(10_000);
    await driver.clearCalls();

    progress('restarting over the same root dir');
    const profiler = await startProfiler(profileFile);
    const cpuAtStart = process.cpuUsage();
    const started = performance.now();
    const startedEpochMs = Date.now();
    const agent = await NodeAgent.start({ config, log, clock: realClock, version: 'bench' });
    const startedMs = performance.now() - started;
    const vm = agent.volumeManager;
    const milestones: Record<string, number> = {};
    const stamp = (name: string): void => {
      milestones[name] ??= Math.round(performance.now() - started);
    };
    try {
      // Milestones are stamped by the poll (every 20 ms): a listener on every change would copy the report each time.
      const total = await waitFor(() => {
          const synced = vm.reconcilerStatesHasBeenSynced();
          if (synced) stamp('statesSynced');
          const report = vm.getReconstructionReport();
          if (report.state !== 'done') return undefined;
          stamp('reconstructionScanDone');
          const open = report.entries.filter((e) => e.outcome === 'reconstructed').length;
          return synced && report.entries.length > 0 && open === 0 ? report.entries.length : undefined;
        }, { what: 'states synced and every reconstructed volume confirmed mounted', timeoutMs: 300_000, pollMs: 20 });
      stamp('allConfirmedMounted');
      const cpu = process.cpuUsage(cpuAtStart);
      await profiler?.stop();
      const confirmed = vm.getReconstructionReport().entries.filter((e) => e.outcome === 'confirmed-mounted').length;
      const calls = await driver.calls();
      return {
        restartOnly: {
          volumesOnDisk: total,
          confirmedMounted: confirmed,
          plugins: { emptyDir: 5 * pods - 2 * Math.ceil(pods / MIXED_EVERY), configMap: Math.ceil(pods / MIXED_EVERY), secret: Math.ceil(pods / MIXED_EVERY), csi: csiVolumes },
          setupSeconds: round(setupMs / 1000, 2),
          agentStartMs: Math.round(startedMs),
          milestonesMs: milestones,
          startToAllConfirmedMountedMs: milestones['allConfirmedMounted'],
          /** CPU time of this process over the same span (less sensitive to a loaded machine than the wall time). */
          cpuMs: Math.round((cpu.user + cpu.system) / 1000),
          /** The driver's side of the restart: each CSI volume is confirmed by NodePublishVolume (its NodeStageVolume first). */
          csiDriver: {
            callsByMethod: Object.fromEntries([...new Set(calls.map((c) => c.method))].sort().map((m) => [m, calls.filter((c) => c.method === m).length])),
            nodeStageVolume: callSpread(calls, 'NodeStageVolume', startedEpochMs),
            nodePublishVolume: callSpread(calls, 'NodePublishVolume', startedEpochMs),
          },
          loadAverage1m: round(loadavg()[0] ?? Number.NaN, 2),
          targetMs: 2000,
        },
      };
    } finally {
      await agent.stop(10_000);
    }
  } finally {
    await driver.stop();
    await driver.forceCleanUp(base);
    // Unprivileged, the thousands of tmpfs volumes left are stand-in entries of the mounter's
    // table under the root dir (no kernel mount): checking for kernel mounts is enough.
    await cleanUpTempDir(base);
  }
}

/**
 * `--only idle`: `IDLE_VOLUMES` volumes brought up in this process, then the engine's CPU time
 * (process.cpuUsage) over `IDLE_SAMPLE_MS` with nothing changing, optionally profiled
 * (`--cpu-profile <file>`): the periodic work that remains when nothing changes. `--health-stats
 * off` turns the mount health checks and volume stats off, `--health-stats fast` runs them at
 * `HEALTH_STATS_SPEEDUP` × their default rates (to profile their share); default: as configured
 * by default.
 */
async function measureIdleInProcess(profileFile: string | null, healthStats: 'default' | 'off' | 'fast') {
  const base = await makeTempDir('volumescope-bench-idle-');
  const flags = { default: [], off: ['--mount-health-period=0', '--volume-stats-agg-period=0'], fast: ['--mount-health-period', `${10_000 / HEALTH_STATS_SPEEDUP}ms`, '--volume-stats-agg-period', `${STATS_DEFAULT_PERIOD_MS / HEALTH_STATS_SPEEDUP}ms`] }[healthStats];
  const { rootDir, manifestDir, config, log } = await inProcessAgentSetup(base, flags);
  const pods = IDLE_VOLUMES / VOLUMES_PER_POD;
  for (let f = 0; f * PODS_PER_FILE < pods; f++) {
    const docs = [];
    for (let i = f * PODS_PER_FILE; i < Math.min(pods, (f + 1) * PODS_PER_FILE); i++) docs.push(pod(`idle-${i}`, VOLUMES_PER_POD));
    await writeManifest(manifestDir, `idle-${f}.json`, docs);
  }
  const agent = await NodeAgent.start({ config, log, clock: realClock, version: 'bench' });
  try {
    await waitFor(() => agent.volumeManager.actualState().countMountedVolumes() >= IDLE_VOLUMES, { what: `${IDLE_VOLUMES} volumes mounted`, timeoutMs: 120_000 });
    await sleep(SETTLE_MS);
    const profiler = await startProfiler(profileFile);
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await sleep(IDLE_SAMPLE_MS);
    const cpu = process.cpuUsage(cpu0);
    const seconds = (performance.now() - t0) / 1000;
    await profiler?.stop();
    return { idleInProcess: { volumes: IDLE_VOLUMES, healthStats, sampleSeconds: round(seconds, 2), cpuPercent: round(((cpu.user + cpu.system) / 1e6 / seconds) * 100, 2), rssMB: round(process.memoryUsage().rss / 1024 / 1024) } };
  } finally {
    await agent.stop(10_000);
    await cleanUpTempDir(base, realMountsAllowed ? undefined : standInMounter(rootDir));
  }
}

/** CPU seconds of a process, its reaped children (cutime + cstime) and its live children. */
async function treeCpuSeconds(pid: number, ticksPerSecond: number): Promise<{ self: number; children: number }> {
  const statOf = async (p: number): Promise<ProcStat | null> => {
    const stat = await readFile(`/proc/${p}/stat`, 'utf8').catch(() => null);
    return stat === null ? null : parseProcStat(stat);
  };
  const own = await statOf(pid);
  if (own === null) throw new Error(`no process ${pid}`);
  let children = own.reapedChildrenCpuTicks / ticksPerSecond;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const child = await statOf(Number(entry));
    if (child !== null && child.ppid === pid) children += child.cpuTicks / ticksPerSecond;
  }
  return { self: own.cpuTicks / ticksPerSecond, children };
}

/** Times an unauthenticated GET once (`/healthz`); ms. */
async function timeGetNoAuth(agent: AgentProcess, path: string): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${agent.baseUrl}${path}`);
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status}`);
  return performance.now() - t0;
}

/** Times `get` once; ms. */
async function timeGet(agent: AgentProcess, path: string): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${agent.baseUrl}${path}`, { headers: { authorization: `Bearer ${agent.token}` } });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status}`);
  return performance.now() - t0;
}

function latencySummary(values: number[]): { count: number; p50: number; p99: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return { count: sorted.length, p50: round(percentile(sorted, 50), 2), p99: round(percentile(sorted, 99), 2), max: round(sorted[sorted.length - 1] ?? Number.NaN, 2) };
}

/** An agent process at `IDLE_VOLUMES` emptyDir volumes (pods `<prefix>-N`), and what `run` may have mounted over one of them. */
interface ScaledAgent {
  agent: AgentProcess;
  base: string;
  rootDir: string;
  manifestDir: string;
  /** A bindfs mount over pod `<prefix>-0`'s volume `v0`; `stop` stops its daemon (SIGSTOP). */
  mountFuse: () => Promise<{ path: string; stop: () => void }>;
}

/** Runs `run` on a fresh agent process scaled to `IDLE_VOLUMES` volumes; the agent, its FUSE mount and its dirs are removed afterwards. */
async function withScaledAgent<T>(prefix: string, extraArgs: readonly string[], what: string, run: (a: ScaledAgent) => Promise<T>): Promise<T> {
  const base = await makeTempDir(`volumescope-bench-${prefix}-`);
  const rootDir = join(base, 'root');
  const manifestDir = join(base, 'manifests');
  await mkdir(manifestDir, { recursive: true });
  const agent = await AgentProcess.start({ rootDir, manifestDir, nodeName: NODE_NAME, extraArgs });
  let fuse: { daemon: ReturnType<typeof spawn>; path: string } | null = null;
  const mountFuse = async (): Promise<{ path: string; stop: () => void }> => {
    const path = join(rootDir, 'pods', uidOf(`${prefix}-0`), 'volumes', 'kubernetes.io~empty-dir', 'v0');
    const backing = join(base, 'fuse-backing');
    await mkdir(backing, { recursive: true });
    const daemon = spawn('bindfs', ['-f', backing, path], { stdio: 'ignore' });
    fuse = { daemon, path };
    await waitFor(async () => (await readFile('/proc/self/mountinfo', 'utf8')).includes(` ${path} `), { what: 'bindfs mounted' });
    return { path, stop: () => daemon.kill('SIGSTOP') };
  };
  try {
    await agent.waitForSnapshot('states synced', (s) => s.statesSynced);
    progress(`${what}: scaling to ${IDLE_VOLUMES} volumes`);
    await scaleTo(agent, manifestDir, prefix, IDLE_VOLUMES / VOLUMES_PER_POD, IDLE_VOLUMES);
    return await run({ agent, base, rootDir, manifestDir, mountFuse });
  } finally {
    const mounted = fuse as { daemon: ReturnType<typeof spawn>; path: string } | null;
    if (mounted !== null) {
      mounted.daemon.kill('SIGCONT');
      try {
        execFileSync('umount', ['--', mounted.path]);
      } catch {
        execFileSync('umount', ['-l', '--', mounted.path]);
      }
    }
    await agent.stop('SIGTERM');
    await cleanUpTempDir(base, realMountsAllowed ? undefined : standInMounter(rootDir));
  }
}

/** CPU % of one core of the agent (self) and its children (the probe) over `windowMs`. */
async function treeCpuOver(agent: AgentProcess, windowMs: number, ticksPerSecond: number): Promise<{ windowSeconds: number; agentCpuPercent: number; probeCpuPercent: number; cpuPercent: number }> {
  const before = await treeCpuSeconds(agent.pid, ticksPerSecond);
  const t0 = performance.now();
  await sleep(windowMs);
  const after = await treeCpuSeconds(agent.pid, ticksPerSecond);
  const seconds = (performance.now() - t0) / 1000;
  return {
    windowSeconds: round(seconds, 1),
    agentCpuPercent: round(((after.self - before.self) / seconds) * 100, 3),
    probeCpuPercent: round(((after.children - before.children) / seconds) * 100, 3),
    cpuPercent: round(((after.self + after.children - before.self - before.children) / seconds) * 100, 3),
  };
}

/** One agent process at `IDLE_VOLUMES` volumes: CPU over the window; with `hang`, the API timed while a FUSE mount hangs. */
async function healthRun(checks: boolean, ticksPerSecond: number, hang: boolean) {
  const what = `checks ${checks ? 'on' : 'off'}`;
  return withScaledAgent('h', checks ? [] : ['--mount-health-period=0'], what, async ({ agent, mountFuse }) => {
    await sleep(SETTLE_MS);
    progress(`${what}: CPU over ${HEALTH_WINDOW_MS / 1000} s`);
    const usage = await treeCpuOver(agent, HEALTH_WINDOW_MS, ticksPerSecond);
    const snapshot = await agent.snapshot();
    const cpu = {
      checks,
      ...usage,
      mountHealthEntries: snapshot.mountHealth.length,
      unhealthy: snapshot.mountHealth.filter((h) => h.state !== 'healthy').length,
    };
    if (!hang) return { cpu, hung: null };

    // A FUSE mount over one pod's volume directory, its daemon stopped.
    const fuse = await mountFuse();
    const target = fuse.path;
    // The same requests first with the mount healthy: the baseline on this (shared) machine.
    progress('timing the API with the FUSE mount healthy (baseline)');
    const baseline = { snapshotMs: [] as number[], summaryMs: [] as number[] };
    const t0b = performance.now();
    while (performance.now() - t0b < HUNG_EXTRA_MS) {
      baseline.snapshotMs.push(await timeGet(agent, '/api/v1/snapshot'));
      baseline.summaryMs.push(await timeGet(agent, '/api/v1/summary'));
      await sleep(20);
    }
    fuse.stop();
    progress('FUSE daemon stopped; timing the API until the mount is reported hung');
    const snapshotMs: number[] = [];
    const summaryMs: number[] = [];
    const t1 = performance.now();
    let hungAt: number | null = null;
    let slowest = { ms: 0, atMs: 0 };
    while (hungAt === null || performance.now() - hungAt < HUNG_EXTRA_MS) {
      const at = performance.now() - t1;
      snapshotMs.push(await timeGet(agent, '/api/v1/snapshot'));
      summaryMs.push(await timeGet(agent, '/api/v1/summary'));
      const last = Math.max(snapshotMs[snapshotMs.length - 1] ?? 0, summaryMs[summaryMs.length - 1] ?? 0);
      if (last > slowest.ms) slowest = { ms: round(last, 1), atMs: Math.round(at) };
      if (hungAt === null && snapshotMs.length % 10 === 0) {
        const s = await agent.snapshot();
        if (s.mountHealth.some((h) => h.path === target && h.state === 'hung')) hungAt = performance.now();
      }
      if (performance.now() - t1 > 120_000) throw new Error('the mount was not reported hung within 120 s');
      await sleep(20);
    }
    return {
      cpu,
      hung: {
        reportedHungAfterMs: Math.round((hungAt ?? t1) - t1),
        timedSeconds: round((performance.now() - t1) / 1000, 1),
        snapshotMs: latencySummary(snapshotMs),
        summaryMs: latencySummary(summaryMs),
        /** The slowest answer and when it came (ms after the daemon was stopped). */
        slowest,
        baselineHealthy: { snapshotMs: latencySummary(baseline.snapshotMs), summaryMs: latencySummary(baseline.summaryMs) },
        targetMs: 50,
      },
    };
  });
}

/** CPU % of an agent process with `IDLE_VOLUMES` emptyDir volumes and the given stats period, over `STATS_SAMPLE_MS`. */
async function idleCpuWithStatsPeriod(periodMs: number, ticksPerSecond: number): Promise<{ cpuPercent: number; statsEntries: number; statsWithNumbers: number }> {
  const base = await makeTempDir('volumescope-bench-stats-');
  const rootDir = join(base, 'root');
  const manifestDir = join(base, 'manifests');
  await mkdir(manifestDir, { recursive: true });
  const agent = await AgentProcess.start({ rootDir, manifestDir, nodeName: NODE_NAME, extraArgs: ['--volume-stats-agg-period', `${periodMs}ms`] });
  try {
    await agent.waitForSnapshot('states synced', (s) => s.statesSynced);
    await scaleTo(agent, manifestDir, 'stats', IDLE_VOLUMES / VOLUMES_PER_POD, IDLE_VOLUMES);
    await sleep(SETTLE_MS);
    const before = await processUsage(agent.pid, ticksPerSecond);
    const t0 = performance.now();
    await sleep(STATS_SAMPLE_MS);
    const after = await processUsage(agent.pid, ticksPerSecond);
    const seconds = (performance.now() - t0) / 1000;
    const stats = (await agent.snapshot()).volumeStats ?? [];
    return { cpuPercent: ((after.cpuSeconds - before.cpuSeconds) / seconds) * 100, statsEntries: stats.length, statsWithNumbers: stats.filter((v) => v.capacityBytes !== null).length };
  } finally {
    await agent.stop('SIGTERM');
    await cleanUpTempDir(base, realMountsAllowed ? undefined : standInMounter(rootDir));
  }
}

/** `--only health-stats`: the health checks and volume stats at `HEALTH_STATS_SPEEDUP` times their default rates. */
const HEALTH_STATS_SPEEDUP = 10;
const HEALTH_STATS_WINDOW_MS = 30_000;
/** Requests per endpoint timed while the mount hangs, at least. */
const HUNG_MIN_REQUESTS = 200;
const HUNG_ENDPOINTS = ['/healthz', '/api/v1/summary', '/api/v1/snapshot'] as const;

/**
 * One agent process at `IDLE_VOLUMES` emptyDir volumes, with the health checks and volume stats
 * off or at `HEALTH_STATS_SPEEDUP` × their default rates: CPU of the agent and its probe child
 * over `HEALTH_STATS_WINDOW_MS`; with `hang`, then the API timed while a FUSE mount hangs.
 */
async function healthStatsRun(on: boolean, ticksPerSecond: number, hang: boolean) {
  const healthPeriodMs = 10_000 / HEALTH_STATS_SPEEDUP;
  const statsPeriodMs = STATS_DEFAULT_PERIOD_MS / HEALTH_STATS_SPEEDUP;
  const extraArgs = on ? ['--mount-health-period', `${healthPeriodMs}ms`, '--volume-stats-agg-period', `${statsPeriodMs}ms`] : ['--mount-health-period=0', '--volume-stats-agg-period=0'];
  const what = `health+stats ${on ? 'on' : 'off'}`;
  return withScaledAgent('hs', extraArgs, what, async ({ agent, mountFuse }) => {
    if (on) {
      // Every path checked once and a stats pass with numbers for every volume before the window.
      await waitFor(async () => {
        const s = await agent.snapshot();
        return s.mountHealth.length >= IDLE_VOLUMES && (s.volumeStats ?? []).filter((v) => v.capacityBytes !== null).length >= IDLE_VOLUMES;
      }, { what: 'health entries and volume stats of every volume', timeoutMs: 120_000 });
    }
    await sleep(SETTLE_MS);
    progress(`${what}: CPU over ${HEALTH_STATS_WINDOW_MS / 1000} s`);
    const load = loadavg()[0] ?? Number.NaN;
    const usage = await treeCpuOver(agent, HEALTH_STATS_WINDOW_MS, ticksPerSecond);
    const snapshot = await agent.snapshot();
    const cpu = {
      on,
      healthPeriodMs: on ? healthPeriodMs : 0,
      statsPeriodMs: on ? statsPeriodMs : 0,
      ...usage,
      mountHealthEntries: snapshot.mountHealth.length,
      statsWithNumbers: (snapshot.volumeStats ?? []).filter((v) => v.capacityBytes !== null).length,
      loadAverage1mAtStart: round(load, 2),
      loadAverage1mAtEnd: round(loadavg()[0] ?? Number.NaN, 2),
    };
    if (!hang) return { cpu, hung: null };

    const fuse = await mountFuse();
    const target = fuse.path;
    // The same requests first with the mount healthy: the baseline on this (shared) machine.
    progress(`timing ${HUNG_ENDPOINTS.join(', ')} ${HUNG_MIN_REQUESTS} times each with the FUSE mount healthy (baseline)`);
    const baseline = await timeEndpoints(agent, (rounds) => Promise.resolve(rounds >= HUNG_MIN_REQUESTS));
    fuse.stop();
    progress(`FUSE daemon stopped; timing until the mount is reported hung, its stats show the error, and ${HUNG_MIN_REQUESTS} times each`);
    const t1 = performance.now();
    let hungAt: number | null = null;
    let statsErrorAt: number | null = null;
    const times = await timeEndpoints(agent, async (rounds) => {
      if (performance.now() - t1 > 120_000) throw new Error('the mount was not reported hung (health and stats) within 120 s');
      if ((hungAt === null || statsErrorAt === null) && rounds % 10 === 0) {
        const s = await agent.snapshot();
        if (hungAt === null && s.mountHealth.some((h) => h.path === target && h.state === 'hung')) hungAt = performance.now();
        if (statsErrorAt === null && (s.volumeStats ?? []).some((v) => v.path === target && v.error !== null)) statsErrorAt = performance.now();
      }
      return hungAt !== null && statsErrorAt !== null && rounds >= HUNG_MIN_REQUESTS;
    });
    const stats = (await agent.snapshot()).volumeStats ?? [];
    return {
      cpu,
      hung: {
        reportedHungAfterMs: Math.round((hungAt ?? t1) - t1),
        statsErrorAfterMs: Math.round((statsErrorAt ?? t1) - t1),
        timedSeconds: round((performance.now() - t1) / 1000, 1),
        latencyMs: times,
        baselineHealthyLatencyMs: baseline,
        /** The hung volume's stats entry: the health check's error, no numbers. */
        hungVolumeStats: (({ error, capacityBytes, collectedAt }) => ({ error, capacityBytes, collectedAt }))(stats.find((v) => v.path === target) ?? { error: null, capacityBytes: null, collectedAt: 0 }),
        loadAverage1m: round(loadavg()[0] ?? Number.NaN, 2),
        targetP99Ms: 50,
      },
    };
  });
}

/** GET each of `HUNG_ENDPOINTS` in turn, round after round, until `done(rounds)`; latency summaries by endpoint. */
async function timeEndpoints(agent: AgentProcess, done: (rounds: number) => Promise<boolean>): Promise<Record<string, ReturnType<typeof latencySummary>>> {
  const times = new Map<string, number[]>(HUNG_ENDPOINTS.map((e) => [e, []]));
  let rounds = 0;
  while (!(await done(rounds))) {
    for (const endpoint of HUNG_ENDPOINTS) times.get(endpoint)?.push(await (endpoint === '/healthz' ? timeGetNoAuth(agent, endpoint) : timeGet(agent, endpoint)));
    rounds++;
    await sleep(10);
  }
  return Object.fromEntries([...times].map(([endpoint, values]) => [endpoint, latencySummary(values)]));
}

/** `--only health-stats`: see the file comment. */
async function measureHealthStats(ticksPerSecond: number) {
  const off = await healthStatsRun(false, ticksPerSecond, false);
  const on = await healthStatsRun(true, ticksPerSecond, true);
  const extraAtSpeedup = on.cpu.cpuPercent - off.cpu.cpuPercent;
  progress(`health-stats: ${STATS_CSI_CALLS} NodeGetVolumeStats calls against csi-loop`);
  const csiStatsCpuPercent = csiStatsCpuPercentAtDefault(await csiStatsCallCpu());
  return {
    healthStats: {
      volumes: IDLE_VOLUMES,
      speedup: HEALTH_STATS_SPEEDUP,
      off: off.cpu,
      on: on.cpu,
      extraCpuPercentAtSpeedup: round(extraAtSpeedup, 3),
      /** The extra CPU of both at their default rates (health 10 s, stats 1m): the difference divided by the speedup. */
      healthStatsCpuPercent: round(extraAtSpeedup / HEALTH_STATS_SPEEDUP, 3),
      /** The agent-side CPU of NodeGetVolumeStats at 1,000 CSI volumes (see the stats section). */
      csiStatsCpuPercent: round(csiStatsCpuPercent, 3),
      /** 1,000 CSI volumes: their health checks (as above) and their stats through the driver instead of statfs. */
      healthAndCsiStatsCpuPercent: round(extraAtSpeedup / HEALTH_STATS_SPEEDUP + csiStatsCpuPercent, 3),
      targetCpuPercent: 0.5,
      apiWhileMountHangs: on.hung,
    },
  };
}

/** `--only health`: see the file comment. */
async function measureHealth(ticksPerSecond: number) {
  const off = await healthRun(false, ticksPerSecond, false);
  const on = await healthRun(true, ticksPerSecond, true);
  return {
    health: {
      volumes: IDLE_VOLUMES,
      checksOff: off.cpu,
      checksOn: on.cpu,
      extraCpuPercentOfCore: round(on.cpu.cpuPercent - off.cpu.cpuPercent, 3),
      targetExtraCpuPercent: 0.5,
      loadAverage1m: round(loadavg()[0] ?? Number.NaN, 2),
      apiWhileMountHangs: on.hung,
    },
  };
}

/** The agent-side CPU of NodeGetVolumeStats calls (client, call stats, metric) against csi-loop, in this process. */
async function csiStatsCallCpu(): Promise<{ warmupCalls: number; calls: number; cpuMsPerCall: number; wallMsPerCall: number }> {
  const base = await makeTempDir('volumescope-bench-csi-stats-');
  // Successful calls unlogged: reading the driver's line per call would count as client CPU here.
  const driver = await CsiLoopProcess.start({ dir: join(base, 'driver'), nodeId: NODE_NAME, logCalls: 'failed' });
  const calls = new CsiCallStats();
  const metrics = createAgentMetrics();
  const client = new CsiClient(driver.endpoint, { clock: realClock, timeoutMs: 10_000, onCall: (c) => {
    const call = { ...c, driver: csiLoopDriverName };
    calls.record(call);
    metrics.observeCsiCall(call);
  } });
  const staging = join(base, 'plugins', 'globalmount');
  const target = join(base, 'pods', 'uid-1', 'volumes', 'v', 'mount');
  const cap = { mount: { fs_type: 'ext4', mount_flags: [] }, access_mode: { mode: 'SINGLE_NODE_WRITER' as const } };
  const vol = 'bench-stats';
  try {
    await mkdir(staging, { recursive: true });
    await client.controllerPublishVolume({ volume_id: vol, node_id: NODE_NAME, volume_capability: cap, readonly: false, volume_context: { capacity: '32Mi' } });
    await client.nodeStageVolume({ volume_id: vol, staging_target_path: staging, volume_capability: cap });
    await client.nodePublishVolume({ volume_id: vol, staging_target_path: staging, target_path: target, volume_capability: cap, readonly: false });
    const one = (): Promise<unknown> => client.nodeGetVolumeStats({ volume_id: vol, volume_path: target, staging_target_path: staging });
    // Warm-up: one pass worth of calls, as every pass of a running agent follows earlier ones.
    for (let i = 0; i < STATS_CSI_WARMUP_CALLS; i++) await one();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    let next = 0;
    await Promise.all(Array.from({ length: 4 }, async () => {
      while (next++ < STATS_CSI_CALLS) await one();
    }));
    const cpu = process.cpuUsage(cpu0);
    const wall = performance.now() - t0;
    await client.nodeUnpublishVolume({ volume_id: vol, target_path: target });
    await client.nodeUnstageVolume({ volume_id: vol, staging_target_path: staging });
    await client.controllerUnpublishVolume({ volume_id: vol, node_id: NODE_NAME });
    return { warmupCalls: STATS_CSI_WARMUP_CALLS, calls: STATS_CSI_CALLS, cpuMsPerCall: (cpu.user + cpu.system) / 1000 / STATS_CSI_CALLS, wallMsPerCall: wall / STATS_CSI_CALLS };
  } finally {
    client.close();
    await driver.stop();
    await driver.forceCleanUp(base);
    await cleanUpTempDir(base);
  }
}

/** CPU % of one core for `IDLE_VOLUMES` CSI volumes, each asked once per stats pass at the default period. */
function csiStatsCpuPercentAtDefault(csi: { cpuMsPerCall: number }): number {
  return ((csi.cpuMsPerCall * IDLE_VOLUMES) / STATS_DEFAULT_MEAN_INTERVAL_MS) * 100;
}

/** The stats section: the extra CPU of the volume stats collection at 1,000 volumes. */
async function measureStats(ticksPerSecond: number) {
  progress(`stats: ${IDLE_VOLUMES} emptyDir volumes without stats collection`);
  const off = await idleCpuWithStatsPeriod(0, ticksPerSecond);
  progress(`stats: ${IDLE_VOLUMES} emptyDir volumes with a stats pass every ${STATS_FAST_PERIOD_MS} ms`);
  const fast = await idleCpuWithStatsPeriod(STATS_FAST_PERIOD_MS, ticksPerSecond);
  progress(`stats: ${STATS_CSI_CALLS} NodeGetVolumeStats calls against csi-loop`);
  const csi = await csiStatsCallCpu();
  const statfsExtraAtDefault = ((fast.cpuPercent - off.cpuPercent) * STATS_FAST_PERIOD_MS) / STATS_DEFAULT_PERIOD_MS;
  const csiExtraAtDefault = csiStatsCpuPercentAtDefault(csi);
  return {
    volumes: IDLE_VOLUMES,
    defaultPeriodMs: STATS_DEFAULT_PERIOD_MS,
    defaultMeanIntervalMs: STATS_DEFAULT_MEAN_INTERVAL_MS,
    statfs: {
      cpuPercentWithoutStats: round(off.cpuPercent, 3),
      fastPeriodMs: STATS_FAST_PERIOD_MS,
      cpuPercentAtFastPeriod: round(fast.cpuPercent, 3),
      statsEntries: fast.statsEntries,
      statsWithNumbers: fast.statsWithNumbers,
      /** The difference scaled to one pass a minute: the extra CPU of the default collection. */
      extraCpuPercentAtDefaultPeriod: round(statfsExtraAtDefault, 3),
    },
    csi: {
      warmupCalls: csi.warmupCalls,
      calls: csi.calls,
      agentCpuMsPerCall: round(csi.cpuMsPerCall, 3),
      wallMsPerCall: round(csi.wallMsPerCall, 3),
      /** 1,000 CSI volumes, one NodeGetVolumeStats each per pass (every 1.5 min on average at the default 1m). */
      extraCpuPercentAt1000VolumesDefaultPeriod: round(csiExtraAtDefault, 3),
    },
    targetCpuPercentWithHealthChecks: 0.5,
  };
}

async function main(): Promise<void> {
  const profileAt = process.argv.indexOf('--cpu-profile');
  const profileFile = profileAt >= 0 ? (process.argv[profileAt + 1] ?? null) : null;
  if (process.argv.includes('--only') && process.argv.includes('idle')) {
    const at = process.argv.indexOf('--health-stats');
    const mode = at >= 0 ? process.argv[at + 1] : 'default';
    if (mode !== 'default' && mode !== 'off' && mode !== 'fast') throw new Error(`--health-stats ${String(mode)}: expected off or fast`);
    process.stdout.write(`${JSON.stringify(await measureIdleInProcess(profileFile, mode), null, 2)}\n`);
    return;
  }
  if (process.argv.includes('--only') && process.argv.includes('restart')) {
    const at = process.argv.indexOf('--volumes');
    const volumes = at >= 0 ? Number(process.argv[at + 1]) : SNAPSHOT_VOLUMES;
    process.stdout.write(`${JSON.stringify(await measureRestartOnly(volumes, profileFile), null, 2)}\n`);
    return;
  }
  if (process.argv.includes('--only') && process.argv.includes('memory')) {
    const at = process.argv.indexOf('--heap-snapshot');
    const file = at >= 0 ? (process.argv[at + 1] ?? null) : null;
    const figures = await withAgentDirs('memory', (rootDir, manifestDir) => measureMemory(rootDir, manifestDir, clockTicks(), file === null ? null : resolvePath(file)));
    process.stdout.write(`${JSON.stringify({ ...figures, loadAverage1m: round(loadavg()[0] ?? Number.NaN, 2) }, null, 2)}\n`);
    return;
  }
  if (process.argv.includes('--only') && process.argv.includes('process')) {
    const figures = await withAgentDirs('process', (rootDir, manifestDir) => measureProcess(rootDir, manifestDir, clockTicks()));
    process.stdout.write(`${JSON.stringify({ ...figures, loadAverage1m: round(loadavg()[0] ?? Number.NaN, 2) }, null, 2)}\n`);
    return;
  }
  if (process.argv.includes('--only') && process.argv.includes('health-stats')) {
    const ticks = clockTicks();
    process.stdout.write(`${JSON.stringify(await measureHealthStats(ticks), null, 2)}\n`);
    return;
  }
  if (process.argv.includes('--only') && process.argv.includes('health')) {
    const ticks = clockTicks();
    process.stdout.write(`${JSON.stringify(await measureHealth(ticks), null, 2)}\n`);
    return;
  }
  if (process.argv.includes('--only') && process.argv.includes('stats')) {
    const ticks = clockTicks();
    process.stdout.write(`${JSON.stringify({ stats: await measureStats(ticks) }, null, 2)}\n`);
    return;
  }
  if (process.argv.includes('--only') && process.argv.includes('csi')) {
    process.stdout.write(`${JSON.stringify({ csi: await measureCsi() }, null, 2)}\n`);
    return;
  }
  const ticksPerSecond = clockTicks();
  const all = await withAgentDirs('agent', async (rootDir, manifestDir) => {
    const processFigures = await measureProcess(rootDir, manifestDir, ticksPerSecond);
    const inProcess = await measureRestartAndBuild(rootDir, manifestDir);
    const csi = await measureCsi();
    const health = await measureHealth(ticksPerSecond);
    const stats = await measureStats(ticksPerSecond);
    const healthStats = await measureHealthStats(ticksPerSecond);
    return { ...processFigures, ...inProcess, csi, ...health, stats, ...healthStats };
  });
  process.stdout.write(`${JSON.stringify(all, null, 2)}\n`);
}

/** Runs `run` with a fresh root dir and manifest dir under a temp dir, removed afterwards. */
async function withAgentDirs<T>(prefix: string, run: (rootDir: string, manifestDir: string) => Promise<T>): Promise<T> {
  const base = await makeTempDir(`volumescope-bench-${prefix}-`);
  const rootDir = join(base, 'root');
  const manifestDir = join(base, 'manifests');
  await mkdir(manifestDir, { recursive: true });
  try {
    return await run(rootDir, manifestDir);
  } finally {
    await cleanUpTempDir(base, realMountsAllowed ? undefined : standInMounter(rootDir));
  }
}

await main();
