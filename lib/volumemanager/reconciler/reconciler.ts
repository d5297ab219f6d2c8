/**
 * The reconciler (kubelet `reconciler/reconciler.go`, `reconciler_common.go`): compares the
 * desired and actual states of world and starts operations to bring them together. A pass only
 * *starts* operations; it never waits for one. Passes run every `loopSleepDuration` after the end
 * of the previous one, and also immediately (coalesced) whenever either world changes, so a new
 * pod's first operation starts within milliseconds rather than a period.
 */
import type { Clock, TimerHandle } from '../../clock/clock.ts';
import type { OperationRecord, OperationStarter } from '../../operationexecutor/operation-executor.ts';
import type { OperationPlanner } from '../../operationexecutor/planning-executor.ts';
import { isAlreadyExists } from '../../operationexecutor/nested-pending-operations.ts';
import { isExponentialBackoff } from '../../operationexecutor/exponential-backoff.ts';
import { deviceMayBeMounted, type MountedVolume, type VolumeToMount } from '../../operationexecutor/types.ts';
import { errorMessage, isMountFailedPreconditionError } from '../../volume/errors.ts';
import type { VolumeKubeClient } from '../../volume/kube-client.ts';
import { discardLogger, type Logger } from '../../volume/logger.ts';
import type { VolumePluginMgr } from '../../volume/plugins.ts';
import { specFromVolume } from '../../volume/spec.ts';
import {
  EmptyNodeName,
  EmptyUniquePodName,
  podUID,
  uniqueVolumeName,
  type NodeName,
  type PluginName,
  type UniquePodName,
  type UniqueVolumeName,
  type VolumeMode,
} from '../../volume/types.ts';
import type { HostFs } from '../../volume/util/host-fs.ts';
import type { ActualStateOfWorld } from '../cache/actual-state-of-world.ts';
import {
  isFsResizeRequiredError,
  isRemountRequiredError,
  isSELinuxMountMismatchError,
  isVolumeNotAttachedError,
} from '../cache/actual-state-of-world.ts';
import type { DesiredStateOfWorld } from '../cache/desired-state-of-world.ts';
import {
  getVolumesFromPodDir,
  reconstructVolume,
  type PodVolume,
  type ReconstructedVolume,
} from './reconstruct.ts';

/** Entries of each world re-examined per pass as a safety net (a full sweep every ⌈entries/256⌉ passes). */
const sweepSliceSize = 256;

/**
 * Bound on the projected passes of one planning round. The longest chains are attach → mount and
 * unmount → unmount device → detach; a round that still plans something new after this many
 * steps is cut short (and logged) rather than looping.
 */
const maxPlanningSteps = 8;

/**
 * The actual world a pass decides on and the executor it hands operations to: the live ones, or
 * (plan-only mode) a projection and the planner.
 */
interface PassWorld {
  asw: ActualStateOfWorld;
  executor: OperationStarter;
}

/** An operation of plan-only mode was asked of an engine that runs operations, or the reverse. */
export class PlanOnlyModeError extends Error {
  override readonly name = 'PlanOnlyModeError';
}

export function isPlanOnlyModeError(err: unknown): err is PlanOnlyModeError {
  return err instanceof PlanOnlyModeError;
}

/** What one rebuild of the actual world from disk (plan-only mode) found and changed. */
export interface ActualStateRefresh {
  startedAt: number;
  finishedAt: number;
  /** Set when `pods/` could not be read: the actual world was then left as it was. */
  error: string | null;
  /** Volume directories found under `pods/`. */
  scanned: number;
  /** Of those, the ones reconstructed into the actual world. */
  reconstructed: number;
  /** Of those, the ones that could not be reconstructed (kept in the report, never cleaned up). */
  failed: number;
  /** Volumes that entered, left, or changed in the actual world with this refresh. */
  added: UniqueVolumeName[];
  removed: UniqueVolumeName[];
  changed: UniqueVolumeName[];
  /** Volumes still waiting for node status: nothing is unmounted (or planned to be) until it is read. */
  waitingForNodeStatus: UniqueVolumeName[];
}

/** Where one reconstruction scan puts what it finds. */
interface ReconstructionTarget {
  asw: ActualStateOfWorld;
  report: ReconstructionReport;
  /** Receives each volume that failed reconstruction, in scan order. */
  onFailed(volume: PodVolume): void;
  /** Report entries left open (reconstructed or failed), counted during the scan. */
  open: number;
  /** Volume directories found. */
  scanned: number;
}

/** `isExpectedError`: states that are normal while retrying, and are not logged as errors. */
export function isExpectedError(err: unknown): boolean {
  return isAlreadyExists(err) || isExponentialBackoff(err) || isMountFailedPreconditionError(err);
}

/** What happened to one volume directory found at start. */
export type ReconstructionOutcome = 'reconstructed' | 'failed' | 'skipped' | 'confirmed-mounted' | 'cleaned-up';

