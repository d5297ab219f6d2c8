/**
 * The reconciler (kubelet `reconciler/reconciler.go`, `reconciler_common.go`): compares the
 * desired and actual states of world and starts operations to bring them together. A pass only
 * *starts* operations; it never waits for one. Passes run every `loopSleepDuration` after the end
 * of the previous one, and also immediately (coalesced) whenever either world changes, so a new
 * pod's first operation starts within milliseconds rather than a period.
 *
 * This module holds the loop, the pass and its three decision phases (unmount, mount or attach,
 * unmount device or detach). Reconstruction after a restart, with its report, is in
 * reconstruct.ts; the rounds of plan-only mode are in plan-only.ts.
 */
import { delayToNextTick, type Clock, type TimerHandle } from '../../clock/clock.ts';
import type { OperationStarter } from '../../operationexecutor/operation-executor.ts';
import type { OperationPlanner } from '../../operationexecutor/planning-executor.ts';
import { isAlreadyExists } from '../../operationexecutor/nested-pending-operations.ts';
import { isExponentialBackoff } from '../../operationexecutor/exponential-backoff.ts';
import { deviceMayBeMounted, type AttachedVolume, type MountedVolume, type VolumeToMount } from '../../operationexecutor/types.ts';
import { errorMessage, isMountFailedPreconditionError } from '../../volume/errors.ts';
import type { VolumeKubeClient } from '../../volume/kube-client.ts';
import { discardLogger, type Logger } from '../../volume/logger.ts';
import type { VolumePluginMgr } from '../../volume/plugins.ts';
import {
  EmptyNodeName,
  EmptyUniquePodName,
  type NodeName,
  type UniquePodName,
  type UniqueVolumeName,
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
import { UnresolvedPodVolumes } from '../cache/unresolved-pod-volumes.ts';
import { runPlanningRound } from './plan-only.ts';
import type { PodVolume } from './reconstruct-common.ts';
import type { ReconstructionReport, ReportChange } from './reconstruct-report.ts';
import { Reconstruction, type ActualStateRefresh, type ReconcilerMetrics } from './reconstruct.ts';

/**
 * The safety net: `sweepSliceSize` entries of each world are re-examined on every
 * `sweepEveryPasses`-th pass (with the 100 ms loop, a slice a second: every volume at least every
 * 4 s at 1,000 volumes, every 40 s at 10,000). Measured before it was spread out (a slice every
 * pass): the sweep was most of an idle agent's work at 1,000 volumes, 123 ms of main-thread time
 * in 30 s plus the garbage of a 256-name Set ten times a second.
 */
const sweepSliceSize = 256;
const sweepEveryPasses = 10;

/**
 * The actual world a pass decides on and the executor it hands operations to: the live ones, or
 * (plan-only mode) a projection and the planner.
 */
export interface PassWorld {
  asw: ActualStateOfWorld;
  executor: OperationStarter;
}

/**
 * The three decision phases of a pass, over any {@link PassWorld}: each examines the volumes of
 * `scope` (null: every volume), starts what is needed, and adds to `unsettled` every volume that
 * still needed action.
 */
export interface DecisionPhases {
  unmountVolumes(world: PassWorld, scope: ReadonlySet<UniqueVolumeName> | null, unsettled: Set<UniqueVolumeName>): void;
  mountOrAttachVolumes(world: PassWorld, scope: ReadonlySet<UniqueVolumeName> | null, unsettled: Set<UniqueVolumeName>): void;
  unmountDetachDevices(world: PassWorld, scope: ReadonlySet<UniqueVolumeName> | null, unsettled: Set<UniqueVolumeName>): void;
}

/** `isExpectedError`: states that are normal while retrying, and are not logged as errors. */
export function isExpectedError(err: unknown): boolean {
  return isAlreadyExists(err) || isExponentialBackoff(err) || isMountFailedPreconditionError(err);
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
  /**
   * The populator's record of listed pods whose volumes could not be resolved: none of such a
   * pod's mounts is unmounted, and none of its volumes that failed reconstruction is cleaned up,
   * until it resolves or releases them. Empty (upstream behaviour) when absent.
   */
  unresolvedPodVolumes?: UnresolvedPodVolumes;
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

export class Reconciler {
  private readonly config: ReconcilerOptions;
  private readonly log: Logger;
  private readonly unresolved: UnresolvedPodVolumes;
  /** Reconstruction after a restart (and the plan-only rebuilds), with its report. */
  private readonly reconstruction: Reconstruction;
  private timeOfLastSync = 0;
  private readonly dirtyVolumes = new Set<UniqueVolumeName>();
  private unsettledVolumes = new Set<UniqueVolumeName>();
  private fullScanNeeded = true;
  private lastReadyToUnmount: boolean | null = null;
  private sweepCursor = 0;
  /** Passes since the last sweep slice (see {@link sweepEveryPasses}). */
  private passesSinceSweep = 0;
  /** The live worlds of a normal pass. */
  private readonly live: PassWorld;
  private readonly planner: OperationPlanner | null;
  /** The decision phases below, handed to plan-only rounds. */
  private readonly phases: DecisionPhases = {
    unmountVolumes: (world, scope, unsettled) => {
      this.unmountVolumes(world, scope, unsettled);
    },
    mountOrAttachVolumes: (world, scope, unsettled) => {
      this.mountOrAttachVolumes(world, scope, unsettled);
    },
    unmountDetachDevices: (world, scope, unsettled) => {
      this.unmountDetachDevices(world, scope, unsettled);
    },
  };

  private started = false;
  private stopped = false;
  private loopReady = false;
  private inPass: Promise<void> | null = null;
  private passRequested = false;
  private timer: TimerHandle | null = null;
  private timerDue = 0;
  private passes = 0;

  constructor(config: ReconcilerOptions) {
    this.config = config;
    this.log = config.logger ?? discardLogger;
    this.unresolved = config.unresolvedPodVolumes ?? new UnresolvedPodVolumes();
    this.live = { asw: config.asw, executor: config.operationExecutor };
    this.planner = config.planner ?? null;
    this.reconstruction = new Reconstruction({
      nodeName: config.nodeName,
      dsw: config.dsw,
      asw: config.asw,
      operationExecutor: config.operationExecutor,
      planOnly: this.planner !== null,
      pluginMgr: config.pluginMgr,
      clock: config.clock,
      podsDir: config.podsDir,
      hostFs: config.hostFs,
      unresolvedPodVolumes: this.unresolved,
      ...(config.kubeClient !== undefined ? { kubeClient: config.kubeClient } : {}),
      logger: this.log,
      ...(config.metrics !== undefined ? { metrics: config.metrics } : {}),
      onActualStateReplaced: () => {
        this.markDirty(null);
        this.kick();
      },
      ...(config.onChange !== undefined ? { onChange: config.onChange } : {}),
    });
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
    if (this.timer !== null) this.config.clock.clearTimeout(this.timer);
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
    const due = this.config.clock.now() + delayMs;
    if (this.timer !== null) {
      if (this.timerDue <= due) return;
      this.config.clock.clearTimeout(this.timer);
    }
    this.timerDue = due;
    this.timer = this.config.clock.setTimeout(() => {
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
    this.schedule(this.passRequested ? 0 : this.nextPassDelayMs());
  }

  /**
   * The loop period, except when the reconciler is idle: then the passes before the next sweep
   * slice would examine nothing (no changed or unsettled volume, the start's full scans done) and
   * are skipped, the loop sleeping until the slice is due (a second with the 100 ms loop, ten
   * wake-ups fewer). Every change of either world, every finished operation and every operator
   * action kicks a pass at once, and {@link markDirty} brings a sleeping loop back to its period,
   * so no decision waits longer than it would in the kubelet's loop. Measured on a 2-core VM: each
   * wake-up of an idle Node process costs 0.2–0.9 ms of CPU, so the 100 ms loop alone was about
   * 0.9 % of a core on an idle node.
   */
  private nextPassDelayMs(): number {
    const period = this.config.loopSleepDurationMs;
    if (!this.idle()) return period;
    // The pass after the sleep takes the sweep slice, as the tenth pass would; on the clock's
    // grid of sweep periods, with the agent's other background loops (delayToNextTick).
    this.passesSinceSweep = Math.max(this.passesSinceSweep, sweepEveryPasses - 1);
    return delayToNextTick(this.config.clock, period * sweepEveryPasses);
  }

  /** Nothing to act on until something changes: see {@link nextPassDelayMs}. */
  private idle(): boolean {
    return (
      this.planner === null &&
      !this.fullScanNeeded &&
      this.dirtyVolumes.size === 0 &&
      this.unsettledVolumes.size === 0 &&
      this.lastReadyToUnmount === true &&
      this.readyToUnmount() &&
      this.statesHasBeenSynced() &&
      this.reconstruction.getVolumesFailedReconstruction().length === 0
    );
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
        this.reconstruction.cleanOrphanVolumes();
      }
      this.unsettledVolumes = unsettled;
    }
    if (this.reconstruction.waitingForNodeStatus()) {
      // Undefined when it completed synchronously (standalone): no await, see its contract.
      const fromNodeStatus = this.reconstruction.updateReconstructedFromNodeStatus();
      if (fromNodeStatus !== undefined) await fromNodeStatus;
    }
    if (!this.reconstruction.waitingForNodeStatus()) this.updateLastSyncTime();
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
    runPlanningRound({ planner, asw: this.config.asw, scope, readyToUnmount, phases: this.phases, logger: this.log });
  }

  /**
   * Records that a volume changed in either world (null: anything may have changed). The next
   * pass examines it even if it was settled.
   */
  markDirty(volumeName: UniqueVolumeName | null): void {
    if (volumeName === null) this.fullScanNeeded = true;
    else this.dirtyVolumes.add(volumeName);
    // A loop sleeping through idle passes (nextPassDelayMs) is due again within its period.
    if (this.timer !== null && this.timerDue > this.config.clock.now() + this.config.loopSleepDurationMs) this.schedule(this.config.loopSleepDurationMs);
  }

  /**
   * Which volumes this pass examines. The decisions of unmountVolumes, mountOrAttachVolumes and unmountDetachDevices depend only on a volume's own
   * entries in both worlds and on the operations table, so a volume that needed no action in
   * the last pass and has not changed since cannot need one now. A pass therefore looks at the
   * changed ("dirty") volumes, the ones that still needed action ("unsettled": waiting, in
   * backoff, running), and on every `sweepEveryPasses`-th pass a rotating slice of all volumes as
   * a safety net; it scans everything when asked to, at start and whenever readyToUnmount flips.
   * The result is the kubelet's full scan, at a cost proportional to what changed rather than to
   * the node's size.
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
    this.unsettledVolumes.forEach((v) => scope.add(v));
    if (++this.passesSinceSweep >= sweepEveryPasses) {
      this.passesSinceSweep = 0;
      const desiredTotal = this.config.dsw.addVolumeNamesInRange(this.sweepCursor, sweepSliceSize, scope);
      const actualTotal = this.config.asw.addVolumeNamesInRange(this.sweepCursor, sweepSliceSize, scope);
      this.sweepCursor += sweepSliceSize;
      if (this.sweepCursor >= Math.max(desiredTotal, actualTotal)) this.sweepCursor = 0;
    }
    return scope;
  }

  /** True after the first pass that ended with no reconstructed volume waiting for node status. */
  statesHasBeenSynced(): boolean {
    return this.timeOfLastSync !== 0;
  }

  private updateLastSyncTime(): void {
    const first = this.timeOfLastSync === 0;
    if (first) this.log.info('Reconciler: states have been synced');
    this.timeOfLastSync = this.config.clock.now();
    if (first) this.config.onChange?.();
  }

  /** Unmount only when the desired state is complete and device paths came from node status. */
  private readyToUnmount(): boolean {
    return this.config.populatorHasAddedPods() && !this.reconstruction.waitingForNodeStatus();
  }

  private unmountVolumes(world: PassWorld, scope: ReadonlySet<UniqueVolumeName> | null, unsettled: Set<UniqueVolumeName>): void {
    // Desired entries are skipped before anything is allocated (a converged state costs lookups only).
    const notDesired = (podName: UniquePodName, volumeName: UniqueVolumeName, seLinuxMountContext: string | null): boolean =>
      !this.config.dsw.podExistsInVolume(podName, volumeName, seLinuxMountContext);
    let candidates: MountedVolume[];
    if (scope === null) {
      candidates = world.asw.collectMountedVolumes(notDesired);
    } else {
      // One array for the whole scope, and forEach (no iterator result per volume): a pass runs ten times a second.
      const into: MountedVolume[] = [];
      scope.forEach((v) => {
        world.asw.collectMountedVolumesOf(v, notDesired, into);
      });
      candidates = into;
    }
    for (const mv of candidates) {
      unsettled.add(mv.volumeName);
      // kubernetes#120150: the pod is still listed but some of its volumes could not be resolved
      // (a claim GET failed, a PV file is missing…), so "not desired" means "not known", not
      // "not wanted". Its mounts stay (a reconstructed one stays uncertain) until the volumes
      // resolve (then the mount is confirmed) or the pod releases them (gone, or terminated).
      // Unsettled, so every pass looks again. Plan-only mode predicts the kubelet beside it, which
      // has no such rule: there the unmount is planned, and the plan shows the danger.
      if (this.planner === null && this.unresolved.hasUnresolved(mv.podName)) continue;
      if (world.executor.isOperationPending(mv.volumeName, mv.podName, EmptyNodeName)) continue;
      this.log.debug(`Starting operationExecutor.UnmountVolume for volume ${mv.volumeName} pod ${mv.podName}`);
      this.tryStart(() => {
        world.executor.unmountVolume(mv, world.asw, this.config.podsDir);
      }, 'operationExecutor.UnmountVolume failed');
    }
  }

  private mountOrAttachVolumes(world: PassWorld, scope: ReadonlySet<UniqueVolumeName> | null, unsettled: Set<UniqueVolumeName>): void {
    // Pairs already mounted and current need no action and are never materialised. Nor are the
    // volumes with an operation running (any pod's, as upstream v1.34 checks IsOperationPending
    // with the empty pod name before PodExistsInVolume): the executor would only refuse them with
    // AlreadyExistsError. They stay unsettled, so the pass after the operation looks again.
    const needsAction = (volumeName: UniqueVolumeName, podName: UniquePodName, desiredSize: number, seLinuxLabel: string): boolean => {
      if (world.executor.isOperationPending(volumeName, EmptyUniquePodName, EmptyNodeName)) {
        unsettled.add(volumeName);
        return false;
      }
      return !world.asw.isMountedAndCurrent(podName, volumeName, desiredSize, seLinuxLabel);
    };
    let candidates: VolumeToMount[];
    if (scope === null) {
      candidates = this.config.dsw.collectVolumesToMount(needsAction);
    } else {
      const into: VolumeToMount[] = [];
      scope.forEach((v) => {
        this.config.dsw.collectVolumesToMountOf(v, needsAction, into);
      });
      candidates = into;
    }
    // Volumes that wait for an attach step start it first: their mount needs a later pass, and
    // the operations started here run on this one thread, so a pass that starts thousands of
    // them (the first after a restart) would otherwise start the attach steps last and put the
    // mount of those volumes (a CSI NodeStage and NodePublish, in another process) after all the
    // local ones. The kubelet's order here is its map's, which is unspecified.
    const afterAttaches: { vtm: VolumeToMount; err: unknown; mounted: boolean }[] = [];
    for (const vtm of candidates) {
      unsettled.add(vtm.volumeName);
      const result = world.asw.podExistsInVolume(vtm.podName, vtm.volumeName, vtm.desiredPersistentVolumeSize, vtm.seLinuxLabel);
      vtm.devicePath = result.devicePath;
      if (isVolumeNotAttachedError(result.err)) this.waitForVolumeAttach(world, vtm);
      else afterAttaches.push({ vtm, err: result.err, mounted: result.mounted });
    }
    for (const { vtm, err, mounted } of afterAttaches) {
      if (isSELinuxMountMismatchError(err)) {
        // Mounted with another label: the unmount steps tear it down first.
        this.config.dsw.addErrorToPod(vtm.podName, err.message);
      } else if (!mounted || isRemountRequiredError(err)) {
        const isRemount = isRemountRequiredError(err);
        this.tryStart(() => {
          world.executor.mountVolume(this.config.waitForAttachTimeoutMs, vtm, world.asw, isRemount);
        }, 'operationExecutor.MountVolume failed');
      } else if (isFsResizeRequiredError(err)) {
        this.tryStart(() => {
          world.executor.expandInUseVolume(vtm, world.asw, err.currentSize);
        }, 'operationExecutor.ExpandInUseVolume failed');
      }
    }
  }

  private waitForVolumeAttach(world: PassWorld, vtm: VolumeToMount): void {
    if (this.config.controllerAttachDetachEnabled || !vtm.pluginIsAttachable) {
      // No operation (and so no backoff) until the volume is reported in use.
      if (vtm.pluginIsAttachable && !vtm.reportedInUse) {
        world.executor.volumeNotReportedInUse?.(vtm, this.config.nodeName, world.asw);
        return;
      }
      this.tryStart(() => {
        world.executor.verifyControllerAttachedVolume(vtm, this.config.nodeName, world.asw);
      }, `operationExecutor.VerifyControllerAttachedVolume failed (controllerAttachDetachEnabled ${this.config.controllerAttachDetachEnabled})`);
      return;
    }
    this.tryStart(() => {
      world.executor.attachVolume(
        { volumeName: vtm.volumeName, volumeSpec: vtm.volumeSpec, nodeName: this.config.nodeName, scheduledPods: [vtm.pod] },
        world.asw,
      );
    }, 'operationExecutor.AttachVolume failed');
  }

  private unmountDetachDevices(world: PassWorld, scope: ReadonlySet<UniqueVolumeName> | null, unsettled: Set<UniqueVolumeName>): void {
    let candidates: AttachedVolume[];
    if (scope === null) {
      candidates = world.asw.getUnmountedVolumes();
    } else {
      const into: AttachedVolume[] = [];
      scope.forEach((v) => {
        const av = world.asw.getUnmountedVolume(v);
        if (av !== null) into.push(av);
      });
      candidates = into;
    }
    for (const candidate of candidates) {
      if (this.config.dsw.volumeExists(candidate.volumeName, candidate.seLinuxMountContext)) continue;
      unsettled.add(candidate.volumeName);
      if (world.executor.isOperationPending(candidate.volumeName, EmptyUniquePodName, EmptyNodeName)) continue;
      // Re-read: a mount may have finished since the list was taken.
      const av = world.asw.getAttachedVolume(candidate.volumeName);
      if (av === null) continue;
      if (deviceMayBeMounted(av)) {
        this.tryStart(() => {
          world.executor.unmountDevice(av, world.asw);
        }, 'operationExecutor.UnmountDevice failed');
      } else if (this.config.controllerAttachDetachEnabled || !av.pluginIsAttachable) {
        try {
          world.asw.markVolumeAsDetached(av.volumeName, av.nodeName);
          this.log.info('Volume detached', { volume: av.volumeName, devicePath: av.devicePath });
        } catch (err) {
          this.log.error(errorMessage(err));
        }
      } else {
        this.tryStart(() => {
          world.executor.detachVolume(av, world.asw);
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


  // RECONSTRUCTION (reconstruct.ts)

  /**
   * Current reconstruction report (a copy), with `keptBecause` of every open entry whose pod has
   * unresolved volumes.
   */
  getReconstructionReport(): ReconstructionReport {
    return this.reconstruction.getReconstructionReport();
  }

  /** Volumes still waiting for node status (reconstruction). */
  getVolumesNeedUpdateFromNodeStatus(): readonly UniqueVolumeName[] {
    return this.reconstruction.getVolumesNeedUpdateFromNodeStatus();
  }

  getVolumesFailedReconstruction(): readonly PodVolume[] {
    return this.reconstruction.getVolumesFailedReconstruction();
  }

  /**
   * Test hook: replaces the list of reconstructed volumes waiting for node status, as
   * {@link reconstructVolumes} leaves it, so that a test can drive one pass by hand from that
   * state (the kubelet's reconciler tests assign the field directly). Not for production use.
   */
  setVolumesNeedUpdateFromNodeStatusForTest(volumeNames: readonly UniqueVolumeName[]): void {
    this.reconstruction.setVolumesNeedUpdateFromNodeStatusForTest(volumeNames);
  }

  /** Rebuilds the actual state from disk (runs once before the first pass); see reconstruct.ts. */
  reconstructVolumes(): Promise<void> {
    return this.reconstruction.reconstructVolumes();
  }

  /**
   * Plan-only mode: rebuilds the actual world from disk and swaps it in (see
   * `Reconstruction.refreshActualState`). Rejects with `PlanOnlyModeError` outside plan-only mode.
   */
  refreshActualState(): Promise<ActualStateRefresh> {
    return this.reconstruction.refreshActualState();
  }

  /**
   * Updates report entries from the actual state (confirmed mounted / torn down) and from
   * finished cleanup operations; `change` says what changed (see reconstruct.ts).
   */
  refreshReconstructionReport(change: ReportChange): void {
    this.reconstruction.refreshReconstructionReport(change);
  }
}
