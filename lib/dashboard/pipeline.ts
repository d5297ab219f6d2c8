/**
 * The mount pipeline of each (pod, volume) pair, derived from a snapshot: which stages the
 * kubelet's volume manager has completed, which one holds the volume up, and the operation
 * working on it. Pure functions; the node table, the pod page and the Markdown summary all read
 * these rows, so they agree on what "stuck" means.
 *
 * Stages, in order: in the desired world → reported in use (node `status.volumesInUse`) →
 * attached (device path) → device mounted (global mount path) → mounted into the pod → ready.
 */
import type {
  ActualVolume,
  DesiredPod,
  DesiredVolume,
  Operation,
  PodMount,
  Snapshot,
} from '../api/index.ts';
import { kubeletEvidenceOf, kubeletOperations, kubeletProgress, type KubeletEvidence } from './kubelet-evidence.ts';
import { FOUND_ON_DISK, uncertainCauseOf, type UncertainCause } from './volume-state-wording.ts';

// TYPES

/** One stage of the mount pipeline. */
export type StageId = 'desired' | 'reported-in-use' | 'attached' | 'device-mounted' | 'mounted' | 'ready';

/** A short label per stage, for tables and the Markdown summary. */
export const STAGE_LABEL: Record<StageId, string> = {
  desired: 'in desired world',
  'reported-in-use': 'reported in use',
  attached: 'attached',
  'device-mounted': 'device mounted',
  mounted: 'mounted into pod',
  ready: 'ready',
};

/**
 * The label of the `attached` stage for a plugin that is not attachable (emptyDir, configMap,
 * secret, projected, downwardAPI, hostPath, local, a CSI driver without `attachRequired`): the
 * kubelet still puts such a volume in the actual state (VerifyControllerAttachedVolume marks it
 * "attached" without any attach), but nothing was attached, so the dashboard never says so.
 */
export const NOT_ATTACHABLE_STAGE_LABEL = 'verified on node';

/** The label of stage `id` of a row whose plugin is (not) attachable. */
export function stageLabel(id: StageId, attachable: boolean): string {
  return id === 'attached' && !attachable ? NOT_ATTACHABLE_STAGE_LABEL : STAGE_LABEL[id];
}

/**
 * Where a stage stands:
 * - `done`: completed (for `desired`: the pod wants the volume);
 * - `skipped`: does not apply to this plugin (not attachable, no device mount);
 * - `uncertain`: started but its outcome is unknown (a timeout, or reconstructed from disk); it is
 *   neither mounted nor failed, and the reconciler will settle it;
 * - `missing`: not reached (for `desired`: the pod no longer wants it, so it will be unmounted).
 */
export type StageStatus = 'done' | 'skipped' | 'uncertain' | 'missing';

/** One stage of one (pod, volume) pipeline. */
export interface PipelineStage {
  readonly id: StageId;
  readonly status: StageStatus;
  /** What was found, e.g. the device path or mount path; `null` when there is nothing to add. */
  readonly detail: string | null;
}

/**
 * The state of a (pod, volume) row, by what an operator should do about it:
 * - `ready`: mounted into the pod and wanted;
 * - `uncertain`: some stage is uncertain (shown as its own state, never as mounted or failed);
 * - `backoff`: an operation for it failed and waits for its retry (`operation.retryAt`);
 * - `running`: an operation for it runs now;
 * - `waiting`: a stage is missing and nothing runs yet (e.g. waiting for attach);
 * - `unmounting`: still mounted but no longer in the desired world.
 */
export type VolumeState = 'ready' | 'uncertain' | 'backoff' | 'running' | 'waiting' | 'unmounting';

/** Every volume state, most urgent first (the order of the state sort). */
export const VOLUME_STATES: readonly VolumeState[] = ['uncertain', 'backoff', 'running', 'waiting', 'unmounting', 'ready'];

