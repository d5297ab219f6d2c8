/**
 * Reads a real kubelet's per-operation back-off ("No retries permitted until …") out of the texts it
 * leaves behind, for observe mode, where the agent cannot see the kubelet's pending-operations
 * table. Two kinds of text carry it:
 *
 * - The back-off line of `nestedpendingoperations` (pkg/util/goroutinemap/exponentialbackoff
 *   `GenerateNoRetriesPermittedMsg`), which names the exact deadline:
 *   `Operation for "<key>" failed. No retries permitted until <time> (durationBeforeRetry <duration>). Error: <error>`
 *   and its refusal twin (`exponentialBackoffError`):
 *   `Failed to create operation with name "<key>". An operation with that name failed at <time>. No retries permitted until <time> (<duration>). Last error: "<error>".`
 *   `<time>` is Go's `time.Time.String()` (`2006-01-02 15:04:05.999999999 -0700 MST m=+123.456`),
 *   `<duration>` Go's `time.Duration.String()` (`500ms`, `2m2s`). The key has three shapes across
 *   releases: `{volumeName:<v> podName:<p> nodeName:<n>}` (≥1.19, `%+v` of the operation key; a
 *   later `operationName:<o>` field is accepted), `"<v>" ("<p>")` (older, itself `%q`-quoted), or
 *   a plain name. The error is printed with `%v` in current releases and `%q` in older ones.
 * - The kubelet's Warning events (reasons `FailedMount`, `FailedMapVolume`; `FailedAttachVolume`
 *   also comes from the attach/detach controller), whose messages are the operation executor's
 *   simple errors, `<Op>.<Step> failed for volume "<name>" : <error>` (`generateVolumeMsg`), with
 *   no deadline. For those the deadline is estimated from the event's repeat count, see
 *   {@link latestBackoffPerVolume}.
 *
 * Everything here is pure and total: malformed input gives null (or is skipped), never a throw.
 */
import { initialDurationBeforeRetryMs, maxDurationBeforeRetryMs } from '../operationexecutor/exponential-backoff.ts';
import { FailedAttachVolume, FailedMapVolume, FailedMountVolume } from '../volume/events.ts';
import { parseGoDuration, parseGoTime, parseRfc3339, readGoQuoted, unquoteGoString } from './go-text.ts';

/** Event reasons whose messages report a failed volume operation that enters back-off. */
const VOLUME_BACKOFF_EVENT_REASONS: readonly string[] = [FailedMountVolume, FailedAttachVolume, FailedMapVolume];

/**
 * The client-go event aggregator's prefix for a message that stands for several similar events
 * (`EventAggregatorByReasonMessageFunc`); stripped before parsing.
 */
const COMBINED_EVENTS_PREFIX = '(combined from similar events): ';

/** A back-off deadline read from a kubelet message. */
export interface KubeletBackoff {
  /**
   * `operation-failed`: the log line written when an operation fails and its back-off grows.
   * `backoff-refused`: the error returned when a new attempt is refused inside the window.
   */
  form: 'operation-failed' | 'backoff-refused';
  /**
   * End of the window, epoch ms, rounded up to whole milliseconds, so `now >= retryAt` means the
   * kubelet will start the operation again at its next reconciler pass (100 ms period).
   */
  retryAt: number;
  /** The current window (`durationBeforeRetry`): 500 ms doubling per failure, capped at 2m2s. */
  durationBeforeRetryMs: number;
  /** When the failure was recorded (`retryAt - durationBeforeRetry`, or as printed in `backoff-refused`), epoch ms rounded down. */
  failedAt: number;
  /** The operation key exactly as printed (unquoted), e.g. `{volumeName:kubernetes.io/csi/d^h podName: nodeName:}`. */
  operationKey?: string;
  /** The unique volume name (`kubernetes.io/csi/<driver>^<handle>`, `kubernetes.io/secret/<uid>-<name>`), from the key or the error's `(UniqueName: …)`. */
  uniqueVolumeName?: string;
  /** The volume as the error names it (`for volume "<name>"`: the PV name or the pod's volume name). */
  volumeName?: string;
  /** The pod part of the key (a pod UID); absent when the key has none (attach, device mount, verify). */
  podUID?: string;
  /** The node part of the key; absent when empty. */
  nodeName?: string;
  /** The operation name part of keys that carry one (`volume_mount`, ...). */
  operationName?: string;
  /** The last error, unquoted; may be empty. */
  error: string;
}

