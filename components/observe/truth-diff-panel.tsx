'use client';

import { useId, useMemo, useState } from 'react';
import type { Observe } from '../../lib/api/observe.ts';
import { capRows, truthDiffCounts, truthDiffRowsShown } from '../../lib/dashboard/observe-view.ts';
import { EmptyState } from '../shared/empty-state.tsx';
import { Panel } from '../shared/panel.tsx';
import { ShowAllToggle } from './show-all-toggle.tsx';
import { TruthRow } from './truth-diff-row.tsx';
import { DataTable } from '../shared/data-table.tsx';

/** Each volume compared across the agent, the node's status and the VolumeAttachments. */
export function TruthDiffPanel({ node, observe }: { node: string; observe: Observe }) {
  const [showAllRows, setShowAllRows] = useState(false);
  const [uncapped, setUncapped] = useState(false);
  const toggleId = useId();
  const tableId = useId();
  const counts = useMemo(() => truthDiffCounts(observe.truthDiff), [observe.truthDiff]);
  const rows = useMemo(() => truthDiffRowsShown(observe.truthDiff, showAllRows), [observe.truthDiff, showAllRows]);
  const { shown } = capRows(rows, uncapped);
  return (
    <Panel
      id="observe-truth"
      title="Node truth diff"
      count={counts.withFindings}
      actions={
        <span className="filters">
          <input
            id={toggleId}
            type="checkbox"
            checked={showAllRows}
            aria-controls={tableId}
            onChange={(e) => {
              setShowAllRows(e.currentTarget.checked);
            }}
          />
          <label htmlFor={toggleId}>Show volumes without findings too</label>
        </span>
      }
    >
      <p className="muted">
        Each volume compared across the agent’s view (desired pods, mounts from mountinfo), the node’s <code>status.volumesInUse</code> and{' '}
        <code>status.volumesAttached</code>, and its VolumeAttachments. {counts.withFindings} of {counts.total} rows have findings.
      </p>
      {rows.length === 0 ? (
        <EmptyState>{counts.total === 0 ? 'Nothing to compare yet.' : `Every source agrees for all ${counts.total} volumes: no findings.`}</EmptyState>
      ) : (
        <DataTable columns={['Volume', 'Desired pods', 'volumesInUse', 'volumesAttached', 'VolumeAttachments', 'Mounts', 'Findings']} caption={`${showAllRows ? 'Every volume' : 'Volumes with findings'}, worst severity first`} id={tableId}>
          {shown.map((row) => (
            <TruthRow key={row.key} node={node} row={row} />
          ))}
        </DataTable>
      )}
      <ShowAllToggle
        total={rows.length}
        showAll={uncapped}
        what="rows"
        controls={tableId}
        onToggle={() => {
          setUncapped((v) => !v);
        }}
      />
    </Panel>
  );
}