/** One (pod, volume) pair: a row of the node's pods table. */
export interface VolumeRow {
  /** `<podUid>/<volumeName>`: stable across snapshots, used as the React key and in URLs. */
  readonly id: string;
  readonly podUid: string;
  /** The pod's name; the UID for a mount whose pod is not in the desired world. */
  readonly podName: string;
  /** The pod's namespace; `null` when unknown (a mount found by reconstruction). */
  readonly namespace: string | null;
  /** The pod's name for the volume (`spec.volumes[].name`, the outer volume name). */
  readonly volumeName: string;
  /** The unique volume name (the key of the actual state and of operations). */
  readonly uniqueVolumeName: string;
  readonly pluginName: string;
  /**
   * The plugin attaches the volume to the node (for CSI: the CSIDriver's `attachRequired`); for
   * a mount no longer desired, whether the actual state has a device path. Label the `attached`
   * stage with {@link stageLabel}.
   */
  readonly attachable: boolean;
  /** The pod (still) wants this volume. */
  readonly desired: boolean;
  /** Every stage, in pipeline order. */
  readonly stages: readonly PipelineStage[];
  /** The first stage that is not done or skipped; `null` when the volume is ready. */
  readonly blocking: PipelineStage | null;
  readonly state: VolumeState;
  /**
   * Why the row is uncertain (volume-state-wording.ts): `found-on-disk` when it is only because
   * the agent rebuilt it from disk, `outcome-unknown` for an operation whose outcome is unknown;
   * `null` unless `state` is `uncertain`. Say the state with `volumeStateText(state, uncertainCause)`.
   */
  readonly uncertainCause: UncertainCause | null;
  /** Reconstruction rebuilt the pair from disk after an agent restart and has not confirmed it since. */
  readonly reconstructed: boolean;
  /**
   * The pending operation working on this pair: one for this pod first, else a volume-level one
   * (`podUid` null); an operation in backoff wins over a running one. `null` when none.
   */
  readonly operation: Operation | null;
  /** The actual-state volume; `null` when not attached or known on the node yet. */
  readonly actual: ActualVolume | null;
  /** The pod's mount of the volume; `null` when not mounted (or uncertainly mounted) yet. */
  readonly mount: PodMount | null;
  /**
   * The row is of an observe-mode snapshot: the kubelet acts, the agent only reads its root dir,
   * mount table and events (the stage details and the views' words say so).
   */
  readonly observed: boolean;
  /**
   * Observe mode: the kubelet's evidence behind {@link operation} (its backoff, error and event
   * time from the plan); `null` for the agent's own operations or when there is none.
   */
  readonly kubelet: KubeletEvidence | null;
}

// INDEXES

/** Lookups over one snapshot, shared by row derivations. */
export interface SnapshotIndex {
  readonly actualByName: ReadonlyMap<string, ActualVolume>;
  /** Operations by unique volume name. */
  readonly operationsByVolume: ReadonlyMap<string, readonly Operation[]>;
  /** The names of each desired pod's volumes, by pod UID. */
  readonly desiredVolumeNames: ReadonlyMap<string, ReadonlySet<string>>;
  /**
   * `<podUid>/<volume directory name>` of the volumes reconstruction rebuilt from disk and has not
   * confirmed since (outcome `reconstructed`).
   */
  readonly reconstructed: ReadonlySet<string>;
}

// Each lookup is cached by the array it indexes: `applyDelta` keeps an unchanged collection's
// array, so a delta that only touches operations does not rebuild the 10,000-volume map.
const actualIndexCache = new WeakMap<readonly ActualVolume[], Map<string, ActualVolume>>();
const operationIndexCache = new WeakMap<readonly Operation[], Map<string, Operation[]>>();
const desiredIndexCache = new WeakMap<readonly DesiredPod[], Map<string, Set<string>>>();
const reconstructedIndexCache = new WeakMap<Snapshot['reconstruction']['volumes'], Set<string>>();

const mergedOperationsCache = new WeakMap<readonly Operation[], WeakMap<readonly Operation[], readonly Operation[]>>();

/**
 * The operations a row can be explained by: the agent's own, and in observe mode the kubelet's
 * planned operations with a backoff from its events (kubelet-evidence.ts). The same array while
 * neither changes.
 */
function operationsOf(snapshot: Snapshot): readonly Operation[] {
  const kubelet = kubeletOperations(snapshot.observe);
  if (kubelet.length === 0) return snapshot.operations;
  if (snapshot.operations.length === 0) return kubelet;
  let byKubelet = mergedOperationsCache.get(snapshot.operations);
  if (byKubelet === undefined) {
    byKubelet = new WeakMap();
    mergedOperationsCache.set(snapshot.operations, byKubelet);
  }
  let merged = byKubelet.get(kubelet);
  if (merged === undefined) {
    merged = [...snapshot.operations, ...kubelet];
    byKubelet.set(kubelet, merged);
  }
  return merged;
}

