import { describe, expect, it } from 'vitest';
import { encodeSnapshotEvent, normalizeSnapshot } from '../api/index.ts';
import { exampleSnapshot } from '../api/testing/snapshot-fixtures.ts';
import {
  AgentContactRegistry,
  listAgents,
  proxyAgentAction,
  proxyAgentBlockers,
  proxyAgentSnapshot,
  relayAgentEvents,
  STREAM_OPENED,
  type AgentProxyDeps,
} from './agent-proxy.ts';
import type { AgentsConfig } from './agents-config.ts';

/** The URL of a fetch input. */
function urlOf(input: string | URL | Request): string {
  return typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
}


const TOKEN = 'tok-9f2c1e7a-never-leaves-the-server';
const CONFIG: AgentsConfig = { source: 'env', agents: [{ name: 'node-a', url: 'http://10.0.0.5:7070', tokenFile: '/etc/vs/node-a.token' }] };

interface Upstream {
  url: string;
  method: string;
  headers: Headers;
  body: string | null;
  signal: AbortSignal;
}

function setup(answer: (req: Upstream) => Response | Promise<Response>) {
  const upstream: Upstream[] = [];
  const closers = new Set<() => void>();
  let now = 1_796_025_600_000;
  const deps: AgentProxyDeps = {
    config: () => CONFIG,
    fetch: async (input, init) => {
      const req: Upstream = {
        url: urlOf(input),
        method: init?.method ?? 'GET',
        headers: new Headers(init?.headers),
        body: typeof init?.body === 'string' ? init.body : null,
        signal: init?.signal ?? new AbortController().signal,
      };
      upstream.push(req);
      return answer(req);
    },
    readToken: () => Promise.resolve(TOKEN),
    now: () => now++,
    registry: new AgentContactRegistry(),
    onShutdown: (close) => {
      closers.add(close);
      return () => closers.delete(close);
    },
    connectTimeoutMs: 5_000,
    actionTimeoutMs: 30_000,
  };
  return { deps, upstream, closers };
}

/** Everything a browser could see of a response: status, every header, the whole body. */
async function visible(res: Response): Promise<string> {
  return `${res.status}\n${[...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}\n\n${await res.text()}`;
}

function sseStream(text: string, keepOpen = false): { response: Response; close: () => void } {
  let ctrl: ReadableStreamDefaultController<Uint8Array> | null = null;
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      ctrl = c;
      c.enqueue(new TextEncoder().encode(text));
      if (!keepOpen) c.close();
    },
  });
  return {
    response: new Response(body, { status: 200, headers: { 'Content-Type': 'text/event-stream' } }),
    close: () => ctrl?.close(),
  };
}

