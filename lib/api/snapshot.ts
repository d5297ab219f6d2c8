/**
 * The snapshot served by the node agent at `GET /api/v1/snapshot` and as the first event of
 * `GET /api/v1/events`: everything the volume manager knows at one sequence number. Shared by
 * the agent (which builds it) and the dashboard (which parses it), so this module depends on
 * zod only.
 *
 * Conventions:
 * - Times are epoch milliseconds of the agent's clock (integers), or `null` when the thing has
 *   not happened yet.
 * - Strings that the kubelet leaves empty when unknown (device paths) stay empty strings.
 * - Every keyed collection has unique keys (see the `*Key` functions); the schema rejects
 *   duplicates, because deltas address items by key.
 * - Array order carries no meaning except in `recentEvents`, `audit` and `podErrors` values
 *   (oldest first); `normalizeSnapshot` puts everything else in key order.
 */
import { z } from 'zod';
import { ObserveSchema } from './observe.ts';
import { MountHealthSchema, mountHealthKey, UnmountBlockersSchema, unmountBlockersKey } from './mount-health.ts';

/** Epoch milliseconds (agent wall clock), a non-negative integer. */
export const EpochMsSchema = z.number().int().nonnegative();
/** Epoch milliseconds (agent wall clock). */
export type EpochMs = z.infer<typeof EpochMsSchema>;

/** A snapshot sequence number: starts at 0 when the agent starts and grows with every change. */
export const SeqSchema = z.number().int().nonnegative();

/** A count (non-negative integer). */
const CountSchema = z.number().int().nonnegative();

// KEYS

/** The key of a desired pod: its UID. */
export function desiredPodKey(pod: Pick<DesiredPod, 'uid'>): string {
  return pod.uid;
}

/** The key of an actual-state volume: its unique volume name. */
export function actualVolumeKey(volume: Pick<ActualVolume, 'uniqueVolumeName'>): string {
  return volume.uniqueVolumeName;
}

/**
 * The key of a pending operation: `operationName|volume|podUid|nodeName`, with `''` for a null
 * pod UID or node name. Also the value of `cleared` in a retry response.
 */
export function operationKey(op: Pick<Operation | OperationHistory, 'operationName' | 'volume' | 'podUid' | 'nodeName'>): string {
  return `${op.operationName}|${op.volume}|${op.podUid ?? ''}|${op.nodeName ?? ''}`;
}

/** The key of a reconstruction result: `podUid|volumeName`. */
export function reconstructedVolumeKey(volume: Pick<ReconstructedVolume, 'podUid' | 'volumeName'>): string {
  return `${volume.podUid}|${volume.volumeName}`;
}

/** The key of a pod-source error: the file it is about. */
export function sourceErrorKey(error: Pick<SourceError, 'file'>): string {
  return error.file;
}

/** The key of a CSI driver: its name. */
export function driverKey(driver: Pick<Driver, 'name'>): string {
  return driver.name;
}

/** The key of a pod's mount of a volume (inside `actual.volumes[].pods`): the pod UID. */
export function podMountKey(mount: Pick<PodMount, 'podUid'>): string {
  return mount.podUid;
}

/** The key of a desired volume inside its pod: the pod's volume name. */
export function desiredVolumeKey(volume: Pick<DesiredVolume, 'name'>): string {
  return volume.name;
}

/** An array schema whose items must have unique keys. */
function uniqueArray<T extends z.ZodType>(item: T, key: (value: z.output<T>) => string, what: string) {
  return z.array(item).superRefine((items, ctx) => {
    const seen = new Set<string>();
    items.forEach((value, index) => {
      const k = key(value);
      if (seen.has(k)) {
        ctx.addIssue({ code: 'custom', path: [index], message: `duplicate ${what} key ${JSON.stringify(k)}` });
      }
      seen.add(k);
    });
  });
}

// AGENT

/** The agent process that produced the snapshot. */
export const AgentInfoSchema = z.object({
  /** The agent's version string (package version). */
  version: z.string(),
  /** When this agent process started. A new value means `seq` restarted from 0. */
  startedAt: EpochMsSchema,
});
/** The agent process that produced the snapshot. */
export type AgentInfo = z.infer<typeof AgentInfoSchema>;

/** The mounter the agent runs with. */
export const MounterSchema = z.object({
  /** Which mounter implementation: e.g. `"linux"` (real mounts) or `"unprivileged"`/`"fake"`. */
  kind: z.string(),
  /** True when the agent may perform real mounts (root, own mount namespace). */
  privileged: z.boolean(),
});
/** The mounter the agent runs with. */
export type Mounter = z.infer<typeof MounterSchema>;

