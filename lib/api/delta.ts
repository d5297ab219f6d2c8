/**
 * Deltas between two snapshots, as sent in `event: delta` of `GET /api/v1/events`.
 *
 * A delta takes a snapshot at `fromSeq` to the snapshot at `seq`:
 * - keyed collections travel as upserts (whole items) and removals (keys);
 * - ring buffers (`recentEvents`, `audit`) travel as appended items plus the length after
 *   trimming from the front;
 * - everything else travels in `set`, replaced whole when it changed.
 *
 * Both functions are pure, never mutate their inputs and return normalized values, so folding
 * `applyDelta` over the deltas of successive snapshots gives exactly the normalized last
 * snapshot.
 */
import { z } from 'zod';
import { jsonEqual } from './json-equal.ts';
import { ObserveSchema } from './observe.ts';
import { MountHealthSchema, mountHealthKey, UnmountBlockersSchema, unmountBlockersKey } from './mount-health.ts';
import {
  compareKeys,
  isKnownNormalized,
  markNormalized,
  normalizeActualVolume,
  normalizeDesiredPod,
  normalizePodErrors,
  normalizeSnapshot,
  sortByKey,
} from './normalize-snapshot.ts';
import {
  ActualVolumeSchema,
  AgentInfoSchema,
  AttachVerificationSchema,
  CsiDriverCallsSchema,
  NodeConditionSchema,
  OperationLogEntrySchema,
  VolumeStatsSchema,
  AuditEntrySchema,
  DesiredPodSchema,
  DriverSchema,
  MounterSchema,
  OperationHistorySchema,
  OperationSchema,
  PodErrorsSchema,
  ReconstructedVolumeSchema,
  ReconstructionStatusSchema,
  RecentEventSchema,
  SeqSchema,
  SourceErrorSchema,
  actualVolumeKey,
  desiredPodKey,
  driverKey,
  operationKey,
  reconstructedVolumeKey,
  sourceErrorKey,
  type PodErrors,
  type ReconstructionStatus,
  type Snapshot,
} from './snapshot.ts';

// TYPES

/** Changes to a keyed collection: items added or changed (whole), and keys removed. */
function keyedChangeSchema<T extends z.ZodType>(item: T) {
  return z.object({
    /** Items that are new or differ from the previous snapshot, in key order; absent when none. */
    upsert: z.array(item).optional(),
    /** Keys of items that are gone, in key order; absent when none. */
    remove: z.array(z.string()).optional(),
  });
}

/** Changes to a ring buffer: new items at the end, then keep only the last `length` items. */
function ringChangeSchema<T extends z.ZodType>(item: T) {
  return z.object({
    /** Items appended after the previous snapshot, oldest first; may be empty when only trimmed. */
    append: z.array(item),
    /** The buffer's length after appending and trimming from the front. */
    length: z.number().int().nonnegative(),
  });
}

/** Top-level values that are replaced whole when they change. */
export const DeltaSetSchema = z.object({
  nodeName: z.string().optional(),
  statesSynced: z.boolean().optional(),
  agent: AgentInfoSchema.optional(),
  mounter: MounterSchema.optional(),
  /** `reconstruction` without its `volumes` (which travel in `reconstructionVolumes`). */
  reconstruction: ReconstructionStatusSchema.optional(),
  attachVerification: AttachVerificationSchema.optional(),
  /** The observe-mode section, whole; `null` when it went away. */
  observe: ObserveSchema.nullable().optional(),
  /** The Node's conditions, whole; `null` when they went away. */
  nodeConditions: z.array(NodeConditionSchema).nullable().optional(),
  /** The CSI driver panel, whole; `null` when it went away. */
  csiPanel: z.array(CsiDriverCallsSchema).nullable().optional(),
  /** The volume stats of the last pass, whole (they change together, once a pass); `null` when they went away. */
  volumeStats: z.array(VolumeStatsSchema).nullable().optional(),
});
/** Top-level values of a delta that are replaced whole; a field is absent when unchanged. */
export type DeltaSet = z.infer<typeof DeltaSetSchema>;

