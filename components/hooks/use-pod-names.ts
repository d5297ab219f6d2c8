import { useMemo, useState } from 'react';
import type { Snapshot } from '../../lib/api/index.ts';
import { createPodNamesSelector, type PodNames } from '../../lib/dashboard/pod-refs.ts';

/**
 * uid → `namespace/name` of the pods the snapshot can name (`podNamesOf`: desired pods, then pods
 * that are gone but named by their events), for tables that only have UIDs. A pod without a name
 * has no entry: tables show its UID. Recomputed only when the pods or the events change, and the
 * same map while the names are the same (createPodNamesSelector).
 */
export function usePodNames(snapshot: Snapshot): PodNames {
  const pods = snapshot.desired.pods;
  const events = snapshot.recentEvents;
  const [select] = useState(createPodNamesSelector);
  return useMemo(() => select(pods, events), [select, pods, events]);
}
