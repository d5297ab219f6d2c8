import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock/fake-clock.ts';
import { EVENT_NOTE_LENGTH_LIMIT, isTruncatedMessage } from '../../truncate-message.ts';
import { FailedMountVolume, SuccessfulAttachVolume } from '../../volume/events.ts';
import type { EventType, InvolvedObject } from '../../volume/events.ts';
import { KubeEventSink, isKubeEventSinkOptionsError } from './event-sink.ts';
import type { KubeEventSink as KubeEventSinkType, KubeEventSinkOptions } from './event-sink.ts';
import type { JsonObject } from './plain-json.ts';
import { isJsonObject, toRFC3339 } from './plain-json.ts';
import { FakeApiServer } from './testing/fake-apiserver.ts';
import { fakeKubeConfig } from './testing/kubeconfig-file.ts';
import { waitFor } from '../../clock/testing/wait-for.ts';
import { discardLogger } from '../../volume/logger.ts';

// The real @kubernetes/client-node writes to a FakeApiServer over real HTTP; the sink runs on a
// FakeClock (timestamps, names, correlation windows, retry timers, deadlines). Waits for the
// network are `waitFor` conditions with real-time deadlines; retry timers only fire when a test
// advances the fake clock, so "not yet retried" is observable without sleeping.
const token = 'event-sink-token';

let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

interface LogLine {
  level: 'info' | 'warn';
  msg: string;
}

async function setup(options: Partial<KubeEventSinkOptions> = {}) {
  const server = await FakeApiServer.start({ token });
  cleanups.push(() => server.close());
  const clock = new FakeClock();
  const logs: LogLine[] = [];
  const sink = new KubeEventSink({
    kubeConfig: fakeKubeConfig({ server: server.url, token }),
    nodeName: 'node-a',
    clock,
    logger: {
      ...discardLogger,
      info: (msg) => logs.push({ level: 'info', msg }),
      warn: (msg) => logs.push({ level: 'warn', msg }),
    },
    random: () => 0.5,
    ...options,
  });
  cleanups.push(async () => {
    const stopped = sink.stop({ timeoutMs: 1000 });
    await clock.advance(1000);
    await stopped;
  });
  return { server, clock, sink, logs };
}

const web: InvolvedObject = { kind: 'Pod', namespace: 'prod', name: 'web', uid: 'uid-web' };
const api: InvolvedObject = { kind: 'Pod', namespace: 'prod', name: 'api', uid: 'uid-api' };
const mountFailure = 'MountVolume.SetUp failed for volume "data" : secret "db" not found';

/** `<name>.<hex of unix nanoseconds>` for a millisecond time, plus `extra` nanoseconds. */
const nameAt = (objectName: string, ms: number, extra = 0n) => `${objectName}.${(BigInt(ms) * 1_000_000n + extra).toString(16)}`;

const settled = (sink: KubeEventSinkType) => {
  const c = sink.counters();
  return c.posted + c.patched + c.dropped + c.failed;
};

const creates = (server: FakeApiServer) => server.requests({ resource: 'events', verb: 'create' });

function str(object: JsonObject, ...path: string[]): string | undefined {
  let value: unknown = object;
  for (const key of path) value = isJsonObject(value) ? value[key] : undefined;
  return typeof value === 'string' ? value : undefined;
}

function byName(events: JsonObject[]): Map<string, JsonObject> {
  return new Map(events.map((e) => [str(e, 'metadata', 'name') ?? '', e]));
}

