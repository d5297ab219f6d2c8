/**
 * Observe mode (`--mode=observe`): the agent runs beside a real kubelet and explains its volume
 * work without doing any. This controller owns what the plan-only volume manager does not:
 *
 * - the periodic refresh (`--observe-refresh-period`, and on resync): the actual state rebuilt
 *   from the kubelet root dir and mountinfo (VolumeManager.refreshActualState), the orphan
 *   inspection, the VolumeAttachments of this node and the truth diff;
 * - the kubelet's own backoff of the pods with planned operations, read from their
 *   FailedMount/FailedAttachVolume events (at most {@link maxPodsWithEventLookups} pods per refresh);
 * - the snapshot's `observe` section;
 * - the one mutating action: the guarded cleanup of an orphaned pod directory, refused unless
 *   `--allow-orphan-cleanup` and every check of lib/observe/orphan-cleanup.ts passes (among them:
 *   nothing is unmounted while the plan has the kubelet's own teardown of the pod's volumes). "The pod is
 *   gone from the API" is decided by a live read ({@link ObserveApi.listNodePodsLive}) right
 *   before planning and again right before acting, never by the informer cache alone: a pod the
 *   informer missed (a lost watch event, a stale cache) must not look orphaned. The mount table
 *   is checked against the root dir (lib/observe/mount-table-check.ts) on every refresh, so the
 *   snapshot says why cleanup would be refused (`cleanupBlocked`), and again by every cleanup.
 *
 * Contract: nothing here writes below the kubelet root dir except that cleanup. Orphans are only
 * inspected once the API source is synced (before that every pod directory would look orphaned),
 * and a pod counts as known under its UID and, for static pods, under its mirror pod's
 * `kubernetes.io/config.mirror` hash (the UID of the static pod's directory).
 */
import { FOUND_ON_DISK, kubeletStepProgress, type Observe, type OrphanPod as ApiOrphanPod, type PlannedOperation as ApiPlannedOperation, type TruthDiffRow as ApiTruthDiffRow } from '../../lib/api/observe.ts';
import type { Clock, TimerHandle } from '../../lib/clock/clock.ts';
import type { MountInfo, MountInfoReader } from '../../lib/mount-utils/mountinfo.ts';
import type { Mounter } from '../../lib/mount-utils/mounter.ts';
import type { RecentEvent } from '../../lib/api/snapshot.ts';
import { eventObservedAt, latestBackoffPerVolume, parseKubeletBackoff, parseVolumeOperationFailure, type VolumeBackoff, type CoreEvent } from '../../lib/observe/kubelet-backoff-events.ts';
import { checkMountTableShowsRootDir } from '../../lib/observe/mount-table-check.ts';
import { cleanupOrphanPodDir, type OrphanCleanupResult } from '../../lib/observe/orphan-cleanup.ts';
import { nodeReadOnlyFs } from '../../lib/observe/pod-dir-walk.ts';
import { podHasRunningProcesses } from '../../lib/observe/pod-processes.ts';
import { inspectOrphanedPods, type OrphanInspection } from '../../lib/observe/orphan-inspector.ts';
import { diffNodeTruth, type AgentVolume, type TruthDiff } from '../../lib/observe/truth-diff.ts';
import type { VolumeAttachment } from '../../lib/observe/volume-attachment.ts';
import type { KubeSource } from '../../lib/sources/kube/index.ts';
import { errorMessage } from '../../lib/volume/errors.ts';
import { HOST_PATH_PLUGIN_NAME } from '../../lib/volume/plugins/host-path/host-path.ts';
import type { Logger } from '../../lib/volume/logger.ts';
import type { PlannedOperation, VolumeManager } from '../../lib/volumemanager/index.ts';
import { OrphanCleanupDisabledError } from '../runtime.ts';

/** The kubelet's per-pod teardown operations (a volume's unmount, a block volume's unmap). */
const KUBELET_TEARDOWN_OPERATIONS: readonly string[] = ['volume_unmount', 'unmap_volume'];

/** Pods whose events are listed per refresh (the API cost stays bounded on a node in trouble). */
const maxPodsWithEventLookups = 50;

/** The most API events kept for the snapshot's `recentEvents` (the latest ones). */
const maxObservedEvents = 200;

