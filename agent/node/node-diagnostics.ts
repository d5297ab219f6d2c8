/**
 * The node diagnostics of the agent beside the volume manager: the mount health checks of every
 * pod volume and staging path of the actual state (mount-health/), their events, and the
 * unmount-blocker search (unmount-blockers/) — on demand, and once per failed attempt of a
 * TearDown or UnmountDevice whose error says the target is busy.
 *
 * It reads the engine only through the VolumeManager's public views; the engine knows nothing of
 * it. Paths come from the actual state: a pod's volume path is its mounter's `getPath()` (the
 * CSI plugin's ends in `/mount`), a staging path is the volume's device mount path while the
 * device is (possibly) mounted.
 *
 * It is also the volume stats' statfs ({@link StatfsSource}, mount-health/probe-statfs.ts): the
 * same child process and the same hung-mount policy as the health checks.
 */
import { unmountBlockersKey, type BlockersQuery, type BlockersReport, type BlockersResponse, type MountHealth, type UnmountBlockers } from '../../lib/api/mount-health.ts';
import { compareKeys } from '../../lib/api/normalize-snapshot.ts';
import type { Clock, TimerHandle } from '../../lib/clock/clock.ts';
import type { EventRecorder, InvolvedObject } from '../../lib/volume/events.ts';
import type { Logger } from '../../lib/volume/logger.ts';
import { uniquePodName, uniqueVolumeName } from '../../lib/volume/types.ts';
import type { VolumeManager } from '../../lib/volumemanager/index.ts';
import { BlockersTargetError } from '../runtime.ts';
import { FsProbe, type StatfsResult, type StatfsSource } from './fs-probe/fs-probe.ts';
import { MountHealthChecker, type HealthTarget } from './mount-health/mount-health-checker.ts';
import { ProbeStatfs } from './mount-health/probe-statfs.ts';
import { findUnmountBlockers } from './unmount-blockers/find-blockers.ts';

/** Event reasons of the health checks (the kubelet has none for this; kubelet style). */
export const VolumeMountUnhealthy = 'VolumeMountUnhealthy';
export const VolumeMountRecovered = 'VolumeMountRecovered';

/** An unmount error that means "something still uses it": umount(8)'s, the kernel's, the errno. */
export const BUSY_UNMOUNT_ERROR = /target is busy|device or resource busy|\bEBUSY\b/i;

const UNMOUNT_OPERATIONS = new Set(['volume_unmount', 'unmount_device']);

export interface NodeDiagnosticsOptions {
  volumeManager: VolumeManager;
  rootDir: string;
  nodeName: string;
  clock: Clock;
  logger: Logger;
  recorder: EventRecorder;
  /** The namespace and name of a pod by UID, for the event's involved object; undefined when unknown. */
  podRef: (podUid: string) => { namespace: string; name: string } | undefined;
  /** Health check period; 0 = no periodic checks. */
  periodMs: number;
  timeoutMs: number;
  /** Something the snapshot shows changed. */
  notify: () => void;
  /** The blocker search (tests); default {@link findUnmountBlockers}. */
  findBlockers?: (path: string) => Promise<BlockersReport>;
}

export class NodeDiagnostics implements StatfsSource {
  private readonly opts: NodeDiagnosticsOptions;
  private readonly probe: FsProbe;
  private readonly checker: MountHealthChecker | null;
  private readonly statfsSource: ProbeStatfs;
  private readonly search: (path: string) => Promise<BlockersReport>;
  /** Busy unmounts searched, by key, with the attempt (failures, error time) the report is for. */
  private readonly blockers = new Map<string, { entry: UnmountBlockers; attempt: string }>();
  private blockerList: UnmountBlockers[] = [];
  private scanTimer: TimerHandle | null = null;
  private scanning: Promise<void> | null = null;
  private rescan = false;
  private busyVolumes = new Set<string>();
  /**
   * The health check targets as of the last change of the volume manager; null after a change.
   * A batch every 10 s would otherwise walk both worlds and build every target again (at 10,000
   * volumes megabytes that outlive the batch's probe call and end in the old generation, so an
   * idle agent never becomes idle enough for V8 to give its heap pages back).
   */
  private targetCache: HealthTarget[] | null = null;
  private unsubscribe: (() => void) | null = null;
  private stopped = false;