export interface ReconstructionEntry {
  podName: UniquePodName;
  volumeSpecName: string;
  pluginName: PluginName;
  volumeMode: VolumeMode;
  volumePath: string;
  /** The unique name it was reconstructed as; null when reconstruction failed. */
  volumeName: UniqueVolumeName | null;
  outcome: ReconstructionOutcome;
  /** Why reconstruction failed (kept after a later cleanup). */
  error: string | null;
  scannedAt: number;
  /** When the entry reached its final outcome (confirmed mounted or cleaned up). */
  resolvedAt: number | null;
}

export interface ReconstructionReport {
  state: 'pending' | 'running' | 'done';
  startedAt: number | null;
  finishedAt: number | null;
  /** Set when `pods/` could not be read and reconstruction was skipped. */
  error: string | null;
  entries: ReconstructionEntry[];
}

export interface ReconcilerOptions {
  nodeName: NodeName;
  dsw: DesiredStateOfWorld;
  asw: ActualStateOfWorld;
  operationExecutor: OperationStarter;
  /**
   * Plan-only mode (docs/engine.md): when set, every decision goes to this planner over a
   * projection of the actual world, `operationExecutor` is never called, the actual world is
   * rebuilt from disk at start and by {@link Reconciler.refreshActualState}, and volumes that
   * failed reconstruction are never cleaned up.
   */
  planner?: OperationPlanner;
  pluginMgr: VolumePluginMgr;
  clock: Clock;
  podsDir: string;
  hostFs: HostFs;
  /** True once the populator has processed every pod of a synced source. */
  populatorHasAddedPods: () => boolean;
  controllerAttachDetachEnabled: boolean;
  loopSleepDurationMs: number;
  waitForAttachTimeoutMs: number;
  /** Node status access; without `getNode` the agent is standalone. */
  kubeClient?: VolumeKubeClient;
  logger?: Logger;
  /** Counts reconstruct_volume_operations_total / _errors_total and force-cleanup metrics. */
  metrics?: ReconcilerMetrics;
  /**
   * Called after every change of what {@link Reconciler.getReconstructionReport} or
   * {@link Reconciler.statesHasBeenSynced} answer (views subscribe here instead of polling).
   * Called synchronously, possibly from inside a change of the actual state: it must not call
   * back into the reconciler.
   */
  onChange?: () => void;
}

export interface ReconcilerMetrics {
  reconstructVolumeOperation(failed: boolean): void;
  forceCleanedFailedVolumeOperation(failedToStart: boolean): void;
}

export class Reconciler {
  private readonly o: ReconcilerOptions;
  private readonly log: Logger;
  private volumesNeedUpdateFromNodeStatus: UniqueVolumeName[] = [];
  private volumesFailedReconstruction: PodVolume[] = [];
  private timeOfLastSync = 0;
  private readonly dirtyVolumes = new Set<UniqueVolumeName>();
  private unsettledVolumes = new Set<UniqueVolumeName>();
  private fullScanNeeded = true;
  private lastReadyToUnmount: boolean | null = null;
  private sweepCursor = 0;
  private report: ReconstructionReport = { state: 'pending', startedAt: null, finishedAt: null, error: null, entries: [] };
  private openReportEntries = 0;
  /** The live worlds of a normal pass. */
  private readonly live: PassWorld;
  private readonly planner: OperationPlanner | null;
  private refreshRunning: Promise<ActualStateRefresh> | null = null;
  private refreshQueued: Promise<ActualStateRefresh> | null = null;

  private started = false;
  private stopped = false;
  private loopReady = false;
  private inPass: Promise<void> | null = null;
  private passRequested = false;
  private timer: TimerHandle | null = null;
  private timerDue = 0;
  private passes = 0;

  constructor(opts: ReconcilerOptions) {
    this.o = opts;
    this.log = opts.logger ?? discardLogger;
    this.live = { asw: opts.asw, executor: opts.operationExecutor };
    this.planner = opts.planner ?? null;
  }

  // LOOP

  /**
   * Reconstructs once, then runs passes until {@link stop}. In plan-only mode the first rebuild
   * of the actual world from disk takes the place of the reconstruction.
   */
  start(): void {
    if (this.started) return;
    this.started = true;
    const reconstructed = this.planner !== null ? this.refreshActualState().then(() => undefined) : this.reconstructVolumes();
    void reconstructed.then(() => {
      if (this.stopped) return;
      this.log.info('Reconciler: start to sync state');
      this.loopReady = true;
      this.schedule(0);
    });
  }

  /** Stops scheduling passes and waits for a running pass (not for operations). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) this.o.clock.clearTimeout(this.timer);
    this.timer = null;
    await this.inPass;
  }

  /** Requests a pass as soon as possible (coalesced with any pass already requested). */
  kick(): void {
    if (!this.loopReady || this.stopped) return;
    if (this.inPass !== null) {
      this.passRequested = true;
      return;
    }
    this.schedule(0);
  }

  /** Number of passes run so far (tests and benchmarks). */
  passCount(): number {
    return this.passes;
  }

