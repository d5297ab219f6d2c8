'use client';

import { useId, useMemo, useState } from 'react';
import { outstandingWork } from '../../lib/api/summary.ts';
import type { Observe } from '../../lib/api/observe.ts';
import { OBSERVE_BANNER, capRows, sortPlan } from '../../lib/dashboard/observe-view.ts';
import { EmptyState } from '../shared/empty-state.tsx';
import { Panel } from '../shared/panel.tsx';
import { RelativeTime } from '../shared/time-text.tsx';
import { PlanRow, planColumns } from './plan-row.tsx';
import type { RowCommandsSnapshot } from '../../lib/dashboard/row-commands.ts';
import { ShowAllToggle } from './show-all-toggle.tsx';
import { DataTable } from '../shared/data-table.tsx';

/** The kubelet's outstanding work, longest outstanding first, with its own backoff per operation. */
export function PlanPanel({ node, observe, commandsSnapshot }: { node: string; observe: Observe; commandsSnapshot?: () => RowCommandsSnapshot }) {
  const [showAll, setShowAll] = useState(false);
  const tableId = useId();
  const sorted = useMemo(() => sortPlan(observe.plan), [observe.plan]);
  const { shown } = capRows(sorted, showAll);
  return (
    <Panel id="observe-plan" title="Kubelet’s outstanding work (plan)" count={outstandingWork(observe)}>
      <p className="blocking" role="note">
        <span aria-hidden="true">◎ </span>
        {OBSERVE_BANNER}
      </p>
      <p className="facts">
        <span>
          {observe.refreshedAt === null ? (
            'not refreshed yet'
          ) : (
            <>
              refreshed <RelativeTime at={observe.refreshedAt} />
            </>
          )}
        </span>
        <span>
          kubelet root dir <code>{observe.kubeletRootDir}</code> (read only)
        </span>
      </p>
      {observe.refreshError !== null ? (
        <p className="error-block">
          <span aria-hidden="true">✕ </span>
          The last refresh failed; what is shown is from the refresh before: {observe.refreshError}
        </p>
      ) : null}
      {sorted.length === 0 ? (
        <EmptyState>The kubelet has no outstanding work: its desired and actual states agree.</EmptyState>
      ) : (
        <DataTable columns={planColumns(commandsSnapshot !== undefined)} caption="Operations the kubelet still has to perform, longest outstanding first" id={tableId}>
          {shown.map((op) => (
            <PlanRow key={op.key} node={node} op={op} commandsSnapshot={commandsSnapshot} />
          ))}
        </DataTable>
      )}
      <ShowAllToggle
        total={sorted.length}
        showAll={showAll}
        what="operations"
        controls={tableId}
        onToggle={() => {
          setShowAll((v) => !v);
        }}
      />
    </Panel>
  );
}
