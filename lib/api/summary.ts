/**
 * `GET /api/v1/summary`: one node's counts, for overviews of many nodes. A few hundred bytes
 * instead of a snapshot (megabytes on a large node) or an event stream per node: a dashboard
 * with 200 nodes polls 200 summaries rather than holding 200 streams open.
 *
 * The counts are exactly what a client would compute from the snapshot of the same `seq`
 * ({@link summarizeSnapshot} is the definition; the agent serves it for its current snapshot).
 * Depends on zod and the snapshot schema only, like the rest of `lib/api/`.
 */
import { z } from 'zod';
import type { ApiRoute } from './routes.ts';
import { AgentInfoSchema, MounterSchema, ReconstructionStatusSchema, SeqSchema, type ActualVolume, type DesiredPod, type ReconstructedVolume, type Snapshot } from './snapshot.ts';

/** The route (authenticated like every read but `/healthz` and `/readyz`). */
export const SUMMARY_ROUTE = { method: 'GET', path: '/api/v1/summary', auth: true } as const satisfies ApiRoute;

const CountSchema = z.number().int().nonnegative();

/** How many scanned volume directories reached each reconstruction outcome. */
export const ReconstructionOutcomeCountsSchema = z.object({
  reconstructed: CountSchema,
  'confirmed-mounted': CountSchema,
  'cleaned-up': CountSchema,
  failed: CountSchema,
});
/** How many scanned volume directories reached each reconstruction outcome. */
export type ReconstructionOutcomeCounts = z.infer<typeof ReconstructionOutcomeCountsSchema>;

/** The counts of a summary; each is defined over the snapshot of the same `seq`. */
export const SummaryCountsSchema = z.object({
  /** `desired.pods.length`. */
  pods: CountSchema,
  /** Volumes the desired pods want, counted per (pod, volume). */
  desiredVolumes: CountSchema,
  /** Pod mounts (`actual.volumes[].pods[]`) in state `mounted`. */
  mounted: CountSchema,
  /** Pod mounts not `mounted`, plus attaches and device mounts in state `uncertain`. */
  uncertain: CountSchema,
  /** Desired (pod, volume) pairs without a `mounted` pod mount. */
  pending: CountSchema,
  /** Operations in state `backoff`. */
  inBackoff: CountSchema,
  /** Operations in state `running`. */
  running: CountSchema,
  /**
   * Operations in state `running` that failed before (`failures` > 0): a retry is in flight. The
   * node stays degraded through it instead of looking healthy until the attempt ends. 0 from
   * agents that predate it.
   */
  retrying: CountSchema.default(0),
  /** Pods with at least one populator error (`podErrors` entries that are not empty). */
  podErrors: CountSchema,
  /** `sourceErrors.length`. */
  sourceErrors: CountSchema,
  /** `attachVerification.foundDetached.length`. */
  foundDetached: CountSchema,
});
/** The counts of a summary. */
export type SummaryCounts = z.infer<typeof SummaryCountsSchema>;

/** The body of `GET /api/v1/summary`. Fields may be added later; clients ignore unknown ones. */
export const AgentSummarySchema = z.object({
  nodeName: z.string(),
  /** The `seq` of the snapshot the counts were taken from. */
  seq: SeqSchema,
  statesSynced: z.boolean(),
  agent: AgentInfoSchema,
  /**
   * `managed`: the agent runs the volume manager itself; `observe`: it watches a real kubelet
   * (`--mode=observe`, the snapshot has an `observe` section).
   */
  mode: z.enum(['managed', 'observe']),
  /** How the agent mounts (`linux` with real mounts, or `unprivileged`). */
  mounter: MounterSchema,
  counts: SummaryCountsSchema,
  /** Reconstruction progress (`state`, `startedAt`, `finishedAt`) and its outcome counts. */
  reconstruction: ReconstructionStatusSchema.extend({ outcomes: ReconstructionOutcomeCountsSchema }),
  /** CSI drivers known, registered, and with a last error. */
  drivers: z.object({ total: CountSchema, registered: CountSchema, failing: CountSchema }),
  /**
   * Observe mode only (absent in managed mode, and from agents that predate it):
   * `orphans` is `observe.orphans.length` (pod directories whose pod the API server no longer
   * knows); `attachErrors` counts the VolumeAttachments of `observe.truthDiff[]` with an
   * `attachError` (the external attacher's `status.attachError`); `outstanding` and `failing`
   * count the kubelet's plan and its entries in the kubelet's backoff.
   */
  observe: z
    .object({
      orphans: CountSchema,
      attachErrors: CountSchema,
      /**
       * The kubelet's outstanding work: `observe.plan.length` ({@link outstandingWork}), the one
       * number every view shows for it. Absent from agents that predate it.
       */
      outstanding: CountSchema.optional(),
      /** Plan entries whose last attempt failed in the kubelet (with a `kubeletBackoff`). Absent from agents that predate it. */
      failing: CountSchema.optional(),
    })
    .optional(),
});
/** The body of `GET /api/v1/summary`. */
export type AgentSummary = z.infer<typeof AgentSummarySchema>;