// DESIRED STATE OF WORLD

/** One field of a pod's volume source, as written in the pod spec. */
export const VolumeSourceFieldSchema = z.object({
  /** The field's path inside the source, e.g. `path`, `claimName`, `items[0].key`. */
  path: z.string(),
  /** The value as written: strings as they are, numbers and booleans in JSON. */
  value: z.string(),
});
/** One field of a pod's volume source, as written in the pod spec. */
export type VolumeSourceField = z.infer<typeof VolumeSourceFieldSchema>;

/** A container's `volumeMounts[]` entry for the volume. */
export const VolumeMountSpecSchema = z.object({
  /** The container's name; init and ephemeral containers included. */
  container: z.string(),
  mountPath: z.string(),
  readOnly: z.boolean(),
  /** `subPath`; absent when the mount uses the whole volume. */
  subPath: z.string().optional(),
});
/** A container's `volumeMounts[]` entry for the volume. */
export type VolumeMountSpec = z.infer<typeof VolumeMountSpecSchema>;

/**
 * The volume as the pod spec writes it, and the API objects it leads to: the dashboard's "Spec"
 * section. Only what the agent knows without asking the API server.
 */
export const DesiredVolumeSpecSchema = z.object({
  /** The source's field name in `spec.volumes[]`: `hostPath`, `persistentVolumeClaim`, `csi`, … */
  sourceType: z.string(),
  /** The source's fields in spec order, nested ones flattened; empty for e.g. `emptyDir: {}`. */
  source: z.array(VolumeSourceFieldSchema),
  /** The containers' mounts of the volume, in container order; empty when only devices use it. */
  mounts: z.array(VolumeMountSpecSchema),
  /** The PersistentVolumeClaim: `claimName`, or `<pod>-<volume>` for a generic ephemeral volume. */
  claimName: z.string().optional(),
  /** The PersistentVolume the claim is bound to (the kubelet's inner volume spec name). */
  persistentVolumeName: z.string().optional(),
  /** The CSI driver: the inline source's `driver`, or the PV's (from the unique volume name). */
  csiDriver: z.string().optional(),
  /**
   * The VolumeAttachment the attach/detach controller (or the agent) creates for this node:
   * `csi-<sha256(volumeHandle + driver + nodeName)>`. Only for CSI volumes whose driver
   * requires attach (`attachable`).
   */
  volumeAttachment: z.string().optional(),
});
/** The volume as the pod spec writes it, and the API objects it leads to. */
export type DesiredVolumeSpec = z.infer<typeof DesiredVolumeSpecSchema>;

/** One volume a pod wants mounted (desired state of world). */
export const DesiredVolumeSchema = z.object({
  /** The pod's name for the volume (`spec.volumes[].name`, the outer volume name). */
  name: z.string(),
  /** `v1.UniqueVolumeName`: `<plugin>/<volume>` or `<plugin>/<podUID>-<specName>`. */
  uniqueVolumeName: z.string(),
  /** The volume plugin, e.g. `kubernetes.io/csi`. */
  pluginName: z.string(),
  /** The plugin attaches the volume to the node before mounting. */
  attachable: z.boolean(),
  /** The plugin mounts a global device path before the per-pod mount. */
  deviceMountable: z.boolean(),
  /** The volume is listed in the node's `status.volumesInUse`. */
  reportedInUse: z.boolean(),
  /** The pod spec's volume source and mounts; absent from agents that predate it. */
  spec: DesiredVolumeSpecSchema.optional(),
});
/** One volume a pod wants mounted (desired state of world). */
export type DesiredVolume = z.infer<typeof DesiredVolumeSchema>;

/**
 * One container's state as the API server has it (`status.containerStatuses[]`, init and
 * ephemeral containers included), written by the node's kubelet: `waiting` with its reason
 * (`ContainerCreating`, `CreateContainerConfigError`, `CrashLoopBackOff`, …), `running`, or
 * `terminated` with its reason and exit code.
 */
