/**
 * A pod's phase and its containers' states in words, as `kubectl get pod` and `describe` give
 * them: "app: ContainerCreating since 1 min", "init-db (init): Completed, exit 0, 2 min ago". Only
 * what the snapshot carries (`desired.pods[].phase` and `.containers`, from the API source): a
 * pod whose source has no status (a manifest, the demo) gets nothing, never a guess. Pure; every
 * function takes `now`.
 */
import type { ContainerState, DesiredPod } from '../api/index.ts';
import { formatDuration, formatRelative, formatUtc } from './time-format.ts';

/** The status parts of a desired pod. */
export type PodStatusSource = Pick<DesiredPod, 'phase' | 'containers'>;

/** The desired pod's status parts by UID; undefined when the pod is not desired (gone, unmounting). */
export function podStatusOf(pods: readonly DesiredPod[], uid: string): PodStatusSource | undefined {
  return pods.find((p) => p.uid === uid);
}

function restarts(c: ContainerState): string {
  return c.restartCount > 0 ? `, ${c.restartCount} restart${c.restartCount === 1 ? '' : 's'}` : '';
}

/** One container's state: `ContainerCreating since 1 min`, `Running since 3 min`, `Completed, exit 0, 2 min ago`. */
export function containerStateText(c: ContainerState, now: number): string {
  switch (c.state) {
    case 'waiting':
      return `${c.reason ?? 'Waiting'}${c.since === null ? '' : ` since ${formatDuration(now - c.since)}`}${restarts(c)}`;
    case 'running':
      return `Running${c.since === null ? '' : ` since ${formatDuration(now - c.since)}`}${c.ready ? '' : ', not ready'}${restarts(c)}`;
    case 'terminated':
      return `${c.reason ?? 'Terminated'}${c.exitCode === undefined ? '' : `, exit ${c.exitCode}`}${c.since === null ? '' : `, ${formatRelative(c.since, now)}`}${restarts(c)}`;
    case 'unknown':
      return 'no state reported yet';
  }
}

/** The container's name as kubectl lists it, its list said for init and ephemeral containers. */
export function containerLabel(c: Pick<ContainerState, 'name' | 'kind'>): string {
  return c.kind === 'container' ? c.name : `${c.name} (${c.kind})`;
}

/** `app: ContainerCreating since 1 min`. */
export function containerLine(c: ContainerState, now: number): string {
  return `${containerLabel(c)}: ${containerStateText(c, now)}`;
}

/** Where a container's `since` comes from, for a tooltip: the kubelet's time, or the agent's first sight. */
export function containerSinceTitle(c: ContainerState): string | undefined {
  if (c.since === null) return undefined;
  return c.sinceObserved
    ? `first seen in this state by the agent at ${formatUtc(c.since)} (the API has no time for a waiting state)`
    : `${c.state === 'running' ? 'started' : 'finished'} at ${formatUtc(c.since)} (the kubelet’s time)`;
}

/**
 * The pod's status in one line: `phase Pending · app: ContainerCreating since 1 min`; null when
 * the source has neither a phase nor container states.
 */
export function podStatusLine(status: PodStatusSource | undefined, now: number): string | null {
  if (status === undefined) return null;
  const parts: string[] = [];
  if (status.phase !== undefined) parts.push(`phase ${status.phase}`);
  for (const c of status.containers ?? []) parts.push(containerLine(c, now));
  return parts.length === 0 ? null : parts.join(' · ');
}
