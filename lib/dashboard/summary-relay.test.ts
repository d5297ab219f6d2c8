import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { mountPod1, startServer, TEST_TOKEN, type ServerFixture } from '../../agent/server/testing/server-fixture.ts';
import { parseSnapshot, summarizeSnapshot } from '../api/index.ts';
import { exampleSnapshot } from '../api/testing/snapshot-fixtures.ts';
import { AgentContactRegistry, type AgentProxyDeps } from './agent-proxy.ts';
import { AgentsConfigError, type AgentConfig, type AgentsConfig } from './agents-config.ts';
import { realProxyDeps } from './testing/real-proxy-deps.ts';
import { SummaryRelay, mapBounded, relaySummaries } from './summary-relay.ts';
import { AgentSummariesSchema } from './summary.ts';

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => {
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  await new Promise<void>((resolve) => {
    server.close(() => {
      resolve();
    });
  });
  return port;
}

function tokenFile(token: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'vs-relay-'));
  cleanups.push(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const path = join(dir, 'agents.token');
  writeFileSync(path, `${token}\n`);
  return path;
}

/** Deps over the real network and token files, with a controllable clock. */
function realDeps(config: () => AgentsConfig, clock = { now: 1_800_000_000_000 }): AgentProxyDeps {
  return realProxyDeps(config, { now: () => clock.now });
}

async function agentServer(): Promise<ServerFixture> {
  const fx = await startServer();
  cleanups.push(() => fx.close());
  return fx;
}

describe('the summary relay against real agents', () => {
  it("merges every agent's summary, fetched with each agent's token", async () => {
    // Arrange: node-a has a mounted pod, node-b nothing.
    const a = await agentServer();
    const b = await agentServer();
    await mountPod1(a);
    const file = tokenFile(TEST_TOKEN);
    const agents: AgentConfig[] = [
      { name: 'node-a', url: a.baseUrl, tokenFile: file },
      { name: 'node-b', url: b.baseUrl, tokenFile: file },
    ];
    const deps = realDeps(() => ({ source: 'env', agents }));

    // Act
    const res = await relaySummaries(new SummaryRelay(), deps);

    // Assert
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).not.toContain(TEST_TOKEN);
    const body = AgentSummariesSchema.parse(JSON.parse(text));
    expect(body.agents.map((e) => [e.name, e.error, e.summary?.counts.pods, e.summary?.counts.mounted])).toEqual([
      ['node-a', null, 1, 1],
      ['node-b', null, 0, 0],
    ]);
    const snapshotA = parseSnapshot((await a.client.get('/api/v1/snapshot')).json);
    expect(body.agents[0]?.summary).toEqual(summarizeSnapshot(snapshotA));
    expect(body.agents.every((e) => e.receivedAt === deps.now() && e.lastSeenAt === deps.now())).toBe(true);
    // Only summaries were asked for: no snapshot, no stream.
    expect(a.runtime.logger.lines.filter((l) => l.msg === 'http request').map((l) => l.fields.path)).not.toContain('/api/v1/events');
  });

  it('reports an agent that cannot be reached, with its last summary and when it was last seen', async () => {
    // Arrange: node-a answers once, then goes away; node-b never existed.
    const a = await agentServer();
    const file = tokenFile(TEST_TOKEN);
    const clock = { now: 1_800_000_000_000 };
    const agents: AgentConfig[] = [
      { name: 'node-a', url: a.baseUrl, tokenFile: file },
      { name: 'node-b', url: `http://127.0.0.1:${await closedPort()}`, tokenFile: file },
    ];
    const deps = realDeps(() => ({ source: 'env', agents }), clock);
    const relay = new SummaryRelay();
    const first = await relay.collect(deps);
    const seenAt = clock.now;

    // Act
    await a.close();
    clock.now += 5_000;
    const second = await relay.collect(deps);

    // Assert
    expect(first.agents[0]?.error).toBeNull();
    expect(first.agents[1]).toMatchObject({ summary: null, receivedAt: null, lastSeenAt: null, error: { code: 'agent-unreachable', since: seenAt } });
    expect(first.agents[1]?.error?.message).toMatch(/^cannot reach http:\/\/127\.0\.0\.1:\d+: /);
    expect(second.agents[0]).toMatchObject({
      summary: first.agents[0]?.summary,
      receivedAt: seenAt,
      lastSeenAt: seenAt,
      error: { code: 'agent-unreachable', since: clock.now },
    });
    expect(second.agents[1]?.error?.since).toBe(seenAt);
  });

  it('reports a rejected token without showing it', async () => {
    const a = await agentServer();
    const agents: AgentConfig[] = [{ name: 'node-a', url: a.baseUrl, tokenFile: tokenFile('not-the-token') }];

    const answer = await new SummaryRelay().collect(realDeps(() => ({ source: 'env', agents })));

    expect(answer.agents[0]?.error).toMatchObject({ code: 'agent-unauthorized' });
    expect(answer.agents[0]?.error?.message).toContain('rejected the dashboard');
    expect(JSON.stringify(answer)).not.toContain('not-the-token');
  });
});

