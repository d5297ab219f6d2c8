import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { computeDelta, encodeDeltaEvent, encodeSnapshotEvent, normalizeSnapshot, SSE_KEEPALIVE, type Snapshot } from '../api/index.ts';
import { exampleSnapshot } from '../api/testing/snapshot-fixtures.ts';
import { realClock } from '../clock/clock.ts';
import { AgentConnection, reconnectDelay } from './agent-connection.ts';
import type { AgentConnectionState } from './queries.ts';

/** The URL of a fetch input. */
function urlOf(input: string | URL | Request): string {
  return typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
}


const s42 = normalizeSnapshot(exampleSnapshot());
const s43: Snapshot = { ...s42, seq: 43, statesSynced: false };
const s44: Snapshot = { ...s43, seq: 44, operations: [] };

interface SeenRequest {
  url: string;
  headers: Headers;
  signal: AbortSignal;
}

/** A fake relay: each request gets the next scripted answer, or an open event stream. */
function fakeRelay() {
  const requests: SeenRequest[] = [];
  const streams: ReadableStreamDefaultController<Uint8Array>[] = [];
  const answers: (() => Response)[] = [];
  const encoder = new TextEncoder();
  const fetchFn: typeof fetch = (input, init) => {
    const signal = init?.signal ?? new AbortController().signal;
    requests.push({ url: urlOf(input), headers: new Headers(init?.headers), signal });
    const scripted = answers.shift();
    if (scripted !== undefined) return Promise.resolve(scripted());
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        streams.push(controller);
        signal.addEventListener('abort', () => {
          controller.error(new DOMException('aborted', 'AbortError'));
        });
      },
    });
    return Promise.resolve(new Response(body, { status: 200, headers: { 'Content-Type': 'text/event-stream' } }));
  };
  return {
    fetch: fetchFn,
    requests,
    answers,
    /** Sends text on the latest stream. */
    send(text: string) {
      streams.at(-1)?.enqueue(encoder.encode(text));
    },
    /** Ends the latest stream cleanly (the agent went away). */
    end() {
      streams.at(-1)?.close();
    },
  };
}

function setup(initial: Snapshot | null = null, random = () => 0) {
  const relay = fakeRelay();
  const snapshots: Snapshot[] = [];
  const states: AgentConnectionState[] = [];
  const connection = new AgentConnection({
    agent: 'node-a',
    fetch: relay.fetch,
    clock: realClock,
    random,
    initial,
    onSnapshot: (s) => snapshots.push(s),
    onStatus: (s) => states.push(s),
  });
  return { relay, snapshots, states, connection, last: () => states.at(-1) };
}

const settle = async (ms = 0): Promise<void> => {
  await vi.advanceTimersByTimeAsync(ms);
  await vi.advanceTimersByTimeAsync(0);
};

