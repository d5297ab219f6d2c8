/**
 * KubeEventSink: an {@link EventRecorder} that writes the volume manager's events (FailedMount,
 * FailedAttachVolume…) to the Kubernetes API as core/v1 Events, the way the kubelet's client-go
 * event broadcaster (`tools/record`, event.go) does, so `kubectl describe pod` shows them when
 * the agent manages the node.
 *
 * Contracts:
 * - `event()` never blocks and never throws: it builds the Event (name, timestamps) at once,
 *   queues it and returns. A single worker writes queued events one at a time, in order; while
 *   one event waits for a retry, the events behind it wait too ("if we can't contact the
 *   server, then hold everything while we keep trying"). At most `maxQueuedEvents` (1000, the
 *   broadcaster's `maxQueuedEvents`) wait; more are dropped.
 * - Each event goes through client-go's correlation (event-sink-correlator.ts): spam filter,
 *   aggregation of similar events, counting of identical ones. A repeated event is a strategic
 *   merge PATCH of `count`, `lastTimestamp` and `message` of the existing Event; a 404 on that
 *   PATCH (the Event expired, by default after an hour) creates it again, with the count.
 * - The Event: named `<object name>.<unix nanoseconds in hex>` (kept unique within the sink: a
 *   name whose nanoseconds were already used takes the next one, since the clock has only
 *   millisecond resolution and two events in the same millisecond are common); in the object's
 *   namespace, or `default` for cluster-scoped objects (Node, PersistentVolume) as with the
 *   kubelet; `source` {component `volumescope-agent`, host <node>}; `reportingComponent`
 *   `volumescope.io/agent`, `reportingInstance` <node>. We are not the kubelet, so we do not
 *   claim its component name. Timestamps are written in whole seconds (`metav1.Time`).
 * - Failed writes: transport failures, request timeouts and the statuses an API server
 *   answers when overloaded or restarting (429, 500, 502, 503, 504) are retried, at most
 *   `maxTriesPerEvent` (12) attempts, `sleepDuration` (10 s) apart, the first wait randomized
 *   in [0, 10 s) so that agents do not all retry at once after an API server outage. Any other
 *   status (403, 404 of the namespace, 409 AlreadyExists, 422…) is final: "Server rejected event
 *   (will not retry!)". client-go gives up on every status error, but its REST client has
 *   already retried 429 and 5xx answers with Retry-After; client-node has no such layer, so
 *   these statuses are retried here on the broadcaster's schedule instead.
 * - `stop()`: no event is accepted any more; the event waiting for a retry is tried once more
 *   at once, and each queued event is tried once (no retries: client-go's "once the
 *   broadcaster is shut down, it will only try to record an event in a sink once"), until the
 *   queue is empty or the deadline passes on the clock; then requests in flight are aborted
 *   and what is left is dropped.
 * - `counters()` for tests and metrics: posted, patched, dropped, failed, retries.
 */
import { CoreV1Api, CoreV1Event, Observable, PatchStrategy, setHeaderOptions, V1EventSource, V1ObjectMeta, V1ObjectReference } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Clock, Millis, TimerHandle } from '../../clock/clock.ts';
import { makeApiClient } from './api-client.ts';
import { EVENT_NOTE_LENGTH_LIMIT, truncateMessage } from '../../truncate-message.ts';
import type { EventRecorder, EventType, InvolvedObject } from '../../volume/events.ts';
import { discardLogger, type Logger } from '../../volume/logger.ts';
import { describeApiError } from '../../kube-client/api-errors.ts';
import { RequestDeadlines } from '../../kube-client/request-deadline.ts';
import { EventCorrelator } from './event-sink-correlator.ts';
import type { CorrelateResult, EventCorrelatorOptions, EventPatch, EventRecord, ObservedEventState } from './event-sink-correlator.ts';
import { toRFC3339 } from './plain-json.ts';
import { model } from '../../kube-client/model.ts';

/** client-go's `maxTriesPerEvent`: attempts per event, the first included. */
const maxTriesPerEvent = 12;
/** client-go's `defaultSleepDuration`: the wait between attempts (the first one randomized). */
const defaultEventRetrySleepMs = 10_000;
/** client-go's `maxQueuedEvents`: events waiting to be written; more are dropped. */
const maxQueuedEvents = 1000;
/** Deadline of one POST or PATCH; a hung API server must not hold the queue forever. */
const defaultEventRequestTimeoutMs = 30_000;
/** How long `stop()` tries to write what is pending by default. */
const defaultEventStopTimeoutMs = 5_000;
/** `source.component` of our Events (the kubelet writes `kubelet`). */
const defaultEventSourceComponent = 'volumescope-agent';
/** `reportingComponent` of our Events. */
const defaultEventReportingController = 'volumescope.io/agent';