  private schedule(delayMs: number): void {
    const due = this.o.clock.now() + delayMs;
    if (this.timer !== null) {
      if (this.timerDue <= due) return;
      this.o.clock.clearTimeout(this.timer);
    }
    this.timerDue = due;
    this.timer = this.o.clock.setTimeout(() => {
      this.timer = null;
      void this.runPass();
    }, delayMs);
  }

  private async runPass(): Promise<void> {
    if (this.stopped || this.inPass !== null) return;
    this.passRequested = false;
    this.inPass = this.reconcile().catch((err: unknown) => {
      this.log.error(`reconciler pass failed: ${errorMessage(err)}`);
    });
    await this.inPass;
    this.inPass = null;
    if (this.stopped) return;
    this.schedule(this.passRequested ? 0 : this.o.loopSleepDurationMs);
  }

  // ONE PASS

  /** One reconciler pass, in the v1.30 order (exposed for tests that drive passes by hand). */
  async reconcile(): Promise<void> {
    this.passes++;
    const readyToUnmount = this.readyToUnmount();
    if (this.planner !== null) {
      this.planPass(this.planner, readyToUnmount);
    } else {
      const scope = this.takeScope(readyToUnmount);
      const unsettled = new Set<UniqueVolumeName>();
      if (readyToUnmount) this.unmountVolumes(this.live, scope, unsettled);
      this.mountOrAttachVolumes(this.live, scope, unsettled);
      if (readyToUnmount) {
        this.unmountDetachDevices(this.live, scope, unsettled);
        this.cleanOrphanVolumes();
      }
      this.unsettledVolumes = unsettled;
    }
    if (this.volumesNeedUpdateFromNodeStatus.length > 0) await this.updateReconstructedFromNodeStatus();
    if (this.volumesNeedUpdateFromNodeStatus.length === 0) this.updateLastSyncTime();
  }

  /**
   * One planning round (plan-only mode). The plan of a volume depends only on its entries in both
   * worlds and on readyToUnmount, exactly like the decisions of a normal pass, so a round re-plans
   * the volumes that changed since the last one (everything when asked to, at start, after a
   * refresh and whenever readyToUnmount flips) and leaves the others' plans as they are; a pass in
   * which nothing changed plans nothing. The round runs the usual decision phases over a
   * projection of those volumes, repeatedly: the planner applies each planned operation's
   * success to the projection between steps, so the next step plans what would follow it.
   * There is no rotating sweep: the full round after every refresh is the safety net.
   */
  private planPass(planner: OperationPlanner, readyToUnmount: boolean): void {
    const full = this.fullScanNeeded || readyToUnmount !== this.lastReadyToUnmount;
    this.lastReadyToUnmount = readyToUnmount;
    this.fullScanNeeded = false;
    if (!full && this.dirtyVolumes.size === 0) return;
    const scope = full ? null : new Set(this.dirtyVolumes);
    this.dirtyVolumes.clear();
    const projection = this.o.asw.cloneVolumes(scope);
    const world: PassWorld = { asw: projection, executor: planner };
    planner.beginRound(projection, scope);
    // Step 1 examines the round's scope; each later step only the volumes the step before planned
    // something for, since no other volume's projection changed.
    let stepScope: ReadonlySet<UniqueVolumeName> | null = scope;
    for (let step = 1; ; step++) {
      // Nothing runs, so nothing is "unsettled": a volume is re-planned when it changes.
      const ignored = new Set<UniqueVolumeName>();
      if (readyToUnmount) this.unmountVolumes(world, stepScope, ignored);
      this.mountOrAttachVolumes(world, stepScope, ignored);
      if (readyToUnmount) this.unmountDetachDevices(world, stepScope, ignored);
      stepScope = planner.endStep();
      if (stepScope.size === 0) break;
      if (step === maxPlanningSteps) {
        this.log.error(`planning round still planning new operations after ${maxPlanningSteps} steps; the plan is cut short`);
        break;
      }
    }
    planner.endRound();
  }

  /**
   * Records that a volume changed in either world (null: anything may have changed). The next
   * pass examines it even if it was settled.
   */
  markDirty(volumeName: UniqueVolumeName | null): void {
    if (volumeName === null) this.fullScanNeeded = true;
    else this.dirtyVolumes.add(volumeName);
  }

  /**
   * Which volumes this pass examines. The decisions of §2.3–§2.5 depend only on a volume's own
   * entries in both worlds and on the operations table, so a volume that needed no action in
   * the last pass and has not changed since cannot need one now. A pass therefore looks at the
   * changed ("dirty") volumes, the ones that still needed action ("unsettled": waiting, in
   * backoff, running), and a rotating slice of all volumes as a safety net; it scans everything
   * when asked to, at start and whenever readyToUnmount flips. The result is the kubelet's full
   * scan, at a cost proportional to what changed rather than to the node's size.
   */
  private takeScope(readyToUnmount: boolean): Set<UniqueVolumeName> | null {
    const full = this.fullScanNeeded || readyToUnmount !== this.lastReadyToUnmount;
    this.lastReadyToUnmount = readyToUnmount;
    this.fullScanNeeded = false;
    if (full) {
      this.dirtyVolumes.clear();
      return null;
    }
    const scope = new Set<UniqueVolumeName>(this.dirtyVolumes);
    this.dirtyVolumes.clear();
    for (const v of this.unsettledVolumes) scope.add(v);
    const desired = this.o.dsw.volumeNamesInRange(this.sweepCursor, sweepSliceSize);
    const actual = this.o.asw.volumeNamesInRange(this.sweepCursor, sweepSliceSize);
    for (const v of desired.names) scope.add(v);
    for (const v of actual.names) scope.add(v);
    this.sweepCursor += sweepSliceSize;
    if (this.sweepCursor >= Math.max(desired.total, actual.total)) this.sweepCursor = 0;
    return scope;
  }

