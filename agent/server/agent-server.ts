/**
 * The node agent's HTTP server (docs/api.md) on plain `node:http`: health, the snapshot, the
 * event stream, the operator actions, `/metrics` and the OpenAPI document, on top of an
 * {@link AgentRuntime}.
 *
 * Request handling order: `/healthz` and `/readyz` are public; for every other path the
 * authenticator runs first (401/403 before anything else about the request is looked at), then the
 * route (404), the method (405 with `Allow`), the body (413 over 64 KiB, 400 naming the field)
 * and the handler. Bad input never reaches a 500: a 500 is an agent bug and is logged as one.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { z } from 'zod';
import { OrphanCleanupRequestSchema, ResyncRequestSchema, RetryOperationRequestSchema, UnmountRequestSchema, type ActionNote, type HealthResponse } from '../../lib/api/actions.ts';
import { isInvalidRequestBodyError, MAX_REQUEST_BODY_BYTES, parseJsonRequestBody } from '../../lib/api/request-body.ts';
import { buildOpenApiDocument } from '../../lib/api/openapi.ts';
import { API_ROUTES, type ApiRoute } from '../../lib/api/routes.ts';
import { BAD_ENCODING_MESSAGE, snapshotEncodingOf } from '../../lib/api/compact-snapshot.ts';
import type { Snapshot } from '../../lib/api/snapshot.ts';
import type { AgentRuntime } from '../runtime.ts';
import type { ActionContext } from './action-context.ts';
import { AUDIT_FILE_NAME, AuditLog, DEFAULT_AUDIT_SIZE } from './audit-log.ts';
import { authFailureAnswer, type Authenticator } from './authenticator.ts';
import { EVENT_STREAM_RETRY_AFTER_SECONDS, EventStreams } from './event-streams.ts';
import { acceptsGzip, errorAnswer, jsonAnswer, sendAnswer, sendGzippedJson, sendJsonText, type HttpAnswer } from './http-response.ts';
import type { AgentMetrics } from './metrics.ts';
import { SlidingWindowRateLimiter } from './rate-limiter.ts';
import { isPayloadTooLargeError, isRequestAbortedError, readBody } from './read-body.ts';
import { RESYNC_RATE_LIMIT, resync } from './resync.ts';
import { RETRY_RATE_LIMIT, retryOperation } from './retry-operation.ts';
import { SnapshotBuilder } from './snapshot-builder.ts';
import { SnapshotFeed } from './snapshot-feed.ts';
import { SummaryCache, summaryHandler } from './summary.ts';
import { SUMMARY_ROUTE } from '../../lib/api/summary.ts';
import { DEFAULT_UNMOUNT_OUTCOME_TIMEOUT_MS, unmountVolume } from './unmount-volume.ts';
import { cleanupOrphan } from './orphan-cleanup.ts';
import { volumeBlockers } from './volume-blockers.ts';

// TYPES

/**
 * How far the `volumescope_summary` gauges may lag the agent's changes: a scrape publishes pending
 * changes only when the last snapshot build is this old, so that frequent scrapes cannot make an
 * agent nobody else watches rebuild its snapshot on every one (snapshot-feed.ts).
 */
export const METRICS_SUMMARY_MAX_AGE_MS = 1_000;

