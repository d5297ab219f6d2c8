/**
 * Builds the API {@link Snapshot} (lib/api/snapshot.ts) from the agent runtime's views of the
 * volume manager.
 *
 * Every build starts from the previously built snapshot and keeps the previous object of every
 * item that did not change, and the previous array of every collection none of whose items
 * changed. Unchanged items are recognised by comparing the previous item with the engine's view
 * field by field (snapshot-items.ts), so they cost a map lookup and no allocation. Collections
 * are produced in key order (the normalized form) and indexed by key → position, so a build
 * where only items changed copies one array and sorts nothing. `computeDelta` compares by
 * reference first: diffing two snapshots of 10k volumes where one changed touches one item.
 *
 * The builder only reads; it never mutates the engine or a snapshot it returned.
 */
import { jsonEqual } from '../../lib/api/json-equal.ts';
import { compareKeys, sortByKey } from '../../lib/api/normalize-snapshot.ts';
import {
  actualVolumeKey,
  desiredPodKey,
  desiredVolumeKey,
  driverKey,
  operationKey,
  reconstructedVolumeKey,
  sourceErrorKey,
  type AgentInfo,
  type AttachVerification,
  type AuditEntry,
  type DesiredPod,
  type DesiredVolume,
  type Driver,
  type Mounter,
  type Operation,
  type PodErrors,
  type ReconstructedVolume,
  type Reconstruction,
  type Snapshot,
  type SourceError,
} from '../../lib/api/snapshot.ts';
import type { PendingOperationView, DesiredVolumeView, ReconstructionEntry } from '../../lib/volumemanager/index.ts';
import type { AgentRuntime } from '../runtime.ts';
import {
  actualVolumeFromView,
  actualVolumeMatchesView,
  desiredPodNamespace,
  desiredPodUid,
  desiredVolumeFromView,
  desiredVolumeMatchesView,
  operationFromView,
  operationMatchesView,
  operationViewKey,
  reconstructedVolumeFromEntry,
  reconstructedVolumeMatchesEntry,
  reconstructionEntryKey,
  type DesiredPodEntry,
} from './snapshot-items.ts';

// TYPES

/** Item positions of a keyed collection (sorted by key) by key. */
type Positions = ReadonlyMap<string, number>;

/** The lookups the next build reuses items through. */
export interface SnapshotIndex {
  desiredPods: Positions;
  actualVolumes: Positions;
  operations: Positions;
  reconstructedVolumes: Positions;
  /** Namespaces of pods that left the desired state while a mount of theirs remains. */
  orphanNamespaces: ReadonlyMap<string, string>;
}

/** A snapshot plus the index the next build reuses items through. */
export interface BuiltSnapshot {
  snapshot: Snapshot;
  index: SnapshotIndex;
}

/** A keyed collection in key order and its positions. */
interface Keyed<T> {
  items: T[];
  positions: Positions;
}

/** The parts of a snapshot that are cheap to rebuild (everything but the two worlds and the table). */
type LightParts = Pick<
  Snapshot,
  | 'nodeName'
  | 'statesSynced'
  | 'agent'
  | 'mounter'
  | 'reconstruction'
  | 'podErrors'
  | 'sourceErrors'
  | 'recentEvents'
  | 'audit'
  | 'drivers'
  | 'attachVerification'
  | 'observe'
>;

// COLLECTIONS

function positionsOf<T>(items: readonly T[], key: (item: T) => string): Map<string, number> {
  const positions = new Map<string, number>();
  items.forEach((item, i) => positions.set(key(item), i));
  return positions;
}

/** Two lists sorted by key merged into one (keys are distinct across them). */
function mergeByKey<T>(a: readonly T[], b: readonly T[], key: (item: T) => string): T[] {
  if (b.length === 0) return [...a];
  const out: T[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (compareKeys(key(a[i] as T), key(b[j] as T)) <= 0) out.push(a[i++] as T);
    else out.push(b[j++] as T);
  }
  while (i < a.length) out.push(a[i++] as T);
  while (j < b.length) out.push(b[j++] as T);
  return out;
}

/**
 * The collection for the current `sources`, reusing `prev` (sorted, indexed by `positions`):
 * - every source whose previous item matches keeps that item object;
 * - when only items changed, the previous array is copied once (or kept when none changed)
 *   and the previous positions are kept;
 * - when keys came or went, the kept items and the new ones are merged in key order.
 * A key seen twice keeps its first source.
 */
