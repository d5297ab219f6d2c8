/**
 * The volume manager (kubelet `volumemanager/volume_manager.go`): wires the desired and actual
 * states of world, the populator, the reconciler, the operation executor and reconstruction, and
 * exposes read-only views for snapshots plus the few control hooks operators need (retry now,
 * force an attach verification, and the checked operator actions of operator-actions.ts).
 *
 * The worlds, the operations table, the executor, the populator and the reconciler are private:
 * callers read the worlds through {@link DesiredStateView} / {@link ActualStateView} and act
 * through the methods below. The engine's own tests and benchmarks reach the parts through
 * `volumeManagerInternals` (internals.ts), which the public surface (index.ts) does not export.
 */
import type { Clock, TimerHandle } from '../clock/clock.ts';
import {
  desiredStateOfWorldPopulatorLoopSleepPeriodMs,
  podAttachAndMountRetryIntervalMs,
  podAttachAndMountTimeoutMs,
  reconcilerLoopSleepPeriodMs,
  waitForAttachTimeoutMs,
} from '../kubelet-constants.ts';
import { NestedPendingOperations, type ClearBackoffResult, type PendingOperationView } from '../operationexecutor/nested-pending-operations.ts';
import { OperationExecutor, type OperationRecord } from '../operationexecutor/operation-executor.ts';
import { OperationHistory, type OperationHistoryOptions, type OperationHistoryView } from '../operationexecutor/operation-history.ts';
import { PlanningExecutor, type PlannedOperation } from '../operationexecutor/planning-executor.ts';
import {
  OperationGenerator,
  type BlockVolumePathHandler,
  type Subpather,
} from '../operationexecutor/operation-generator.ts';
import type { MountedVolume } from '../operationexecutor/types.ts';
import type { EventRecorder } from '../volume/events.ts';
import { defaultFeatureGates, type FeatureGates } from '../volume/features.ts';
import { VolumeGidAnnotationKey, type Pod } from '../volume/k8s-types.ts';
import type { VolumeKubeClient } from '../volume/kube-client.ts';
import { discardLogger, type Logger } from '../volume/logger.ts';
import { VolumePluginMgr, type VolumeHost, type VolumePlugin } from '../volume/plugins.ts';
import {
  EmptyNodeName,
  EmptyUniquePodName,
  uniquePodName,
  type NodeName,
  type UniquePodName,
  type UniqueVolumeName,
} from '../volume/types.ts';
import { goSlice } from '../volume/util/go-format.ts';
import { nodeHostFs, type HostFs } from '../volume/util/host-fs.ts';
import { newSELinuxLabelTranslator, type SELinuxLabelTranslator } from '../volume/util/selinux.ts';
import { ActualStateOfWorld, type ActualVolumeView, type UncertainEntry } from './cache/actual-state-of-world.ts';
import { DesiredStateOfWorld, type DesiredVolumeView } from './cache/desired-state-of-world.ts';
import { registerVolumeManagerInternals } from './internals.ts';
import { getVolumeCount, type VolumeCount } from './metrics.ts';
import {
  OperatorActions,
  type ForceUnmountRequest,
  type ForceUnmountResult,
  type OperatorRateLimiter,
  type PodSourceProbe,
  type RetryOperationRequest,
  type RetryOperationResult,
} from './operator-actions.ts';
import { DesiredStateOfWorldPopulator, getPodVolumeNames } from './populator/desired-state-of-world-populator.ts';
import type { PodManager, PodStateProvider, SourcesReady } from './populator/pod-source.ts';
import { PlanOnlyModeError } from './reconciler/plan-only.ts';
import { Reconciler } from './reconciler/reconciler.ts';
import type { ActualStateRefresh, ReconcilerMetrics } from './reconciler/reconstruct.ts';
import type { ReconstructionReport } from './reconciler/reconstruct-report.ts';
import type { ActualStateView, DesiredStateView } from './state-views.ts';

