/**
 * The per-node numbers of the overview page, derived from a snapshot. Pure.
 */
import { actualVolumeCounts, desiredPodPairs, observeCounts, operationCounts, type ActualVolume, type AgentSummary, type DesiredPod, type ReconstructedVolume, type Snapshot } from '../api/index.ts';

/** A reconstruction outcome (`reconstruction.volumes[].outcome`). */
export type ReconstructionOutcome = ReconstructedVolume['outcome'];

/**
 * The node's health, as text an operator can act on:
 * - `syncing`: the desired and actual states are not synced yet (`/readyz` is 503);
 * - `degraded`: something needs attention (operations in backoff or retrying after a failure,
 *   uncertain mounts, pod or source errors, failed reconstructions, driver errors, volumes found detached; in observe
 *   mode operations failing in the kubelet and VolumeAttachments with an attach error, while
 *   uncertain states are not a reason: the agent rebuilds every volume from the kubelet's root
 *   dir, so "uncertain" there only says "found on disk, not confirmed");
 * - `healthy`: none of that.
 */
export type NodeHealth = 'healthy' | 'degraded' | 'syncing';

/** The overview numbers of one node. */
export interface NodeSummary {
  readonly nodeName: string;
  readonly seq: number;
  readonly statesSynced: boolean;
  readonly agentVersion: string;
  readonly agentStartedAt: number;
  readonly health: NodeHealth;
  /** Why the node is `degraded`, one short phrase per reason; empty when healthy or syncing. */
  readonly reasons: readonly string[];
  /** Pods in the desired world. */
  readonly pods: number;
  /** Volumes the desired pods want, counted per (pod, volume). */
  readonly desiredVolumes: number;
  /** Pod mounts in state `mounted`. */
  readonly mounted: number;
  /** Pod mounts, device mounts and attaches in state `uncertain`. */
  readonly uncertain: number;
  /** Desired (pod, volume) pairs not mounted yet. */
  readonly pending: number;
  /** Pending operations in backoff. */
  readonly inBackoff: number;
  /** Pending operations running now. */
  readonly running: number;
  /** Of `running`, those that failed before: a retry in flight. */
  readonly retrying: number;
  /** Pods with at least one populator error. */
  readonly podErrors: number;
  /** Pod-source files that failed to parse. */
  readonly sourceErrors: number;
  readonly reconstruction: {
    readonly state: Snapshot['reconstruction']['state'];
    readonly startedAt: number | null;
    readonly finishedAt: number | null;
    /** How many scanned volume directories reached each outcome. */
    readonly outcomes: Readonly<Record<ReconstructionOutcome, number>>;
  };
  /** CSI drivers known, registered, and with a last error. */
  readonly drivers: { readonly total: number; readonly registered: number; readonly failing: number };
  /** `observe`: the agent watches a real kubelet (`--mode=observe`); `managed`: it runs the volume manager. */
  readonly mode: 'managed' | 'observe';
  /**
   * Observe mode: orphaned pod directories, VolumeAttachments with an attach error, the kubelet's
   * outstanding work (`outstandingWork`, absent from agents that predate it) and its entries in
   * the kubelet's backoff; `null` in managed mode (or not sent by the agent).
   */
  readonly observe: NonNullable<AgentSummary['observe']> | null;
}

/** The counts the health of a node is judged on (from a snapshot, or from an agent's summary). */
export interface NodeHealthInput {
  readonly statesSynced: boolean;
  readonly inBackoff: number;
  /** Operations running again after a failure: still failing as far as anyone knows. */
  readonly retrying: number;
  readonly uncertain: number;
  readonly podErrors: number;
  readonly sourceErrors: number;
  readonly failedReconstructions: number;
  readonly failingDrivers: number;
  readonly foundDetached: number;
  /** Observe mode's counts; `null` in managed mode. Then uncertain states do not count (see {@link NodeHealth}). */
  readonly observe: Pick<NonNullable<AgentSummary['observe']>, 'attachErrors' | 'failing'> | null;
}

/** The node's health and, when degraded, why (one short phrase per reason; none while syncing). */
export function nodeHealth(c: NodeHealthInput): { health: NodeHealth; reasons: string[] } {
  if (!c.statesSynced) return { health: 'syncing', reasons: [] };
  const reasons: string[] = [];
  if (c.inBackoff > 0) reasons.push(`${c.inBackoff} in backoff`);
  if (c.retrying > 0) reasons.push(`${c.retrying} retrying after a failure`);
  if (c.observe === null && c.uncertain > 0) reasons.push(`${c.uncertain} uncertain`);
  const failing = c.observe?.failing ?? 0;
  if (failing > 0) reasons.push(`${failing} failing in the kubelet`);
  const attachErrors = c.observe?.attachErrors ?? 0;
  if (attachErrors > 0) reasons.push(`${attachErrors} attachment error${attachErrors === 1 ? '' : 's'}`);
  if (c.podErrors > 0) reasons.push(`${c.podErrors} pod${c.podErrors === 1 ? '' : 's'} with errors`);
  if (c.sourceErrors > 0) reasons.push(`${c.sourceErrors} source errors`);
  if (c.failedReconstructions > 0) reasons.push(`${c.failedReconstructions} failed reconstructions`);
  if (c.failingDrivers > 0) reasons.push(`${c.failingDrivers} driver errors`);
  if (c.foundDetached > 0) reasons.push(`${c.foundDetached} found detached`);
  return { health: reasons.length > 0 ? 'degraded' : 'healthy', reasons };
}

