/**
 * The dashboard server's side of every agent request: it resolves the agent by name, adds the
 * agent's bearer token, and relays the answer. The browser talks only to these handlers, so no
 * token ever reaches it. Server-only; the route handlers in `app/api/agents/` are thin wrappers.
 *
 * - `relayAgentEvents`: `GET /api/agents/<name>/events`, the agent's SSE stream passed through
 *   chunk by chunk (no buffering), with the client's `Last-Event-ID` unchanged; a client
 *   disconnect aborts the upstream request, and server shutdown closes the stream. Open streams
 *   are capped per agent and per user (stream-limits.ts: 503 + `Retry-After` beyond).
 * - `proxyAgentSnapshot`: `GET /api/agents/<name>/snapshot`.
 * - `proxyAgentAction`: `POST /api/agents/<name>/{resync,operations/retry,unmount,orphans/cleanup}`; the body is
 *   read while streaming with the agent's 64 KiB cap (413 beyond, never read whole first) and
 *   validated with the contract's schemas, the agent's answer (including a 409 with its
 *   checks) is passed through with its status.
 * - `listAgents`: `GET /api/agents`, names, URLs and when each was last seen.
 *
 * When the agent cannot answer, the handlers answer with the dashboard's own error shape
 * (`AgentUnavailableError`), including when this server last heard from the agent.
 */
import {
  API_ROUTES,
  MAX_REQUEST_BODY_BYTES,
  OrphanCleanupRequestSchema,
  ResyncRequestSchema,
  RetryOperationRequestSchema,
  UnmountRequestSchema,
  isInvalidRequestBodyError,
  parseJsonRequestBody,
  safeParseSnapshot,
  agentApiErrorFromResponse,
  apiErrorBody,
  formatSseComment,
  normalizeSnapshot,
  type Snapshot,
} from '../api/index.ts';
import { findAgent, isAgentsConfigError, type AgentConfig, type AgentsConfig } from './agents-config.ts';
import { AgentUnavailableError, isAgentUnavailableError } from './dashboard-error.ts';
import { describeFetchError } from './fetch-error.ts';
import { isBodyNotUtf8Error, isBodyTooLargeError, readBodyWithLimit } from './request-body-limit.ts';
import { StreamLimits } from './stream-limits.ts';

// TYPES

/** What this server remembers about an agent between requests. */
export interface AgentContact {
  /** When bytes last came from the agent (this server's clock); `null` if never. */
  lastSeenAt: number | null;
  /** The last failure reaching it; `null` when the last attempt succeeded. */
  lastError: string | null;
}

/** Per-agent contact times, shared by every request of this server process. */
export class AgentContactRegistry {
  private readonly contacts = new Map<string, AgentContact>();

  /** Records bytes from the agent at `at`; clears its last error. */
  markSeen(agent: string, at: number): void {
    this.contacts.set(agent, { lastSeenAt: at, lastError: null });
  }

  /** Records a failure to reach the agent. */
  markFailed(agent: string, message: string): void {
    this.contacts.set(agent, { lastSeenAt: this.get(agent).lastSeenAt, lastError: message });
  }

  /** What is known about the agent (never seen: both `null`). */
  get(agent: string): AgentContact {
    return this.contacts.get(agent) ?? { lastSeenAt: null, lastError: null };
  }
}

/** An operator action the dashboard proxies. */
export type AgentAction = 'resync' | 'retry' | 'unmount' | 'orphan-cleanup';

/** Everything the handlers need from the outside; injected so tests need no network or files. */
export interface AgentProxyDeps {
  /** The current agent configuration (may throw `AgentsConfigError`). */
  readonly config: () => AgentsConfig;
  readonly fetch: typeof fetch;
  /** Reads an agent's token (default: its token file). */
  readonly readToken: (agent: AgentConfig) => Promise<string>;
  /** This server's clock (epoch ms). */
  readonly now: () => number;
  readonly registry: AgentContactRegistry;
  /** Registers a stream closer run at server shutdown; returns its unregister function. */
  readonly onShutdown: (close: () => void) => () => void;
  /** How long to wait for the agent's response headers. */
  readonly connectTimeoutMs: number;
  /** How long an action may take in total (TearDown can be slow). */
  readonly actionTimeoutMs: number;
  /** Caps on relayed event streams per agent and per user; absent: the process's (stream-limits.ts defaults). */
  readonly streamLimits?: StreamLimits;
  /**
   * Who a request is from, for the per-user stream cap (the logged-in user's name); absent or
   * null: no per-user cap (only the per-agent one).
   */
  readonly requestUser?: (req: Request) => string | null | Promise<string | null>;
}