export const ContainerStateSchema = z.object({
  /** The container's name. */
  name: z.string(),
  /** Which list it is in: `containers`, `initContainers` or `ephemeralContainers`. */
  kind: z.enum(['container', 'init', 'ephemeral']),
  /** `unknown` when the status has no state (the kubelet has not reported one yet). */
  state: z.enum(['waiting', 'running', 'terminated', 'unknown']),
  /** `waiting.reason` or `terminated.reason`; absent when the kubelet gave none. */
  reason: z.string().optional(),
  /** `waiting.message` or `terminated.message`; absent when the kubelet gave none. */
  message: z.string().optional(),
  /** `terminated.exitCode`; absent for other states. */
  exitCode: z.number().int().optional(),
  /**
   * Since when the container is in this state: `running.startedAt`, `terminated.finishedAt`;
   * for `waiting` (the API has no time for it) when the agent first saw the container waiting
   * with this reason, see `sinceObserved`. `null` when unknown.
   */
  since: EpochMsSchema.nullable(),
  /** `since` is when the agent first saw the state (a waiting state), not a time the kubelet wrote. */
  sinceObserved: z.boolean(),
  /** `ready` as the kubelet reports it. */
  ready: z.boolean(),
  /** `restartCount` as the kubelet reports it. */
  restartCount: CountSchema,
});
/** One container's state as the API server has it. */
export type ContainerState = z.infer<typeof ContainerStateSchema>;

/** A pod of the desired state of world with the volumes it wants mounted. */
export const DesiredPodSchema = z.object({
  /** The pod UID. */
  uid: z.string(),
  namespace: z.string(),
  name: z.string(),
  /**
   * The pod's `status.phase` as its source has it (`Pending`, `Running`, `Succeeded`, `Failed`,
   * `Unknown`: the API server's, written by the node's kubelet); absent when the source has none
   * (a manifest without status) and from agents that predate it.
   */
  phase: z.string().optional(),
  /**
   * The containers' states from the pod's `status` (init containers first, then containers,
   * then ephemeral ones, each in the API server's order), as the API source last read them.
   * Absent when the source has none: the manifest source (the demo, standalone nodes), a pod the
   * kubelet has not reported on yet, and agents that predate it.
   */
  containers: z.array(ContainerStateSchema).optional(),
  /** The pod's volumes that some container uses; empty when none are (yet) added. */
  volumes: uniqueArray(DesiredVolumeSchema, desiredVolumeKey, 'desired volume'),
});
/** A pod of the desired state of world with the volumes it wants mounted. */
export type DesiredPod = z.infer<typeof DesiredPodSchema>;

/** The desired state of world. */
export const DesiredStateSchema = z.object({
  /** Pods with volumes this node should mount; empty before the populator's first pass. */
  pods: uniqueArray(DesiredPodSchema, desiredPodKey, 'desired pod'),
});
/** The desired state of world. */
export type DesiredState = z.infer<typeof DesiredStateSchema>;

// ACTUAL STATE OF WORLD

/** A pod's mount of a volume (actual state of world). */
export const PodMountSchema = z.object({
  podUid: z.string(),
  /** The kubelet's unique pod name (the UID for regular pods). */
  podName: z.string(),
  /** The pod's namespace; absent when unknown (e.g. a mount found by reconstruction). */
  podNamespace: z.string().optional(),
  /** The pod's name for the volume (`spec.volumes[].name`). */
  outerVolumeName: z.string(),
  /** `uncertain`: a SetUp timed out or its result is unknown; the reconciler will retry. */
  mountState: z.enum(['mounted', 'uncertain']),
  /** The volume must be set up again (configMap, secret, projected, … after a pod update). */
  remountRequired: z.boolean(),
});
/** A pod's mount of a volume (actual state of world). */
export type PodMount = z.infer<typeof PodMountSchema>;

/** A volume attached to (or at least known on) this node (actual state of world). */
export const ActualVolumeSchema = z.object({
  uniqueVolumeName: z.string(),
  pluginName: z.string(),
  /** `uncertain`: attach was started but not confirmed (e.g. reconstructed without node status). */
  attachState: z.enum(['attached', 'uncertain']),
  /** The device path from attach/WaitForAttach; empty when unknown or not attachable. */
  devicePath: z.string(),
  /** The global mount state (MountDevice); `not-mounted` for plugins without device mounts. */
  deviceMountState: z.enum(['mounted', 'uncertain', 'not-mounted']),
  /** The global mount path; empty when the plugin has none or it is not known yet. */
  deviceMountPath: z.string(),
  /** Pods that have this volume mounted (or uncertainly mounted); empty when none. */
  pods: uniqueArray(PodMountSchema, podMountKey, 'pod mount'),
});
/** A volume attached to (or at least known on) this node (actual state of world). */
export type ActualVolume = z.infer<typeof ActualVolumeSchema>;

/** The actual state of world. */
export const ActualStateSchema = z.object({
  /** Volumes known on the node; empty before anything was attached, mounted or reconstructed. */
  volumes: uniqueArray(ActualVolumeSchema, actualVolumeKey, 'actual volume'),
});
/** The actual state of world. */
export type ActualState = z.infer<typeof ActualStateSchema>;

