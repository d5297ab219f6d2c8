/**
 * `npm run bench:snapshot [-- --agent]` (issue "Performance", requirement 4: ≤ 5 MB of raw JSON
 * at 10k volumes, build ≤ 50 ms after a change): the snapshot's encodings, as JSON on stdout
 * (progress on stderr).
 *
 * - Without flags: the generated large node of lib/api/testing (`largeSnapshot(10_000)`), in
 *   this process.
 * - `--agent`: a real agent process (`node --import tsx agent/main.ts`, manifest source) scaled
 *   to 10,000 mounted emptyDir volumes (2,000 pods of 5), read through `GET /api/v1/snapshot`.
 *
 * Figures: raw bytes of the compact (default) and full (`?encoding=full`) forms and their gzip
 * bytes (level 1, as the agent compresses); `encodeAfterChangeMs`: one pod and one volume
 * replaced by changed copies, then `CompactSnapshotEncoder.encodeJson` (what the agent serves) with
 * the encoder warm (the agent's case: unchanged items are the same objects between builds);
 * `decodeMs`: `JSON.parse` + `parseSnapshot` of the compact text (what the dashboard does), and
 * of the full text for comparison. With `--agent` also `rebuildEncodeAfterChangeMs`: an audited
 * action (`POST /api/v1/resync`, a change the agent publishes) followed at once by
 * `GET /api/v1/snapshot`, which rebuilds, encodes and sends it (loopback, identity encoding).
 * The machine may be shared with other work: take medians of runs.
 */
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { AgentProcess, standInMounter } from '../agent/node/testing/agent-process.ts';
import { CompactSnapshotEncoder, parseSnapshot } from '../lib/api/compact-snapshot.ts';
import type { Snapshot } from '../lib/api/snapshot.ts';
import { largeSnapshot } from '../lib/api/testing/snapshot-fixtures.ts';
import { waitFor } from '../lib/clock/testing/wait-for.ts';
import { cleanUpTempDir, makeTempDir, realMountsAllowed } from '../lib/mount-utils/testing/mount-test-env.ts';

const VOLUMES = 10_000;
const VOLUMES_PER_POD = 5;
const PODS_PER_FILE = 100;
const CHANGES = 30;
const DECODES = 5;
const TARGET_BYTES = 5_000_000;
const TARGET_BUILD_MS = 50;

function progress(msg: string): void {
  process.stderr.write(`[bench:snapshot] ${msg}\n`);
}

function stats(values: readonly number[]): { p50: number; p95: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number): number => Math.round((sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? Number.NaN) * 10) / 10;
  return { p50: at(0.5), p95: at(0.95), max: at(1) };
}

function time(run: () => unknown): number {
  const t0 = performance.now();
  run();
  return performance.now() - t0;
}

/** Encode-after-change timings: each round replaces one pod and one volume by changed copies. */
function encodeAfterChange(snapshot: Snapshot): number[] {
  const encoder = new CompactSnapshotEncoder();
  encoder.encodeJson(snapshot);
  let current = snapshot;
  const times: number[] = [];
  for (let i = 0; i < CHANGES; i++) {
    const pods = [...current.desired.pods];
    const volumes = [...current.actual.volumes];
    const p = i % Math.max(1, pods.length);
    const v = i % Math.max(1, volumes.length);
    const pod = pods[p];
    const volume = volumes[v];
    if (pod !== undefined) pods[p] = { ...pod, phase: `Running-${i}` };
    if (volume !== undefined) volumes[v] = { ...volume, devicePath: `/dev/bench-${i}` };
    current = { ...current, seq: current.seq + 1, desired: { pods }, actual: { volumes } };
    const next = current;
    times.push(time(() => encoder.encodeJson(next)));
  }
  return times;
}

function sizesAndDecode(compactText: string, fullText: string) {
  const decode = (text: string): number[] => Array.from({ length: DECODES }, () => time(() => parseSnapshot(JSON.parse(text))));
  return {
    rawBytes: { compact: Buffer.byteLength(compactText), full: Buffer.byteLength(fullText) },
    gzipBytes: { compact: gzipSync(compactText, { level: 1 }).length, full: gzipSync(fullText, { level: 1 }).length },
    decodeMs: { compact: stats(decode(compactText)), full: stats(decode(fullText)) },
  };
}