function reconcileKeyed<S, T>(
  prev: readonly T[],
  positions: Positions,
  sources: Iterable<S>,
  sourceKey: (source: S) => string,
  matches: (item: T, source: S) => boolean,
  make: (source: S) => T,
  itemKey: (item: T) => string,
): Keyed<T> {
  let items: T[] | null = null;
  const seen = new Uint8Array(prev.length);
  let seenCount = 0;
  let added: T[] | null = null;
  let addedKeys: Set<string> | null = null;
  for (const source of sources) {
    const key = sourceKey(source);
    const pos = positions.get(key);
    if (pos === undefined) {
      addedKeys ??= new Set();
      if (addedKeys.has(key)) continue;
      addedKeys.add(key);
      (added ??= []).push(make(source));
      continue;
    }
    if (seen[pos] === 1) continue;
    seen[pos] = 1;
    seenCount++;
    if (!matches(prev[pos] as T, source)) (items ??= prev.slice())[pos] = make(source);
  }
  if (added === null && seenCount === prev.length) {
    return { items: items ?? (prev as T[]), positions };
  }
  const current = items ?? prev;
  const kept = current.filter((_, i) => seen[i] === 1);
  const merged = mergeByKey(kept, sortByKey(added ?? [], itemKey), itemKey);
  return { items: merged, positions: positionsOf(merged, itemKey) };
}

/** `fresh` when it differs from `prev` (item by item), else `prev`. For small lists (rings, errors, drivers). */
function reuseList<T>(prev: T[], fresh: T[]): T[] {
  if (prev.length !== fresh.length) return fresh;
  for (let i = 0; i < prev.length; i++) {
    if (prev[i] !== fresh[i] && !jsonEqual(prev[i], fresh[i])) return fresh;
  }
  return prev;
}

/** `fresh` unless it is JSON-equal to `prev`. */
function reuseValue<T>(prev: T | undefined, fresh: T): T {
  return prev !== undefined && jsonEqual(prev, fresh) ? prev : fresh;
}

