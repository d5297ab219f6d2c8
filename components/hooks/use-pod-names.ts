import { useMemo } from 'react';
import type { Snapshot } from '../../lib/api/index.ts';
import { podDisplayName } from '../../lib/dashboard/pipeline.ts';

/**
 * uid → `namespace/name` of the desired pods, for tables that only have UIDs. A pod that is not
 * desired (any more) has no entry: tables show its UID. Recomputed only when the pods change.
 */
export function usePodNames(snapshot: Snapshot): ReadonlyMap<string, string> {
  const pods = snapshot.desired.pods;
  return useMemo(() => new Map(pods.map((p) => [p.uid, podDisplayName(p)])), [pods]);
}