/** A failed volume operation as the operation executor phrases it (`GenerateError`). */
export interface VolumeOperationFailure {
  /** Everything before ` for volume`, e.g. `MountVolume.SetUp failed`, `MountVolume.NewMounter initialization failed`. */
  prefix: string;
  /** The `<Op>.<Step>` part of the prefix, e.g. `MountVolume.SetUp`, `AttachVolume.Attach`. */
  operation: string;
  /** The quoted volume name: the PV name for PV-backed volumes, else the pod's volume name. */
  volumeName: string;
  /** From the detailed form's `(UniqueName: "…")`. */
  uniqueVolumeName?: string;
  /** From the detailed form's `pod "<name>" (UID: "<uid>")`. */
  podName?: string;
  podUID?: string;
  /** From the detailed form's `on node "…"` / `from node "…"`. */
  nodeName?: string;
  /** The error after ` : `; empty when the message has none. */
  error: string;
}

const OPERATION_FOR = 'Operation for ';
const FAILED_NO_RETRIES = ' failed. No retries permitted until ';
const DURATION_OPEN = ' (durationBeforeRetry ';
const CREATE_OPERATION = 'Failed to create operation with name ';
const FAILED_AT = '. An operation with that name failed at ';
const NO_RETRIES = '. No retries permitted until ';
const LAST_ERROR = '. Last error: ';

/**
 * Parses the back-off texts described in the module comment, found anywhere in `message` (an
 * Event message, a log line with its klog header). Returns null when neither form is present or
 * any part of it (key, time, duration) is malformed.
 */
export function parseKubeletBackoff(message: string): KubeletBackoff | null {
  if (typeof message !== 'string') return null;
  return parseOperationFailed(message) ?? parseBackoffRefused(message);
}

function parseOperationFailed(message: string): KubeletBackoff | null {
  const at = message.indexOf(`${OPERATION_FOR}"`);
  if (at < 0) return null;
  const key = readGoQuoted(message, at + OPERATION_FOR.length);
  if (key === null || !message.startsWith(FAILED_NO_RETRIES, key.end)) return null;
  const timeStart = key.end + FAILED_NO_RETRIES.length;
  const timeEnd = message.indexOf(DURATION_OPEN, timeStart);
  if (timeEnd < 0) return null;
  const durationEnd = message.indexOf(')', timeEnd + DURATION_OPEN.length);
  if (durationEnd < 0) return null;
  const retry = parseGoTime(message.slice(timeStart, timeEnd));
  const duration = parseGoDuration(message.slice(timeEnd + DURATION_OPEN.length, durationEnd));
  if (retry === null || duration === null || duration < 0) return null;
  // "Error: %v" in current releases, "Error: %q" before, "error: %v" in goroutinemap.
  const tail = /^\. [Ee]rror: /.exec(message.slice(durationEnd + 1));
  if (tail === null) return null;
  const rawError = message.slice(durationEnd + 1 + tail[0].length).trimEnd();
  const error = unquoteGoString(rawError) ?? rawError;
  const retryAt = ceilMs(retry.epochMs, retry.subMillisecondNanos);
  return withDetails({
    form: 'operation-failed',
    retryAt,
    durationBeforeRetryMs: duration,
    failedAt: Math.floor(retry.epochMs + retry.subMillisecondNanos / 1e6 - duration),
    error,
  }, key.value);
}

function parseBackoffRefused(message: string): KubeletBackoff | null {
  const at = message.indexOf(`${CREATE_OPERATION}"`);
  if (at < 0) return null;
  const key = readGoQuoted(message, at + CREATE_OPERATION.length);
  if (key === null || !message.startsWith(FAILED_AT, key.end)) return null;
  const failedStart = key.end + FAILED_AT.length;
  const failedEnd = message.indexOf(NO_RETRIES, failedStart);
  if (failedEnd < 0) return null;
  const retryStart = failedEnd + NO_RETRIES.length;
  const open = message.indexOf(' (', retryStart);
  if (open < 0) return null;
  const close = message.indexOf(')', open);
  if (close < 0 || !message.startsWith(LAST_ERROR, close + 1)) return null;
  const failed = parseGoTime(message.slice(failedStart, failedEnd));
  const retry = parseGoTime(message.slice(retryStart, open));
  const duration = parseGoDuration(message.slice(open + 2, close));
  if (failed === null || retry === null || duration === null || duration < 0) return null;
  const errStart = close + 1 + LAST_ERROR.length;
  const quoted = readGoQuoted(message, errStart);
  const error = quoted?.value ?? message.slice(errStart).replace(/\.\s*$/, '');
  return withDetails({
    form: 'backoff-refused',
    retryAt: ceilMs(retry.epochMs, retry.subMillisecondNanos),
    durationBeforeRetryMs: duration,
    failedAt: failed.epochMs,
    error,
  }, key.value);
}