/** Keeps the first item of each key. */
function firstOfEachKey<T>(items: readonly T[], key: (item: T) => string): T[] {
  const seen = new Set<string>();
  return items.filter((item) => {
    const k = key(item);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

// DESIRED PODS

/** One (volume, pod) pair of the desired state. */
interface DesiredPair {
  view: DesiredVolumeView;
  entry: DesiredPodEntry;
}

function desiredPodFromPairs(uid: string, pairs: readonly DesiredPair[]): DesiredPod {
  const first = pairs[0] as DesiredPair;
  const volumes = pairs.map(({ view, entry }) => desiredVolumeFromView(view, entry));
  return {
    uid,
    namespace: desiredPodNamespace(first.entry),
    name: first.entry.pod.metadata.name,
    volumes: volumes.length > 1 ? sortByKey(firstOfEachKey(volumes, desiredVolumeKey), desiredVolumeKey) : volumes,
  };
}

/** The volume of `pod` named `name` (volumes are sorted by name), or undefined. */
function findDesiredVolume(pod: DesiredPod, name: string): DesiredVolume | undefined {
  const { volumes } = pod;
  if (volumes.length <= 8) return volumes.find((v) => v.name === name);
  let lo = 0;
  let hi = volumes.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const volume = volumes[mid] as DesiredVolume;
    const order = compareKeys(volume.name, name);
    if (order === 0) return volume;
    if (order < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return undefined;
}

/**
 * `desired.pods` from the desired state's per-volume views. The views list pods per volume, so
 * a first pass checks each (volume, pod) pair against the previous pod at its position (counting
 * the pairs per pod, no grouping); only pods that changed, and new pods, are grouped and rebuilt
 * in a second pass.
 */
function buildDesiredPods(prev: readonly DesiredPod[], positions: Positions, views: readonly DesiredVolumeView[]): Keyed<DesiredPod> {
  const counts = new Uint32Array(prev.length);
  const dirty = new Uint8Array(prev.length);
  let changed = false;
  let keysChanged = false;
  for (const view of views) {
    for (const entry of view.pods) {
      const pos = positions.get(desiredPodUid(entry));
      if (pos === undefined) {
        keysChanged = true;
        continue;
      }
      counts[pos] = (counts[pos] ?? 0) + 1;
      if (dirty[pos] === 1) continue;
      const pod = prev[pos] as DesiredPod;
      const volume = findDesiredVolume(pod, entry.outerVolumeSpecName);
      if (
        volume === undefined ||
        !desiredVolumeMatchesView(volume, view, entry) ||
        pod.namespace !== desiredPodNamespace(entry) ||
        pod.name !== entry.pod.metadata.name
      ) {
        dirty[pos] = 1;
        changed = true;
      }
    }
  }
  for (let pos = 0; pos < prev.length; pos++) {
    const count = counts[pos] ?? 0;
    if (count === 0) keysChanged = true;
    else if (count !== (prev[pos] as DesiredPod).volumes.length && dirty[pos] !== 1) {
      dirty[pos] = 1;
      changed = true;
    }
  }
  if (!changed && !keysChanged) return { items: prev as DesiredPod[], positions };

  // Second pass: the pairs of pods to (re)build, grouped by pod.
  const groups = new Map<string, DesiredPair[]>();
  for (const view of views) {
    for (const entry of view.pods) {
      const uid = desiredPodUid(entry);
      const pos = positions.get(uid);
      if (pos !== undefined && dirty[pos] !== 1) continue;
      const pairs = groups.get(uid);
      if (pairs === undefined) groups.set(uid, [{ view, entry }]);
      else pairs.push({ view, entry });
    }
  }
  const rebuilt = [...groups].map(([uid, pairs]) => desiredPodFromPairs(uid, pairs));
  return reconcileKeyed(
    prev,
    positions,
    [...prev.filter((_, pos) => (counts[pos] ?? 0) > 0 && dirty[pos] !== 1), ...rebuilt],
    desiredPodKey,
    (item, source) => item === source,
    (source) => source,
    desiredPodKey,
  );
}

// CLASS

const emptyIndex: SnapshotIndex = {
  desiredPods: new Map(),
  actualVolumes: new Map(),
  operations: new Map(),
  reconstructedVolumes: new Map(),
  orphanNamespaces: new Map(),
};

/** Builds snapshots of one runtime; see the module comment. */
export class SnapshotBuilder {
  constructor(
    private readonly runtime: AgentRuntime,
    /** The server's audit ring, oldest first; the same array until an entry is added. */
    private readonly audit: () => AuditEntry[],
  ) {}

  /** The first snapshot (seq 0), with nothing to reuse. */
  initial(): BuiltSnapshot {
    return this.build(null, 0);
  }

  /**
   * The current state as the snapshot at `seq`, reusing from `base` (null: nothing to reuse).
   * Whether anything changed is for the caller to decide (`computeDelta`).
   */
  build(base: BuiltSnapshot | null, seq: number): BuiltSnapshot {
    const prev = base?.snapshot ?? null;
    const index = base?.index ?? emptyIndex;
    const vm = this.runtime.volumeManager;
    const light = this.buildLight(prev, index);

    const desired = buildDesiredPods(prev?.desired.pods ?? [], index.desiredPods, vm.getDesiredVolumes());
    const namespaceOf = (uid: string): string | undefined => {
      const pos = desired.positions.get(uid);
      if (pos !== undefined) return desired.items[pos]?.namespace;
      const before = index.desiredPods.get(uid);
      return index.orphanNamespaces.get(uid) ?? (before === undefined ? undefined : prev?.desired.pods[before]?.namespace);
    };
    const actual = reconcileKeyed(
      prev?.actual.volumes ?? [],
      index.actualVolumes,
      vm.getActualVolumes(),
      (view) => view.volumeName,
      (item, view) => actualVolumeMatchesView(item, view, namespaceOf),
      (view) => actualVolumeFromView(view, namespaceOf),
      actualVolumeKey,
    );
    const operations = reconcileKeyed<PendingOperationView, Operation>(
      prev?.operations ?? [],
      index.operations,
      vm.getPendingOperations(),
      operationViewKey,
      operationMatchesView,
      operationFromView,
      operationKey,
    );

    // Remember the namespaces of pods that are mounted but no longer desired (usually none).
    const orphanNamespaces = new Map<string, string>();
    for (const volume of actual.items) {
      for (const pod of volume.pods) {
        if (pod.podNamespace !== undefined && !desired.positions.has(pod.podUid)) orphanNamespaces.set(pod.podUid, pod.podNamespace);
      }
    }

    const snapshot: Snapshot = {
      nodeName: light.nodeName,
      seq,
      statesSynced: light.statesSynced,
      agent: light.agent,
      mounter: light.mounter,
      desired: prev !== null && desired.items === prev.desired.pods ? prev.desired : { pods: desired.items },
      actual: prev !== null && actual.items === prev.actual.volumes ? prev.actual : { volumes: actual.items },
      operations: operations.items,
      reconstruction: light.reconstruction.value,
      podErrors: light.podErrors,
      sourceErrors: light.sourceErrors,
      recentEvents: light.recentEvents,
      audit: light.audit,
      drivers: light.drivers,
      attachVerification: light.attachVerification,
      ...(light.observe === undefined ? {} : { observe: light.observe }),
    };
    return {
      snapshot,
      index: {
        desiredPods: desired.positions,
        actualVolumes: actual.positions,
        operations: operations.positions,
        reconstructedVolumes: light.reconstruction.positions,
        orphanNamespaces,
      },
    };
  }

  /**
   * True when a cheap part (sync flags, reconstruction, pod errors, source errors, drivers,
   * events, audit, attach verification) differs from `base`. Some of these change without any
   * change notification (pod errors, the reconciler's sync flag), so the publisher probes them
   * periodically instead of rebuilding the two worlds.
   */
  lightPartsChanged(base: BuiltSnapshot): boolean {
    const { reconstruction, ...rest } = this.buildLight(base.snapshot, base.index);
    if (reconstruction.value !== base.snapshot.reconstruction) return true;
    return (Object.keys(rest) as (keyof typeof rest)[]).some((part) => rest[part] !== base.snapshot[part]);
  }

  // PARTS

  private buildLight(
    prev: Snapshot | null,
    index: SnapshotIndex,
  ): Omit<LightParts, 'reconstruction'> & { reconstruction: { value: Reconstruction; positions: Positions } } {
    const rt = this.runtime;
    const vm = rt.volumeManager;
    const agent: AgentInfo = { version: rt.version, startedAt: rt.startedAt };
    const mounter: Mounter = { kind: rt.mounter.kind, privileged: rt.mounter.privileged };
    const verification = vm.getLastAttachVerification();
    const attachVerification: AttachVerification =
      verification === null
        ? { lastRunAt: null, checked: 0, foundDetached: [] }
        : { lastRunAt: verification.finishedAt, checked: verification.checked.length, foundDetached: [...verification.foundDetached].sort(compareKeys) };
    return {
      nodeName: rt.nodeName,
      statesSynced: vm.reconcilerStatesHasBeenSynced() && rt.sourcesSynced(),
      agent: reuseValue(prev?.agent, agent),
      mounter: reuseValue(prev?.mounter, mounter),
      reconstruction: this.buildReconstruction(prev, index),
      podErrors: this.buildPodErrors(prev),
      sourceErrors: reuseList<SourceError>(prev?.sourceErrors ?? [], sortByKey(firstOfEachKey(rt.sourceErrors(), sourceErrorKey), sourceErrorKey)),
      // Copied: the runtime may append to its ring in place, and a published snapshot must not change.
      recentEvents: reuseList(prev?.recentEvents ?? [], [...rt.recentEvents()]),
      audit: reuseList(prev?.audit ?? [], this.audit()),
      drivers: reuseList<Driver>(prev?.drivers ?? [], sortByKey(firstOfEachKey(rt.drivers(), driverKey), driverKey)),
      attachVerification: reuseValue(prev?.attachVerification, attachVerification),
      ...(rt.observe === undefined ? {} : { observe: reuseValue(prev?.observe, rt.observe()) }),
    };
  }

  private buildReconstruction(prev: Snapshot | null, index: SnapshotIndex): { value: Reconstruction; positions: Positions } {
    const report = this.runtime.volumeManager.getReconstructionReport();
    const before = prev?.reconstruction;
    const volumes = reconcileKeyed<ReconstructionEntry, ReconstructedVolume>(
      before?.volumes ?? [],
      index.reconstructedVolumes,
      report.entries,
      reconstructionEntryKey,
      reconstructedVolumeMatchesEntry,
      reconstructedVolumeFromEntry,
      reconstructedVolumeKey,
    );
    if (
      before !== undefined &&
      volumes.items === before.volumes &&
      before.state === report.state &&
      before.startedAt === report.startedAt &&
      before.finishedAt === report.finishedAt
    ) {
      return { value: before, positions: volumes.positions };
    }
    return {
      value: { state: report.state, startedAt: report.startedAt, finishedAt: report.finishedAt, volumes: volumes.items },
      positions: volumes.positions,
    };
  }

  private buildPodErrors(prev: Snapshot | null): PodErrors {
    const before = prev?.podErrors ?? {};
    const errors = this.runtime.volumeManager.getPodErrors();
    const uids = [...errors.keys()].filter((uid) => (errors.get(uid)?.length ?? 0) > 0).sort(compareKeys);
    const beforeUids = Object.keys(before);
    let changed = prev === null || uids.length !== beforeUids.length;
    const out: PodErrors = {};
    uids.forEach((uid, i) => {
      const fresh = errors.get(uid) ?? [];
      const old = before[uid];
      if (old !== undefined && jsonEqual(old, fresh)) {
        out[uid] = old;
      } else {
        out[uid] = fresh;
        changed = true;
      }
      if (beforeUids[i] !== uid) changed = true;
    });
    return changed ? out : before;
  }
}
