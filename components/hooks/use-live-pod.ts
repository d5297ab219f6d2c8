import { useMemo } from 'react';
import type { Snapshot } from '../../lib/api/index.ts';
import { createVolumeRowsSelector, findPod, type PodView } from '../../lib/dashboard/pipeline.ts';

/**
 * The pod of `uid` in the live snapshot, or null when the snapshot no longer mentions it (see
 * `findPod`). Its rows are memoized across deltas (one rows selector per caller).
 */
export function useLivePod(snapshot: Snapshot, uid: string): PodView | null {
  const selectRows = useMemo(() => createVolumeRowsSelector(), []);
  const rows = useMemo(() => selectRows(snapshot), [selectRows, snapshot]);
  return useMemo(() => findPod(snapshot, uid, rows), [snapshot, uid, rows]);
}
