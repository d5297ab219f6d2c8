/**
 * The kubelet's volume stats (`--volume-stats-agg-period`, default 1m: `fsResourceAnalyzer` and
 * each plugin's `MetricsProvider`), for the snapshot's `volumeStats` and the
 * `kubelet_volume_stats_*` gauges: every pass walks the pod volumes the actual state has mounted
 * and asks
 *
 * - a CSI volume's driver, `NodeGetVolumeStats(volume_id, volume_path = the publish target,
 *   staging_target_path)` when the driver advertises GET_VOLUME_STATS (as the kubelet's
 *   `metricsCsi`), with the volume condition when it advertises VOLUME_CONDITION. The call has
 *   its own deadline ({@link VolumeStatsCollectorOptions.callTimeoutMs}, default 10 s), so a
 *   driver that hangs costs one pending call, never the agent; at most 4 calls run at once;
 * - every other volume with a path, statfs(2) of its directory from a {@link StatfsSource}: the
 *   node diagnostics (mount-health/probe-statfs.ts), whose mount health checks already statfs
 *   every pod volume path in a child process a hung mount cannot block, and whose numbers are
 *   reused while fresh (the kubelet uses
 *   `du` for emptyDir, configMap and secret volumes; statfs gives the filesystem's numbers, not
 *   the directory's).
 *
 * Cadence: the kubelet refreshes each pod's volume stats `wait.JitterUntil(period, 1.0, sliding)`
 * (kubernetes/kubernetes pkg/kubelet/server/stats/volume_stat_calculator.go@v1.34), i.e. every
 * period × (1 + a random fraction), between one and two periods after the previous one ended.
 * The collector does the same with one timer for all volumes (no timer per pod or volume):
 * every pass waits period × (1 + random) after the previous one ended, so each volume is asked
 * as often as the kubelet asks it. Passes never overlap. Listeners hear of a pass only when an
 * entry's numbers, condition or error changed (not its timestamps), so a pass that finds the
 * same numbers costs no snapshot rebuild. Memory is one entry per mounted pod volume; entries of
 * volumes no longer mounted go with the next pass.
 */
import type { Clock, TimerHandle } from '../../lib/clock/clock.ts';
import { errorMessage } from '../../lib/volume/errors.ts';
import type { Logger } from '../../lib/volume/logger.ts';
import type { CsiDriverRegistry } from '../../lib/volume/csi/index.ts';
import { CSI_PLUGIN_NAME } from '../../lib/volume/csi/index.ts';
import type { MountedVolume, VolumeManager } from '../../lib/volumemanager/index.ts';
import type { StatfsSource, StatfsUsage } from './fs-probe/fs-probe.ts';

/** The kubelet's `--volume-stats-agg-period` default. */
export const DEFAULT_VOLUME_STATS_PERIOD_MS = 60_000;

/** One pod volume's stats, as the snapshot's `volumeStats[]` carries them. */
export interface VolumeStatsEntry {
  podUid: string;
  /** The pod's name of the volume (`outerVolumeSpecName`). */
  volumeName: string;
  uniqueVolumeName: string;
  pluginName: string;
  /** The CSI driver; null for other plugins. */
  driver: string | null;
  /** The directory the numbers are of (the publish target for CSI). */
  path: string;
  /** The claim the volume's PV is bound to (the kubelet's metric labels); null without a PV claim. */
  persistentVolumeClaim: { namespace: string; name: string } | null;
  source: 'csi' | 'statfs';
  capacityBytes: number | null;
  availableBytes: number | null;
  usedBytes: number | null;
  inodes: number | null;
  inodesFree: number | null;
  inodesUsed: number | null;
  /** The driver's VOLUME_CONDITION; null when it does not report one. */
  condition: { abnormal: boolean; message: string } | null;
  collectedAt: number;
  durationMs: number;
  /** Why there are no numbers (call failed, capability missing, statfs hung); null with numbers. */
  error: string | null;
}

