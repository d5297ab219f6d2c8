import { afterEach, describe, expect, it } from 'vitest';
import { decodeAgentStreamEvent, reduceAgentStream } from '../../lib/api/agent-stream.ts';
import { applyDelta, type Delta } from '../../lib/api/delta.ts';
import { normalizeSnapshot } from '../../lib/api/normalize-snapshot.ts';
import { type Snapshot } from '../../lib/api/snapshot.ts';
import { parseSnapshot } from '../../lib/api/compact-snapshot.ts';
import type { SseMessage } from '../../lib/api/sse.ts';
import { uniquePodName } from '../../lib/volume/types.ts';
import { gcePdVolume, makePod } from '../../lib/volumemanager/testing/harness.ts';
import { parseLastEventId } from './event-streams.ts';
import { streamEventId } from '../../lib/api/agent-stream.ts';
import { type EventStreamReader } from './testing/api-client.ts';
import { waitFor } from '../../lib/clock/testing/wait-for.ts';
import { startServer, type FixtureOptions, type ServerFixture } from './testing/server-fixture.ts';

function decodeSnapshot(message: SseMessage | undefined): Snapshot {
  const decoded = message === undefined ? null : decodeAgentStreamEvent(message);
  if (decoded?.type !== 'snapshot') throw new Error(`expected a snapshot event, got ${message?.event ?? 'nothing'}`);
  return decoded.snapshot;
}

function decodeDelta(message: SseMessage | undefined): Delta {
  const decoded = message === undefined ? null : decodeAgentStreamEvent(message);
  if (decoded?.type !== 'delta') throw new Error(`expected a delta event, got ${message?.event ?? 'nothing'}`);
  return decoded.delta;
}

/** The client state after every event received so far, as the dashboard's reducer computes it. */
function fold(reader: EventStreamReader, start: Snapshot | null = null): Snapshot | null {
  let state = start;
  for (const message of reader.events) {
    const event = decodeAgentStreamEvent(message);
    if (event !== null) state = reduceAgentStream(state, event);
  }
  return state;
}