  /** True after the first pass that ended with no reconstructed volume waiting for node status. */
  statesHasBeenSynced(): boolean {
    return this.timeOfLastSync !== 0;
  }

  private updateLastSyncTime(): void {
    const first = this.timeOfLastSync === 0;
    if (first) this.log.info('Reconciler: states have been synced');
    this.timeOfLastSync = this.o.clock.now();
    if (first) this.o.onChange?.();
  }

  /** Unmount only when the desired state is complete and device paths came from node status. */
  private readyToUnmount(): boolean {
    return this.o.populatorHasAddedPods() && this.volumesNeedUpdateFromNodeStatus.length === 0;
  }

  private unmountVolumes(w: PassWorld, scope: ReadonlySet<UniqueVolumeName> | null, unsettled: Set<UniqueVolumeName>): void {
    // Desired entries are skipped before anything is allocated (a converged state costs lookups only).
    const notDesired = (podName: UniquePodName, volumeName: UniqueVolumeName, seLinuxMountContext: string | null): boolean =>
      !this.o.dsw.podExistsInVolume(podName, volumeName, seLinuxMountContext);
    const candidates =
      scope === null
        ? w.asw.collectMountedVolumes(notDesired)
        : [...scope].flatMap((v) => w.asw.collectMountedVolumesOf(v, notDesired));
    for (const mv of candidates) {
      unsettled.add(mv.volumeName);
      if (w.executor.isOperationPending(mv.volumeName, mv.podName, EmptyNodeName)) continue;
      this.log.debug(`Starting operationExecutor.UnmountVolume for volume ${mv.volumeName} pod ${mv.podName}`);
      this.tryStart(() => {
        w.executor.unmountVolume(mv, w.asw, this.o.podsDir);
      }, 'operationExecutor.UnmountVolume failed');
    }
  }

  private mountOrAttachVolumes(w: PassWorld, scope: ReadonlySet<UniqueVolumeName> | null, unsettled: Set<UniqueVolumeName>): void {
    // Pairs already mounted and current need no action and are never materialised.
    const needsAction = (volumeName: UniqueVolumeName, podName: UniquePodName, desiredSize: number, seLinuxLabel: string): boolean =>
      !w.asw.isMountedAndCurrent(podName, volumeName, desiredSize, seLinuxLabel);
    const candidates =
      scope === null
        ? this.o.dsw.collectVolumesToMount(needsAction)
        : [...scope].flatMap((v) => this.o.dsw.collectVolumesToMountOf(v, needsAction));
    for (const vtm of candidates) {
      unsettled.add(vtm.volumeName);
      const result = w.asw.podExistsInVolume(vtm.podName, vtm.volumeName, vtm.desiredPersistentVolumeSize, vtm.seLinuxLabel);
      vtm.devicePath = result.devicePath;
      const err = result.err;
      if (isSELinuxMountMismatchError(err)) {
        // Mounted with another label: the unmount steps tear it down first.
        this.o.dsw.addErrorToPod(vtm.podName, err.message);
      } else if (isVolumeNotAttachedError(err)) {
        this.waitForVolumeAttach(w, vtm);
      } else if (!result.mounted || isRemountRequiredError(err)) {
        const isRemount = isRemountRequiredError(err);
        this.tryStart(() => {
          w.executor.mountVolume(this.o.waitForAttachTimeoutMs, vtm, w.asw, isRemount);
        }, 'operationExecutor.MountVolume failed');
      } else if (isFsResizeRequiredError(err)) {
        this.tryStart(() => {
          w.executor.expandInUseVolume(vtm, w.asw, err.currentSize);
        }, 'operationExecutor.ExpandInUseVolume failed');
      }
    }
  }

  private waitForVolumeAttach(w: PassWorld, vtm: VolumeToMount): void {
    if (this.o.controllerAttachDetachEnabled || !vtm.pluginIsAttachable) {
      // No operation (and so no backoff) until the volume is reported in use.
      if (vtm.pluginIsAttachable && !vtm.reportedInUse) {
        w.executor.volumeNotReportedInUse?.(vtm, this.o.nodeName, w.asw);
        return;
      }
      this.tryStart(() => {
        w.executor.verifyControllerAttachedVolume(vtm, this.o.nodeName, w.asw);
      }, `operationExecutor.VerifyControllerAttachedVolume failed (controllerAttachDetachEnabled ${this.o.controllerAttachDetachEnabled})`);
      return;
    }
    this.tryStart(() => {
      w.executor.attachVolume(
        { volumeName: vtm.volumeName, volumeSpec: vtm.volumeSpec, nodeName: this.o.nodeName, scheduledPods: [vtm.pod] },
        w.asw,
      );
    }, 'operationExecutor.AttachVolume failed');
  }

