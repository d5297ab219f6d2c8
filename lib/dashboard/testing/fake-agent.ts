/**
 * A stand-in node agent for developing and demonstrating the dashboard without a real node: a
 * tiny `node:http` server that speaks the agent API of docs/api.md (bearer check, snapshot,
 * summary, SSE snapshot + deltas with `Last-Event-ID` resume, resync/retry/unmount with their refusals;
 * snapshots in the compact form unless `?encoding=full`, as the agent sends them),
 * over a generated node whose state keeps changing: a mount that fails and retries with
 * exponential backoff, an uncertain device mount, a volume left mounted for a deleted pod, and
 * churn across generated pods.
 *
 * Run it:
 *
 *   node --import tsx lib/dashboard/testing/fake-agent.ts --port 7070 --node node-a \
 *     --token-file /tmp/volumescope/node-a.token [--pods 200] [--volumes-per-pod 5] [--tick-ms 1000]
 *
 * It writes a random token to the token file when the file does not exist. Then start the
 * dashboard with
 *
 *   VOLUMESCOPE_AGENTS=node-a=http://127.0.0.1:7070 \
 *   VOLUMESCOPE_AGENT_TOKENS=node-a=/tmp/volumescope/node-a.token npx next dev
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  API_ROUTES,
  API_ERROR_STATUS,
  SUMMARY_ROUTE,
  summarizeSnapshot,
  SSE_KEEPALIVE,
  SSE_KEEPALIVE_INTERVAL_MS,
  apiErrorBody,
  computeDelta,
  encodeDeltaEvent,
  parseStreamEventId,
  normalizeSnapshot,
  operationKey,
  type ActualVolume,
  type ApiErrorCode,
  type AuditEntry,
  type Check,
  type Delta,
  type DesiredPod,
  type Operation,
  type OperationHistory,
  type RecentEvent,
  type Snapshot,
} from '../../api/index.ts';
import { BAD_ENCODING_MESSAGE, CompactSnapshotEncoder, snapshotEncodingOf, type SnapshotEncoding } from '../../api/compact-snapshot.ts';
import { SNAPSHOT_EVENT, streamEventId } from '../../api/agent-stream.ts';
import { formatSseEvent } from '../../api/sse.ts';
import { FIXTURE_T0, emptySnapshot, exampleSnapshot } from '../../api/testing/snapshot-fixtures.ts';
import { realClock, type Clock } from '../../clock/clock.ts';

// TYPES

/** How to start a fake agent. */
export interface FakeAgentOptions {
  /** 0 picks a free port. */
  readonly port?: number;
  readonly host?: string;
  readonly token: string;
  readonly nodeName?: string;
  /** Generated pods besides the hand-written ones; default 40. */
  readonly pods?: number;
  /** Volumes per generated pod; default 2. */
  readonly volumesPerPod?: number;
  /** How often the simulated node changes; default 1000 ms. 0 disables the simulation. */
  readonly tickMs?: number;
  readonly clock?: Clock;
}

/** A running fake agent. */
export interface FakeAgent {
  /** `http://host:port`. */
  readonly url: string;
  /** The current state. */
  snapshot(): Snapshot;
  /** Advances the simulation by one step (what the timer does every `tickMs`). */
  step(): void;
  /** Authenticated requests served so far, by kind (benchmarks assert what a page asked for). */
  requestCounts(): { snapshot: number; summary: number; events: number; actions: number };
  /** Stops the server and closes every open stream. */
  close(): Promise<void>;
}

const RING = 50;
const JOURNAL = 1_000;
const CSI = 'kubernetes.io/csi';
const DRIVER = 'csi-loop.volumescope.dev';
const ORPHAN_UID = '0d1e2f30-4a5b-4c6d-8e9f-a0b1c2d3e4f5';
const ORPHAN_VOLUME = `kubernetes.io/configmap/${ORPHAN_UID}-settings`;
const DB_UID = 'a7d9e3b1-6c45-4b8a-8f2d-0e1c9b7a5d33';
const PG_VOLUME = `${CSI}/${DRIVER}^vol-pg`;

