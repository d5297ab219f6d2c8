/**
 * The agent's Prometheus metrics (`GET /metrics`), named and labelled as the kubelet's volume
 * manager exports them so existing dashboards and alerts work:
 *
 * - `volume_manager_total_volumes{plugin_name,state}`: counted at scrape time from both worlds
 *   (`VolumeManager.getVolumeCount`);
 * - `storage_operation_duration_seconds{volume_plugin,operation_name,status,migrated}`: one
 *   observation per finished operation ({@link AgentMetrics.onOperationRecord});
 * - `volume_operation_total_seconds{plugin_name,operation_name}`: `overall_volume_mount`, from
 *   the pod's mount request to the mount ({@link AgentMetrics.observeOverallMount});
 * - `reconstruct_volume_operations_total` / `_errors_total` and
 *   `force_cleaned_failed_volume_operations_total` / `_errors_total`: the reconciler's counters
 *   (the engine's `ReconcilerMetrics`);
 * - `volumescope_mount_health_mounts{kind,state}` and `volumescope_mount_unhealthy{kind,state,volume,pod_uid,path}`:
 *   the mount health checks (agent/node/mount-health/), counted at scrape time; the kubelet has
 *   no metric for this (its `kubelet_volume_stats_health_status_abnormal` is the CSI driver's
 *   VOLUME_CONDITION), hence the project's prefix;
 * - `csi_operations_seconds{driver_name,method_name,grpc_status_code,migrated}`: one observation per
 *   CSI call of the agent's CSI clients, as the kubelet's `RecordMetricsInterceptor` records it
 *   (`method_name` is the gRPC method path, e.g. `/csi.v1.Node/NodeStageVolume`; `migrated` is
 *   always "false": the agent migrates no in-tree plugin) ({@link AgentMetrics.observeCsiCall});
 * - `kubelet_volume_stats_{capacity,available,used}_bytes`, `kubelet_volume_stats_inodes{,_free,_used}`
 *   and `kubelet_volume_stats_health_status_abnormal{namespace,persistentvolumeclaim}`: from the last
 *   volume stats pass, at scrape time, for volumes with a claim only, the first pod's numbers per
 *   claim (the kubelet's `volumeStatsCollector`); the health gauge only where the driver reported
 *   a volume condition ({@link AgentMetrics.bindVolumeStats});
 * - VolumeScope's own gauges for the alerts of deploy/monitoring/ (no kubelet metric says this),
 *   read at scrape time: `volumescope_volume_uncertain{volume,pod_uid,kind}` (1 per uncertain
 *   attach, device mount or pod mount; kind `attach|device|mount`),
 *   `volumescope_operation_backoff_seconds{operation_name,volume,pod_uid}` (the current backoff
 *   window of each operation that failed and waits for its retry; 122 at the cap of 2m2s) and
 *   `volumescope_orphaned_pods` (observe mode: pod directories of pods the API server no longer
 *   has; absent in managed mode) ({@link AgentMetrics.bindObserve});
 * - `volumescope_summary{node_name,field}` and `volumescope_summary_info{node_name,mode,agent_version,mounter_kind,reconstruction_state}`:
 *   the node's summary (`GET /api/v1/summary`) as series, read at scrape time, so a dashboard
 *   with `VOLUMESCOPE_PROMETHEUS_URL` reads every node's counts from Prometheus
 *   (lib/api/summary-metrics.ts defines the fields; a count of 0 has no series) ({@link AgentMetrics.bindSummary});
 * - process metrics (`process_*`, `nodejs_*`).
 *
 * Each {@link AgentMetrics} has its own Registry, so several agents (tests) never share series.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { MountHealth } from '../../lib/api/mount-health.ts';
import { SUMMARY_FIELD_LABEL, SUMMARY_INFO_LABELS, SUMMARY_INFO_METRIC, SUMMARY_METRIC, SUMMARY_NODE_LABEL, summarySeries, type SummarySeries } from '../../lib/api/summary-metrics.ts';
import type { AgentSummary } from '../../lib/api/summary.ts';
import type { CsiCallRecord } from '../../lib/volume/csi/index.ts';
import type { VolumeStats as VolumeStatsEntry } from '../../lib/api/snapshot.ts';
import {
  pluginNameNotAvailable,
  type OperationRecord,
  type ReconcilerMetrics,
  type VolumeManager,
} from '../../lib/volumemanager/index.ts';

/** The kubelet's buckets for storage operation latencies, in seconds. */
export const STORAGE_OPERATION_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600];