export interface AgentServerOptions {
  runtime: AgentRuntime;
  authenticator: Authenticator;
  /** Rendered at `GET /metrics`; the server binds the runtime's volume manager to it. */
  metrics: AgentMetrics;
  /** Deltas kept for stream resumption (default 256). */
  journalSize?: number;
  /** Idle time before a `: keepalive` on an event stream (default 15 s, runtime clock). */
  keepaliveMs?: number;
  /** Open event streams in all (default 512) and per caller (default 256); beyond: 503 + Retry-After. */
  maxEventStreams?: number;
  maxEventStreamsPerCaller?: number;
  /** Audit entries kept in the snapshot (default 100). */
  auditSize?: number;
  /**
   * The agent's state dir (`<root>/volumescope`): the audit log persists there as `audit.jsonl`
   * across restarts. Absent or null: memory only (observe mode, tests).
   */
  stateDir?: string | null;
  /** "Retry now" limit per node (default 10 per 10 s); clearing a forced TearDown's backoff takes a slot too. */
  retryRateLimit?: { limit: number; windowMs: number };
  /** Resync limit per node (default 5 per 60 s, `RESYNC_RATE_LIMIT`). */
  resyncRateLimit?: { limit: number; windowMs: number };
  /** How long an unmount request waits for the TearDown's outcome before answering 202 (default 30 s). */
  unmountOutcomeTimeoutMs?: number;
  /** Shortest time between two snapshot rebuilds caused by change notifications (default 50 ms). */
  minRebuildIntervalMs?: number;
  /**
   * Serve HTTPS with this certificate chain and key (PEM; `--tls-cert-file`,
   * `--tls-private-key-file`, as the kubelet's server). Absent: plain HTTP.
   */
  tls?: { cert: string | Buffer; key: string | Buffer };
}

/** The address the server listens on. */
export interface ListenAddress {
  host: string;
  port: number;
}

export interface AgentServer {
  /** Starts listening; port 0 picks a free port (the answer has the real one). */
  listen(host: string, port: number): Promise<ListenAddress>;
  /**
   * Stops: ends every event stream, answers waiting unmount requests with "still running",
   * stops the snapshot timers and listeners, and resolves once the listening socket is closed,
   * in-flight requests are answered and the audit log is on disk. Idempotent.
   */
  close(): Promise<void>;
  /** The current snapshot (pending changes published first), as `GET /api/v1/snapshot` serves it. */
  snapshot(): Snapshot;
  /** Every route the server answers (method, path, whether it needs the token), in routing order. */
  routes(): ApiRoute[];
}

/** Who a request is from: the authenticator's caller and groups (`anonymous`, no groups, on public routes). */
interface Requester {
  caller: string;
  groups: readonly string[];
}

/** A handler's answer, or null when it wrote the response itself (streams, `/metrics`). */
type Handler = (req: IncomingMessage, res: ServerResponse, who: Requester) => Promise<HttpAnswer | null>;

interface Route {
  method: 'GET' | 'POST';
  path: string;
  auth: boolean;
  handle: Handler;
}

// SERVER

