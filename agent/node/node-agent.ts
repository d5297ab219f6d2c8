/**
 * The node agent's wiring: manifest source → pod/object adapters → volume plugins (in-tree and
 * CSI) → VolumeManager, exposed as the {@link AgentRuntime} the HTTP server serves.
 *
 * Start order and why:
 * 1. The root dir (and `pods/`) exist and are resolved through symlinks, because mountinfo
 *    reports resolved paths and every "is this mounted?" check compares against them.
 * 2. The mounter is chosen by a probe (detectMounter). Nothing waits for it but the mounter's
 *    own calls (DeferredMounter): the volume manager starts meanwhile, and its first mount-table
 *    read or mount waits until the probe has chosen. The start returns once it has.
 * 3. The object source starts while steps 1 and 2 run: neither depends on the other. The
 *    manifest source has loaded every manifest before the volume manager starts. The API source
 *    lists while the volume manager already reconstructs from disk, as the kubelet's volume
 *    manager starts without waiting for its pod sources: until the source has listed every pod
 *    (`isSynced`, the kubelet's "sources ready"), the populator does not report its pods added,
 *    so the reconciler unmounts nothing and cleans up no orphan, and the housekeeping of pod
 *    directories does not run. A restart of 1,000 volumes spent about 180 ms scanning the disk
 *    after the list had ended; now the two overlap. Observe mode waits for the first list.
 * 4. CSI: the plugin watcher over `<root>/plugins_registry` and the `--csi-driver` handshakes
 *    start before the volume manager; handshakes retry in the background, and until a driver is
 *    registered its operations fail with the kubelet's transient "not registered" error.
 * 5. The volume manager starts: reconstruction from `<root>/pods`, then the reconciler loop;
 *    then the kubelet's housekeeping of orphaned pod directories
 *    (lib/kubelet-pods/orphaned-pod-dirs.ts).
 *
 * Pod sync: every manifest change reprocesses the changed pods (all pods when another object
 * changed, so configMap/secret/projected volumes are set up again and claims re-resolved) and
 * kicks the populator, so a new pod's mount starts within milliseconds of the file change.
 *
 * Stop: {@link NodeAgent.stop} stops taking work (source, watcher, loops), lets running
 * operations finish within a grace period, and never unmounts anything: the next start
 * reconstructs what is mounted.
 */
