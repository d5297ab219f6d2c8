/**
 * The operator's "resync" pass (POST /api/v1/resync): compares what is on disk and in the mount
 * table with the actual state of world, then runs a batched attach verification.
 *
 * Contract: the comparison only reads and reports; the engine owns the worlds and corrects them
 * through its own loops (a volume found detached is marked so inside `verifyAttachedVolumes`,
 * which is the one state change this pass can cause: its pod entries stay until they are torn
 * down or set up again). A volume or pod with an operation running right now is skipped, since
 * its directory and mount are in flux.
 *
 * What counts as a difference (one `changes` line each):
 * - a volume directory `pods/<uid>/volumes/<plugin>/<name>` whose (pod, plugin, name) is not in
 *   the actual state (an orphan, or one reconstruction could not adopt);
 * - a (pod, volume) of the actual state whose directory is missing;
 * - a mount point below `pods/` that lies in no directory of the actual state.
 */
import { join } from 'node:path';
import type { Clock } from '../clock/clock.ts';
import { mountsAtOrBelow, pathWithinOrEqual } from '../mount-utils/mount-table.ts';
import type { MountLister } from '../mount-utils/mounter.ts';
import { errorMessage } from '../volume/errors.ts';
import { nodeHostFs, type HostFs } from '../volume/util/host-fs.ts';
import { escapePluginName } from '../volume/types.ts';
import { getVolumesFromPodDir, type PodVolume, type VolumeManager } from '../volumemanager/index.ts';

/** What a resync (rescan of the root dir and mountinfo + batched attach verification) found. */
export interface ResyncFindings {
  startedAt: number;
  finishedAt: number;
  /** Volume directories found under `<root>/pods` and mount points under the root. */
  rescanned: { volumes: number; mountPoints: number };
  attachVerification: { checked: string[]; foundDetached: string[]; errors: string[] };
  /** Human-readable differences found between disk/mountinfo and the actual state. */
  changes: string[];
}

/** What the pass reads of the volume manager, and the one call that may change it. */
export type ResyncVolumeManager = Pick<VolumeManager, 'getPendingOperations' | 'getActualVolumes' | 'verifyAttachedVolumes'>;

export interface ResyncDeps {
  /** The kubelet root dir (resolved, as mountinfo reports it). */
  rootDir: string;
  volumeManager: ResyncVolumeManager;
  mounter: MountLister;
  clock: Clock;
  /** Default node:fs. */
  hostFs?: HostFs;
}

/** Rescans `<root>/pods` and the mount table, compares, then verifies attached volumes. */
export async function runResync(deps: ResyncDeps): Promise<ResyncFindings> {
  const { volumeManager: vm, clock } = deps;
  const startedAt = Math.floor(clock.now());
  const podsDir = join(deps.rootDir, 'pods');
  const changes: string[] = [];

  let onDisk: PodVolume[] = [];
  try {
    onDisk = await getVolumesFromPodDir(podsDir, deps.hostFs ?? nodeHostFs);
  } catch (err) {
    changes.push(`cannot rescan volume directories: ${errorMessage(err)}`);
  }
  const mountPoints = mountsAtOrBelow(await deps.mounter.list(), deps.rootDir).map((m) => m.mountPoint);

  // Pods (and volumes) with a running operation are in flux: skip them.
  const busyPods = new Set<string>();
  const busyVolumes = new Set<string>();
  for (const op of vm.getPendingOperations()) {
    if (!op.pending) continue;
    if (op.key.podName === '') busyVolumes.add(op.key.volumeName);
    else busyPods.add(op.key.podName);
  }

  // (pod uid, escaped plugin, inner spec name) → the actual state's entry.
  const actual = new Map<string, { volumeName: string; podUid: string; busy: boolean }>();
  for (const v of vm.getActualVolumes()) {
    for (const p of v.pods) {
      actual.set(dirKey(p.podUID, escapePluginName(v.pluginName), p.innerVolumeSpecName), {
        volumeName: v.volumeName,
        podUid: p.podUID,
        busy: busyVolumes.has(v.volumeName) || busyPods.has(p.podName),
      });
    }
  }

  const seen = new Set<string>();
  const volumeDirs: string[] = [];
  for (const d of onDisk) {
    const key = dirKey(d.podName, escapePluginName(d.pluginName), d.volumeSpecName);
    seen.add(key);
    volumeDirs.push(d.volumePath);
    if (!actual.has(key) && !busyPods.has(d.podName)) {
      changes.push(`${relative(podsDir, d.volumePath)}: volume directory on disk is not in the actual state of world`);
    }
  }
  for (const [key, a] of actual) {
    if (seen.has(key) || a.busy) continue;
    const [uid, plugin, name] = key.split('\u0000');
    changes.push(`volume ${a.volumeName} of pod ${a.podUid}: in the actual state of world, but pods/${uid ?? ''}/volumes/${plugin ?? ''}/${name ?? ''} is missing`);
  }
  const knownDirs = onDisk.filter((d) => actual.has(dirKey(d.podName, escapePluginName(d.pluginName), d.volumeSpecName))).map((d) => d.volumePath);
  for (const mp of mountPoints) {
    if (!pathWithinOrEqual(mp, podsDir)) continue;
    if (knownDirs.some((dir) => pathWithinOrEqual(mp, dir))) continue;
    const podUid = mp.slice(podsDir.length + 1).split('/')[0] ?? '';
    if (busyPods.has(podUid)) continue;
    changes.push(`mount point ${mp} is not in the actual state of world`);
  }

  const verification = await vm.verifyAttachedVolumes();
  for (const name of verification.foundDetached) {
    changes.push(`volume ${name}: found detached; its pods stay in the actual state of world (uncertain) until they are torn down, or mounted again once it is attached again`);
  }
  for (const err of verification.errors) changes.push(`attach verification: ${err}`);

  return {
    startedAt,
    finishedAt: Math.floor(clock.now()),
    rescanned: { volumes: volumeDirs.length, mountPoints: mountPoints.length },
    attachVerification: {
      checked: [...verification.checked],
      foundDetached: [...verification.foundDetached],
      errors: [...verification.errors],
    },
    changes,
  };
}

function dirKey(podUid: string, escapedPlugin: string, name: string): string {
  return `${podUid}\u0000${escapedPlugin}\u0000${name}`;
}

function relative(podsDir: string, path: string): string {
  return path.startsWith(`${podsDir}/`) ? `pods/${path.slice(podsDir.length + 1)}` : path;
}