describe('KubeEventSink writes core/v1 Events', () => {
  it('creates an Event with the involved object, reason, message, type, source and count 1', async () => {
    const { server, clock, sink } = await setup();
    const at = clock.now();
    sink.event(web, 'Warning', FailedMountVolume, mountFailure);
    await waitFor(() => sink.counters().posted === 1, { what: 'event posted' });

    const events = server.events();
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      metadata: { name: nameAt('web', at), namespace: 'prod' },
      involvedObject: { kind: 'Pod', namespace: 'prod', name: 'web', uid: 'uid-web', apiVersion: 'v1' },
      reason: 'FailedMount',
      message: mountFailure,
      type: 'Warning',
      source: { component: 'volumescope-agent', host: 'node-a' },
      reportingComponent: 'volumescope.io/agent',
      reportingInstance: 'node-a',
      count: 1,
    });
    const event = events[0] ?? {};
    expect(Date.parse(str(event, 'firstTimestamp') ?? '')).toBe(at);
    expect(Date.parse(str(event, 'lastTimestamp') ?? '')).toBe(at);

    const [request, ...more] = creates(server);
    expect(more).toEqual([]);
    expect(request?.path).toBe('/api/v1/namespaces/prod/events');
    expect(request?.authorization).toBe(`Bearer ${token}`);
    expect(sink.counters()).toEqual({ posted: 1, patched: 0, dropped: 0, failed: 0, retries: 0 });
  });

  it("cuts a 1 MB message (a driver's error details) to the API's event note limit, with the marker", async () => {
    const { server, sink } = await setup();
    sink.event(web, 'Warning', FailedMountVolume, `MountVolume.MountDevice failed for volume "data" : rpc error: code = Internal desc = ${'x'.repeat(1 << 20)}`);
    await waitFor(() => sink.counters().posted === 1, { what: 'event posted' });

    const message = str(server.events()[0] ?? {}, 'message') ?? '';
    expect(message.length).toBeLessThanOrEqual(EVENT_NOTE_LENGTH_LIMIT);
    expect(message.startsWith('MountVolume.MountDevice failed for volume "data" : rpc error: code = Internal desc = xxx')).toBe(true);
    expect(isTruncatedMessage(message)).toBe(true);
  });

  it('writes Events about cluster-scoped objects (Node, PersistentVolume) to the default namespace', async () => {
    const { server, sink } = await setup();
    sink.event({ kind: 'Node', name: 'node-a', uid: 'node-a' }, 'Normal', SuccessfulAttachVolume, 'attached');
    // A namespace given for a cluster-scoped object is not part of its reference.
    sink.event({ kind: 'PersistentVolume', namespace: 'prod', name: 'pv-1' }, 'Warning', 'VolumeResizeFailed', 'resize failed');
    await waitFor(() => sink.counters().posted === 2, { what: 'events posted' });

    expect(server.events('prod')).toEqual([]);
    const events = server.events('default');
    expect(events.map((e) => e.involvedObject)).toEqual([
      { kind: 'Node', name: 'node-a', uid: 'node-a', apiVersion: 'v1' },
      { kind: 'PersistentVolume', name: 'pv-1', apiVersion: 'v1' },
    ]);
  });

  it('names two events about one object in the same millisecond differently', async () => {
    const { server, clock, sink } = await setup();
    const at = clock.now();
    sink.event(web, 'Warning', FailedMountVolume, mountFailure);
    sink.event(web, 'Warning', 'FailedMapVolume', 'map failed');
    await waitFor(() => sink.counters().posted === 2, { what: 'both events posted' });
    expect([...byName(server.events('prod')).keys()].sort()).toEqual([nameAt('web', at), nameAt('web', at, 1n)]);
  });

  it('never throws into the caller: invalid events and a throwing logger only cost the event', async () => {
    const server = await FakeApiServer.start({ token });
    cleanups.push(() => server.close());
    const sink = new KubeEventSink({
      kubeConfig: fakeKubeConfig({ server: server.url, token }),
      nodeName: 'node-a',
      clock: new FakeClock(),
      logger: {
        ...discardLogger,
        info: () => {
          throw new Error('logger down');
        },
        warn: () => {
          throw new Error('logger down');
        },
      },
    });
    cleanups.push(async () => {
      await sink.stop();
    });
    expect(() => {
      sink.event(web, 'Critical' as EventType, FailedMountVolume, mountFailure);
    }).not.toThrow();
    expect(() => {
      sink.event({ kind: 'Pod', namespace: 'prod', name: '' }, 'Warning', FailedMountVolume, mountFailure);
    }).not.toThrow();
    expect(sink.counters().dropped).toBe(2);
    expect(creates(server)).toEqual([]);
  });

  it('refuses invalid options with a KubeEventSinkOptionsError', () => {
    const kubeConfig = fakeKubeConfig({ server: 'http://127.0.0.1:1', token });
    const make = (options: Partial<KubeEventSinkOptions>) => () => new KubeEventSink({ kubeConfig, nodeName: 'node-a', clock: new FakeClock(), ...options });
    for (const options of [{ nodeName: ' ' }, { maxTries: 0 }, { retrySleepMs: -1 }, { maxQueuedEvents: 1.5 }]) {
      let caught: unknown;
      try {
        make(options)();
      } catch (err) {
        caught = err;
      }
      expect(isKubeEventSinkOptionsError(caught), JSON.stringify(options)).toBe(true);
    }
  });
});