  private unmountDetachDevices(w: PassWorld, scope: ReadonlySet<UniqueVolumeName> | null, unsettled: Set<UniqueVolumeName>): void {
    const candidates =
      scope === null
        ? w.asw.getUnmountedVolumes()
        : [...scope].flatMap((v) => {
            const av = w.asw.getUnmountedVolume(v);
            return av === null ? [] : [av];
          });
    for (const candidate of candidates) {
      if (this.o.dsw.volumeExists(candidate.volumeName, candidate.seLinuxMountContext)) continue;
      unsettled.add(candidate.volumeName);
      if (w.executor.isOperationPending(candidate.volumeName, EmptyUniquePodName, EmptyNodeName)) continue;
      // Re-read: a mount may have finished since the list was taken.
      const av = w.asw.getAttachedVolume(candidate.volumeName);
      if (av === null) continue;
      if (deviceMayBeMounted(av)) {
        this.tryStart(() => {
          w.executor.unmountDevice(av, w.asw);
        }, 'operationExecutor.UnmountDevice failed');
      } else if (this.o.controllerAttachDetachEnabled || !av.pluginIsAttachable) {
        try {
          w.asw.markVolumeAsDetached(av.volumeName, av.nodeName);
          this.log.info('Volume detached', { volume: av.volumeName, devicePath: av.devicePath });
        } catch (err) {
          this.log.error(errorMessage(err));
        }
      } else {
        this.tryStart(() => {
          w.executor.detachVolume(av, w.asw);
        }, 'operationExecutor.DetachVolume failed');
      }
    }
  }

  private tryStart(start: () => void, context: string): void {
    try {
      start();
    } catch (err) {
      if (!isExpectedError(err)) this.log.error(`${context}: ${errorMessage(err)}`);
    }
  }

  // RECONSTRUCTION

  /** Current reconstruction report (a copy). */
  getReconstructionReport(): ReconstructionReport {
    return { ...this.report, entries: this.report.entries.map((e) => ({ ...e })) };
  }

  /** Volumes still waiting for node status (reconstruction). */
  getVolumesNeedUpdateFromNodeStatus(): readonly UniqueVolumeName[] {
    return this.volumesNeedUpdateFromNodeStatus;
  }

  getVolumesFailedReconstruction(): readonly PodVolume[] {
    return this.volumesFailedReconstruction;
  }

  /**
   * Test hook: replaces the list of reconstructed volumes waiting for node status, as
   * {@link reconstructVolumes} leaves it, so that a test can drive one pass by hand from that
   * state (the kubelet's reconciler tests assign the field directly). Not for production use.
   */
  setVolumesNeedUpdateFromNodeStatusForTest(volumeNames: readonly UniqueVolumeName[]): void {
    this.volumesNeedUpdateFromNodeStatus = [...volumeNames];
  }

  /**
   * Rebuilds the actual state from disk (runs once before the first pass). Every reconstructed
   * pod volume is added Uncertain; volumes that fail are kept for a one-shot cleanup.
   */
  async reconstructVolumes(): Promise<void> {
    this.report.state = 'running';
    this.report.startedAt = this.o.clock.now();
    this.o.onChange?.();
    const target: ReconstructionTarget = {
      asw: this.o.asw,
      report: this.report,
      onFailed: (volume) => this.volumesFailedReconstruction.push(volume),
      open: 0,
      scanned: 0,
    };
    const names = await this.reconstructInto(target);
    // Read only once the report is done (refreshReconstructionReport), so counting at the end is the same.
    this.openReportEntries += target.open;
    if (names === null) {
      this.finishReport();
      return;
    }
    if (names.length > 0) this.volumesNeedUpdateFromNodeStatus = names;
    this.log.info('Volume reconstruction finished');
    this.finishReport();
  }

  /**
   * Plan-only mode: rebuilds the actual world from disk with the reconstruction above, and
   * replaces its whole content with the result in one synchronous step (so no pass ever sees a
   * half-built world): volumes that appeared are added, volumes that vanished leave, and every
   * reconstructed entry is Uncertain and marked as found by reconstruction, as after a kubelet
   * restart. Nothing on disk is changed, and volumes that fail reconstruction are only reported.
   *
   * Attachability and device paths come from node status as in the kubelet, with one addition:
   * a volume that was already in the actual world keeps what was resolved for it (the kubelet
   * resolves them once per volume too), so that a periodic refresh neither repeats the Node GET
   * for every volume nor holds back unmounts while it runs. New volumes are resolved before the
   * swap when the Node GET succeeds; otherwise they wait in the list, and readyToUnmount stays
   * false, as after a restart.
   *
   * Calls are serialised: each resolves after a rebuild that started after the call (a call made
   * while one is running and another is queued shares the queued one). Rejects with
   * {@link PlanOnlyModeError} outside plan-only mode.
   */
  refreshActualState(): Promise<ActualStateRefresh> {
    if (this.planner === null) {
      return Promise.reject(new PlanOnlyModeError('refreshActualState is only available in plan-only mode: it replaces the actual state of world with what is on disk'));
    }
    if (this.refreshQueued !== null) return this.refreshQueued;
    if (this.refreshRunning === null) return this.startRefresh();
    const queued = this.refreshRunning.then(() => {
      this.refreshQueued = null;
      return this.startRefresh();
    });
    this.refreshQueued = queued;
    return queued;
  }

