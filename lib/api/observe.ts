/**
 * The observe-mode part of the snapshot (`snapshot.observe`, present only when the agent runs
 * with `--mode=observe` beside a real kubelet): what the kubelet still has to do (the plan), the
 * kubelet's own backoff read from its events, orphaned pod directories, and the node truth diff.
 *
 * Contracts:
 * - Every list is sorted by its key (code-unit order) and keys are unique, so two snapshots
 *   describing the same state are deep-equal.
 * - In a delta the section travels whole in `set.observe` when anything in it changed (it
 *   changes at the refresh period, not per operation).
 * - Nothing here means the agent acted: observe mode never mounts, unmounts, attaches or
 *   writes node status. The only mutation is the opt-in orphan cleanup (`cleanupAllowed`).
 */
import { z } from 'zod';

const EpochMs = z.number().int().nonnegative();

/**
 * The one wording for a volume the agent rebuilt from disk and has not confirmed (reconstruction
 * after a restart; in observe mode every volume it reads from the kubelet's root dir): the
 * plan's reasons (agent) and the dashboard's badges, stages, embeds and Markdown say it alike.
 */
export const FOUND_ON_DISK = 'found on disk, not confirmed';

/** The kubelet's backoff for a volume operation, parsed from its FailedMount/FailedAttachVolume events. */
export const KubeletBackoffSchema = z.object({
  /** "No retries permitted until <time>", as epoch ms. */
  retryAt: EpochMs,
  /** `durationBeforeRetry` of that failure (500 ms doubling to 2m2s). */
  durationBeforeRetryMs: z.number().int().nonnegative(),
  /** The error after `Error:` in the event message, verbatim. */
  error: z.string(),
  /** When the event was last observed (its `lastTimestamp`/`eventTime`); null when it has none. */
  observedAt: EpochMs.nullable(),
  /**
   * `message`: the deadline was printed in the event ("No retries permitted until …") and is
   * exact. `event-count`: estimated from the event's repeat count (500 ms · 2^(count-1), capped at
   * 2m2s after its last occurrence): read it as "about".
   */
  basis: z.enum(['message', 'event-count']),
  /**
   * The kubelet's failed step as its message names it (`MountVolume.SetUp`,
   * `MountVolume.MountDevice`, `AttachVolume.Attach`, `MapVolume.MapPodDevice`…): how far the
   * kubelet got. A failed `MountVolume.SetUp` means attach (or its verification) and the device
   * mount succeeded as far as the kubelet is concerned. Absent when the message names none (and
   * from agents that predate it).
   */
  operation: z.string().optional(),
  /** The event's reason (`FailedMount`, `FailedAttachVolume`, `FailedMapVolume`); absent from agents that predate it. */
  reason: z.string().optional(),
  /** How often the API server saw the event (its `count`, at least 1); absent from agents that predate it. */
  count: z.number().int().positive().optional(),
});
export type KubeletBackoff = z.infer<typeof KubeletBackoffSchema>;

/** How far the kubelet got with a volume, by the failed step its event names (see {@link kubeletStepProgress}). */
export type KubeletProgress = 'pod-step-failed' | 'device-step-failed' | 'unknown';

/**
 * How far the kubelet got, from the failed step of its event (`KubeletBackoff.operation`). It sets
 * a volume up for a pod only once the volume is attached (or its attachment verified) and its
 * device mounted (kubernetes/kubernetes pkg/volume/util/operationexecutor/operation_generator.go@v1.34
 * GenerateMountVolumeFunc, GenerateMapVolumeFunc), so `pod-step-failed` (`MountVolume.SetUp`,
 * `MapVolume.MapPodDevice`) means every earlier step is done as far as the kubelet is concerned,
 * and `device-step-failed` (`MountVolume.MountDevice`, `MapVolume.SetUpDevice`,
 * `MapVolume.MapBlockVolume`) means attach is. `unknown` for any other step or none.
 */
export function kubeletStepProgress(operation: string | undefined): KubeletProgress {
  if (operation === 'MountVolume.SetUp' || operation === 'MapVolume.MapPodDevice') return 'pod-step-failed';
  if (operation === 'MountVolume.MountDevice' || operation === 'MapVolume.SetUpDevice' || operation === 'MapVolume.MapBlockVolume') return 'device-step-failed';
  return 'unknown';
}

/** One operation the kubelet still has to perform, as the agent's plan-only reconciler sees it. */
export const PlannedOperationSchema = z.object({
  /** `<operation>|<volume>|<podUid or empty>`: unique within the plan. */
  key: z.string(),
  /** The kubelet's operation name: `volume_mount`, `volume_unmount`, `unmount_device`, `verify_controller_attached_volume`… */
  operation: z.string(),
  /** The unique volume name. */
  volume: z.string(),
  podUid: z.string().nullable(),
  /** `namespace/name` of the pod when known. */
  pod: z.string().nullable(),
  /** The pod's name for the volume (`spec.volumes[].name`), when the operation is for a pod. */
  outerVolumeName: z.string().nullable(),
  /** Why the reconciler plans it (the state that led to it), for people. */
  reason: z.string(),
  /** When this operation was first planned without interruption: how long it has been outstanding. */
  since: EpochMs,
  /** The kubelet's own backoff for this volume (and pod), from its latest event; null when none is known. */
  kubeletBackoff: KubeletBackoffSchema.nullable(),
});
export type PlannedOperation = z.infer<typeof PlannedOperationSchema>;