function pad(i: number): string {
  return String(i).padStart(5, '0');
}

/** Moves every time in a fixture snapshot by `offset` ms. */
function shiftTimes(s: Snapshot, offset: number): Snapshot {
  const t = (v: number | null): number | null => (v === null ? null : v + offset);
  return {
    ...s,
    agent: { ...s.agent, startedAt: s.agent.startedAt + offset },
    operations: s.operations.map((op) => ({ ...op, lastErrorAt: t(op.lastErrorAt), retryAt: t(op.retryAt), startedAt: t(op.startedAt) })),
    operationHistory: s.operationHistory.map((h) => ({
      ...h,
      firstFailureAt: h.firstFailureAt + offset,
      succeededAt: t(h.succeededAt),
      attempts: h.attempts.map((a) => ({ ...a, startedAt: a.startedAt + offset })),
    })),
    reconstruction: {
      ...s.reconstruction,
      startedAt: t(s.reconstruction.startedAt),
      finishedAt: t(s.reconstruction.finishedAt),
      volumes: s.reconstruction.volumes.map((v) => ({ ...v, at: v.at + offset })),
    },
    recentEvents: s.recentEvents.map((e) => ({ ...e, time: e.time + offset })),
    audit: s.audit.map((a) => ({ ...a, time: a.time + offset })),
    drivers: s.drivers.map((d) => ({ ...d, lastProbeAt: t(d.lastProbeAt) })),
    attachVerification: { ...s.attachVerification, lastRunAt: t(s.attachVerification.lastRunAt) },
  };
}

function generatedNode(count: number, perPod: number): { pods: DesiredPod[]; volumes: ActualVolume[] } {
  const pods: DesiredPod[] = [];
  const volumes: ActualVolume[] = [];
  for (let i = 0; i < count; i++) {
    const uid = `load-${pad(i)}-uid`;
    const ns = `team-${i % 7}`;
    const pod: DesiredPod = { uid, namespace: ns, name: `app-${pad(i)}`, volumes: [] };
    for (let v = 0; v < perPod; v++) {
      const unique = `${CSI}/${DRIVER}^vol-${pad(i)}-${v}`;
      pod.volumes.push({ name: `data-${v}`, uniqueVolumeName: unique, pluginName: CSI, attachable: true, deviceMountable: true, reportedInUse: true });
      volumes.push({
        uniqueVolumeName: unique,
        pluginName: CSI,
        attachState: 'attached',
        devicePath: `/dev/loop${i * perPod + v}`,
        deviceMountState: 'mounted',
        deviceMountPath: `/var/lib/kubelet/plugins/kubernetes.io/csi/${DRIVER}/${pad(i)}${v}/globalmount`,
        pods: [{ podUid: uid, podName: uid, podNamespace: ns, outerVolumeName: `data-${v}`, mountState: 'mounted', remountRequired: false }],
      });
    }
    pods.push(pod);
  }
  return { pods, volumes };
}