/** Headers of every relayed event stream. */
const SSE_RESPONSE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  // no-transform: Next must not compress (and so buffer) the stream; proxies must not either.
  'Cache-Control': 'no-cache, no-transform',
  'X-Accel-Buffering': 'no',
};

const JSON_HEADERS = { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' };

// HELPERS

function jsonResponse(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: JSON_HEADERS });
}

/** The response for an error thrown while handling an agent request. */
function errorResponse(err: unknown, agent: string): Response {
  if (isAgentUnavailableError(err)) return jsonResponse(err.status, err.toBody());
  if (isAgentsConfigError(err)) {
    return jsonResponse(502, new AgentUnavailableError('agent-misconfigured', agent, err.message).toBody());
  }
  if (isInvalidRequestBodyError(err)) return jsonResponse(400, err.toErrorBody());
  if (isBodyNotUtf8Error(err)) return jsonResponse(400, apiErrorBody('bad-request', err.message, { field: 'body' }));
  // The rest of the body is not read: tell the client the connection is done.
  if (isBodyTooLargeError(err)) return new Response(JSON.stringify(apiErrorBody('payload-too-large', err.message)), { status: 413, headers: { ...JSON_HEADERS, Connection: 'close' } });
  throw err;
}

function resolveAgent(deps: AgentProxyDeps, name: string): AgentConfig {
  const agent = findAgent(deps.config(), name);
  if (agent === null) throw new AgentUnavailableError('unknown-agent', name, `no agent named ${JSON.stringify(name)} is configured`);
  return agent;
}

/** A short reason for a failed fetch; a timeout or abort says what it was (the proxy's own abort names its limit). */
function fetchFailure(err: unknown): string {
  return describeFetchError(err, (e) => (e.name === 'TimeoutError' || e.name === 'AbortError' ? (e.message !== '' ? e.message : 'timed out') : null));
}

function unavailable(deps: AgentProxyDeps, agent: string, code: 'agent-unreachable' | 'agent-unauthorized' | 'agent-bad-response', message: string): AgentUnavailableError {
  deps.registry.markFailed(agent, message);
  return new AgentUnavailableError(code, agent, message, deps.registry.get(agent).lastSeenAt);
}

/**
 * Fetches `path` from the agent with its token. Network failures, timeouts and 401 become an
 * `AgentUnavailableError`; any other HTTP answer is returned (and counts as contact).
 */
async function agentFetch(
  deps: AgentProxyDeps,
  agent: AgentConfig,
  path: string,
  init: { method: 'GET' | 'POST'; headers?: Record<string, string>; body?: string; signal: AbortSignal },
): Promise<Response> {
  const token = await deps.readToken(agent);
  let response: Response;
  try {
    response = await deps.fetch(`${agent.url}${path}`, {
      method: init.method,
      headers: { ...init.headers, Authorization: `Bearer ${token}` },
      ...(init.body !== undefined ? { body: init.body } : {}),
      signal: init.signal,
      cache: 'no-store',
      redirect: 'manual',
    });
  } catch (err) {
    throw unavailable(deps, agent.name, 'agent-unreachable', `cannot reach ${agent.url}: ${fetchFailure(err)}`);
  }
  deps.registry.markSeen(agent.name, deps.now());
  if (response.status === 401) {
    await response.body?.cancel();
    throw unavailable(deps, agent.name, 'agent-unauthorized', `${agent.url} rejected the dashboard's token (401): a logged-in user's token the API server does not accept (for OIDC: the issuer must be configured there), or, for the local session, check the token file ${agent.tokenFile}`);
  }
  return response;
}

