import { describe, expect, it } from 'vitest';
import type { RecentEvent } from '../api/index.ts';
import { exampleSnapshot, FIXTURE_T0 } from '../api/testing/snapshot-fixtures.ts';
import { AgentContactRegistry, type AgentProxyDeps } from './agent-proxy.ts';
import { AgentsConfigError, type AgentsConfig } from './agents-config.ts';
import { matchPods, PodSearchAnswerSchema } from './pod-search.ts';
import { relayPodSearch, searchPods } from './pod-search-relay.ts';

const GONE = '0d4f8e7a-1b2c-4d3e-8f9a-0b1c2d3e4f50';
const goneEvent: RecentEvent = { time: FIXTURE_T0, type: 'Warning', reason: 'FailedMount', podUid: GONE, message: 'm', podNamespace: 'default', podName: 'db-old' };
const snapshot = { ...exampleSnapshot(), recentEvents: [goneEvent] };

function deps(config: () => AgentsConfig): AgentProxyDeps {
  return {
    config,
    fetch: (input) =>
      (input instanceof Request ? input.url : input.toString()).startsWith('http://a.test')
        ? Promise.resolve(new Response(JSON.stringify(snapshot), { status: 200, headers: { 'Content-Type': 'application/json' } }))
        : Promise.reject(new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 10.0.0.6:7070') })),
    readToken: () => Promise.resolve('token'),
    now: () => FIXTURE_T0,
    registry: new AgentContactRegistry(),
    onShutdown: () => () => undefined,
    connectTimeoutMs: 1_000,
    actionTimeoutMs: 1_000,
  };
}

const twoAgents = (): AgentsConfig => ({
  source: 'env',
  agents: [
    { name: 'node-a', url: 'http://a.test:7070', tokenFile: '/t' },
    { name: 'node-b', url: 'http://b.test:7070', tokenFile: '/t' },
  ],
});

describe('matchPods', () => {
  it('finds pods by part of namespace/name, case-insensitively, desired ones first, gone ones named by their events', () => {
    expect(matchPods('node-a', snapshot, 'DB')).toEqual([
      { node: 'node-a', uid: 'a7d9e3b1-6c45-4b8a-8f2d-0e1c9b7a5d33', name: 'default/db-0', desired: true },
      { node: 'node-a', uid: GONE, name: 'default/db-old', desired: false },
    ]);
  });

  it('finds a pod by its UID, and nothing for blank text', () => {
    expect(matchPods('node-a', snapshot, '5c0a4c2e').map((m) => m.name)).toEqual(['default/web-0']);
    expect(matchPods('node-a', snapshot, '  ')).toEqual([]);
  });
});

describe('searchPods', () => {
  it('searches every node and reports the ones that cannot be asked', async () => {
    const answer = await searchPods(deps(twoAgents), 'web');
    expect(answer.matches).toEqual([{ node: 'node-a', uid: '5c0a4c2e-0d3b-4f0e-9a51-2f6f1f3c7e10', name: 'default/web-0', desired: true }]);
    expect(answer.truncated).toBe(false);
    expect(answer.failed).toHaveLength(1);
    expect(answer.failed[0]?.node).toBe('node-b');
    expect(answer.failed[0]?.message).toContain('ECONNREFUSED');
  });
});

describe('relayPodSearch', () => {
  it('answers the search as JSON of its schema', async () => {
    const response = await relayPodSearch(new Request('http://dash.test/api/agents/pods?q=db-0'), deps(twoAgents));
    expect(response.status).toBe(200);
    const body = PodSearchAnswerSchema.parse(await response.json());
    expect(body.matches.map((m) => `${m.node} ${m.name}`)).toEqual(['node-a default/db-0']);
  });

  it('refuses a search without text (400) and reports a broken configuration (503)', async () => {
    expect((await relayPodSearch(new Request('http://dash.test/api/agents/pods?q='), deps(twoAgents))).status).toBe(400);
    const broken = deps(() => {
      throw new AgentsConfigError('VOLUMESCOPE_AGENTS', 'VOLUMESCOPE_AGENTS: entry "x" has no URL');
    });
    const response = await relayPodSearch(new Request('http://dash.test/api/agents/pods?q=db'), broken);
    expect(response.status).toBe(503);
    expect(await response.text()).toContain('VOLUMESCOPE_AGENTS');
  });
});