function inMemory() {
  const snapshot = largeSnapshot(VOLUMES);
  const compactText = new CompactSnapshotEncoder().encodeJson(snapshot);
  return { source: `largeSnapshot(${VOLUMES})`, volumes: snapshot.actual.volumes.length, ...sizesAndDecode(compactText, JSON.stringify(snapshot)), encodeAfterChangeMs: stats(encodeAfterChange(snapshot)) };
}

function benchPod(name: string): Record<string, unknown> {
  const names = Array.from({ length: VOLUMES_PER_POD }, (_, i) => `v${i}`);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'bench' },
    spec: {
      containers: [{ name: 'app', image: 'busybox', volumeMounts: names.map((n) => ({ name: n, mountPath: `/m/${n}` })) }],
      volumes: names.map((n) => ({ name: n, emptyDir: {} })),
    },
  };
}

async function againstAgent() {
  const base = await makeTempDir('volumescope-bench-snapshot-');
  const rootDir = join(base, 'root');
  const manifestDir = join(base, 'manifests');
  await mkdir(manifestDir, { recursive: true });
  const agent = await AgentProcess.start({ rootDir, manifestDir, nodeName: 'bench-node' });
  try {
    await agent.waitForSnapshot('states synced', (s) => s.statesSynced);
    progress(`scaling to ${VOLUMES} volumes`);
    const pods = VOLUMES / VOLUMES_PER_POD;
    for (let f = 0; f * PODS_PER_FILE < pods; f++) {
      const docs = Array.from({ length: Math.min(PODS_PER_FILE, pods - f * PODS_PER_FILE) }, (_, i) => benchPod(`snap-${f * PODS_PER_FILE + i}`));
      const tmp = join(manifestDir, `.snap-${f}.json.tmp`);
      await writeFile(tmp, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: docs }));
      await rename(tmp, join(manifestDir, `snap-${f}.json`));
    }
    let mounted = 0;
    await waitFor(
      async () => {
        const s = await agent.snapshot();
        mounted = s.actual.volumes.reduce((n, v) => n + v.pods.filter((p) => p.mountState === 'mounted').length, 0);
        return mounted >= VOLUMES;
      },
      { what: `${VOLUMES} volumes mounted`, timeoutMs: 600_000, describe: () => `${mounted} mounted`, pollMs: 2_000 },
    );
    const get = async (query: string): Promise<string> => {
      const res = await fetch(`${agent.baseUrl}/api/v1/snapshot${query}`, { headers: { authorization: `Bearer ${agent.token}`, 'accept-encoding': 'identity' } });
      if (!res.ok) throw new Error(`GET /api/v1/snapshot${query}: HTTP ${res.status}`);
      return res.text();
    };
    // Let the last rebuild settle so both forms are of the same seq.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const compactText = await get('');
    const fullText = await get('?encoding=full');
    const snapshot = parseSnapshot(JSON.parse(compactText));
    const rebuild: number[] = [];
    for (let i = 0; i < CHANGES; i++) {
      // Past the feed's minimum interval, so the GET publishes the change itself.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await agent.post('/api/v1/resync', {});
      await new Promise((resolve) => setTimeout(resolve, 60));
      const t0 = performance.now();
      await get('');
      rebuild.push(performance.now() - t0);
    }
    return {
      source: 'agent process (manifest source, emptyDir)',
      volumes: snapshot.actual.volumes.reduce((n, v) => n + v.pods.length, 0),
      ...sizesAndDecode(compactText, fullText),
      encodeAfterChangeMs: stats(encodeAfterChange(snapshot)),
      rebuildEncodeAfterChangeMs: stats(rebuild),
    };
  } finally {
    await agent.stop('SIGTERM');
    await cleanUpTempDir(base, realMountsAllowed ? undefined : standInMounter(rootDir));
  }
}

const result = process.argv.includes('--agent') ? await againstAgent() : inMemory();
process.stdout.write(`${JSON.stringify({ ...result, targets: { rawBytes: TARGET_BYTES, buildMs: TARGET_BUILD_MS } }, null, 2)}\n`);
