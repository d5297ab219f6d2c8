/**
 * Operation executor (kubelet `operationexecutor/operation_executor.go`): starts generated
 * operations under the nested-pending-operations table, so that at most one operation runs per
 * volume key and failed keys back off exponentially. Every public call returns at once; the
 * plugin work runs asynchronously. Every finished operation is reported as an
 * {@link OperationRecord}.
 */
import type { Clock } from '../clock/clock.ts';
import { isBlockSpec } from '../volume/spec.ts';
import {
  EmptyNodeName,
  EmptyUniquePodName,
  uniquePodName,
  type NodeName,
  type UniquePodName,
  type UniqueVolumeName,
  uniqueVolumeName,
} from '../volume/types.ts';
import { isMultiAttachAllowed } from '../volume/spec.ts';
import type { GeneratedOperation, OperationGenerator } from './operation-generator.ts';
import type { NestedPendingOperations } from './nested-pending-operations.ts';
import type {
  ActualStateOfWorldAttacherUpdater,
  ActualStateOfWorldMounterUpdater,
  ActualStateOfWorldUpdater,
  ActualStateOfWorldVerifierUpdater,
  AttachedVolume,
  MountedVolume,
  VolumeToAttach,
  VolumeToMount,
} from './types.ts';

/** One finished operation, for logs, metrics, events and the dashboard. */
export interface OperationRecord {
  operationName: string;
  volume: UniqueVolumeName | '';
  /** Pod key of the operation ("" for volume-wide operations). */
  pod: UniquePodName | '';
  /** Node key of the operation ("" when not keyed by node: all but multi-attach attach/detach). */
  node: NodeName | '';
  /** Fully qualified plugin name. */
  plugin: string;
  migrated: boolean;
  /** When the operation was generated (the metric's start). */
  generatedAt: number;
  startedAt: number;
  finishedAt: number;
  outcome: 'success' | 'failure';
  /** The detailed error text, null on success. */
  error: string | null;
}

/**
 * What the reconciler asks of an executor: start one operation (returning at once), or tell
 * whether one is running. {@link OperationExecutor} runs the operations; the plan-only mode's
 * `PlanningExecutor` (planning-executor.ts) only records them. Starting may throw synchronously
 * (a generation error, an operation already running, a backoff): the reconciler logs and
 * carries on, and the next pass tries again.
 */
export interface OperationStarter {
  attachVolume(vta: VolumeToAttach, asw: ActualStateOfWorldAttacherUpdater): void;
  detachVolume(av: AttachedVolume, asw: ActualStateOfWorldAttacherUpdater): void;
  verifyControllerAttachedVolume(vtm: VolumeToMount, nodeName: NodeName, asw: ActualStateOfWorldUpdater): void;
  mountVolume(waitForAttachTimeoutMs: number, vtm: VolumeToMount, asw: ActualStateOfWorldMounterUpdater, isRemount: boolean): void;
  unmountVolume(mv: MountedVolume, asw: ActualStateOfWorldMounterUpdater, podsDir: string): void;
  unmountDevice(av: AttachedVolume, asw: ActualStateOfWorldMounterUpdater): void;
  expandInUseVolume(vtm: VolumeToMount, asw: ActualStateOfWorldMounterUpdater, currentSize: number): void;
  isOperationPending(volumeName: UniqueVolumeName, podName: UniquePodName, nodeName: NodeName): boolean;
  /**
   * Told when the reconciler starts nothing for an attachable volume that is not attached yet
   * because it is not reported in use (`node.status.volumesInUse`): the kubelet waits for its
   * next node status update before VerifyControllerAttachedVolume. Optional: the executor that
   * runs operations has nothing to do then; a planner records the verification still to come.
   */
  volumeNotReportedInUse?(vtm: VolumeToMount, nodeName: NodeName, asw: ActualStateOfWorldUpdater): void;
}