/** The lookups of `snapshot` (memoized per collection). */
export function indexSnapshot(snapshot: Snapshot): SnapshotIndex {
  let actualByName = actualIndexCache.get(snapshot.actual.volumes);
  if (actualByName === undefined) {
    actualByName = new Map();
    for (const v of snapshot.actual.volumes) actualByName.set(v.uniqueVolumeName, v);
    actualIndexCache.set(snapshot.actual.volumes, actualByName);
  }
  const operations = operationsOf(snapshot);
  let operationsByVolume = operationIndexCache.get(operations);
  if (operationsByVolume === undefined) {
    operationsByVolume = new Map();
    for (const op of operations) {
      const list = operationsByVolume.get(op.volume);
      if (list === undefined) operationsByVolume.set(op.volume, [op]);
      else list.push(op);
    }
    operationIndexCache.set(operations, operationsByVolume);
  }
  let desiredVolumeNames = desiredIndexCache.get(snapshot.desired.pods);
  if (desiredVolumeNames === undefined) {
    desiredVolumeNames = new Map();
    for (const pod of snapshot.desired.pods) desiredVolumeNames.set(pod.uid, new Set(pod.volumes.map((v) => v.name)));
    desiredIndexCache.set(snapshot.desired.pods, desiredVolumeNames);
  }
  let reconstructed = reconstructedIndexCache.get(snapshot.reconstruction.volumes);
  if (reconstructed === undefined) {
    reconstructed = new Set(snapshot.reconstruction.volumes.filter((v) => v.outcome === 'reconstructed').map((v) => `${v.podUid}/${v.volumeName}`));
    reconstructedIndexCache.set(snapshot.reconstruction.volumes, reconstructed);
  }
  return { actualByName, operationsByVolume, desiredVolumeNames, reconstructed };
}

/**
 * Whether reconstruction rebuilt the pair from disk and has not confirmed it: its directory under
 * `pods/<uid>/volumes/<plugin>/` is the pod's name for the volume, or for a claim the PV's name.
 */
function isReconstructed(index: SnapshotIndex, podUid: string, volumeName: string, desired: DesiredVolume | null): boolean {
  if (index.reconstructed.size === 0) return false;
  if (index.reconstructed.has(`${podUid}/${volumeName}`)) return true;
  const pv = desired?.spec?.persistentVolumeName;
  return pv !== undefined && index.reconstructed.has(`${podUid}/${pv}`);
}

/** The operation that best explains a (pod, volume) pair; see {@link VolumeRow.operation}. */
function operationFor(
  operations: readonly Operation[] | undefined,
  podUid: string,
): Operation | null {
  if (operations === undefined) return null;
  let best: Operation | null = null;
  let bestRank = Number.POSITIVE_INFINITY;
  for (const op of operations) {
    if (op.podUid !== podUid && op.podUid !== null) continue;
    const rank = (op.podUid === podUid ? 0 : 2) + (op.state === 'backoff' ? 0 : 1);
    if (rank < bestRank) {
      best = op;
      bestRank = rank;
    }
  }
  return best;
}

// DERIVATION

function stage(id: StageId, status: StageStatus, detail: string | null = null): PipelineStage {
  return { id, status, detail };
}

/**
 * The stages of one pair. `desired` is the pod's desired volume (`null` when the pod no longer
 * wants it); `actual` and `mount` come from the actual state.
 */
/** Whether the pair's plugin is attachable; see {@link VolumeRow.attachable}. */
export function pairAttachable(desired: DesiredVolume | null, actual: ActualVolume | null): boolean {
  return desired?.attachable ?? (actual !== null && actual.devicePath !== '');
}

export function deriveStages(
  desired: DesiredVolume | null,
  actual: ActualVolume | null,
  mount: PodMount | null,
  context: StageContext = MANAGED_CONTEXT,
): PipelineStage[] {
  const stages = deriveAgentStages(desired, actual, mount, context.observed, context.reconstructed === true);
  return context.kubelet === null ? stages : withKubeletEvidence(stages, context.kubelet);
}

/** Whose view the stages are (see {@link VolumeRow.observed}) and the kubelet's evidence, if any. */
export interface StageContext {
  readonly observed: boolean;
  readonly kubelet: KubeletEvidence | null;
  /** Reconstruction rebuilt the pair from disk and has not confirmed it (managed mode). */
  readonly reconstructed?: boolean;
}