/** The fake node's first state at `now`. */
export function initialFakeSnapshot(nodeName: string, now: number, pods: number, perPod: number): Snapshot {
  const example = shiftTimes(exampleSnapshot(), now - FIXTURE_T0 - 62_000);
  const generated = generatedNode(pods, perPod);
  const orphan: ActualVolume = {
    uniqueVolumeName: ORPHAN_VOLUME,
    pluginName: 'kubernetes.io/configmap',
    attachState: 'attached',
    devicePath: '',
    deviceMountState: 'not-mounted',
    deviceMountPath: '',
    pods: [{ podUid: ORPHAN_UID, podName: ORPHAN_UID, outerVolumeName: 'settings', mountState: 'mounted', remountRequired: false }],
  };
  return normalizeSnapshot(
    emptySnapshot({
      ...example,
      nodeName,
      seq: 1,
      agent: { version: '0.1.0-fake', startedAt: now },
      desired: { pods: [...example.desired.pods, ...generated.pods] },
      actual: { volumes: [...example.actual.volumes, orphan, ...generated.volumes] },
      reconstruction: {
        ...example.reconstruction,
        volumes: [
          ...example.reconstruction.volumes,
          { podUid: ORPHAN_UID, volumeName: 'settings', pluginName: 'kubernetes.io/configmap', outcome: 'reconstructed', error: null, at: now - 50_000 },
          { podUid: 'ffffffff-0000-4000-8000-000000000001', volumeName: 'scratch', pluginName: CSI, outcome: 'failed', error: 'no device path for volume vol-scratch in node status', at: now - 49_000 },
        ],
      },
      drivers: example.drivers.map((d) => ({ ...d, nodeId: nodeName })),
    }),
  );
}

// SIMULATION

class FakeNode {
  current: Snapshot;
  private readonly journal: Delta[] = [];
  private readonly listeners = new Set<(delta: Delta) => void>();
  private tick = 0;

  constructor(
    private readonly clock: Clock,
    initial: Snapshot,
  ) {
    this.current = initial;
  }