describe('the event stream relay', () => {
  const snapshotEvent = encodeSnapshotEvent(normalizeSnapshot(exampleSnapshot()));

  it('adds the agent token to the upstream request and never puts it in the response', async () => {
    // Arrange
    const { deps, upstream } = setup(() => sseStream(snapshotEvent).response);

    // Act
    const res = await relayAgentEvents(new Request('http://dash/api/agents/node-a/events'), 'node-a', deps);
    const seen = await visible(res);

    // Assert
    expect(upstream[0]?.url).toBe('http://10.0.0.5:7070/api/v1/events');
    expect(upstream[0]?.headers.get('authorization')).toBe(`Bearer ${TOKEN}`);
    expect(seen).not.toContain(TOKEN);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache, no-transform');
    expect(seen.endsWith(snapshotEvent)).toBe(true);
  });

  it.each([
    { name: 'the Last-Event-ID header', request: new Request('http://dash/x', { headers: { 'Last-Event-ID': '42' } }), expected: '42' },
    { name: 'the lastEventId query parameter', request: new Request('http://dash/x?lastEventId=7'), expected: '7' },
    { name: 'no id at all', request: new Request('http://dash/x'), expected: null },
    { name: 'an id that is not a seq (dropped, never forwarded)', request: new Request('http://dash/x', { headers: { 'Last-Event-ID': '42, 43' } }), expected: null },
  ])('forwards $name upstream', async ({ request, expected }) => {
    const { deps, upstream } = setup(() => sseStream('').response);
    await (await relayAgentEvents(request, 'node-a', deps)).text();
    expect(upstream[0]?.headers.get('last-event-id')).toBe(expected);
  });

  it('passes chunks through as they arrive, and records when the agent was last seen', async () => {
    // Arrange
    const stream = sseStream(': keepalive\n\n', true);
    const { deps } = setup(() => stream.response);
    const res = await relayAgentEvents(new Request('http://dash/x'), 'node-a', deps);
    const reader = res.body?.getReader();

    // Act
    const opened = await reader?.read();
    const first = await reader?.read();

    // Assert
    expect(opened?.value).toEqual(STREAM_OPENED);
    expect(new TextDecoder().decode(first?.value)).toBe(': keepalive\n\n');
    expect(deps.registry.get('node-a').lastSeenAt).not.toBeNull();
    stream.close();
  });

  it('sends an SSE comment at once, before the agent sends anything (a resume with nothing new)', async () => {
    // Arrange: an upstream stream that stays silent.
    const stream = sseStream('', true);
    const { deps } = setup(() => stream.response);
    const res = await relayAgentEvents(new Request('http://dash/x', { headers: { 'Last-Event-ID': '42' } }), 'node-a', deps);

    // Act
    const first = await res.body?.getReader().read();

    // Assert
    expect(new TextDecoder().decode(first?.value)).toMatch(/^: [^\n]*\n\n$/);
    stream.close();
  });

  it('a client that disconnects aborts the upstream request', async () => {
    // Arrange
    const stream = sseStream(snapshotEvent, true);
    const { deps, upstream } = setup(() => stream.response);
    const client = new AbortController();
    const res = await relayAgentEvents(new Request('http://dash/x', { signal: client.signal }), 'node-a', deps);

    // Act
    client.abort();

    // Assert
    expect(upstream[0]?.signal.aborted).toBe(true);
    await res.body?.cancel();
  });

  it('server shutdown closes open streams, so the server can exit', async () => {
    // Arrange
    const stream = sseStream(snapshotEvent, true);
    const { deps, closers, upstream } = setup(() => stream.response);
    const res = await relayAgentEvents(new Request('http://dash/x'), 'node-a', deps);
    const reader = res.body?.getReader();
    await reader?.read();

    // Act
    for (const close of [...closers]) close();
    const after = await reader?.read();

    // Assert
    expect(after?.done).toBe(true);
    expect(upstream[0]?.signal.aborted).toBe(true);
    expect(closers.size).toBe(0);
  });

  it('an unreachable agent is a 502 with the reason and when it was last seen, without the token', async () => {
    // Arrange
    const { deps } = setup(() => {
      throw new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 10.0.0.5:7070') });
    });
    deps.registry.markSeen('node-a', 1_796_025_000_000);

    // Act
    const res = await relayAgentEvents(new Request('http://dash/x'), 'node-a', deps);
    const seen = await visible(res);

    // Assert
    expect(res.status).toBe(502);
    expect(JSON.parse(seen.slice(seen.indexOf('\n\n') + 2))).toEqual({
      dashboardError: {
        code: 'agent-unreachable',
        agent: 'node-a',
        message: 'cannot reach http://10.0.0.5:7070: connect ECONNREFUSED 10.0.0.5:7070',
        lastSeenAt: 1_796_025_000_000,
      },
    });
    expect(seen).not.toContain(TOKEN);
  });

  it('an agent that rejects the token is a 502 naming the token file, not the token', async () => {
    const { deps } = setup(() => Response.json({ error: { code: 'unauthorized', message: `bad token ${TOKEN}` } }, { status: 401 }));
    const res = await relayAgentEvents(new Request('http://dash/x'), 'node-a', deps);
    const seen = await visible(res);
    expect(res.status).toBe(502);
    expect(seen).toContain('agent-unauthorized');
    expect(seen).toContain('/etc/vs/node-a.token');
    expect(seen).not.toContain(TOKEN);
  });

  it('an unknown agent is a 404 and nothing is fetched', async () => {
    const { deps, upstream } = setup(() => sseStream('').response);
    const res = await relayAgentEvents(new Request('http://dash/x'), 'node-z', deps);
    expect(res.status).toBe(404);
    expect(upstream).toEqual([]);
  });
});

describe('the snapshot and the agent list', () => {
  it('the snapshot is passed through with the token added upstream', async () => {
    const { deps, upstream } = setup(() => Response.json(exampleSnapshot()));
    const res = await proxyAgentSnapshot(new Request('http://dash/x'), 'node-a', deps);
    expect(res.status).toBe(200);
    expect(upstream[0]?.headers.get('authorization')).toBe(`Bearer ${TOKEN}`);
    expect(await visible(res)).not.toContain(TOKEN);
  });

  it('the blocker search forwards volume and podUid only, with the token, and passes the answer through', async () => {
    const { deps, upstream } = setup(() => Response.json({ error: { code: 'not-found', message: 'volume "v" is not in the actual state' } }, { status: 404 }));
    const res = await proxyAgentBlockers(new Request('http://dash/x?volume=kubernetes.io%2Fcsi%2Fd%5Ev&podUid=u1&extra=1'), 'node-a', deps);
    expect(res.status).toBe(404);
    expect(upstream.map((u) => [u.method, u.url])).toEqual([['GET', 'http://10.0.0.5:7070/api/v1/volumes/blockers?volume=kubernetes.io%2Fcsi%2Fd%5Ev&podUid=u1']]);
    expect(upstream[0]?.headers.get('authorization')).toBe(`Bearer ${TOKEN}`);
    expect(await visible(res)).not.toContain(TOKEN);
  });

  it('the agent list has names, URLs and contact times, never tokens or token files', async () => {
    const { deps } = setup(() => Response.json({}));
    const seen = await visible(listAgents(deps));
    expect(seen).toContain('"name":"node-a"');
    expect(seen).not.toContain(TOKEN);
    expect(seen).not.toContain('node-a.token');
  });
});