// OPERATIONS

/** The fields that key an operation (see {@link operationKey}), shared by the table and the history. */
const OperationKeyFieldsSchema = z.object({
  /** `volume_mount`, `volume_unmount`, `unmount_device`, `verify_controller_attached_volume`, … */
  operationName: z.string(),
  /** The unique volume name the operation works on. */
  volume: z.string(),
  /** The pod the operation is for; `null` for volume-level operations (attach, unmount device). */
  podUid: z.string().nullable(),
  /** The node of the key; `null` for operations not keyed by node. */
  nodeName: z.string().nullable(),
});

/**
 * An entry of the nested pending operations table: an operation that runs now, or that failed
 * and is in exponential backoff. Succeeded operations leave the table (and the snapshot).
 */
export const OperationSchema = OperationKeyFieldsSchema.extend({
  /** `running` while an attempt executes; `backoff` after a failure until the next attempt. */
  state: z.enum(['running', 'backoff']),
  /** Consecutive failures since the entry was created or its backoff was reset. */
  failures: CountSchema,
  /** The detailed error of the last failure; `null` before the first failure. */
  lastError: z.string().nullable(),
  /** When the last failure happened; `null` before the first failure. */
  lastErrorAt: EpochMsSchema.nullable(),
  /** `lastErrorAt + durationBeforeRetryMs`: a retry is allowed strictly after it; `null` if never failed. */
  retryAt: EpochMsSchema.nullable(),
  /** The current backoff window (500 ms doubling to 2 min 2 s); 0 before the first failure. */
  durationBeforeRetryMs: CountSchema,
  /** When the running attempt started; `null` while in backoff. */
  startedAt: EpochMsSchema.nullable(),
});
/** An operation that runs now or is in exponential backoff. */
export type Operation = z.infer<typeof OperationSchema>;

/** One attempt of an operation. */
export const OperationAttemptSchema = z.object({
  /** When the attempt started. */
  startedAt: EpochMsSchema,
  /** How long it ran. */
  durationMs: CountSchema,
  /** The detailed error; `null` for the attempt that succeeded. At most 4096 characters, cut as `lastError`. */
  error: z.string().nullable(),
});
/** One attempt of an operation. */
export type OperationAttempt = z.infer<typeof OperationAttemptSchema>;

/**
 * The history of an operation that failed, by the same key as `operations[]` (a running or
 * backed-off operation has both an entry there and its history here). Kept after the success,
 * which ends it, and never reset by a "retry now" (which resets the backoff only). A key that
 * fails again after its success starts a new history.
 */
export const OperationHistorySchema = OperationKeyFieldsSchema.extend({
  /** When the first failed attempt ended. */
  firstFailureAt: EpochMsSchema,
  /** Every attempt since the first failure, those before a "retry now" included. */
  attemptsTotal: z.number().int().positive(),
  /** The last attempts (at most 20), oldest first; `attemptsTotal` counts those left out too. */
  attempts: z.array(OperationAttemptSchema),
  /** When the attempt that succeeded ended; `null` while it still fails. */
  succeededAt: EpochMsSchema.nullable(),
});
/** The history of an operation that failed. */
export type OperationHistory = z.infer<typeof OperationHistorySchema>;

// RECONSTRUCTION

/** What reconstruction did with one volume directory found on disk after a restart. */
export const ReconstructedVolumeSchema = z.object({
  podUid: z.string(),
  /** The volume's directory name under `pods/<uid>/volumes/<plugin>/`. */
  volumeName: z.string(),
  pluginName: z.string(),
  /**
   * - `reconstructed`: added to the actual state as uncertain, waiting for the desired state;
   * - `confirmed-mounted`: the desired state wanted it and the mount was confirmed;
   * - `cleaned-up`: no pod wanted it, so it was unmounted and removed;
   * - `failed`: it could not be reconstructed (see `error`).
   */
  outcome: z.enum(['reconstructed', 'failed', 'confirmed-mounted', 'cleaned-up']),
  /** Why reconstruction or cleanup failed; `null` unless `outcome` is `failed`. */
  error: z.string().nullable(),
  /**
   * Why the volume is kept mounted (uncertain) although no desired pod names it: its pod is still
   * listed by its source but some of its volumes could not be resolved (a claim GET failed, a PV
   * file is missing…), as `<pod volume>: <error>` joined by `"; "`. Nothing of that pod is
   * unmounted until its volumes resolve (then the mount is confirmed) or it is gone or terminated.
   * Absent otherwise (and from agents that predate the field).
   */
  keptBecause: z.string().optional(),
  /** When the outcome was reached. */
  at: EpochMsSchema,
});
/** What reconstruction did with one volume directory found on disk after a restart. */
export type ReconstructedVolume = z.infer<typeof ReconstructedVolumeSchema>;