describe('GET /api/v1/events', () => {
  let fx: ServerFixture | undefined;
  const readers: EventStreamReader[] = [];
  afterEach(async () => {
    for (const reader of readers.splice(0)) reader.close();
    await fx?.close();
    fx = undefined;
  });

  const start = async (options: FixtureOptions = {}): Promise<ServerFixture> => {
    fx = await startServer(options);
    return fx;
  };
  const open = async (f: ServerFixture, lastEventId?: string): Promise<EventStreamReader> => {
    const reader = await f.client.events(lastEventId);
    readers.push(reader);
    return reader;
  };
  const getSnapshot = async (f: ServerFixture): Promise<Snapshot> => parseSnapshot((await f.client.get('/api/v1/snapshot')).json);
  const published = (f: ServerFixture): number => f.runtime.logger.lines.filter((l) => l.msg === 'snapshot published').length;
  /**
   * One published change: an event, the coalescing interval, then a read of the snapshot (with no
   * stream subscribed the feed publishes only when read; with one, the read finds it published).
   */
  const change = async (f: ServerFixture, reason = 'Tick'): Promise<void> => {
    f.runtime.emitEvent({ type: 'Normal', reason, podUid: null, message: reason });
    await f.harness.clock.advance(50);
    f.server.snapshot();
  };

  it('starts with the full snapshot, unbuffered headers and id = <startedAt>.<seq>', async () => {
    const f = await start();

    const reader = await open(f);
    const [first] = await reader.waitForEvents(1);

    expect(reader.status).toBe(200);
    expect(reader.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(reader.headers.get('cache-control')).toBe('no-cache, no-transform');
    expect(reader.headers.get('x-accel-buffering')).toBe('no');
    expect(reader.headers.get('content-encoding')).toBeNull();
    const snapshot = decodeSnapshot(first);
    expect(first?.id).toBe(streamEventId(snapshot.agent.startedAt, snapshot.seq));
    expect(snapshot).toEqual(await getSnapshot(f));
  });

  it('answers 401 without the token', async () => {
    const f = await start();

    const res = await f.client.get('/api/v1/events', { token: null });

    expect(res.status).toBe(401);
  });

  it('follows a mount with deltas whose application equals a fresh snapshot', async () => {
    // Arrange
    const f = await start();
    const reader = await open(f);
    await reader.waitForEvents(1);

    // Act: a pod is added, attached and mounted (fake time drives the engine and the publisher)
    f.harness.pods.add(makePod([gcePdVolume()]));
    f.harness.start();
    await f.harness.until(() => f.harness.asw.getMountedVolumes().length === 1 && f.harness.vm.reconcilerStatesHasBeenSynced());
    await f.harness.clock.advance(50);
    const fresh = await getSnapshot(f);
    await waitFor(() => reader.events.at(-1)?.id === streamEventId(fresh.agent.startedAt, fresh.seq), { what: `the delta to seq ${fresh.seq}` });

    // Assert: every event after the first is a delta with consecutive sequence numbers
    const deltas = reader.events.slice(1).map(decodeDelta);
    expect(deltas.length).toBeGreaterThan(0);
    deltas.forEach((delta, i) => {
      expect(delta.fromSeq).toBe(i);
      expect(delta.seq).toBe(i + 1);
    });
    expect(fold(reader)).toEqual(normalizeSnapshot(fresh));
    expect(fresh.actual.volumes.map((v) => v.pods.map((p) => p.mountState))).toEqual([['mounted']]);
  });

  it('sends only what changed: one new event is a delta with just that event', async () => {
    const f = await start();
    const reader = await open(f);
    const snapshot = decodeSnapshot((await reader.waitForEvents(1))[0]);

    await change(f, 'Only');
    const [, message] = await reader.waitForEvents(2);

    const delta = decodeDelta(message);
    expect(Object.keys(delta).sort()).toEqual(['fromSeq', 'recentEvents', 'seq']);
    expect(delta.recentEvents?.append.map((e) => e.reason)).toEqual(['Only']);
    expect(applyDelta(snapshot, delta)).toEqual(normalizeSnapshot(await getSnapshot(f)));
  });

  it('streams a pod error, which changes neither world, as a delta within one coalescing interval', async () => {
    // Arrange
    const f = await start();
    const reader = await open(f);
    const snapshot = decodeSnapshot((await reader.waitForEvents(1))[0]);

    // Act: the populator records a pod error; one coalescing interval of the agent clock passes
    f.harness.dsw.addErrorToPod(uniquePodName('uid-x'), 'error processing PVC ns/c: PVC is not bound');
    await f.harness.clock.advance(50);
    const [, message] = await reader.waitForEvents(2);

    // Assert
    const delta = decodeDelta(message);
    expect(Object.keys(delta).sort()).toEqual(['fromSeq', 'podErrors', 'seq']);
    expect(applyDelta(snapshot, delta).podErrors).toEqual({ 'uid-x': ['error processing PVC ns/c: PVC is not bound'] });
  });

  it('coalesces a burst of notifications into one rebuild per 50 ms of the agent clock', async () => {
    // Arrange
    const f = await start({ server: { minRebuildIntervalMs: 50 } });
    const reader = await open(f);
    await reader.waitForEvents(1);
    const before = published(f);

    // Act: a burst in one turn, then a change right after the rebuild
    for (let i = 0; i < 5; i++) f.runtime.emitEvent({ type: 'Normal', reason: `Burst${i}`, podUid: null, message: '' });
    await f.harness.clock.advance(0);
    const afterBurst = published(f);
    f.runtime.emitEvent({ type: 'Normal', reason: 'Later', podUid: null, message: '' });
    await f.harness.clock.advance(49);
    const within = published(f);
    await f.harness.clock.advance(1);

    // Assert
    expect([afterBurst - before, within - before, published(f) - before]).toEqual([1, 1, 2]);
    const deltas = (await reader.waitForEvents(3)).slice(1).map(decodeDelta);
    expect(deltas.map((d) => d.recentEvents?.append.map((e) => e.reason))).toEqual([
      ['Burst0', 'Burst1', 'Burst2', 'Burst3', 'Burst4'],
      ['Later'],
    ]);
  });

  it('resumes a reconnect from the journal with the deltas after Last-Event-ID', async () => {
    // Arrange: a client saw the snapshot, then went away while three changes were published
    const f = await start();
    const first = await open(f);
    const seen = decodeSnapshot((await first.waitForEvents(1))[0]);
    first.close();
    for (const reason of ['A', 'B', 'C']) await change(f, reason);

    // Act
    const resumed = await open(f, streamEventId(seen.agent.startedAt, seen.seq));
    const events = await resumed.waitForEvents(3);

    // Assert
    expect(events.map((e) => e.event)).toEqual(['delta', 'delta', 'delta']);
    expect(decodeDelta(events[0]).fromSeq).toBe(seen.seq);
    expect(fold(resumed, seen)).toEqual(normalizeSnapshot(await getSnapshot(f)));
  });

  it('resumes with nothing to send when Last-Event-ID is the current seq, then streams new deltas', async () => {
    const f = await start();
    await change(f);
    const current = await getSnapshot(f);

    const resumed = await open(f, streamEventId(current.agent.startedAt, current.seq));
    await change(f, 'Next');
    const [message] = await resumed.waitForEvents(1);

    expect(decodeDelta(message).fromSeq).toBe(current.seq);
  });

  it.each([
    { name: 'older than the journal', lastEventId: (t: number) => streamEventId(t, 0) },
    { name: 'from the future', lastEventId: (t: number) => streamEventId(t, 1000) },
    // The journal holds seq 2→3 and 3→4 of this process; seq 3 of the process before a restart names another state.
    { name: 'of another agent process (before a restart)', lastEventId: (t: number) => streamEventId(t - 60_000, 3) },
    { name: 'a bare seq (no process part)', lastEventId: () => '3' },
    { name: 'not an event id', lastEventId: () => 'abc' },
  ])('starts with a fresh snapshot when Last-Event-ID is $name', async ({ lastEventId }) => {
    // Arrange: a journal of two deltas, four changes published
    const f = await start({ server: { journalSize: 2 } });
    for (const reason of ['A', 'B', 'C', 'D']) await change(f, reason);
    const startedAt = (await getSnapshot(f)).agent.startedAt;

    // Act
    const reader = await open(f, lastEventId(startedAt));
    const [first] = await reader.waitForEvents(1);

    // Assert
    expect(first?.event).toBe('snapshot');
    expect(decodeSnapshot(first)).toEqual(await getSnapshot(f));
  });

  it('sends a keepalive comment when the stream is idle for keepaliveMs of the agent clock', async () => {
    const f = await start({ server: { keepaliveMs: 1_000 } });
    const reader = await open(f);
    await reader.waitForEvents(1);

    await f.harness.clock.advance(999);
    const early = reader.comments.length;
    await f.harness.clock.advance(1);
    await waitFor(() => reader.comments.length > 0, { what: 'a keepalive comment' });

    expect(early).toBe(0);
    expect(reader.comments).toEqual(['keepalive']);
  });

  it('cleans up when the client disconnects', async () => {
    const f = await start();
    const reader = await open(f);
    await reader.waitForEvents(1);

    reader.close();
    await waitFor(() => f.runtime.logger.lines.some((l) => l.msg === 'event stream closed'), { what: 'the server to see the disconnect' });
    await change(f);

    expect(f.runtime.logger.lines.find((l) => l.msg === 'event stream closed')?.fields['open']).toBe(0);
    expect(f.runtime.logger.lines.filter((l) => l.level === 'error')).toEqual([]);
  });

  it('ends every stream when the server closes', async () => {
    const f = await start();
    const a = await open(f);
    const b = await open(f);
    await Promise.all([a.waitForEvents(1), b.waitForEvents(1)]);

    await f.server.close();
    await waitFor(() => a.ended && b.ended, { what: 'both streams to end' });

    expect([a.ended, b.ended]).toEqual([true, true]);
  });
});

describe('parseLastEventId', () => {
  it.each([
    { header: undefined, want: null },
    { header: '1796025600000.42', want: { startedAt: 1_796_025_600_000, seq: 42 } },
    { header: ' 5.7 ', want: { startedAt: 5, seq: 7 } },
    { header: '42', want: null },
    { header: '-1.1', want: null },
    { header: '1e3.1', want: null },
    { header: '', want: null },
    { header: ['1.1', '1.2'], want: { startedAt: 1, seq: 2 } },
  ])('reads $header as $want', ({ header, want }) => {
    expect(parseLastEventId(header)).toEqual(want);
  });
});