describe('actions', () => {
  const json = (body: unknown, headers: Record<string, string> = {}) =>
    new Request('http://dash/x', { method: 'POST', headers: { 'Content-Type': 'application/json', Host: 'dash', ...headers }, body: JSON.stringify(body) });

  it('an unmount is validated, forwarded with the token, and the agent’s 409 refusal comes back whole', async () => {
    // Arrange
    const refusal = { error: { code: 'conflict', message: 'pod a still wants volume pgdata', checks: [{ name: 'pod-not-desired', ok: false, detail: 'pod default/db-0 is in the desired state' }] } };
    const { deps, upstream } = setup(() => Response.json(refusal, { status: 409 }));

    // Act
    const res = await proxyAgentAction(json({ podUid: 'a', volume: 'v' }), 'node-a', 'unmount', deps);

    // Assert
    expect(upstream[0]).toMatchObject({ url: 'http://10.0.0.5:7070/api/v1/unmount', method: 'POST', body: '{"podUid":"a","volume":"v"}' });
    expect(upstream[0]?.headers.get('authorization')).toBe(`Bearer ${TOKEN}`);
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual(refusal);
  });

  it('an orphan cleanup is validated and forwarded to /api/v1/orphans/cleanup with the token; an unknown field is a 400', async () => {
    const planned = { podUid: 'o1', outcome: 'planned', unmounts: ['/var/lib/kubelet/pods/o1/volumes/x'], removals: [], kept: [], failures: [], checks: [] };
    const { deps, upstream } = setup(() => Response.json(planned));
    const res = await proxyAgentAction(json({ podUid: 'o1', dryRun: true }), 'node-a', 'orphan-cleanup', deps);
    expect(upstream[0]).toMatchObject({ url: 'http://10.0.0.5:7070/api/v1/orphans/cleanup', method: 'POST', body: '{"podUid":"o1","dryRun":true}' });
    expect(upstream[0]?.headers.get('authorization')).toBe(`Bearer ${TOKEN}`);
    expect([res.status, await res.json()]).toEqual([200, planned]);

    const bad = await proxyAgentAction(json({ podUid: 'o1', force: true }), 'node-a', 'orphan-cleanup', deps);
    expect(bad.status).toBe(400);
    expect(upstream).toHaveLength(1);
  });

  it('a retry body that breaks the schema is a 400 naming the field, and nothing is forwarded', async () => {
    const { deps, upstream } = setup(() => Response.json({}));
    const res = await proxyAgentAction(json({ volume: 'v', podUid: 5 }), 'node-a', 'retry', deps);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { code: 'bad-request', field: 'podUid' } });
    expect(upstream).toEqual([]);
  });

  it('a resync needs no body and returns the agent’s answer', async () => {
    const { deps, upstream } = setup(() => Response.json({ changes: [] }));
    const res = await proxyAgentAction(new Request('http://dash/x', { method: 'POST' }), 'node-a', 'resync', deps);
    expect(res.status).toBe(200);
    expect(upstream[0]?.url).toBe('http://10.0.0.5:7070/api/v1/resync');
  });

  it.each([
    { name: 'a cross-site fetch', headers: { 'Sec-Fetch-Site': 'cross-site' } },
    { name: 'an Origin that is not this host', headers: { Origin: 'https://evil.example' } },
  ] as { name: string; headers: Record<string, string> }[])('$name is refused with 403 before anything reaches the agent', async ({ headers }) => {
    const { deps, upstream } = setup(() => Response.json({}));
    const res = await proxyAgentAction(json({ podUid: 'a', volume: 'v' }, headers), 'node-a', 'unmount', deps);
    expect(res.status).toBe(403);
    expect(upstream).toEqual([]);
  });

  it('a body that is not JSON-typed is refused (a plain form cannot unmount)', async () => {
    const { deps, upstream } = setup(() => Response.json({}));
    const res = await proxyAgentAction(new Request('http://dash/x', { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: '{"podUid":"a","volume":"v"}' }), 'node-a', 'unmount', deps);
    expect(res.status).toBe(400);
    expect(upstream).toEqual([]);
  });
});