/** Result of one batched attach verification. */
export interface AttachVerificationResult {
  startedAt: number;
  finishedAt: number;
  checked: UniqueVolumeName[];
  foundDetached: UniqueVolumeName[];
  errors: string[];
}

/** The fewest departed pods' namespaces kept before pruning (a few KB). */
const minDepartedPodsPruneAt = 256;

export class WaitForVolumesError extends Error {
  override readonly name = 'WaitForVolumesError';
}

export function isWaitForVolumesError(err: unknown): err is WaitForVolumesError {
  return err instanceof WaitForVolumesError;
}

export interface VolumeManagerOptions {
  nodeName: NodeName;
  /** The kubelet root dir: `pods/` and `plugins/` live below it. */
  rootDir: string;
  plugins: readonly VolumePlugin[];
  /** The host handed to plugins; built from rootDir when absent. */
  volumeHost?: VolumeHost;
  podManager: PodManager;
  podStateProvider: PodStateProvider;
  sourcesReady: SourcesReady;
  kubeClient: VolumeKubeClient;
  clock: Clock;
  controllerAttachDetachEnabled: boolean;
  reconcilerLoopPeriodMs?: number;
  populatorLoopPeriodMs?: number;
  /** The populator's period until its first loop with sources ready (`pollPeriodMs`); default the loop period. */
  populatorPollPeriodMs?: number;
  waitForAttachTimeoutMs?: number;
  /** Period of batched attach verification; 0 (default) disables the timer. */
  attachVerifyPeriodMs?: number;
  featureGates?: FeatureGates;
  seLinuxTranslator?: SELinuxLabelTranslator;
  recorder?: EventRecorder;
  hostFs?: HostFs;
  blockPathHandler?: BlockVolumePathHandler;
  subpather?: Subpather;
  logger?: Logger;
  metrics?: ReconcilerMetrics & { observeOverallMount?(pluginName: string, seconds: number): void };
  /** Finished-operation records kept for views (default 256). */
  maxOperationRecords?: number;
  /** Bounds of the failing operations' history (operation-history.ts defaults). */
  operationHistory?: OperationHistoryOptions;
  /** Receives every finished-operation record (metrics, logs). */
  onOperationRecord?: (record: OperationRecord) => void;
  /**
   * Plan-only mode, for an agent that runs beside a real kubelet (docs/engine.md, "Plan-only
   * mode"): nothing is ever mounted, unmounted, attached, detached or removed. The desired state
   * is populated as usual; the actual state is rebuilt from disk at start and by
   * {@link VolumeManager.refreshActualState}; the reconciler's operations are recorded as
   * {@link PlannedOperation}s ({@link VolumeManager.getPlannedOperations}) instead of run.
   * `controllerAttachDetachEnabled` should then be the kubelet's (the node annotation
   * `volumes.kubernetes.io/controller-managed-attach-detach`).
   */
  planOnly?: boolean;
}

export class VolumeManager {
  readonly nodeName: NodeName;
  /** True in plan-only mode (see {@link VolumeManagerOptions.planOnly}). */
  readonly planOnly: boolean;
  private readonly pluginMgr: VolumePluginMgr;
  private readonly dsw: DesiredStateOfWorld;
  private readonly asw: ActualStateOfWorld;
  private readonly pendingOperations: NestedPendingOperations;
  private readonly operationExecutor: OperationExecutor;
  private readonly populator: DesiredStateOfWorldPopulator;
  private readonly reconciler: Reconciler;
  /** Plan-only mode: receives the reconciler's operations; null otherwise. */
  private readonly planner: PlanningExecutor | null;
  private readonly options: VolumeManagerOptions;
  private readonly log: Logger;
  private readonly podsDir: string;
  private readonly records: OperationRecord[] = [];
  /** Failing operations' attempts per key, unaffected by "retry now" (operation-history.ts). */
  private readonly history: OperationHistory;
  private readonly listeners = new Set<() => void>();
  /** {@link pruneDepartedPods} runs once the desired state remembers more departed pods than this. */
  private departedPodsPruneAt = minDepartedPodsPruneAt;
  private readonly recordListeners = new Set<(record: OperationRecord) => void>();
  private readonly operatorActions: OperatorActions;
  private lastAttachVerification: AttachVerificationResult | null = null;
  private verifyTimer: TimerHandle | null = null;
  private started = false;

