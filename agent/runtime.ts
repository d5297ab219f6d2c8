/**
 * The seam between the node agent's process wiring (agent/main.ts and agent/node/) and its HTTP
 * server (agent/server/): everything the server reads or triggers, as one interface. The wiring
 * builds an AgentRuntime around a running VolumeManager; the server turns it into the
 * snapshot/SSE/action API of docs/api.md. Tests can hand the server a runtime built on the
 * engine's fake plugin.
 */
import type { Observe } from '../lib/api/observe.ts';
import type { BlockersQuery, BlockersResponse, MountHealth, UnmountBlockers } from '../lib/api/mount-health.ts';
import type { ContainerState, CsiDriverCalls, Driver, NodeCondition, OperationLogEntry, RecentEvent, SourceError, VolumeStats } from '../lib/api/snapshot.ts';
import type { ResyncFindings } from '../lib/kubelet-pods/resync.ts';
import type { OrphanCleanupResult } from '../lib/observe/orphan-cleanup.ts';
import type { Clock } from '../lib/clock/clock.ts';
import type { Logger } from '../lib/volume/logger.ts';
import type { NodeName } from '../lib/volume/types.ts';
import type { PodSourceProbe, VolumeManager } from '../lib/volumemanager/index.ts';

/** What a resync found (lib/kubelet-pods/resync.ts); the server answers `POST /api/v1/resync` with it. */
export type { ResyncFindings };

/** The mount-capability probe result shown in the snapshot and the log. */
export interface MounterInfo {
  kind: 'linux' | 'unprivileged';
  privileged: boolean;
  reason: string;
}

export interface AgentRuntime {
  readonly nodeName: NodeName;
  readonly version: string;
  readonly startedAt: number;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly volumeManager: VolumeManager;
  readonly mounter: MounterInfo;
  /** Kubelet root dir (`pods/` and `plugins/` below it). */
  readonly rootDir: string;
  /**
   * The pod source read live, for the forced TearDown's checks: a GET from the API server with
   * the kubernetes source, a re-read of the manifest directory with the manifest source.
   */
  readonly podSource: PodSourceProbe;
  /** Current errors of the object source (invalid manifest files…). */
  sourceErrors(): SourceError[];
  /** Registered CSI drivers (empty until CSI drivers are configured). */
  drivers(): Driver[];
  /** Kubelet-style events emitted by the engine, oldest first (a bounded ring). */
  recentEvents(): RecentEvent[];
  /** True once the object source has listed everything once (sources ready). */
  sourcesSynced(): boolean;
  /** Runs a verification pass now and reports what it found. */
  resync(): Promise<ResyncFindings>;
  /**
   * Registers a listener called after every change of what the methods above and `observe()`
   * answer and the engine's own `onChange` does not cover: source errors, source sync, drivers,
   * recent events, the observe section. The snapshot is rebuilt on these notifications only:
   * a part that changed without one would not be published.
   */
  onChange(listener: () => void): () => void;
  /**
   * The Node object's conditions (the snapshot's `nodeConditions`), with the kubernetes pod
   * source once its node informer saw the Node; null before, and absent with the manifest source.
   */
  nodeConditions?(): NodeCondition[] | null;
  /**
   * The containers' states of a pod (the snapshot's `desired.pods[].containers`), with the
   * kubernetes pod source; undefined for a pod it has none for. Absent with the manifest source,
   * which has no container statuses. The same array until it changes; changes notify `onChange`.
   */
  containerStates?(uid: string): readonly ContainerState[] | undefined;
  /** Observe mode only: the snapshot's `observe` section. Absent in managed mode. */
  observe?(): Observe;
  /** The snapshot's `operationLog`: the latest finished operations, oldest first (a bounded ring). */
  operationLog?(): readonly OperationLogEntry[];
  /** The snapshot's `csiPanel`: every CSI driver's calls. Absent from runtimes without CSI call stats. */
  csiPanel?(): CsiDriverCalls[];
  /** The snapshot's `volumeStats`: the last stats pass; null before it (or without stats collection). */
  volumeStats?(): VolumeStats[] | null;
  /**
   * Observe mode only: the guarded cleanup of one orphaned pod directory (`dryRun`: plan only).
   * Throws {@link OrphanCleanupDisabledError} without `--allow-orphan-cleanup`.
   */
  cleanupOrphan?(podUid: string, dryRun: boolean): Promise<OrphanCleanupResult>;
  /**
   * The snapshot's `mountHealth`: sorted by path, the same array until an entry changes (it is
   * replaced, never changed in place). Absent: no checks run (the snapshot lists none).
   */
  mountHealth?(): MountHealth[];
  /** The snapshot's `unmountBlockers`, sorted by key and replaced on change like `mountHealth`. */
  unmountBlockers?(): UnmountBlockers[];
  /**
   * `GET /api/v1/volumes/blockers`: who holds the volume's path now. Throws
   * {@link BlockersTargetError} when the volume (or the pod's mount of it) is not known or its
   * path is outside the root dir.
   */
  findBlockers?(query: BlockersQuery): Promise<BlockersResponse>;
}

/** The blocker search was asked for a volume, pod mount or path it must not or cannot search. */
export class BlockersTargetError extends Error {
  override readonly name = 'BlockersTargetError';
  constructor(
    readonly reason: 'not-found' | 'outside-root-dir',
    message: string,
  ) {
    super(message);
  }
}

export function isBlockersTargetError(err: unknown): err is BlockersTargetError {
  return err instanceof BlockersTargetError;
}

/** The orphan cleanup was asked for while `--allow-orphan-cleanup` is off. */
export class OrphanCleanupDisabledError extends Error {
  override readonly name = 'OrphanCleanupDisabledError';
}

export function isOrphanCleanupDisabledError(err: unknown): err is OrphanCleanupDisabledError {
  return err instanceof OrphanCleanupDisabledError;
}
