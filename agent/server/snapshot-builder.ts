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
 * The generic part (reconciling a keyed collection with its sources) is keyed-collection.ts.
 *
 * A build reads the engine and the runtime only, never what an earlier build saw: a snapshot
 * built from scratch equals one built incrementally. When to build is the feed's business
 * (snapshot-feed.ts): every part read here has an owner that notifies its changes.
 *
 * The builder only reads; it never mutates the engine or a snapshot it returned.
 */
import { jsonEqual } from '../../lib/api/json-equal.ts';
import { compareKeys } from '../../lib/api/normalize-snapshot.ts';
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
  type ContainerState,
  type DesiredPod,
  type Driver,
  type Mounter,
  type Operation,
  type OperationHistory,
  type PodErrors,
  type ReconstructedVolume,
  type Reconstruction,
  type Snapshot,
  type SourceError,
} from '../../lib/api/snapshot.ts';
import type { OperationHistoryView, PendingOperationView, DesiredVolumeView, ReconstructionEntry } from '../../lib/volumemanager/index.ts';
import { uniquePodName } from '../../lib/volume/types.ts';
import type { MountHealth, UnmountBlockers } from '../../lib/api/mount-health.ts';
import type { AgentRuntime } from '../runtime.ts';
import { findByKey, reconcileKeyed, reuseList, reuseValue, uniqueSortedByKey, type Keyed, type KeyedSource, type Positions } from './keyed-collection.ts';
import {
  actualVolumeFromView,
  actualVolumeMatchesView,
  desiredPodNamespace,
  desiredPodUid,
  desiredVolumeFromView,
  desiredVolumeMatchesView,
  operationFromView,
  operationHistoryFromView,
  operationHistoryMatchesView,
  operationHistoryViewKey,
  operationMatchesView,
  operationViewKey,
  reconstructedVolumeFromEntry,
  reconstructedVolumeMatchesEntry,
  reconstructionEntryKey,
  type DesiredPodEntry,
} from './snapshot-items.ts';

// TYPES

/** The lookups the next build reuses items through. */
export interface SnapshotIndex {
  desiredPods: Positions;
  actualVolumes: Positions;
  operations: Positions;
  operationHistory: Positions;
  reconstructedVolumes: Positions;
}

/** A snapshot plus the index the next build reuses items through. */
export interface BuiltSnapshot {
  snapshot: Snapshot;
  index: SnapshotIndex;
}

// DESIRED PODS

/** One (volume, pod) pair of the desired state. */
interface DesiredPair {
  view: DesiredVolumeView;
  entry: DesiredPodEntry;
}

/** The containers' states of a pod by UID (AgentRuntime.containerStates); the same array while unchanged. */
type ContainerStatesOf = (uid: string) => readonly ContainerState[] | undefined;

function desiredPodFromPairs(uid: string, pairs: readonly DesiredPair[], nodeName: string, containersOf: ContainerStatesOf): DesiredPod {
  const first = pairs[0] as DesiredPair;
  const volumes = pairs.map(({ view, entry }) => desiredVolumeFromView(view, entry, nodeName));
  const phase = first.entry.pod.status?.phase;
  const containers = containersOf(uid);
  return {
    uid,
    namespace: desiredPodNamespace(first.entry),
    name: first.entry.pod.metadata.name,
    ...(phase === undefined ? {} : { phase }),
    // Shared, not copied: the runtime's array is frozen and replaced on change, so `!==` tells a change.
    ...(containers === undefined ? {} : { containers: containers as ContainerState[] }),
    volumes: volumes.length > 1 ? uniqueSortedByKey(volumes, desiredVolumeKey) : volumes,
  };
}

/**
 * `desired.pods` from the desired state's per-volume views. The views list pods per volume, so
 * a first pass checks each (volume, pod) pair against the previous pod at its position (counting
 * the pairs per pod, no grouping); only pods that changed, and new pods, are grouped and rebuilt
 * in a second pass.
 */
