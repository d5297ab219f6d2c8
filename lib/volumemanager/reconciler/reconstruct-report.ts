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

/**
 * Resolves the open entries of `report` that reached their final outcome: a reconstructed entry
 * once the actual state has it mounted (confirmed) or not mounted (torn down); a failed one once
 * its cleanup `record` succeeded, or once its pod got it mounted normally. Returns how many were
 * resolved.
 */
export function resolveReportEntries(report: ReconstructionReport, asw: ActualStateOfWorld, record: OperationRecord | undefined, now: number): number {
  let resolved = 0;
  const resolve = (entry: ReconstructionEntry, outcome: ReconstructionOutcome): void => {
    entry.outcome = outcome;
    entry.resolvedAt = now;
    resolved++;
  };
  for (const entry of report.entries) {
    if (entry.resolvedAt !== null) continue;
    if (entry.outcome === 'reconstructed' && entry.volumeName !== null) {
      const state = asw.getVolumeMountState(entry.volumeName, entry.podName);
      if (state === 'VolumeMounted') resolve(entry, 'confirmed-mounted');
      else if (state === 'VolumeNotMounted') resolve(entry, 'cleaned-up');
    } else if (
      entry.outcome === 'failed' &&
      record !== undefined &&
      record.outcome === 'success' &&
      record.operationName === 'volume_unmount' &&
      record.volume === entry.volumeSpecName &&
      record.pod === entry.podName
    ) {
      resolve(entry, 'cleaned-up');
    } else if (entry.outcome === 'failed' && asw.volumeExistsWithSpecName(entry.podName, entry.volumeSpecName)) {
      // Failed to reconstruct, but the pod is still desired and got mounted normally.
      const mounted = asw.getMountedVolumesForPod(entry.podName).some((m) => m.innerVolumeSpecName === entry.volumeSpecName);
      if (mounted) resolve(entry, 'confirmed-mounted');
    }
  }
  return resolved;
}
