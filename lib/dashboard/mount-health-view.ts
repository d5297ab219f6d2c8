/**
 * The mount health and unmount blockers as the dashboard shows them: which pods a mount's state
 * affects (a staging path affects every pod of its volume), the entries of one pod, volume or
 * node, unhealthy ones first, and the browser's call of the blocker search (through the
 * dashboard's route, which adds the token). Pure except {@link fetchBlockers}.
 */
import { BlockersResponseSchema, type BlockersResponse, type MountHealth, type MountHealthState, type Snapshot } from '../api/index.ts';
import { errorFromDashboardResponse, AgentUnavailableError } from './dashboard-error.ts';

/** A health entry with the pods its state affects. */
export interface MountHealthRow {
  entry: MountHealth;
  /** Pod UIDs: the entry's pod, or every pod with the volume mounted for a staging path. */
  affectedPods: string[];
}

const stateOrder: Record<MountHealthState, number> = { hung: 0, 'not-connected': 1, 'io-error': 2, stale: 3, error: 4, healthy: 5 };

/** The words for a state, for badges and verdicts. */
export const MOUNT_STATE_WORDS: Record<MountHealthState, string> = {
  healthy: 'healthy',
  'not-connected': 'not connected (transport endpoint is not connected)',
  'io-error': 'I/O error',
  stale: 'stale file handle',
  hung: 'hung (no answer)',
  error: 'error',
};

function rowOf(snapshot: Snapshot, entry: MountHealth): MountHealthRow {
  if (entry.podUid !== null) return { entry, affectedPods: [entry.podUid] };
  const volume = snapshot.actual.volumes.find((v) => v.uniqueVolumeName === entry.volume);
  return { entry, affectedPods: volume?.pods.map((p) => p.podUid) ?? [] };
}

function sorted(rows: MountHealthRow[]): MountHealthRow[] {
  return rows.sort((a, b) => stateOrder[a.entry.state] - stateOrder[b.entry.state] || (a.entry.path < b.entry.path ? -1 : a.entry.path > b.entry.path ? 1 : 0));
}

/** Every entry of the node, unhealthy first. */
export function nodeMountHealth(snapshot: Snapshot): MountHealthRow[] {
  return sorted(snapshot.mountHealth.map((e) => rowOf(snapshot, e)));
}

/** The unhealthy entries of the node, with the pods they affect. */
export function unhealthyMounts(snapshot: Snapshot): MountHealthRow[] {
  return nodeMountHealth(snapshot).filter((r) => r.entry.state !== 'healthy');
}

/** The entries that affect one pod: its volume paths and the staging paths of its volumes. */
export function podMountHealth(snapshot: Snapshot, podUid: string): MountHealthRow[] {
  return sorted(snapshot.mountHealth.map((e) => rowOf(snapshot, e)).filter((r) => r.affectedPods.includes(podUid)));
}

/** The entries of one volume (its staging path and every pod's path). */
export function volumeMountHealth(snapshot: Snapshot, volume: string): MountHealthRow[] {
  return sorted(snapshot.mountHealth.filter((e) => e.volume === volume).map((e) => rowOf(snapshot, e)));
}

/** `GET /api/agents/<agent>/volumes/blockers`: who holds the pod's volume path (or the staging path without a pod). */
export async function fetchBlockers(agent: string, volume: string, podUid: string | null, fetchFn: typeof fetch = fetch): Promise<BlockersResponse> {
  const query = new URLSearchParams({ volume, ...(podUid === null ? {} : { podUid }) });
  let response: Response;
  try {
    response = await fetchFn(`/api/agents/${encodeURIComponent(agent)}/volumes/blockers?${query.toString()}`, { headers: { Accept: 'application/json' }, cache: 'no-store' });
  } catch (err) {
    throw new AgentUnavailableError('agent-unreachable', agent, `the dashboard server did not answer: ${err instanceof Error ? err.message : String(err)}`);
  }
  const json: unknown = await response.json().catch(() => null);
  if (!response.ok) throw errorFromDashboardResponse(response.status, json);
  return BlockersResponseSchema.parse(json);
}