/** Plan operations that come before the pod's own mount of a volume (done once a pod step failed). */
const BEFORE_POD_STEP: ReadonlySet<string> = new Set(['verify_controller_attached_volume', 'volume_attach', 'mount_device', 'map_device']);

/** The annotation of a mirror pod that carries its static pod's UID (the config hash). */
export const ConfigMirrorAnnotationKey = 'kubernetes.io/config.mirror';

/** A pod as the live read reports it: its UID and, for a mirror pod, its static pod's UID. */
export interface LivePodIdentity {
  uid: string;
  /** The `kubernetes.io/config.mirror` annotation (the static pod's UID), when set. */
  mirrorOf?: string;
}

/** What the controller asks the API server besides the source's informers. */
export interface ObserveApi {
  listVolumeAttachments(nodeName: string): Promise<VolumeAttachment[]>;
  listPodEvents(namespace: string, podUid: string): Promise<CoreEvent[]>;
  /**
   * Every pod the API server has bound to the node, read live from the server (a consistent
   * read, never an informer's cache). Rejects when the server cannot answer.
   */
  listNodePodsLive(nodeName: string): Promise<LivePodIdentity[]>;
}

/** What the controller reads of the plan-only volume manager. */
export type ObservedVolumeManager = Pick<VolumeManager, 'onChange' | 'refreshActualState' | 'getPlannedOperations' | 'getDesiredVolumes' | 'getActualVolumes'>;

export interface ObserveControllerOptions {
  nodeName: string;
  /** The kubelet root dir, resolved. */
  rootDir: string;
  volumeManager: ObservedVolumeManager;
  source: KubeSource;
  api: ObserveApi;
  readMountInfo: MountInfoReader;
  /** Unmounts for the orphan cleanup (only used with `allowCleanup`). */
  mounter: Pick<Mounter, 'unmount'>;
  clock: Clock;
  refreshPeriodMs: number;
  allowCleanup: boolean;
  logger: Logger;
  /** `/proc` of the host (the running-container guard of the cleanup). */
  procRoot?: string;
  /**
   * Called after every change of {@link ObserveController.section} that the volume manager's own
   * `onChange` does not announce: a refresh, and a change of the source (pod names in the plan).
   */
  onChange: () => void;
}

export class ObserveController {
  private readonly o: ObserveControllerOptions;
  private timer: TimerHandle | null = null;
  private stopped = false;
  private running: Promise<void> | null = null;
  private refreshedAt: number | null = null;
  private refreshError: string | null = null;
  private inspection: OrphanInspection | null = null;
  private truth: TruthDiff | null = null;
  private backoffs = new Map<string, VolumeBackoff[]>();
  /** The API events last read per pod UID (the pods with planned operations). */
  private podEvents = new Map<string, CoreEvent[]>();
  private volumeAttachments: VolumeAttachment[] = [];
  /** Why a cleanup would be refused whatever the pod (the mount table is not the root dir's); null when not. */
  private cleanupBlocked: string | null = 'the mount table has not been checked against the kubelet root dir yet (first refresh pending)';
  /** The last built `recentEvents`; dropped with every read of the events. */
  private eventsCache: RecentEvent[] | null = null;
  /** The last built section; dropped on every change of the plan, the worlds or a refresh. */
  private cached: Observe | null = null;
  private readonly unsubscribe: (() => void)[] = [];

  constructor(options: ObserveControllerOptions) {
    this.o = options;
  }