/** Statuses that mean "the API server cannot take it now", retried like transport failures. */
const retryableStatuses: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);

/** Kinds without a namespace: their Events go to `default` (client-go's `makeEvent`). */
const clusterScopedKinds: ReadonlySet<InvolvedObject['kind']> = new Set(['Node', 'PersistentVolume']);

/** The apiVersion of each kind the engine reports about (all core/v1). */
const apiVersions: Readonly<Record<InvolvedObject['kind'], string>> = {
  Pod: 'v1',
  PersistentVolumeClaim: 'v1',
  PersistentVolume: 'v1',
  Node: 'v1',
};

export interface KubeEventSinkOptions {
  /** Where and how to reach the API server (see `loadKubeConfig`). */
  kubeConfig: KubeConfig;
  /** This node: `source.host` and `reportingInstance` of every Event. */
  nodeName: string;
  /** Time source for timestamps, names, correlation windows, retries and deadlines. */
  clock: Clock;
  /** Receives warn lines for failed and dropped events, info lines for expected rejections. */
  logger?: Logger;
  /** Default {@link defaultEventSourceComponent}. */
  component?: string;
  /** Default {@link defaultEventReportingController}. */
  reportingController?: string;
  /** Default {@link maxTriesPerEvent}. */
  maxTries?: number;
  /** Default {@link defaultEventRetrySleepMs}. */
  retrySleepMs?: number;
  /** Default {@link maxQueuedEvents}. */
  maxQueuedEvents?: number;
  /** Default {@link defaultEventRequestTimeoutMs}. */
  requestTimeoutMs?: number;
  /** A number in [0, 1) for the first retry's jitter; default `Math.random`. */
  random?: () => number;
  /** client-go's `CorrelatorOptions`; every field defaults to client-go's value. */
  correlation?: Omit<EventCorrelatorOptions, 'eventName'>;
}

export interface KubeEventSinkCounters {
  /** Events created (POST), including re-creations after a 404 on PATCH. */
  posted: number;
  /** Existing Events updated (PATCH of count, lastTimestamp and message). */
  patched: number;
  /**
   * Events never written: skipped by the spam filter, invalid, beyond a full queue, recorded
   * after `stop()`, or still queued at the stop deadline.
   */
  dropped: number;
  /** Events given up on after trying: rejected by the server, out of tries, or cut by `stop()`. */
  failed: number;
  /** Attempts beyond the first of an event. */
  retries: number;
}

/** What the worker is doing, for tests and health reports. */
export interface KubeEventSinkBacklog {
  /** Events waiting behind the one being written. */
  queued: number;
  /** A POST or PATCH is in flight. */
  writing: boolean;
  /** The current event failed and waits for its retry timer. */
  waitingToRetry: boolean;
}

export interface KubeEventSinkStopOptions {
  /** How long pending events may still be written; default {@link defaultEventStopTimeoutMs}. */
  timeoutMs?: number;
}

/** Invalid {@link KubeEventSinkOptions}; thrown by the constructor only. */
export class KubeEventSinkOptionsError extends Error {
  override readonly name = 'KubeEventSinkOptionsError';
}

export function isKubeEventSinkOptionsError(err: unknown): err is KubeEventSinkOptionsError {
  return err instanceof KubeEventSinkOptionsError;
}

type Phase = 'running' | 'stopping' | 'stopped';
type WriteOutcome = 'done' | 'retry';


export class KubeEventSink implements EventRecorder {
  readonly nodeName: string;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly component: string;
  private readonly reportingController: string;
  private readonly maxTries: number;
  private readonly retrySleepMs: number;
  private readonly maxQueued: number;
  private readonly random: () => number;
  private readonly core: CoreV1Api;
  private readonly deadlines: RequestDeadlines;
  private readonly correlator: EventCorrelator;