describe('the live connection to an agent', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_796_025_700_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('connects through the relay, goes live, and hands on the folded snapshot', async () => {
    // Arrange
    const { relay, snapshots, connection, last } = setup();

    // Act
    connection.start();
    await settle();
    relay.send(encodeSnapshotEvent(s42) + encodeDeltaEvent(computeDelta(s42, s43), s42.agent.startedAt));
    await settle();

    // Assert
    expect(relay.requests[0]?.url).toBe('/api/agents/node-a/events');
    expect(relay.requests[0]?.headers.get('last-event-id')).toBeNull();
    expect(snapshots.map((s) => s.seq)).toEqual([43]);
    expect(last()?.phase).toBe('live');
    connection.stop();
  });

  it('a prefetched snapshot is resumed with its <startedAt>.<seq> as Last-Event-ID', async () => {
    const { relay, connection } = setup(s42);
    connection.start();
    await settle();
    expect(relay.requests[0]?.headers.get('last-event-id')).toBe(`${String(s42.agent.startedAt)}.42`);
    connection.stop();
  });

  it('when the stream ends it reconnects after a jittered backoff, sending the last seq', async () => {
    // Arrange
    const { relay, connection, last } = setup();
    connection.start();
    await settle();
    relay.send(encodeSnapshotEvent(s42) + encodeDeltaEvent(computeDelta(s42, s43), s42.agent.startedAt));
    await settle();

    // Act
    relay.end();
    await settle();
    const reconnecting = last();
    await settle(499);
    const before = relay.requests.length;
    await settle(1);

    // Assert: random() = 0 gives half of the 1 s first delay
    expect(reconnecting).toMatchObject({ phase: 'reconnecting', attempt: 1, error: 'the event stream ended' });
    expect(before).toBe(1);
    expect(relay.requests).toHaveLength(2);
    expect(relay.requests[1]?.headers.get('last-event-id')).toBe(`${String(s43.agent.startedAt)}.43`);
    connection.stop();
  });

  it('a gap reconnects at once with the seq it has, not the id of the bad delta', async () => {
    // Arrange
    const { relay, connection } = setup();
    connection.start();
    await settle();
    relay.send(encodeSnapshotEvent(s42));
    await settle();

    // Act: a delta that does not follow 42
    relay.send(encodeDeltaEvent(computeDelta(s43, s44), s43.agent.startedAt));
    await settle();

    // Assert
    expect(relay.requests).toHaveLength(2);
    expect(relay.requests[0]?.signal.aborted).toBe(true);
    expect(relay.requests[1]?.headers.get('last-event-id')).toBe(`${String(s42.agent.startedAt)}.42`);
    connection.stop();
  });

  it('the relay’s error answer makes the agent unavailable, with the error and when it was last seen', async () => {
    // Arrange
    const { relay, connection, last } = setup();
    relay.answers.push(() =>
      Response.json(
        { dashboardError: { code: 'agent-unreachable', agent: 'node-a', message: 'cannot reach http://10.0.0.5:7070: connect ECONNREFUSED', lastSeenAt: 1_796_025_600_000 } },
        { status: 502 },
      ),
    );

    // Act
    connection.start();
    await settle();

    // Assert
    expect(last()).toMatchObject({
      phase: 'unavailable',
      error: 'cannot reach http://10.0.0.5:7070: connect ECONNREFUSED',
      lastSeenAt: 1_796_025_600_000,
      disconnectedSince: 1_796_025_700_000,
      attempt: 1,
    });
    connection.stop();
  });

  it('repeated failures keep the outage start and grow the delay', async () => {
    // Arrange
    const { relay, connection, states } = setup();
    const down = () => Response.json({ dashboardError: { code: 'agent-unreachable', agent: 'node-a', message: 'down', lastSeenAt: null } }, { status: 502 });
    relay.answers.push(down, down, down);

    // Act
    connection.start();
    await settle();
    await settle(500);
    await settle(1_000);

    // Assert
    const failures = states.filter((s) => s.phase === 'unavailable');
    expect(failures.map((s) => s.attempt)).toEqual([1, 2, 3]);
    expect(new Set(failures.map((s) => s.disconnectedSince))).toEqual(new Set([1_796_025_700_000]));
    expect(failures.map((s) => (s.nextAttemptAt ?? 0) - 1_796_025_700_000)).toEqual([500, 1_500, 3_500]);
    connection.stop();
  });

  it('a stream silent for 45 s (no keepalive) is dropped and reconnected', async () => {
    // Arrange
    const { relay, connection, last } = setup();
    connection.start();
    await settle();
    relay.send(encodeSnapshotEvent(s42));
    await settle();

    // Act
    await settle(30_000);
    relay.send(SSE_KEEPALIVE);
    await settle(44_000);
    const stillLive = last()?.phase;
    await settle(1_000);

    // Assert
    expect(stillLive).toBe('live');
    expect(last()).toMatchObject({ phase: 'reconnecting', error: 'no data from the agent for 45 s' });
    expect(relay.requests[0]?.signal.aborted).toBe(true);
    connection.stop();
  });

  it('pausing closes the stream; resuming reconnects at once from the current seq (a resync)', async () => {
    // Arrange
    const { relay, connection, last } = setup();
    connection.start();
    await settle();
    relay.send(encodeSnapshotEvent(s42));
    await settle();

    // Act
    connection.pause();
    await settle(60_000);
    const paused = last()?.phase;
    const whilePaused = relay.requests.length;
    connection.resume();
    await settle();

    // Assert
    expect(paused).toBe('paused');
    expect(relay.requests[0]?.signal.aborted).toBe(true);
    expect(whilePaused).toBe(1);
    expect(relay.requests).toHaveLength(2);
    expect(relay.requests[1]?.headers.get('last-event-id')).toBe(`${String(s42.agent.startedAt)}.42`);
    connection.stop();
  });
});

describe('reconnect delays', () => {
  it.each([
    { attempt: 1, random: 0, delay: 500 },
    { attempt: 1, random: 0.999_999, delay: 1_000 },
    { attempt: 2, random: 0, delay: 1_000 },
    { attempt: 4, random: 0.5, delay: 6_000 },
    { attempt: 6, random: 0.999_999, delay: 30_000 },
    { attempt: 50, random: 0, delay: 15_000 },
  ])('attempt $attempt with random $random waits $delay ms', ({ attempt, random, delay }) => {
    expect(reconnectDelay(attempt, () => random)).toBe(delay);
  });
});