  constructor(opts: VolumeManagerOptions) {
    this.options = opts;
    this.nodeName = opts.nodeName;
    this.log = opts.logger ?? discardLogger;
    this.podsDir = `${opts.rootDir}/pods`;
    const host: VolumeHost = opts.volumeHost ?? {
      getPodsDir: () => this.podsDir,
      getPodVolumeDir: (uid, plugin, name) => `${this.podsDir}/${uid}/volumes/${plugin}/${name}`,
      getPodVolumeDeviceDir: (uid, plugin) => `${this.podsDir}/${uid}/volumeDevices/${plugin}`,
      getPluginDir: (plugin) => `${opts.rootDir}/plugins/${plugin}`,
      getNodeName: () => opts.nodeName,
    };
    this.pluginMgr = new VolumePluginMgr(opts.plugins, host);
    const gates = opts.featureGates ?? defaultFeatureGates;
    const translator = opts.seLinuxTranslator ?? newSELinuxLabelTranslator(false);
    this.dsw = new DesiredStateOfWorld({ pluginMgr: this.pluginMgr, seLinuxTranslator: translator, featureGates: gates, clock: opts.clock });
    this.asw = new ActualStateOfWorld({ nodeName: opts.nodeName, pluginMgr: this.pluginMgr, seLinuxEnabled: gates.SELinuxMountReadWriteOncePod });
    this.history = new OperationHistory(opts.operationHistory);
    this.pendingOperations = new NestedPendingOperations({
      clock: opts.clock,
      exponentialBackOffOnError: true,
      logger: {
        error: (msg) => {
          this.log.error(msg);
        },
        info: (msg) => {
          this.log.info(msg);
        },
      },
      onChange: () => {
        this.notify();
      },
    });
    const generator = new OperationGenerator({
      pluginMgr: this.pluginMgr,
      clock: opts.clock,
      kubeClient: opts.kubeClient,
      ...(opts.recorder !== undefined ? { recorder: opts.recorder } : {}),
      ...(opts.blockPathHandler !== undefined ? { blockPathHandler: opts.blockPathHandler } : {}),
      ...(opts.subpather !== undefined ? { subpather: opts.subpather } : {}),
      ...(opts.metrics?.observeOverallMount !== undefined ? { observeOverallMount: opts.metrics.observeOverallMount.bind(opts.metrics) } : {}),
      logger: this.log,
    });
    this.operationExecutor = new OperationExecutor({
      generator,
      pendingOperations: this.pendingOperations,
      clock: opts.clock,
      readOnly: opts.planOnly === true,
      onOperationRecord: (record) => {
        this.onRecord(record);
      },
    });
    this.planOnly = opts.planOnly === true;
    this.planner = this.planOnly
      ? new PlanningExecutor({
          clock: opts.clock,
          logger: this.log,
          onChange: () => {
            this.notify();
          },
        })
      : null;
    this.populator = new DesiredStateOfWorldPopulator({
      dsw: this.dsw,
      asw: this.asw,
      podManager: opts.podManager,
      podStateProvider: opts.podStateProvider,
      kubeClient: opts.kubeClient,
      pluginMgr: this.pluginMgr,
      clock: opts.clock,
      loopSleepDurationMs: opts.populatorLoopPeriodMs ?? desiredStateOfWorldPopulatorLoopSleepPeriodMs,
      ...(opts.populatorPollPeriodMs !== undefined ? { pollPeriodMs: opts.populatorPollPeriodMs } : {}),
      logger: this.log,
    });
    this.reconciler = new Reconciler({
      // One record of the pods whose volumes could not be resolved: the populator writes it, the
      // reconciler keeps those pods' mounts (kubernetes#120150).
      unresolvedPodVolumes: this.populator.getUnresolvedPodVolumes(),
      nodeName: opts.nodeName,
      dsw: this.dsw,
      asw: this.asw,
      // In plan-only mode the reconciler never holds the executor that runs operations.
      operationExecutor: this.planner ?? this.operationExecutor,
      ...(this.planner !== null ? { planner: this.planner } : {}),
      pluginMgr: this.pluginMgr,
      clock: opts.clock,
      podsDir: this.podsDir,
      hostFs: opts.hostFs ?? nodeHostFs,
      populatorHasAddedPods: () => this.populator.hasAddedPods(),
      controllerAttachDetachEnabled: opts.controllerAttachDetachEnabled,
      loopSleepDurationMs: opts.reconcilerLoopPeriodMs ?? reconcilerLoopSleepPeriodMs,
      waitForAttachTimeoutMs: opts.waitForAttachTimeoutMs ?? waitForAttachTimeoutMs,
      kubeClient: opts.kubeClient,
      logger: this.log,
      ...(opts.metrics !== undefined ? { metrics: opts.metrics } : {}),
      onChange: () => {
        this.notify();
      },
    });
    this.dsw.onChange((volumeName) => {
      this.reconciler.markDirty(volumeName);
      this.reconciler.kick();
      this.pruneDepartedPods();
      this.notify();
    });
    this.dsw.onPodErrorsChange(() => {
      this.notify();
    });
    this.asw.onChange((volumeName) => {
      this.reconciler.markDirty(volumeName);
      this.reconciler.refreshReconstructionReport({ volumeName });
      this.reconciler.kick();
      this.notify();
    });
    this.operatorActions = new OperatorActions({
      dsw: this.dsw,
      asw: this.asw,
      pendingOperations: this.pendingOperations,
      executor: this.operationExecutor,
      clock: opts.clock,
      podsDir: this.podsDir,
      sourcesReady: () => opts.sourcesReady.allReady(),
      reconcilerStatesHasBeenSynced: () => this.reconciler.statesHasBeenSynced(),
      reconstructionReport: () => this.reconciler.getReconstructionReport(),
      clearBackoff: (volumeName, podName) => this.retryNow(volumeName, podName),
      onOperationRecord: (listener) => this.onOperationRecord(listener),
    });
    registerVolumeManagerInternals(this, {
      pluginMgr: this.pluginMgr,
      dsw: this.dsw,
      asw: this.asw,
      pendingOperations: this.pendingOperations,
      operationExecutor: this.operationExecutor,
      populator: this.populator,
      reconciler: this.reconciler,
    });
  }