/** Creates the server (not yet listening); its snapshot feed starts at once. */
export function createAgentServer(opts: AgentServerOptions): AgentServer {
  const { runtime, authenticator, metrics } = opts;
  const { clock, logger } = runtime;
  const vm = runtime.volumeManager;
  metrics.bindVolumeManager(vm);
  const mountHealth = runtime.mountHealth?.bind(runtime);
  if (mountHealth !== undefined) metrics.bindMountHealth(mountHealth);
  const observe = runtime.observe?.bind(runtime);
  if (observe !== undefined) metrics.bindObserve(() => observe().orphans.length);

  const markChanged = (): void => {
    liveFeed.markChanged();
  };
  // The audit ring is part of the snapshot: an appended entry is a change to publish.
  const auditFile = opts.stateDir == null ? null : join(opts.stateDir, AUDIT_FILE_NAME);
  const audit = new AuditLog(clock, logger, markChanged, opts.auditSize ?? DEFAULT_AUDIT_SIZE, auditFile);
  /** The OpenAPI document as served, built on the first request for it. */
  let openApiText: string | null = null;
  /** The last snapshot text and its gzip encoding. */
  let gzipCache: { text: string; gzipped: Buffer } | null = null;
  const liveFeed = new SnapshotFeed({
    builder: new SnapshotBuilder(runtime, () => audit.entries()),
    clock,
    logger,
    ...(opts.journalSize !== undefined ? { journalSize: opts.journalSize } : {}),
    ...(opts.minRebuildIntervalMs !== undefined ? { minIntervalMs: opts.minRebuildIntervalMs } : {}),
  });
  // One summary per published snapshot, for `GET /api/v1/summary` and the `volumescope_summary` gauges alike.
  const summaries = new SummaryCache(liveFeed);
  metrics.bindSummary(() => summaries.atMostOld(METRICS_SUMMARY_MAX_AGE_MS));
  // Every part of the snapshot changes with one of these notifications (snapshot-feed.ts).
  const unsubscribers = [vm.onChange(markChanged), runtime.onChange(markChanged)];

  const streams = new EventStreams({
    feed: liveFeed,
    clock,
    logger,
    ...(opts.maxEventStreams !== undefined ? { maxStreams: opts.maxEventStreams } : {}),
    ...(opts.maxEventStreamsPerCaller !== undefined ? { maxStreamsPerCaller: opts.maxEventStreamsPerCaller } : {}),
    ...(opts.keepaliveMs !== undefined ? { keepaliveMs: opts.keepaliveMs } : {}),
  });
  const rate = opts.retryRateLimit ?? RETRY_RATE_LIMIT;
  const limiter = new SlidingWindowRateLimiter(clock, rate.limit, rate.windowMs);
  const resyncRate = opts.resyncRateLimit ?? RESYNC_RATE_LIMIT;
  const resyncLimiter = new SlidingWindowRateLimiter(clock, resyncRate.limit, resyncRate.windowMs);
  const closing = new AbortController();
  /** An action's context: the audit entries it records carry the requester's groups and the operator's note. */
  const context = (who: Requester, note: ActionNote): ActionContext => ({
    runtime,
    caller: who.caller,
    audit: audit.forRequest({ groups: who.groups, incidentId: note.incidentId ?? null, reason: note.reason ?? null }),
  });

  /** Responses not yet finished; on close they are told to close their connection afterwards. */
  const inFlight = new Set<ServerResponse>();
  let stopping = false;

  const statesSynced = (): boolean => vm.reconcilerStatesHasBeenSynced() && runtime.sourcesSynced();

  /** Reads and validates a JSON body (throws the 400/413 errors the dispatcher maps). */
  const body = async <S extends z.ZodType>(req: IncomingMessage, schema: S): Promise<z.output<S>> =>
    parseJsonRequestBody(schema, await readBody(req, MAX_REQUEST_BODY_BYTES));

  const routes: Route[] = [
    {
      ...API_ROUTES.healthz,
      handle: () => Promise.resolve(jsonAnswer(200, { status: 'ok' } satisfies HealthResponse)),
    },
    {
      ...API_ROUTES.readyz,
      handle: () =>
        Promise.resolve(
          statesSynced()
            ? jsonAnswer(200, { status: 'ok' } satisfies HealthResponse)
            : errorAnswer('not-ready', 'desired and actual states are not synced yet'),
        ),
    },
    {
      ...API_ROUTES.snapshot,
      handle: (req, res) => {
        // The cached build; a rebuild only when one is due anyway (readers cannot force rebuilds).
        const encoding = snapshotEncodingOf(req.url);
        if (encoding === null) return Promise.resolve(errorAnswer('bad-request', BAD_ENCODING_MESSAGE, { field: 'encoding' }));
        liveFeed.publishIfDue();
        const text = liveFeed.snapshotJson(encoding);
        if (acceptsGzip(req.headers['accept-encoding'])) {
          // Compressed once per snapshot version: a 10k-volume snapshot is ~6 MB of JSON, ~10 % of that gzipped.
          if (gzipCache?.text !== text) gzipCache = { text, gzipped: gzipSync(text, { level: 1 }) };
          sendGzippedJson(res, 200, gzipCache.gzipped);
        } else {
          sendJsonText(res, 200, text);
        }
        return Promise.resolve(null);
      },
    },
    { ...SUMMARY_ROUTE, handle: summaryHandler(summaries) },
    {
      ...API_ROUTES.events,
      handle: (req, res, who) => {
        // A stream opened after close() began would hold the server open forever.
        if (stopping) return Promise.resolve(errorAnswer('not-ready', 'the agent is shutting down'));
        const refusal = streams.refusal(who.caller);
        if (refusal !== null) return Promise.resolve(errorAnswer('not-ready', refusal, { headers: { 'Retry-After': String(EVENT_STREAM_RETRY_AFTER_SECONDS) } }));
        const encoding = snapshotEncodingOf(req.url);
        if (encoding === null) return Promise.resolve(errorAnswer('bad-request', BAD_ENCODING_MESSAGE, { field: 'encoding' }));
        streams.open(req, res, who.caller, encoding);
        return Promise.resolve(null);
      },
    },
    {
      ...API_ROUTES.resync,
      handle: async (req, _res, who) => {
        // The body is optional (older clients send none): empty is `{}`, else the operator's note.
        const text = await readBody(req, MAX_REQUEST_BODY_BYTES);
        const note = text.trim() === '' ? {} : parseJsonRequestBody(ResyncRequestSchema, text);
        return resync({ ...context(who, note), limiter: resyncLimiter });
      },
    },
    {
      ...API_ROUTES.retryOperation,
      handle: async (req, _res, who) => {
        const request = await body(req, RetryOperationRequestSchema);
        return retryOperation({ ...context(who, request), limiter }, request);
      },
    },
    {
      ...API_ROUTES.unmount,
      handle: async (req, _res, who) => {
        const request = await body(req, UnmountRequestSchema);
        return unmountVolume(
          {
            ...context(who, request),
            limiter,
            signal: closing.signal,
            outcomeTimeoutMs: opts.unmountOutcomeTimeoutMs ?? DEFAULT_UNMOUNT_OUTCOME_TIMEOUT_MS,
          },
          request,
        );
      },
    },
    {
      ...API_ROUTES.orphanCleanup,
      handle: async (req, _res, who) => {
        const request = await body(req, OrphanCleanupRequestSchema);
        return cleanupOrphan(context(who, request), request);
      },
    },
    {
      ...API_ROUTES.volumeBlockers,
      handle: (req) => volumeBlockers(runtime, req),
    },
    {
      ...API_ROUTES.openapi,
      handle: (_req, res) => {
        // Built on first use (it is a pure function of the contract) and kept as text.
        openApiText ??= JSON.stringify(buildOpenApiDocument());
        sendJsonText(res, 200, openApiText);
        return Promise.resolve(null);
      },
    },
    {
      ...API_ROUTES.metrics,
      handle: async (_req, res) => {
        const text = await metrics.registry.metrics();
        res.writeHead(200, { 'Content-Type': metrics.registry.contentType, 'Cache-Control': 'no-store' });
        res.end(text);
        return null;
      },
    },
  ];
  const byPath = new Map<string, Route[]>();
  for (const route of routes) byPath.set(route.path, [...(byPath.get(route.path) ?? []), route]);

  async function dispatch(req: IncomingMessage, res: ServerResponse): Promise<string> {
    const method = req.method ?? 'GET';
    const path = requestPath(req.url);
    const candidates = byPath.get(path) ?? [];
    const isPublic = candidates.length > 0 && candidates.every((route) => !route.auth);
    let caller = 'anonymous';
    let groups: readonly string[] = [];
    if (!isPublic) {
      const auth = await authenticator.authenticate(req);
      if (!auth.ok) {
        // 401 unauthenticated, 403 forbidden, 500 when the authorization check itself failed.
        if (auth.logDetail !== undefined) logger.warn('request refused: an authentication or authorization check failed', { path, reason: auth.reason, detail: auth.logDetail });
        sendAnswer(res, authFailureAnswer(auth));
        return caller;
      }
      caller = auth.caller;
      groups = auth.groups ?? [];
    }
    if (candidates.length === 0) {
      sendAnswer(res, errorAnswer('not-found', `no route ${method} ${path}`));
      return caller;
    }
    const route = candidates.find((r) => r.method === method);
    if (route === undefined) {
      const allow = candidates.map((r) => r.method).join(', ');
      sendAnswer(res, errorAnswer('method-not-allowed', `${method} is not allowed on ${path} (allowed: ${allow})`, { headers: { Allow: allow } }));
      return caller;
    }
    const answer = await route.handle(req, res, { caller, groups });
    // An action's effects (its audit entry above all) are published before its answer, so the
    // client's next read shows them. Actions are authorized and rate-limited; reads never force this.
    if (route.method === 'POST') liveFeed.flush();
    if (answer !== null) sendAnswer(res, answer);
    return caller;
  }

  async function onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = clock.monotonic();
    let caller = 'anonymous';
    inFlight.add(res);
    // While closing, no connection stays open for another request (close() waits for all of them).
    if (stopping) res.setHeader('Connection', 'close');
    res.on('close', () => {
      inFlight.delete(res);
      // A connection that went idle after close() started must not hold the server open.
      if (stopping) {
        setImmediate(() => {
          server.closeIdleConnections();
        });
      }
      logger.debug('http request', {
        method: req.method,
        path: requestPath(req.url),
        status: res.statusCode,
        caller,
        durationMs: Math.round((clock.monotonic() - started) * 1000) / 1000,
      });
    });
    try {
      caller = await dispatch(req, res);
    } catch (err) {
      if (isRequestAbortedError(err)) {
        res.destroy();
        return;
      }
      if (res.headersSent) {
        logger.error('request failed after its answer started', { path: requestPath(req.url), err: describe(err) });
        res.destroy();
        return;
      }
      if (isInvalidRequestBodyError(err)) {
        sendAnswer(res, { status: 400, body: err.toErrorBody() });
      } else if (isPayloadTooLargeError(err)) {
        // Close the connection: the rest of the body is not read.
        sendAnswer(res, errorAnswer('payload-too-large', `request body is larger than ${err.limit} bytes`, { headers: { Connection: 'close' } }));
      } else {
        logger.error('request failed', { method: req.method, path: requestPath(req.url), err: describe(err) });
        sendAnswer(res, errorAnswer('internal', 'internal error'));
      }
    }
  }

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    void onRequest(req, res);
  };
  // TLS 1.2 at least, as the kubelet's default minimum.
  const server: Server = opts.tls === undefined ? createServer(handler) : createHttpsServer({ cert: opts.tls.cert, key: opts.tls.key, minVersion: 'TLSv1.2' }, handler);

  let closed: Promise<void> | null = null;
  return {
    listen(host, port) {
      return new Promise((resolve, reject) => {
        const onError = (err: Error): void => {
          reject(err);
        };
        server.once('error', onError);
        server.listen(port, host, () => {
          server.off('error', onError);
          const address = server.address() as AddressInfo;
          logger.info('agent API listening', { host: address.address, port: address.port });
          resolve({ host: address.address, port: address.port });
        });
      });
    },
    close() {
      closed ??= new Promise<void>((resolve) => {
        stopping = true;
        for (const res of inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
        for (const unsubscribe of unsubscribers) unsubscribe();
        liveFeed.stop();
        closing.abort();
        streams.closeAll();
        const done = (): void => {
          void audit.flush().then(resolve);
        };
        if (!server.listening) {
          done();
          return;
        }
        server.close(done);
        server.closeIdleConnections();
      });
      return closed;
    },
    snapshot() {
      return liveFeed.flush();
    },
    routes() {
      return routes.map(({ method, path, auth }) => ({ method, path, auth }));
    },
  };
}

// HELPERS

/** The path of a request target, without the query; `/` for something unparsable. */
function requestPath(url: string | undefined): string {
  const target = url ?? '/';
  const end = target.search(/[?#]/);
  return end < 0 ? target : target.slice(0, end);
}

function describe(err: unknown): string {
  return err instanceof Error ? (err.stack ?? err.message) : String(err);
}
