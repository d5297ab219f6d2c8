/**
 * The reconstruction report: every volume directory a reconstruction scan found, with what
 * became of it (reconstructed, failed with the reason, later confirmed mounted or cleaned up) and
 * when. The kubelet only logs these; here the views show them. Written by reconstruct.ts.
 */
import type { OperationRecord } from '../../operationexecutor/operation-executor.ts';
import type { PluginName, UniquePodName, UniqueVolumeName, VolumeMode } from '../../volume/types.ts';
import type { ActualStateOfWorld } from '../cache/actual-state-of-world.ts';
import type { PodVolume } from './reconstruct-common.ts';

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
  /**
   * Set while the entry is open and its pod is listed with volumes that could not be resolved:
   * the mount is kept (uncertain) for that reason (see `UnresolvedPodVolumes.describe`). Filled
   * in when the report is read (`Reconstruction.getReconstructionReport`).
   */
  keptBecause: string | null;
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

/** A report before any scan. */
export function pendingReconstructionReport(): ReconstructionReport {
  return { state: 'pending', startedAt: null, finishedAt: null, error: null, entries: [] };
}

/** The entry of a volume directory just found: `reconstructed` until the scan says otherwise. */
export function newReconstructionEntry(volume: PodVolume, scannedAt: number): ReconstructionEntry {
  return {
    podName: volume.podName,
    volumeSpecName: volume.volumeSpecName,
    pluginName: volume.pluginName,
    volumeMode: volume.volumeMode,
    volumePath: volume.volumePath,
    volumeName: null,
    outcome: 'reconstructed',
    error: null,
    keptBecause: null,
    scannedAt,
    resolvedAt: null,
  };
}

/** What made the report worth re-reading: one volume's actual state changed, or an operation finished. */
export type ReportChange = { volumeName: UniqueVolumeName } | { record: OperationRecord };

/**
 * The open entries of one report, indexed so that a change costs what it touches rather than
 * the report's size (a restart over 10,000 directories changes the actual state ~30,000 times):
 * reconstructed entries by volume (their outcome depends only on that volume's actual state),
 * failed ones by pod (resolved by that pod's cleanup record, or by a mount of that pod).
 *
 * An entry reaches its final outcome ({@link resolveEntry}) under the same conditions as when the
 * whole report is walked: a reconstructed entry once the actual state has it mounted (confirmed)
 * or not mounted (torn down); a failed one once its cleanup record succeeded, or once its pod got
 * it mounted normally. Built from the report when it is done; the first refresh walks every open
 * entry (changes made while the scan was still adding volumes were not looked at).
 */
export class OpenReportEntries {
  private readonly byVolume = new Map<UniqueVolumeName, ReconstructionEntry[]>();
  private readonly failedByPod = new Map<UniquePodName, ReconstructionEntry[]>();

  constructor(report: ReconstructionReport) {
    for (const entry of report.entries) {
      if (entry.resolvedAt !== null) continue;
      if (entry.outcome === 'reconstructed' && entry.volumeName !== null) push(this.byVolume, entry.volumeName, entry);
      else if (entry.outcome === 'failed') push(this.failedByPod, entry.podName, entry);
    }
  }

  /** Resolves every open entry that reached its final outcome; returns how many. */
  resolveAll(asw: ActualStateOfWorld, now: number): number {
    let resolved = 0;
    for (const volumeName of [...this.byVolume.keys()]) resolved += this.resolveVolume(volumeName, asw, now);
    for (const podName of [...this.failedByPod.keys()]) resolved += this.resolveFailed(podName, asw, undefined, now);
    return resolved;
  }

  /** Resolves the open entries a change can have resolved; returns how many. */
  resolveChange(change: ReportChange, asw: ActualStateOfWorld, now: number): number {
    if ('record' in change) {
      const pod = change.record.pod;
      return pod === '' ? 0 : this.resolveFailed(pod, asw, change.record, now);
    }
    let resolved = this.resolveVolume(change.volumeName, asw, now);
    if (this.failedByPod.size > 0) {
      // A failed entry is confirmed by a mount of its pod: look at this volume's pods only.
      for (const mv of asw.collectMountedVolumesOf(change.volumeName, (podName) => this.failedByPod.has(podName))) {
        resolved += this.resolveFailed(mv.podName, asw, undefined, now);
      }
    }
    return resolved;
  }

  private resolveVolume(volumeName: UniqueVolumeName, asw: ActualStateOfWorld, now: number): number {
    return resolveListed(this.byVolume, volumeName, asw, undefined, now);
  }

  private resolveFailed(podName: UniquePodName, asw: ActualStateOfWorld, record: OperationRecord | undefined, now: number): number {
    return resolveListed(this.failedByPod, podName, asw, record, now);
  }
}

/** Resolves the entries listed under `key`, keeps the open ones listed; returns how many were resolved. */
function resolveListed<K>(map: Map<K, ReconstructionEntry[]>, key: K, asw: ActualStateOfWorld, record: OperationRecord | undefined, now: number): number {
  const entries = map.get(key);
  if (entries === undefined) return 0;
  const open = entries.filter((entry) => !resolveEntry(entry, asw, record, now));
  if (open.length === 0) map.delete(key);
  else map.set(key, open);
  return entries.length - open.length;
}

function push<K>(map: Map<K, ReconstructionEntry[]>, key: K, entry: ReconstructionEntry): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [entry]);
  else list.push(entry);
}

/**
 * Resolves one open entry if it reached its final outcome (see {@link OpenReportEntries}), with
 * `record` the operation that just finished, if any. Returns true when it did.
 */
function resolveEntry(entry: ReconstructionEntry, asw: ActualStateOfWorld, record: OperationRecord | undefined, now: number): boolean {
  const resolve = (outcome: ReconstructionOutcome): boolean => {
    entry.outcome = outcome;
    entry.resolvedAt = now;
    return true;
  };
  if (entry.resolvedAt !== null) return false;
  if (entry.outcome === 'reconstructed' && entry.volumeName !== null) {
    const state = asw.getVolumeMountState(entry.volumeName, entry.podName);
    if (state === 'VolumeMounted') return resolve('confirmed-mounted');
    if (state === 'VolumeNotMounted') return resolve('cleaned-up');
  } else if (
    entry.outcome === 'failed' &&
    record !== undefined &&
    record.outcome === 'success' &&
    record.operationName === 'volume_unmount' &&
    record.volume === entry.volumeSpecName &&
    record.pod === entry.podName
  ) {
    return resolve('cleaned-up');
  } else if (entry.outcome === 'failed' && asw.volumeExistsWithSpecName(entry.podName, entry.volumeSpecName)) {
    // Failed to reconstruct, but the pod is still desired and got mounted normally.
    const mounted = asw.getMountedVolumesForPod(entry.podName).some((m) => m.innerVolumeSpecName === entry.volumeSpecName);
    if (mounted) return resolve('confirmed-mounted');
  }
  return false;
}
