'use client';

import { useCallback, useId, useMemo, useState, type CSSProperties } from 'react';
import type { Observe, OrphanPod } from '../../lib/api/observe.ts';
import { capRows, describeOrphanCleanup, sortOrphans, type ObserveActionAvailability } from '../../lib/dashboard/observe-view.ts';
import { EmptyState } from '../shared/empty-state.tsx';
import { Panel } from '../shared/panel.tsx';
import { OrphanCard } from './orphan-card.tsx';
import { OrphanCleanupDialog, type PendingCleanup } from './orphan-cleanup-dialog.tsx';
import { ShowAllToggle } from './show-all-toggle.tsx';

const LIST_STYLE: CSSProperties = { listStyle: 'none', margin: 0, padding: 0 };

/** The orphaned pod directories, most dangerous first, each with Dry run and the guarded Clean up. */
export function OrphansPanel({ agent, observe, availability }: { agent: string; observe: Observe; availability: ObserveActionAvailability }) {
  const [showAll, setShowAll] = useState(false);
  const [pending, setPending] = useState<PendingCleanup | null>(null);
  const listId = useId();
  const sorted = useMemo(() => sortOrphans(observe.orphans), [observe.orphans]);
  const { shown } = capRows(sorted, showAll);
  const onCleanup = useCallback(
    (orphan: OrphanPod) => {
      setPending({ orphan, description: describeOrphanCleanup(agent, orphan) });
    },
    [agent],
  );
  return (
    <Panel id="observe-orphans" title="Orphaned pod directories" count={observe.orphans.length}>
      {observe.orphansTruncated ? (
        <p className="blocking">
          <span aria-hidden="true">! </span>
          The inspection budget ran out: some pod directories were not inspected, so this list is incomplete.
        </p>
      ) : null}
      {sorted.length === 0 ? (
        <EmptyState>No orphaned pod directories: every pods/&lt;uid&gt; directory belongs to a pod the API server knows.</EmptyState>
      ) : (
        <ul className="pipelines" style={LIST_STYLE} id={listId} aria-label="Orphaned pod directories, most dangerous first">
          {shown.map((o) => (
            <li key={o.podUid}>
              <OrphanCard agent={agent} orphan={o} availability={availability} onCleanup={onCleanup} />
            </li>
          ))}
        </ul>
      )}
      <ShowAllToggle
        total={sorted.length}
        showAll={showAll}
        what="orphaned pod directories"
        controls={listId}
        onToggle={() => {
          setShowAll((v) => !v);
        }}
      />
      <OrphanCleanupDialog
        agent={agent}
        pending={pending}
        onClose={() => {
          setPending(null);
        }}
      />
    </Panel>
  );
}