/** The `kubelet_volume_stats_*` gauges: name, help (verbatim from the kubelet) and the entry's field. */
const VOLUME_STATS_GAUGES = [
  ['kubelet_volume_stats_capacity_bytes', 'Capacity in bytes of the volume', 'capacityBytes'],
  ['kubelet_volume_stats_available_bytes', 'Number of available bytes in the volume', 'availableBytes'],
  ['kubelet_volume_stats_used_bytes', 'Number of used bytes in the volume', 'usedBytes'],
  ['kubelet_volume_stats_inodes', 'Maximum number of inodes in the volume', 'inodes'],
  ['kubelet_volume_stats_inodes_free', 'Number of free inodes in the volume', 'inodesFree'],
  ['kubelet_volume_stats_inodes_used', 'Number of used inodes in the volume', 'inodesUsed'],
] as const;

/** `plugin_name` when the plugin of a volume cannot be determined (kubelet `pluginNameNotAvailable`). */
export const PLUGIN_NAME_NOT_AVAILABLE = pluginNameNotAvailable;

/**
 * The agent's metrics. Every method is a bound function, so members can be handed over on their
 * own: `new VolumeManager({metrics, onOperationRecord: metrics.onOperationRecord})`.
 */
export interface AgentMetrics extends ReconcilerMetrics {
  /** The registry `GET /metrics` renders. */
  readonly registry: Registry;
  /** `volume_operation_total_seconds{operation_name="overall_volume_mount"}` (the engine's mount hook). */
  readonly observeOverallMount: (pluginName: string, seconds: number) => void;
  /** `storage_operation_duration_seconds` for one finished operation. */
  readonly onOperationRecord: (record: OperationRecord) => void;
  /** `reconstruct_volume_operations_total` (+ `_errors_total` when `failed`). */
  readonly reconstructVolumeOperation: (failed: boolean) => void;
  /** `force_cleaned_failed_volume_operations_total` (+ `..._operation_errors_total` when `failedToStart`). */
  readonly forceCleanedFailedVolumeOperation: (failedToStart: boolean) => void;
  /**
   * The volume manager whose worlds `volume_manager_total_volumes` counts at scrape time. The
   * server binds its runtime's manager; until then the metric has no series.
   */
  readonly bindVolumeManager: (volumeManager: VolumeManager) => void;
  /** The mount health entries the `volumescope_mount_*` gauges count at scrape time; until bound, no series. */
  readonly bindMountHealth: (entries: () => readonly MountHealth[]) => void;
  /** The orphan count of observe mode's section (`volumescope_orphaned_pods`); until bound, no series. */
  readonly bindObserve: (orphans: () => number | null) => void;
  /** `csi_operations_seconds` for one finished CSI call. */
  readonly observeCsiCall: (call: CsiCallRecord) => void;
  /** The volume stats the `kubelet_volume_stats_*` gauges show at scrape time; until bound they have no series. */
  readonly bindVolumeStats: (stats: () => readonly VolumeStatsEntry[]) => void;
  /** The node's current summary, which `volumescope_summary` and `_info` show at scrape time; until bound, no series. */
  readonly bindSummary: (summary: () => AgentSummary) => void;
}