/**
 * What one actual volume contributes to the counts: its `uncertain` states (attach, device mount,
 * pod mounts) and the `podUid/volumeName` pairs it has mounted (one per mounted pod mount).
 */
export function actualVolumeCounts(volume: ActualVolume): { uncertain: number; mountedPairs: string[] } {
  let uncertain = 0;
  const mountedPairs: string[] = [];
  if (volume.attachState === 'uncertain') uncertain++;
  if (volume.deviceMountState === 'uncertain') uncertain++;
  for (const mount of volume.pods) {
    if (mount.mountState === 'mounted') mountedPairs.push(`${mount.podUid}/${mount.outerVolumeName}`);
    else uncertain++;
  }
  return { uncertain, mountedPairs };
}

/** The `podUid/volumeName` pairs a desired pod wants, in the form of {@link actualVolumeCounts}'. */
export function desiredPodPairs(pod: DesiredPod): string[] {
  return pod.volumes.map((volume) => `${pod.uid}/${volume.name}`);
}

/** The counts of the operations table: `inBackoff`, `running`, and of `running` those `retrying` (failed before). */
export function operationCounts(operations: Snapshot['operations']): { inBackoff: number; running: number; retrying: number } {
  let inBackoff = 0;
  let running = 0;
  let retrying = 0;
  for (const op of operations) {
    if (op.state === 'backoff') {
      inBackoff++;
    } else {
      running++;
      if (op.failures > 0) retrying++;
    }
  }
  return { inBackoff, running, retrying };
}

/** The summary of `snapshot`: the definition of every count (O(volumes + pods + operations)). */
export function summarizeSnapshot(snapshot: Snapshot): AgentSummary {
  let mounted = 0;
  let uncertain = 0;
  const mountedPairs = new Set<string>();
  for (const volume of snapshot.actual.volumes) {
    const counts = actualVolumeCounts(volume);
    uncertain += counts.uncertain;
    mounted += counts.mountedPairs.length;
    for (const pair of counts.mountedPairs) mountedPairs.add(pair);
  }
  let desiredVolumes = 0;
  let pending = 0;
  for (const pod of snapshot.desired.pods) {
    const pairs = desiredPodPairs(pod);
    desiredVolumes += pairs.length;
    for (const pair of pairs) if (!mountedPairs.has(pair)) pending++;
  }
  const { inBackoff, running, retrying } = operationCounts(snapshot.operations);
  const outcomes: Record<ReconstructedVolume['outcome'], number> = { reconstructed: 0, 'confirmed-mounted': 0, 'cleaned-up': 0, failed: 0 };
  for (const v of snapshot.reconstruction.volumes) outcomes[v.outcome]++;
  let podErrors = 0;
  for (const errors of Object.values(snapshot.podErrors)) if (errors.length > 0) podErrors++;
  let registered = 0;
  let failing = 0;
  for (const d of snapshot.drivers) {
    if (d.registered) registered++;
    if (d.lastError !== null) failing++;
  }
  return {
    nodeName: snapshot.nodeName,
    seq: snapshot.seq,
    statesSynced: snapshot.statesSynced,
    agent: { version: snapshot.agent.version, startedAt: snapshot.agent.startedAt },
    mode: snapshot.observe === undefined ? 'managed' : 'observe',
    mounter: { kind: snapshot.mounter.kind, privileged: snapshot.mounter.privileged },
    counts: {
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
      foundDetached: snapshot.attachVerification.foundDetached.length,
    },
    reconstruction: {
      state: snapshot.reconstruction.state,
      startedAt: snapshot.reconstruction.startedAt,
      finishedAt: snapshot.reconstruction.finishedAt,
      outcomes,
    },
    drivers: { total: snapshot.drivers.length, registered, failing },
    ...(snapshot.observe === undefined ? {} : { observe: observeCounts(snapshot.observe) }),
  };
}

/** The observe-mode counts of a summary and of a snapshot. */
export interface ObserveCounts {
  orphans: number;
  attachErrors: number;
  /** {@link outstandingWork}. */
  outstanding: number;
  /** Plan entries in the kubelet's backoff (their last attempt failed). */
  failing: number;
}

/**
 * The kubelet's outstanding work: one count, the entries of its plan (each operation the kubelet
 * still has to perform, keyed `<operation>|<volume>|<podUid>`). The overview cards, the node
 * page's counts, its table of contents and the plan's header all show this number.
 */
export function outstandingWork(observe: Pick<NonNullable<Snapshot['observe']>, 'plan'>): number {
  return observe.plan.length;
}

/** The observe-mode counts of a summary (see `AgentSummarySchema.observe`). */
export function observeCounts(observe: NonNullable<Snapshot['observe']>): ObserveCounts {
  let attachErrors = 0;
  for (const row of observe.truthDiff) for (const va of row.volumeAttachments) if (va.attachError !== null) attachErrors++;
  let failing = 0;
  for (const op of observe.plan) if (op.kubeletBackoff !== null) failing++;
  return { orphans: observe.orphans.length, attachErrors, outstanding: outstandingWork(observe), failing };
}