const summaryCache = new WeakMap<Snapshot, NodeSummary>();

// The volume counts are the expensive part (a pass over every pod and volume). Deltas keep an
// unchanged collection's array and unchanged items by reference, so they are cached per array
// (a delta that only touches operations reuses them) and per item (a changed array recounts
// without rebuilding each item's keys).

/** What the actual state contributes: counts, and the `podUid/volumeName` pairs mounted. */
interface ActualCounts {
  readonly mounted: number;
  readonly uncertain: number;
  readonly mountedPairs: ReadonlySet<string>;
}

/** What the desired state contributes, given the mounted pairs it was counted against. */
interface DesiredCounts {
  readonly desiredVolumes: number;
  readonly pending: number;
}

const actualCountsCache = new WeakMap<readonly ActualVolume[], ActualCounts>();
const desiredCountsCache = new WeakMap<readonly DesiredPod[], { readonly against: ReadonlySet<string>; readonly counts: DesiredCounts }>();
const volumeCountsCache = new WeakMap<ActualVolume, { readonly uncertain: number; readonly mountedPairs: readonly string[] }>();
const podPairsCache = new WeakMap<DesiredPod, readonly string[]>();

function countActual(volumes: readonly ActualVolume[]): ActualCounts {
  const cached = actualCountsCache.get(volumes);
  if (cached !== undefined) return cached;
  const mountedPairs = new Set<string>();
  let mounted = 0;
  let uncertain = 0;
  for (const volume of volumes) {
    let item = volumeCountsCache.get(volume);
    if (item === undefined) {
      item = actualVolumeCounts(volume);
      volumeCountsCache.set(volume, item);
    }
    uncertain += item.uncertain;
    // Every mounted pod mount counts, even two of the same pair (as the per-mount count did).
    mounted += item.mountedPairs.length;
    for (const pair of item.mountedPairs) mountedPairs.add(pair);
  }
  const counts = { mounted, uncertain, mountedPairs };
  actualCountsCache.set(volumes, counts);
  return counts;
}

function countDesired(pods: readonly DesiredPod[], mountedPairs: ReadonlySet<string>): DesiredCounts {
  const cached = desiredCountsCache.get(pods);
  if (cached !== undefined && cached.against === mountedPairs) return cached.counts;
  let desiredVolumes = 0;
  let pending = 0;
  for (const pod of pods) {
    let pairs = podPairsCache.get(pod);
    if (pairs === undefined) {
      pairs = desiredPodPairs(pod);
      podPairsCache.set(pod, pairs);
    }
    desiredVolumes += pairs.length;
    for (const pair of pairs) if (!mountedPairs.has(pair)) pending++;
  }
  const counts = { desiredVolumes, pending };
  desiredCountsCache.set(pods, { against: mountedPairs, counts });
  return counts;
}

/** The overview numbers of `snapshot` (memoized per snapshot object, and per collection inside). */
export function summarizeNode(snapshot: Snapshot): NodeSummary {
  const cached = summaryCache.get(snapshot);
  if (cached !== undefined) return cached;
  const { mounted, uncertain, mountedPairs } = countActual(snapshot.actual.volumes);
  const { desiredVolumes, pending } = countDesired(snapshot.desired.pods, mountedPairs);
  const { inBackoff, running, retrying } = operationCounts(snapshot.operations);
  const outcomes: Record<ReconstructionOutcome, number> = { reconstructed: 0, 'confirmed-mounted': 0, 'cleaned-up': 0, failed: 0 };
  for (const v of snapshot.reconstruction.volumes) outcomes[v.outcome]++;
  const podErrors = Object.values(snapshot.podErrors).filter((errors) => errors.length > 0).length;
  const drivers = {
    total: snapshot.drivers.length,
    registered: snapshot.drivers.filter((d) => d.registered).length,
    failing: snapshot.drivers.filter((d) => d.lastError !== null).length,
  };
  const observe = snapshot.observe === undefined ? null : observeCounts(snapshot.observe);
  const { health, reasons } = nodeHealth({
    statesSynced: snapshot.statesSynced,
    inBackoff,
    retrying,
    uncertain,
    podErrors,
    sourceErrors: snapshot.sourceErrors.length,
    failedReconstructions: outcomes.failed,
    failingDrivers: drivers.failing,
    foundDetached: snapshot.attachVerification.foundDetached.length,
    observe,
  });
  const summary: NodeSummary = {
    nodeName: snapshot.nodeName,
    seq: snapshot.seq,
    statesSynced: snapshot.statesSynced,
    agentVersion: snapshot.agent.version,
    agentStartedAt: snapshot.agent.startedAt,
    health,
    reasons,
    pods: snapshot.desired.pods.length,
    desiredVolumes,
    mounted,
    uncertain,
    pending,
    inBackoff,
    running,
    retrying,
    podErrors,
    sourceErrors: snapshot.sourceErrors.length,
    reconstruction: {
      state: snapshot.reconstruction.state,
      startedAt: snapshot.reconstruction.startedAt,
      finishedAt: snapshot.reconstruction.finishedAt,
      outcomes,
    },
    drivers,
    mode: snapshot.observe === undefined ? 'managed' : 'observe',
    observe,
  };
  summaryCache.set(snapshot, summary);
  return summary;
}