/** The entries the kubelet's collector exports: with a claim, the first per claim. */
function claimStats(entries: readonly VolumeStatsEntry[]): { labels: { namespace: string; persistentvolumeclaim: string }; entry: VolumeStatsEntry }[] {
  const seen = new Set<string>();
  const out: { labels: { namespace: string; persistentvolumeclaim: string }; entry: VolumeStatsEntry }[] = [];
  for (const entry of entries) {
    const claim = entry.persistentVolumeClaim;
    if (claim === null) continue;
    const key = `${claim.namespace}/${claim.name}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ labels: { namespace: claim.namespace, persistentvolumeclaim: claim.name }, entry });
  }
  return out;
}

/** A new set of agent metrics in a new Registry (with the process metrics). */
export function createAgentMetrics(): AgentMetrics {
  const registry = new Registry();
  // Event-loop lag sampled every second instead of prom-client's 10 ms: the sampling timer is a
  // wake-up of its own, never aligned with the reconciler's 100 ms loop, and an idle agent's CPU
  // is mostly its wake-ups (1,000 mounted volumes, 2-core VM, `npm run bench:agent -- --only
  // memory`: 10 ms about 0.7 % more than 100 ms; 100 ms 0.97–1.03 %, 1 s 0.73–0.77 %). The
  // nodejs_eventloop_lag_* gauges then summarise one sample a second: a stall of the loop still
  // shows in the next sample's delay (max, p99) when it overlaps a sample's due time.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 1000 });
  let volumeManager: VolumeManager | null = null;
  let mountHealth: (() => readonly MountHealth[]) | null = null;
  let volumeStats: (() => readonly VolumeStatsEntry[]) | null = null;
  let orphans: (() => number | null) | null = null;
  // Memoized per snapshot by the server (SummaryCache): both summary gauges of a scrape read the same one.
  let summary: (() => AgentSummary) | null = null;
  // The series of the last summary seen: both gauges of a scrape turn the same summary into them once.
  let lastSeries: { of: AgentSummary; series: SummarySeries } | null = null;
  const currentSeries = (): SummarySeries | null => {
    if (summary === null) return null;
    const s = summary();
    if (lastSeries?.of !== s) lastSeries = { of: s, series: summarySeries(s) };
    return lastSeries.series;
  };

  new Gauge({
    name: 'volume_manager_total_volumes',
    help: 'Number of volumes in Volume Manager',
    labelNames: ['plugin_name', 'state'],
    registers: [registry],
    collect() {
      this.reset();
      if (volumeManager === null) return;
      for (const [state, byPlugin] of volumeManager.getVolumeCount()) {
        for (const [plugin, count] of byPlugin) this.set({ plugin_name: plugin, state }, count);
      }
    },
  });
  new Gauge({
    name: 'volumescope_mount_health_mounts',
    help: 'Number of checked pod volume and staging mounts by the state of their last health check',
    labelNames: ['kind', 'state'],
    registers: [registry],
    collect() {
      this.reset();
      if (mountHealth === null) return;
      const counts = new Map<string, { kind: string; state: string; n: number }>();
      for (const e of mountHealth()) {
        const key = `${e.kind}|${e.state}`;
        const c = counts.get(key) ?? { kind: e.kind, state: e.state, n: 0 };
        c.n++;
        counts.set(key, c);
      }
      for (const c of counts.values()) this.set({ kind: c.kind, state: c.state }, c.n);
    },
  });
  new Gauge({
    name: 'volumescope_mount_unhealthy',
    help: 'A mount whose last health check failed (1), by its state (not-connected, io-error, stale, hung, error)',
    labelNames: ['kind', 'state', 'volume', 'pod_uid', 'path'],
    registers: [registry],
    collect() {
      this.reset();
      if (mountHealth === null) return;
      for (const e of mountHealth()) {
        if (e.state !== 'healthy') this.set({ kind: e.kind, state: e.state, volume: e.volume, pod_uid: e.podUid ?? '', path: e.path }, 1);
      }
    },
  });
  const operationDuration = new Histogram({
    name: 'storage_operation_duration_seconds',
    help: 'Storage operation duration',
    labelNames: ['volume_plugin', 'operation_name', 'status', 'migrated'],
    buckets: STORAGE_OPERATION_BUCKETS,
    registers: [registry],
  });
  const endToEnd = new Histogram({
    name: 'volume_operation_total_seconds',
    help: 'Storage operation end to end duration in seconds',
    labelNames: ['plugin_name', 'operation_name'],
    buckets: STORAGE_OPERATION_BUCKETS,
    registers: [registry],
  });
  const reconstructTotal = new Counter({
    name: 'reconstruct_volume_operations_total',
    help: 'The number of volumes that were attempted to be reconstructed from the operating system during kubelet startup. This includes both successful and failed reconstruction.',
    registers: [registry],
  });
  const reconstructErrors = new Counter({
    name: 'reconstruct_volume_operations_errors_total',
    help: 'The number of volumes that failed reconstruction from the operating system during kubelet startup.',
    registers: [registry],
  });
  const forceCleanedTotal = new Counter({
    name: 'force_cleaned_failed_volume_operations_total',
    help: 'The number of volumes that were force cleaned after their reconstruction failed during kubelet startup. This includes both successful and failed cleanups.',
    registers: [registry],
  });
  const forceCleanedErrors = new Counter({
    name: 'force_cleaned_failed_volume_operation_errors_total',
    help: 'The number of volumes that failed force cleanup after their reconstruction failed during kubelet startup.',
    registers: [registry],
  });

  const csiOperations = new Histogram({
    name: 'csi_operations_seconds',
    help: 'Container Storage Interface operation duration with gRPC error code status total',
    labelNames: ['driver_name', 'method_name', 'grpc_status_code', 'migrated'],
    buckets: STORAGE_OPERATION_BUCKETS,
    registers: [registry],
  });
  for (const [name, help, field] of VOLUME_STATS_GAUGES) {
    new Gauge({
      name,
      help,
      labelNames: ['namespace', 'persistentvolumeclaim'],
      registers: [registry],
      collect() {
        this.reset();
        if (volumeStats === null) return;
        for (const { labels, entry } of claimStats(volumeStats())) {
          const value = entry[field];
          if (value !== null) this.set(labels, value);
        }
      },
    });
  }
  new Gauge({
    name: 'kubelet_volume_stats_health_status_abnormal',
    help: 'Abnormal volume health status. The count is either 1 or 0. 1 indicates the volume is unhealthy, 0 indicates volume is healthy',
    labelNames: ['namespace', 'persistentvolumeclaim'],
    registers: [registry],
    collect() {
      this.reset();
      if (volumeStats === null) return;
      for (const { labels, entry } of claimStats(volumeStats())) {
        if (entry.condition !== null) this.set(labels, entry.condition.abnormal ? 1 : 0);
      }
    },
  });

  new Gauge({
    name: 'volumescope_volume_uncertain',
    help: 'A volume whose attach, device mount or pod mount is uncertain (1); kind is attach, device or mount',
    labelNames: ['volume', 'pod_uid', 'kind'],
    registers: [registry],
    collect() {
      this.reset();
      if (volumeManager === null) return;
      for (const u of volumeManager.getUncertainVolumes()) this.set({ volume: u.volumeName, pod_uid: u.podUID ?? '', kind: u.kind }, 1);
    },
  });
  new Gauge({
    name: 'volumescope_operation_backoff_seconds',
    help: 'The current exponential backoff window of an operation waiting for its retry after a failure (122 at the cap of 2m2s)',
    labelNames: ['operation_name', 'volume', 'pod_uid'],
    registers: [registry],
    collect() {
      this.reset();
      if (volumeManager === null) return;
      for (const op of volumeManager.getPendingOperations()) {
        if (op.pending || op.failures === 0) continue;
        this.set({ operation_name: op.operationName, volume: op.key.volumeName, pod_uid: op.key.podName }, op.durationBeforeRetry / 1000);
      }
    },
  });
  new Gauge({
    name: 'volumescope_orphaned_pods',
    help: 'Observe mode: pod directories on the node whose pods the API server no longer has',
    registers: [registry],
    collect() {
      this.reset();
      const count = orphans?.() ?? null;
      if (count !== null) this.set(count);
    },
  });

  new Gauge({
    name: SUMMARY_METRIC,
    help: "The node's summary (GET /api/v1/summary), one series per numeric field (booleans 0/1, times in epoch milliseconds; none for a count of 0)",
    labelNames: [SUMMARY_NODE_LABEL, SUMMARY_FIELD_LABEL],
    registers: [registry],
    collect() {
      this.reset();
      const series = currentSeries();
      if (series === null) return;
      for (const [field, value] of series.values) this.set({ [SUMMARY_NODE_LABEL]: series.nodeName, [SUMMARY_FIELD_LABEL]: field }, value);
    },
  });
  new Gauge({
    name: SUMMARY_INFO_METRIC,
    help: "The node's summary fields that are not numbers, as labels (always 1)",
    labelNames: [SUMMARY_NODE_LABEL, ...SUMMARY_INFO_LABELS],
    registers: [registry],
    collect() {
      this.reset();
      const series = currentSeries();
      if (series === null) return;
      this.set({ [SUMMARY_NODE_LABEL]: series.nodeName, ...series.info }, 1);
    },
  });

  return {
    registry,
    bindSummary: (current) => {
      summary = current;
    },
    bindObserve: (count) => {
      orphans = count;
    },
    observeCsiCall: (call) => {
      csiOperations.observe({ driver_name: call.driver, method_name: call.fullMethod, grpc_status_code: call.grpcStatusCode, migrated: 'false' }, call.durationMs / 1000);
    },
    bindVolumeStats: (stats) => {
      volumeStats = stats;
    },
    bindVolumeManager: (vm) => {
      volumeManager = vm;
    },
    bindMountHealth: (entries) => {
      mountHealth = entries;
    },
    observeOverallMount: (pluginName, seconds) => {
      endToEnd.observe({ plugin_name: pluginName === '' ? PLUGIN_NAME_NOT_AVAILABLE : pluginName, operation_name: 'overall_volume_mount' }, seconds);
    },
    onOperationRecord: (record) => {
      operationDuration.observe(
        {
          volume_plugin: record.plugin === '' ? PLUGIN_NAME_NOT_AVAILABLE : record.plugin,
          operation_name: record.operationName,
          status: record.outcome === 'success' ? 'success' : 'fail-unknown',
          migrated: String(record.migrated),
        },
        Math.max(0, record.finishedAt - record.generatedAt) / 1000,
      );
    },
    reconstructVolumeOperation: (failed) => {
      reconstructTotal.inc();
      if (failed) reconstructErrors.inc();
    },
    forceCleanedFailedVolumeOperation: (failedToStart) => {
      forceCleanedTotal.inc();
      if (failedToStart) forceCleanedErrors.inc();
    },
  };
}