function ceilMs(epochMs: number, nanos: number): number {
  return nanos > 0 ? epochMs + 1 : epochMs;
}

const STRUCT_KEY = /^\{volumeName:(.*?) podName:(.*?) nodeName:(.*?)(?: operationName:(.*?))?\}$/s;

/** Adds what the operation key and the error text tell about the volume. */
function withDetails(base: KubeletBackoff, key: string): KubeletBackoff {
  const out: KubeletBackoff = { ...base, operationKey: key };
  const struct = STRUCT_KEY.exec(key);
  if (struct !== null) {
    const [, volume = '', pod = '', node = '', operation] = struct;
    if (volume !== '') out.uniqueVolumeName = volume;
    if (pod !== '') out.podUID = pod;
    if (node !== '') out.nodeName = node;
    if (operation !== undefined && operation !== '') out.operationName = operation;
  } else {
    // Older releases: `"<volume>"` or `"<volume>" ("<pod>")`, or the bare name.
    const volume = readGoQuoted(key, 0);
    if (volume === null) {
      if (key !== '' && !/\s/.test(key)) out.uniqueVolumeName = key;
    } else {
      if (volume.value !== '') out.uniqueVolumeName = volume.value;
      const podPart = /^ \(/.exec(key.slice(volume.end));
      const pod = podPart === null ? null : readGoQuoted(key, volume.end + 2);
      if (pod !== null && key.slice(pod.end) === ')' && pod.value !== '') out.podUID = pod.value;
    }
  }
  const failure = parseVolumeOperationFailure(out.error);
  if (failure !== null) {
    out.volumeName = failure.volumeName;
    if (out.uniqueVolumeName === undefined && failure.uniqueVolumeName !== undefined) out.uniqueVolumeName = failure.uniqueVolumeName;
  } else {
    const unique = /\(UniqueName: (")/.exec(out.error);
    const q = unique === null ? null : readGoQuoted(out.error, unique.index + unique[0].length - 1);
    if (q !== null && out.uniqueVolumeName === undefined) out.uniqueVolumeName = q.value;
  }
  return out;
}

const OPERATION_PREFIX = /^([A-Z][A-Za-z]*\.[A-Za-z]+)([^"]*?) for volume (?=")/;

/**
 * Parses the operation executor's error text, simple (`MountVolume.SetUp failed for volume "x" : <err>`,
 * the Event form) or detailed (`… for volume "x" (UniqueName: "…") pod "p" (UID: "…") : <err>`,
 * the log form). The prefix must contain `failed`. Accepts the aggregator's
 * `(combined from similar events): ` prefix. Returns null for other messages, among them
 * `Unable to attach or mount volumes: …` (a timeout, not an operation failure) and
 * `Multi-Attach error for volume …`.
 */
export function parseVolumeOperationFailure(message: string): VolumeOperationFailure | null {
  if (typeof message !== 'string') return null;
  const text = message.startsWith(COMBINED_EVENTS_PREFIX) ? message.slice(COMBINED_EVENTS_PREFIX.length) : message;
  const head = OPERATION_PREFIX.exec(text);
  if (head === null) return null;
  const [matched, operation = '', more = ''] = head;
  const prefix = `${operation}${more}`;
  if (!/\bfailed\b/.test(prefix)) return null;
  const volume = readGoQuoted(text, matched.length);
  if (volume === null) return null;
  const out: VolumeOperationFailure = { prefix, operation, volumeName: volume.value, error: '' };
  let at = volume.end;
  const unique = readLabelled(text, at, ' (UniqueName: ', ')');
  if (unique !== null) {
    out.uniqueVolumeName = unique.value;
    at = unique.end;
  }
  const pod = readLabelled(text, at, ' pod ', '');
  if (pod !== null) {
    const uid = readLabelled(text, pod.end, ' (UID: ', ')');
    if (uid !== null) {
      out.podName = pod.value;
      out.podUID = uid.value;
      at = uid.end;
    }
  }
  const node = readLabelled(text, at, ' on node ', '') ?? readLabelled(text, at, ' from node ', '');
  if (node !== null) {
    out.nodeName = node.value;
    at = node.end;
  }
  const rest = text.slice(at);
  if (/^ ?$/.test(rest)) return out;
  const err = /^ ?: /.exec(rest);
  if (err === null) return null;
  out.error = rest.slice(err[0].length);
  return out;
}

/** Reads `<label>"<value>"<close>` at `at`; null when absent. */
function readLabelled(text: string, at: number, label: string, close: string): { value: string; end: number } | null {
  if (!text.startsWith(label, at)) return null;
  const q = readGoQuoted(text, at + label.length);
  if (q === null || !text.startsWith(close, q.end)) return null;
  return { value: q.value, end: q.end + close.length };
}

/** The fields of a core/v1 Event that observe mode reads. Unknown fields are ignored. */
export interface CoreEvent {
  metadata?: { name?: string; namespace?: string; uid?: string; creationTimestamp?: string };
  involvedObject?: { kind?: string; namespace?: string; name?: string; uid?: string; fieldPath?: string };
  reason?: string;
  message?: string;
  type?: string;
  /** Times this event was seen (the kubelet's correlator increments it for identical messages). */
  count?: number;
  firstTimestamp?: string | null;
  lastTimestamp?: string | null;
  /** `MicroTime`, set by the events.k8s.io API. */
  eventTime?: string | null;
  series?: { count?: number; lastObservedTime?: string } | null;
  source?: { component?: string; host?: string };
}

/** The latest back-off known for one volume of a pod. */
export interface VolumeBackoff {
  /** Grouping key: {@link volumeName} when known, else {@link uniqueVolumeName}. */
  volume: string;
  volumeName?: string;
  uniqueVolumeName?: string;
  /** The event reason (`FailedMount`, ...). */
  reason: string;
  /** `<Op>.<Step>` when the message names it (`MountVolume.SetUp`). */
  operation?: string;
  /** The last error, verbatim. */
  error: string;
  /**
   * `message`: the deadline was printed in the message and is exact.
   * `event-count`: estimated as `lastObserved + min(500ms·2^(count-1), 2m2s)`, the window after
   * the count-th consecutive failure. It is a lower bound when earlier failures of the same
   * operation had other messages (they doubled the window too) and too high when the back-off
   * was reset in between (a kubelet restart, a different operation on the same key); the
   * kubelet's event spam filter can also stop counting. Operators should read it as "about".
   */
  basis: 'message' | 'event-count';
  retryAt: number;
  durationBeforeRetryMs: number;
  /** When the event was last observed, epoch ms. */
  observedAt: number;
  /** The event's repeat count (at least 1). */
  count: number;
  /** The raw operation key, for the `message` basis. */
  operationKey?: string;
  /** The event, to link to it. */
  event: { name?: string; namespace?: string };
}

export interface LatestBackoffOptions {
  /**
   * Only events whose `involvedObject.uid` is this pod UID (a pod recreated under the same name
   * has new operation keys, so its predecessor's back-off does not apply). Events without a uid
   * are kept.
   */
  podUID?: string;
}

/**
 * The window after `failures` consecutive failures of one operation key:
 * `min(500ms · 2^(failures-1), 2m2s)` (exponentialbackoff `Update`).
 */
export function backoffAfterFailures(failures: number): number {
  if (!Number.isFinite(failures) || failures < 1) return initialDurationBeforeRetryMs;
  // 2^9 · 500 ms already exceeds the cap; avoid computing huge powers.
  const n = Math.min(Math.floor(failures), 10);
  return Math.min(initialDurationBeforeRetryMs * 2 ** (n - 1), maxDurationBeforeRetryMs);
}

/** Milliseconds until a retry is permitted (0 when the window has passed). */
export function backoffRemainingMs(backoff: Pick<VolumeBackoff, 'retryAt'>, now: number): number {
  return Math.max(0, backoff.retryAt - now);
}

/** The last time an event was observed: series, then lastTimestamp, eventTime, firstTimestamp, creation. */
export function eventObservedAt(event: CoreEvent): number | null {
  const candidates = [event.series?.lastObservedTime, event.lastTimestamp, event.eventTime, event.firstTimestamp, event.metadata?.creationTimestamp];
  for (const c of candidates) {
    const t = parseRfc3339(c);
    if (t !== null) return t;
  }
  return null;
}

/**
 * Given a pod's events, the latest back-off per volume, sorted by volume. Only events with a
 * reason in {@link VOLUME_BACKOFF_EVENT_REASONS} count. A message with the back-off text gives
 * the exact deadline; a message the operation executor wrote without it gives an estimate from
 * the repeat count (see {@link VolumeBackoff.basis}). Other messages (`Unable to attach or mount
 * volumes: …`, Multi-Attach) and events without a usable timestamp are skipped. Per volume the
 * event observed last wins; on a tie an exact deadline beats an estimate, then the later input.
 */
export function latestBackoffPerVolume(events: readonly CoreEvent[], options: LatestBackoffOptions = {}): VolumeBackoff[] {
  const latest = new Map<string, VolumeBackoff>();
  const list: readonly unknown[] = Array.isArray(events) ? (events as readonly unknown[]) : [];
  for (const event of list) {
    const candidate = backoffFromEvent(event, options);
    if (candidate === null) continue;
    const previous = latest.get(candidate.volume);
    if (
      previous === undefined ||
      candidate.observedAt > previous.observedAt ||
      (candidate.observedAt === previous.observedAt && !(previous.basis === 'message' && candidate.basis === 'event-count'))
    ) {
      latest.set(candidate.volume, candidate);
    }
  }
  return [...latest.values()].sort((a, b) => (a.volume < b.volume ? -1 : a.volume > b.volume ? 1 : 0));
}

function backoffFromEvent(value: unknown, options: LatestBackoffOptions): VolumeBackoff | null {
  if (value === null || typeof value !== 'object') return null;
  const event = value as CoreEvent;
  const reason = event.reason;
  if (typeof reason !== 'string' || !VOLUME_BACKOFF_EVENT_REASONS.includes(reason)) return null;
  if (options.podUID !== undefined) {
    const uid = event.involvedObject?.uid;
    if (uid !== undefined && uid !== '' && uid !== options.podUID) return null;
  }
  const message = typeof event.message === 'string' ? event.message : '';
  const observedAt = eventObservedAt(event);
  if (observedAt === null) return null;
  const rawCount = event.series?.count ?? event.count;
  const count = typeof rawCount === 'number' && Number.isFinite(rawCount) && rawCount >= 1 ? Math.floor(rawCount) : 1;
  const ref: VolumeBackoff['event'] = {};
  if (event.metadata?.name !== undefined) ref.name = event.metadata.name;
  if (event.metadata?.namespace !== undefined) ref.namespace = event.metadata.namespace;

  const exact = parseKubeletBackoff(message);
  if (exact !== null) {
    const volume = exact.volumeName ?? exact.uniqueVolumeName;
    if (volume === undefined) return null;
    const out: VolumeBackoff = {
      volume,
      reason,
      error: exact.error,
      basis: 'message',
      retryAt: exact.retryAt,
      durationBeforeRetryMs: exact.durationBeforeRetryMs,
      observedAt,
      count,
      event: ref,
    };
    if (exact.volumeName !== undefined) out.volumeName = exact.volumeName;
    if (exact.uniqueVolumeName !== undefined) out.uniqueVolumeName = exact.uniqueVolumeName;
    if (exact.operationKey !== undefined) out.operationKey = exact.operationKey;
    const op = parseVolumeOperationFailure(exact.error);
    if (op !== null) out.operation = op.operation;
    return out;
  }
  const failure = parseVolumeOperationFailure(message);
  if (failure === null) return null;
  const duration = backoffAfterFailures(count);
  const out: VolumeBackoff = {
    volume: failure.volumeName,
    volumeName: failure.volumeName,
    reason,
    operation: failure.operation,
    error: failure.error,
    basis: 'event-count',
    retryAt: observedAt + duration,
    durationBeforeRetryMs: duration,
    observedAt,
    count,
    event: ref,
  };
  if (failure.uniqueVolumeName !== undefined) out.uniqueVolumeName = failure.uniqueVolumeName;
  return out;
}