  private phase: Phase = 'running';
  /** Set at the stop deadline: nothing more is written. */
  private abandoned = false;
  private readonly queue: EventRecord[] = [];
  private running = false;
  private workerDone: Promise<void> = Promise.resolve();
  private writing = false;
  private retryWait: { timer: TimerHandle; wake: () => void } | undefined;
  private stopping: Promise<KubeEventSinkCounters> | undefined;
  /** The last nanosecond value used in a name (see the file comment). */
  private lastNameNanos = 0n;
  private readonly counts: KubeEventSinkCounters = { posted: 0, patched: 0, dropped: 0, failed: 0, retries: 0 };

  constructor(options: KubeEventSinkOptions) {
    if (options.nodeName.trim() === '') throw new KubeEventSinkOptionsError('KubeEventSink: nodeName must not be empty');
    this.nodeName = options.nodeName;
    this.clock = options.clock;
    this.logger = options.logger ?? discardLogger;
    this.component = options.component ?? defaultEventSourceComponent;
    this.reportingController = options.reportingController ?? defaultEventReportingController;
    this.maxTries = positiveInteger('maxTries', options.maxTries ?? maxTriesPerEvent);
    this.retrySleepMs = nonNegative('retrySleepMs', options.retrySleepMs ?? defaultEventRetrySleepMs);
    this.maxQueued = positiveInteger('maxQueuedEvents', options.maxQueuedEvents ?? maxQueuedEvents);
    this.random = options.random ?? Math.random;
    this.core = makeApiClient(options.kubeConfig, CoreV1Api);
    this.deadlines = new RequestDeadlines({ clientNode: { Observable }, clock: this.clock, timeoutMs: positiveInteger('requestTimeoutMs', options.requestTimeoutMs ?? defaultEventRequestTimeoutMs) });
    this.correlator = new EventCorrelator({
      ...options.correlation,
      eventName: (objectName, at) => this.eventName(objectName, at),
    });
  }

  /** Queues an event about `object` (see the file comment); never throws. */
  event(object: InvolvedObject, type: EventType, reason: string, message: string): void {
    try {
      // A driver's error text may be huge: the API server refuses notes over its limit.
      this.record(object, type, reason, truncateMessage(message, EVENT_NOTE_LENGTH_LIMIT));
    } catch (err) {
      // A recorder must not fail its caller; a bug here only costs the event.
      this.counts.dropped += 1;
      this.log('warn', 'Unable to record event (will not retry!)', { err, reason });
    }
  }

  counters(): KubeEventSinkCounters {
    return { ...this.counts };
  }

  backlog(): KubeEventSinkBacklog {
    return { queued: this.queue.length, writing: this.writing, waitingToRetry: this.retryWait !== undefined };
  }

  /**
   * Stops accepting events and writes what is pending (one attempt each) until done or
   * `timeoutMs` passes on the clock; then aborts and drops the rest. Resolves with the final
   * counters; calling it again returns the same result.
   */
  stop(options: KubeEventSinkStopOptions = {}): Promise<KubeEventSinkCounters> {
    this.stopping ??= this.stopNow(options.timeoutMs ?? defaultEventStopTimeoutMs);
    return this.stopping;
  }

  /** Logs; a throwing logger must neither reach the recorder's caller nor stop the worker. */
  private log(level: 'info' | 'warn', msg: string, fields: Record<string, unknown>): void {
    try {
      this.logger[level](msg, fields);
    } catch {
      // Nothing left to report to.
    }
  }

  // -------------------------------------------------------------------------------------------
  // Recording

  private record(object: InvolvedObject, type: EventType, reason: string, message: string): void {
    const described = { kind: object.kind, namespace: object.namespace, name: object.name, type, reason, message };
    if (this.phase !== 'running') {
      this.counts.dropped += 1;
      this.log('warn', 'Unable to record event: the event sink is stopped, dropped event', { event: described });
      return;
    }
    if (type !== 'Normal' && type !== 'Warning') {
      this.counts.dropped += 1;
      this.log('warn', 'Unsupported event type', { eventType: type, event: described });
      return;
    }
    if (object.name === '' || !Object.hasOwn(apiVersions, object.kind)) {
      this.counts.dropped += 1;
      this.log('warn', 'Could not construct reference, will not report event', { event: described });
      return;
    }
    if (this.queue.length >= this.maxQueued) {
      this.counts.dropped += 1;
      this.log('warn', 'Unable to record event: too many queued events, dropped event', { event: described });
      return;
    }
    const now = this.clock.now();
    const objectNamespace = clusterScopedKinds.has(object.kind) ? '' : (object.namespace ?? '');
    this.queue.push({
      namespace: objectNamespace === '' ? 'default' : objectNamespace,
      name: this.eventName(object.name, now),
      involvedObject: { kind: object.kind, namespace: objectNamespace, name: object.name, uid: object.uid ?? '', apiVersion: apiVersions[object.kind] },
      type,
      reason,
      message,
      count: 1,
      firstTimestamp: now,
      lastTimestamp: now,
      source: { component: this.component, host: this.nodeName },
      reportingController: this.reportingController,
      reportingInstance: this.nodeName,
    });
    this.startWorker();
  }

