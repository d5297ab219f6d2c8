'use client';

import { RowLink } from '../shared/row-link.tsx';
import { memo, useMemo, useState } from 'react';
import type { OperationHistory } from '../../lib/api/index.ts';
import { operationKey } from '../../lib/api/index.ts';
import { formatSpan, historyTiming, sortHistory } from '../../lib/dashboard/incident-history.ts';
import { volumeHref } from '../../lib/dashboard/routes.ts';
import { DataTable } from '../shared/data-table.tsx';
import { EmptyState } from '../shared/empty-state.tsx';
import { LiveText, RelativeTime, TimeOfDay } from '../shared/time-text.tsx';
import { PodRefLink } from '../shared/pod-ref.tsx';

/** The attempts of one history, expandable: start, duration, outcome. */
export function AttemptList({ history }: { history: OperationHistory }) {
  const left = history.attemptsTotal - history.attempts.length;
  return (
    <details className="attempts">
      <summary>
        {history.attemptsTotal} attempt{history.attemptsTotal === 1 ? '' : 's'}
      </summary>
      <ol start={left + 1}>
        {history.attempts.map((a, i) => (
          <li key={`${a.startedAt}-${i}`}>
            <TimeOfDay at={a.startedAt} /> · {formatSpan(a.durationMs)} ·{' '}
            {a.error === null ? <span className="text-good">succeeded</span> : <span className="error-text">{a.error}</span>}
          </li>
        ))}
      </ol>
      {left > 0 ? <p className="muted small">The first {left} attempts are not kept.</p> : null}
    </details>
  );
}

/**
 * One history row. Memoized by its history entry (a delta keeps unchanged entries by reference),
 * so a burst of failures renders the entries that changed, not the whole table per flush.
 */
const HistoryRow = memo(function HistoryRow({ node, h, podName }: { node: string; h: OperationHistory; podName: string | undefined }) {
  return (
    <tr>
      <td>
        <code>{h.operationName}</code>
      </td>
      <td className="cell-wrap">
        <RowLink href={volumeHref(node, h.volume)}>{h.volume}</RowLink>
      </td>
      <td>{h.podUid === null ? '—' : <PodRefLink node={node} uid={h.podUid} name={podName} />}</td>
      <td>
        <TimeOfDay at={h.firstFailureAt} /> (<RelativeTime at={h.firstFailureAt} />)
      </td>
      <td>
        <LiveText text={(now) => historyTiming(h, now).text} role="timer" className={h.succeededAt === null ? 'text-bad' : undefined} />
      </td>
      <td>
        <AttemptList history={h} />
      </td>
      <td>
        {h.succeededAt === null ? (
          <span className="text-bad">failing</span>
        ) : (
          <span className="text-good">
            succeeded at <TimeOfDay at={h.succeededAt} />
          </span>
        )}
      </td>
    </tr>
  );
});

/**
 * Operations that failed: first failure, "stuck for" (live while failing), attempts in all
 * (those before a Retry now included), each attempt expandable, and when it succeeded. Still
 * failing first, longest stuck first. With `limit`, only the first `limit` entries are rendered
 * until "Show all" is pressed: on a node where hundreds of operations fail the table was most of
 * the page's layout on every live update (issue "Performance", requirement 2).
 */
export const OperationHistoryTable = memo(function OperationHistoryTable({
  node,
  history,
  podNames,
  limit,
}: {
  node: string;
  history: readonly OperationHistory[];
  podNames: ReadonlyMap<string, string>;
  limit?: number;
}) {
  const [all, setAll] = useState(false);
  const sorted = useMemo(() => sortHistory(history), [history]);
  if (sorted.length === 0) return <EmptyState>No operation has failed since the agent started.</EmptyState>;
  const shown = all || limit === undefined ? sorted : sorted.slice(0, limit);
  return (
    <>
      <DataTable columns={['Operation', 'Volume', 'Pod', 'First failure', 'Stuck for', 'Attempts', 'Outcome']}>
        {shown.map((h) => (
          <HistoryRow key={operationKey(h)} node={node} h={h} podName={h.podUid === null ? undefined : podNames.get(h.podUid)} />
        ))}
      </DataTable>
      {shown.length < sorted.length ? (
        <p className="muted small">
          The first {shown.length} of {sorted.length} operations.{' '}
          <button
            type="button"
            className="button button--small"
            onClick={() => {
              setAll(true);
            }}
          >
            Show all {sorted.length}
          </button>
        </p>
      ) : null}
    </>
  );
});