export interface VolumeStatsCollectorOptions {
  volumeManager: Pick<VolumeManager, 'actualState'>;
  registry: Pick<CsiDriverRegistry, 'client' | 'nodeCapabilities'>;
  statfs: StatfsSource;
  clock: Clock;
  logger: Logger;
  /** The period; each pass starts period × (1 + random()) after the previous one ended. Default {@link DEFAULT_VOLUME_STATS_PERIOD_MS}. */
  periodMs?: number;
  /** The jitter's source of fractions in [0, 1); default Math.random (tests inject their own). */
  random?: () => number;
  /** Deadline of each NodeGetVolumeStats call; default 10 s. */
  callTimeoutMs?: number;
  /** Called after a pass that changed an entry (see the file comment). */
  onChange?: () => void;
}

const CSI_CONCURRENCY = 4;

export class VolumeStatsCollector {
  private readonly opts: VolumeStatsCollectorOptions;
  private readonly callTimeoutMs: number;
  private entries: VolumeStatsEntry[] = [];
  private timer: TimerHandle | null = null;
  private stopped = false;
  private running: Promise<void> | null = null;
  private passes = 0;

  constructor(opts: VolumeStatsCollectorOptions) {
    this.opts = opts;
    this.callTimeoutMs = opts.callTimeoutMs ?? 10_000;
  }

  /** Starts the periodic passes (the first one now). */
  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) this.opts.clock.clearTimeout(this.timer);
    this.timer = null;
  }

  /** The last pass's entries, by pod UID and volume name. */
  stats(): VolumeStatsEntry[] {
    return this.entries;
  }

  /** Whether a pass has finished. */
  hasRun(): boolean {
    return this.passes > 0;
  }

  /** Runs one pass now (or joins the running one). */
  collectNow(): Promise<void> {
    this.running ??= this.pass().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = this.opts.clock.setTimeout(() => {
      this.timer = null;
      void this.collectNow().finally(() => {
        const periodMs = this.opts.periodMs ?? DEFAULT_VOLUME_STATS_PERIOD_MS;
        this.schedule(periodMs * (1 + (this.opts.random ?? Math.random)()));
      });
    }, delayMs);
  }

  private async pass(): Promise<void> {
    const mounted = this.opts.volumeManager
      .actualState()
      .getMountedVolumes()
      .filter((mv) => mv.mounter !== null);
    const csi = mounted.filter((mv) => mv.pluginName === CSI_PLUGIN_NAME);
    const other = mounted.filter((mv) => mv.pluginName !== CSI_PLUGIN_NAME);
    const [csiEntries, statfsEntries] = await Promise.all([this.collectCsi(csi), this.collectStatfs(other)]);
    this.passes++;
    const entries = [...csiEntries, ...statfsEntries].sort((a, b) => compare(`${a.podUid}|${a.volumeName}`, `${b.podUid}|${b.volumeName}`));
    const changed = this.passes === 1 || !sameFigures(this.entries, entries);
    this.entries = entries;
    if (changed) this.opts.onChange?.();
  }

  private async collectStatfs(volumes: readonly MountedVolume[]): Promise<VolumeStatsEntry[]> {
    if (volumes.length === 0) return [];
    const paths = volumes.map((mv) => mv.mounter?.getPath() ?? '');
    const results = await this.opts.statfs.statfs(paths, this.opts.periodMs ?? DEFAULT_VOLUME_STATS_PERIOD_MS);
    const collectedAt = this.opts.clock.now();
    return volumes.map((mv, i) => {
      const path = paths[i] ?? '';
      const r = results.get(path);
      const base = baseEntry(mv, path, null, 'statfs', collectedAt);
      if (r === undefined) return { ...base, error: 'no statfs result' };
      return r.ok ? { ...base, ...r.usage, durationMs: r.durationMs } : { ...base, durationMs: r.durationMs, error: r.error };
    });
  }

  private async collectCsi(volumes: readonly MountedVolume[]): Promise<VolumeStatsEntry[]> {
    const out: VolumeStatsEntry[] = [];
    let next = 0;
    const worker = async (): Promise<void> => {
      for (let i = next++; i < volumes.length; i = next++) {
        out.push(await this.csiEntry(volumes[i] as MountedVolume));
      }
    };
    await Promise.all(Array.from({ length: Math.min(CSI_CONCURRENCY, volumes.length) }, worker));
    return out;
  }

  private async csiEntry(mv: MountedVolume): Promise<VolumeStatsEntry> {
    const path = mv.mounter?.getPath() ?? '';
    const src = mv.volumeSpec.persistentVolume?.spec.csi ?? mv.volumeSpec.volume?.csi;
    const driver = src?.driver ?? '';
    const started = this.opts.clock.monotonic();
    const base = baseEntry(mv, path, driver, 'csi', this.opts.clock.now());
    const caps = this.opts.registry.nodeCapabilities(driver);
    if (caps === undefined) return { ...base, error: `driver name ${driver} not found in the list of registered CSI drivers` };
    if (!caps.has('GET_VOLUME_STATS')) return { ...base, error: `CSI driver ${driver} does not advertise GET_VOLUME_STATS` };
    // The volume id: the PV's volumeHandle; inline (ephemeral) volumes carry theirs in vol_data.json, as the mounter knows it.
    const volumeId = mv.volumeSpec.persistentVolume?.spec.csi?.volumeHandle ?? (mv.mounter as { volumeHandle?: string } | null)?.volumeHandle ?? '';
    try {
      const res = await this.opts.registry.client(driver).nodeGetVolumeStats(
        {
          volume_id: volumeId,
          volume_path: path,
          ...(caps.has('STAGE_UNSTAGE_VOLUME') && mv.deviceMountPath !== '' ? { staging_target_path: mv.deviceMountPath } : {}),
        },
        { timeoutMs: this.callTimeoutMs },
      );
      const bytes = res.usage.find((u) => u.unit === 'BYTES');
      const inodes = res.usage.find((u) => u.unit === 'INODES');
      const condition = caps.has('VOLUME_CONDITION') && res.volume_condition !== null ? { abnormal: res.volume_condition.abnormal, message: res.volume_condition.message } : null;
      return {
        ...base,
        capacityBytes: bytes?.total ?? null,
        availableBytes: bytes?.available ?? null,
        usedBytes: bytes?.used ?? null,
        inodes: inodes?.total ?? null,
        inodesFree: inodes?.available ?? null,
        inodesUsed: inodes?.used ?? null,
        condition,
        durationMs: Math.round(this.opts.clock.monotonic() - started),
      };
    } catch (err) {
      this.opts.logger.debug('NodeGetVolumeStats failed', { driver, volume: mv.volumeName, error: errorMessage(err) });
      return { ...base, durationMs: Math.round(this.opts.clock.monotonic() - started), error: errorMessage(err) };
    }
  }
}

