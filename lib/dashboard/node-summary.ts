/**
 * The per-node numbers of the overview page, derived from a snapshot. Pure.
 */
import type { ReconstructedVolume, Snapshot } from '../api/index.ts';

/** A reconstruction outcome (`reconstruction.volumes[].outcome`). */
export type ReconstructionOutcome = ReconstructedVolume['outcome'];

/**
 * The node's health, as text an operator can act on:
 * - `syncing`: the desired and actual states are not synced yet (`/readyz` is 503);
 * - `degraded`: something needs attention (operations in backoff, uncertain mounts, pod or
 *   source errors, failed reconstructions, driver errors, volumes found detached);
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
}

const summaryCache = new WeakMap<Snapshot, NodeSummary>();

/** The overview numbers of `snapshot` (memoized per snapshot object). */
export function summarizeNode(snapshot: Snapshot): NodeSummary {
  const cached = summaryCache.get(snapshot);
  if (cached !== undefined) return cached;
  let desiredVolumes = 0;
  let pending = 0;
  const mountedPairs = new Set<string>();
  let mounted = 0;
  let uncertain = 0;
  for (const volume of snapshot.actual.volumes) {
    if (volume.attachState === 'uncertain') uncertain++;
    if (volume.deviceMountState === 'uncertain') uncertain++;
    for (const mount of volume.pods) {
      if (mount.mountState === 'mounted') {
        mounted++;
        mountedPairs.add(`${mount.podUid}/${mount.outerVolumeName}`);
      } else {
        uncertain++;
      }
    }
  }
  for (const pod of snapshot.desired.pods) {
    desiredVolumes += pod.volumes.length;
    for (const volume of pod.volumes) if (!mountedPairs.has(`${pod.uid}/${volume.name}`)) pending++;
  }
  let inBackoff = 0;
  let running = 0;
  for (const op of snapshot.operations) {
    if (op.state === 'backoff') inBackoff++;
    else running++;
  }
  const outcomes: Record<ReconstructionOutcome, number> = { reconstructed: 0, 'confirmed-mounted': 0, 'cleaned-up': 0, failed: 0 };
  for (const v of snapshot.reconstruction.volumes) outcomes[v.outcome]++;
  const podErrors = Object.values(snapshot.podErrors).filter((errors) => errors.length > 0).length;
  const drivers = {
    total: snapshot.drivers.length,
    registered: snapshot.drivers.filter((d) => d.registered).length,
    failing: snapshot.drivers.filter((d) => d.lastError !== null).length,
  };
  const reasons: string[] = [];
  if (snapshot.statesSynced) {
    if (inBackoff > 0) reasons.push(`${inBackoff} in backoff`);
    if (uncertain > 0) reasons.push(`${uncertain} uncertain`);
    if (podErrors > 0) reasons.push(`${podErrors} pod${podErrors === 1 ? '' : 's'} with errors`);
    if (snapshot.sourceErrors.length > 0) reasons.push(`${snapshot.sourceErrors.length} source errors`);
    if (outcomes.failed > 0) reasons.push(`${outcomes.failed} failed reconstructions`);
    if (drivers.failing > 0) reasons.push(`${drivers.failing} driver errors`);
    if (snapshot.attachVerification.foundDetached.length > 0) {
      reasons.push(`${snapshot.attachVerification.foundDetached.length} found detached`);
    }
  }
  const summary: NodeSummary = {
    nodeName: snapshot.nodeName,
    seq: snapshot.seq,
    statesSynced: snapshot.statesSynced,
    agentVersion: snapshot.agent.version,
    agentStartedAt: snapshot.agent.startedAt,
    health: !snapshot.statesSynced ? 'syncing' : reasons.length > 0 ? 'degraded' : 'healthy',
    reasons,
    pods: snapshot.desired.pods.length,
    desiredVolumes,
    mounted,
    uncertain,
    pending,
    inBackoff,
    running,
    podErrors,
    sourceErrors: snapshot.sourceErrors.length,
    reconstruction: {
      state: snapshot.reconstruction.state,
      startedAt: snapshot.reconstruction.startedAt,
      finishedAt: snapshot.reconstruction.finishedAt,
      outcomes,
    },
    drivers,
  };
  summaryCache.set(snapshot, summary);
  return summary;
}