  private startRefresh(): Promise<ActualStateRefresh> {
    const running = this.rebuildActualState().finally(() => {
      if (this.refreshRunning === running) this.refreshRunning = null;
    });
    this.refreshRunning = running;
    return running;
  }

  /** One rebuild (see {@link refreshActualState}); never rejects. */
  private async rebuildActualState(): Promise<ActualStateRefresh> {
    const startedAt = this.o.clock.now();
    if (this.report.state === 'pending') {
      this.report.state = 'running';
      this.report.startedAt = startedAt;
      this.o.onChange?.();
    }
    // Scan into a scratch world and a new report; the live ones stay as they are meanwhile.
    const report: ReconstructionReport = { state: 'running', startedAt, finishedAt: null, error: null, entries: [] };
    const failed: PodVolume[] = [];
    const scratch = this.o.asw.newEmpty();
    const target: ReconstructionTarget = { asw: scratch, report, onFailed: (v) => failed.push(v), open: 0, scanned: 0 };
    let names: UniqueVolumeName[] | null;
    try {
      names = await this.reconstructInto(target);
    } catch (err) {
      // Not expected (reconstructInto reports every failure it knows); the world stays as it was.
      this.log.error(`Rebuilding the actual state from disk failed: ${errorMessage(err)}`);
      report.error = errorMessage(err);
      names = null;
    }
    // Counted now: once the report is live, later outcomes (confirmed, cleaned up) may replace these.
    const reconstructedCount = report.entries.filter((e) => e.outcome === 'reconstructed').length;
    const result = (error: string | null, diff: { added: UniqueVolumeName[]; removed: UniqueVolumeName[]; changed: UniqueVolumeName[] }): ActualStateRefresh => ({
      startedAt,
      finishedAt: this.o.clock.now(),
      error,
      scanned: target.scanned,
      reconstructed: reconstructedCount,
      failed: failed.length,
      ...diff,
      waitingForNodeStatus: [...new Set(this.volumesNeedUpdateFromNodeStatus)].sort(),
    });
    if (names === null) {
      // An unreadable pods/ says nothing about what is mounted: keep the previous world and its
      // report entries, and record the error.
      this.report = { ...this.report, state: 'done', finishedAt: this.o.clock.now(), error: report.error, entries: this.report.entries };
      this.o.onChange?.();
      return result(report.error, { added: [], removed: [], changed: [] });
    }

    const pending: UniqueVolumeName[] = [];
    for (const name of names) {
      const previous = this.o.asw.getAttachability(name);
      if (previous === null || previous === 'Uncertain') {
        pending.push(name);
        continue;
      }
      scratch.updateReconstructedVolumeAttachability(name, previous === 'True');
      const devicePath = this.o.asw.getAttachedVolume(name)?.devicePath ?? '';
      if (devicePath !== '') scratch.updateReconstructedDevicePath(name, devicePath);
    }
    const resolved = pending.length === 0 || (await this.applyNodeStatus(scratch, () => pending));

    // The swap: synchronous from here on.
    report.state = 'done';
    report.finishedAt = this.o.clock.now();
    this.report = report;
    this.openReportEntries = target.open;
    this.volumesFailedReconstruction = failed;
    this.volumesNeedUpdateFromNodeStatus = resolved ? [] : pending;
    this.o.onChange?.();
    const diff = this.o.asw.replaceContent(scratch);
    // Re-plan everything: the refresh is also when every plan's lastPlannedAt moves on.
    this.markDirty(null);
    this.kick();
    const counts = { added: diff.added.length, removed: diff.removed.length, changed: diff.changed.length };
    if (counts.added + counts.removed + counts.changed > 0) this.log.info('Actual state of world rebuilt from disk', counts);
    else this.log.debug('Actual state of world rebuilt from disk: unchanged');
    return result(null, diff);
  }