async function readJson(deps: AgentProxyDeps, agent: AgentConfig, response: Response): Promise<unknown> {
  const text = await response.text();
  try {
    return JSON.parse(text);
  } catch {
    throw unavailable(deps, agent.name, 'agent-bad-response', `${agent.url} answered HTTP ${response.status} that is not JSON`);
  }
}

// HANDLERS

/** `GET /api/agents`: each configured agent's name, URL and contact. */
export function listAgents(deps: AgentProxyDeps): Response {
  const config = deps.config();
  return jsonResponse(200, {
    agents: config.agents.map((a) => ({ name: a.name, url: a.url, ...deps.registry.get(a.name) })),
  });
}

/**
 * A usable `Last-Event-ID`, from the header or `?lastEventId=`, passed on unchanged: the stream's
 * own ids `<startedAt>.<seq>` (what the agent resumes from), or a bare seq from older clients;
 * `null` for none or anything else (never forwarded).
 */
export function requestedLastEventId(req: Request): string | null {
  const raw = req.headers.get('last-event-id') ?? new URL(req.url).searchParams.get('lastEventId');
  return raw !== null && /^(?:[0-9]{1,15}\.)?[0-9]{1,16}$/.test(raw) ? raw : null;
}

/** The process's stream caps when the deps bring none. */
function processStreamLimits(): StreamLimits {
  const g = globalThis as ServerGlobals;
  g.__volumescopeStreamLimits ??= new StreamLimits();
  return g.__volumescopeStreamLimits;
}

/**
 * `GET /api/agents/<name>/events`: relays the agent's event stream. The upstream request carries
 * the token and the client's `Last-Event-ID`; the response carries only the agent's stream bytes.
 */
/** The relay's first chunk: an SSE comment (see relayAgentEvents). */
export const STREAM_OPENED = new TextEncoder().encode(formatSseComment('connected to the agent'));

export async function relayAgentEvents(req: Request, name: string, deps: AgentProxyDeps): Promise<Response> {
  // The caps first: a refused stream costs no agent connection.
  const slot = (deps.streamLimits ?? processStreamLimits()).acquire(name, (await deps.requestUser?.(req)) ?? null);
  if (!slot.ok) {
    return new Response(JSON.stringify(apiErrorBody('not-ready', slot.message)), { status: 503, headers: { ...JSON_HEADERS, 'Retry-After': String(slot.retryAfterSeconds) } });
  }
  const upstreamAbort = new AbortController();
  const onClientAbort = (): void => {
    upstreamAbort.abort();
  };
  req.signal.addEventListener('abort', onClientAbort, { once: true });
  const connectTimer = setTimeout(() => {
    upstreamAbort.abort(new DOMException(`no answer within ${deps.connectTimeoutMs} ms`, 'TimeoutError'));
  }, deps.connectTimeoutMs);
  let upstream: Response;
  let agent: AgentConfig;
  try {
    agent = resolveAgent(deps, name);
    const lastEventId = requestedLastEventId(req);
    upstream = await agentFetch(deps, agent, API_ROUTES.events.path, {
      method: 'GET',
      headers: { Accept: 'text/event-stream', ...(lastEventId !== null ? { 'Last-Event-ID': lastEventId } : {}) },
      signal: upstreamAbort.signal,
    });
    if (!upstream.ok || upstream.body === null || !(upstream.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      const status = upstream.status;
      await upstream.body?.cancel();
      throw unavailable(deps, agent.name, 'agent-bad-response', `${agent.url} answered the event stream with HTTP ${status}`);
    }
  } catch (err) {
    clearTimeout(connectTimer);
    req.signal.removeEventListener('abort', onClientAbort);
    slot.release();
    return errorResponse(err, name);
  } finally {
    clearTimeout(connectTimer);
  }

  const reader = upstream.body.getReader();
  let unregister: (() => void) | null = null;
  let finished = false;
  const finish = (): void => {
    if (finished) return;
    finished = true;
    slot.release();
    unregister?.();
    req.signal.removeEventListener('abort', onClientAbort);
    upstreamAbort.abort();
  };
  const stream = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        // Bytes at once, so the server sends the response now: an agent resuming a stream with
        // nothing new sends nothing until its next keepalive (15 s), and until the first bytes
        // the browser has no response and the page says "connecting…". Clients ignore comments.
        controller.enqueue(STREAM_OPENED);
        unregister = deps.onShutdown(() => {
          finish();
          try {
            controller.close();
          } catch {
            // already closed
          }
        });
      },
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) {
            finish();
            deps.registry.markFailed(name, `${agent.url} ended the event stream`);
            controller.close();
            return;
          }
          deps.registry.markSeen(name, deps.now());
          controller.enqueue(value);
        } catch (err) {
          const clientLeft = req.signal.aborted || finished;
          finish();
          if (!clientLeft) deps.registry.markFailed(name, `event stream from ${agent.url} broke: ${fetchFailure(err)}`);
          try {
            controller.close();
          } catch {
            // already closed by shutdown or cancel
          }
        }
      },
      cancel() {
        finish();
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(stream, { status: 200, headers: SSE_RESPONSE_HEADERS });
}

