/**
 * Removal of orphaned pod directories (kubelet `cleanupOrphanedPodDirs`, kubernetes/kubernetes
 * pkg/kubelet/kubelet_volumes.go@v1.34, run from its 2 s housekeeping): the volume manager tears
 * volumes down and removes each volume directory, but `pods/<uid>/` itself belongs to the
 * kubelet, which deletes it once the pod is gone and nothing of it remains mounted or on disk.
 *
 * A pod directory is removed only when all of these hold, checked in this order each time:
 * - the pod sources have listed every pod once: the kubelet skips its housekeeping until then
 *   (pkg/kubelet/kubelet.go@v1.34 syncLoopIteration, "SyncLoop (housekeeping, skipped): sources
 *   aren't ready yet"), so a pod that is merely not listed yet is never taken for an orphan;
 * - the volume manager's states are synced (reconstruction finished), as the kubelet waits for;
 * - the pod is unknown to the source (a terminated pod that is still listed keeps its directory);
 * - the pod has no volumes in the desired state and none mounted or uncertain in the actual state;
 * - no volume directory exists below `volumes/` or `volumeDevices/` (a volume that could not be
 *   reconstructed or torn down keeps the pod directory, as in the kubelet);
 * - then `safeRemoveTree` with the fresh mount table: only empty directories and known metadata
 *   files go, never anything mounted, on another filesystem or behind a symlink.
 *
 * Disk access goes through the safe-removal helper's file-system seam (`SafeRemoveFs`), the same
 * calls for the checks and for the removal; entries of `pods/` that are not directories (a file,
 * a symlink) are never candidates.
 */
import { join } from 'node:path';
import { delayToNextTick, type Clock, type TimerHandle } from '../clock/clock.ts';
import type { MountLister } from '../mount-utils/mounter.ts';
import { nodeSafeRemoveFs, safeRemoveTree, type SafeRemoveFs } from '../mount-utils/safe-remove.ts';
import { errorMessage } from '../volume/errors.ts';
import type { Logger } from '../volume/logger.ts';
import { uniquePodName, type UniquePodName } from '../volume/types.ts';
import type { DesiredStateView } from '../volumemanager/index.ts';

/** The kubelet's housekeeping period. */
export const housekeepingPeriodMs = 2000;

/** What the cleanup reads of the volume manager (a `VolumeManager` is one). */
export interface OrphanedPodDirsVolumeManager {
  /** Reconstruction finished: the actual state shows what is mounted. */
  reconcilerStatesHasBeenSynced(): boolean;
  /** The pod has a volume mounted or uncertain in the actual state. */
  hasPossiblyMountedVolumesForPod(podName: UniquePodName): boolean;
  desiredState(): Pick<DesiredStateView, 'getPods'>;
}

export interface OrphanedPodDirsOptions {
  /** The kubelet root dir (resolved): `pods/` is below it, and nothing outside it is removed. */
  rootDir: string;
  volumeManager: OrphanedPodDirsVolumeManager;
  /** True while the source knows the pod (listed, terminated or not). */
  podKnown: (uid: string) => boolean;
  /** True once the pod sources have listed every pod (then stays true). */
  sourcesReady: () => boolean;
  /** Read fresh before every removal step. */
  mounter: MountLister;
  clock: Clock;
  logger: Logger;
  /** Default {@link housekeepingPeriodMs}. */
  periodMs?: number;
  /** Default node:fs. */
  fs?: SafeRemoveFs;
}

export class OrphanedPodDirs {
  private readonly podsDir: string;
  private readonly fs: SafeRemoveFs;
  private timer: TimerHandle | null = null;
  private running: Promise<void> | null = null;
  private stopped = true;
  /** Refusals already logged, so a stuck directory is reported once, not every 2 s. */
  private readonly reported = new Set<string>();

  constructor(private readonly o: OrphanedPodDirsOptions) {
    this.podsDir = join(o.rootDir, 'pods');
    this.fs = o.fs ?? nodeSafeRemoveFs;
  }

  /** Runs {@link cleanupOnce} every period, each pass scheduled after the previous one ended. */
  start(): void {
    this.stopped = false;
    this.schedule();
  }

  /** No pass starts after this; resolves once a running pass ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) this.o.clock.clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  /**
   * One housekeeping pass; resolves with the pod directories removed. An unreadable `pods/`
   * removes nothing. A directory the safe removal refuses stays and is logged once (warn) until
   * it is removed.
   */
  async cleanupOnce(): Promise<string[]> {
    const vm = this.o.volumeManager;
    if (!this.o.sourcesReady() || !vm.reconcilerStatesHasBeenSynced()) return [];
    let names: string[];
    try {
      names = await this.fs.readdir(this.podsDir);
    } catch {
      return [];
    }
    const candidates = names.filter((uid) => !this.o.podKnown(uid));
    if (candidates.length === 0) return [];
    const desired = vm.desiredState().getPods();
    const removed: string[] = [];
    for (const uid of candidates) {
      const podDir = join(this.podsDir, uid);
      if (!(await this.isDirectory(podDir))) continue;
      const podName = uniquePodName(uid);
      if (desired.has(podName) || vm.hasPossiblyMountedVolumesForPod(podName)) continue;
      if (await this.hasVolumeDirs(podDir)) continue;
      // Re-check right before removing: the pod may have appeared while the disk was read.
      if (this.o.podKnown(uid) || vm.hasPossiblyMountedVolumesForPod(podName)) continue;
      const result = await safeRemoveTree(podDir, { mounter: this.o.mounter, root: this.o.rootDir, volumeDirsVerifiedUnmounted: true, fs: this.fs });
      if (result.refused.length === 0) {
        removed.push(podDir);
        this.reported.delete(podDir);
        this.o.logger.info(`Cleaned up orphaned pod volumes dir`, { podUID: uid, path: podDir });
      } else if (!this.reported.has(podDir)) {
        this.reported.add(podDir);
        this.o.logger.warn(`Orphaned pod ${uid} found, but its directory cannot be removed: ${result.refused.map((r) => r.reason).join('; ')}`, { podUID: uid });
      }
    }
    return removed;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = this.o.clock.setTimeout(() => {
      this.timer = null;
      this.running = this.cleanupOnce()
        .then(() => undefined)
        .catch((err: unknown) => {
          this.o.logger.error(`Orphaned pod directory cleanup failed: ${errorMessage(err)}`);
        })
        .finally(() => {
          this.running = null;
          this.schedule();
        });
    }, delayToNextTick(this.o.clock, this.o.periodMs ?? housekeepingPeriodMs));
  }

  /** A directory itself (lstat: a symlink to one is not); gone or unreadable counts as not. */
  private async isDirectory(path: string): Promise<boolean> {
    try {
      return (await this.fs.lstat(path)).isDirectory();
    } catch {
      return false;
    }
  }

  /** Whether `volumes/<plugin>/<entry>` or `volumeDevices/<plugin>/<entry>` exists (any entry). */
  private async hasVolumeDirs(podDir: string): Promise<boolean> {
    for (const top of ['volumes', 'volumeDevices']) {
      let plugins: string[];
      try {
        plugins = await this.fs.readdir(join(podDir, top));
      } catch {
        continue;
      }
      for (const plugin of plugins) {
        try {
          if ((await this.fs.readdir(join(podDir, top, plugin))).length > 0) return true;
        } catch {
          // Not a directory: safeRemoveTree decides about it.
        }
      }
    }
    return false;
  }
}