/** Deps whose fetch is `answer`, counting requests. */
function fakeDeps(agents: AgentConfig[] | (() => AgentsConfig), answer: (url: string, signal: AbortSignal) => Promise<Response>, clock = { now: 1_000 }) {
  const requests: string[] = [];
  const deps: AgentProxyDeps = {
    config: typeof agents === 'function' ? agents : () => ({ source: 'env', agents }),
    fetch: (input, init) => {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      requests.push(url);
      return answer(url, init?.signal ?? new AbortController().signal);
    },
    readToken: () => Promise.resolve('tok'),
    now: () => clock.now,
    registry: new AgentContactRegistry(),
    onShutdown: () => () => undefined,
    connectTimeoutMs: 1_000,
    actionTimeoutMs: 1_000,
  };
  return { deps, requests, clock };
}

function nodes(count: number): AgentConfig[] {
  return Array.from({ length: count }, (_, i) => ({ name: `node-${i}`, url: `http://10.0.${Math.floor(i / 200)}.${i % 200}:7070`, tokenFile: '/t' }));
}

const jsonResponse = (status: number, body: unknown): Response => new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });

describe('the summary relay', () => {
  it('asks at most `concurrency` agents at a time', async () => {
    // Arrange: answers are released one at a time, so concurrency is whatever the relay allows.
    let inFlight = 0;
    let maxInFlight = 0;
    const waiting: (() => void)[] = [];
    const summary = summarizeSnapshot(exampleSnapshot());
    const { deps } = fakeDeps(nodes(40), async () => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise<void>((resolve) => waiting.push(resolve));
      inFlight--;
      return jsonResponse(200, summary);
    });
    const relay = new SummaryRelay({ concurrency: 16 });

    // Act: release answers as they are asked for until the round is done.
    let done = false;
    const round = relay.collect(deps).finally(() => {
      done = true;
    });
    while (!done) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      waiting.shift()?.();
    }
    const answer = await round;

    // Assert
    expect(maxInFlight).toBe(16);
    expect(answer.agents).toHaveLength(40);
    expect(answer.agents.every((e) => e.error === null)).toBe(true);
  });

  it('gives up on an agent after the timeout and reports it', async () => {
    const { deps } = fakeDeps(nodes(1), (_url, signal) =>
      new Promise<Response>((_resolve, reject) => {
        signal.addEventListener('abort', () => {
          reject(signal.reason as Error);
        });
      }),
    );

    const answer = await new SummaryRelay({ agentTimeoutMs: 50 }).collect(deps);

    expect(answer.agents[0]?.error).toMatchObject({ code: 'agent-unreachable', message: 'cannot reach http://10.0.0.0:7070: no answer in time' });
  });

  it('shares a round between requests that arrive during it or within reuseMs after it', async () => {
    const summary = summarizeSnapshot(exampleSnapshot());
    const { deps, requests, clock } = fakeDeps(nodes(3), () => Promise.resolve(jsonResponse(200, summary)));
    const relay = new SummaryRelay({ reuseMs: 1_000 });

    const [one, two] = await Promise.all([relay.collect(deps), relay.collect(deps)]);
    clock.now += 999;
    const three = await relay.collect(deps);
    clock.now += 1;
    const four = await relay.collect(deps);

    expect(two).toBe(one);
    expect(three).toBe(one);
    expect(four).not.toBe(one);
    expect(requests).toHaveLength(6);
  });

  it("summarizes an older agent's snapshot when it has no summary route", async () => {
    const snapshot = exampleSnapshot();
    const { deps, requests } = fakeDeps(nodes(1), (url) =>
      Promise.resolve(url.endsWith('/api/v1/summary') ? jsonResponse(404, { error: { code: 'not-found', message: 'no route' } }) : jsonResponse(200, snapshot)),
    );

    const answer = await new SummaryRelay().collect(deps);

    expect(answer.agents[0]?.summary).toEqual(summarizeSnapshot(snapshot));
    expect(requests).toEqual(['http://10.0.0.0:7070/api/v1/summary', 'http://10.0.0.0:7070/api/v1/snapshot']);
  });

  it("reports a refusal (403) with the agent's reason", async () => {
    const { deps } = fakeDeps(nodes(1), () => Promise.resolve(jsonResponse(403, { error: { code: 'forbidden', message: 'Forbidden (user=system:serviceaccount:vs:dashboard, verb=get)' } })));

    const answer = await new SummaryRelay().collect(deps);

    expect(answer.agents[0]?.error).toMatchObject({ code: 'agent-unauthorized' });
    expect(answer.agents[0]?.error?.message).toContain('HTTP 403: Forbidden (user=system:serviceaccount:vs:dashboard, verb=get)');
  });

  it('reports an answer that is not a summary', async () => {
    const { deps } = fakeDeps(nodes(1), () => Promise.resolve(jsonResponse(200, { nodeName: 'x' })));

    const answer = await new SummaryRelay().collect(deps);

    expect(answer.agents[0]?.error).toMatchObject({ code: 'agent-bad-response', message: 'http://10.0.0.0:7070 sent a summary that breaks the schema' });
  });

  it('forgets agents that left the configuration, and reports a malformed configuration', async () => {
    const summary = summarizeSnapshot(exampleSnapshot());
    let config: () => AgentsConfig = () => ({ source: 'kubernetes', agents: nodes(2), discovery: { namespace: 'vs', selector: 'a=b', listed: true, error: null } });
    const { deps, clock } = fakeDeps(() => config(), () => Promise.resolve(jsonResponse(200, summary)));
    const relay = new SummaryRelay({ reuseMs: 0 });

    const before = await relay.collect(deps);
    config = () => ({ source: 'kubernetes', agents: nodes(1) });
    clock.now += 1;
    const after = await relay.collect(deps);
    config = () => {
      throw new AgentsConfigError('VOLUMESCOPE_AGENTS', 'entry 1 "x" is not name=url');
    };
    clock.now += 1;
    const broken = await relay.collect(deps);

    expect(before.agents.map((e) => e.name)).toEqual(['node-0', 'node-1']);
    expect(before.discovery).toEqual({ namespace: 'vs', selector: 'a=b', listed: true, error: null });
    expect(after.agents.map((e) => e.name)).toEqual(['node-0']);
    expect(broken).toMatchObject({ agents: [], configError: 'VOLUMESCOPE_AGENTS: entry 1 "x" is not name=url' });
  });
});

describe('mapBounded', () => {
  it('keeps the order of the items, whatever order they finish in', async () => {
    const finished: number[] = [];
    const out = await mapBounded([3, 1, 2], 2, async (turns) => {
      for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
      finished.push(turns);
      return turns * 10;
    });
    expect(finished).toEqual([1, 3, 2]);
    expect(out).toEqual([30, 10, 20]);
  });

  it('handles no items', async () => {
    await expect(mapBounded([], 16, () => Promise.resolve(1))).resolves.toEqual([]);
  });
});