describe('KubeEventSink correlation (client-go events_cache.go)', () => {
  it('counts a repeated event on one Event: strategic merge PATCHes of count, lastTimestamp and message', async () => {
    const { server, clock, sink } = await setup();
    const first = clock.now();
    sink.event(web, 'Warning', FailedMountVolume, mountFailure);
    await waitFor(() => sink.counters().posted === 1, { what: 'event posted' });
    await clock.advance(5_000);
    sink.event(web, 'Warning', FailedMountVolume, mountFailure);
    await waitFor(() => sink.counters().patched === 1, { what: 'first patch' });
    await clock.advance(7_000);
    sink.event(web, 'Warning', FailedMountVolume, mountFailure);
    await waitFor(() => sink.counters().patched === 2, { what: 'second patch' });

    const events = server.events('prod');
    expect(events).toHaveLength(1);
    const event = events[0] ?? {};
    expect(event.count).toBe(3);
    expect(str(event, 'metadata', 'name')).toBe(nameAt('web', first));
    expect(Date.parse(str(event, 'firstTimestamp') ?? '')).toBe(first);
    expect(Date.parse(str(event, 'lastTimestamp') ?? '')).toBe(first + 12_000);

    const patches = server.requests({ resource: 'events', verb: 'patch' });
    expect(patches.map((p) => p.path)).toEqual([`/api/v1/namespaces/prod/events/${nameAt('web', first)}`, `/api/v1/namespaces/prod/events/${nameAt('web', first)}`]);
    expect(patches.map((p) => p.contentType)).toEqual(['application/strategic-merge-patch+json', 'application/strategic-merge-patch+json']);
    expect(patches[1]?.body).toEqual({ count: 3, lastTimestamp: toRFC3339(new Date(first + 12_000)), message: mountFailure });
  });

  it('writes identical events recorded back to back in order: one create, then patches', async () => {
    const { server, sink } = await setup();
    for (let i = 0; i < 3; i++) sink.event(web, 'Warning', FailedMountVolume, mountFailure);
    await waitFor(() => settled(sink) === 3, { what: 'three events written' });
    expect(sink.counters()).toMatchObject({ posted: 1, patched: 2 });
    expect(server.events('prod').map((e) => e.count)).toEqual([3]);
  });

  it('combines the 10th and later similar messages within 10 minutes into one "(combined from similar events)" Event', async () => {
    const { server, clock, sink } = await setup();
    let combinedAt = 0;
    for (let i = 1; i <= 11; i++) {
      if (i === 10) combinedAt = clock.now();
      sink.event(web, 'Warning', FailedMountVolume, `attempt ${i} failed`);
      // One at a time, so each is correlated at the time it was recorded.
      await waitFor(() => settled(sink) === i, { what: `event ${i} written` });
      await clock.advance(1_000);
    }

    const events = server.events('prod');
    expect(events).toHaveLength(10);
    const combined = events.filter((e) => str(e, 'message')?.startsWith('(combined from similar events): '));
    expect(combined).toHaveLength(1);
    expect(combined[0]).toMatchObject({
      message: '(combined from similar events): attempt 11 failed',
      count: 2,
      reason: 'FailedMount',
      // A new Event, named at the 10th event's time (one nanosecond on: that event's own name took it).
      metadata: { name: nameAt('web', combinedAt, 1n) },
    });
    const single = events.filter((e) => !combined.includes(e));
    expect(single.map((e) => str(e, 'message')).sort()).toEqual(Array.from({ length: 9 }, (_, i) => `attempt ${i + 1} failed`).sort());
    expect(single.every((e) => e.count === 1)).toBe(true);

    // After 10 quiet minutes the group starts over: a new message is an Event of its own.
    await clock.advance(600_001);
    sink.event(web, 'Warning', FailedMountVolume, 'attempt 12 failed');
    await waitFor(() => settled(sink) === 12, { what: 'twelfth event written' });
    expect(server.events('prod').filter((e) => e.message === 'attempt 12 failed')).toHaveLength(1);
  });

  it('spam filter: 25 events per object at once, then one more every 5 minutes; filtered occurrences still count', async () => {
    const { server, clock, sink } = await setup();
    for (let i = 0; i < 30; i++) sink.event(web, 'Warning', FailedMountVolume, mountFailure);
    await waitFor(() => settled(sink) === 30, { what: 'thirty events handled' });
    expect(sink.counters()).toMatchObject({ posted: 1, patched: 24, dropped: 5 });
    expect(server.events('prod').map((e) => e.count)).toEqual([25]);

    // Another object has its own budget.
    sink.event(api, 'Warning', FailedMountVolume, mountFailure);
    await waitFor(() => sink.counters().posted === 2, { what: 'event about another pod posted' });

    await clock.advance(299_000);
    sink.event(web, 'Warning', FailedMountVolume, mountFailure);
    await waitFor(() => settled(sink) === 32, { what: 'event before the refill handled' });
    expect(sink.counters().dropped).toBe(6);

    await clock.advance(1_000);
    sink.event(web, 'Warning', FailedMountVolume, mountFailure);
    await waitFor(() => sink.counters().patched === 25, { what: 'event after the refill patched' });
    // 32 occurrences about web so far: the written count includes the 6 filtered ones.
    expect(byName(server.events('prod')).get(nameAt('web', clock.now() - 300_000))?.count).toBe(32);
    sink.event(web, 'Warning', FailedMountVolume, mountFailure);
    await waitFor(() => sink.counters().dropped === 7, { what: 'next event filtered again' });
  });

  it('keeps bounded caches: an object evicted from the LRU gets a new Event', async () => {
    const { server, sink } = await setup({ correlation: { lruCacheSize: 2 } });
    for (const name of ['a', 'b', 'c', 'a']) sink.event({ kind: 'Pod', namespace: 'prod', name }, 'Warning', FailedMountVolume, mountFailure);
    await waitFor(() => settled(sink) === 4, { what: 'four events written' });
    expect(sink.counters()).toMatchObject({ posted: 4, patched: 0 });
    expect(server.events('prod')).toHaveLength(4);
  });

  it('creates the Event again when the PATCH answers 404 (the Event expired)', async () => {
    const { server, clock, sink } = await setup();
    const first = clock.now();
    sink.event(web, 'Warning', FailedMountVolume, mountFailure);
    await waitFor(() => sink.counters().posted === 1, { what: 'event posted' });
    server.remove('events', 'prod', nameAt('web', first));

    await clock.advance(2_000);
    sink.event(web, 'Warning', FailedMountVolume, mountFailure);
    await waitFor(() => sink.counters().posted === 2, { what: 'event created again' });

    expect(server.requests({ resource: 'events' }).map((r) => r.verb)).toEqual(['create', 'patch', 'create']);
    const events = server.events('prod');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ metadata: { name: nameAt('web', first) }, count: 2 });
    expect(Date.parse(str(events[0] ?? {}, 'lastTimestamp') ?? '')).toBe(first + 2_000);
    expect(sink.counters()).toMatchObject({ patched: 0, failed: 0 });
  });
});

