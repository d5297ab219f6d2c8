/**
 * "Does any process of this pod still run?" without a container runtime connection: every
 * container of a pod runs in a cgroup whose path names the pod UID (`…/pod<uid>/…` with the
 * cgroupfs driver, `…-pod<uid with _ for ->.slice/…` with the systemd driver). Reading
 * `/proc/<pid>/cgroup` of every process answers it on the host, or in a container with
 * `hostPID: true` (the observe DaemonSet). Used as the "no running container" guard of the
 * orphan cleanup: a wrong "none" would let a cleanup unmount a live pod's volume, so every
 * doubt (an unreadable /proc) answers "maybe running" by throwing.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { errorMessage } from '../volume/errors.ts';

/** /proc cannot be listed: the caller must treat the pod as possibly running. */
export class PodProcessScanError extends Error {
  override readonly name = 'PodProcessScanError';
}

export function isPodProcessScanError(err: unknown): err is PodProcessScanError {
  return err instanceof PodProcessScanError;
}

/** The two spellings of a pod UID in cgroup paths. */
export function podCgroupMarkers(podUid: string): string[] {
  return [`pod${podUid}`, `pod${podUid.replaceAll('-', '_')}`];
}

/**
 * True when some process's cgroup names the pod. Processes that exit during the scan are
 * skipped; a /proc that cannot be listed throws {@link PodProcessScanError}.
 */
export async function podHasRunningProcesses(podUid: string, procRoot = '/proc'): Promise<boolean> {
  let entries: string[];
  try {
    entries = await readdir(procRoot);
  } catch (err) {
    throw new PodProcessScanError(`cannot list ${procRoot} to look for processes of pod ${podUid}: ${errorMessage(err)}`);
  }
  const markers = podCgroupMarkers(podUid);
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let text: string;
    try {
      text = await readFile(join(procRoot, entry, 'cgroup'), 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    if (markers.some((m) => text.includes(m))) return true;
  }
  return false;
}