  start(): void {
    this.unsubscribe.push(
      this.o.volumeManager.onChange(() => {
        this.cached = null;
      }),
      this.o.source.onChange(() => {
        this.cached = null;
        this.o.onChange();
      }),
    );
    const tick = (): void => {
      if (this.stopped) return;
      void this.refresh().finally(() => {
        if (!this.stopped) this.timer = this.o.clock.setTimeout(tick, this.o.refreshPeriodMs);
      });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const off of this.unsubscribe.splice(0)) off();
    if (this.timer !== null) this.o.clock.clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  /** One refresh; concurrent calls share the one in flight. Never throws (errors land in `refreshError`). */
  refresh(): Promise<void> {
    this.running ??= this.doRefresh().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async doRefresh(): Promise<void> {
    const { volumeManager: vm, source } = this.o;
    const errors: string[] = [];
    const refresh = await vm.refreshActualState();
    if (refresh.error !== null) errors.push(`actual state: ${refresh.error}`);
    let mountInfo: readonly MountInfo[] | null = null;
    try {
      mountInfo = await this.o.readMountInfo();
    } catch (err) {
      errors.push(`mountinfo: ${errorMessage(err)}`);
    }
    if (this.o.allowCleanup) {
      const blocked = mountInfo === null ? 'the mount table cannot be read' : await this.mountTableProblem(mountInfo);
      if (blocked !== null && blocked !== this.cleanupBlocked) this.o.logger.warn(`orphan cleanup refused until fixed: ${blocked}`);
      this.cleanupBlocked = blocked;
    }
    if (mountInfo !== null && source.isSynced()) {
      try {
        this.inspection = await inspectOrphanedPods({ rootDir: this.o.rootDir, knownPodUIDs: this.knownPodUIDs(), mountInfo, clock: this.o.clock });
      } catch (err) {
        errors.push(`orphan inspection: ${errorMessage(err)}`);
      }
    }
    try {
      this.volumeAttachments = await this.o.api.listVolumeAttachments(this.o.nodeName);
    } catch (err) {
      errors.push(`volume attachments: ${errorMessage(err)}`);
    }
    const status = source.getNode()?.status;
    this.truth = diffNodeTruth({
      nodeName: this.o.nodeName,
      rootDir: this.o.rootDir,
      agent: this.agentView(),
      ...(status === undefined ? {} : { nodeStatus: status }),
      volumeAttachments: this.volumeAttachments,
      persistentVolumes: source.listPersistentVolumes(),
      ...(mountInfo === null ? {} : { mountInfo }),
    });
    await this.refreshBackoffs(errors);
    this.refreshedAt = Math.floor(this.o.clock.now());
    this.refreshError = errors.length === 0 ? null : errors.join('; ');
    if (this.refreshError !== null) this.o.logger.warn(`observe refresh incomplete: ${this.refreshError}`);
    this.cached = null;
    this.o.onChange();
  }

  /** The kubelet's backoff per pod, from the events of the pods with planned operations. */
  private async refreshBackoffs(errors: string[]): Promise<void> {
    const uids = [...new Set(this.o.volumeManager.getPlannedOperations().flatMap((op) => (op.podUid === null ? [] : [op.podUid])))].slice(0, maxPodsWithEventLookups);
    const next = new Map<string, VolumeBackoff[]>();
    const nextEvents = new Map<string, CoreEvent[]>();
    for (const uid of uids) {
      const pod = this.o.source.getPodByUID(uid);
      const namespace = pod?.metadata.namespace;
      if (namespace === undefined) continue;
      try {
        const events = (await this.o.api.listPodEvents(namespace, uid)).filter((e) => e.involvedObject?.uid === undefined || e.involvedObject.uid === '' || e.involvedObject.uid === uid);
        nextEvents.set(uid, events);
        next.set(uid, latestBackoffPerVolume(events, { podUID: uid }));
      } catch (err) {
        errors.push(`events of pod ${namespace}/${pod?.metadata.name ?? uid}: ${errorMessage(err)}`);
        const previous = this.backoffs.get(uid);
        if (previous !== undefined) next.set(uid, previous);
        const previousEvents = this.podEvents.get(uid);
        if (previousEvents !== undefined) nextEvents.set(uid, previousEvents);
      }
    }
    this.backoffs = next;
    this.podEvents = nextEvents;
    this.eventsCache = null;
  }

  /** Why `table` is not the root dir's mount table, or null when it is (lib/observe/mount-table-check.ts). */
  private async mountTableProblem(table: readonly MountInfo[]): Promise<string | null> {
    try {
      const r = await checkMountTableShowsRootDir(this.o.rootDir, table, nodeReadOnlyFs);
      return r.ok ? null : `the mount table does not describe the kubelet root dir: ${r.reason}`;
    } catch (err) {
      return `the mount table cannot be checked against the kubelet root dir: ${errorMessage(err)}`;
    }
  }

  /**
   * Whether the API server knows the pod: the informer's cache says yes, or a live read of the
   * node's pods lists it (by UID, or as a mirror pod's static pod UID). Only the live read can
   * say no; it rejects when the server cannot be asked, which refuses the cleanup.
   */
  private async podKnownToApiLive(uid: string): Promise<boolean> {
    if (this.knownPodUIDs().has(uid)) return true;
    const live = await this.o.api.listNodePodsLive(this.o.nodeName);
    return live.some((p) => p.uid === uid || p.mirrorOf === uid);
  }

  /** Pod UIDs the API knows, plus the static pod UIDs behind mirror pods. */
  private knownPodUIDs(): Set<string> {
    const uids = new Set<string>();
    for (const pod of this.o.source.listPods()) {
      if (pod.metadata.uid !== undefined) uids.add(pod.metadata.uid);
      const mirror = pod.metadata.annotations?.[ConfigMirrorAnnotationKey];
      if (mirror !== undefined && mirror !== '') uids.add(mirror);
    }
    return uids;
  }

  private agentView(): { desired: AgentVolume[]; actual: AgentVolume[] } {
    const vm = this.o.volumeManager;
    return {
      desired: vm.getDesiredVolumes().map((v) => ({
        volumeName: v.volumeName,
        pluginName: v.pluginName,
        attachable: v.pluginIsAttachable,
        pods: v.pods.map((p) => ({ podUID: p.pod.metadata.uid ?? p.podName, specName: p.innerVolumeSpecName })),
      })),
      actual: vm.getActualVolumes().map((v) => ({
        volumeName: v.volumeName,
        pluginName: v.pluginName,
        ...(v.attachability === 'Uncertain' ? {} : { attachable: v.attachability === 'True' }),
        deviceMountState: v.deviceMountState === 'DeviceGloballyMounted' ? 'mounted' : v.deviceMountState === 'DeviceMountUncertain' ? 'uncertain' : 'not-mounted',
        pods: v.pods.map((p) => ({ podUID: p.podUID, specName: p.innerVolumeSpecName, mountState: p.mountState === 'VolumeMounted' ? 'mounted' : 'uncertain' })),
      })),
    };
  }

  // EVENTS

  /**
   * The kubelet's events of the pods with planned operations, as last read from the API server,
   * for the snapshot's `recentEvents` (observe mode records no events of its own): oldest first,
   * the latest {@link maxObservedEvents}. Each names its volume (unique name) when its message
   * does, or when the volume it names is one of the pod's desired volumes. The same array is
   * returned until the next read.
   */
  events(): RecentEvent[] {
    this.eventsCache ??= this.buildEvents();
    return this.eventsCache;
  }

  private buildEvents(): RecentEvent[] {
    const uniqueByPodVolume = new Map<string, string>();
    for (const v of this.o.volumeManager.getDesiredVolumes()) {
      for (const p of v.pods) {
        const uid = p.pod.metadata.uid ?? p.podName;
        uniqueByPodVolume.set(`${uid}|${p.outerVolumeSpecName}`, v.volumeName);
        uniqueByPodVolume.set(`${uid}|${p.innerVolumeSpecName}`, v.volumeName);
      }
    }
    const out: RecentEvent[] = [];
    for (const [uid, events] of this.podEvents) {
      for (const e of events) {
        const time = eventObservedAt(e);
        if (time === null || (e.type !== 'Normal' && e.type !== 'Warning')) continue;
        const message = typeof e.message === 'string' ? e.message : '';
        const failure = parseVolumeOperationFailure(parseKubeletBackoff(message)?.error ?? message);
        const volume = failure?.uniqueVolumeName ?? (failure === null ? undefined : uniqueByPodVolume.get(`${uid}|${failure.volumeName}`));
        const count = typeof e.count === 'number' && Number.isInteger(e.count) && e.count >= 1 ? e.count : undefined;
        out.push({
          time: Math.max(0, Math.floor(time)),
          type: e.type,
          reason: typeof e.reason === 'string' ? e.reason : '',
          podUid: uid,
          message,
          ...(volume === undefined ? {} : { volume }),
          ...(count === undefined ? {} : { count }),
        });
      }
    }
    out.sort((a, b) => a.time - b.time || compare(a.podUid ?? '', b.podUid ?? '') || compare(a.message, b.message));
    return out.slice(-maxObservedEvents);
  }

  // SNAPSHOT SECTION

  section(): Observe {
    this.cached ??= this.buildSection();
    return this.cached;
  }

  private buildSection(): Observe {
    return {
      kubeletRootDir: this.o.rootDir,
      refreshedAt: this.refreshedAt,
      refreshError: this.refreshError,
      plan: this.plan(),
      orphans: (this.inspection?.orphans ?? []).map(toApiOrphan).sort((a, b) => compare(a.podUid, b.podUid)),
      orphansTruncated: this.inspection?.truncated ?? false,
      truthDiff: (this.truth?.rows ?? []).map(toApiTruthRow).sort((a, b) => compare(a.key, b.key)),
      cleanupAllowed: this.o.allowCleanup,
      cleanupBlocked: this.o.allowCleanup ? this.cleanupBlocked : null,
    };
  }

  private plan(): ApiPlannedOperation[] {
    const vm = this.o.volumeManager;
    const innerNames = new Map<string, string>();
    const desiredPods = new Map<string, string[]>();
    for (const v of vm.getDesiredVolumes()) {
      for (const p of v.pods) innerNames.set(`${v.volumeName}|${p.podName}`, p.innerVolumeSpecName);
      desiredPods.set(v.volumeName, v.pods.flatMap((p) => (p.pod.metadata.uid === undefined ? [] : [p.pod.metadata.uid])));
    }
    const entries = new Map<string, ApiPlannedOperation>();
    const planned = vm.getPlannedOperations();
    const backoffs = new Map<PlannedOperation, ApiPlannedOperation['kubeletBackoff']>();
    for (const op of planned) backoffs.set(op, this.backoffFor(op, op.podName === null ? undefined : innerNames.get(`${op.volumeName}|${op.podName}`)));
    // The kubelet's evidence beats the agent's reading of the disk: once its event says a pod's
    // own step failed (SetUp), the steps before it (verify attached, attach, device mount) are
    // done as far as the kubelet is concerned, whatever the agent could (not) see on disk.
    const podStepFailed = new Set<string>();
    for (const op of planned) {
      const operation = backoffs.get(op)?.operation;
      if (op.podUid !== null && kubeletStepProgress(operation) === 'pod-step-failed') podStepFailed.add(op.volumeName);
    }
    const mountedPaths = this.podMountsByVolume();
    for (const op of planned) {
      const key = `${op.operationName}|${op.volumeName}|${op.podUid ?? ''}`;
      if (entries.has(key)) continue;
      const kubeletPastIt = podStepFailed.has(op.volumeName);
      if (kubeletPastIt && op.podUid === null && BEFORE_POD_STEP.has(op.operationName)) continue;
      const pod = op.podUid === null ? undefined : this.o.source.getPodByUID(op.podUid);
      const traceless = leavesNoTraceInPodDir(op.volumeName);
      // The disk cannot show such a volume set up, so the plan always has its verification and
      // mount. The pods show it: the kubelet starts a pod's containers only once every volume of
      // the pod is set up (syncPod waits in WaitForAttachAndMount), so for pods in phase Running
      // neither is outstanding.
      if (traceless && this.allRunning(op.podUid === null ? (desiredPods.get(op.volumeName) ?? []) : [op.podUid])) continue;
      const nothingMounted = this.truth !== null && op.reconstructed && op.podUid !== null && mountedPaths.get(op.volumeName)?.has(op.podUid) !== true;
      const why = describeReason(op, { kubeletPastEarlierSteps: kubeletPastIt, nothingMounted });
      entries.set(key, {
        key,
        operation: op.operationName,
        volume: op.volumeName,
        podUid: op.podUid,
        pod: pod === undefined ? null : `${pod.metadata.namespace ?? 'default'}/${pod.metadata.name}`,
        outerVolumeName: op.outerVolumeSpecName,
        reason: traceless ? `${why}; ${TRACELESS_REASON}` : why,
        since: Math.floor(op.firstPlannedAt),
        kubeletBackoff: backoffs.get(op) ?? null,
      });
    }
    return [...entries.values()].sort((a, b) => compare(a.key, b.key));
  }

  /** True when there are pods and the API source has each in phase Running. */
  private allRunning(podUids: readonly string[]): boolean {
    return podUids.length > 0 && podUids.every((uid) => this.o.source.getPodByUID(uid)?.status?.phase === 'Running');
  }

  private backoffFor(op: PlannedOperation, innerSpecName: string | undefined): ApiPlannedOperation['kubeletBackoff'] {
    const candidates = op.podUid === null ? [...this.backoffs.values()].flat() : (this.backoffs.get(op.podUid) ?? []);
    const match = candidates.find(
      (b) =>
        b.uniqueVolumeName === op.volumeName ||
        (op.outerVolumeSpecName !== null && b.volumeName === op.outerVolumeSpecName) ||
        (innerSpecName !== undefined && b.volumeName === innerSpecName),
    );
    if (match === undefined) return null;
    return {
      retryAt: Math.max(0, Math.floor(match.retryAt)),
      durationBeforeRetryMs: Math.max(0, Math.round(match.durationBeforeRetryMs)),
      error: match.error,
      observedAt: Math.max(0, Math.floor(match.observedAt)),
      basis: match.basis,
      ...(match.operation === undefined ? {} : { operation: match.operation }),
      reason: match.reason,
      count: Math.max(1, Math.floor(match.count)),
    };
  }

  /** Per unique volume name, the pod UIDs the mount table shows it mounted for (the last truth diff). */
  private podMountsByVolume(): Map<string, Set<string>> {
    const out = new Map<string, Set<string>>();
    for (const row of this.truth?.rows ?? []) {
      if (row.volumeName === null) continue;
      out.set(row.volumeName, new Set(row.podMounts.map((m) => m.podUID)));
    }
    return out;
  }

  // CLEANUP

  /**
   * The guarded cleanup of one orphaned pod directory (dry run: the plan only). Throws
   * {@link OrphanCleanupDisabledError} without `--allow-orphan-cleanup`; refusals come back as
   * results (`outcome: 'refused'`) with every check evaluated.
   */
  async cleanupOrphan(podUid: string, dryRun: boolean): Promise<OrphanCleanupResult> {
    if (!this.o.allowCleanup) throw new OrphanCleanupDisabledError('the orphan cleanup is disabled: the agent runs without --allow-orphan-cleanup');
    const vm = this.o.volumeManager;
    const result = await cleanupOrphanPodDir({
      rootDir: this.o.rootDir,
      podUID: podUid,
      dryRun,
      readMountTable: this.o.readMountInfo,
      mounter: this.o.mounter,
      clock: this.o.clock,
      guards: {
        podKnownToApi: (uid) => this.podKnownToApiLive(uid),
        podInDesiredState: (uid) => vm.getDesiredVolumes().some((v) => v.pods.some((p) => p.pod.metadata.uid === uid)),
        podHasRunningContainers: (uid) => podHasRunningProcesses(uid, this.o.procRoot),
        // What the plan says the kubelet still unmounts for the pod: its reconstruction finds
        // these volumes on disk as the agent's did, so it tears them down itself when it runs.
        kubeletTeardown: (uid) =>
          vm
            .getPlannedOperations()
            .filter((op) => op.podUid === uid && KUBELET_TEARDOWN_OPERATIONS.includes(op.operationName))
            .map((op) => `${op.operationName} ${op.volumeName}`),
        desiredStateIncomplete: () => {
          if (!this.o.source.isSynced()) return 'the API source has not listed every pod yet';
          const errors = this.o.source.sourceErrors();
          return errors.length === 0 ? null : `the API source reports errors (${errors.map((e) => e.file).join(', ')}): the pod list may be incomplete`;
        },
        // The inspection's verdict is what the dashboard shows: when it says the kubelet has to
        // unmount first, the cleanup does not unmount in its place.
        kubeletMustUnmountFirst: (uid) => {
          const orphan = this.inspection?.orphans.find((o) => o.podUID === uid);
          return orphan?.verdict === 'mounted' ? orphan.explanation : null;
        },
      },
    });
    if (!dryRun) void this.refresh();
    return result;
  }
}

/**
 * Plugins whose SetUp leaves nothing below the pod directory: the kubelet makes no
 * `volumes/<plugin>/<name>` directory for a hostPath volume and mounts nothing (the container
 * runtime binds the host path itself), so the actual state rebuilt from disk never has it.
 */
const TRACELESS_PLUGINS: readonly string[] = [HOST_PATH_PLUGIN_NAME];

/** Whether a unique volume name (`<plugin>/<name>`) is of a plugin in {@link TRACELESS_PLUGINS}. */
function leavesNoTraceInPodDir(volumeName: string): boolean {
  return TRACELESS_PLUGINS.some((plugin) => volumeName.startsWith(`${plugin}/`));
}

const TRACELESS_REASON =
  'the kubelet leaves nothing on disk for a hostPath volume, so only the pod tells: outstanding until the pod is Running (the kubelet starts containers only once every volume is set up), failed when the kubelet\'s FailedMount events say so';

/**
 * Why the plan holds `op`, for people. `kubeletPastEarlierSteps`: the kubelet's event says a pod
 * step of the volume failed, so the steps before it are not waited for. `nothingMounted`: the
 * entry was found on disk but the mount table shows nothing mounted there.
 */
function describeReason(op: PlannedOperation, facts: { kubeletPastEarlierSteps: boolean; nothingMounted: boolean }): string {
  if (op.reason === 'pod-not-desired' && facts.nothingMounted) {
    return `${FOUND_ON_DISK}: nothing is mounted there, and no pod wants it; the kubelet removes it`;
  }
  const texts: Record<PlannedOperation['reason'], string> = {
    'attach-required': 'not attached; the kubelet attaches it itself (controller attach/detach is off)',
    'attach-verification-required': 'not in the actual state yet; the kubelet verifies the controller attached it',
    'awaiting-reported-in-use': 'the kubelet must first report it in node.status.volumesInUse, then verify the controller attached it',
    'mount-required': 'desired by the pod, not mounted',
    'remount-required': 'mounted, but the plugin asks for a remount (contents changed)',
    'fs-resize-required': 'mounted, and the volume grew beyond the file system',
    'pod-not-desired': 'mounted for a pod that no longer wants it',
    'device-not-needed': 'no pod uses it; its device may still be globally mounted',
    'volume-not-needed': 'no pod uses it and its device is unmounted; the kubelet detaches it',
  };
  const parts = [texts[op.reason]];
  if (facts.kubeletPastEarlierSteps && op.podUid !== null) parts.push('the kubelet’s event shows it got as far as this pod’s own mount (SetUp), which failed');
  else if (op.step > 1) parts.push(`step ${String(op.step)} (after the steps before it succeed)`);
  if (op.reconstructed) parts.push(facts.nothingMounted ? `${FOUND_ON_DISK}: nothing is mounted there` : `${FOUND_ON_DISK} since`);
  return parts.join('; ');
}

function toApiOrphan(o: OrphanInspection['orphans'][number]): ApiOrphanPod {
  const mount = (m: { mountPoint: string; fsType: string; source: string }) => ({ mountPoint: m.mountPoint, fsType: m.fsType, source: m.source });
  return {
    podUid: o.podUID,
    path: o.path,
    modifiedAt: Math.max(0, Math.floor(o.mtimeMs)),
    verdict: o.verdict,
    explanation: o.explanation,
    volumes: o.volumes.map((v) => ({
      path: v.path,
      pluginName: v.pluginName ?? null,
      volumeName: v.volumeName,
      state: v.state,
      explanation: v.explanation,
      mounts: v.mounts.map(mount),
      files: v.contents.files,
      bytes: v.contents.bytes,
      volData: v.volData === undefined ? null : { driverName: v.volData.driverName ?? null, volumeHandle: v.volData.volumeHandle ?? null },
      truncated: v.contents.truncated,
    })),
    leftovers: o.leftovers.map((l) => l.name),
    mounts: o.mounts.map(mount),
  };
}

function toApiTruthRow(r: TruthDiff['rows'][number]): ApiTruthDiffRow {
  return {
    key: r.key,
    volume: r.volumeName,
    desiredPods: r.desiredPods,
    inUse: r.inUse,
    attachedDevicePath: r.attachedDevicePath,
    volumeAttachments: r.volumeAttachments.map((va) => ({
      name: va.name,
      attached: va.attached,
      attachError: va.attachError ?? null,
      detachError: va.detachError ?? null,
      deleting: va.deletionTimestamp !== undefined,
    })),
    globalMounts: r.globalMounts,
    podMounts: r.podMounts.map((m) => ({ podUid: m.podUID, mountPoint: m.mountPoint })),
    findings: r.findings.map((f) => ({ code: f.code, severity: f.severity, explanation: f.explanation })),
  };
}

function compare(a: string, b: string): number {
  if (a < b) return -1;
  return a > b ? 1 : 0;
}