describe('KubeEventSink failures', () => {
  it('retries a failed write after the randomized first wait and holds later events until it succeeds', async () => {
    const { server, clock, sink, logs } = await setup({ random: () => 0.5 });
    const clear = server.failRequests({ resource: 'events', verb: 'create', status: 503 });
    sink.event(web, 'Warning', FailedMountVolume, mountFailure);
    await waitFor(() => sink.backlog().waitingToRetry, { what: 'retry scheduled' });
    sink.event(api, 'Warning', FailedMountVolume, mountFailure);
    expect(sink.backlog()).toEqual({ queued: 1, writing: false, waitingToRetry: true });
    expect(creates(server)).toHaveLength(1);
    expect(logs.map((l) => l.msg)).toContain('Unable to write event (may retry after sleeping)');

    clear();
    await clock.advance(4_999);
    expect(sink.backlog().waitingToRetry).toBe(true);
    await clock.advance(1);
    await waitFor(() => sink.counters().posted === 2, { what: 'both events posted after recovery' });

    expect(sink.counters()).toMatchObject({ posted: 2, retries: 1, failed: 0 });
    expect(creates(server).map((r) => str(isJsonObject(r.body) ? r.body : {}, 'involvedObject', 'name'))).toEqual(['web', 'web', 'api']);
    expect(server.events('prod').map((e) => str(e, 'involvedObject', 'name')).sort()).toEqual(['api', 'web']);
  });

  it('retries after a transport failure (API server down) and posts once it is back', async () => {
    const { server, clock, sink } = await setup({ random: () => 0 });
    await server.stop();
    sink.event(web, 'Warning', FailedMountVolume, mountFailure);
    await waitFor(() => sink.backlog().waitingToRetry, { what: 'retry scheduled' });
    await server.restart();
    // random() = 0: the first retry is due at once.
    await clock.advance(0);
    await waitFor(() => sink.counters().posted === 1, { what: 'event posted after the restart' });
    expect(server.events('prod')).toHaveLength(1);
  });

  it('gives up after 12 attempts, 10 s apart', async () => {
    const { server, clock, sink, logs } = await setup({ random: () => 0.5 });
    server.failRequests({ resource: 'events', verb: 'create', status: 500 });
    sink.event(web, 'Warning', FailedMountVolume, mountFailure);
    await waitFor(() => sink.backlog().waitingToRetry, { what: 'first retry scheduled' });
    await clock.advance(5_000);
    for (let attempt = 3; attempt <= 12; attempt++) {
      await waitFor(() => sink.backlog().waitingToRetry, { what: `retry before attempt ${attempt} scheduled` });
      await clock.advance(9_999);
      expect(sink.backlog().waitingToRetry).toBe(true);
      await clock.advance(1);
    }
    await waitFor(() => sink.counters().failed === 1, { what: 'event given up' });
    expect(creates(server)).toHaveLength(12);
    expect(sink.counters()).toMatchObject({ retries: 11, posted: 0 });
    expect(sink.backlog().waitingToRetry).toBe(false);
    expect(logs.map((l) => l.msg)).toContain('Unable to write event (retry limit exceeded!)');
  });

  it('does not retry an event the server rejects (403)', async () => {
    const { server, clock, sink, logs } = await setup();
    server.failRequests({ resource: 'events', verb: 'create', status: 403 });
    sink.event(web, 'Warning', FailedMountVolume, mountFailure);
    await waitFor(() => sink.counters().failed === 1, { what: 'event rejected' });
    expect(sink.backlog().waitingToRetry).toBe(false);
    await clock.advance(60_000);
    expect(creates(server)).toHaveLength(1);
    expect(logs.map((l) => l.msg)).toContain('Server rejected event (will not retry!)');
  });

  it('abandons a request that does not answer within the request timeout and retries it', async () => {
    const { server, clock, sink } = await setup({ requestTimeoutMs: 1_000, random: () => 0.5 });
    const held = server.holdRequests({ resource: 'events', verb: 'create' });
    sink.event(web, 'Warning', FailedMountVolume, mountFailure);
    await waitFor(() => creates(server).length === 1, { what: 'create received' });
    await clock.advance(1_000);
    await waitFor(() => sink.backlog().waitingToRetry, { what: 'retry scheduled after the timeout' });
    held.release();
    await clock.advance(5_000);
    await waitFor(() => sink.counters().posted === 1, { what: 'event posted on retry' });
    expect(server.events('prod')).toHaveLength(1);
  });

  it('drops events beyond a full queue', async () => {
    const { server, sink, logs } = await setup({ maxQueuedEvents: 2 });
    const held = server.holdRequests({ resource: 'events', verb: 'create' });
    for (const name of ['a', 'b', 'c', 'd']) sink.event({ kind: 'Pod', namespace: 'prod', name }, 'Warning', FailedMountVolume, mountFailure);
    // a is being written, b and c wait, d does not fit.
    expect(sink.counters().dropped).toBe(1);
    expect(logs.map((l) => l.msg)).toContain('Unable to record event: too many queued events, dropped event');
    held.release();
    await waitFor(() => sink.counters().posted === 3, { what: 'queued events posted' });
    expect(server.events('prod').map((e) => str(e, 'involvedObject', 'name')).sort()).toEqual(['a', 'b', 'c']);
  });
});