/** Reconstruction progress, without the per-volume results. */
export const ReconstructionStatusSchema = z.object({
  /** `pending` until the first reconcile pass, `running` while scanning, then `done`. */
  state: z.enum(['pending', 'running', 'done']),
  /** When the scan started; `null` while pending. */
  startedAt: EpochMsSchema.nullable(),
  /** When the scan (and the cleanup of unwanted volumes) finished; `null` until done. */
  finishedAt: EpochMsSchema.nullable(),
});
/** Reconstruction progress, without the per-volume results. */
export type ReconstructionStatus = z.infer<typeof ReconstructionStatusSchema>;

/** Rebuilding the actual state from disk after an agent restart. */
export const ReconstructionSchema = ReconstructionStatusSchema.extend({
  /** One entry per volume directory found; empty while pending or when the node had none. */
  volumes: uniqueArray(ReconstructedVolumeSchema, reconstructedVolumeKey, 'reconstructed volume'),
});
/** Rebuilding the actual state from disk after an agent restart. */
export type Reconstruction = z.infer<typeof ReconstructionSchema>;

// ERRORS, EVENTS, AUDIT

/** A pod-source file (static pod manifest) that could not be read or parsed. */
export const SourceErrorSchema = z.object({
  /** The path of the file. */
  file: z.string(),
  message: z.string(),
});
/** A pod-source file (static pod manifest) that could not be read or parsed. */
export type SourceError = z.infer<typeof SourceErrorSchema>;

/** Errors the populator recorded per pod (`DSW.AddErrorToPod`), oldest first, by pod UID. */
export const PodErrorsSchema = z.record(z.string(), z.array(z.string()));
/** Errors the populator recorded per pod, oldest first, by pod UID; empty when there are none. */
export type PodErrors = z.infer<typeof PodErrorsSchema>;

/** An event the agent recorded (as the kubelet's event recorder would). */
export const RecentEventSchema = z.object({
  time: EpochMsSchema,
  type: z.enum(['Normal', 'Warning']),
  /** The CamelCase reason, e.g. `FailedMount`, `SuccessfulAttachVolume`. */
  reason: z.string(),
  /** The pod the event is about; `null` for node-level events. */
  podUid: z.string().nullable(),
  message: z.string(),
  /**
   * The unique volume name the event is about (`FailedMount`, `SuccessfulAttachVolume`, …), for
   * grouping per volume; absent for events about no one volume (and from agents that predate it).
   */
  volume: z.string().optional(),
  /**
   * The namespace and name of the pod the event is about (its involved object), kept with the
   * event so a pod that is gone is still named; absent for node-level events (and from agents
   * that predate them).
   */
  podNamespace: z.string().optional(),
  podName: z.string().optional(),
  /**
   * How often the API server saw the event (its `count`). Only on events read from the API
   * server (observe mode); absent on the agent's own events, which are listed once per occurrence.
   */
  count: z.number().int().positive().optional(),
});
/** An event the agent recorded. */
export type RecentEvent = z.infer<typeof RecentEventSchema>;

/** One safety check evaluated before an operator action (e.g. "pod is not running"). */
export const CheckSchema = z.object({
  /** A short, stable identifier, e.g. `pod-not-running`. */
  name: z.string(),
  ok: z.boolean(),
  /** What was found, in words. */
  detail: z.string(),
});
/** One safety check evaluated before an operator action. */
export type Check = z.infer<typeof CheckSchema>;