/** `GET /api/agents/<name>/snapshot`: the agent's snapshot, passed through. */
export async function proxyAgentSnapshot(req: Request, name: string, deps: AgentProxyDeps): Promise<Response> {
  try {
    const agent = resolveAgent(deps, name);
    const signal = AbortSignal.any([req.signal, AbortSignal.timeout(deps.actionTimeoutMs)]);
    const response = await agentFetch(deps, agent, API_ROUTES.snapshot.path, { method: 'GET', headers: { Accept: 'application/json' }, signal });
    return jsonResponse(response.status, await readJson(deps, agent, response));
  } catch (err) {
    return errorResponse(err, name);
  }
}

/**
 * `GET /api/agents/<name>/volumes/blockers?volume=…&podUid=…`: the agent's blocker search, with
 * only those two query parameters forwarded; its answer (200, 400, 404) passed through.
 */
export async function proxyAgentBlockers(req: Request, name: string, deps: AgentProxyDeps): Promise<Response> {
  try {
    const agent = resolveAgent(deps, name);
    const incoming = new URL(req.url).searchParams;
    const query = new URLSearchParams();
    for (const key of ['volume', 'podUid']) {
      const value = incoming.get(key);
      if (value !== null) query.set(key, value);
    }
    const signal = AbortSignal.any([req.signal, AbortSignal.timeout(deps.actionTimeoutMs)]);
    const response = await agentFetch(deps, agent, `${API_ROUTES.volumeBlockers.path}?${query.toString()}`, { method: 'GET', headers: { Accept: 'application/json' }, signal });
    return jsonResponse(response.status, await readJson(deps, agent, response));
  } catch (err) {
    return errorResponse(err, name);
  }
}

/**
 * Whether a request to an action comes from another site (a page elsewhere must not make the
 * operator's browser unmount volumes): `Sec-Fetch-Site` must be `same-origin` (or absent, for
 * curl), and an `Origin`, when sent, must match the `Host`.
 */
export function isCrossSiteRequest(req: Request): boolean {
  const site = req.headers.get('sec-fetch-site');
  const origin = req.headers.get('origin');
  const host = req.headers.get('host');
  let crossSite = site !== null && site !== 'same-origin' && site !== 'none';
  if (!crossSite && origin !== null && host !== null) {
    try {
      crossSite = new URL(origin).host !== host;
    } catch {
      crossSite = true;
    }
  }
  return crossSite;
}

/** Refuses cross-site requests to an action ({@link isCrossSiteRequest}). */
function checkSameOrigin(req: Request, agent: string): void {
  if (isCrossSiteRequest(req)) throw new AgentUnavailableError('forbidden', agent, 'actions are accepted only from the dashboard itself');
}


/** The agent route of each action. */
const actionRoutes = {
  resync: API_ROUTES.resync,
  retry: API_ROUTES.retryOperation,
  unmount: API_ROUTES.unmount,
  'orphan-cleanup': API_ROUTES.orphanCleanup,
} as const satisfies Record<AgentAction, { path: string }>;

