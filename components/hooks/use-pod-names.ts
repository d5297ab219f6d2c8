import { useMemo } from 'react';
import type { Snapshot } from '../../lib/api/index.ts';
import { podNamesOf, type PodNames } from '../../lib/dashboard/pod-refs.ts';

/**
 * uid → `namespace/name` of the pods the snapshot can name (`podNamesOf`: desired pods, then pods
 * that are gone but named by their events), for tables that only have UIDs. A pod without a name
 * has no entry: tables show its UID. Recomputed only when the pods or the events change.
 */
export function usePodNames(snapshot: Snapshot): PodNames {
  const pods = snapshot.desired.pods;
  const events = snapshot.recentEvents;
  return useMemo(() => podNamesOf(pods, events), [pods, events]);
}