  /**
   * The scan and reconstruction shared by {@link reconstructVolumes} and the plan-only rebuild:
   * fills `t.asw` and `t.report`, and returns the unique name of every reconstructed pod volume
   * (duplicates kept, one per pod), or null when `pods/` could not be read.
   */
  private async reconstructInto(t: ReconstructionTarget): Promise<UniqueVolumeName[] | null> {
    let podVolumes: PodVolume[];
    try {
      podVolumes = await getVolumesFromPodDir(this.o.podsDir, this.o.hostFs);
    } catch (err) {
      this.log.error(`Cannot get volumes from disk, skip sync states for volume reconstruction: ${errorMessage(err)}`);
      t.report.error = errorMessage(err);
      return null;
    }
    t.scanned = podVolumes.length;

    const groups = new Map<UniqueVolumeName, { first: ReconstructedVolume; pods: ReconstructedVolume[] }>();
    const names: UniqueVolumeName[] = [];
    for (const volume of podVolumes) {
      const entry: ReconstructionEntry = {
        podName: volume.podName,
        volumeSpecName: volume.volumeSpecName,
        pluginName: volume.pluginName,
        volumeMode: volume.volumeMode,
        volumePath: volume.volumePath,
        volumeName: null,
        outcome: 'reconstructed',
        error: null,
        scannedAt: this.o.clock.now(),
        resolvedAt: null,
      };
      t.report.entries.push(entry);
      if (t.asw.volumeExistsWithSpecName(volume.podName, volume.volumeSpecName)) {
        entry.outcome = 'skipped';
        entry.resolvedAt = entry.scannedAt;
        continue;
      }
      let reconstructed: ReconstructedVolume;
      try {
        reconstructed = await reconstructVolume(volume, this.o.pluginMgr);
        this.o.metrics?.reconstructVolumeOperation(false);
      } catch (err) {
        this.o.metrics?.reconstructVolumeOperation(true);
        this.log.info('Could not construct volume information', { podName: volume.podName, volumeSpecName: volume.volumeSpecName, err: errorMessage(err) });
        t.onFailed(volume);
        entry.outcome = 'failed';
        entry.error = errorMessage(err);
        t.open++;
        continue;
      }
      entry.volumeName = reconstructed.volumeName;
      t.open++;
      const group = groups.get(reconstructed.volumeName) ?? { first: reconstructed, pods: [] };
      group.pods.push(reconstructed);
      groups.set(reconstructed.volumeName, group);
      names.push(reconstructed.volumeName);
    }
    if (groups.size > 0) await this.updateStates(t.asw, groups);
    return names;
  }

  private finishReport(): void {
    this.report.state = 'done';
    this.report.finishedAt = this.o.clock.now();
    this.o.onChange?.();
  }

  private async updateStates(
    asw: ActualStateOfWorld,
    groups: Map<UniqueVolumeName, { first: ReconstructedVolume; pods: ReconstructedVolume[] }>,
  ): Promise<void> {
    for (const [volumeName, { first, pods }] of groups) {
      try {
        asw.addAttachUncertainReconstructedVolume(volumeName, first.volumeSpec, this.o.nodeName, first.devicePath);
      } catch (err) {
        this.log.error(`Could not add volume information to actual state of world: ${errorMessage(err)}`, { volumeName });
        continue;
      }
      let seLinuxMountContext = '';
      for (const v of pods) {
        try {
          asw.checkAndMarkVolumeAsUncertainViaReconstruction({
            podName: v.podName,
            podUID: podUID(v.podName),
            volumeName: v.volumeName,
            mounter: v.mounter,
            blockVolumeMapper: v.blockVolumeMapper,
            outerVolumeSpecName: v.outerVolumeSpecName,
            volumeGidValue: v.volumeGidValue,
            volumeSpec: v.volumeSpec,
            volumeMountState: 'VolumeMountUncertain',
            seLinuxMountContext: v.seLinuxMountContext,
          });
          seLinuxMountContext = v.seLinuxMountContext;
        } catch (err) {
          this.log.error(`Could not add pod to volume information to actual state of world: ${errorMessage(err)}`, { volumeName });
        }
      }
      if (first.deviceMounter !== null || first.blockVolumeMapper !== null) {
        try {
          const deviceMountPath =
            first.blockVolumeMapper !== null
              ? await first.blockVolumeMapper.getGlobalMapPath(first.volumeSpec)
              : await (first.deviceMounter as NonNullable<typeof first.deviceMounter>).getDeviceMountPath(first.volumeSpec);
          asw.markDeviceAsUncertain(volumeName, first.devicePath, deviceMountPath, seLinuxMountContext);
        } catch (err) {
          this.log.error(`Could not find device mount path for volume: ${errorMessage(err)}`, { volumeName });
        }
      }
    }
  }

  /**
   * Fills device paths and attachability of reconstructed volumes from `node.status.volumesAttached`.
   * On a GET error the list is kept (nothing is unmounted meanwhile). Without an API client
   * (standalone), the kubelet simply clears the list; here attachability is then resolved from
   * the plugin, so that a standalone agent that attached a volume itself also detaches it.
   */
  private async updateReconstructedFromNodeStatus(): Promise<void> {
    if (await this.applyNodeStatus(this.o.asw, () => this.volumesNeedUpdateFromNodeStatus)) this.volumesNeedUpdateFromNodeStatus = [];
  }