  constructor(opts: NodeDiagnosticsOptions) {
    this.opts = opts;
    this.probe = new FsProbe({ clock: opts.clock, logger: opts.logger });
    this.search = opts.findBlockers ?? ((path) => findUnmountBlockers({ path, rootDir: opts.rootDir, clock: opts.clock, logger: opts.logger }));
    this.checker =
      opts.periodMs <= 0
        ? null
        : new MountHealthChecker({
            clock: opts.clock,
            logger: opts.logger,
            probe: this.probe,
            targets: () => this.targets(),
            busy: (volume) => this.busyVolumes.has(volume),
            periodMs: opts.periodMs,
            timeoutMs: Math.max(100, opts.timeoutMs),
            onStateChange: (entry, previous) => {
              this.recordEvent(entry, previous);
            },
            onChange: opts.notify,
          });
    this.statfsSource = new ProbeStatfs({ probe: this.probe, health: this.checker, clock: opts.clock, timeoutMs: Math.max(100, opts.timeoutMs) });
  }

  start(): void {
    this.unsubscribe = this.opts.volumeManager.onChange(() => {
      this.targetCache = null;
      this.scheduleBlockerScan();
    });
    this.checker?.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    if (this.scanTimer !== null) this.opts.clock.clearTimeout(this.scanTimer);
    this.scanTimer = null;
    await Promise.all([this.checker?.stop(), this.scanning]);
    this.probe.close();
  }

  /** The snapshot's `mountHealth`. */
  mountHealth(): MountHealth[] {
    return this.checker?.list() ?? [];
  }

  /** The snapshot's `unmountBlockers`. */
  unmountBlockers(): UnmountBlockers[] {
    return this.blockerList;
  }

  /** `GET /api/v1/volumes/blockers`. */
  async findBlockers(query: BlockersQuery): Promise<BlockersResponse> {
    const path = this.pathOf(query.volume, query.podUid ?? null);
    const report = await this.search(path);
    return { volume: query.volume, podUid: query.podUid ?? null, ...report };
  }

  /** Runs one health batch now (tests, the benchmark). */
  checkNow(): Promise<void> {
    return this.checker?.checkNow() ?? Promise.resolve();
  }

  /** The pid of the health check's child process, or null (the benchmark's CPU accounting). */
  probePid(): number | null {
    return this.probe.childPid();
  }

  /** statfs of `paths` for the volume stats (see probe-statfs.ts). */
  statfs(paths: readonly string[], maxAgeMs: number): Promise<Map<string, StatfsResult>> {
    return this.statfsSource.statfs(paths, maxAgeMs);
  }

  // PATHS

  /** Every pod volume path and staging path of the actual state (cached until the next change), and which volumes are busy now. */
  private targets(): HealthTarget[] {
    const vm = this.opts.volumeManager;
    this.busyVolumes = new Set(vm.getPendingOperations().filter((o) => o.pending).map((o) => String(o.key.volumeName)));
    return (this.targetCache ??= this.collectTargets());
  }

  private collectTargets(): HealthTarget[] {
    const vm = this.opts.volumeManager;
    const out: HealthTarget[] = [];
    const pods = new Set<string>();
    for (const v of vm.getActualVolumes()) {
      if (v.deviceMountPath !== '' && v.deviceMountState !== 'DeviceNotMounted') out.push({ path: v.deviceMountPath, podUid: null, volume: v.volumeName, kind: 'staging' });
      for (const p of v.pods) pods.add(p.podName);
    }
    for (const podName of pods) {
      for (const m of vm.getPossiblyMountedVolumesForPod(uniquePodName(podName)).values()) {
        const path = m.mounter?.getPath();
        if (path !== undefined && path !== '') out.push({ path, podUid: m.podUID, volume: m.volumeName, kind: 'pod' });
      }
    }
    return out;
  }