const MANAGED_CONTEXT: StageContext = { observed: false, kubelet: null };

/** The detail of a stage the kubelet's event shows done: its failed step came after it. */
function doneByKubelet(step: string): string {
  return `done as far as the kubelet is concerned: its ${step} failed, a later step`;
}

/**
 * The stages corrected by the kubelet's evidence (observe mode): a failed pod step (SetUp) means
 * attach, its verification and the device mount succeeded as far as the kubelet is concerned, so
 * those stages are done whatever the agent could (not) see on disk, and the pod's mount is
 * blocking with the kubelet's failure; a failed device step (MountDevice) means the same for
 * attach. The agent's reading stays where the evidence says nothing.
 */
function withKubeletEvidence(stages: readonly PipelineStage[], kubelet: KubeletEvidence): PipelineStage[] {
  const progress = kubeletProgress(kubelet.backoff);
  if (progress === 'unknown') return [...stages];
  const step = kubelet.backoff.operation ?? '';
  const doneBefore: ReadonlySet<StageId> = new Set<StageId>(progress === 'pod-step-failed' ? ['reported-in-use', 'attached', 'device-mounted'] : ['reported-in-use', 'attached']);
  const failedAt: StageId = progress === 'pod-step-failed' ? 'mounted' : 'device-mounted';
  const out = stages.map((s) => {
    if (doneBefore.has(s.id) && (s.status === 'missing' || s.status === 'uncertain')) return stage(s.id, 'done', doneByKubelet(step));
    if (s.id === failedAt && s.status !== 'skipped') return stage(s.id, 'missing', `the kubelet’s ${step} failed (its ${kubelet.backoff.reason ?? 'event'})`);
    return s;
  });
  const allDone = out.every((s) => s.id === 'ready' || s.status === 'done' || s.status === 'skipped');
  return out.map((s) => (s.id === 'ready' ? stage('ready', allDone ? 'done' : 'missing') : s));
}

function deriveAgentStages(desired: DesiredVolume | null, actual: ActualVolume | null, mount: PodMount | null, observed: boolean, reconstructed: boolean): PipelineStage[] {
  const attachable = pairAttachable(desired, actual);
  const deviceMountable = desired?.deviceMountable ?? (actual !== null && actual.deviceMountState !== 'not-mounted');
  const stages: PipelineStage[] = [];
  stages.push(
    desired !== null
      ? stage('desired', 'done')
      : stage('desired', 'missing', observed ? 'no pod wants it any more: the kubelet tears it down (unmounts or removes it)' : 'not in the desired world any more: the reconciler will unmount it'),
  );
  if (!attachable) {
    stages.push(stage('reported-in-use', 'skipped', 'not needed: the plugin is not attachable'));
  } else if (desired === null) {
    stages.push(stage('reported-in-use', 'skipped', 'not applicable: the volume is not desired'));
  } else if (!desired.reportedInUse && actual !== null && actual.attachState === 'attached') {
    // A controller-attached volume enters the actual state only after it was reported in use
    // (the kubelet's VerifyControllerAttachedVolume checks that first), so an attached volume
    // that is not reported was attached by the agent itself (no attach/detach controller, e.g. a
    // standalone agent with no node status): the stage does not gate anything.
    stages.push(stage('reported-in-use', 'skipped', 'not needed: the agent attached the volume itself (no attach/detach controller)'));
  } else {
    stages.push(
      desired.reportedInUse
        ? stage('reported-in-use', 'done', 'listed in the node’s status.volumesInUse')
        : stage('reported-in-use', 'missing', 'waiting for the node status to list it in volumesInUse'),
    );
  }
  if (actual === null) {
    stages.push(stage('attached', 'missing', attachable ? 'not attached to the node yet' : observed ? 'nothing of it on disk yet, and no kubelet event says how far it got' : 'not verified yet'));
  } else if (actual.attachState === 'uncertain') {
    stages.push(
      stage('attached', 'uncertain', actual.devicePath !== '' ? `device ${actual.devicePath}` : attachable ? 'attach not confirmed' : observed ? FOUND_ON_DISK : 'not verified yet'),
    );
  } else {
    stages.push(stage('attached', 'done', actual.devicePath !== '' ? `device ${actual.devicePath}` : 'not attachable; verified'));
  }
  if (!deviceMountable) {
    stages.push(stage('device-mounted', 'skipped', 'not applicable: the plugin has no device mount'));
  } else if (actual === null || actual.deviceMountState === 'not-mounted') {
    stages.push(stage('device-mounted', 'missing', 'the global mount is not done yet'));
  } else {
    const path = actual.deviceMountPath !== '' ? actual.deviceMountPath : null;
    stages.push(stage('device-mounted', actual.deviceMountState === 'mounted' ? 'done' : 'uncertain', path));
  }
  if (mount === null) {
    stages.push(stage('mounted', 'missing', 'not mounted into the pod yet'));
  } else if (mount.mountState === 'uncertain') {
    stages.push(stage('mounted', 'uncertain', mountedUncertainDetail(observed, reconstructed)));
  } else {
    stages.push(stage('mounted', 'done', mount.remountRequired ? 'remount required (SetUp runs again)' : null));
  }
  const allDone = stages.every((s) => s.status === 'done' || s.status === 'skipped');
  stages.push(allDone ? stage('ready', 'done') : stage('ready', 'missing'));
  return stages;
}