/** The changes between the snapshot at `fromSeq` and the one at `seq`. */
export const DeltaSchema = z
  .object({
    /** The `seq` of the snapshot this delta applies to. */
    fromSeq: SeqSchema,
    /** The `seq` of the snapshot it produces; always greater than `fromSeq`. */
    seq: SeqSchema,
    /** Replaced top-level values; absent when none changed. */
    set: DeltaSetSchema.optional(),
    /** `desired.pods` by `uid`. */
    desiredPods: keyedChangeSchema(DesiredPodSchema).optional(),
    /** `actual.volumes` by `uniqueVolumeName`. */
    actualVolumes: keyedChangeSchema(ActualVolumeSchema).optional(),
    /** `operations` by {@link operationKey}. */
    operations: keyedChangeSchema(OperationSchema).optional(),
    /** `operationHistory` by {@link operationKey}. */
    operationHistory: keyedChangeSchema(OperationHistorySchema).optional(),
    /** `reconstruction.volumes` by `podUid|volumeName`. */
    reconstructionVolumes: keyedChangeSchema(ReconstructedVolumeSchema).optional(),
    /** `podErrors`: the new error list of each changed pod, and pods without errors now. */
    podErrors: z.object({ upsert: PodErrorsSchema.optional(), remove: z.array(z.string()).optional() }).optional(),
    /** `sourceErrors` by `file`. */
    sourceErrors: keyedChangeSchema(SourceErrorSchema).optional(),
    /** `drivers` by `name`. */
    drivers: keyedChangeSchema(DriverSchema).optional(),
    recentEvents: ringChangeSchema(RecentEventSchema).optional(),
    audit: ringChangeSchema(AuditEntrySchema).optional(),
    /** `mountHealth` by `path`. */
    mountHealth: keyedChangeSchema(MountHealthSchema).optional(),
    /** `unmountBlockers` by {@link unmountBlockersKey}. */
    unmountBlockers: keyedChangeSchema(UnmountBlockersSchema).optional(),
    operationLog: ringChangeSchema(OperationLogEntrySchema).optional(),
  })
  .refine((d) => d.seq > d.fromSeq, { error: 'must be greater than fromSeq', path: ['seq'] });
/**
 * The changes between the snapshot at `fromSeq` and the one at `seq`. Every part is absent when
 * nothing in it changed, so a delta for one changed volume carries just that volume.
 */
export type Delta = z.infer<typeof DeltaSchema>;

/** Changes to one keyed collection. */
export interface KeyedChange<T> {
  upsert?: T[];
  remove?: string[];
}

/** Changes to one ring buffer. */
export interface RingChange<T> {
  append: T[];
  length: number;
}

/**
 * How each top-level snapshot field travels in a delta. Listing every key makes adding a
 * snapshot field without deciding how it is diffed a type error.
 */
export const snapshotFieldTransport: Record<keyof Snapshot, 'seq' | 'set' | 'keyed' | 'ring'> = {
  nodeName: 'set',
  seq: 'seq',
  statesSynced: 'set',
  observe: 'set',
  nodeConditions: 'set',
  agent: 'set',
  mounter: 'set',
  desired: 'keyed',
  actual: 'keyed',
  operations: 'keyed',
  operationHistory: 'keyed',
  reconstruction: 'keyed',
  podErrors: 'keyed',
  sourceErrors: 'keyed',
  recentEvents: 'ring',
  audit: 'ring',
  drivers: 'keyed',
  attachVerification: 'set',
  mountHealth: 'keyed',
  unmountBlockers: 'keyed',
  csiPanel: 'set',
  volumeStats: 'set',
  operationLog: 'ring',
};