  /** The pod's volume path (with `podUid`) or the staging path of a volume; throws {@link BlockersTargetError}. */
  private pathOf(volume: string, podUid: string | null): string {
    const vm = this.opts.volumeManager;
    if (podUid !== null) {
      for (const m of vm.getPossiblyMountedVolumesForPod(uniquePodName(podUid)).values()) {
        if (m.volumeName === uniqueVolumeName(volume)) {
          const path = m.mounter?.getPath() ?? '';
          if (path !== '') return path;
        }
      }
      throw new BlockersTargetError('not-found', `volume "${volume}" is not mounted for pod ${podUid} in the actual state`);
    }
    const v = vm.getActualVolumes().find((a) => a.volumeName === volume);
    if (v === undefined) throw new BlockersTargetError('not-found', `volume "${volume}" is not in the actual state`);
    if (v.deviceMountPath === '') throw new BlockersTargetError('not-found', `volume "${volume}" has no staging (device mount) path; give podUid to search a pod's volume path`);
    return v.deviceMountPath;
  }

  // EVENTS

  private recordEvent(entry: MountHealth, previous: MountHealth | null): void {
    if (entry.state === 'healthy' && previous === null) return;
    const pod = entry.podUid === null ? undefined : this.opts.podRef(entry.podUid);
    const object: InvolvedObject =
      pod === undefined || entry.podUid === null ? { kind: 'Node', name: this.opts.nodeName } : { kind: 'Pod', namespace: pod.namespace, name: pod.name, uid: entry.podUid };
    if (entry.state === 'healthy') {
      this.opts.recorder.event(object, 'Normal', VolumeMountRecovered, `MountVolume health check: ${entry.path} of volume "${entry.volume}" is healthy again (was ${previous?.state ?? 'unknown'})`, entry.volume);
    } else {
      this.opts.recorder.event(object, 'Warning', VolumeMountUnhealthy, `MountVolume health check: ${entry.path} of volume "${entry.volume}" is ${entry.state}: ${entry.error ?? ''}`, entry.volume);
    }
  }

  // BLOCKERS OF BUSY UNMOUNTS

  private scheduleBlockerScan(): void {
    if (this.stopped || this.scanTimer !== null) return;
    if (this.scanning !== null) {
      this.rescan = true;
      return;
    }
    this.scanTimer = this.opts.clock.setTimeout(() => {
      this.scanTimer = null;
      this.scanning = this.scanBusyUnmounts().finally(() => {
        this.scanning = null;
        if (this.rescan) {
          this.rescan = false;
          this.scheduleBlockerScan();
        }
      });
    }, 0);
  }

  /** Searches the blockers of each busy unmount once per failed attempt; drops the entries of operations gone. */
  private async scanBusyUnmounts(): Promise<void> {
    const vm = this.opts.volumeManager;
    const wanted = new Map<string, { operationName: string; volume: string; podUid: string | null; attempt: string }>();
    for (const op of vm.getPendingOperations()) {
      if (!UNMOUNT_OPERATIONS.has(op.operationName) || op.pending || op.lastError === null || !BUSY_UNMOUNT_ERROR.test(op.lastError)) continue;
      const podUid = op.key.podName === '' ? null : String(op.key.podName);
      const entry = { operationName: op.operationName, volume: String(op.key.volumeName), podUid, attempt: `${String(op.failures)}@${String(op.lastErrorTime)}` };
      wanted.set(unmountBlockersKey(entry), entry);
    }
    let changed = false;
    for (const key of this.blockers.keys()) {
      if (!wanted.has(key)) {
        this.blockers.delete(key);
        changed = true;
      }
    }
    for (const [key, w] of wanted) {
      if (this.stopped) break;
      if (this.blockers.get(key)?.attempt === w.attempt) continue;
      let path: string;
      try {
        path = w.operationName === 'unmount_device' ? this.pathOf(w.volume, null) : this.pathOf(w.volume, w.podUid);
      } catch {
        continue; // gone from the actual state meanwhile
      }
      try {
        const report = await this.search(path);
        this.blockers.set(key, { entry: { operationName: w.operationName, volume: w.volume, podUid: w.podUid, report }, attempt: w.attempt });
        changed = true;
      } catch (err) {
        this.opts.logger.warn('unmount blockers: the search failed', { volume: w.volume, path, err: err instanceof Error ? err.message : String(err) });
      }
    }
    if (changed) {
      this.blockerList = [...this.blockers.values()].map((b) => b.entry).sort((a, b) => compareKeys(unmountBlockersKey(a), unmountBlockersKey(b)));
      this.opts.notify();
    }
  }
}