  /** `<object name>.<unix nanoseconds, hex>`, strictly increasing within this sink. */
  private eventName(objectName: string, at: Millis): string {
    let nanos = BigInt(Math.trunc(at)) * 1_000_000n;
    if (nanos <= this.lastNameNanos) nanos = this.lastNameNanos + 1n;
    this.lastNameNanos = nanos;
    return `${objectName}.${nanos.toString(16)}`;
  }

  // -------------------------------------------------------------------------------------------
  // The worker

  private startWorker(): void {
    if (this.running) return;
    this.running = true;
    this.workerDone = this.work();
  }

  /** Writes queued events one at a time; ends (synchronously with the last check) when none is left. */
  private async work(): Promise<void> {
    for (let next = this.queue.shift(); next !== undefined; next = this.queue.shift()) {
      try {
        await this.process(next);
      } catch (err) {
        // Not expected (write failures are outcomes, not exceptions); keep the queue moving.
        this.counts.failed += 1;
        this.log('warn', 'Unable to write event (will not retry!)', { err, event: describe(next) });
      }
    }
    this.running = false;
  }

  /** client-go's `recordToSink`: correlate, then write with retries. */
  private async process(event: EventRecord): Promise<void> {
    if (this.abandoned) {
      this.counts.dropped += 1;
      return;
    }
    const result = this.correlator.correlate(event, this.clock.now());
    if (result.skip) {
      this.counts.dropped += 1;
      return;
    }
    let tries = 0;
    for (;;) {
      if ((await this.write(result)) === 'done') return;
      tries += 1;
      if (tries >= this.maxTries) {
        this.counts.failed += 1;
        this.log('warn', 'Unable to write event (retry limit exceeded!)', { event: describe(result.event), tries });
        return;
      }
      if (this.phase !== 'running') {
        this.counts.failed += 1;
        this.log('warn', 'Unable to write event (broadcaster is shut down)', { event: describe(result.event) });
        return;
      }
      // Randomize the first wait so that agents do not all come back at once after an outage.
      await this.sleep(tries === 1 ? this.retrySleepMs * this.random() : this.retrySleepMs);
      if (this.abandoned) {
        this.counts.failed += 1;
        this.log('warn', 'Unable to write event (broadcaster is shut down)', { event: describe(result.event) });
        return;
      }
      this.counts.retries += 1;
    }
  }

  /** client-go's `recordEvent`: `done` when written or given up on, `retry` to try again later. */
  private async write(result: Extract<CorrelateResult, { skip: false }>): Promise<WriteOutcome> {
    const { event, patch, key } = result;
    this.writing = true;
    try {
      let answer: CoreV1Event;
      let created = true;
      if (patch === undefined) {
        answer = await this.create(event);
      } else {
        try {
          answer = await this.patch(event, patch);
          created = false;
        } catch (err) {
          // The Event may have expired (the API server deletes Events after --event-ttl).
          if (describeApiError(err).status !== 404) throw err;
          answer = await this.create(event);
        }
      }
      this.correlator.updateState(key, observedState(answer, event));
      if (created) this.counts.posted += 1;
      else this.counts.patched += 1;
      return 'done';
    } catch (err) {
      const info = describeApiError(err);
      if (info.status !== undefined && !retryableStatuses.has(info.status)) {
        this.counts.failed += 1;
        const fields = { event: describe(event), err: info.message };
        // An Event that already exists is not a problem worth a warning (client-go: V(5)).
        this.log(info.status === 409 ? 'info' : 'warn', 'Server rejected event (will not retry!)', fields);
        return 'done';
      }
      this.log('warn', 'Unable to write event (may retry after sleeping)', { event: describe(event), err: info.message });
      return 'retry';
    } finally {
      this.writing = false;
    }
  }