/**
 * A delta does not fit the snapshot it is applied to (`snapshot.seq !== delta.fromSeq`), or
 * its sequence numbers are not increasing. The client has missed deltas and must reload the
 * snapshot (or reconnect the stream).
 */
export class DeltaSequenceError extends Error {
  override readonly name = 'DeltaSequenceError';

  constructor(
    /** The `seq` of the snapshot the delta was applied to; `null` when there was none. */
    readonly snapshotSeq: number | null,
    readonly fromSeq: number,
    readonly seq: number,
  ) {
    super(
      seq <= fromSeq
        ? `delta ${fromSeq}->${seq} does not advance the sequence`
        : `delta ${fromSeq}->${seq} does not apply to snapshot ${snapshotSeq === null ? '(none)' : snapshotSeq}`,
    );
  }
}

/** True for a {@link DeltaSequenceError}. */
export function isDeltaSequenceError(err: unknown): err is DeltaSequenceError {
  return err instanceof DeltaSequenceError;
}

// COLLECTIONS

function diffKeyed<T>(prev: T[], next: T[], key: (item: T) => string): KeyedChange<T> | undefined {
  if (prev === next) return undefined;
  const previous = new Map(prev.map((item) => [key(item), item]));
  const upsert: T[] = [];
  for (const item of next) {
    const k = key(item);
    const before = previous.get(k);
    if (before === undefined || !jsonEqual(before, item)) upsert.push(item);
    previous.delete(k);
  }
  const remove = [...previous.keys()];
  if (upsert.length === 0 && remove.length === 0) return undefined;
  return { ...(upsert.length > 0 ? { upsert } : {}), ...(remove.length > 0 ? { remove } : {}) };
}

function applyKeyed<T>(items: T[], change: KeyedChange<T> | undefined, key: (item: T) => string): T[] {
  if (change === undefined) return items;
  const upsert = change.upsert ?? [];
  const replaced = new Set([...(change.remove ?? []), ...upsert.map(key)]);
  return sortByKey([...items.filter((item) => !replaced.has(key(item))), ...upsert], key);
}