/** An operator action taken through the API (resync, retry, unmount). */
export const AuditEntrySchema = z.object({
  time: EpochMsSchema,
  /**
   * Who asked: the person or service account the authenticator names (the TokenReview's user
   * name, e.g. `system:serviceaccount:ns:sa`, or the static token's name), never an address.
   */
  caller: z.string(),
  /**
   * The caller's groups as the TokenReview reported them (e.g. `system:authenticated`); empty
   * for the static token. Absent from entries recorded before groups were kept.
   */
  groups: z.array(z.string()).optional(),
  /** The incident ID the operator typed in the confirmation dialog; `null` when none was given. Absent from older entries. */
  incidentId: z.string().nullable().optional(),
  /** The reason the operator typed in the confirmation dialog; `null` when none was given. Absent from older entries. */
  reason: z.string().nullable().optional(),
  /** `resync`, `retry`, `unmount`, `orphan-cleanup` or `orphan-cleanup-dry-run`. */
  action: z.string(),
  /** What the action was about, e.g. `<podUid>/<volume>`; `null` for node-wide actions. */
  target: z.string().nullable(),
  /** The checks evaluated before acting; empty when the action has none. */
  checks: z.array(CheckSchema),
  /**
   * `refused`: a check failed and nothing was done; `failed`: it was done and failed; `running`:
   * it was started and had not finished when the answer was sent (a later entry with the same
   * action and target records how it ended).
   */
  result: z.enum(['succeeded', 'refused', 'failed', 'running']),
  /** The refusal reason or error; `null` on success. */
  message: z.string().nullable(),
});
/** An operator action taken through the API. */
export type AuditEntry = z.infer<typeof AuditEntrySchema>;

// CSI

/** A CSI driver registered (or trying to register) with the agent. */
export const DriverSchema = z.object({
  name: z.string(),
  /** The driver's socket, e.g. `unix:///var/lib/kubelet/plugins/x/csi.sock`. */
  endpoint: z.string(),
  /** The registration handshake completed and NodeGetInfo succeeded. */
  registered: z.boolean(),
  /** The node ID the driver reported (NodeGetInfo); `null` until it answered. */
  nodeId: z.string().nullable(),
  /** Node service capabilities, e.g. `STAGE_UNSTAGE_VOLUME`; empty until probed. */
  capabilities: z.array(z.string()),
  /** When the driver was last probed; `null` if never. */
  lastProbeAt: EpochMsSchema.nullable(),
  /** The last probe or registration error; `null` when the last probe succeeded or none ran. */
  lastError: z.string().nullable(),
  /**
   * The driver's attach limit: NodeGetInfo `max_volumes_per_node`, which the kubelet publishes as
   * the CSINode's `allocatable.count`; 0 = no limit; `null` until NodeGetInfo answered. Absent
   * from agents that predate it.
   */
  maxVolumesPerNode: CountSchema.nullable().optional(),
});
/** A CSI driver registered (or trying to register) with the agent. */
export type Driver = z.infer<typeof DriverSchema>;

/** One finished operation (successful or not): the timeline's bars. */
export const OperationLogEntrySchema = z.object({
  /** `volume_attach`, `volume_mount`, `volume_unmount`, `unmount_device`, `volume_detach`, `volume_expand`, … */
  operationName: z.string(),
  /** The unique volume name; empty for operations without one. */
  volume: z.string(),
  /** The pod of a per-pod operation; null for volume-wide ones (attach, device mount of attachable volumes, detach). */
  podUid: z.string().nullable(),
  startedAt: EpochMsSchema,
  finishedAt: EpochMsSchema,
  outcome: z.enum(['success', 'failure']),
  /** The detailed error of a failure (cut to 4096 characters); null for a success. */
  error: z.string().nullable(),
});
/** One finished operation. */
export type OperationLogEntry = z.infer<typeof OperationLogEntrySchema>;

/**
 * The buckets of `csiPanel[].methods[].buckets`, in seconds: those of the kubelet's
 * `csi_operations_seconds` histogram. `buckets[i]` counts the calls that took at most
 * `CSI_OPERATION_BUCKETS_SECONDS[i]` and more than the bucket before; the extra last entry counts
 * those above 600 s.
 */
export const CSI_OPERATION_BUCKETS_SECONDS: readonly number[] = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600];

/** The calls of one RPC of one driver since the agent started. */
export const CsiMethodStatsSchema = z.object({
  /** The RPC, e.g. `NodeStageVolume`. */
  method: z.string(),
  calls: CountSchema,
  /** Calls by Go's status code name (`OK`, `DeadlineExceeded`, …; `unknown-non-grpc` without a gRPC status). */
  codes: z.record(z.string(), CountSchema),
  /** Calls per latency bucket ({@link CSI_OPERATION_BUCKETS_SECONDS} plus one above the last), not cumulative. */
  buckets: z.array(CountSchema),
  /** Sum of the calls' durations. */
  totalMs: z.number().nonnegative(),
  /** The slowest call. */
  maxMs: z.number().nonnegative(),
});
/** The calls of one RPC of one driver since the agent started. */
export type CsiMethodStats = z.infer<typeof CsiMethodStatsSchema>;