  /**
   * The work of {@link updateReconstructedFromNodeStatus} on any world: resolves the volumes
   * `names()` lists (read after the Node GET) and returns true, or returns false when the GET
   * failed (nothing changed).
   */
  private async applyNodeStatus(asw: ActualStateOfWorld, names: () => readonly UniqueVolumeName[]): Promise<boolean> {
    const getNode = this.o.kubeClient?.getNode;
    if (getNode === undefined) {
      for (const volumeName of names()) {
        const av = asw.getAttachedVolume(volumeName);
        if (av === null) continue;
        let attachable: boolean;
        try {
          attachable = this.o.pluginMgr.findAttachablePluginBySpec(av.volumeSpec) !== null;
        } catch {
          attachable = false;
        }
        asw.updateReconstructedVolumeAttachability(volumeName, attachable);
      }
      this.log.info('Skipped reconstruction of DevicePaths from node.status in standalone mode');
      return true;
    }
    let node;
    try {
      node = await getNode(this.o.nodeName);
    } catch (err) {
      this.log.debug(`Failed to get Node status to reconstruct device paths: ${errorMessage(err)}`);
      return false;
    }
    const attached = node.status?.volumesAttached ?? [];
    for (const volumeName of names()) {
      let attachable = false;
      for (const av of attached) {
        if (av.name !== volumeName) continue;
        asw.updateReconstructedDevicePath(volumeName, av.devicePath);
        attachable = true;
      }
      asw.updateReconstructedVolumeAttachability(volumeName, attachable);
    }
    this.log.info('DevicePaths of reconstructed volumes updated');
    return true;
  }

  /**
   * One-shot cleanup of volumes that failed reconstruction and are not desired: TearDown through
   * the executor (so the per-volume lock holds). Desired ones are left to the normal mount.
   */
  private cleanOrphanVolumes(): void {
    if (this.volumesFailedReconstruction.length === 0) return;
    for (const volume of this.volumesFailedReconstruction) {
      if (this.o.dsw.volumeExistsWithSpecName(volume.podName, volume.volumeSpecName)) continue;
      this.cleanupMounts(volume);
    }
    this.volumesFailedReconstruction = [];
  }

  private cleanupMounts(volume: PodVolume): void {
    this.log.info('Reconciler sync states: could not find volume information in desired state, clean up the mount points', {
      podName: volume.podName,
      volumeSpecName: volume.volumeSpecName,
    });
    const mv: MountedVolume = {
      podName: volume.podName,
      // The volume is not in the actual state: any name does; the spec name keeps keys distinct.
      volumeName: uniqueVolumeName(volume.volumeSpecName),
      innerVolumeSpecName: volume.volumeSpecName,
      outerVolumeSpecName: volume.volumeSpecName,
      pluginName: volume.pluginName,
      podUID: podUID(volume.podName),
      mounter: null,
      blockVolumeMapper: null,
      volumeGidValue: '',
      volumeSpec: specFromVolume({ name: volume.volumeSpecName }),
      deviceMountPath: '',
      seLinuxMountContext: null,
      volumeMountState: 'VolumeMountUncertain',
    };
    try {
      this.o.operationExecutor.unmountVolume(mv, this.o.asw, this.o.podsDir);
      this.o.metrics?.forceCleanedFailedVolumeOperation(false);
    } catch (err) {
      this.o.metrics?.forceCleanedFailedVolumeOperation(true);
      this.log.error(`volumeHandler.UnmountVolumeHandler for UnmountVolume failed: ${errorMessage(err)}`);
    }
  }

  /**
   * Updates report entries from the actual state (confirmed mounted / torn down) and from
   * finished cleanup operations. Cheap once every entry is resolved.
   */
  refreshReconstructionReport(record?: OperationRecord): void {
    // While the scan is still adding volumes to the actual state, "not mounted" only means "not added yet".
    if (this.openReportEntries === 0 || this.report.state !== 'done') return;
    const now = this.o.clock.now();
    for (const entry of this.report.entries) {
      if (entry.resolvedAt !== null) continue;
      if (entry.outcome === 'reconstructed' && entry.volumeName !== null) {
        const state = this.o.asw.getVolumeMountState(entry.volumeName, entry.podName);
        if (state === 'VolumeMounted') this.resolve(entry, 'confirmed-mounted', now);
        else if (state === 'VolumeNotMounted') this.resolve(entry, 'cleaned-up', now);
      } else if (
        entry.outcome === 'failed' &&
        record !== undefined &&
        record.outcome === 'success' &&
        record.operationName === 'volume_unmount' &&
        record.volume === entry.volumeSpecName &&
        record.pod === entry.podName
      ) {
        this.resolve(entry, 'cleaned-up', now);
      } else if (entry.outcome === 'failed' && this.o.asw.volumeExistsWithSpecName(entry.podName, entry.volumeSpecName)) {
        // Failed to reconstruct, but the pod is still desired and got mounted normally.
        const mounted = this.o.asw.getMountedVolumesForPod(entry.podName).some((m) => m.innerVolumeSpecName === entry.volumeSpecName);
        if (mounted) this.resolve(entry, 'confirmed-mounted', now);
      }
    }
  }

  private resolve(entry: ReconstructionEntry, outcome: ReconstructionOutcome, now: number): void {
    entry.outcome = outcome;
    entry.resolvedAt = now;
    this.openReportEntries--;
    this.o.onChange?.();
  }
}
