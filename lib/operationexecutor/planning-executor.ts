/**
 * The executor of the plan-only mode (docs/engine.md, "Plan-only mode"): it receives the
 * reconciler's operations exactly as {@link OperationExecutor} does, but runs nothing. It records
 * each one as a {@link PlannedOperation} and, to find what would follow it, applies the
 * operation's *successful* outcome to a projection of the actual world (never to the actual
 * world itself), so that the next projected pass of the reconciler asks for the next step.
 *
 * Rounds and steps. The reconciler drives one planning round per pass in which something
 * changed: {@link PlanningExecutor.beginRound} with a fresh projection, then projected passes
 * ("steps"), each closed by {@link PlanningExecutor.endStep}, which applies the outcomes queued
 * during the step (operations of one pass complete after it, as in the kubelet), until a step
 * plans nothing new; then {@link PlanningExecutor.endRound}. Step 1 holds what the kubelet's
 * reconciler would start now; step n what it would start once steps 1…n-1 succeeded.
 *
 * Identity and time. An operation is identified by (operation name, volume, pod). It keeps its
 * `firstPlannedAt` for as long as every round that re-examines its volume plans it again; a round
 * that does not drops it, and a later plan starts a new `firstPlannedAt`. Nothing here ever
 * backs off, runs, or emits events: there is no operation to fail.
 */
import type { Clock } from '../clock/clock.ts';
import { discardLogger, type Logger } from '../volume/logger.ts';
import { isBlockSpec } from '../volume/spec.ts';
import { errorMessage } from '../volume/errors.ts';
import type { NodeName, PodUID, UniquePodName, UniqueVolumeName } from '../volume/types.ts';
import type { OperationStarter } from './operation-executor.ts';
import { OperationNames } from './operation-generator.ts';
import type {
  ActualStateOfWorldAttacherUpdater,
  ActualStateOfWorldMounterUpdater,
  ActualStateOfWorldUpdater,
  AttachedVolume,
  DeviceMountState,
  MountedVolume,
  VolumeMountState,
  VolumeToAttach,
  VolumeToMount,
} from './types.ts';

/** Why an operation is planned: the decision of the reconciler that asked for it. */
export type PlannedOperationReason =
  /** The volume is not in the actual world and the kubelet attaches it (controller attach/detach off). */
  | 'attach-required'
  /** The volume is not in the actual world: the kubelet verifies the controller attached it (or records a non-attachable one). */
  | 'attach-verification-required'
  /** As above, but the kubelet first has to report the volume in `node.status.volumesInUse`. */
  | 'awaiting-reported-in-use'
  /** The pod has the volume not mounted (no entry in the actual world, or an uncertain one). */
  | 'mount-required'
  /** The pod has it mounted, but the plugin asks for a remount (configMap, secret… after a pod update). */
  | 'remount-required'
  /** Mounted, and the PV grew beyond the file system's size. */
  | 'fs-resize-required'
  /** Mounted (or possibly mounted) for a pod that no longer wants it, or with another SELinux label. */
  | 'pod-not-desired'
  /** No pod uses the volume any more and its device may still be (globally) mounted. */
  | 'device-not-needed'
  /** No pod uses the volume, its device is unmounted, and the kubelet detaches it itself. */
  | 'volume-not-needed';

/** The state of the actual world's entry that led to the operation. */
export type PlannedOperationState = VolumeMountState | DeviceMountState | 'VolumeNotAttached';

/** One operation the kubelet still has to perform. */
export interface PlannedOperation {
  /** The kubelet's operation name: `volume_mount`, `map_volume`, `volume_unmount`, `unmap_volume`,
   * `unmount_device`, `unmap_device`, `verify_controller_attached_volume`, `volume_attach`,
   * `volume_detach`, `volume_fs_resize`. */
  operationName: string;
  volumeName: UniqueVolumeName;
  /** The pod of a per-pod operation (mount, unmount); null for volume-wide ones. */
  podName: UniquePodName | null;
  podUid: PodUID | null;
  /** The pod's name for the volume (`pod.spec.volumes[i].name`); null for volume-wide operations. */
  outerVolumeSpecName: string | null;
  reason: PlannedOperationReason;
  state: PlannedOperationState;
  /** The entry the operation is about was found on disk by reconstruction (and never confirmed since). */
  reconstructed: boolean;
  /** 1: the kubelet's reconciler would start it now; n: once the steps before it succeeded. */
  step: number;
  /** First time this operation was planned, in every round since without a gap (injected clock). */
  firstPlannedAt: number;
  /** The last round that planned it. */
  lastPlannedAt: number;
}

/**
 * What the planner reads and changes in its projection: the actual world's own interface
 * (an `ActualStateOfWorld` copy satisfies it).
 */