/** One CSI call the agent made. */
export const CsiCallSchema = z.object({
  /** When it was sent. */
  at: EpochMsSchema,
  method: z.string(),
  /** Go's status code name; `OK` for a success. */
  code: z.string(),
  durationMs: z.number().nonnegative(),
  /** The request's `volume_id`; null when it has none. */
  volumeId: z.string().nullable(),
  /** The request as JSON with every secret value replaced by `***stripped***`, at most 2048 characters. */
  request: z.string(),
  /** The error text (secret values scrubbed); null for a success. */
  error: z.string().nullable(),
});
/** One CSI call the agent made. */
export type CsiCall = z.infer<typeof CsiCallSchema>;

/** One Probe or GetPluginInfo answer of a driver. */
export const CsiProbeSchema = z.object({
  at: EpochMsSchema,
  method: z.enum(['Probe', 'GetPluginInfo']),
  code: z.string(),
  durationMs: z.number().nonnegative(),
  /** Probe's `ready`; null when the driver left it unset, the call failed, or for GetPluginInfo. */
  ready: z.boolean().nullable(),
  /** GetPluginInfo's `vendor_version`; null otherwise. */
  vendorVersion: z.string().nullable(),
  error: z.string().nullable(),
});
/** One Probe or GetPluginInfo answer of a driver. */
export type CsiProbe = z.infer<typeof CsiProbeSchema>;

/** The driver panel of one CSI driver: its calls since the agent started. */
export const CsiDriverCallsSchema = z.object({
  driver: z.string(),
  /** By method name. */
  methods: z.array(CsiMethodStatsSchema),
  /**
   * The latest calls, oldest first, at most 50; successful NodeGetVolumeStats calls (periodic)
   * and Probe / GetPluginInfo (in `probes`) are counted in `methods` only.
   */
  recentCalls: z.array(CsiCallSchema),
  /** The latest Probe and GetPluginInfo answers, oldest first, at most 60. */
  probes: z.array(CsiProbeSchema),
});
/** The driver panel of one CSI driver. */
export type CsiDriverCalls = z.infer<typeof CsiDriverCallsSchema>;

/** The key of a volume's stats: `podUid|volumeName`. */
export function volumeStatsKey(stats: Pick<VolumeStats, 'podUid' | 'volumeName'>): string {
  return `${stats.podUid}|${stats.volumeName}`;
}

/** One mounted pod volume's usage, collected every `--volume-stats-agg-period` (1m). */
export const VolumeStatsSchema = z.object({
  podUid: z.string(),
  /** The pod's name of the volume. */
  volumeName: z.string(),
  uniqueVolumeName: z.string(),
  pluginName: z.string(),
  /** The CSI driver; null for other plugins. */
  driver: z.string().nullable(),
  /** The directory measured (a CSI volume's publish target). */
  path: z.string(),
  /** The claim of the volume's PV: the labels of `kubelet_volume_stats_*`; null without one (no metric then). */
  persistentVolumeClaim: z.object({ namespace: z.string(), name: z.string() }).nullable(),
  /** `csi`: NodeGetVolumeStats of the driver; `statfs`: statfs(2) of the directory. */
  source: z.enum(['csi', 'statfs']),
  capacityBytes: z.number().nonnegative().nullable(),
  availableBytes: z.number().nonnegative().nullable(),
  usedBytes: z.number().nonnegative().nullable(),
  inodes: z.number().nonnegative().nullable(),
  inodesFree: z.number().nonnegative().nullable(),
  inodesUsed: z.number().nonnegative().nullable(),
  /** The driver's volume condition (VOLUME_CONDITION); null when it reports none. */
  condition: z.object({ abnormal: z.boolean(), message: z.string() }).nullable(),
  collectedAt: EpochMsSchema,
  durationMs: z.number().nonnegative(),
  /** Why the numbers are missing (the call failed, GET_VOLUME_STATS not advertised, statfs hung); null with numbers. */
  error: z.string().nullable(),
});
/** One mounted pod volume's usage. */
export type VolumeStats = z.infer<typeof VolumeStatsSchema>;

/** The periodic check that volumes the actual state calls attached are still attached. */
export const AttachVerificationSchema = z.object({
  /** When the last pass finished; `null` before the first pass. */
  lastRunAt: EpochMsSchema.nullable(),
  /** How many volumes the last pass checked; 0 before the first pass. */
  checked: CountSchema,
  /** Unique volume names the last pass found detached; empty when none (or no pass yet). */
  foundDetached: z.array(z.string()),
});
/** The periodic check that volumes the actual state calls attached are still attached. */
export type AttachVerification = z.infer<typeof AttachVerificationSchema>;

