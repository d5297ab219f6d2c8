/**
 * The incident view's history, as pure functions of the snapshot (and `now` for live text):
 *
 * - events aggregated like kubectl does (`FailedMount ×9 over 61 s, last 3 s ago`): one group
 *   per volume, reason and type, with the pods it hit, grouped per volume;
 * - a mount failure group is resolved once its volume is mounted (`resolved: mounted at
 *   18:52:21`), the time taken from the operation history's success, or once its pods are gone;
 * - per operation: first failure, "stuck for" (live), attempts in all, success time.
 *
 * Nothing here reads a clock: `now` is the dashboard's shared ticking clock (`useNow`).
 */
import { operationKey, type ActualVolume, type OperationHistory, type RecentEvent, type Snapshot } from '../api/index.ts';
import { formatDuration, formatRelative, formatUtc } from './time-format.ts';

// EVENT VOLUMES

/**
 * `(podUid, pod's volume name) → unique volume name`, from the desired and actual states: what
 * attributes an event without `volume` (from an agent that predates the field, or loaded from
 * before it) to its volume through the kubelet's `for volume "<name>"` message.
 */
export type VolumeNameLookup = ReadonlyMap<string, string>;

function lookupKey(podUid: string, name: string): string {
  return `${podUid}|${name}`;
}

/** Lookups by the desired pods and actual volumes arrays they were built from. */
const lookupCache = new WeakMap<readonly unknown[], WeakMap<readonly unknown[], VolumeNameLookup>>();

/**
 * The lookup of {@link eventVolume} for a snapshot. Cached by the snapshot's desired pods and
 * actual volumes (arrays a delta keeps when they did not change): the events table asks on every
 * new event, and at 10,000 volumes building it is a few ms.
 */
export function volumeNameLookup(snapshot: Pick<Snapshot, 'desired' | 'actual'>): VolumeNameLookup {
  let byVolumes = lookupCache.get(snapshot.desired.pods);
  if (byVolumes === undefined) {
    byVolumes = new WeakMap();
    lookupCache.set(snapshot.desired.pods, byVolumes);
  }
  let lookup = byVolumes.get(snapshot.actual.volumes);
  if (lookup === undefined) {
    lookup = buildVolumeNameLookup(snapshot);
    byVolumes.set(snapshot.actual.volumes, lookup);
  }
  return lookup;
}

function buildVolumeNameLookup(snapshot: Pick<Snapshot, 'desired' | 'actual'>): VolumeNameLookup {
  const out = new Map<string, string>();
  for (const pod of snapshot.desired.pods) for (const v of pod.volumes) out.set(lookupKey(pod.uid, v.name), v.uniqueVolumeName);
  for (const v of snapshot.actual.volumes) for (const m of v.pods) out.set(lookupKey(m.podUid, m.outerVolumeName), v.uniqueVolumeName);
  return out;
}

/** The kubelet's volume messages name the pod's volume as `for volume "<name>"`. */
const FOR_VOLUME = /for volume "((?:[^"\\]|\\.)*)"/;

/** The unique volume name an event is about: its `volume`, else what its message names; null for none. */
export function eventVolume(event: RecentEvent, lookup: VolumeNameLookup): string | null {
  if (event.volume !== undefined) return event.volume;
  if (event.podUid === null) return null;
  const name = FOR_VOLUME.exec(event.message)?.[1];
  return name === undefined ? null : (lookup.get(lookupKey(event.podUid, name)) ?? null);
}

// AGGREGATION

/** Events of one volume, reason and type, aggregated like kubectl's `×N over …`. */
export interface EventGroup {
  /** `volume|type|reason`, unique among the groups. */
  key: string;
  /** The unique volume name; null for events about no one volume. */
  volume: string | null;
  type: RecentEvent['type'];
  reason: string;
  /** Occurrences: one per agent event, an API event's `count` for each event read from the API server. */
  count: number;
  firstAt: number;
  lastAt: number;
  /** The message of the latest event. */
  lastMessage: string;
  /** Pods the events were about, in order of their first event; empty for node events only. */
  podUids: string[];
}

/**
 * Aggregates events per volume, type and reason; groups newest first (by their last event).
 * Every event counts in exactly one group.
 */