  private create(event: EventRecord): Promise<CoreV1Event> {
    const o = event.involvedObject;
    const body = model(CoreV1Event, {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: model(V1ObjectMeta, { name: event.name, namespace: event.namespace }),
      involvedObject: model(V1ObjectReference, {
        kind: o.kind,
        ...(o.namespace === '' ? {} : { namespace: o.namespace }),
        name: o.name,
        ...(o.uid === '' ? {} : { uid: o.uid }),
        apiVersion: o.apiVersion,
      }),
      reason: event.reason,
      message: event.message,
      type: event.type,
      count: event.count,
      firstTimestamp: wholeSeconds(event.firstTimestamp),
      lastTimestamp: wholeSeconds(event.lastTimestamp),
      source: model(V1EventSource, { component: event.source.component, host: event.source.host }),
      reportingComponent: event.reportingController,
      reportingInstance: event.reportingInstance,
    });
    return this.deadlines.run(`POST /api/v1/namespaces/${event.namespace}/events`, (options) =>
      this.core.createNamespacedEvent({ namespace: event.namespace, body }, options),
    );
  }

  private patch(event: EventRecord, patch: EventPatch): Promise<CoreV1Event> {
    const body = {
      count: patch.count,
      lastTimestamp: toRFC3339(wholeSeconds(patch.lastTimestamp)),
      ...(patch.message === undefined ? {} : { message: patch.message }),
    };
    return this.deadlines.run(`PATCH /api/v1/namespaces/${event.namespace}/events/${event.name}`, (options) =>
      this.core.patchNamespacedEvent(
        { namespace: event.namespace, name: event.name, body },
        setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch, options),
      ),
    );
  }

  /** Waits `ms` on the clock, or less when `stop()` wakes the waiter. */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        if (this.retryWait === undefined) return;
        this.clock.clearTimeout(this.retryWait.timer);
        this.retryWait = undefined;
        resolve();
      };
      this.retryWait = { timer: this.clock.setTimeout(wake, Math.max(0, ms)), wake };
    });
  }

  // -------------------------------------------------------------------------------------------
  // Stopping

  private async stopNow(timeoutMs: number): Promise<KubeEventSinkCounters> {
    this.phase = 'stopping';
    this.retryWait?.wake();
    if (this.running) {
      const deadline = this.clock.setTimeout(() => {
        this.abandon();
      }, Math.max(0, timeoutMs));
      try {
        await this.workerDone;
      } finally {
        this.clock.clearTimeout(deadline);
      }
    }
    this.phase = 'stopped';
    this.deadlines.abortAll();
    return this.counters();
  }

  /** The stop deadline: abort what is in flight, drop what is queued. */
  private abandon(): void {
    this.abandoned = true;
    const left = this.queue.length;
    if (left > 0) {
      this.counts.dropped += left;
      this.queue.length = 0;
      this.log('warn', 'Unable to write events before the stop deadline, dropped events', { dropped: left });
    }
    this.deadlines.abortAll();
    this.retryWait?.wake();
  }
}

// ---------------------------------------------------------------------------------------------
// Helpers

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new KubeEventSinkOptionsError(`KubeEventSink: ${name} must be a positive integer (got ${value})`);
  return value;
}

function nonNegative(name: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) throw new KubeEventSinkOptionsError(`KubeEventSink: ${name} must be a non-negative number (got ${value})`);
  return value;
}

/** `metav1.Time` has second precision: what the API server would keep of `ms`. */
function wholeSeconds(ms: Millis): Date {
  return new Date(Math.floor(ms / 1000) * 1000);
}

/** The server's name, count, first timestamp and resourceVersion, ours where it has none. */
function observedState(answer: CoreV1Event, sent: EventRecord): ObservedEventState {
  const first = answer.firstTimestamp instanceof Date ? answer.firstTimestamp.getTime() : Number.NaN;
  return {
    name: answer.metadata.name ?? sent.name,
    count: typeof answer.count === 'number' && answer.count > 0 ? answer.count : sent.count,
    firstTimestamp: Number.isNaN(first) ? sent.firstTimestamp : first,
    resourceVersion: answer.metadata.resourceVersion ?? '',
  };
}

/** An event for log lines. */
function describe(event: EventRecord): Record<string, string | number> {
  const o = event.involvedObject;
  return {
    namespace: event.namespace,
    name: event.name,
    involvedObject: `${o.kind} ${o.namespace === '' ? '' : `${o.namespace}/`}${o.name}`,
    type: event.type,
    reason: event.reason,
    message: event.message,
    count: event.count,
  };
}

