/**
 * Reconstruction (kubelet `reconciler/reconstruct.go`, the "new" flow of v1.30): after a
 * restart, rebuild the actual state of world from the volume directories under `pods/`. Every
 * reconstructed pod volume enters the actual state as Uncertain (device Uncertain too), and is
 * either confirmed by a normal mount (the pod is still desired) or torn down (the pod is gone).
 * Device paths and attachability come from `node.status.volumesAttached`, and nothing is
 * unmounted until they did. Volumes that cannot be reconstructed are remembered and cleaned up
 * once, when the desired state is complete. In plan-only mode the same scan rebuilds the whole
 * actual state on demand ({@link Reconstruction.refreshActualState}).
 *
 * The reconciler owns one {@link Reconstruction} and asks it, in each pass, whether node status
 * is still awaited and to clean up orphan volumes; the per-volume helpers are in
 * reconstruct-common.ts and the report's types in reconstruct-report.ts.
 */
import type { Clock } from '../../clock/clock.ts';
import type { OperationStarter } from '../../operationexecutor/operation-executor.ts';
import type { MountedVolume } from '../../operationexecutor/types.ts';
import { errorMessage } from '../../volume/errors.ts';
import type { VolumeKubeClient } from '../../volume/kube-client.ts';
import type { Logger } from '../../volume/logger.ts';
import type { VolumePluginMgr } from '../../volume/plugins.ts';
import { specFromVolume } from '../../volume/spec.ts';
import { podUID, uniqueVolumeName, type NodeName, type UniqueVolumeName } from '../../volume/types.ts';
import type { HostFs } from '../../volume/util/host-fs.ts';
import type { ActualStateOfWorld } from '../cache/actual-state-of-world.ts';
import type { DesiredStateOfWorld } from '../cache/desired-state-of-world.ts';
import type { UnresolvedPodVolumes } from '../cache/unresolved-pod-volumes.ts';
import { PlanOnlyModeError } from './plan-only.ts';
import {
  addReconstructedDeviceVolumes,
  getVolumesFromPodDir,
  mapConcurrently,
  reconstructDeviceVolumes,
  reconstructVolume,
  type PodVolume,
  type ReconstructedVolume,
} from './reconstruct-common.ts';
import {
  newReconstructionEntry,
  OpenReportEntries,
  pendingReconstructionReport,
  type ReconstructionEntry,
  type ReconstructionReport,
  type ReportChange,
} from './reconstruct-report.ts';

/** The reconstruction counters (`reconstruct_volume_operations_total`, force-cleanup). */
export interface ReconcilerMetrics {
  reconstructVolumeOperation(failed: boolean): void;
  forceCleanedFailedVolumeOperation(failedToStart: boolean): void;
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

export interface ReconstructionOptions {
  nodeName: NodeName;
  dsw: DesiredStateOfWorld;
  asw: ActualStateOfWorld;
  /** Runs the one-shot TearDown of volumes that failed reconstruction (never called in plan-only mode). */
  operationExecutor: OperationStarter;
  /** Plan-only mode: {@link Reconstruction.refreshActualState} is available, cleanups never run. */
  planOnly: boolean;
  pluginMgr: VolumePluginMgr;
  clock: Clock;
  podsDir: string;
  hostFs: HostFs;
  /** Pods whose volumes could not be resolved: their failed volumes are kept, not cleaned up. */
  unresolvedPodVolumes: UnresolvedPodVolumes;
  /** Node status access; without `getNode` the agent is standalone. */
  kubeClient?: VolumeKubeClient;
  logger: Logger;
  metrics?: ReconcilerMetrics;
  /** Called after a plan-only rebuild replaced the actual world's content (re-plan everything). */
  onActualStateReplaced: () => void;
  /**
   * Called after every change of what {@link Reconstruction.getReconstructionReport} answers
   * (views subscribe here instead of polling). Called synchronously, possibly from inside a change
   * of the actual state: it must not call back into the reconstruction.
   */
  onChange?: () => void;
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

/** Volumes reconstructed at once during a scan. */
const reconstructConcurrency = 256;

export class Reconstruction {
  private readonly options: ReconstructionOptions;
  private readonly log: Logger;
  private volumesNeedUpdateFromNodeStatus: UniqueVolumeName[] = [];
  private volumesFailedReconstruction: PodVolume[] = [];
  private report: ReconstructionReport = pendingReconstructionReport();
  private openReportEntries = 0;
  /** The open entries of the done report, indexed; null until the first refresh after it is done. */
  private openEntries: OpenReportEntries | null = null;
  private refreshRunning: Promise<ActualStateRefresh> | null = null;
  private refreshQueued: Promise<ActualStateRefresh> | null = null;

