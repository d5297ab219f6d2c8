/**
 * The reconciler (kubelet `reconciler/reconciler.go`, `reconciler_common.go`): compares the
 * desired and actual states of world and starts operations to bring them together. A pass only
 * *starts* operations; it never waits for one. Passes run every `loopSleepDuration` after the end
 * of the previous one, and also immediately (coalesced) whenever either world changes, so a new
 * pod's first operation starts within milliseconds rather than a period.
 */
import type { Clock, TimerHandle } from '../../clock/clock.ts';
import type { OperationExecutor, OperationRecord } from '../../operationexecutor/operation-executor.ts';
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
  operationExecutor: OperationExecutor;
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
  private readonly report: ReconstructionReport = { state: 'pending', startedAt: null, finishedAt: null, error: null, entries: [] };
  private openReportEntries = 0;

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
  }

  // LOOP

  /** Reconstructs once, then runs passes until {@link stop}. */
  start(): void {
    if (this.started) return;
    this.started = true;
    void this.reconstructVolumes().then(() => {
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
    const scope = this.takeScope(readyToUnmount);
    const unsettled = new Set<UniqueVolumeName>();
    if (readyToUnmount) this.unmountVolumes(scope, unsettled);
    this.mountOrAttachVolumes(scope, unsettled);
    if (readyToUnmount) {
      this.unmountDetachDevices(scope, unsettled);
      this.cleanOrphanVolumes();
    }
    this.unsettledVolumes = unsettled;
    if (this.volumesNeedUpdateFromNodeStatus.length > 0) await this.updateReconstructedFromNodeStatus();
    if (this.volumesNeedUpdateFromNodeStatus.length === 0) this.updateLastSyncTime();
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
    if (this.timeOfLastSync === 0) this.log.info('Reconciler: states have been synced');
    this.timeOfLastSync = this.o.clock.now();
  }

  /** Unmount only when the desired state is complete and device paths came from node status. */
  private readyToUnmount(): boolean {
    return this.o.populatorHasAddedPods() && this.volumesNeedUpdateFromNodeStatus.length === 0;
  }

  private unmountVolumes(scope: Set<UniqueVolumeName> | null, unsettled: Set<UniqueVolumeName>): void {
    // Desired entries are skipped before anything is allocated (a converged state costs lookups only).
    const notDesired = (podName: UniquePodName, volumeName: UniqueVolumeName, seLinuxMountContext: string | null): boolean =>
      !this.o.dsw.podExistsInVolume(podName, volumeName, seLinuxMountContext);
    const candidates =
      scope === null
        ? this.o.asw.collectMountedVolumes(notDesired)
        : [...scope].flatMap((v) => this.o.asw.collectMountedVolumesOf(v, notDesired));
    for (const mv of candidates) {
      unsettled.add(mv.volumeName);
      if (this.o.operationExecutor.isOperationPending(mv.volumeName, mv.podName, EmptyNodeName)) continue;
      this.log.debug(`Starting operationExecutor.UnmountVolume for volume ${mv.volumeName} pod ${mv.podName}`);
      this.tryStart(() => {
        this.o.operationExecutor.unmountVolume(mv, this.o.asw, this.o.podsDir);
      }, 'operationExecutor.UnmountVolume failed');
    }
  }

  private mountOrAttachVolumes(scope: Set<UniqueVolumeName> | null, unsettled: Set<UniqueVolumeName>): void {
    // Pairs already mounted and current need no action and are never materialised.
    const needsAction = (volumeName: UniqueVolumeName, podName: UniquePodName, desiredSize: number, seLinuxLabel: string): boolean =>
      !this.o.asw.isMountedAndCurrent(podName, volumeName, desiredSize, seLinuxLabel);
    const candidates =
      scope === null
        ? this.o.dsw.collectVolumesToMount(needsAction)
        : [...scope].flatMap((v) => this.o.dsw.collectVolumesToMountOf(v, needsAction));
    for (const vtm of candidates) {
      unsettled.add(vtm.volumeName);
      const result = this.o.asw.podExistsInVolume(vtm.podName, vtm.volumeName, vtm.desiredPersistentVolumeSize, vtm.seLinuxLabel);
      vtm.devicePath = result.devicePath;
      const err = result.err;
      if (isSELinuxMountMismatchError(err)) {
        // Mounted with another label: the unmount steps tear it down first.
        this.o.dsw.addErrorToPod(vtm.podName, err.message);
      } else if (isVolumeNotAttachedError(err)) {
        this.waitForVolumeAttach(vtm);
      } else if (!result.mounted || isRemountRequiredError(err)) {
        const isRemount = isRemountRequiredError(err);
        this.tryStart(() => {
          this.o.operationExecutor.mountVolume(this.o.waitForAttachTimeoutMs, vtm, this.o.asw, isRemount);
        }, 'operationExecutor.MountVolume failed');
      } else if (isFsResizeRequiredError(err)) {
        this.tryStart(() => {
          this.o.operationExecutor.expandInUseVolume(vtm, this.o.asw, err.currentSize);
        }, 'operationExecutor.ExpandInUseVolume failed');
      }
    }
  }

  private waitForVolumeAttach(vtm: VolumeToMount): void {
    if (this.o.controllerAttachDetachEnabled || !vtm.pluginIsAttachable) {
      // No operation (and so no backoff) until the volume is reported in use.
      if (vtm.pluginIsAttachable && !vtm.reportedInUse) return;
      this.tryStart(() => {
        this.o.operationExecutor.verifyControllerAttachedVolume(vtm, this.o.nodeName, this.o.asw);
      }, `operationExecutor.VerifyControllerAttachedVolume failed (controllerAttachDetachEnabled ${this.o.controllerAttachDetachEnabled})`);
      return;
    }
    this.tryStart(() => {
      this.o.operationExecutor.attachVolume(
        { volumeName: vtm.volumeName, volumeSpec: vtm.volumeSpec, nodeName: this.o.nodeName, scheduledPods: [vtm.pod] },
        this.o.asw,
      );
    }, 'operationExecutor.AttachVolume failed');
  }

  private unmountDetachDevices(scope: Set<UniqueVolumeName> | null, unsettled: Set<UniqueVolumeName>): void {
    const candidates =
      scope === null
        ? this.o.asw.getUnmountedVolumes()
        : [...scope].flatMap((v) => {
            const av = this.o.asw.getUnmountedVolume(v);
            return av === null ? [] : [av];
          });
    for (const candidate of candidates) {
      if (this.o.dsw.volumeExists(candidate.volumeName, candidate.seLinuxMountContext)) continue;
      unsettled.add(candidate.volumeName);
      if (this.o.operationExecutor.isOperationPending(candidate.volumeName, EmptyUniquePodName, EmptyNodeName)) continue;
      // Re-read: a mount may have finished since the list was taken.
      const av = this.o.asw.getAttachedVolume(candidate.volumeName);
      if (av === null) continue;
      if (deviceMayBeMounted(av)) {
        this.tryStart(() => {
          this.o.operationExecutor.unmountDevice(av, this.o.asw);
        }, 'operationExecutor.UnmountDevice failed');
      } else if (this.o.controllerAttachDetachEnabled || !av.pluginIsAttachable) {
        try {
          this.o.asw.markVolumeAsDetached(av.volumeName, av.nodeName);
          this.log.info('Volume detached', { volume: av.volumeName, devicePath: av.devicePath });
        } catch (err) {
          this.log.error(errorMessage(err));
        }
      } else {
        this.tryStart(() => {
          this.o.operationExecutor.detachVolume(av, this.o.asw);
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
    let podVolumes: PodVolume[];
    try {
      podVolumes = await getVolumesFromPodDir(this.o.podsDir, this.o.hostFs);
    } catch (err) {
      this.log.error(`Cannot get volumes from disk, skip sync states for volume reconstruction: ${errorMessage(err)}`);
      this.report.error = errorMessage(err);
      this.finishReport();
      return;
    }

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
      this.report.entries.push(entry);
      if (this.o.asw.volumeExistsWithSpecName(volume.podName, volume.volumeSpecName)) {
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
        this.volumesFailedReconstruction.push(volume);
        entry.outcome = 'failed';
        entry.error = errorMessage(err);
        this.openReportEntries++;
        continue;
      }
      entry.volumeName = reconstructed.volumeName;
      this.openReportEntries++;
      const group = groups.get(reconstructed.volumeName) ?? { first: reconstructed, pods: [] };
      group.pods.push(reconstructed);
      groups.set(reconstructed.volumeName, group);
      names.push(reconstructed.volumeName);
    }
    if (groups.size > 0) {
      await this.updateStates(groups);
      this.volumesNeedUpdateFromNodeStatus = names;
    }
    this.log.info('Volume reconstruction finished');
    this.finishReport();
  }

  private finishReport(): void {
    this.report.state = 'done';
    this.report.finishedAt = this.o.clock.now();
  }

  private async updateStates(groups: Map<UniqueVolumeName, { first: ReconstructedVolume; pods: ReconstructedVolume[] }>): Promise<void> {
    for (const [volumeName, { first, pods }] of groups) {
      try {
        this.o.asw.addAttachUncertainReconstructedVolume(volumeName, first.volumeSpec, this.o.nodeName, first.devicePath);
      } catch (err) {
        this.log.error(`Could not add volume information to actual state of world: ${errorMessage(err)}`, { volumeName });
        continue;
      }
      let seLinuxMountContext = '';
      for (const v of pods) {
        try {
          this.o.asw.checkAndMarkVolumeAsUncertainViaReconstruction({
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
          this.o.asw.markDeviceAsUncertain(volumeName, first.devicePath, deviceMountPath, seLinuxMountContext);
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
    const getNode = this.o.kubeClient?.getNode;
    if (getNode === undefined) {
      for (const volumeName of this.volumesNeedUpdateFromNodeStatus) {
        const av = this.o.asw.getAttachedVolume(volumeName);
        if (av === null) continue;
        let attachable: boolean;
        try {
          attachable = this.o.pluginMgr.findAttachablePluginBySpec(av.volumeSpec) !== null;
        } catch {
          attachable = false;
        }
        this.o.asw.updateReconstructedVolumeAttachability(volumeName, attachable);
      }
      this.log.info('Skipped reconstruction of DevicePaths from node.status in standalone mode');
      this.volumesNeedUpdateFromNodeStatus = [];
      return;
    }
    let node;
    try {
      node = await getNode(this.o.nodeName);
    } catch (err) {
      this.log.debug(`Failed to get Node status to reconstruct device paths: ${errorMessage(err)}`);
      return;
    }
    const attached = node.status?.volumesAttached ?? [];
    for (const volumeName of this.volumesNeedUpdateFromNodeStatus) {
      let attachable = false;
      for (const av of attached) {
        if (av.name !== volumeName) continue;
        this.o.asw.updateReconstructedDevicePath(volumeName, av.devicePath);
        attachable = true;
      }
      this.o.asw.updateReconstructedVolumeAttachability(volumeName, attachable);
    }
    this.log.info('DevicePaths of reconstructed volumes updated');
    this.volumesNeedUpdateFromNodeStatus = [];
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
  }
}