export interface OperationExecutorOptions {
  generator: OperationGenerator;
  pendingOperations: NestedPendingOperations;
  clock: Clock;
  /** Receives one record per finished operation. */
  onOperationRecord?: (record: OperationRecord) => void;
  /**
   * Refuse to start anything ({@link ReadOnlyExecutorError}): the volume manager's plan-only
   * mode, where this executor exists only to answer questions about an empty table. A second
   * line of defence behind the reconciler's planner and the API's refusals.
   */
  readOnly?: boolean;
}

/** An operation was asked of a read-only executor (plan-only mode): nothing was started. */
export class ReadOnlyExecutorError extends Error {
  override readonly name = 'ReadOnlyExecutorError';
}

export function isReadOnlyExecutorError(err: unknown): err is ReadOnlyExecutorError {
  return err instanceof ReadOnlyExecutorError;
}

export class OperationExecutor implements OperationStarter {
  readonly generator: OperationGenerator;
  readonly pendingOperations: NestedPendingOperations;
  private readonly clock: Clock;
  private readonly onOperationRecord: ((record: OperationRecord) => void) | undefined;
  private readonly readOnly: boolean;

  constructor(opts: OperationExecutorOptions) {
    this.readOnly = opts.readOnly === true;
    this.generator = opts.generator;
    this.pendingOperations = opts.pendingOperations;
    this.clock = opts.clock;
    this.onOperationRecord = opts.onOperationRecord;
  }

  /** Kubelet-managed attach. Key (vol, "", "") or (vol, "", node) when multi-attach is allowed. */
  attachVolume(vta: VolumeToAttach, asw: ActualStateOfWorldAttacherUpdater): void {
    const ops = this.generator.generateAttachVolumeFunc(vta, asw);
    const node = isMultiAttachAllowed(vta.volumeSpec) ? vta.nodeName : EmptyNodeName;
    this.run(vta.volumeName, EmptyUniquePodName, node, ops);
  }

  /** Kubelet-managed detach; same key rule as attach. */
  detachVolume(av: AttachedVolume, asw: ActualStateOfWorldAttacherUpdater): void {
    const ops = this.generator.generateDetachVolumeFunc(av, asw);
    const node = isMultiAttachAllowed(av.volumeSpec) ? av.nodeName : EmptyNodeName;
    this.run(av.volumeName, EmptyUniquePodName, node, ops);
  }

  /** Waits for the attach/detach controller (or marks non-attachable volumes attached). Key (vol, "", ""). */
  verifyControllerAttachedVolume(vtm: VolumeToMount, nodeName: NodeName, asw: ActualStateOfWorldUpdater): void {
    const ops = this.generator.generateVerifyControllerAttachedVolumeFunc(vtm, nodeName, asw);
    this.run(vtm.volumeName, EmptyUniquePodName, EmptyNodeName, ops);
  }

  /**
   * Mounts (filesystem) or maps (block). Attachable or device-mountable volumes are serialised
   * across pods (key (vol, "", "")); other volumes mount per pod in parallel.
   */
  mountVolume(waitForAttachTimeoutMs: number, vtm: VolumeToMount, asw: ActualStateOfWorldMounterUpdater, isRemount: boolean): void {
    const ops = isBlockSpec(vtm.volumeSpec)
      ? this.generator.generateMapVolumeFunc(waitForAttachTimeoutMs, vtm, asw)
      : this.generator.generateMountVolumeFunc(waitForAttachTimeoutMs, vtm, asw, isRemount);
    const pod = !vtm.pluginIsAttachable && !vtm.pluginIsDeviceMountable ? uniquePodName(vtm.pod.metadata.uid ?? vtm.podName) : EmptyUniquePodName;
    this.run(vtm.volumeName, pod, EmptyNodeName, ops);
  }