export interface PlanningProjection extends ActualStateOfWorldUpdater {
  getAttachedVolume(volumeName: UniqueVolumeName): AttachedVolume | null;
}

/** An executor that plans: the reconciler drives its rounds (see the module comment). */
export interface OperationPlanner extends OperationStarter {
  /**
   * Starts a round over `projection`, re-examining the volumes in `scope` (null: all of them).
   * Operations of volumes outside the scope keep their plan untouched.
   */
  beginRound(projection: PlanningProjection, scope: ReadonlySet<UniqueVolumeName> | null): void;
  /**
   * Ends a step: applies its queued outcomes to the projection, and returns the volumes the step
   * planned something new for (the only ones whose next step can differ); empty ends the round.
   */
  endStep(): Set<UniqueVolumeName>;
  /** Ends the round: operations of the scope not planned in it are dropped; listeners hear of any change. */
  endRound(): void;
  /** The current plan (copies), in a stable order. */
  list(): PlannedOperation[];
}

/** An operation was handed to the planner outside a planning round. */
export class PlanningRoundError extends Error {
  override readonly name = 'PlanningRoundError';
}

export function isPlanningRoundError(err: unknown): err is PlanningRoundError {
  return err instanceof PlanningRoundError;
}

export interface PlanningExecutorOptions {
  clock: Clock;
  /** Called after a round that changed the plan (an operation added, dropped or updated). */
  onChange?: () => void;
  logger?: Logger;
}

type Draft = Omit<PlannedOperation, 'step' | 'firstPlannedAt' | 'lastPlannedAt'>;

interface Round {
  projection: PlanningProjection;
  scope: ReadonlySet<UniqueVolumeName> | null;
  step: number;
  /** Keys met in this round: a plan, or null for a confirmation (see {@link PlanningExecutor.mountVolume}). */
  seen: Map<string, (Draft & { step: number }) | null>;
  /** Volumes with something new in the current step. */
  newInStep: Set<UniqueVolumeName>;
  /** Outcomes to apply to the projection when the step ends. */
  outcomes: { key: string; apply: () => void }[];
}

export class PlanningExecutor implements OperationPlanner {
  private readonly clock: Clock;
  private readonly onChange: (() => void) | undefined;
  private readonly log: Logger;
  private readonly plans = new Map<string, PlannedOperation>();
  private round: Round | null = null;

  constructor(opts: PlanningExecutorOptions) {
    this.clock = opts.clock;
    this.onChange = opts.onChange;
    this.log = opts.logger ?? discardLogger;
  }

  // ROUNDS

  beginRound(projection: PlanningProjection, scope: ReadonlySet<UniqueVolumeName> | null): void {
    this.round = { projection, scope, step: 1, seen: new Map(), newInStep: new Set(), outcomes: [] };
  }

  endStep(): Set<UniqueVolumeName> {
    const round = this.requireRound('endStep');
    for (const { key, apply } of round.outcomes) {
      try {
        apply();
      } catch (err) {
        // The projection refused the outcome (e.g. the volume is gone from it): the chain ends here.
        this.log.debug(`planning: projected outcome of ${describeKey(key)} not applied: ${errorMessage(err)}`);
      }
    }
    round.outcomes = [];
    const planned = round.newInStep;
    round.newInStep = new Set();
    round.step++;
    return planned;
  }

  endRound(): void {
    const round = this.requireRound('endRound');
    this.round = null;
    const now = this.clock.now();
    let changed = false;
    for (const [key, plan] of this.plans) {
      if (round.scope !== null && !round.scope.has(plan.volumeName)) continue;
      const planned = round.seen.get(key);
      if (planned === undefined || planned === null) {
        this.plans.delete(key);
        changed = true;
      }
    }
    for (const [key, draft] of round.seen) {
      if (draft === null) continue;
      const previous = this.plans.get(key);
      const next: PlannedOperation = { ...draft, firstPlannedAt: previous?.firstPlannedAt ?? now, lastPlannedAt: now };
      if (previous === undefined || !samePlan(previous, next)) changed = true;
      this.plans.set(key, next);
    }
    if (changed) this.onChange?.();
  }

  list(): PlannedOperation[] {
    return [...this.plans.values()].map((p) => ({ ...p })).sort(comparePlans);
  }

  // OPERATIONS (the reconciler's calls)

  /** Nothing ever runs. */
  isOperationPending(_volumeName: UniqueVolumeName, _podName: UniquePodName, _nodeName: NodeName): boolean {
    return false;
  }

  attachVolume(vta: VolumeToAttach, asw: ActualStateOfWorldAttacherUpdater): void {
    this.plan(asw, volumeWide(OperationNames.attach, vta.volumeName, 'attach-required', 'VolumeNotAttached', false), (p) => {
      p.markVolumeAsAttached(vta.volumeName, vta.volumeSpec, vta.nodeName, '');
    });
  }