// NODE

/** A condition of the Node object (`status.conditions[]`), as the API server has it. */
export const NodeConditionSchema = z.object({
  /** `Ready`, `MemoryPressure`, `DiskPressure`, `PIDPressure`, `NetworkUnavailable`, … */
  type: z.string(),
  /** `True`, `False` or `Unknown`. */
  status: z.string(),
  reason: z.string().optional(),
  message: z.string().optional(),
  /** When the status last changed; `null` when the API server has no time. */
  lastTransitionTime: EpochMsSchema.nullable(),
});
/** A condition of the Node object. */
export type NodeCondition = z.infer<typeof NodeConditionSchema>;

// SNAPSHOT

/** The whole state of one node's volume manager at one sequence number. */
export const SnapshotSchema = z.object({
  /** The Node object's name. */
  nodeName: z.string(),
  /** Grows by at least 1 with every published change; restarts at 0 with the agent. */
  seq: SeqSchema,
  /** The desired and actual states were populated (and reconstruction merged): `/readyz` is 200. */
  statesSynced: z.boolean(),
  agent: AgentInfoSchema,
  mounter: MounterSchema,
  desired: DesiredStateSchema,
  actual: ActualStateSchema,
  /** Running operations and operations in backoff; empty when the table is empty. */
  operations: uniqueArray(OperationSchema, operationKey, 'operation'),
  /**
   * Operations that failed since the agent started: first failure, attempts, success; by the
   * key of `operations[]`. Bounded. Empty when none failed (and from agents that predate it).
   */
  operationHistory: uniqueArray(OperationHistorySchema, operationKey, 'operation history').default([]),
  reconstruction: ReconstructionSchema,
  podErrors: PodErrorsSchema,
  /** Unreadable pod-source files; empty when all parse. */
  sourceErrors: uniqueArray(SourceErrorSchema, sourceErrorKey, 'source error'),
  /**
   * The latest events, oldest first, bounded (a ring buffer). In observe mode the agent records
   * none of its own: these are the kubelet's events of the node's pods as the agent last read
   * them from the API server (the pods with outstanding work), with their `count`.
   */
  recentEvents: z.array(RecentEventSchema),
  /** The latest operator actions, oldest first, bounded (a ring buffer). */
  audit: z.array(AuditEntrySchema),
  /** CSI drivers known to the agent; empty when none registered. */
  drivers: uniqueArray(DriverSchema, driverKey, 'driver'),
  attachVerification: AttachVerificationSchema,
  /**
   * The Node object's conditions in the API server's order, from the agent's node informer. Only
   * with the kubernetes pod source, once the Node was seen; absent otherwise (the manifest source
   * has no Node object) and from agents that predate it.
   */
  nodeConditions: z.array(NodeConditionSchema).optional(),
  /** Observe mode only (`--mode=observe`): the kubelet's outstanding work, orphans, truth diff. Absent in managed mode. */
  observe: ObserveSchema.optional(),
  /**
   * The last health check of every pod volume path and staging path the actual state knows, by
   * path (docs/api.md "Mount health"). Empty before the first check, with the unprivileged
   * mounter's stand-ins checked too (and from agents that predate it).
   */
  mountHealth: uniqueArray(MountHealthSchema, mountHealthKey, 'mount health').default([]),
  /**
   * Who keeps a volume busy, for every unmount (TearDown or UnmountDevice) whose last error says
   * the target is busy, while it stays in the operations table. Empty when none (and from agents
   * that predate it).
   */
  unmountBlockers: uniqueArray(UnmountBlockersSchema, unmountBlockersKey, 'unmount blockers').default([]),
  /**
   * The latest finished operations, oldest first, bounded (a ring buffer of 500): successes too,
   * which `operationHistory` does not keep. Memory only (empty after an agent restart); empty
   * from agents that predate it.
   */
  operationLog: z.array(OperationLogEntrySchema).default([]),
  /** The CSI driver panel: each driver's calls (histograms, recent calls, probes), by driver name. Absent from agents that predate it. */
  csiPanel: z.array(CsiDriverCallsSchema).optional(),
  /**
   * Usage of every mounted pod volume, by {@link volumeStatsKey}, from the last stats pass;
   * absent before the first pass, with `--volume-stats-agg-period=0`, in observe mode and from
   * agents that predate it.
   */
  volumeStats: uniqueArray(VolumeStatsSchema, volumeStatsKey, 'volume stats').optional(),
});
/** The whole state of one node's volume manager at one sequence number. */
export type Snapshot = z.infer<typeof SnapshotSchema>;