  subscribe(listener: (delta: Delta) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The deltas after `seq`, or `null` when the journal no longer has them all. */
  deltasAfter(seq: number): Delta[] | null {
    if (seq === this.current.seq) return [];
    const from = this.journal.findIndex((d) => d.fromSeq === seq);
    return from === -1 ? null : this.journal.slice(from);
  }

  publish(change: (s: Snapshot) => Snapshot): void {
    const next = normalizeSnapshot({ ...change(this.current), seq: this.current.seq + 1 });
    const delta = computeDelta(this.current, next);
    this.current = next;
    this.journal.push(delta);
    if (this.journal.length > JOURNAL) this.journal.shift();
    for (const l of this.listeners) l(delta);
  }

  event(type: RecentEvent['type'], reason: string, podUid: string | null, message: string, volume?: string): (s: Snapshot) => Snapshot {
    const event: RecentEvent = { time: this.clock.now(), type, reason, podUid, message, ...(volume === undefined ? {} : { volume }) };
    return (s) => ({ ...s, recentEvents: [...s.recentEvents, event].slice(-RING) });
  }

  /** Adds one finished attempt to the operation's history, as the agent's engine does (a success ends it). */
  attempt(op: Pick<Operation, 'operationName' | 'volume' | 'podUid' | 'nodeName'>, startedAt: number, error: string | null): void {
    const now = this.clock.now();
    const key = operationKey(op);
    const attempt = { startedAt, durationMs: now - startedAt, error };
    this.publish((s) => {
      const before = s.operationHistory.find((h) => operationKey(h) === key && h.succeededAt === null);
      if (before === undefined && error === null) return s;
      const next: OperationHistory =
        before === undefined
          ? { operationName: op.operationName, volume: op.volume, podUid: op.podUid, nodeName: op.nodeName, firstFailureAt: now, attemptsTotal: 1, attempts: [attempt], succeededAt: null }
          : { ...before, attemptsTotal: before.attemptsTotal + 1, attempts: [...before.attempts, attempt].slice(-20), succeededAt: error === null ? now : null };
      return { ...s, operationHistory: [...s.operationHistory.filter((h) => operationKey(h) !== key), next] };
    });
  }

  audit(entry: Omit<AuditEntry, 'time'>): void {
    this.publish((s) => ({ ...s, audit: [...s.audit, { ...entry, time: this.clock.now() }].slice(-RING) }));
  }

  step(): void {
    const now = this.clock.now();
    this.tick++;
    // The database's mount: backoff → running → fails again with a doubled backoff.
    const pg = this.current.operations.find((op) => op.volume === PG_VOLUME && op.podUid === DB_UID);
    if (pg !== undefined) {
      if (pg.state === 'backoff' && pg.retryAt !== null && now > pg.retryAt) {
        this.replaceOperation({ ...pg, state: 'running', startedAt: now });
      } else if (pg.state === 'running' && pg.startedAt !== null && now - pg.startedAt >= 3_000) {
        const duration = Math.min(122_000, Math.max(500, pg.durationBeforeRetryMs * 2));
        const message = 'MountVolume.MountDevice failed for volume "pgdata" : rpc error: code = DeadlineExceeded desc = context deadline exceeded';
        this.replaceOperation({ ...pg, state: 'backoff', failures: pg.failures + 1, lastError: message, lastErrorAt: now, retryAt: now + duration, durationBeforeRetryMs: duration, startedAt: null });
        this.attempt(pg, pg.startedAt, message);
        this.publish(this.event('Warning', 'FailedMount', DB_UID, message, PG_VOLUME));
      }
    }
    // Churn: every few ticks one generated pod's volume goes through a short failure.
    const generated = this.current.desired.pods.filter((p) => p.uid.startsWith('load-'));
    if (generated.length > 0 && this.tick % 3 === 0) {
      const pod = generated[(this.tick / 3) % generated.length];
      const volume = pod?.volumes[0];
      if (pod !== undefined && volume !== undefined) {
        const existing = this.current.operations.find((op) => op.volume === volume.uniqueVolumeName);
        if (existing === undefined) {
          const message = `MountVolume.SetUp failed for volume "${volume.name}" : rpc error: code = Unavailable desc = driver not ready`;
          this.attempt({ operationName: 'volume_mount', volume: volume.uniqueVolumeName, podUid: pod.uid, nodeName: null }, now - 40, message);
          this.publish(this.event('Warning', 'FailedMount', pod.uid, message, volume.uniqueVolumeName));
          this.publish((s) => ({
            ...s,
            operations: [
              ...s.operations,
              {
                operationName: 'volume_mount',
                volume: volume.uniqueVolumeName,
                podUid: pod.uid,
                nodeName: null,
                state: 'backoff',
                failures: 1,
                lastError: message,
                lastErrorAt: now,
                retryAt: now + 8_000,
                durationBeforeRetryMs: 8_000,
                startedAt: null,
              },
            ],
          }));
        }
      }
    }
    // Operations of generated pods whose backoff expired succeed.
    for (const op of this.current.operations) {
      if (op.podUid?.startsWith('load-') === true && op.retryAt !== null && now > op.retryAt + 2_000) {
        this.publish((s) => ({ ...s, operations: s.operations.filter((o) => operationKey(o) !== operationKey(op)) }));
        this.attempt(op, now - 30, null);
      }
    }
  }

  replaceOperation(op: Operation): void {
    const key = operationKey(op);
    this.publish((s) => ({ ...s, operations: s.operations.map((o) => (operationKey(o) === key ? op : o)) }));
  }
}

// HTTP

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(body));
}

function sendError(res: ServerResponse, code: ApiErrorCode, message: string, extras: { checks?: Check[]; field?: string } = {}): void {
  if (code === 'unauthorized') res.setHeader('WWW-Authenticate', 'Bearer');
  sendJson(res, API_ERROR_STATUS[code], apiErrorBody(code, message, extras));
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? null : (JSON.parse(text) as unknown);
}