  // LIFECYCLE

  /** Starts the populator, then reconstruction and the reconciler loop (as the kubelet's Run). */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.populator.start(this.options.sourcesReady);
    this.reconciler.start();
    // Plan-only mode never verifies attachments itself (see verifyAttachedVolumes).
    const period = this.planOnly ? 0 : (this.options.attachVerifyPeriodMs ?? 0);
    if (period > 0) this.scheduleVerification(period);
    this.log.info('Starting Kubelet Volume Manager');
  }

  /** Stops loops; running operations are not cancelled (see {@link waitForOperations}). */
  async stop(): Promise<void> {
    if (this.verifyTimer !== null) this.options.clock.clearTimeout(this.verifyTimer);
    this.verifyTimer = null;
    await Promise.all([this.populator.stop(), this.reconciler.stop()]);
  }

  /** Resolves when no operation is running. */
  waitForOperations(): Promise<void> {
    return this.pendingOperations.wait();
  }

  /** Pods changed in a source: run a populator loop now rather than at the next period. */
  podsChanged(): void {
    this.populator.kick();
  }

  /**
   * `ReprocessPod`: the pod's volumes are processed again at the next populator loop (remountable
   * volumes marked for SetUp, claims re-resolved), as after a pod sync of the kubelet.
   */
  reprocessPod(podName: UniquePodName): void {
    this.populator.reprocessPod(podName);
  }

  /**
   * Registers a listener called after any change of what the views below answer: either world,
   * the pod errors, the operations table, the planned operations, the reconstruction report, the
   * reconciler's sync flag and the last attach verification. Views subscribe here; none needs to
   * poll. Called synchronously, from inside the change: a listener takes note (marks itself dirty,
   * schedules work) and reads the views later.
   */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Registers a listener called with every finished-operation record; returns the unsubscribe function. */
  onOperationRecord(listener: (record: OperationRecord) => void): () => void {
    this.recordListeners.add(listener);
    return () => this.recordListeners.delete(listener);
  }

  // KUBELET API

  /**
   * `WaitForAttachAndMount`: polls every 300 ms (immediately first) up to 2m3s until every volume
   * the pod's containers use is Mounted, failing early with the pod's errors.
   */
  async waitForAttachAndMount(pod: Pod, timeoutMs = podAttachAndMountTimeoutMs): Promise<void> {
    const expected = expectedVolumes(pod);
    if (expected.length === 0) return;
    const podName = uniquePodName(pod.metadata.uid ?? '');
    this.populator.reprocessPod(podName);
    const cause = await this.poll(timeoutMs, () => {
      const errs = this.dsw.popPodErrors(podName);
      if (errs.length > 0) return errs.join('; ');
      return this.getUnmountedVolumes(podName, expected).length === 0 ? true : false;
    });
    if (cause === null) return;
    const unmounted = this.getUnmountedVolumes(podName, expected);
    if (unmounted.length === 0) return;
    const unattached = this.dsw
      .getVolumesToMount()
      .filter((v) => v.podName === podName && v.pluginIsAttachable && !this.asw.isVolumeAttached(v.volumeName))
      .map((v) => v.outerVolumeSpecName)
      .sort();
    const inDsw = new Set(this.dsw.getVolumesToMount().filter((v) => v.podName === podName).map((v) => v.outerVolumeSpecName));
    const notInDsw = [...new Set(expected)].filter((n) => !inDsw.has(n)).sort();
    throw new WaitForVolumesError(
      `unmounted volumes=${goSlice(unmounted)}, unattached volumes=${goSlice(unattached)}, failed to process volumes=${goSlice(notInDsw)}: ${cause}`,
    );
  }

  /** `WaitForUnmount`: polls until no volume of the pod is Mounted. */
  async waitForUnmount(pod: Pod, timeoutMs = podAttachAndMountTimeoutMs): Promise<void> {
    const podName = uniquePodName(pod.metadata.uid ?? '');
    this.populator.reprocessPod(podName);
    const cause = await this.poll(timeoutMs, () => {
      const errs = this.dsw.popPodErrors(podName);
      if (errs.length > 0) return errs.join('; ');
      return this.asw.getMountedVolumesForPod(podName).length === 0;
    });
    if (cause === null) return;
    const mounted = this.asw.getMountedVolumesForPod(podName).map((m) => m.outerVolumeSpecName).sort();
    if (mounted.length === 0) return;
    throw new WaitForVolumesError(`mounted volumes=${goSlice(mounted)}: ${cause}`);
  }

  /** Mounted volumes of a pod by outer (pod) volume name. */
  getMountedVolumesForPod(podName: UniquePodName): Map<string, MountedVolume> {
    return new Map(this.asw.getMountedVolumesForPod(podName).map((m) => [m.outerVolumeSpecName, m]));
  }

  /** Mounted and uncertain volumes of a pod by outer volume name. */
  getPossiblyMountedVolumesForPod(podName: UniquePodName): Map<string, MountedVolume> {
    return new Map(this.asw.getPossiblyMountedVolumesForPod(podName).map((m) => [m.outerVolumeSpecName, m]));
  }

  hasPossiblyMountedVolumesForPod(podName: UniquePodName): boolean {
    return this.asw.getPossiblyMountedVolumesForPod(podName).length > 0;
  }

  /**
   * `GetVolumesInUse`: sorted, de-duplicated attachable volumes of both worlds — reported in use
   * as soon as the decision to attach is made, until the volume is safely unmounted.
   */
  getVolumesInUse(): UniqueVolumeName[] {
    const names = new Set<UniqueVolumeName>();
    for (const v of this.dsw.getVolumesToMount()) if (v.pluginIsAttachable) names.add(v.volumeName);
    for (const v of this.asw.getAttachedVolumes()) if (v.pluginIsAttachable) names.add(v.volumeName);
    return [...names].sort();
  }

  reconcilerStatesHasBeenSynced(): boolean {
    return this.reconciler.statesHasBeenSynced();
  }

  volumeIsAttached(volumeName: UniqueVolumeName): boolean {
    return this.asw.isVolumeAttached(volumeName);
  }

  /** After a successful node-status update: the volumes now in `node.status.volumesInUse`. */
  markVolumesAsReportedInUse(volumes: readonly string[]): void {
    this.dsw.markVolumesReportedInUse(volumes);
  }

  /** Numeric gid annotations of the pod's mounted volumes not already in its supplemental groups. */
  getExtraSupplementalGroupsForPod(pod: Pod): number[] {
    const podName = uniquePodName(pod.metadata.uid ?? '');
    const existing = new Set(pod.spec.securityContext?.supplementalGroups ?? []);
    const out: number[] = [];
    for (const mv of this.asw.getMountedVolumesForPod(podName)) {
      const gid = mv.volumeGidValue === '' ? (mv.volumeSpec.persistentVolume?.metadata.annotations?.[VolumeGidAnnotationKey] ?? '') : mv.volumeGidValue;
      const n = Number.parseInt(gid, 10);
      if (gid !== '' && Number.isInteger(n) && String(n) === gid.trim() && !existing.has(n) && !out.includes(n)) out.push(n);
    }
    return out;
  }

  // VIEWS

  /** The desired state of world, read-only. */
  desiredState(): DesiredStateView {
    return this.dsw;
  }

  /** The actual state of world, read-only. */
  actualState(): ActualStateView {
    return this.asw;
  }

  /** `volume_manager_total_volumes`: volumes of each world by plugin, counted now (see metrics.ts). */
  getVolumeCount(): VolumeCount {
    return getVolumeCount(this.dsw, this.asw, this.pluginMgr);
  }

  getDesiredVolumes(): DesiredVolumeView[] {
    return this.dsw.getVolumes();
  }

  getActualVolumes(): ActualVolumeView[] {
    return this.asw.getVolumes();
  }

  /** The uncertain attachments, device mounts and pod mounts (`ActualStateOfWorld.getUncertainEntries`). */
  getUncertainVolumes(): UncertainEntry[] {
    return this.asw.getUncertainEntries();
  }

  getPendingOperations(): PendingOperationView[] {
    return this.pendingOperations.list();
  }

  /**
   * The history of operations that failed: first failure, attempts in all (a "retry now" does
   * not reset it), the last attempts, the success. Views are replaced, never mutated, when they
   * change; a change is notified through {@link onChange} (the table's completion follows it).
   */
  getOperationHistory(): OperationHistoryView[] {
    return this.history.list();
  }

  getReconstructionReport(): ReconstructionReport {
    return this.reconciler.getReconstructionReport();
  }

  /**
   * Plan-only mode: the operations the kubelet still has to perform, by volume, then chain step,
   * pod and operation name. Always empty outside plan-only mode. Listeners registered with
   * {@link onChange} are called after every planning round that changed it.
   */
  getPlannedOperations(): PlannedOperation[] {
    return this.planner?.list() ?? [];
  }

  /**
   * Listed pods whose volumes could not be resolved, with `<volume>: <error>` per volume: their
   * mounts are kept (see lib/volumemanager/cache/unresolved-pod-volumes.ts).
   */
  getPodsWithUnresolvedVolumes(): Map<UniquePodName, string> {
    const unresolved = this.populator.getUnresolvedPodVolumes();
    const out = new Map<UniquePodName, string>();
    for (const podName of unresolved.pods()) {
      const why = unresolved.describe(podName);
      if (why !== null) out.set(podName, why);
    }
    return out;
  }

  /**
   * The namespace of a pod that left the desired state (see
   * `DesiredStateOfWorld.getDepartedPodNamespace`): views of the actual state show it for the
   * mounts the pod still has. Undefined for a pod never desired since the start (found by
   * reconstruction only); a desired pod's namespace is in its pod object.
   */
  getDepartedPodNamespace(podName: UniquePodName): string | undefined {
    return this.dsw.getDepartedPodNamespace(podName);
  }

  /** Current pod errors (not cleared). */
  getPodErrors(): Map<UniquePodName, string[]> {
    return new Map(this.dsw.getPodsWithErrors().map((p) => [p, this.dsw.getPodErrors(p)]));
  }

  /** The most recent finished operations, oldest first. */
  getRecentOperationRecords(): readonly OperationRecord[] {
    return this.records;
  }

  getLastAttachVerification(): AttachVerificationResult | null {
    return this.lastAttachVerification;
  }

  // CONTROL HOOKS

  /**
   * Plan-only mode: rebuilds the actual state from disk now (the kubelet root's `pods/` dir
   * through the host fs, the mount table through the plugins' mounter), replacing what was
   * there; the plan follows at the next reconciler pass. Run it periodically and on resync.
   * Never changes anything on disk. Rejects with `PlanOnlyModeError` outside plan-only mode.
   */
  refreshActualState(): Promise<ActualStateRefresh> {
    return this.reconciler.refreshActualState();
  }

  /**
   * Retry now: clears the backoff of the pending-operation key (volume, pod) so the next pass
   * retries at once. Never bypasses per-volume serialisation: a running key is refused.
   */
  retryNow(volumeName: UniqueVolumeName, podName: UniquePodName | null): ClearBackoffResult {
    const result = this.pendingOperations.clearBackoff(volumeName, podName ?? EmptyUniquePodName, EmptyNodeName);
    if (result === 'cleared') this.reconciler.kick();
    return result;
  }

  /**
   * Operator action "unmount": the forced TearDown of one pod's volume after every safety check
   * of operator-actions.ts (states synced, reconstruction done, pod gone from the desired state
   * and — read live through `ports.source` — from its source, no source error for the pod, no
   * operation on the volume, a backoff cleared only within `ports.limiter`), started through the
   * operation executor under the volume's key. Rejects with `PlanOnlyModeError` in plan-only
   * mode: the mounts are the kubelet's.
   */
  forceUnmount(request: ForceUnmountRequest, ports: { source: PodSourceProbe; limiter: OperatorRateLimiter }): Promise<ForceUnmountResult> {
    if (this.planOnly) return Promise.reject(new PlanOnlyModeError('forceUnmount is not available in plan-only mode'));
    return this.operatorActions.forceUnmount(request, ports);
  }

  /**
   * Operator action "retry now": within the per-node `limiter`, clears the backoff of the table
   * entry matching (volume, pod) with the table's own matching rules; a running entry is refused.
   * Throws `PlanOnlyModeError` in plan-only mode: the operations are the kubelet's.
   */
  retryOperation(request: RetryOperationRequest, limiter: OperatorRateLimiter): RetryOperationResult {
    if (this.planOnly) throw new PlanOnlyModeError('retryOperation is not available in plan-only mode');
    return this.operatorActions.retryOperation(request, limiter);
  }

  /**
   * Runs one batched attach verification now (one VolumesAreAttached call per plugin for all of
   * its attached volumes) and resolves with what it found. A volume found detached keeps its pod
   * entries (Uncertain): the reconciler attaches and mounts it again for the pods that still
   * want it and tears it down for the others, so no mount is forgotten. Rejects with
   * `PlanOnlyModeError` in plan-only mode.
   */
  verifyAttachedVolumes(): Promise<AttachVerificationResult> {
    if (this.planOnly) {
      // It calls VolumesAreAttached and changes the actual state: not an observer's job.
      return Promise.reject(new PlanOnlyModeError('verifyAttachedVolumes is not available in plan-only mode'));
    }
    const startedAt = this.options.clock.now();
    const attached = this.asw.getAttachedVolumes().filter((v) => v.pluginIsAttachable);
    return new Promise((resolve, reject) => {
      try {
        this.operationExecutor.verifyVolumesAreAttached(attached, this.nodeName, this.asw, (r) => {
          const result = { startedAt, finishedAt: this.options.clock.now(), ...r };
          this.lastAttachVerification = result;
          this.notify();
          resolve(result);
        });
      } catch (err) {
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }

  // INTERNALS

  private scheduleVerification(periodMs: number): void {
    this.verifyTimer = this.options.clock.setTimeout(() => {
      this.verifyAttachedVolumes()
        .catch((err: unknown) => {
          this.log.debug(`attach verification not started: ${String(err)}`);
        })
        .finally(() => {
          if (this.verifyTimer !== null) this.scheduleVerification(periodMs);
        });
    }, periodMs);
  }

  /**
   * Forgets the namespaces of departed pods that have no entry in the actual state any more (no
   * view needs them), once there are more than twice as many as after the last pruning: one walk
   * of the actual state per that many departures, so a departure costs O(1) amortized.
   */
  private pruneDepartedPods(): void {
    if (this.dsw.countDepartedPods() <= this.departedPodsPruneAt) return;
    const inActual = new Set<UniquePodName>();
    for (const mounted of this.asw.getAllMountedVolumes()) inActual.add(mounted.podName);
    this.dsw.forgetDepartedPods((podName) => inActual.has(podName));
    this.departedPodsPruneAt = Math.max(minDepartedPodsPruneAt, 2 * this.dsw.countDepartedPods());
  }

  private onRecord(record: OperationRecord): void {
    if (this.history.record(record)) this.notify();
    this.records.push(record);
    const max = this.options.maxOperationRecords ?? 256;
    if (this.records.length > max) this.records.splice(0, this.records.length - max);
    this.options.onOperationRecord?.(record);
    for (const listener of [...this.recordListeners]) listener(record);
    this.reconciler.refreshReconstructionReport({ record });
    this.reconciler.kick();
  }

  private getUnmountedVolumes(podName: UniquePodName, expected: readonly string[]): string[] {
    const mounted = new Set(this.asw.getMountedVolumesForPod(podName).map((m) => m.outerVolumeSpecName));
    return [...new Set(expected)].filter((n) => !mounted.has(n)).sort();
  }

  /**
   * Polls `condition` immediately and then every 300 ms until it returns true (→ null), a string
   * (→ that cause) or the timeout passes (→ "context deadline exceeded").
   */
  private poll(timeoutMs: number, condition: () => boolean | string): Promise<string | null> {
    const deadline = this.options.clock.now() + timeoutMs;
    return new Promise((resolve) => {
      const check = (): void => {
        const r = condition();
        if (r === true) {
          resolve(null);
          return;
        }
        if (typeof r === 'string') {
          resolve(r);
          return;
        }
        if (this.options.clock.now() >= deadline) {
          resolve('context deadline exceeded');
          return;
        }
        this.options.clock.setTimeout(check, Math.min(podAttachAndMountRetryIntervalMs, Math.max(0, deadline - this.options.clock.now())));
      };
      check();
    });
  }

  private notify(): void {
    for (const listener of this.listeners) listener();
  }
}

/** `getExpectedVolumes`: the volume names the pod's containers mount or map. */
export function expectedVolumes(pod: Pod): string[] {
  const { mounts, devices } = getPodVolumeNames(pod);
  return [...new Set([...mounts, ...devices])];
}