/** The detail of an uncertain pod mount, by its cause (volume-state-wording.ts). */
function mountedUncertainDetail(observed: boolean, reconstructed: boolean): string {
  if (observed) return `${FOUND_ON_DISK} (the agent rebuilt it from the kubelet’s root dir; only the kubelet knows whether its SetUp finished)`;
  if (reconstructed) return `${FOUND_ON_DISK} (rebuilt from the pod’s directory after the agent restarted; the reconciler confirms it)`;
  return 'SetUp timed out or its result is unknown; the reconciler retries';
}

/** The words for what the agent rebuilt from disk and cannot confirm (volume-state-wording.ts). */
export { FOUND_ON_DISK };

/** The first stage that is not done or skipped; `null` when every stage is. */
export function firstBlockingStage(stages: readonly PipelineStage[]): PipelineStage | null {
  return stages.find((s) => s.status === 'missing' || s.status === 'uncertain') ?? null;
}

/** The row state from its stages and operation; see {@link VolumeState} for the precedence. */
export function deriveVolumeState(
  stages: readonly PipelineStage[],
  operation: Operation | null,
  desired: boolean,
): VolumeState {
  if (stages.some((s) => s.status === 'uncertain')) return 'uncertain';
  if (operation?.state === 'backoff') return 'backoff';
  if (operation?.state === 'running') return 'running';
  if (!desired) return 'unmounting';
  return firstBlockingStage(stages) === null ? 'ready' : 'waiting';
}

interface RowInputs {
  desired: DesiredVolume | null;
  actual: ActualVolume | null;
  mount: PodMount | null;
  operation: Operation | null;
  /** The snapshot is an observe-mode one (see {@link VolumeRow.observed}). */
  observed: boolean;
  /** Reconstruction rebuilt the pair from disk and has not confirmed it (see {@link isReconstructed}). */
  reconstructed: boolean;
}

function buildRow(id: string, podUid: string, podName: string, namespace: string | null, volumeName: string, uniqueVolumeName: string, pluginName: string, inputs: RowInputs): VolumeRow {
  const kubelet = kubeletEvidenceOf(inputs.operation);
  const stages = deriveStages(inputs.desired, inputs.actual, inputs.mount, { observed: inputs.observed, kubelet, reconstructed: inputs.reconstructed });
  const state = deriveVolumeState(stages, inputs.operation, inputs.desired !== null);
  return {
    id,
    podUid,
    podName,
    namespace,
    volumeName,
    uniqueVolumeName,
    pluginName,
    attachable: pairAttachable(inputs.desired, inputs.actual),
    desired: inputs.desired !== null,
    stages,
    blocking: firstBlockingStage(stages),
    state,
    uncertainCause: uncertainCauseOf(state, inputs.observed, inputs.reconstructed),
    reconstructed: inputs.reconstructed,
    operation: inputs.operation,
    actual: inputs.actual,
    mount: inputs.mount,
    observed: inputs.observed,
    kubelet,
  };
}

/** The row id of a (pod, volume) pair. */
function volumeRowId(podUid: string, volumeName: string): string {
  return `${podUid}/${volumeName}`;
}

function findMount(actual: ActualVolume | null, podUid: string): PodMount | null {
  if (actual === null) return null;
  for (const m of actual.pods) if (m.podUid === podUid) return m;
  return null;
}