export function aggregateEvents(events: readonly RecentEvent[], lookup: VolumeNameLookup = new Map()): EventGroup[] {
  const groups = new Map<string, EventGroup>();
  for (const event of events) {
    const volume = eventVolume(event, lookup);
    const key = `${volume ?? ''}|${event.type}|${event.reason}`;
    let group = groups.get(key);
    if (group === undefined) {
      group = { key, volume, type: event.type, reason: event.reason, count: 0, firstAt: event.time, lastAt: event.time, lastMessage: event.message, podUids: [] };
      groups.set(key, group);
    }
    // An event read from the API server (observe mode) stands for its `count` occurrences.
    group.count += event.count ?? 1;
    group.firstAt = Math.min(group.firstAt, event.time);
    // The ring is oldest first: a later event (or one at the same time) carries the latest message.
    if (event.time >= group.lastAt) {
      group.lastAt = event.time;
      group.lastMessage = event.message;
    }
    if (event.podUid !== null && !group.podUids.includes(event.podUid)) group.podUids.push(event.podUid);
  }
  return [...groups.values()].sort((a, b) => b.lastAt - a.lastAt || compareText(a.key, b.key));
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A span of time for the `over …` part: seconds up to two minutes (`61 s`), then words. */
export function formatSpan(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  return s < 120 ? `${s} s` : formatDuration(ms);
}

/**
 * The kubectl-like line of a group at `now`: `FailedMount ×9 over 61 s, last 3 s ago`, or
 * `FailedMount, 3 s ago` for a single event, `FailedMount ×7, last 3 s ago` when the repeats are
 * known only from an API event's count (no span: its first occurrence is not known).
 */
export function eventGroupSummary(group: Pick<EventGroup, 'reason' | 'count' | 'firstAt' | 'lastAt'>, now: number): string {
  const last = formatRelative(group.lastAt, now);
  if (group.count === 1) return `${group.reason}, ${last}`;
  if (group.firstAt === group.lastAt) return `${group.reason} ×${group.count}, last ${last}`;
  return `${group.reason} ×${group.count} over ${formatSpan(group.lastAt - group.firstAt)}, last ${last}`;
}

// RESOLUTION

/** Reasons that report a failure to get a volume mounted: resolved once it is. */
const MOUNT_FAILURE_REASONS: ReadonlySet<string> = new Set(['FailedMount', 'FailedMapVolume', 'FailedAttachVolume', 'FailedMountOnFilesystemMismatch']);

/** Operations whose success means the volume is (further) set up for its pods. */
const MOUNT_OPERATIONS: ReadonlySet<string> = new Set(['volume_mount', 'map_volume', 'volume_attach', 'verify_controller_attached_volume']);

/**
 * How a group stands: `mounted` (resolved: its volume is mounted; `mountedAt` is when, null when
 * not known), `pods-gone` (over without a mount: none of its pods is wanted or has the volume any
 * more), or `open`.
 */
export type EventGroupResolution = { state: 'mounted'; mountedAt: number | null } | { state: 'pods-gone' } | { state: 'open' };

/** True for a group that needs no more attention. */
export function isResolved(resolution: EventGroupResolution): boolean {
  return resolution.state !== 'open';
}

/**
 * Whether a mount-failure group is resolved: its volume is mounted now, for every pod the group
 * is about (for the volume alone when it names none). `mountedAt` is the latest success of a
 * mount operation of the volume (for those pods, or volume-wide) in the operation history at or
 * after the group's first event; null when the history does not have it (evicted, a mount that
 * never failed). A group whose pods are all gone (not desired, nothing mounted) is `pods-gone`.
 * Groups of other reasons, and `Normal` events, are always `open` (they report no failure).
 */
export function eventGroupResolution(
  group: Pick<EventGroup, 'volume' | 'reason' | 'type' | 'podUids' | 'firstAt'>,
  actual: ReadonlyMap<string, ActualVolume>,
  history: readonly OperationHistory[],
  desiredPods: ReadonlySet<string> = new Set(),
): EventGroupResolution {
  if (group.volume === null || group.type !== 'Warning' || !MOUNT_FAILURE_REASONS.has(group.reason)) return { state: 'open' };
  const mounted = new Set((actual.get(group.volume)?.pods ?? []).filter((m) => m.mountState === 'mounted').map((m) => m.podUid));
  const pods = group.podUids;
  if (pods.length === 0 ? mounted.size === 0 : !pods.every((uid) => mounted.has(uid))) {
    const gone = pods.length > 0 && pods.every((uid) => !desiredPods.has(uid) && !mounted.has(uid));
    return gone ? { state: 'pods-gone' } : { state: 'open' };
  }
  let mountedAt: number | null = null;
  for (const h of history) {
    if (h.volume !== group.volume || !MOUNT_OPERATIONS.has(h.operationName) || h.succeededAt === null || h.succeededAt < group.firstAt) continue;
    if (h.podUid !== null && pods.length > 0 && !pods.includes(h.podUid)) continue;
    mountedAt = Math.max(mountedAt ?? 0, h.succeededAt);
  }
  return { state: 'mounted', mountedAt };
}

/** The events of one volume (or of no volume: `volume` null), its groups newest first. */
export interface VolumeEvents {
  volume: string | null;
  groups: (EventGroup & { resolution: EventGroupResolution })[];
  /** The latest event of the volume. */
  lastAt: number;
  /** True when every group is resolved or not a failure (`Normal`). */
  settled: boolean;
}

/**
 * The events of a snapshot (or a subset of them) grouped per volume: volumes with unresolved
 * warnings first, then by their latest event, newest first; events about no one volume last.
 */
export function eventsByVolume(events: readonly RecentEvent[], snapshot: Pick<Snapshot, 'desired' | 'actual' | 'operationHistory'>): VolumeEvents[] {
  const actual = new Map(snapshot.actual.volumes.map((v) => [v.uniqueVolumeName, v]));
  const desiredPods = new Set(snapshot.desired.pods.map((p) => p.uid));
  const byVolume = new Map<string | null, VolumeEvents>();
  for (const group of aggregateEvents(events, volumeNameLookup(snapshot))) {
    const resolution = eventGroupResolution(group, actual, snapshot.operationHistory, desiredPods);
    let entry = byVolume.get(group.volume);
    if (entry === undefined) {
      entry = { volume: group.volume, groups: [], lastAt: group.lastAt, settled: true };
      byVolume.set(group.volume, entry);
    }
    entry.groups.push({ ...group, resolution });
    entry.lastAt = Math.max(entry.lastAt, group.lastAt);
    if (group.type === 'Warning' && !isResolved(resolution)) entry.settled = false;
  }
  return [...byVolume.values()].sort(
    (a, b) => Number(a.volume === null) - Number(b.volume === null) || Number(a.settled) - Number(b.settled) || b.lastAt - a.lastAt,
  );
}

// OPERATION HISTORY

/** Where an operation's history stands at `now`. */
export interface HistoryTiming {
  /** `stuck for 2 min 5 s` while failing; `recovered after 61 s` once it succeeded. */
  text: string;
  /** From the first failure to `now` (failing) or to the success. */
  stuckMs: number;
  succeeded: boolean;
}

/** The "stuck for" of a history at `now` (live while failing, fixed once it succeeded). */
export function historyTiming(history: Pick<OperationHistory, 'firstFailureAt' | 'succeededAt'>, now: number): HistoryTiming {
  if (history.succeededAt !== null) {
    const stuckMs = Math.max(0, history.succeededAt - history.firstFailureAt);
    return { text: `recovered after ${formatSpan(stuckMs)}`, stuckMs, succeeded: true };
  }
  const stuckMs = Math.max(0, now - history.firstFailureAt);
  return { text: `stuck for ${formatSpan(stuckMs)}`, stuckMs, succeeded: false };
}

/** The histories by {@link operationKey}, so an operation of the table finds its own. */
export function historyByOperationKey(history: readonly OperationHistory[]): ReadonlyMap<string, OperationHistory> {
  return new Map(history.map((h) => [operationKey(h), h]));
}

/** Histories still failing first (longest stuck first), then the recovered ones, latest success first. */
export function sortHistory(history: readonly OperationHistory[]): OperationHistory[] {
  return [...history].sort((a, b) => {
    if ((a.succeededAt === null) !== (b.succeededAt === null)) return a.succeededAt === null ? -1 : 1;
    if (a.succeededAt === null || b.succeededAt === null) return a.firstFailureAt - b.firstFailureAt || compareText(operationKey(a), operationKey(b));
    return b.succeededAt - a.succeededAt || compareText(operationKey(a), operationKey(b));
  });
}

// A VOLUME'S FAILURE

/**
 * The failure history of a (pod, volume) pair: its pending operation's own history (same
 * {@link operationKey}); without a pending operation (between a failure and the next attempt's
 * start, or the operation left the table) the longest-stuck history of the pair that still fails
 * (the pod's own operations, and the volume-wide ones, `podUid` null). Null when none.
 */
export function pairFailureHistory(
  pair: { readonly podUid: string; readonly uniqueVolumeName: string; readonly operation: Parameters<typeof operationKey>[0] | null },
  history: readonly OperationHistory[],
  byKey: ReadonlyMap<string, OperationHistory> = historyByOperationKey(history),
): OperationHistory | null {
  if (pair.operation !== null) {
    const own = byKey.get(operationKey(pair.operation));
    if (own !== undefined) return own;
  }
  let found: OperationHistory | null = null;
  for (const h of history) {
    if (h.succeededAt !== null || h.volume !== pair.uniqueVolumeName || (h.podUid !== null && h.podUid !== pair.podUid)) continue;
    if (found === null || h.firstFailureAt < found.firstFailureAt) found = h;
  }
  return found;
}

/** The failed attempts of a history: all of them while it fails, all but the last once it succeeded. */
export function failedAttempts(history: Pick<OperationHistory, 'attemptsTotal' | 'succeededAt'>): number {
  return history.succeededAt === null ? history.attemptsTotal : Math.max(0, history.attemptsTotal - 1);
}

/**
 * `failures ×3 since 2026-11-30 08:00:59 UTC, stuck for 3 s` (`recovered after …` once it
 * succeeded): the failure count, the first failure's absolute time and {@link historyTiming}.
 */
export function failureSummary(history: Pick<OperationHistory, 'attemptsTotal' | 'firstFailureAt' | 'succeededAt'>, now: number): string {
  return `failures ×${failedAttempts(history)} since ${formatUtc(history.firstFailureAt)}, ${historyTiming(history, now).text}`;
}
