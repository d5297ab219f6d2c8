/**
 * The Node's conditions as the node page shows them: which are healthy, worst first. `Ready` is
 * healthy when `True`; every other condition (`MemoryPressure`, `DiskPressure`, `PIDPressure`,
 * `NetworkUnavailable`, a node problem detector's) when `False`; `Unknown` never is. Pure.
 */
import type { NodeCondition } from '../api/index.ts';

/** One condition, ready to show. */
export interface NodeConditionView {
  readonly type: string;
  readonly status: string;
  readonly healthy: boolean;
  /** `Ready` / `DiskPressure: True (KubeletHasDiskPressure)`: the status is named when it is not healthy. */
  readonly text: string;
  /** The condition's message, for a title; null when it has none. */
  readonly message: string | null;
  readonly since: number | null;
}

/** The conditions to show, unhealthy first (in the API server's order within each group); null when the snapshot has none (no API server). */
export function nodeConditionsView(conditions: readonly NodeCondition[] | undefined): NodeConditionView[] | null {
  if (conditions === undefined) return null;
  const views = conditions.map((c): NodeConditionView => {
    const healthy = c.type === 'Ready' ? c.status === 'True' : c.status === 'False';
    return {
      type: c.type,
      status: c.status,
      healthy,
      text: healthy ? c.type : `${c.type}: ${c.status}${c.reason === undefined ? '' : ` (${c.reason})`}`,
      message: c.message ?? null,
      since: c.lastTransitionTime,
    };
  });
  return [...views.filter((v) => !v.healthy), ...views.filter((v) => v.healthy)];
}