  verifyControllerAttachedVolume(vtm: VolumeToMount, nodeName: NodeName, asw: ActualStateOfWorldUpdater): void {
    this.planVerification(vtm, nodeName, asw, 'attach-verification-required');
  }

  /**
   * The kubelet starts nothing yet (it reports the volume in use at its next node status update,
   * then verifies): planned as the verification still to come, with its own reason.
   */
  volumeNotReportedInUse(vtm: VolumeToMount, nodeName: NodeName, asw: ActualStateOfWorldUpdater): void {
    this.planVerification(vtm, nodeName, asw, 'awaiting-reported-in-use');
  }

  /**
   * A mount (or map). One exception: a pod entry found on disk by reconstruction and still
   * uncertain is not planned. The kubelet re-runs MountVolume on such entries only after its own
   * restart, to confirm them; beside a running kubelet the volume directory exists because the
   * kubelet set it up, and the uncertainty is the observer's, not pending work. The entry is
   * taken as mounted in the projection, so what follows it is still planned.
   */
  mountVolume(_waitForAttachTimeoutMs: number, vtm: VolumeToMount, asw: ActualStateOfWorldMounterUpdater, isRemount: boolean): void {
    const round = this.requireRound('mountVolume');
    const p = round.projection;
    const block = isBlockSpec(vtm.volumeSpec);
    const operationName = block ? OperationNames.map : OperationNames.mount;
    const reconstructed = p.isVolumeReconstructed(vtm.volumeName, vtm.podName);
    const outcome = (proj: PlanningProjection): void => {
      // As the generator on success: the device first (always for a map), then the pod.
      if (block || (vtm.pluginIsDeviceMountable && proj.getDeviceMountState(vtm.volumeName) !== 'DeviceGloballyMounted')) {
        const deviceMountPath = proj.getAttachedVolume(vtm.volumeName)?.deviceMountPath ?? '';
        proj.markDeviceAsMounted(vtm.volumeName, vtm.devicePath, deviceMountPath, block ? '' : vtm.seLinuxLabel);
      }
      proj.markVolumeAsMounted({
        podName: vtm.podName,
        podUID: podUidOf(vtm),
        volumeName: vtm.volumeName,
        mounter: null,
        blockVolumeMapper: null,
        outerVolumeSpecName: vtm.outerVolumeSpecName,
        volumeGidValue: vtm.volumeGidValue,
        volumeSpec: vtm.volumeSpec,
        volumeMountState: 'VolumeMounted',
        seLinuxMountContext: vtm.seLinuxLabel,
      });
    };
    if (!isRemount && reconstructed) {
      this.confirm(asw, vtm.volumeName, planKey(operationName, vtm.volumeName, vtm.podName), outcome);
      return;
    }
    const draft: Draft = {
      operationName,
      volumeName: vtm.volumeName,
      podName: vtm.podName,
      podUid: podUidOf(vtm),
      outerVolumeSpecName: vtm.outerVolumeSpecName,
      reason: isRemount ? 'remount-required' : 'mount-required',
      state: p.getVolumeMountState(vtm.volumeName, vtm.podName),
      reconstructed,
    };
    this.plan(asw, draft, outcome);
  }

  unmountVolume(mv: MountedVolume, asw: ActualStateOfWorldMounterUpdater, _podsDir: string): void {
    const p = this.requireRound('unmountVolume').projection;
    const draft: Draft = {
      operationName: isBlockSpec(mv.volumeSpec) ? OperationNames.unmap : OperationNames.unmount,
      volumeName: mv.volumeName,
      podName: mv.podName,
      podUid: mv.podUID,
      outerVolumeSpecName: mv.outerVolumeSpecName,
      reason: 'pod-not-desired',
      state: mv.volumeMountState,
      reconstructed: p.isVolumeReconstructed(mv.volumeName, mv.podName),
    };
    this.plan(asw, draft, (proj) => {
      proj.markVolumeAsUnmounted(mv.podName, mv.volumeName);
    });
  }

  unmountDevice(av: AttachedVolume, asw: ActualStateOfWorldMounterUpdater): void {
    const p = this.requireRound('unmountDevice').projection;
    const operationName = isBlockSpec(av.volumeSpec) ? OperationNames.unmapDevice : OperationNames.unmountDevice;
    const draft = volumeWide(operationName, av.volumeName, 'device-not-needed', av.deviceMountState, p.isVolumeDeviceReconstructed(av.volumeName));
    this.plan(asw, draft, (proj) => {
      proj.markDeviceAsUnmounted(av.volumeName);
    });
  }

