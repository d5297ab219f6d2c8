/**
 * The dashboard relay against a real agent server over real HTTP (the agent's server code
 * in-process on 127.0.0.1, the relay's handlers called with web Requests as Next calls them):
 * resuming a stream through the relay with `Last-Event-ID` gets deltas, not a new snapshot; an
 * action's operator note reaches the agent's audit; and the attack cases — a 100 MB body is
 * refused with 413 while streaming, with no memory growth, and 1,000 stream connections are
 * capped with 503 + Retry-After.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ApiErrorBodySchema, createSseParser, parseSnapshot, streamEventId, type SseMessage, type Snapshot } from '../api/index.ts';
import { startServer, TEST_TOKEN, type ServerFixture } from '../../agent/server/testing/server-fixture.ts';
import { AgentContactRegistry, proxyAgentAction, relayAgentEvents, type AgentProxyDeps } from './agent-proxy.ts';
import { StreamLimits } from './stream-limits.ts';

/** Reads a relayed SSE response until `count` events arrived; then cancels it. */
async function readEvents(res: Response, count: number): Promise<SseMessage[]> {
  const events: SseMessage[] = [];
  const parser = createSseParser((m) => {
    events.push(m);
  });
  const reader = res.body?.getReader();
  if (reader === undefined) throw new Error('no body');
  const decoder = new TextDecoder();
  while (events.length < count) {
    const { done, value } = await reader.read();
    if (done) break;
    parser.push(decoder.decode(value, { stream: true }));
  }
  await reader.cancel();
  return events;
}

