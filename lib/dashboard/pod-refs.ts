/**
 * Pods named as operators name them: `namespace/name` first, the UID secondary. A snapshot names
 * the pods it still wants (`desired.pods`); a pod that is gone is named by the events recorded
 * about it (`recentEvents[].podNamespace/podName`, kept by the agent with each event and across
 * its restarts). A pod neither names is shown by its UID alone: nothing is invented. Pure.
 */
import type { DesiredPod, RecentEvent } from '../api/index.ts';
import { podDisplayName } from './pipeline.ts';

/** uid → `namespace/name`. */
export type PodNames = ReadonlyMap<string, string>;

/**
 * The names of every pod the snapshot can name: desired pods first (their current name), then
 * pods only events name (the latest event wins).
 */
export function podNamesOf(pods: readonly DesiredPod[], events: readonly RecentEvent[]): PodNames {
  const names = new Map<string, string>();
  for (const e of events) {
    if (e.podUid === null || e.podName === undefined) continue;
    names.set(e.podUid, podDisplayName({ namespace: e.podNamespace ?? null, name: e.podName }));
  }
  for (const p of pods) names.set(p.uid, podDisplayName(p));
  return names;
}

function sameNames(a: PodNames, b: PodNames): boolean {
  if (a.size !== b.size) return false;
  for (const [uid, name] of a) if (b.get(uid) !== name) return false;
  return true;
}

/**
 * `podNamesOf` with memory: the previous map (same object) while the names did not change. A new
 * event about a pod the snapshot already names (most of a live node's events) then changes
 * nothing downstream, so the memoized table rows that take the names do not re-render. Make one
 * per view.
 */
export function createPodNamesSelector(): (pods: readonly DesiredPod[], events: readonly RecentEvent[]) => PodNames {
  let last: PodNames | null = null;
  return (pods, events) => {
    const next = podNamesOf(pods, events);
    if (last === null || !sameNames(last, next)) last = next;
    return last;
  };
}

/** `namespace/name (uid <uid>)`, or `uid <uid>` when no name is known: for sentences and accessible names. */
export function podRefText(uid: string, names: PodNames): string {
  const name = names.get(uid);
  return name === undefined ? `uid ${uid}` : `${name} (uid ${uid})`;
}

/** `namespace/name`, or the UID when no name is known: for short labels. */
export function podShortText(uid: string, names: PodNames): string {
  return names.get(uid) ?? uid;
}

/**
 * An audit entry's target with its pod named: `<podUid>/<volume>` (retry, unmount) or `<podUid>`
 * (orphan cleanup) become `namespace/name (uid <uid>): <volume>`; anything else (a volume-level
 * retry's volume) and pods without a name stay as they are.
 */
export function auditTargetText(target: string, names: PodNames): string {
  const slash = target.indexOf('/');
  const uid = slash < 0 ? target : target.slice(0, slash);
  const name = names.get(uid);
  if (name === undefined) return target;
  return slash < 0 ? `${name} (uid ${uid})` : `${name} (uid ${uid}): ${target.slice(slash + 1)}`;
}