export const OrphanMountSchema = z.object({ mountPoint: z.string(), fsType: z.string(), source: z.string() });

/** One volume path of an orphaned pod directory, classified. */
export const OrphanVolumeSchema = z.object({
  path: z.string(),
  /** `kubernetes.io/csi`…; null under `volume-subpaths/`. */
  pluginName: z.string().nullable(),
  volumeName: z.string(),
  /** `mount-point` (something is mounted at or below it), `non-empty`, `has-vol-data`, `empty`, `symlink`, `file`, `other`. */
  state: z.enum(['mount-point', 'symlink', 'file', 'other', 'non-empty', 'has-vol-data', 'empty']),
  explanation: z.string(),
  mounts: z.array(OrphanMountSchema),
  files: z.number().int().nonnegative(),
  bytes: z.number().int().nonnegative(),
  /** From a CSI `vol_data.json`: which driver and volume this was. */
  volData: z.object({ driverName: z.string().nullable(), volumeHandle: z.string().nullable() }).nullable(),
  /** The walk hit its budget: counts are lower bounds. */
  truncated: z.boolean(),
});
export type OrphanVolume = z.infer<typeof OrphanVolumeSchema>;

/** A `pods/<uid>` directory whose pod the API server no longer knows. */
export const OrphanPodSchema = z.object({
  podUid: z.string(),
  path: z.string(),
  /** Last modification of the pod directory. */
  modifiedAt: EpochMs,
  /** The first that applies: `mounted`, `volume-data`, `vol-data-only`, `empty-volume-dirs`, `no-volume-dirs`. */
  verdict: z.enum(['mounted', 'volume-data', 'vol-data-only', 'empty-volume-dirs', 'no-volume-dirs']),
  explanation: z.string(),
  volumes: z.array(OrphanVolumeSchema),
  /** Top-level entries that are not volume areas (`etc-hosts`, `containers`, `plugins`). */
  leftovers: z.array(z.string()),
  /** Mounts at or below the pod directory. */
  mounts: z.array(OrphanMountSchema),
});
export type OrphanPod = z.infer<typeof OrphanPodSchema>;

export const TruthFindingSchema = z.object({
  /** Stable code, e.g. `in-use-not-attached`, `va-error`, `mounted-not-desired`. */
  code: z.string(),
  severity: z.enum(['info', 'warning', 'error']),
  explanation: z.string(),
});

/** One volume compared across the agent's view, node status, VolumeAttachments and mountinfo. */
export const TruthDiffRowSchema = z.object({
  /** The unique volume name, or `va:<name>` / `mount:<path>` for what could not be mapped. */
  key: z.string(),
  volume: z.string().nullable(),
  /** Pod UIDs that want it (desired state); null when not desired. */
  desiredPods: z.array(z.string()).nullable(),
  /** In `node.status.volumesInUse`. */
  inUse: z.boolean(),
  /** The `node.status.volumesAttached` device path; null when not listed. */
  attachedDevicePath: z.string().nullable(),
  volumeAttachments: z.array(
    z.object({ name: z.string(), attached: z.boolean(), attachError: z.string().nullable(), detachError: z.string().nullable(), deleting: z.boolean() }),
  ),
  globalMounts: z.array(z.string()),
  podMounts: z.array(z.object({ podUid: z.string(), mountPoint: z.string() })),
  /** Empty when every source agrees. */
  findings: z.array(TruthFindingSchema),
});
export type TruthDiffRow = z.infer<typeof TruthDiffRowSchema>;

export const ObserveSchema = z.object({
  /** The kubelet root dir the agent reads (read-only). */
  kubeletRootDir: z.string(),
  /** The last rebuild of the actual state from disk and mountinfo; null before the first. */
  refreshedAt: EpochMs.nullable(),
  /** Why the last refresh failed (the previous state is kept); null when it worked. */
  refreshError: z.string().nullable(),
  plan: z.array(PlannedOperationSchema),
  orphans: z.array(OrphanPodSchema),
  /** Pod directories not inspected because the inspection budget ran out. */
  orphansTruncated: z.boolean(),
  truthDiff: z.array(TruthDiffRowSchema),
  /** `--allow-orphan-cleanup`: the guarded cleanup action is enabled. */
  cleanupAllowed: z.boolean(),
  /**
   * With `cleanupAllowed`: why every cleanup is refused at the moment, whatever the pod (the
   * mount table given with `--mountinfo` does not describe `--root-dir`, or cannot be read), as
   * of the last refresh; null when nothing blocks it. Absent from agents that predate it.
   */
  cleanupBlocked: z.string().nullable().optional(),
});
export type Observe = z.infer<typeof ObserveSchema>;