describe('the dashboard relay against a real agent', () => {
  let fx: ServerFixture | undefined;
  const closers: (() => void)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) close();
    await fx?.close();
    fx = undefined;
  });

  const setup = async (extra: Partial<AgentProxyDeps> = {}) => {
    fx = await startServer();
    const agentUrl = fx.baseUrl;
    let upstreamCalls = 0;
    const deps: AgentProxyDeps = {
      config: () => ({ source: 'env', agents: [{ name: 'node-a', url: agentUrl, tokenFile: '/unused' }] }),
      fetch: (input, init) => {
        upstreamCalls++;
        return fetch(input, init);
      },
      readToken: () => Promise.resolve(TEST_TOKEN),
      now: () => Date.now(),
      registry: new AgentContactRegistry(),
      onShutdown: (close) => {
        closers.push(close);
        return () => undefined;
      },
      connectTimeoutMs: 5_000,
      actionTimeoutMs: 30_000,
      ...extra,
    };
    return { f: fx, deps, upstreamCalls: () => upstreamCalls };
  };

  it('resumes through the relay: a reconnect with Last-Event-ID <startedAt>.<seq> gets the deltas since, not a snapshot', async () => {
    const { f, deps } = await setup();
    const first = await relayAgentEvents(new Request('http://dash/api/agents/node-a/events'), 'node-a', deps);
    const [opening] = await readEvents(first, 1);
    expect(opening?.event).toBe('snapshot');
    const seen: Snapshot = parseSnapshot(JSON.parse(opening?.data ?? 'null'));
    expect(opening?.id).toBe(streamEventId(seen.agent.startedAt, seen.seq));
    // While the client is away, three changes are published (read: with no stream subscribed the
    // agent publishes a change when it is read).
    for (const reason of ['A', 'B', 'C']) {
      f.runtime.emitEvent({ type: 'Normal', reason, podUid: null, message: '' });
      await f.harness.clock.advance(0);
      f.server.snapshot();
    }

    const resumed = await relayAgentEvents(new Request('http://dash/api/agents/node-a/events', { headers: { 'Last-Event-ID': opening?.id ?? '' } }), 'node-a', deps);
    const events = await readEvents(resumed, 3);

    expect(resumed.status).toBe(200);
    expect(events.map((e) => e.event)).toEqual(['delta', 'delta', 'delta']);
    expect(events.map((e) => e.id)).toEqual([1, 2, 3].map((n) => streamEventId(seen.agent.startedAt, seen.seq + n)));
  });

  it('carries the operator note of an action to the agent audit', async () => {
    const { f, deps } = await setup();

    const res = await proxyAgentAction(
      new Request('http://dash/api/agents/node-a/resync', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ incidentId: 'INC-9', reason: 'after reboot' }) }),
      'node-a',
      'resync',
      deps,
    );
    const audit = f.server.snapshot().audit;

    expect(res.status).toBe(200);
    expect(audit.at(-1)).toMatchObject({ action: 'resync', caller: 'test-client', incidentId: 'INC-9', reason: 'after reboot' });
  });

  it('refuses a 100 MB action body with 413 while it streams: the agent is never called and memory does not grow by the body', async () => {
    const { deps, upstreamCalls } = await setup();
    const chunk = new Uint8Array(1024 * 1024).fill(0x61);
    let sent = 0;
    // Streamed from a generator: the test never holds the 100 MB either.
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 100) {
          controller.close();
          return;
        }
        sent++;
        controller.enqueue(chunk);
      },
    });
    const before = process.memoryUsage();

    const res = await proxyAgentAction(
      new Request('http://dash/api/agents/node-a/unmount', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body, duplex: 'half' } as RequestInit),
      'node-a',
      'unmount',
      deps,
    );
    const after = process.memoryUsage();

    expect(res.status).toBe(413);
    expect(ApiErrorBodySchema.parse(await res.json()).error.code).toBe('payload-too-large');
    expect(upstreamCalls()).toBe(0);
    expect(sent).toBeLessThan(5); // stopped after the cap, not read to the end
    expect(after.heapUsed - before.heapUsed).toBeLessThan(20 * 1024 * 1024);
    expect(after.rss - before.rss).toBeLessThan(40 * 1024 * 1024);
  });

  it('refuses a declared Content-Length over the cap before reading anything', async () => {
    const { deps, upstreamCalls } = await setup();
    let pulled = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        controller.enqueue(new Uint8Array(1024));
      },
    });

    const res = await proxyAgentAction(
      new Request('http://dash/api/agents/node-a/unmount', { method: 'POST', headers: { 'Content-Type': 'application/json', 'Content-Length': String(100 * 1024 * 1024) }, body, duplex: 'half' } as RequestInit),
      'node-a',
      'unmount',
      deps,
    );

    expect(res.status).toBe(413);
    expect(upstreamCalls()).toBe(0);
    expect(pulled).toBeLessThanOrEqual(1);
  });

  it('caps 1,000 stream connections of one user: the first 32 relay, the rest get 503 with Retry-After and never reach the agent', async () => {
    const limits = new StreamLimits(200, 32);
    const { deps, upstreamCalls } = await setup({ streamLimits: limits, requestUser: () => 'mallory' });
    const aborts: AbortController[] = [];

    const responses = await Promise.all(
      Array.from({ length: 1000 }, () => {
        const abort = new AbortController();
        aborts.push(abort);
        return relayAgentEvents(new Request('http://dash/api/agents/node-a/events', { signal: abort.signal }), 'node-a', deps);
      }),
    );
    const statuses = responses.map((r) => r.status);

    expect(statuses.filter((s) => s === 200)).toHaveLength(32);
    expect(statuses.filter((s) => s === 503)).toHaveLength(968);
    expect(responses.find((r) => r.status === 503)?.headers.get('retry-after')).toBe('10');
    expect(upstreamCalls()).toBe(32);
    expect(limits.openForUser('mallory')).toBe(32);
    // Closing the streams gives the slots back.
    for (const r of responses) await r.body?.cancel();
    for (const a of aborts) a.abort();
    expect(limits.openForUser('mallory')).toBe(0);
  });

  it('caps streams per agent across users', async () => {
    const limits = new StreamLimits(5, 32);
    let n = 0;
    const { deps } = await setup({ streamLimits: limits, requestUser: () => `user-${n++}` });

    const responses = await Promise.all(Array.from({ length: 8 }, () => relayAgentEvents(new Request('http://dash/api/agents/node-a/events'), 'node-a', deps)));

    expect(responses.map((r) => r.status).filter((s) => s === 503)).toHaveLength(3);
    for (const r of responses) await r.body?.cancel();
  });
});
