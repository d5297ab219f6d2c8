import { QueryClient } from '@tanstack/react-query';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { encodeSnapshotEvent, normalizeSnapshot, type Snapshot } from '../api/index.ts';
import { exampleSnapshot } from '../api/testing/snapshot-fixtures.ts';
import { realClock } from '../clock/clock.ts';
import { agentKeys, PREFETCHED_UPDATED_AT, type AgentConnectionState } from './queries.ts';
import { AgentStreamHub, type VisibilitySource } from './stream-hub.ts';

/** The URL of a fetch input. */
function urlOf(input: string | URL | Request): string {
  return typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
}


function fakeVisibility(): VisibilitySource & { set(hidden: boolean): void } {
  let hidden = false;
  const listeners = new Set<() => void>();
  return {
    isHidden: () => hidden,
    subscribe(l) {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    set(value) {
      hidden = value;
      for (const l of listeners) l();
    },
  };
}

function setup() {
  const requests: { url: string; headers: Headers; signal: AbortSignal }[] = [];
  const encoder = new TextEncoder();
  const fetchFn: typeof fetch = (input, init) => {
    const signal = init?.signal ?? new AbortController().signal;
    requests.push({ url: urlOf(input), headers: new Headers(init?.headers), signal });
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode(encodeSnapshotEvent(normalizeSnapshot({ ...exampleSnapshot(), nodeName: urlOf(input) }))));
        signal.addEventListener('abort', () => {
          controller.error(new DOMException('aborted', 'AbortError'));
        });
      },
    });
    return Promise.resolve(new Response(body, { headers: { 'Content-Type': 'text/event-stream' } }));
  };
  const client = new QueryClient();
  const visibility = fakeVisibility();
  const hub = new AgentStreamHub(client, { fetch: fetchFn, clock: realClock, random: () => 0, visibility, lingerMs: 10_000 });
  return { requests, client, hub, visibility };
}

const settle = async (ms = 0): Promise<void> => {
  await vi.advanceTimersByTimeAsync(ms);
  await vi.advanceTimersByTimeAsync(0);
};

describe('the per-tab stream hub', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('every view of the same agent shares one connection, and the cache gets its snapshot', async () => {
    // Arrange
    const { requests, client, hub } = setup();

    // Act
    const views = [hub.subscribe('node-a'), hub.subscribe('node-a'), hub.subscribe('node-a'), hub.subscribe('node-b')];
    await settle();

    // Assert
    expect(requests.map((r) => r.url)).toEqual(['/api/agents/node-a/events', '/api/agents/node-b/events']);
    expect(client.getQueryData<Snapshot>(agentKeys.snapshot('node-a'))?.nodeName).toBe('/api/agents/node-a/events');
    expect(client.getQueryData<AgentConnectionState>(agentKeys.connection('node-b'))?.phase).toBe('live');
    for (const v of views) v();
  });

  it('the connection closes only after the last view left and the linger passed', async () => {
    // Arrange
    const { requests, hub } = setup();
    const a = hub.subscribe('node-a');
    const b = hub.subscribe('node-a');
    await settle();

    // Act
    a();
    a();
    await settle(20_000);
    const afterFirstLeft = requests[0]?.signal.aborted;
    b();
    await settle(9_999);
    const duringLinger = requests[0]?.signal.aborted;
    await settle(1);

    // Assert
    expect(afterFirstLeft).toBe(false);
    expect(duringLinger).toBe(false);
    expect(requests[0]?.signal.aborted).toBe(true);
    expect(hub.size).toBe(0);
  });

  it('a view that comes back within the linger reuses the open connection', async () => {
    const { requests, hub } = setup();
    hub.subscribe('node-a')();
    await settle(5_000);
    const again = hub.subscribe('node-a');
    await settle(20_000);
    expect(requests).toHaveLength(1);
    again();
  });

  it('a hidden tab pauses every stream and a visible one resumes them with a resync', async () => {
    // Arrange
    const { requests, client, hub, visibility } = setup();
    const stop = hub.subscribe('node-a');
    await settle();

    // Act
    visibility.set(true);
    await settle(120_000);
    const paused = client.getQueryData<AgentConnectionState>(agentKeys.connection('node-a'))?.phase;
    visibility.set(false);
    await settle();

    // Assert
    expect(paused).toBe('paused');
    expect(requests).toHaveLength(2);
    expect(requests[1]?.headers.get('last-event-id')).toBe(`${String(exampleSnapshot().agent.startedAt)}.42`);
    stop();
  });

  it('a snapshot prefetched by the server is where the stream resumes from', async () => {
    const { requests, client, hub } = setup();
    client.setQueryData(agentKeys.snapshot('node-a'), { ...normalizeSnapshot(exampleSnapshot()), seq: 7 }, { updatedAt: PREFETCHED_UPDATED_AT });
    const stop = hub.subscribe('node-a');
    await settle();
    expect(requests[0]?.headers.get('last-event-id')).toBe(`${String(exampleSnapshot().agent.startedAt)}.7`);
    stop();
  });
});