/** What a desired pod's rows were built from, to reuse them when none of it changed. */
interface PodRowsCache {
  /** Per volume of the pod: the actual volume and the operation the row used. */
  readonly actual: (ActualVolume | null)[];
  readonly operations: (Operation | null)[];
  readonly rows: VolumeRow[];
}

/** A row of a previous result, by position: where it came from, to rebuild it in place. */
interface RowSource {
  /** The desired pod and the index of the volume in it; `null` for a mount no longer desired. */
  readonly pod: DesiredPod | null;
  readonly volumeIndex: number;
}

/** Derives the rows of a snapshot; see {@link createVolumeRowsSelector}. */
export type VolumeRowsSelector = (snapshot: Snapshot) => VolumeRow[];

/** True when the two lists hold the same operations in the same order (or are both absent). */
function sameOperations(a: readonly Operation[] | undefined, b: readonly Operation[] | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * A function from a snapshot to its (pod, volume) rows: every volume of every desired pod, in
 * pod-key then volume order, followed by mounts of pods or volumes that are no longer desired.
 * It remembers what each pod's rows were built from and returns the same row objects when none
 * of a row's inputs changed (`applyDelta` keeps unchanged items by reference), so a delta about
 * one volume costs a few lookups per pod and memoized table rows do not re-render. Make one per
 * view.
 *
 * When the desired pods and the actual volumes are the same arrays as in the previous snapshot
 * (a delta that only touched operations, the usual case while operations fail and retry), only
 * the rows of volumes whose operations changed are looked at: the cost follows the operations,
 * not the 10,000 rows. The result is the same as a full pass would give.
 */
export function createVolumeRowsSelector(): VolumeRowsSelector {
  // Keyed by the pod object: a changed pod is a new object and rebuilds; pods that left go with theirs.
  const podCache = new WeakMap<DesiredPod, PodRowsCache>();
  let orphanCache = new Map<string, { actual: ActualVolume; operation: Operation | null; row: VolumeRow }>();
  let lastSnapshot: Snapshot | null = null;
  let lastIndex: SnapshotIndex | null = null;
  let lastRows: VolumeRow[] = [];
  /** Positions in `lastRows` per unique volume name, and each row's source; built when first needed. */
  let positions: { byVolume: Map<string, number[]>; sources: RowSource[] } | null = null;

  const positionsOf = (snapshot: Snapshot): { byVolume: Map<string, number[]>; sources: RowSource[] } => {
    if (positions !== null) return positions;
    const byVolume = new Map<string, number[]>();
    const sources: RowSource[] = [];
    // The full pass puts each desired pod's volumes first, in order, then the orphans.
    for (const pod of snapshot.desired.pods) for (let i = 0; i < pod.volumes.length; i++) sources.push({ pod, volumeIndex: i });
    for (let at = 0; at < lastRows.length; at++) {
      if (at >= sources.length) sources.push({ pod: null, volumeIndex: -1 });
      const name = (lastRows[at] as VolumeRow).uniqueVolumeName;
      const list = byVolume.get(name);
      if (list === undefined) byVolume.set(name, [at]);
      else list.push(at);
    }
    positions = { byVolume, sources };
    return positions;
  };

  /** The rows after a change of operations only; see the function comment. */
  const operationsOnly = (snapshot: Snapshot, previous: SnapshotIndex): VolumeRow[] => {
    const index = indexSnapshot(snapshot);
    const changed: string[] = [];
    for (const [volume, ops] of index.operationsByVolume) if (!sameOperations(ops, previous.operationsByVolume.get(volume))) changed.push(volume);
    for (const volume of previous.operationsByVolume.keys()) if (!index.operationsByVolume.has(volume)) changed.push(volume);
    lastIndex = index;
    if (changed.length === 0) return lastRows;
    const { byVolume, sources } = positionsOf(snapshot);
    let rows: VolumeRow[] | null = null;
    for (const volume of changed) {
      for (const at of byVolume.get(volume) ?? []) {
        const row = lastRows[at] as VolumeRow;
        const operation = operationFor(index.operationsByVolume.get(volume), row.podUid);
        if (operation === row.operation) continue;
        const source = sources[at] as RowSource;
        const desired = source.pod === null ? null : (source.pod.volumes[source.volumeIndex] as DesiredVolume);
        const next = buildRow(row.id, row.podUid, row.podName, row.namespace, row.volumeName, row.uniqueVolumeName, row.pluginName, {
          desired,
          actual: row.actual,
          mount: row.mount,
          operation,
          observed: row.observed,
          reconstructed: row.reconstructed,
        });
        rows ??= [...lastRows];
        rows[at] = next;
        // Keep the caches of the full pass in step, so it reuses this row object later.
        if (source.pod !== null) {
          const cached = podCache.get(source.pod);
          if (cached !== undefined) {
            cached.operations[source.volumeIndex] = operation;
            cached.rows[source.volumeIndex] = next;
          }
        } else if (row.actual !== null) {
          orphanCache.set(row.id, { actual: row.actual, operation, row: next });
        }
      }
    }
    return rows ?? lastRows;
  };

  return (snapshot) => {
    if (snapshot === lastSnapshot) return lastRows;
    if (
      lastSnapshot !== null &&
      lastIndex !== null &&
      snapshot.desired.pods === lastSnapshot.desired.pods &&
      snapshot.actual.volumes === lastSnapshot.actual.volumes &&
      snapshot.reconstruction.volumes === lastSnapshot.reconstruction.volumes
    ) {
      lastRows = operationsOnly(snapshot, lastIndex);
      lastSnapshot = snapshot;
      return lastRows;
    }
    const index = indexSnapshot(snapshot);
    const observed = snapshot.observe !== undefined;
    const rows: VolumeRow[] = [];
    for (const pod of snapshot.desired.pods) {
      const n = pod.volumes.length;
      const actual: (ActualVolume | null)[] = new Array<ActualVolume | null>(n);
      const operations: (Operation | null)[] = new Array<Operation | null>(n);
      const reconstructed: boolean[] = new Array<boolean>(n);
      const cached = podCache.get(pod);
      let same = cached !== undefined;
      for (let i = 0; i < n; i++) {
        const volume = pod.volumes[i] as DesiredVolume;
        actual[i] = index.actualByName.get(volume.uniqueVolumeName) ?? null;
        operations[i] = operationFor(index.operationsByVolume.get(volume.uniqueVolumeName), pod.uid);
        reconstructed[i] = isReconstructed(index, pod.uid, volume.name, volume);
        if (cached !== undefined && (cached.actual[i] !== actual[i] || cached.operations[i] !== operations[i] || cached.rows[i]?.reconstructed !== reconstructed[i])) same = false;
      }
      if (same && cached !== undefined) {
        for (const row of cached.rows) rows.push(row);
        continue;
      }
      const podRows: VolumeRow[] = [];
      for (let i = 0; i < n; i++) {
        const volume = pod.volumes[i] as DesiredVolume;
        const act = actual[i] ?? null;
        const op = operations[i] ?? null;
        // A cached entry means the same pod object, so the same desired volumes in the same order.
        const previous = cached?.rows[i];
        const rec = reconstructed[i] === true;
        const reuse = previous !== undefined && previous.actual === act && previous.operation === op && previous.reconstructed === rec;
        podRows.push(
          reuse
            ? previous
            : buildRow(volumeRowId(pod.uid, volume.name), pod.uid, pod.name, pod.namespace, volume.name, volume.uniqueVolumeName, volume.pluginName, {
                desired: volume,
                actual: act,
                mount: findMount(act, pod.uid),
                operation: op,
                observed,
                reconstructed: rec,
              }),
        );
      }
      podCache.set(pod, { actual, operations, rows: podRows });
      for (const row of podRows) rows.push(row);
    }
    const nextOrphans = new Map<string, { actual: ActualVolume; operation: Operation | null; row: VolumeRow }>();
    for (const act of snapshot.actual.volumes) {
      for (const mount of act.pods) {
        if (index.desiredVolumeNames.get(mount.podUid)?.has(mount.outerVolumeName) === true) continue;
        const id = volumeRowId(mount.podUid, mount.outerVolumeName);
        const operation = operationFor(index.operationsByVolume.get(act.uniqueVolumeName), mount.podUid);
        const previous = orphanCache.get(id);
        const rec = isReconstructed(index, mount.podUid, mount.outerVolumeName, null);
        const row =
          previous !== undefined && previous.actual === act && previous.operation === operation && previous.row.reconstructed === rec
            ? previous.row
            : buildRow(id, mount.podUid, mount.podName, mount.podNamespace ?? null, mount.outerVolumeName, act.uniqueVolumeName, act.pluginName, {
                desired: null,
                actual: act,
                mount,
                operation,
                observed,
                reconstructed: rec,
              });
        nextOrphans.set(id, { actual: act, operation, row });
        rows.push(row);
      }
    }
    orphanCache = nextOrphans;
    lastSnapshot = snapshot;
    lastIndex = index;
    lastRows = rows;
    positions = null;
    return rows;
  };
}

/** The rows of a snapshot, without memory between calls. */
export function deriveVolumeRows(snapshot: Snapshot): VolumeRow[] {
  return createVolumeRowsSelector()(snapshot);
}

// PODS

/** What the dashboard knows about one pod on a node. */
export interface PodView {
  readonly uid: string;
  /** The pod's name; the UID when the pod is only known from mounts. */
  readonly name: string;
  /** `null` when unknown (only known from mounts found by reconstruction). */
  readonly namespace: string | null;
  /** The pod is in the desired world. */
  readonly desired: boolean;
  /** The pod's rows, desired volumes first. */
  readonly rows: readonly VolumeRow[];
  /** Errors the populator recorded for the pod, oldest first; empty when none. */
  readonly errors: readonly string[];
}

/**
 * The pod with UID `uid` as the snapshot knows it (desired pod, mounts, pod errors, operations,
 * reconstruction); `null` when the snapshot mentions it nowhere.
 */
export function findPod(snapshot: Snapshot, uid: string, rows: readonly VolumeRow[] = deriveVolumeRows(snapshot)): PodView | null {
  const pod = snapshot.desired.pods.find((p) => p.uid === uid) ?? null;
  const podRows = rows.filter((r) => r.podUid === uid);
  const errors = snapshot.podErrors[uid] ?? [];
  const known =
    pod !== null ||
    podRows.length > 0 ||
    errors.length > 0 ||
    snapshot.operations.some((op) => op.podUid === uid) ||
    snapshot.reconstruction.volumes.some((v) => v.podUid === uid);
  if (!known) return null;
  const first = podRows[0];
  return {
    uid,
    name: pod?.name ?? (first !== undefined && first.podName !== uid ? first.podName : uid),
    namespace: pod?.namespace ?? first?.namespace ?? null,
    desired: pod !== null,
    rows: podRows,
    errors,
  };
}

/** `namespace/name`, or the name alone when the namespace is unknown. */
export function podDisplayName(pod: { readonly namespace: string | null; readonly name: string }): string {
  return pod.namespace === null ? pod.name : `${pod.namespace}/${pod.name}`;
}

/** The pod of a row as `namespace/name`. */
export function rowPodName(row: Pick<VolumeRow, 'namespace' | 'podName'>): string {
  return podDisplayName({ namespace: row.namespace, name: row.podName });
}

/**
 * The kubelet's summary of a pod that is not ready to start, as in its "Unable to attach or
 * mount volumes" error: `unmounted volumes=[a b], unattached volumes=[b]`. A volume counts as
 * mounted only when its pod mount is `mounted` (an uncertain mount is unmounted, as in the
 * kubelet's GetMountedVolumesForPod); as attached only when its attach is confirmed. Only the
 * pod's desired volumes are listed, each sorted by name and separated by spaces.
 */
export function kubeletSummaryLine(rows: readonly VolumeRow[]): string {
  const desired = rows.filter((r) => r.desired);
  const stageOf = (r: VolumeRow, id: StageId): StageStatus | undefined => r.stages.find((s) => s.id === id)?.status;
  const unmounted = desired.filter((r) => stageOf(r, 'mounted') !== 'done').map((r) => r.volumeName).sort();
  const unattached = desired.filter((r) => stageOf(r, 'attached') !== 'done').map((r) => r.volumeName).sort();
  return `unmounted volumes=[${unmounted.join(' ')}], unattached volumes=[${unattached.join(' ')}]`;
}

/** True when the snapshot mentions the unique volume name (actual state, operations or a desired pod). */
export function volumeKnown(snapshot: Snapshot, volume: string): boolean {
  return (
    indexSnapshot(snapshot).actualByName.has(volume) ||
    snapshot.operations.some((op) => op.volume === volume) ||
    snapshot.desired.pods.some((p) => p.volumes.some((v) => v.uniqueVolumeName === volume))
  );
}