  constructor(options: ReconstructionOptions) {
    this.options = options;
    this.log = options.logger;
  }

  /** True while reconstructed volumes wait for node status: nothing may be unmounted meanwhile. */
  waitingForNodeStatus(): boolean {
    return this.volumesNeedUpdateFromNodeStatus.length > 0;
  }

  /** Volumes still waiting for node status (reconstruction). */
  getVolumesNeedUpdateFromNodeStatus(): readonly UniqueVolumeName[] {
    return this.volumesNeedUpdateFromNodeStatus;
  }

  getVolumesFailedReconstruction(): readonly PodVolume[] {
    return this.volumesFailedReconstruction;
  }

  /** See `Reconciler.setVolumesNeedUpdateFromNodeStatusForTest`. */
  setVolumesNeedUpdateFromNodeStatusForTest(volumeNames: readonly UniqueVolumeName[]): void {
    this.volumesNeedUpdateFromNodeStatus = [...volumeNames];
  }

  // THE SCAN AT START

  /**
   * Rebuilds the actual state from disk (runs once before the first pass). Every reconstructed
   * pod volume is added Uncertain; volumes that fail are kept for a one-shot cleanup.
   */
  async reconstructVolumes(): Promise<void> {
    this.report.state = 'running';
    this.report.startedAt = this.options.clock.now();
    this.options.onChange?.();
    const target: ReconstructionTarget = {
      asw: this.options.asw,
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

  // PLAN-ONLY REBUILD

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
    if (!this.options.planOnly) {
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
    const { asw, clock } = this.options;
    const startedAt = clock.now();
    if (this.report.state === 'pending') {
      this.report.state = 'running';
      this.report.startedAt = startedAt;
      this.options.onChange?.();
    }
    // Scan into a scratch world and a new report; the live ones stay as they are meanwhile.
    const report: ReconstructionReport = { state: 'running', startedAt, finishedAt: null, error: null, entries: [] };
    const failed: PodVolume[] = [];
    const scratch = asw.newEmpty();
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
      finishedAt: clock.now(),
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
      this.report = { ...this.report, state: 'done', finishedAt: clock.now(), error: report.error, entries: this.report.entries };
      this.openEntries = null;
      this.options.onChange?.();
      return result(report.error, { added: [], removed: [], changed: [] });
    }

    const pending: UniqueVolumeName[] = [];
    for (const name of names) {
      const previous = asw.getAttachability(name);
      if (previous === null || previous === 'Uncertain') {
        pending.push(name);
        continue;
      }
      scratch.updateReconstructedVolumeAttachability(name, previous === 'True');
      const devicePath = asw.getAttachedVolume(name)?.devicePath ?? '';
      if (devicePath !== '') scratch.updateReconstructedDevicePath(name, devicePath);
    }
    const resolved = pending.length === 0 || (await this.applyNodeStatus(scratch, () => pending));

    // The swap: synchronous from here on.
    report.state = 'done';
    report.finishedAt = clock.now();
    this.report = report;
    this.openReportEntries = target.open;
    this.openEntries = null;
    this.volumesFailedReconstruction = failed;
    this.volumesNeedUpdateFromNodeStatus = resolved ? [] : pending;
    this.options.onChange?.();
    const diff = asw.replaceContent(scratch);
    // Re-plan everything: the refresh is also when every plan's lastPlannedAt moves on.
    this.options.onActualStateReplaced();
    const counts = { added: diff.added.length, removed: diff.removed.length, changed: diff.changed.length };
    if (counts.added + counts.removed + counts.changed > 0) this.log.info('Actual state of world rebuilt from disk', counts);
    else this.log.debug('Actual state of world rebuilt from disk: unchanged');
    return result(null, diff);
  }

  // THE SCAN

  /**
   * The scan and reconstruction shared by {@link reconstructVolumes} and the plan-only rebuild:
   * fills `target.asw` and `target.report`, and returns the unique name of every reconstructed
   * pod volume (duplicates kept, one per pod) and of every device-only volume a plugin listed, or
   * null when `pods/` could not be read.
   */
  private async reconstructInto(target: ReconstructionTarget): Promise<UniqueVolumeName[] | null> {
    let podVolumes: PodVolume[];
    try {
      podVolumes = await getVolumesFromPodDir(this.options.podsDir, this.options.hostFs);
    } catch (err) {
      this.log.error(`Cannot get volumes from disk, skip sync states for volume reconstruction: ${errorMessage(err)}`);
      target.report.error = errorMessage(err);
      return null;
    }
    target.scanned = podVolumes.length;

    // Each volume is rebuilt by its plugin, up to `reconstructConcurrency` at once (plugins read
    // the disk and the mount table, which is I/O wait, not work); the outcomes are then taken in
    // scan order, so the report and the actual state come out as with one volume at a time. The
    // skip test reads the world before any volume is added to it, as the serial loop did (the
    // volumes are added in updateStates, after the loop).
    const scannedAt = this.options.clock.now();
    const entries = podVolumes.map((volume) => newReconstructionEntry(volume, scannedAt));
    const skipped = podVolumes.map((volume) => target.asw.volumeExistsWithSpecName(volume.podName, volume.volumeSpecName));
    const outcomes = await mapConcurrently(podVolumes, reconstructConcurrency, (volume, i) =>
      skipped[i] === true ? Promise.resolve(null) : reconstructVolume(volume, this.options.pluginMgr).then((v) => ({ ok: true as const, v }), (err: unknown) => ({ ok: false as const, err })),
    );
    const groups = new Map<UniqueVolumeName, { first: ReconstructedVolume; pods: ReconstructedVolume[] }>();
    const names: UniqueVolumeName[] = [];
    for (const [i, volume] of podVolumes.entries()) {
      const entry = entries[i] as ReconstructionEntry;
      const outcome = outcomes[i] ?? null;
      target.report.entries.push(entry);
      if (outcome === null) {
        entry.outcome = 'skipped';
        entry.resolvedAt = entry.scannedAt;
        continue;
      }
      if (!outcome.ok) {
        const err = outcome.err;
        this.options.metrics?.reconstructVolumeOperation(true);
        this.log.info('Could not construct volume information', { podName: volume.podName, volumeSpecName: volume.volumeSpecName, err: errorMessage(err) });
        target.onFailed(volume);
        entry.outcome = 'failed';
        entry.error = errorMessage(err);
        target.open++;
        continue;
      }
      const reconstructed = outcome.v;
      this.options.metrics?.reconstructVolumeOperation(false);
      entry.volumeName = reconstructed.volumeName;
      target.open++;
      const group = groups.get(reconstructed.volumeName) ?? { first: reconstructed, pods: [] };
      group.pods.push(reconstructed);
      groups.set(reconstructed.volumeName, group);
      names.push(reconstructed.volumeName);
    }
    if (groups.size > 0) await this.updateStates(target.asw, groups);
    // Beyond the kubelet: volumes only a plugin's global directories still know of. Not in
    // plan-only mode, which predicts the kubelet beside it (that one never looks there).
    if (!this.options.planOnly) {
      const deviceVolumes = await reconstructDeviceVolumes(this.options.pluginMgr, this.log);
      names.push(...addReconstructedDeviceVolumes(target.asw, this.options.nodeName, deviceVolumes, this.log));
    }
    return names;
  }

  private finishReport(): void {
    this.report.state = 'done';
    this.report.finishedAt = this.options.clock.now();
    this.options.onChange?.();
  }

  private async updateStates(
    asw: ActualStateOfWorld,
    groups: Map<UniqueVolumeName, { first: ReconstructedVolume; pods: ReconstructedVolume[] }>,
  ): Promise<void> {
    for (const [volumeName, { first, pods }] of groups) {
      try {
        asw.addAttachUncertainReconstructedVolume(volumeName, first.volumeSpec, this.options.nodeName, first.devicePath);
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

  // NODE STATUS

  /**
   * Fills device paths and attachability of reconstructed volumes from `node.status.volumesAttached`.
   * On a GET error the list is kept (nothing is unmounted meanwhile). Without an API client
   * (standalone), the kubelet simply clears the list; here attachability is then resolved from
   * the plugin, so that a standalone agent that attached a volume itself also detaches it.
   *
   * Standalone it completes synchronously and returns undefined: the first pass after a restart
   * calls it right after starting an operation for every volume, and an await there would queue
   * the rest of the pass behind every microtask those operations queued (measured 320 ms at
   * 10,000 volumes, during which the next pass cannot start).
   */
  updateReconstructedFromNodeStatus(): Promise<void> | undefined {
    if (this.options.kubeClient?.getNode === undefined) {
      this.applyStandaloneAttachability(this.options.asw, this.volumesNeedUpdateFromNodeStatus);
      this.volumesNeedUpdateFromNodeStatus = [];
      return undefined;
    }
    return this.applyNodeStatus(this.options.asw, () => this.volumesNeedUpdateFromNodeStatus).then((resolved) => {
      if (resolved) this.volumesNeedUpdateFromNodeStatus = [];
    });
  }

  /** Standalone: the attachability of each of `names` from its plugin (there is no Node to read). */
  private applyStandaloneAttachability(asw: ActualStateOfWorld, names: readonly UniqueVolumeName[]): void {
    for (const volumeName of names) {
      const av = asw.getAttachedVolume(volumeName);
      if (av === null) continue;
      let attachable: boolean;
      try {
        attachable = this.options.pluginMgr.findAttachablePluginBySpec(av.volumeSpec) !== null;
      } catch {
        attachable = false;
      }
      asw.updateReconstructedVolumeAttachability(volumeName, attachable);
    }
    this.log.info('Skipped reconstruction of DevicePaths from node.status in standalone mode');
  }

  /**
   * The work of {@link updateReconstructedFromNodeStatus} on any world: resolves the volumes
   * `names()` lists (read after the Node GET) and returns true, or returns false when the GET
   * failed (nothing changed).
   */
  private async applyNodeStatus(asw: ActualStateOfWorld, names: () => readonly UniqueVolumeName[]): Promise<boolean> {
    const getNode = this.options.kubeClient?.getNode;
    if (getNode === undefined) {
      this.applyStandaloneAttachability(asw, names());
      return true;
    }
    let node;
    try {
      node = await getNode(this.options.nodeName);
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

  // CLEANUP OF VOLUMES THAT FAILED

  /**
   * One-shot cleanup of volumes that failed reconstruction and are not desired: TearDown through
   * the executor (so the per-volume lock holds). Desired ones are left to the normal mount.
   * Unlike the kubelet, volumes of a pod with unresolved volumes are neither cleaned up nor
   * dropped: whether that pod wants them is unknown, so they wait in the list for a later pass.
   */
  cleanOrphanVolumes(): void {
    if (this.volumesFailedReconstruction.length === 0) return;
    const held: PodVolume[] = [];
    for (const volume of this.volumesFailedReconstruction) {
      if (this.options.dsw.volumeExistsWithSpecName(volume.podName, volume.volumeSpecName)) continue;
      if (this.options.unresolvedPodVolumes.hasUnresolved(volume.podName)) {
        held.push(volume);
        continue;
      }
      this.cleanupMounts(volume);
    }
    this.volumesFailedReconstruction = held;
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
      this.options.operationExecutor.unmountVolume(mv, this.options.asw, this.options.podsDir);
      this.options.metrics?.forceCleanedFailedVolumeOperation(false);
    } catch (err) {
      this.options.metrics?.forceCleanedFailedVolumeOperation(true);
      this.log.error(`volumeHandler.UnmountVolumeHandler for UnmountVolume failed: ${errorMessage(err)}`);
    }
  }

  // THE REPORT

  /**
   * Current reconstruction report (a copy), with `keptBecause` of every open entry whose pod has
   * unresolved volumes.
   */
  getReconstructionReport(): ReconstructionReport {
    const unresolved = this.options.unresolvedPodVolumes;
    return {
      ...this.report,
      entries: this.report.entries.map((e) => ({ ...e, keptBecause: e.resolvedAt === null ? unresolved.describe(e.podName) : null })),
    };
  }

  /**
   * Updates report entries from the actual state (confirmed mounted / torn down) and from
   * finished cleanup operations: `change` says what changed (a volume's actual state, or an
   * operation finished), and only the open entries it can resolve are looked at (every open
   * entry at the first call after the report is done). Cheap once every entry is resolved.
   */
  refreshReconstructionReport(change: ReportChange): void {
    // While the scan is still adding volumes to the actual state, "not mounted" only means "not added yet".
    if (this.openReportEntries === 0 || this.report.state !== 'done') return;
    const { asw, clock } = this.options;
    const now = clock.now();
    let resolved = 0;
    if (this.openEntries === null) {
      this.openEntries = new OpenReportEntries(this.report);
      resolved += this.openEntries.resolveAll(asw, now);
    }
    resolved += this.openEntries.resolveChange(change, asw, now);
    this.openReportEntries -= resolved;
    if (resolved > 0) this.options.onChange?.();
  }
}