  /** Tears down one pod's mount (or unmaps). Key (vol, podUID, ""): pods of one volume unmount in parallel. */
  unmountVolume(mv: MountedVolume, asw: ActualStateOfWorldMounterUpdater, podsDir: string): void {
    const ops = isBlockSpec(mv.volumeSpec)
      ? this.generator.generateUnmapVolumeFunc(mv, asw)
      : this.generator.generateUnmountVolumeFunc(mv, asw, podsDir);
    this.run(mv.volumeName, uniquePodName(mv.podUID), EmptyNodeName, ops);
  }

  /** Unmounts (or unmaps) the device's global mount. Key (vol, "", ""). */
  unmountDevice(av: AttachedVolume, asw: ActualStateOfWorldMounterUpdater): void {
    const ops = isBlockSpec(av.volumeSpec)
      ? this.generator.generateUnmapDeviceFunc(av, asw)
      : this.generator.generateUnmountDeviceFunc(av, asw);
    this.run(av.volumeName, EmptyUniquePodName, EmptyNodeName, ops);
  }

  /** Grows the file system of a mounted volume. Key (vol, "", ""). */
  expandInUseVolume(vtm: VolumeToMount, asw: ActualStateOfWorldMounterUpdater, currentSize: number): void {
    const ops = this.generator.generateExpandInUseVolumeFunc(vtm, asw, currentSize);
    this.run(vtm.volumeName, EmptyUniquePodName, EmptyNodeName, ops);
  }

  /**
   * Batched attach verification: one VolumesAreAttached call per plugin for all of its attached
   * volumes. Runs under a per-node key so two verifications never overlap.
   */
  verifyVolumesAreAttached(
    attachedVolumes: readonly AttachedVolume[],
    nodeName: NodeName,
    asw: ActualStateOfWorldVerifierUpdater,
    onResult?: (result: { checked: UniqueVolumeName[]; foundDetached: UniqueVolumeName[]; errors: string[] }) => void,
  ): void {
    const ops = this.generator.generateVolumesAreAttachedFunc(attachedVolumes, nodeName, asw, onResult);
    this.run(uniqueVolumeName(`verify_volumes_are_attached/${nodeName}`), EmptyUniquePodName, EmptyNodeName, ops);
  }

  isOperationPending(volumeName: UniqueVolumeName, podName: UniquePodName, nodeName: NodeName): boolean {
    return this.pendingOperations.isOperationPending(volumeName, podName, nodeName);
  }

  isOperationSafeToRetry(volumeName: UniqueVolumeName, podName: UniquePodName, nodeName: NodeName, operationName: string): boolean {
    return this.pendingOperations.isOperationSafeToRetry(volumeName, podName, nodeName, operationName);
  }

  private run(volumeName: UniqueVolumeName, podName: UniquePodName, nodeName: NodeName, ops: GeneratedOperation): void {
    if (this.readOnly) throw new ReadOnlyExecutorError(`${ops.operationName} for ${volumeName} refused: the volume manager is in plan-only mode and never runs operations`);
    const generatedAt = this.clock.now();
    let startedAt = generatedAt;
    const record = (detailedErr: Error | undefined): void => {
      this.onOperationRecord?.({
        operationName: ops.operationName,
        volume: volumeName,
        pod: podName,
        node: nodeName,
        plugin: ops.pluginName,
        migrated: ops.migrated,
        generatedAt,
        startedAt,
        finishedAt: this.clock.now(),
        outcome: detailedErr === undefined ? 'success' : 'failure',
        error: detailedErr?.message ?? null,
      });
    };
    this.pendingOperations.run(volumeName, podName, nodeName, {
      operationName: ops.operationName,
      operationFunc: () => {
        startedAt = this.clock.now();
        return ops.operationFunc();
      },
      ...(ops.eventRecorderFunc !== undefined ? { eventRecorderFunc: ops.eventRecorderFunc } : {}),
      completeFunc: (detailedErr) => {
        ops.completeFunc?.(detailedErr);
        record(detailedErr);
      },
    });
  }
}