/** The first index at or after `from` whose item's key is not below `k` (`items` in key order). */
function lowerBound<T>(items: readonly T[], k: string, key: (item: T) => string, from: number): number {
  let lo = from;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareKeys(key(items[mid] as T), k) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * {@link applyKeyed} for `items` already in key order: each changed key is found by binary
 * search and only the changed positions are replaced, so the cost is the changed items (plus
 * one copy of the array) instead of a key lookup and order check per item. Unchanged items are
 * kept by reference. Same result as `applyKeyed`: per key the upserts replace every item of that
 * key (an upsert wins over a removal of the same key), in key order, upserts of one key in the
 * order given. `prepare` normalizes an upserted item (its inner lists).
 */
function mergeKeyed<T>(items: T[], change: KeyedChange<T> | undefined, key: (item: T) => string, prepare?: (item: T) => T): T[] {
  if (change === undefined) return items;
  const edits = new Map<string, T[]>();
  for (const k of change.remove ?? []) if (!edits.has(k)) edits.set(k, []);
  for (const item of change.upsert ?? []) {
    const k = key(item);
    const next = prepare === undefined ? item : prepare(item);
    const list = edits.get(k);
    // A removal of the key (listed first above) gives way to its upserts.
    if (list === undefined) edits.set(k, [next]);
    else list.push(next);
  }
  if (edits.size === 0) return items;
  const out: T[] = [];
  let at = 0;
  for (const k of [...edits.keys()].sort(compareKeys)) {
    const lo = lowerBound(items, k, key, at);
    let hi = lo;
    while (hi < items.length && key(items[hi] as T) === k) hi++;
    for (let i = at; i < lo; i++) out.push(items[i] as T);
    for (const item of edits.get(k) ?? []) out.push(item);
    at = hi;
  }
  for (let i = at; i < items.length; i++) out.push(items[i] as T);
  return out;
}

function diffPodErrors(prev: PodErrors, next: PodErrors): Delta['podErrors'] {
  if (prev === next) return undefined;
  const upsert = Object.entries(next).filter(([uid, errors]) => !jsonEqual(prev[uid], errors));
  const remove = Object.keys(prev).filter((uid) => !Object.hasOwn(next, uid));
  if (upsert.length === 0 && remove.length === 0) return undefined;
  return {
    ...(upsert.length > 0 ? { upsert: Object.fromEntries(upsert) } : {}),
    ...(remove.length > 0 ? { remove } : {}),
  };
}

function applyPodErrors(podErrors: PodErrors, change: Delta['podErrors']): PodErrors {
  if (change === undefined) return podErrors;
  const removed = new Set(change.remove ?? []);
  const entries = Object.entries(podErrors).filter(([uid]) => !removed.has(uid));
  return normalizePodErrors(Object.fromEntries([...entries, ...Object.entries(change.upsert ?? {})]));
}

/**
 * The largest k such that the last k items of `prev` equal the first k items of `next`: how
 * much of `next` the client already has.
 */
function ringOverlap<T>(prev: T[], next: T[]): number {
  for (let k = Math.min(prev.length, next.length); k > 0; k--) {
    const offset = prev.length - k;
    let matches = true;
    for (let i = 0; i < k && matches; i++) matches = jsonEqual(prev[offset + i], next[i]);
    if (matches) return k;
  }
  return 0;
}

function diffRing<T>(prev: T[], next: T[]): RingChange<T> | undefined {
  if (prev === next) return undefined;
  const overlap = ringOverlap(prev, next);
  if (overlap === next.length && prev.length === next.length) return undefined;
  return { append: next.slice(overlap), length: next.length };
}

function applyRing<T>(items: T[], change: RingChange<T> | undefined): T[] {
  if (change === undefined) return items;
  const all = [...items, ...change.append];
  return all.slice(Math.max(0, all.length - change.length));
}

function reconstructionStatus(snapshot: Snapshot): ReconstructionStatus {
  const { state, startedAt, finishedAt } = snapshot.reconstruction;
  return { state, startedAt, finishedAt };
}

// DELTAS

/**
 * The delta that takes `prev` to `next`. Throws a {@link DeltaSequenceError} unless
 * `next.seq > prev.seq`. The result is normalized (upserts and removals in key order) and has
 * no part for what did not change. Both snapshots must have unique keys (as `SnapshotSchema`
 * enforces). Items are compared by reference first, so a producer that reuses unchanged item
 * objects between snapshots keeps diffing cheap at 10k volumes.
 */
export function computeDelta(prev: Snapshot, next: Snapshot): Delta {
  if (next.seq <= prev.seq) throw new DeltaSequenceError(prev.seq, prev.seq, next.seq);
  const a = normalizeSnapshot(prev);
  const b = normalizeSnapshot(next);

  const set: DeltaSet = {};
  if (a.nodeName !== b.nodeName) set.nodeName = b.nodeName;
  if (a.statesSynced !== b.statesSynced) set.statesSynced = b.statesSynced;
  if (!jsonEqual(a.agent, b.agent)) set.agent = b.agent;
  if (!jsonEqual(a.mounter, b.mounter)) set.mounter = b.mounter;
  const status = reconstructionStatus(b);
  if (!jsonEqual(reconstructionStatus(a), status)) set.reconstruction = status;
  if (!jsonEqual(a.attachVerification, b.attachVerification)) set.attachVerification = b.attachVerification;
  if (!jsonEqual(a.observe ?? null, b.observe ?? null)) set.observe = b.observe ?? null;
  if (!jsonEqual(a.nodeConditions ?? null, b.nodeConditions ?? null)) set.nodeConditions = b.nodeConditions ?? null;
  if (!jsonEqual(a.csiPanel ?? null, b.csiPanel ?? null)) set.csiPanel = b.csiPanel ?? null;
  if (!jsonEqual(a.volumeStats ?? null, b.volumeStats ?? null)) set.volumeStats = b.volumeStats ?? null;

  const delta: Delta = { fromSeq: a.seq, seq: b.seq };
  if (Object.keys(set).length > 0) delta.set = set;
  const parts = {
    desiredPods: diffKeyed(a.desired.pods, b.desired.pods, desiredPodKey),
    actualVolumes: diffKeyed(a.actual.volumes, b.actual.volumes, actualVolumeKey),
    operations: diffKeyed(a.operations, b.operations, operationKey),
    operationHistory: diffKeyed(a.operationHistory, b.operationHistory, operationKey),
    reconstructionVolumes: diffKeyed(a.reconstruction.volumes, b.reconstruction.volumes, reconstructedVolumeKey),
    podErrors: diffPodErrors(a.podErrors, b.podErrors),
    sourceErrors: diffKeyed(a.sourceErrors, b.sourceErrors, sourceErrorKey),
    drivers: diffKeyed(a.drivers, b.drivers, driverKey),
    recentEvents: diffRing(a.recentEvents, b.recentEvents),
    audit: diffRing(a.audit, b.audit),
    mountHealth: diffKeyed(a.mountHealth, b.mountHealth, mountHealthKey),
    unmountBlockers: diffKeyed(a.unmountBlockers, b.unmountBlockers, unmountBlockersKey),
    operationLog: diffRing(a.operationLog, b.operationLog),
  };
  for (const [name, part] of Object.entries(parts)) {
    if (part !== undefined) Object.assign(delta, { [name]: part });
  }
  return delta;
}

/**
 * The snapshot after `delta`. Throws a {@link DeltaSequenceError} when `snapshot.seq` is not
 * `delta.fromSeq` (a missed or repeated delta) or the delta does not advance the sequence. The
 * result is normalized; parts the delta does not touch are reused, not copied, and so are the
 * unchanged items of a changed collection (memoized views skip them). On a snapshot known to be
 * normalized (any result of `normalizeSnapshot` or `applyDelta`) the work follows the changed
 * items, not the size of the snapshot.
 */
export function applyDelta(snapshot: Snapshot, delta: Delta): Snapshot {
  if (delta.seq <= delta.fromSeq || snapshot.seq !== delta.fromSeq) {
    throw new DeltaSequenceError(snapshot.seq, delta.fromSeq, delta.seq);
  }
  // A snapshot known to be normalized (every stream state is) takes the fast path: only the
  // changed keys are touched. Any other snapshot is normalized whole afterwards.
  return isKnownNormalized(snapshot) ? markNormalized(applyChanges(snapshot, delta, mergeKeyed)) : normalizeSnapshot(applyChanges(snapshot, delta, applyKeyed));
}

/** How a keyed change is applied: {@link mergeKeyed} (items in key order) or {@link applyKeyed} (any order). */
type KeyedApply = <T>(items: T[], change: KeyedChange<T> | undefined, key: (item: T) => string, prepare?: (item: T) => T) => T[];

/** The snapshot with every part of `delta` applied by `keyed`; parts the delta does not touch are reused. */
function applyChanges(snapshot: Snapshot, delta: Delta, keyed: KeyedApply): Snapshot {
  const set = delta.set ?? {};
  const pods = keyed(snapshot.desired.pods, delta.desiredPods, desiredPodKey, normalizeDesiredPod);
  const volumes = keyed(snapshot.actual.volumes, delta.actualVolumes, actualVolumeKey, normalizeActualVolume);
  const reconstructed = keyed(snapshot.reconstruction.volumes, delta.reconstructionVolumes, reconstructedVolumeKey);
  const { observe: _observeBefore, nodeConditions: _conditionsBefore, csiPanel: _csiPanelBefore, volumeStats: _volumeStatsBefore, ...withoutObserve } = snapshot;
  return {
    ...withoutObserve,
    seq: delta.seq,
    nodeName: set.nodeName ?? snapshot.nodeName,
    statesSynced: set.statesSynced ?? snapshot.statesSynced,
    agent: set.agent ?? snapshot.agent,
    mounter: set.mounter ?? snapshot.mounter,
    attachVerification: set.attachVerification ?? snapshot.attachVerification,
    desired: pods === snapshot.desired.pods ? snapshot.desired : { ...snapshot.desired, pods },
    actual: volumes === snapshot.actual.volumes ? snapshot.actual : { ...snapshot.actual, volumes },
    operations: keyed(snapshot.operations, delta.operations, operationKey),
    operationHistory: keyed(snapshot.operationHistory, delta.operationHistory, operationKey),
    reconstruction:
      set.reconstruction === undefined && reconstructed === snapshot.reconstruction.volumes
        ? snapshot.reconstruction
        : { ...snapshot.reconstruction, ...set.reconstruction, volumes: reconstructed },
    podErrors: applyPodErrors(snapshot.podErrors, delta.podErrors),
    sourceErrors: keyed(snapshot.sourceErrors, delta.sourceErrors, sourceErrorKey),
    drivers: keyed(snapshot.drivers, delta.drivers, driverKey),
    recentEvents: applyRing(snapshot.recentEvents, delta.recentEvents),
    audit: applyRing(snapshot.audit, delta.audit),
    mountHealth: keyed(snapshot.mountHealth, delta.mountHealth, mountHealthKey),
    unmountBlockers: keyed(snapshot.unmountBlockers, delta.unmountBlockers, unmountBlockersKey),
    operationLog: applyRing(snapshot.operationLog, delta.operationLog),
    ...observeAfter(snapshot, set),
    ...nodeConditionsAfter(snapshot, set),
    ...optionalAfter(snapshot, set, 'csiPanel'),
    ...optionalAfter(snapshot, set, 'volumeStats'),
  };
}

/** An optional field replaced whole after the delta's `set.<field>` (null removes it), or `{}` when absent before and after. */
function optionalAfter<K extends 'csiPanel' | 'volumeStats'>(snapshot: Snapshot, set: DeltaSet, key: K): Partial<Pick<Snapshot, K>> {
  const value = set[key] === undefined ? snapshot[key] : (set[key] ?? undefined);
  return value === undefined ? {} : ({ [key]: value } as Partial<Pick<Snapshot, K>>);
}

/** `{observe}` after the delta's `set.observe` (null removes it), or `{}` when absent before and after. */
function observeAfter(snapshot: Snapshot, set: DeltaSet): Pick<Snapshot, 'observe'> {
  const observe = set.observe === undefined ? snapshot.observe : (set.observe ?? undefined);
  return observe === undefined ? {} : { observe };
}

/** `{nodeConditions}` after the delta's `set.nodeConditions` (null removes them), or `{}` when absent before and after. */
function nodeConditionsAfter(snapshot: Snapshot, set: DeltaSet): Pick<Snapshot, 'nodeConditions'> {
  const conditions = set.nodeConditions === undefined ? snapshot.nodeConditions : (set.nodeConditions ?? undefined);
  return conditions === undefined ? {} : { nodeConditions: conditions };
}

/**
 * Like {@link applyDelta}, but returns `snapshot` itself (same reference) for a stale delta,
 * one with `delta.seq <= snapshot.seq` (a duplicate, or one already covered by a newer
 * snapshot). A delta from the future (a gap) still throws a {@link DeltaSequenceError}.
 */
export function applyDeltaIfNewer(snapshot: Snapshot, delta: Delta): Snapshot {
  if (delta.seq <= snapshot.seq) return snapshot;
  return applyDelta(snapshot, delta);
}