  detachVolume(av: AttachedVolume, asw: ActualStateOfWorldAttacherUpdater): void {
    const p = this.requireRound('detachVolume').projection;
    const draft = volumeWide(OperationNames.detach, av.volumeName, 'volume-not-needed', av.deviceMountState, p.isVolumeDeviceReconstructed(av.volumeName));
    this.plan(asw, draft, (proj) => {
      proj.markVolumeAsDetached(av.volumeName, av.nodeName);
    });
  }

  expandInUseVolume(vtm: VolumeToMount, asw: ActualStateOfWorldMounterUpdater, _currentSize: number): void {
    this.plan(asw, volumeWide(OperationNames.expandInUse, vtm.volumeName, 'fs-resize-required', 'VolumeMounted', false), (proj) => {
      proj.markVolumeAsResized(vtm.volumeName, vtm.desiredPersistentVolumeSize);
    });
  }

  // INTERNALS

  private planVerification(vtm: VolumeToMount, nodeName: NodeName, asw: ActualStateOfWorldUpdater, reason: PlannedOperationReason): void {
    this.plan(asw, volumeWide(OperationNames.verifyControllerAttached, vtm.volumeName, reason, 'VolumeNotAttached', false), (p) => {
      p.markVolumeAsAttached(vtm.volumeName, vtm.volumeSpec, nodeName, vtm.devicePath);
    });
  }

  /** Records `draft` (once per round: the earliest step wins) and queues its outcome. */
  private plan(asw: object, draft: Draft, outcome: (projection: PlanningProjection) => void): void {
    const round = this.requireRound(draft.operationName);
    const key = planKey(draft.operationName, draft.volumeName, draft.podName);
    if (round.seen.has(key)) return;
    round.seen.set(key, { ...draft, step: round.step });
    round.newInStep.add(draft.volumeName);
    this.queue(round, asw, key, outcome);
  }

  /** An operation taken as already done: not planned, but its outcome enters the projection. */
  private confirm(asw: object, volumeName: UniqueVolumeName, key: string, outcome: (projection: PlanningProjection) => void): void {
    const round = this.requireRound('confirm');
    if (round.seen.has(key)) return;
    round.seen.set(key, null);
    round.newInStep.add(volumeName);
    this.queue(round, asw, key, outcome);
  }

  private queue(round: Round, asw: object, key: string, outcome: (projection: PlanningProjection) => void): void {
    // Outcomes only ever change the projection: an operation handed another world (a caller
    // that is not the plan-only reconciler) is recorded, and that world is left alone.
    if (asw !== round.projection) {
      this.log.error(`planning: ${describeKey(key)} was handed a world other than the round's projection; its outcome is not projected`);
      return;
    }
    round.outcomes.push({ key, apply: () => { outcome(round.projection); } });
  }

  private requireRound(what: string): Round {
    if (this.round === null) throw new PlanningRoundError(`planning executor: ${what} outside a planning round`);
    return this.round;
  }
}

function planKey(operationName: string, volumeName: UniqueVolumeName, podName: UniquePodName | null): string {
  return `${operationName}\u0000${volumeName}\u0000${podName ?? ''}`;
}

/** `volume_mount fake-plugin/x pod pod1uid`, for logs. */
function describeKey(key: string): string {
  const [operationName = '', volumeName = '', podName = ''] = key.split('\u0000');
  return podName === '' ? `${operationName} ${volumeName}` : `${operationName} ${volumeName} pod ${podName}`;
}

function volumeWide(
  operationName: string,
  volumeName: UniqueVolumeName,
  reason: PlannedOperationReason,
  state: PlannedOperationState,
  reconstructed: boolean,
): Draft {
  return { operationName, volumeName, podName: null, podUid: null, outerVolumeSpecName: null, reason, state, reconstructed };
}

function podUidOf(vtm: VolumeToMount): PodUID {
  return (vtm.pod.metadata.uid ?? vtm.podName) as PodUID;
}

function samePlan(a: PlannedOperation, b: PlannedOperation): boolean {
  return (
    a.operationName === b.operationName &&
    a.volumeName === b.volumeName &&
    a.podName === b.podName &&
    a.podUid === b.podUid &&
    a.outerVolumeSpecName === b.outerVolumeSpecName &&
    a.reason === b.reason &&
    a.state === b.state &&
    a.reconstructed === b.reconstructed &&
    a.step === b.step &&
    a.firstPlannedAt === b.firstPlannedAt &&
    a.lastPlannedAt === b.lastPlannedAt
  );
}

/** Stable order: by volume, then step (a volume's chain reads top-down), pod, operation name. */
function comparePlans(a: PlannedOperation, b: PlannedOperation): number {
  return cmp(a.volumeName, b.volumeName) || a.step - b.step || cmp(a.podName ?? '', b.podName ?? '') || cmp(a.operationName, b.operationName);
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