function buildDesiredPods(prev: readonly DesiredPod[], positions: Positions, views: readonly DesiredVolumeView[], nodeName: string, containersOf: ContainerStatesOf): Keyed<DesiredPod> {
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
      const volume = findByKey(pod.volumes, entry.outerVolumeSpecName, desiredVolumeKey);
      if (
        volume === undefined ||
        !desiredVolumeMatchesView(volume, view, entry, nodeName) ||
        pod.namespace !== desiredPodNamespace(entry) ||
        pod.name !== entry.pod.metadata.name ||
        pod.phase !== entry.pod.status?.phase ||
        pod.containers !== containersOf(pod.uid)
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
  const rebuilt = [...groups].map(([uid, pairs]) => desiredPodFromPairs(uid, pairs, nodeName, containersOf));
  return reconcileKeyed(prev, positions, [...prev.filter((_, pos) => (counts[pos] ?? 0) > 0 && dirty[pos] !== 1), ...rebuilt], {
    sourceKey: desiredPodKey,
    matches: (item, source) => item === source,
    make: (source) => source,
    itemKey: desiredPodKey,
  });
}

// CLASS

const noContainerStates: ContainerStatesOf = () => undefined;

const emptyIndex: SnapshotIndex = {
  desiredPods: new Map(),
  actualVolumes: new Map(),
  operations: new Map(),
  operationHistory: new Map(),
  reconstructedVolumes: new Map(),
};

const operationItems: KeyedSource<PendingOperationView, Operation> = {
  sourceKey: operationViewKey,
  matches: operationMatchesView,
  make: operationFromView,
  itemKey: operationKey,
};

const operationHistoryItems: KeyedSource<OperationHistoryView, OperationHistory> = {
  sourceKey: operationHistoryViewKey,
  matches: operationHistoryMatchesView,
  make: operationHistoryFromView,
  itemKey: operationKey,
};

const reconstructedVolumeItems: KeyedSource<ReconstructionEntry, ReconstructedVolume> = {
  sourceKey: reconstructionEntryKey,
  matches: reconstructedVolumeMatchesEntry,
  make: reconstructedVolumeFromEntry,
  itemKey: reconstructedVolumeKey,
};

const noMountHealth: MountHealth[] = [];
const noUnmountBlockers: UnmountBlockers[] = [];

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
    const rt = this.runtime;
    const vm = rt.volumeManager;

    const desired = buildDesiredPods(prev?.desired.pods ?? [], index.desiredPods, vm.getDesiredVolumes(), rt.nodeName, rt.containerStates === undefined ? noContainerStates : (uid) => rt.containerStates?.(uid));
    // A desired pod's namespace is in its pod object; a departed pod's, in the desired state's memory.
    const namespaceOf = (uid: string): string | undefined => {
      const pos = desired.positions.get(uid);
      return pos !== undefined ? desired.items[pos]?.namespace : vm.getDepartedPodNamespace(uniquePodName(uid));
    };
    const actual = reconcileKeyed(prev?.actual.volumes ?? [], index.actualVolumes, vm.getActualVolumes(), {
      sourceKey: (view) => view.volumeName,
      matches: (item, view) => actualVolumeMatchesView(item, view, namespaceOf),
      make: (view) => actualVolumeFromView(view, namespaceOf),
      itemKey: actualVolumeKey,
    });
    const operations = reconcileKeyed(prev?.operations ?? [], index.operations, vm.getPendingOperations(), operationItems);
    const operationHistory = reconcileKeyed(prev?.operationHistory ?? [], index.operationHistory, vm.getOperationHistory(), operationHistoryItems);
    const reconstruction = this.buildReconstruction(prev, index);
    const verification = vm.getLastAttachVerification();
    const attachVerification: AttachVerification =
      verification === null
        ? { lastRunAt: null, checked: 0, foundDetached: [] }
        : { lastRunAt: verification.finishedAt, checked: verification.checked.length, foundDetached: [...verification.foundDetached].sort(compareKeys) };

    const snapshot: Snapshot = {
      nodeName: rt.nodeName,
      seq,
      statesSynced: vm.reconcilerStatesHasBeenSynced() && rt.sourcesSynced(),
      agent: reuseValue<AgentInfo>(prev?.agent, { version: rt.version, startedAt: rt.startedAt }),
      mounter: reuseValue<Mounter>(prev?.mounter, { kind: rt.mounter.kind, privileged: rt.mounter.privileged }),
      desired: prev !== null && desired.items === prev.desired.pods ? prev.desired : { pods: desired.items },
      actual: prev !== null && actual.items === prev.actual.volumes ? prev.actual : { volumes: actual.items },
      operations: operations.items,
      operationHistory: operationHistory.items,
      reconstruction: reconstruction.value,
      podErrors: this.buildPodErrors(prev),
      sourceErrors: reuseList<SourceError>(prev?.sourceErrors ?? [], uniqueSortedByKey(rt.sourceErrors(), sourceErrorKey)),
      // Copied: the runtime may append to its ring in place, and a published snapshot must not change.
      recentEvents: reuseList(prev?.recentEvents ?? [], [...rt.recentEvents()]),
      audit: reuseList(prev?.audit ?? [], this.audit()),
      drivers: reuseList<Driver>(prev?.drivers ?? [], uniqueSortedByKey(rt.drivers(), driverKey)),
      attachVerification: reuseValue(prev?.attachVerification, attachVerification),
      // Copied: the runtime appends to its ring in place.
      operationLog: reuseList(prev?.operationLog ?? [], [...(rt.operationLog?.() ?? [])]),
      ...this.buildNodeConditions(prev),
      ...(rt.observe === undefined ? {} : { observe: reuseValue(prev?.observe, rt.observe()) }),
      // Sorted by key and replaced, never changed in place, by their producers (the same array until a change).
      mountHealth: rt.mountHealth?.() ?? noMountHealth,
      unmountBlockers: rt.unmountBlockers?.() ?? noUnmountBlockers,
      ...(rt.csiPanel === undefined ? {} : { csiPanel: reuseValue(prev?.csiPanel, rt.csiPanel()) }),
      ...this.buildVolumeStats(prev),
    };
    return {
      snapshot,
      index: {
        desiredPods: desired.positions,
        actualVolumes: actual.positions,
        operations: operations.positions,
        operationHistory: operationHistory.positions,
        reconstructedVolumes: reconstruction.positions,
      },
    };
  }

  // PARTS

  private buildReconstruction(prev: Snapshot | null, index: SnapshotIndex): { value: Reconstruction; positions: Positions } {
    const report = this.runtime.volumeManager.getReconstructionReport();
    const before = prev?.reconstruction;
    const volumes = reconcileKeyed(before?.volumes ?? [], index.reconstructedVolumes, report.entries, reconstructedVolumeItems);
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

  private buildVolumeStats(prev: Snapshot | null): Pick<Snapshot, 'volumeStats'> {
    const stats = this.runtime.volumeStats?.() ?? null;
    return stats === null ? {} : { volumeStats: reuseValue(prev?.volumeStats, stats) };
  }

  private buildNodeConditions(prev: Snapshot | null): Pick<Snapshot, 'nodeConditions'> {
    const conditions = this.runtime.nodeConditions?.() ?? null;
    return conditions === null ? {} : { nodeConditions: reuseValue(prev?.nodeConditions, conditions) };
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