import { mkdir, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { getHeapStatistics } from 'node:v8';
import type { ContainerState, Driver, NodeCondition, OperationLogEntry, RecentEvent, SourceError } from '../../lib/api/snapshot.ts';
import { nodeConditionsFromNode } from '../server/snapshot-items.ts';
import type { Clock, TimerHandle } from '../../lib/clock/clock.ts';
import { HeapTrimmer, exposedGc } from './heap-trim.ts';
import { detectMounter, LinuxMounter, UnprivilegedMounter, type DetectedMounter, type Mounter } from '../../lib/mount-utils/mounter.ts';
import { DeferredMounter, MounterUndecidedError } from '../../lib/mount-utils/deferred-mounter.ts';
import { VolumeManager, type OperationRecord, type ReconcilerMetrics, type PodSourceProbe } from '../../lib/volumemanager/index.ts';
import type { KubeConfig } from '@kubernetes/client-node';
import type { KubeEventSink, KubeSource } from '../../lib/sources/kube/index.ts';
import type { EventRecorder } from '../../lib/volume/events.ts';
import type { ManifestSource } from '../../lib/sources/manifest/index.ts';
import { SourcePods } from '../../lib/sources/pod-lifecycle.ts';
import { OrphanedPodDirs } from '../../lib/kubelet-pods/orphaned-pod-dirs.ts';
import { runResync } from '../../lib/kubelet-pods/resync.ts';
import { truncateMessage } from '../../lib/truncate-message.ts';
import { CsiCallStats, CsiDriverRegistry, CsiPlugin, PluginWatcher, pluginsRegistrationDir, type CsiCallRecord, type CsiDriverCallsView } from '../../lib/volume/csi/index.ts';
import { DEFAULT_VOLUME_STATS_PERIOD_MS, VolumeStatsCollector, type VolumeStatsEntry } from './volume-stats-collector.ts';
import { errorMessage } from '../../lib/volume/errors.ts';
import type { Logger } from '../../lib/volume/logger.ts';
import { TokenManager } from '../../lib/volume/token/token-manager.ts';
import { probeVolumePlugins } from '../../lib/volume/plugins/index.ts';
import { nodeAllocatableMemoryBytes } from '../../lib/volume/plugins/util/memory-size.ts';
import { nodeName as toNodeName, uniquePodName, type NodeName } from '../../lib/volume/types.ts';
import type { Observe } from '../../lib/api/observe.ts';
import type { OrphanCleanupResult } from '../../lib/observe/orphan-cleanup.ts';
import type { AgentRuntime, MounterInfo, ResyncFindings } from '../runtime.ts';
import { EVENTS_FILE_NAME, RingEventRecorder } from './event-recorder.ts';
import { OPERATION_HISTORY_FILE_NAME, OperationHistoryStore } from '../operation-history-store.ts';
import { FlagError, type AgentConfig } from './flags.ts';
import { engineLogger, type AgentLogger } from './logger.ts';
import type { AgentSource, AgentSourceChange } from './agent-source.ts';
import type { KubeObjects } from './kube-objects.ts';
import { ManifestObjects } from './manifest-objects.ts';
import { NodeStatusUpdater, type VolumesInUseReport } from './node-status-updater.ts';
import type { KubeCsiNodeInfo } from './csi-node-info.ts';
import type { NodeLeaseController } from './node-lease.ts';
import type { NodeRegistration } from './node-registration.ts';
import { localNodeIdentity, NodeStatusBuilder } from './node-identity.ts';
import { PodDeleter } from './pod-deleter.ts';
import { ObserveController } from './observe-controller.ts';
import { kubePodSourceProbe, manifestPodSourceProbe } from './pod-source-probe.ts';
import { NodeDiagnostics } from './node-diagnostics.ts';
import type { BlockersQuery, BlockersResponse, MountHealth, UnmountBlockers } from '../../lib/api/mount-health.ts';

/** The API server side of an agent with the kubernetes source. */
interface KubeParts {
  source: KubeSource;
  objects: KubeObjects;
  kubeConfig: KubeConfig;
  /** Posts the engine's events as core/v1 Events (what `kubectl describe pod` shows); null in observe mode (the kubelet reports its own). */
  events: KubeEventSink | null;
  /**
   * The node-side API clients' classes, loaded with the source (they import
   * @kubernetes/client-node, which a standalone agent never loads).
   */
  classes: { KubeCsiNodeInfo: typeof KubeCsiNodeInfo; NodeRegistration: typeof NodeRegistration; NodeLeaseController: typeof NodeLeaseController };
}

/** An event recorder that hands every event to both recorders. */
function teeRecorder(a: EventRecorder, b: EventRecorder): EventRecorder {
  return {
    event(object, type, reason, message, volume) {
      a.event(object, type, reason, message, volume);
      b.event(object, type, reason, message, volume);
    },
  };
}

/** What the agent feeds its metrics with (the server's `createAgentMetrics()` provides it). */
export interface AgentMetricsSink extends ReconcilerMetrics {
  observeOverallMount(pluginName: string, seconds: number): void;
  onOperationRecord(record: OperationRecord): void;
  /** `csi_operations_seconds` for one finished CSI call; optional so sinks that predate it still fit. */
  observeCsiCall?(call: CsiCallRecord): void;
  /** The source of the `kubelet_volume_stats_*` gauges (read at scrape time). */
  bindVolumeStats?(stats: () => readonly VolumeStatsEntry[]): void;
}

/**
 * The driver panel changes with every CSI call (a stats pass makes one per CSI volume): its
 * snapshot notifications are coalesced to one per this period.
 */
const csiPanelNotifyPeriodMs = 1000;

/** How many finished operations the snapshot's `operationLog` keeps. */
const OPERATION_LOG_LENGTH = 500;

export interface NodeAgentOptions {
  config: AgentConfig;
  log: AgentLogger;
  clock: Clock;
  version: string;
  metrics?: AgentMetricsSink;
  /** Environment for `KUBECONFIG` and in-cluster detection; default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
}

/**
 * Debounce of manifest directory events. Shorter than the source's default (50 ms) because the
 * agent's target is "manifest written → mounted" within 50 ms at the median; every rescan is a
 * full, idempotent re-read, so a short window only costs an extra scan during a burst.
 */
const agentManifestDebounceMs = 10;

/**
 * Period of the desired-state populator's own loop. The kubelet polls its pod manager every
 * 100 ms; here every pod source change kicks the populator at once (`podsChanged`), so the loop is
 * only a safety net. Its pass walks every mounted volume, which at 100 ms dominated the idle CPU
 * of a node with 1,000 volumes. Until its first loop with sources ready (which gates
 * `hasAddedPods`), it polls at the reconcile period as the kubelet does, so a restart is not held
 * up by a whole loop period.
 */
const agentPopulatorLoopPeriodMs = 1000;

/** Directory below the root dir where the agent keeps its events, audit log and operation history across restarts. */
export const AGENT_STATE_DIR_NAME = 'volumescope';

/** Directory below the root dir where the unprivileged mounter keeps its stand-in table. */
export const unprivilegedMounterDirName = 'unprivileged-mounter';

export class NodeAgent implements AgentRuntime {
  readonly nodeName: NodeName;
  readonly version: string;
  readonly startedAt: number;
  readonly clock: Clock;
  readonly logger: Logger;
  private chosenMounter: MounterInfo | null = null;
  readonly rootDir: string;
  /**
   * Where the agent keeps what survives its restarts (events, audit log, operation history): `<root>/volumescope`;
   * null in observe mode, which never writes below the kubelet's root dir.
   */
  readonly stateDir: string | null;
  readonly volumeManager: VolumeManager;
  /** The API server's client configuration with the kubernetes source; null standalone. */
  readonly kubeConfig: KubeConfig | null;
  readonly podSource: PodSourceProbe;

  private readonly log: AgentLogger;
  private readonly source: AgentSource;
  /** The API server side of the node (managed mode with the kubernetes source); null standalone. */
  private readonly statusUpdater: NodeStatusUpdater | null;
  private readonly eventSink: KubeEventSink | null;
  /** `--register-node`: the kubelet's API-server side of the node; null otherwise. */
  private readonly nodeParts: { registration: NodeRegistration; lease: NodeLeaseController; podDeleter: PodDeleter } | null;
  private readonly registry: CsiDriverRegistry;
  private readonly csiCalls = new CsiCallStats();
  private readonly finishedOperations: OperationLogEntry[] = [];
  /** Null with `--volume-stats-agg-period=0` and in observe mode (which mounts nothing of its own). */
  private readonly volumeStatsCollector: VolumeStatsCollector | null;
  private csiPanelTimer: TimerHandle | null = null;
  private readonly watcher: PluginWatcher;
  private readonly recorder: RingEventRecorder;
  /** The operation history across restarts (memory only in observe mode). */
  private readonly historyStore: OperationHistoryStore;
  /** Managed mode: the kubelet's housekeeping of orphaned pod directories; null in observe mode. */
  private readonly orphanedPodDirs: OrphanedPodDirs | null;
  /** Observe mode: refresh, orphans, truth diff, kubelet backoff; null in managed mode. */
  private readonly observer: ObserveController | null;
  private readonly hostMounter: Mounter;
  /** Mount health checks and the unmount-blocker search (node-diagnostics.ts). */
  private readonly diagnostics: NodeDiagnostics;
  /** Releases the heap pages a burst leaves pooled (heap-trim.ts); idle without `--expose-gc`. */
  private readonly heapTrimmer: HeapTrimmer;
  private readonly config: AgentConfig;
  private readonly listeners = new Set<() => void>();
  private readonly unsubscribe: (() => void)[] = [];
  private stopping: Promise<{ operationsFinished: boolean }> | null = null;
  private podResyncTimer: TimerHandle | null = null;

  private constructor(parts: {
    opts: NodeAgentOptions;
    rootDir: string;
    /** The mounter, possibly not chosen yet: see {@link NodeAgent.mounterChosen}. */
    mounter: Mounter;
    source: AgentSource;
    /** Present for the kubernetes source: reads claims, nodes and VolumeAttachments from the API server. */
    kube: KubeParts | null;
    startedAt: number;
  }) {
    const { opts } = parts;
    this.config = opts.config;
    this.log = opts.log;
    this.clock = opts.clock;
    this.version = opts.version;
    this.startedAt = parts.startedAt;
    this.nodeName = toNodeName(opts.config.nodeName);
    this.rootDir = parts.rootDir;
    this.hostMounter = parts.mounter;
    this.source = parts.source;
    this.logger = engineLogger(opts.log, 'volumemanager');

    this.kubeConfig = parts.kube?.kubeConfig ?? null;
    const objects = parts.kube?.objects ?? new ManifestObjects(this.source);
    const observing = opts.config.mode === 'observe';
    const pods = new SourcePods(this.source);
    // Observe mode writes nothing below the kubelet's root dir: its events live in memory only.
    this.stateDir = observing ? null : join(this.rootDir, AGENT_STATE_DIR_NAME);
    this.recorder = new RingEventRecorder(this.clock, engineLogger(opts.log, 'events'), undefined, this.stateDir === null ? null : join(this.stateDir, EVENTS_FILE_NAME));
    this.historyStore = new OperationHistoryStore({
      file: this.stateDir === null ? null : join(this.stateDir, OPERATION_HISTORY_FILE_NAME),
      clock: this.clock,
      logger: engineLogger(opts.log, 'volumemanager'),
    });
    const csiLog = engineLogger(opts.log, 'csi');
    // --csi-timeout: one deadline for the handshake calls (registry) and the volume calls (plugin).
    const csiTimeout = opts.config.csiTimeoutMs === undefined ? {} : { callTimeoutMs: opts.config.csiTimeoutMs };
    const registering = parts.kube !== null && !observing && opts.config.registerNode === true;
    const csiNodeInfo = registering && parts.kube !== null ? new parts.kube.classes.KubeCsiNodeInfo({ kubeConfig: parts.kube.kubeConfig, nodeName: this.nodeName, clock: this.clock, logger: engineLogger(opts.log, 'csinode') }) : null;
    const metricsSink = opts.metrics;
    this.registry = new CsiDriverRegistry({
      clock: this.clock,
      logger: csiLog,
      ...csiTimeout,
      ...(csiNodeInfo === null ? {} : { nodeInfo: csiNodeInfo }),
      onCall: (call) => {
        this.csiCalls.record(call);
        metricsSink?.observeCsiCall?.(call);
      },
    });
    const csi = new CsiPlugin({
      objects,
      registry: this.registry,
      nodeName: this.nodeName,
      rootDir: this.rootDir,
      mounter: this.hostMounter,
      clock: this.clock,
      logger: csiLog,
      ...csiTimeout,
      // With the controller attaching, the publish context comes from its VolumeAttachment.
      ...(parts.kube !== null && opts.config.controllerAttachDetach && !observing ? { volumeAttachments: parts.kube.objects } : {}),
    });
    this.watcher = new PluginWatcher({ dir: pluginsRegistrationDir(this.rootDir), registry: this.registry, clock: this.clock, logger: csiLog });
    // Bound service account tokens for projected volumes; without an API server the plugin writes a placeholder.
    const tokenLog = engineLogger(opts.log, 'token');
    const serviceAccountTokens =
      parts.kube === null || observing
        ? undefined
        : new TokenManager({
            source: parts.kube.objects,
            clock: this.clock,
            onRefreshError: (cacheKey, err) => {
              tokenLog.error("Couldn't update token", { cacheKey, err: errorMessage(err) });
            },
          });
    const metrics = opts.metrics;
    const recorder = parts.kube?.events == null ? this.recorder : teeRecorder(this.recorder, parts.kube.events);
    this.volumeManager = new VolumeManager({
      nodeName: this.nodeName,
      rootDir: this.rootDir,
      plugins: [
        ...probeVolumePlugins({
          mounter: this.hostMounter,
          objects,
          rootDir: this.rootDir,
          clock: this.clock,
          // The size of memory-backed emptyDirs, as the kubelet's (its own Node's allocatable memory).
          nodeAllocatableMemoryBytes: () => nodeAllocatableMemoryBytes(parts.kube?.source.getNode()),
          ...(serviceAccountTokens === undefined ? {} : { serviceAccountTokens }),
        }),
        csi,
      ],
      podManager: pods,
      podStateProvider: pods,
      sourcesReady: pods,
      kubeClient: objects,
      clock: this.clock,
      controllerAttachDetachEnabled: opts.config.controllerAttachDetach,
      planOnly: observing,
      reconcilerLoopPeriodMs: opts.config.reconcilePeriodMs,
      populatorLoopPeriodMs: Math.max(opts.config.reconcilePeriodMs, agentPopulatorLoopPeriodMs),
      // Until hasAddedPods, the kubelet's period: a restart's unmounts and states-synced wait on it.
      populatorPollPeriodMs: opts.config.reconcilePeriodMs,
      attachVerifyPeriodMs: opts.config.attachVerifyPeriodMs,
      recorder,
      operationHistory: { initial: this.historyStore.loaded() },
      logger: this.logger,
      ...(metrics !== undefined ? { metrics } : {}),
      onOperationRecord: (record: OperationRecord) => {
        metrics?.onOperationRecord(record);
        this.recordOperation(record);
      },
    });
    this.heapTrimmer = new HeapTrimmer({ clock: this.clock, logger: engineLogger(opts.log, 'heap'), heapTotal: () => getHeapStatistics().total_heap_size, gc: exposedGc() });
    this.diagnostics = new NodeDiagnostics({
      volumeManager: this.volumeManager,
      rootDir: this.rootDir,
      nodeName: this.nodeName,
      clock: this.clock,
      logger: engineLogger(opts.log, 'mount-health'),
      recorder,
      podRef: (uid) => {
        const pod = this.source.getPodByUID(uid);
        return pod === undefined ? undefined : { namespace: pod.metadata.namespace ?? 'default', name: pod.metadata.name ?? uid };
      },
      periodMs: opts.config.mountHealthPeriodMs ?? 10_000,
      timeoutMs: opts.config.mountHealthTimeoutMs ?? 5_000,
      notify: () => {
        this.notify();
      },
    });
    const statsPeriodMs = opts.config.volumeStatsAggPeriodMs ?? DEFAULT_VOLUME_STATS_PERIOD_MS;
    this.volumeStatsCollector =
      observing || statsPeriodMs <= 0
        ? null
        : new VolumeStatsCollector({
            volumeManager: this.volumeManager,
            registry: this.registry,
            statfs: this.diagnostics,
            clock: this.clock,
            logger: engineLogger(opts.log, 'volume-stats'),
            periodMs: statsPeriodMs,
            onChange: () => {
              this.notify();
            },
          });
    const collector = this.volumeStatsCollector;
    if (collector !== null) metricsSink?.bindVolumeStats?.(() => collector.stats());
    const kube = parts.kube;
    this.podSource =
      kube === null ? manifestPodSourceProbe(this.source) : kubePodSourceProbe(this.nodeName, (node) => kube.objects.listNodePodsLive(node), this.source);
    this.eventSink = kube?.events ?? null;
    const identity = localNodeIdentity({
      nodeName: this.nodeName,
      internalIp: opts.config.nodeIp ?? '127.0.0.1',
      agentVersion: opts.version,
      port: opts.config.listen.port,
      controllerAttachDetach: opts.config.controllerAttachDetach,
    });
    const nodeStatus = new NodeStatusBuilder(identity, this.clock);
    this.nodeParts =
      kube === null || !registering
        ? null
        : {
            registration: new kube.classes.NodeRegistration({ kubeConfig: kube.kubeConfig, identity, status: nodeStatus, clock: this.clock, logger: engineLogger(opts.log, 'node-registration') }),
            lease: new kube.classes.NodeLeaseController({
              kubeConfig: kube.kubeConfig,
              nodeName: this.nodeName,
              clock: this.clock,
              logger: engineLogger(opts.log, 'node-lease'),
              nodeUid: () => this.nodeParts?.registration.node()?.metadata?.uid ?? kube.source.getNode()?.metadata.uid ?? null,
            }),
            podDeleter: new PodDeleter({
              listPods: () => this.source.listPods(),
              hasPossiblyMountedVolumes: (uid) => this.volumeManager.hasPossiblyMountedVolumesForPod(uniquePodName(uid)),
              volumeStatesSynced: () => this.volumeManager.reconcilerStatesHasBeenSynced(),
              deletePod: (namespace, name, uid) => kube.objects.deletePod(namespace, name, uid),
              clock: this.clock,
              logger: engineLogger(opts.log, 'status-manager'),
            }),
          };
    this.statusUpdater =
      kube === null || observing
        ? null
        : new NodeStatusUpdater({
            volumeManager: this.volumeManager,
            // One patch path: with --register-node the whole node status, volumesInUse included.
            patchVolumesInUse: registering
              ? (volumes) => kube.objects.patchNodeStatus(this.nodeName, nodeStatus.status(volumes))
              : (volumes) => kube.objects.patchVolumesInUse(this.nodeName, volumes ?? []),
            reportBeforeSync: registering,
            clock: this.clock,
            periodMs: opts.config.nodeStatusUpdateFrequencyMs,
            logger: engineLogger(opts.log, 'node-status'),
            onReport: () => {
              this.notify();
            },
          });
    this.orphanedPodDirs = observing
      ? null
      : new OrphanedPodDirs({
          rootDir: this.rootDir,
          volumeManager: this.volumeManager,
          podKnown: (uid) => this.source.getPodByUID(uid) !== undefined,
          sourcesReady: () => this.source.isSynced(),
          mounter: this.hostMounter,
          clock: this.clock,
          logger: engineLogger(opts.log, 'housekeeping'),
        });
    this.observer =
      observing && kube !== null
        ? new ObserveController({
            nodeName: this.nodeName,
            rootDir: this.rootDir,
            volumeManager: this.volumeManager,
            source: kube.source,
            api: kube.objects,
            readMountInfo: () => this.hostMounter.list(),
            mounter: this.hostMounter,
            clock: this.clock,
            refreshPeriodMs: opts.config.observeRefreshPeriodMs,
            allowCleanup: opts.config.allowOrphanCleanup,
            logger: engineLogger(opts.log, 'observe'),
            onChange: () => {
              const inUse = kube.source.getNode()?.status?.volumesInUse;
              if (inUse !== undefined) this.volumeManager.markVolumesAsReportedInUse(inUse);
              this.notify();
            },
          })
        : null;
    // The Node's conditions come from the kube source's node informer (its changes notify, onSourceChange).
    if (kube !== null) {
      const source = kube.source;
      this.nodeConditions = () => nodeConditionsFromNode(source.getNode());
      // Container statuses travel beside the pod objects (lib/sources/kube/container-states.ts); their changes notify, onSourceChange.
      this.containerStates = (uid) => source.getContainerStates(uid);
    }
    const observer = this.observer;
    if (observer !== null) {
      this.observe = () => observer.section();
      this.cleanupOrphan = (podUid, dryRun) => observer.cleanupOrphan(podUid, dryRun);
    }
  }

  /**
   * Builds and starts everything (see the file comment for the order). Throws {@link FlagError}
   * for a `--manifest-dir` that is not a readable directory, and other errors for failures to
   * prepare the root dir or load the manifests.
   */
  static async start(opts: NodeAgentOptions): Promise<NodeAgent> {
    const { config, log, clock } = opts;
    const startedAt = Math.floor(clock.now());
    const observing = config.mode === 'observe';
    // The object source starts (and, for the API server, its modules load: mostly compiling
    // JavaScript) while the root dir is prepared and the mounter probe waits for mount(8) and
    // umount(8). Nothing of it acts on the node before the volume manager starts below.
    const sourceStarting: Promise<{ source: AgentSource; kube: KubeParts | null; listed: Promise<void> }> =
      config.source === 'kubernetes'
        ? loadKubeModules().then((modules) => startKubeSource(opts, modules))
        : startManifestSource(opts).then((source) => ({ source, kube: null, listed: Promise.resolve() }));
    // Observed where the probe below fails first; awaited again after it.
    sourceStarting.catch(() => undefined);
    let rootDir: string;
    // Observe mode decides at once; managed mode runs the mount probe, which the volume manager
    // does not wait for (a DeferredMounter: every mounter call waits for the probe instead).
    let detecting: Promise<DetectedMounter>;
    try {
      if (observing) {
        // Read-only: nothing is created below the kubelet's root dir, and no mount probe runs.
        rootDir = await realpath(config.rootDir).catch((err: unknown) => {
          throw new FlagError('--root-dir', `--root-dir: ${config.rootDir} cannot be read: ${errorMessage(err)} (observe mode reads the kubelet's root dir; it never creates it)`);
        });
        detecting = Promise.resolve(observeMounter(config, rootDir));
      } else {
        await mkdir(join(config.rootDir, 'pods'), { recursive: true, mode: 0o750 });
        rootDir = await realpath(config.rootDir);
        detecting = detectMounter({ unprivilegedStateDir: join(rootDir, unprivilegedMounterDirName), allowMount: config.allowMount });
      }
    } catch (err) {
      // The source may have started meanwhile: stop it, so that no informer or watcher outlives the failed start.
      await sourceStarting.then(({ source }) => source.stop(), () => undefined);
      throw err;
    }
    // Observed where the agent's start fails first; awaited again below.
    detecting.catch(() => undefined);

    let started: Awaited<typeof sourceStarting>;
    try {
      started = await sourceStarting;
    } catch (err) {
      // The probe may still run: let it end (it unmounts what it mounted) before reporting.
      await detecting.catch(() => undefined);
      throw err;
    }
    const { source, kube, listed } = started;
    // Observe mode plans from the kubelet's pods: a plan made before they are listed would only
    // say that nothing is known yet, so it waits for the first list (nothing to gain in a restart).
    if (observing) {
      await listed.catch(async (err: unknown) => {
        await source.stop();
        throw err;
      });
    }

    let agent: NodeAgent;
    try {
      agent = new NodeAgent({ opts, rootDir, mounter: new DeferredMounter(detecting.then((d) => d.mounter)), source, kube, startedAt });
    } catch (err) {
      await source.stop();
      await detecting.catch(() => undefined);
      throw err;
    }
    try {
      await agent.run();
      const detected = await detecting;
      agent.mounterChosen({ kind: detected.kind, privileged: detected.privileged, reason: detected.reason });
    } catch (err) {
      await agent.stop(0);
      throw err;
    }
    // The first list's outcome reaches the source's state (synced, or an error it retries); a
    // rejection here is a programming error (a second start), logged rather than left unhandled.
    listed.catch((err: unknown) => {
      log.error({ error: errorMessage(err) }, 'The object source failed to start');
    });
    return agent;
  }

  /** What the agent reports about its mounter; read only after {@link NodeAgent.start} returned. */
  get mounter(): MounterInfo {
    if (this.chosenMounter === null) throw new MounterUndecidedError('the mounter is not chosen yet: the mount probe has not finished');
    return this.chosenMounter;
  }

  /** Called by {@link NodeAgent.start} once the mount probe chose the mounter the volume manager already uses. */
  private mounterChosen(info: MounterInfo): void {
    this.chosenMounter = info;
    this.log.info({ mounter: info }, `Using the ${info.kind} mounter: ${info.reason}`);
  }

  private async run(): Promise<void> {
    this.unsubscribe.push(
      this.source.onChange((change) => {
        this.onSourceChange(change);
      }),
      this.registry.onChange(() => {
        this.notify();
      }),
      this.csiCalls.onChange(() => {
        this.csiPanelTimer ??= this.clock.setTimeout(() => {
          this.csiPanelTimer = null;
          this.notify();
        }, csiPanelNotifyPeriodMs);
      }),
      this.recorder.onEvent(() => {
        this.notify();
      }),
      this.historyStore.follow(this.volumeManager),
    );
    for (const driver of this.observer === null ? this.config.csiDrivers : []) {
      // The first handshake may take up to a call deadline; it retries in the background.
      this.registry.addDriver(driver.name, driver.endpoint).then(
        (d) => {
          if (d.registered) this.log.info({ driver: d.name, endpoint: d.endpoint, nodeId: d.nodeId }, `Registered CSI driver ${d.name}`);
          else this.log.warn({ driver: d.name, endpoint: d.endpoint, error: d.lastError }, `CSI driver ${d.name} is not registered yet; retrying`);
        },
        (err: unknown) => {
          this.log.error({ driver: driver.name, error: errorMessage(err) }, `Cannot add CSI driver ${driver.name}`);
        },
      );
    }
    // Observe mode leaves the kubelet's CSI drivers alone: registering would talk to their sockets.
    // After the --csi-driver entries exist (addDriver creates its entry before its first await):
    // their names are the operator's, and no socket in plugins_registry may take them first.
    if (this.observer === null) await this.watcher.start();
    this.volumeManager.start();
    this.diagnostics.start();
    this.unsubscribe.push(
      this.volumeManager.onChange(() => {
        this.heapTrimmer.noteActivity();
      }),
    );
    this.heapTrimmer.start();
    this.schedulePodResync();
    this.orphanedPodDirs?.start();
    this.observer?.start();
    this.volumeStatsCollector?.start();
    const statusUpdater = this.statusUpdater;
    const nodeParts = this.nodeParts;
    if (statusUpdater !== null) {
      this.unsubscribe.push(
        this.volumeManager.onChange(() => {
          statusUpdater.kick();
          nodeParts?.podDeleter.requestSync();
        }),
      );
      if (nodeParts === null) {
        statusUpdater.start();
      } else {
        // The lease runs from the start (kubelet.go starts the node lease controller at once);
        // the status reports begin once the Node exists.
        nodeParts.lease.start();
        nodeParts.podDeleter.start();
        void nodeParts.registration.register().then((registered) => {
          if (registered && this.stopping === null) statusUpdater.start();
        });
      }
    }
    this.log.info(
      {
        source: this.config.source,
        rootDir: this.rootDir,
        ...(this.config.source === 'manifest' ? { manifestDir: this.config.manifestDir } : {}),
        reconcilePeriodMs: this.config.reconcilePeriodMs,
        controllerAttachDetach: this.config.controllerAttachDetach,
        attachVerifyPeriodMs: this.config.attachVerifyPeriodMs,
        pods: this.source.listPods().length,
      },
      'Volume manager started',
    );
  }

  /**
   * The kubelet's periodic pod sync: its pod workers sync every pod again each `syncFrequency`
   * (pkg/kubelet/kubelet.go@v1.34 `resyncInterval`, with jitter per pod), and each sync calls
   * WaitForAttachAndMount, which reprocesses the pod's volumes (`ReprocessPod`). Without it a change
   * no source reports — a PV whose capacity the resizer raised, read by a GET and not watched —
   * would reach the node expansion path only when something else about the pod changed. Here every
   * pod is resynced at once each period (no per-pod jitter: there is no container work to spread).
   */
  private schedulePodResync(): void {
    this.podResyncTimer = this.clock.setTimeout(() => {
      if (this.stopping !== null) return;
      for (const pod of this.source.listPods()) this.volumeManager.reprocessPod(uniquePodName(pod.metadata.uid ?? ''));
      this.volumeManager.podsChanged();
      this.schedulePodResync();
    }, this.config.syncFrequencyMs);
  }

  /**
   * A pod source change is the agent's "pod sync": updated pods, and on any other object change
   * (ConfigMap, Secret, PVC, PV…) every pod, are processed again, which marks their remountable
   * volumes (configMap, secret, projected, downward API) for SetUp and re-resolves claims; then
   * the populator runs at once instead of at its next period.
   */
  private onSourceChange(change: AgentSourceChange): void {
    const vm = this.volumeManager;
    if (change.objectsChanged) {
      for (const pod of this.source.listPods()) vm.reprocessPod(uniquePodName(pod.metadata.uid ?? ''));
    } else {
      for (const uid of change.pods.updated) vm.reprocessPod(uniquePodName(uid));
    }
    this.volumeManager.podsChanged();
    this.nodeParts?.podDeleter.sync();
    this.notify();
  }

  // AgentRuntime

  sourceErrors(): SourceError[] {
    const errors = this.source.sourceErrors().map((e) => ({ file: e.file, message: e.message }));
    const report = this.statusUpdater?.lastReport();
    if (report?.ok === false && report.error !== null) {
      errors.push({ file: `/api/v1/nodes/${this.nodeName}/status`, message: `node.status.volumesInUse not reported: ${report.error}` });
    }
    return errors;
  }

  /** The last `node.status.volumesInUse` report, or null (standalone, or not reported yet). */
  volumesInUseReport(): VolumesInUseReport | null {
    return this.statusUpdater?.lastReport() ?? null;
  }

  drivers(): Driver[] {
    return this.registry.drivers().map((d) => ({
      name: d.name,
      endpoint: d.endpoint,
      registered: d.registered,
      nodeId: d.nodeId,
      capabilities: [...d.capabilities],
      lastProbeAt: d.lastProbeAt === null ? null : Math.floor(d.lastProbeAt),
      lastError: d.lastError === null ? null : truncateMessage(d.lastError),
      maxVolumesPerNode: this.registry.details(d.name)?.maxVolumesPerNode ?? null,
    }));
  }

  /** The latest finished operations, oldest first (the snapshot's `operationLog`). */
  operationLog(): readonly OperationLogEntry[] {
    return this.finishedOperations;
  }

  private recordOperation(record: OperationRecord): void {
    this.finishedOperations.push({
      operationName: record.operationName,
      volume: record.volume,
      podUid: record.pod === '' ? null : record.pod,
      startedAt: Math.floor(record.startedAt),
      finishedAt: Math.floor(record.finishedAt),
      outcome: record.outcome,
      error: record.error === null ? null : truncateMessage(record.error),
    });
    if (this.finishedOperations.length > OPERATION_LOG_LENGTH) this.finishedOperations.splice(0, this.finishedOperations.length - OPERATION_LOG_LENGTH);
    this.notify();
  }

  /** Every CSI driver's calls since the agent started (the snapshot's `csiPanel`). */
  csiPanel(): CsiDriverCallsView[] {
    return this.csiCalls.view();
  }

  /** The last volume stats pass; null before the first one or without stats collection. */
  volumeStats(): VolumeStatsEntry[] | null {
    const collector = this.volumeStatsCollector;
    return collector === null || collector.stats().length === 0 && !collector.hasRun() ? null : collector.stats();
  }

  /** Managed mode: the events the agent recorded. Observe mode: the kubelet's, read from the API server. */
  recentEvents(): RecentEvent[] {
    return this.observer?.events() ?? this.recorder.recent();
  }

  sourcesSynced(): boolean {
    return this.source.isSynced();
  }

  /** Re-reads the source (manifest dir, or relists from the API server), then compares disk and mountinfo with the actual state. */
  async resync(): Promise<ResyncFindings> {
    await this.source.resync();
    if (this.observer !== null) return this.observeResync();
    const findings = await runResync({ rootDir: this.rootDir, volumeManager: this.volumeManager, mounter: this.hostMounter, clock: this.clock });
    this.log.info({ rescanned: findings.rescanned, changes: findings.changes, foundDetached: findings.attachVerification.foundDetached }, 'Resync finished');
    return findings;
  }

  /** Observe mode: a refresh now (actual state, orphans, attachments, kubelet backoff). */
  private async observeResync(): Promise<ResyncFindings> {
    const startedAt = Math.floor(this.clock.now());
    const before = this.volumeManager.getActualVolumes().length;
    await this.observer?.refresh();
    const section = this.observer?.section();
    const after = this.volumeManager.getActualVolumes().length;
    const changes = [`actual state rebuilt from ${this.rootDir}: ${String(before)} → ${String(after)} volume(s)`];
    if (section?.refreshError != null) changes.push(`refresh incomplete: ${section.refreshError}`);
    return {
      startedAt,
      finishedAt: Math.floor(this.clock.now()),
      rescanned: { volumes: after, mountPoints: 0 },
      attachVerification: { checked: [], foundDetached: [], errors: [] },
      changes,
    };
  }

  observe: (() => Observe) | undefined = undefined;
  nodeConditions: (() => NodeCondition[] | null) | undefined = undefined;
  containerStates: ((uid: string) => readonly ContainerState[] | undefined) | undefined = undefined;
  cleanupOrphan: ((podUid: string, dryRun: boolean) => Promise<OrphanCleanupResult>) | undefined = undefined;

  mountHealth(): MountHealth[] {
    return this.diagnostics.mountHealth();
  }

  unmountBlockers(): UnmountBlockers[] {
    return this.diagnostics.unmountBlockers();
  }

  findBlockers(query: BlockersQuery): Promise<BlockersResponse> {
    return this.diagnostics.findBlockers(query);
  }

  /** Runs one mount health batch now (tests, the benchmark). */
  checkMountHealthNow(): Promise<void> {
    return this.diagnostics.checkNow();
  }

  /** The pid of the mount health check's child process, or null (the benchmark's CPU accounting). */
  mountHealthProbePid(): number | null {
    return this.diagnostics.probePid();
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  // LIFECYCLE

  /**
   * Stops taking work and waits up to `graceMs` for running operations; idempotent (a second call
   * returns the first one's promise). Mounts stay; the CSI clients are closed.
   */
  stop(graceMs: number): Promise<{ operationsFinished: boolean }> {
    this.stopping ??= this.doStop(graceMs);
    return this.stopping;
  }

  private async doStop(graceMs: number): Promise<{ operationsFinished: boolean }> {
    for (const off of this.unsubscribe.splice(0)) off();
    this.heapTrimmer.stop();
    this.volumeStatsCollector?.stop();
    if (this.csiPanelTimer !== null) this.clock.clearTimeout(this.csiPanelTimer);
    this.csiPanelTimer = null;
    if (this.podResyncTimer !== null) this.clock.clearTimeout(this.podResyncTimer);
    this.podResyncTimer = null;
    this.nodeParts?.registration.stop();
    await Promise.all([this.nodeParts?.lease.stop(), this.nodeParts?.podDeleter.stop(), this.source.stop(), this.watcher.stop(), this.orphanedPodDirs?.stop(), this.observer?.stop(), this.volumeManager.stop(), this.statusUpdater?.stop(), this.diagnostics.stop()]);
    const running = this.volumeManager.getPendingOperations().filter((o) => o.pending).length;
    if (running > 0) this.log.info({ running, graceMs }, `Waiting for ${running} running operation(s) to finish`);
    const operationsFinished = await this.waitBounded(this.volumeManager.waitForOperations(), graceMs);
    if (!operationsFinished) {
      this.log.warn({ running: this.volumeManager.getPendingOperations().filter((o) => o.pending).length }, 'Operations still running after the grace period; leaving them to reconstruction');
    }
    this.registry.close();
    // Events still queued get one attempt within a short deadline; the rest are dropped (as client-go at exit).
    await this.eventSink?.stop({ timeoutMs: Math.min(graceMs, 5000) });
    await Promise.all([this.recorder.flush(), this.historyStore.flush(this.volumeManager)]);
    return { operationsFinished };
  }

  private waitBounded(work: Promise<void>, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = this.clock.setTimeout(() => {
        resolve(false);
      }, ms);
      work.then(
        () => {
          this.clock.clearTimeout(timer);
          resolve(true);
        },
        () => {
          this.clock.clearTimeout(timer);
          resolve(true);
        },
      );
    });
  }

  private notify(): void {
    for (const listener of this.listeners) {
      try {
        listener();
      } catch (err) {
        this.log.warn({ error: errorMessage(err) }, 'runtime change listener failed');
      }
    }
  }
}

async function startManifestSource(opts: NodeAgentOptions): Promise<ManifestSource> {
  const { config, clock, log } = opts;
  if (config.manifestDirGiven) {
    const info = await stat(config.manifestDir).catch((err: unknown) => {
      throw new FlagError('--manifest-dir', `--manifest-dir: ${config.manifestDir} cannot be read: ${errorMessage(err)}`);
    });
    if (!info.isDirectory()) throw new FlagError('--manifest-dir', `--manifest-dir: ${config.manifestDir} is not a directory`);
  } else {
    await mkdir(config.manifestDir, { recursive: true, mode: 0o750 });
  }
  // Loaded only with --source=manifest: an agent on the API server never pays for the YAML parser and the manifests' schemas.
  const { ManifestSource } = await import('../../lib/sources/manifest/index.ts');
  const source = new ManifestSource({
    dir: config.manifestDir,
    nodeName: config.nodeName,
    clock,
    logger: engineLogger(log, 'manifest-source'),
    debounceMs: agentManifestDebounceMs,
  });
  await source.start();
  return source;
}

function loadKubeModules() {
  // Loaded only with --source=kubernetes: a standalone agent never pays for the Kubernetes client (start time, memory).
  return Promise.all([
    import('../../lib/sources/kube/index.ts'),
    import('./kube-objects.ts'),
    import('../../lib/kube-client/kubeconfig.ts'),
    import('./client-node-classes.ts').then((m) => m.clientNodeClasses),
    import('./csi-node-info.ts'),
    import('./node-registration.ts'),
    import('./node-lease.ts'),
  ]);
}

/**
 * The API source, started: `listed` resolves once every informer made its first attempt (listed,
 * or failed and retrying). Nothing waits for it: the volume manager starts meanwhile (see the file
 * comment, step 3), and until the source is synced, sources are not ready, so nothing whose pod
 * might merely be unlisted yet is torn down.
 */
function startKubeSource(opts: NodeAgentOptions, modules: Awaited<ReturnType<typeof loadKubeModules>>): { source: KubeSource; kube: KubeParts; listed: Promise<void> } {
  const { config, clock, log } = opts;
  const [{ KubeEventSink, KubeSource, shareConnections }, { KubeObjects }, { loadKubeConfigWithOrigin }, clientNode, { KubeCsiNodeInfo }, { NodeRegistration }, { NodeLeaseController }] = modules;
  let loaded;
  try {
    loaded = loadKubeConfigWithOrigin({ clientNode, kubeconfig: config.kubeconfig, env: opts.env ?? process.env });
  } catch (err) {
    throw new FlagError('--kubeconfig', `--kubeconfig: ${errorMessage(err)}`);
  }
  // Watches, lists and GETs on one connection pool (one HTTP/2 connection), as client-go's.
  shareConnections(loaded.kubeConfig);
  log.info({ kubeconfig: loaded.origin }, loaded.origin.kind === 'file' ? `Using the API server of ${loaded.origin.paths.join(', ')}` : `Using the in-cluster API server ${loaded.origin.server}`);
  const source = new KubeSource({
    kubeConfig: loaded.kubeConfig,
    nodeName: config.nodeName,
    clock,
    logger: engineLogger(log, 'kube-source'),
    // Observe mode: the kubelet sets up configMap/secret volumes; the agent needs only their names.
    claimsOnly: config.mode === 'observe',
    // Observe mode's truth diff reads every PV (its role may list them); managed mode GETs the
    // PVs of its claims, which is all a node identity (system:node:<name>) may read.
    persistentVolumes: config.mode === 'observe' ? 'informer' : 'get',
    ...(config.kubeRequestTimeoutMs === undefined ? {} : { requestTimeoutMs: config.kubeRequestTimeoutMs }),
  });
  const listed = source.start();
  // Events go to the API server only in managed mode: in observe mode the kubelet reports its own.
  const events = config.mode === 'observe' ? null : new KubeEventSink({ kubeConfig: loaded.kubeConfig, nodeName: config.nodeName, clock, logger: engineLogger(log, 'events') });
  return { source, listed, kube: { source, objects: new KubeObjects(source, loaded.kubeConfig, clock), kubeConfig: loaded.kubeConfig, events, classes: { KubeCsiNodeInfo, NodeRegistration, NodeLeaseController } } };
}

/**
 * Observe mode's mounter: it only reads the mount table (and unmounts for the opt-in orphan
 * cleanup). `--allow-mount` (default): the host's table at `--mountinfo`, `umount` for cleanups.
 * `--allow-mount=false`: the stand-in table of an unprivileged VolumeScope agent managing the
 * same root dir (development and tests), never the kernel's.
 */
function observeMounter(config: AgentConfig, rootDir: string): DetectedMounter {
  if (config.allowMount) {
    return { mounter: new LinuxMounter({ mountInfoPath: config.mountinfoPath }), kind: 'linux', privileged: false, reason: `observe mode: reads ${config.mountinfoPath}` };
  }
  const stateDir = join(rootDir, unprivilegedMounterDirName);
  return {
    mounter: new UnprivilegedMounter({ stateDir, systemMountInfoPath: null }),
    kind: 'unprivileged',
    privileged: false,
    reason: `observe mode with --allow-mount=false: reads the stand-in mount table in ${stateDir}`,
  };
}