function baseEntry(mv: MountedVolume, path: string, driver: string | null, source: 'csi' | 'statfs', collectedAt: number): VolumeStatsEntry {
  const claim = mv.volumeSpec.persistentVolume?.spec.claimRef;
  const empty: Record<keyof StatfsUsage, null> = { capacityBytes: null, availableBytes: null, usedBytes: null, inodes: null, inodesFree: null, inodesUsed: null };
  return {
    podUid: mv.podUID,
    volumeName: mv.outerVolumeSpecName,
    uniqueVolumeName: mv.volumeName,
    pluginName: mv.pluginName,
    driver,
    path,
    persistentVolumeClaim: claim?.name !== undefined && claim.name !== '' ? { namespace: claim.namespace ?? '', name: claim.name } : null,
    source,
    ...empty,
    condition: null,
    collectedAt,
    durationMs: 0,
    error: null,
  };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The entry fields a pass reports (everything but when and how long). */
const FIGURES = ['podUid', 'volumeName', 'uniqueVolumeName', 'path', 'source', 'capacityBytes', 'availableBytes', 'usedBytes', 'inodes', 'inodesFree', 'inodesUsed', 'error'] as const satisfies readonly (keyof VolumeStatsEntry)[];

/** Whether two passes (sorted alike) report the same volumes with the same figures, conditions and errors. */
export function sameFigures(a: readonly VolumeStatsEntry[], b: readonly VolumeStatsEntry[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as VolumeStatsEntry;
    const y = b[i] as VolumeStatsEntry;
    for (const key of FIGURES) if (x[key] !== y[key]) return false;
    if (x.condition?.abnormal !== y.condition?.abnormal || x.condition?.message !== y.condition?.message) return false;
  }
  return true;
}
