/**
 * The engine's public surface: everything a caller of the volume manager (the node agent, its
 * API, benchmarks of the whole) may use. What is here:
 *
 * - the {@link VolumeManager} and its options, errors and results;
 * - the read-only views it hands out (of both worlds, the operations table, the finished
 *   operations, the reconstruction report, the plan of plan-only mode) and the types they carry;
 * - the ports a caller implements: the pod source (`PodManager`, `PodStateProvider`,
 *   `SourcesReady`), the live pod-source probe and rate limiter of the operator actions, the
 *   metrics sink;
 * - `getVolumesFromPodDir`, the kubelet's reading of `pods/`, for callers that list volume
 *   directories themselves (the agent's resync compares them with the actual state).
 *
 * What is not: the worlds, the operations table, the operation executor and generator, the
 * populator, the reconciler and reconstruction (lib/volumemanager/{cache,populator,reconciler},
 * lib/operationexecutor), and `internals.ts`. Only the engine and its own tests use them; a lint
 * rule keeps `agent/**` out. Volume plugins and their types (`lib/volume`) are a separate, public
 * layer: the agent implements plugins and imports it directly.
 */

// THE VOLUME MANAGER

export {
  VolumeManager,
  WaitForVolumesError,
  expectedVolumes,
  isWaitForVolumesError,
  type AttachVerificationResult,
  type VolumeManagerOptions,
} from './volume-manager.ts';
export { PlanOnlyModeError, isPlanOnlyModeError } from './reconciler/plan-only.ts';
export type { ActualStateRefresh } from './reconciler/reconstruct.ts';

// READ-ONLY VIEWS

export type { ActualStateView, DesiredStateView } from './state-views.ts';
export { podNamespace, type DesiredVolumeView } from './cache/desired-state-of-world.ts';
export type { ActualVolumeView, AttachabilityState, UncertainEntry } from './cache/actual-state-of-world.ts';
export type { AttachedVolume, DeviceMountState, MountedVolume, VolumeMountState, VolumeToMount } from '../operationexecutor/types.ts';
export type { ClearBackoffResult, PendingOperationView } from '../operationexecutor/nested-pending-operations.ts';
export type { OperationRecord } from '../operationexecutor/operation-executor.ts';
export {
  DEFAULT_HISTORY_ENTRIES,
  OperationHistory,
  type OperationAttempt,
  type OperationHistoryOptions,
  type OperationHistoryView,
} from '../operationexecutor/operation-history.ts';
export type { ReconstructionEntry, ReconstructionOutcome, ReconstructionReport } from './reconciler/reconstruct-report.ts';
export type { PlannedOperation, PlannedOperationReason, PlannedOperationState } from '../operationexecutor/planning-executor.ts';
export { pluginNameNotAvailable, totalVolumesStates, type VolumeCount } from './metrics.ts';

// OPERATOR ACTIONS

export type {
  ForceUnmountRequest,
  ForceUnmountResult,
  OperatorCheck,
  OperatorRateLimitDecision,
  OperatorRateLimiter,
  PodRef,
  PodSourceLookup,
  PodSourceProbe,
  RetryOperationRequest,
  RetryOperationResult,
  TearDownOutcome,
} from './operator-actions.ts';

// PORTS A CALLER IMPLEMENTS

export type { PodManager, PodStateProvider, SourcesReady } from './populator/pod-source.ts';
export type { ReconcilerMetrics } from './reconciler/reconstruct.ts';
export type { BlockVolumePathHandler, Subpather } from '../operationexecutor/operation-generator.ts';

// THE PODS DIRECTORY

export {
  PodsDirUnreadableError,
  getVolumesFromPodDir,
  isPodsDirUnreadableError,
  type PodVolume,
} from './reconciler/reconstruct-common.ts';