/** The validated body of an action (throws the 400 error `parseJsonRequestBody` throws). */
function parseActionBody(action: AgentAction, text: string): unknown {
  switch (action) {
    case 'resync':
      return parseJsonRequestBody(ResyncRequestSchema, text);
    case 'retry':
      return parseJsonRequestBody(RetryOperationRequestSchema, text);
    case 'unmount':
      return parseJsonRequestBody(UnmountRequestSchema, text);
    case 'orphan-cleanup':
      return parseJsonRequestBody(OrphanCleanupRequestSchema, text);
  }
}

/**
 * `POST /api/agents/<name>/{resync,operations/retry,unmount,orphans/cleanup}`: validates the body, forwards it
 * with the token, and passes the agent's JSON answer through with its status (200, 404, 409 with
 * `checks`, 503, …). A bad body is answered 400 here, in the agent's error shape.
 */
export async function proxyAgentAction(req: Request, name: string, action: AgentAction, deps: AgentProxyDeps): Promise<Response> {
  try {
    checkSameOrigin(req, name);
    const agent = resolveAgent(deps, name);
    let body: string | undefined;
    // Read while streaming, with the agent's cap: a larger body is a 413 once the cap is passed.
    const text = await readBodyWithLimit(req, MAX_REQUEST_BODY_BYTES);
    // Resync's body (the operator's note) is optional; the other actions need one.
    if (action !== 'resync' || text.trim() !== '') {
      if (!(req.headers.get('content-type') ?? '').startsWith('application/json')) {
        return jsonResponse(400, apiErrorBody('bad-request', 'body: Content-Type must be application/json', { field: 'body' }));
      }
      body = JSON.stringify(parseActionBody(action, text));
    }
    const route = actionRoutes[action];
    const signal = AbortSignal.any([req.signal, AbortSignal.timeout(deps.actionTimeoutMs)]);
    const response = await agentFetch(deps, agent, route.path, {
      method: 'POST',
      headers: { Accept: 'application/json', ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
      ...(body !== undefined ? { body } : {}),
      signal,
    });
    return jsonResponse(response.status, await readJson(deps, agent, response));
  } catch (err) {
    return errorResponse(err, name);
  }
}

// PROCESS WIRING

interface ServerGlobals {
  __volumescopeRegistry?: AgentContactRegistry;
  __volumescopeStreamLimits?: StreamLimits;
  __volumescopeClosers?: Set<() => void>;
}

/**
 * Runs every registered closer on SIGTERM/SIGINT, so `next start` can exit while event streams
 * are open (it otherwise waits for the clients to leave). Installed once per process.
 */
export function onServerShutdown(close: () => void): () => void {
  const g = globalThis as ServerGlobals;
  if (g.__volumescopeClosers === undefined) {
    const closers = new Set<() => void>();
    g.__volumescopeClosers = closers;
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      process.once(signal, () => {
        for (const c of [...closers]) c();
      });
    }
  }
  const closers = g.__volumescopeClosers;
  closers.add(close);
  return () => {
    closers.delete(close);
  };
}

/** The contact registry of this server process. */
export function serverContactRegistry(): AgentContactRegistry {
  const g = globalThis as ServerGlobals;
  g.__volumescopeRegistry ??= new AgentContactRegistry();
  return g.__volumescopeRegistry;
}

/**
 * The agent's snapshot, for server-side rendering (prefetch and not-found checks). Throws an
 * `AgentUnavailableError` (unknown, unreachable, bad answer) or the agent's `AgentApiError`.
 */
export async function fetchAgentSnapshot(name: string, deps: AgentProxyDeps, signal?: AbortSignal): Promise<Snapshot> {
  const agent = resolveAgent(deps, name);
  const timeout = AbortSignal.timeout(deps.connectTimeoutMs);
  const response = await agentFetch(deps, agent, API_ROUTES.snapshot.path, {
    method: 'GET',
    headers: { Accept: 'application/json' },
    signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
  });
  const json = await readJson(deps, agent, response);
  if (!response.ok) throw agentApiErrorFromResponse(response.status, json);
  const parsed = safeParseSnapshot(json);
  if (!parsed.success) throw unavailable(deps, agent.name, 'agent-bad-response', `${agent.url} sent a snapshot that breaks the schema`);
  return normalizeSnapshot(parsed.data);
}