/** Starts a fake agent; see {@link FakeAgentOptions}. */
export async function startFakeAgent(options: FakeAgentOptions): Promise<FakeAgent> {
  const clock = options.clock ?? realClock;
  const node = new FakeNode(clock, initialFakeSnapshot(options.nodeName ?? 'node-a', clock.now(), options.pods ?? 40, options.volumesPerPod ?? 2));
  const streams = new Set<ServerResponse>();
  const counts = { snapshot: 0, summary: 0, events: 0, actions: 0 };
  // As the agent's snapshot feed: one compact encoder keeps unchanged items' texts between changes.
  const compact = new CompactSnapshotEncoder();
  const snapshotJson = (snapshot: Snapshot, encoding: SnapshotEncoding): string => (encoding === 'full' ? JSON.stringify(snapshot) : compact.encodeJson(snapshot));

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://fake');
    if (url.pathname === API_ROUTES.healthz.path) {
      sendJson(res, 200, { status: 'ok' });
      return;
    }
    if (url.pathname === API_ROUTES.readyz.path) {
      sendJson(res, 200, { status: 'ok' });
      return;
    }
    if (req.headers.authorization !== `Bearer ${options.token}`) {
      sendError(res, 'unauthorized', 'missing or wrong bearer token');
      return;
    }
    const route = `${req.method ?? 'GET'} ${url.pathname}`;
    if (req.method === 'POST') counts.actions++;
    const encoding = route === `GET ${API_ROUTES.snapshot.path}` || route === `GET ${API_ROUTES.events.path}` ? snapshotEncodingOf(req.url) : 'compact';
    if (encoding === null) {
      sendError(res, 'bad-request', BAD_ENCODING_MESSAGE, { field: 'encoding' });
      return;
    }
    switch (route) {
      case `GET ${API_ROUTES.snapshot.path}`:
        counts.snapshot++;
        res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8' });
        res.end(snapshotJson(node.current, encoding));
        return;
      case `GET ${SUMMARY_ROUTE.path}`:
        counts.summary++;
        sendJson(res, 200, summarizeSnapshot(node.current));
        return;
      case `GET ${API_ROUTES.events.path}`: {
        counts.events++;
        res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache, no-transform' });
        // Send the headers now: a resume with nothing new writes no event, and a client waiting
        // for the headers would otherwise wait for the first change or keepalive.
        res.flushHeaders();
        const lastId = req.headers['last-event-id'];
        const last = typeof lastId === 'string' ? parseStreamEventId(lastId) : null;
        const startedAt = node.current.agent.startedAt;
        const resume = last !== null && last.startedAt === startedAt ? node.deltasAfter(last.seq) : null;
        if (resume === null) res.write(formatSseEvent({ event: SNAPSHOT_EVENT, id: streamEventId(startedAt, node.current.seq), data: snapshotJson(node.current, encoding) }));
        else for (const d of resume) res.write(encodeDeltaEvent(d, startedAt));
        const unsubscribe = node.subscribe((d) => res.write(encodeDeltaEvent(d, startedAt)));
        const keepalive = setInterval(() => res.write(SSE_KEEPALIVE), SSE_KEEPALIVE_INTERVAL_MS);
        streams.add(res);
        res.on('close', () => {
          unsubscribe();
          clearInterval(keepalive);
          streams.delete(res);
        });
        return;
      }
      case `POST ${API_ROUTES.resync.path}`: {
        const startedAt = clock.now();
        const av = { lastRunAt: clock.now(), checked: node.current.actual.volumes.length, foundDetached: [] };
        node.publish((s) => ({ ...s, attachVerification: av }));
        node.audit({ caller: 'dashboard', action: 'resync', target: null, checks: [], result: 'succeeded', message: null });
        sendJson(res, 200, { startedAt, finishedAt: clock.now(), rescanned: { volumes: node.current.actual.volumes.length, mountPoints: node.current.actual.volumes.length }, attachVerification: av, changes: [] });
        return;
      }
      case `POST ${API_ROUTES.retryOperation.path}`: {
        const body = (await readBody(req)) as { volume?: string; podUid?: string } | null;
        const op = node.current.operations.find((o) => o.volume === body?.volume && (o.podUid ?? undefined) === body.podUid);
        const target = `${body?.podUid ?? ''}/${body?.volume ?? ''}`;
        if (op === undefined) {
          sendError(res, 'not-found', `no operation for volume ${body?.volume ?? ''}`);
          return;
        }
        if (op.state === 'running') {
          node.audit({ caller: 'dashboard', action: 'retry', target, checks: [], result: 'refused', message: 'the operation is running' });
          sendError(res, 'conflict', 'the operation is running');
          return;
        }
        node.replaceOperation({ ...op, retryAt: clock.now() });
        node.audit({ caller: 'dashboard', action: 'retry', target, checks: [], result: 'succeeded', message: null });
        sendJson(res, 200, { cleared: operationKey(op) });
        return;
      }
      case `POST ${API_ROUTES.unmount.path}`: {
        const body = (await readBody(req)) as { volume?: string; podUid?: string } | null;
        const target = `${body?.podUid ?? ''}/${body?.volume ?? ''}`;
        const desiredPod = node.current.desired.pods.find((p) => p.uid === body?.podUid);
        const volume = node.current.actual.volumes.find((v) => v.uniqueVolumeName === body?.volume);
        const mounted = volume?.pods.some((m) => m.podUid === body?.podUid) === true;
        const checks: Check[] = [
          { name: 'pod-not-desired', ok: desiredPod === undefined, detail: desiredPod === undefined ? 'pod is not in the desired state' : `pod ${desiredPod.namespace}/${desiredPod.name} is in the desired state` },
          { name: 'volume-mounted', ok: mounted, detail: mounted ? 'the volume is mounted for the pod' : 'the volume is not mounted for the pod' },
        ];
        const failed = checks.find((c) => !c.ok);
        if (failed !== undefined) {
          node.audit({ caller: 'dashboard', action: 'unmount', target, checks, result: 'refused', message: failed.detail });
          sendError(res, 'conflict', failed.detail, { checks });
          return;
        }
        const startedAt = clock.now();
        node.publish((s) => ({
          ...s,
          actual: { volumes: s.actual.volumes.flatMap((v) => (v.uniqueVolumeName !== body?.volume ? [v] : v.pods.length === 1 ? [] : [{ ...v, pods: v.pods.filter((m) => m.podUid !== body.podUid) }])) },
        }));
        node.audit({ caller: 'dashboard', action: 'unmount', target, checks, result: 'succeeded', message: null });
        sendJson(res, 200, { podUid: body?.podUid, volume: body?.volume, outcome: 'unmounted', error: null, checks, startedAt, finishedAt: clock.now() });
        return;
      }
      default:
        sendError(res, 'not-found', `no route ${route}`);
        return;
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      sendError(res, 'bad-request', err instanceof Error ? err.message : String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve));
  const address = server.address() as AddressInfo;
  const tickMs = options.tickMs ?? 1000;
  const timer = tickMs > 0 ? setInterval(() => { node.step(); }, tickMs) : null;
  return {
    url: `http://${address.address}:${address.port}`,
    snapshot: () => node.current,
    step: () => { node.step(); },
    requestCounts: () => ({ ...counts }),
    close: async () => {
      if (timer !== null) clearInterval(timer);
      for (const res of streams) res.end();
      await new Promise<void>((resolve) => server.close(() => { resolve(); }));
    },
  };
}

// CLI

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? undefined : process.argv[i + 1];
}

async function main(): Promise<void> {
  const tokenFile = arg('token-file');
  if (tokenFile === undefined) throw new Error('--token-file is required');
  if (!existsSync(tokenFile)) {
    mkdirSync(dirname(tokenFile), { recursive: true });
    writeFileSync(tokenFile, `${randomBytes(24).toString('hex')}\n`, { mode: 0o600 });
  }
  const agent = await startFakeAgent({
    token: readFileSync(tokenFile, 'utf8').trim(),
    port: Number(arg('port') ?? 7070),
    nodeName: arg('node') ?? 'node-a',
    pods: Number(arg('pods') ?? 40),
    volumesPerPod: Number(arg('volumes-per-pod') ?? 2),
    tickMs: Number(arg('tick-ms') ?? 1000),
  });
  process.stdout.write(`fake agent ${arg('node') ?? 'node-a'} on ${agent.url} (token in ${tokenFile})\n`);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      void agent.close().then(() => process.exit(0));
    });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