describe('KubeEventSink stop', () => {
  it('flushes pending events at once (the waiting retry included) and accepts no more', async () => {
    const { server, sink } = await setup();
    const clear = server.failRequests({ resource: 'events', verb: 'create', status: 503 });
    sink.event(web, 'Warning', FailedMountVolume, mountFailure);
    await waitFor(() => sink.backlog().waitingToRetry, { what: 'retry scheduled' });
    sink.event(api, 'Warning', FailedMountVolume, mountFailure);
    clear();

    // No clock advance: stop() does not wait for the retry timer.
    const counters = await sink.stop({ timeoutMs: 5_000 });
    expect(counters).toMatchObject({ posted: 2, dropped: 0, failed: 0 });
    expect(server.events('prod')).toHaveLength(2);

    sink.event(web, 'Warning', FailedMountVolume, 'after stop');
    expect(sink.counters().dropped).toBe(1);
    expect(await sink.stop()).toEqual(counters);
    expect(creates(server)).toHaveLength(3);
  });

  it('tries each pending event once after stop() and gives up on failure without waiting', async () => {
    const { server, sink, logs } = await setup();
    server.failRequests({ resource: 'events', verb: 'create', status: 503 });
    sink.event(web, 'Warning', FailedMountVolume, mountFailure);
    await waitFor(() => sink.backlog().waitingToRetry, { what: 'retry scheduled' });
    sink.event(api, 'Warning', FailedMountVolume, mountFailure);

    const counters = await sink.stop({ timeoutMs: 5_000 });
    expect(counters).toMatchObject({ posted: 0, failed: 2, dropped: 0 });
    expect(creates(server)).toHaveLength(3);
    expect(logs.map((l) => l.msg)).toContain('Unable to write event (broadcaster is shut down)');
  });

  it('aborts the write in flight and drops the queue when the stop deadline passes', async () => {
    const { server, clock, sink } = await setup();
    const held = server.holdRequests({ resource: 'events', verb: 'create' });
    cleanups.push(() => {
      held.release();
      return Promise.resolve();
    });
    for (const name of ['a', 'b', 'c']) sink.event({ kind: 'Pod', namespace: 'prod', name }, 'Warning', FailedMountVolume, mountFailure);
    await waitFor(() => creates(server).length === 1, { what: 'first create received' });

    let stopped = false;
    const stopping = sink.stop({ timeoutMs: 2_000 }).then((counters) => {
      stopped = true;
      return counters;
    });
    await clock.advance(1_999);
    expect(stopped).toBe(false);
    await clock.advance(1);
    const counters = await stopping;
    expect(counters).toMatchObject({ posted: 0, failed: 1, dropped: 2 });
    expect(sink.backlog()).toEqual({ queued: 0, writing: false, waitingToRetry: false });
    expect(creates(server)).toHaveLength(1);
  });
});
