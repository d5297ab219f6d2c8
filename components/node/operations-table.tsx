'use client';

import { RowLink } from '../shared/row-link.tsx';
import { useRouter } from 'next/navigation';
import { memo, useCallback, useMemo, type CSSProperties } from 'react';
import type { Operation, OperationHistory } from '../../lib/api/index.ts';
import { operationKey } from '../../lib/api/index.ts';
import { historyTiming } from '../../lib/dashboard/incident-history.ts';
import type { ConnectionPhase } from '../../lib/dashboard/queries.ts';
import { volumeHref } from '../../lib/dashboard/routes.ts';
import { RetryButton } from '../actions/retry-button.tsx';
import { RowCommandsButton } from '../actions/row-commands-button.tsx';
import { operationRowTargetText } from '../../lib/dashboard/kube-commands.ts';
import { operationRowCommandText, type RowCommandsSnapshot } from '../../lib/dashboard/row-commands.ts';
import type { PendingAction } from '../dialogs/action-dialog.tsx';
import { EmptyState } from '../shared/empty-state.tsx';
import { ErrorCauseText } from '../shared/error-cause.tsx';
import { PodRefLink } from '../shared/pod-ref.tsx';
import { OperationStateBadge } from '../shared/status-badges.tsx';
import { LiveText, OperationCountdown, RelativeTime } from '../shared/time-text.tsx';
import { VirtualList } from '../shared/virtual-list.tsx';

export interface OperationsTableProps {
  readonly node: string;
  readonly operations: readonly Operation[];
  readonly podNames: ReadonlyMap<string, string>;
  /** The operations' histories by `operationKey` (`historyByOperationKey`): attempts in all, stuck for. */
  readonly history?: ReadonlyMap<string, OperationHistory>;
  readonly phase: ConnectionPhase;
  readonly onAction: (action: PendingAction) => void;
  /** Show at most this many (soonest retry first); default all. */
  readonly limit?: number;
  /** The latest snapshot (`useLatest`), read when a row's commands are copied; without it the rows have no Copy commands. */
  readonly commandsSnapshot?: () => RowCommandsSnapshot;
}

function byRetry(a: Operation, b: Operation): number {
  if (a.state !== b.state) return a.state === 'running' ? -1 : 1;
  return (a.retryAt ?? 0) - (b.retryAt ?? 0);
}

/** The operations to show: running first, then by next retry, at most `limit`. */
function operationsShown(operations: readonly Operation[], limit: number | undefined): Operation[] {
  return [...operations].sort(byRetry).slice(0, limit ?? operations.length);
}

const NO_OPERATIONS = 'No pending operations: nothing runs and nothing is in backoff.';

function ShownOf({ shown, total }: { shown: number; total: number }) {
  return shown < total ? <p className="muted">Showing the first {shown} of {total}.</p> : null;
}

/** Fixed row height of the operations table (px); the windowing depends on it. */
const OPERATION_ROW_HEIGHT = 44;
/** The grid columns of its header and rows (the order of OPERATION_COLUMNS). */
const OPERATION_GRID: CSSProperties = {
  gridTemplateColumns: '8.5rem minmax(12rem, 2.2fr) minmax(9rem, 1.2fr) 7rem 8.5rem 8.5rem 5.5rem minmax(10rem, 2fr) 14rem',
};
const OPERATION_COLUMNS = ['Operation', 'Volume', 'Pod', 'State', 'Next', 'Stuck for', 'Attempts', 'Last error', 'Actions'] as const;
/** A cell whose overflowing text is cut (with an ellipsis) at its start instead of its end. */
const CUT_AT_START: CSSProperties = { direction: 'rtl', textAlign: 'left' };

interface OperationRowContext {
  readonly node: string;
  readonly phase: ConnectionPhase;
  readonly onAction: (action: PendingAction) => void;
  readonly commandsSnapshot: (() => RowCommandsSnapshot) | null;
}

/**
 * One row of the windowed table. Memoized: an operation the delta did not touch keeps its object
 * (applyDelta reuses unchanged items), so its row skips rendering when the table updates.
 */
const OperationRow = memo(function OperationRow({
  op,
  history,
  podName,
  ctx,
}: {
  op: Operation;
  history: OperationHistory | null;
  podName: string | null;
  ctx: OperationRowContext;
}) {
  return (
    <>
      <div role="cell" className="vt__cell">
        <code>{op.operationName}</code>
      </div>
      {/* Unique volume names share long prefixes: cut them at the start, so the end that tells
          them apart stays visible (the whole name is the title and the link's text). */}
      <div role="cell" className="vt__cell" title={op.volume} style={CUT_AT_START}>
        <RowLink href={volumeHref(ctx.node, op.volume)} tabIndex={-1}>
          <bdi>{op.volume}</bdi>
        </RowLink>
      </div>
      <div role="cell" className="vt__cell">
        {op.podUid === null ? '—' : (
          <PodRefLink node={ctx.node} uid={op.podUid} name={podName} tabIndex={-1} />
        )}
      </div>
      <div role="cell" className="vt__cell">
        <OperationStateBadge state={op.state} />
      </div>
      <div role="cell" className="vt__cell">
        <OperationCountdown op={op} />
      </div>
      <div role="cell" className="vt__cell" title={history === null ? undefined : 'since the first failure (a Retry now does not reset it)'}>
        {history === null ? '—' : <LiveText text={(now) => historyTiming(history, now).text} role="timer" />}
      </div>
      {/* Every attempt since the first failure; `failures` restarts with a Retry now, the total does not. */}
      <div role="cell" className="vt__cell num" title={`${op.failures} failure(s) since the backoff was last reset`}>
        {history?.attemptsTotal ?? op.failures}
      </div>
      <div role="cell" className="vt__cell vt__error" title={op.lastError ?? undefined}>
        {op.lastError === null ? '—' : (
          <>
            <ErrorCauseText message={op.lastError} variant="cell" />{' '}
            <span className="muted">
              (<RelativeTime at={op.lastErrorAt} />)
            </span>
          </>
        )}
      </div>
      <div role="cell" className="vt__cell vt__actions">
        <RetryButton node={ctx.node} op={op} podName={podName} phase={ctx.phase} onAction={ctx.onAction} />
        {ctx.commandsSnapshot === null ? null : <OperationCommands op={op} podName={podName} node={ctx.node} snapshot={ctx.commandsSnapshot} />}
      </div>
    </>
  );
});

/** The row's Copy commands, named as its Retry now is. */
function OperationCommands({ op, podName, node, snapshot }: { op: Operation; podName: string | null; node: string; snapshot: () => RowCommandsSnapshot }) {
  return <RowCommandsButton target={operationRowTargetText({ op, podName })} getText={() => operationRowCommandText(node, op, podName, snapshot())} />;
}

/**
 * The pending-operations table (node and volume pages): running first, then soonest retry, at
 * most `limit`, each with its live countdown, last error and Retry now. A windowed grid
 * (fixed-height rows, only those in view rendered), so hundreds of operations in backoff cost a
 * screenful of rows per update and per countdown tick. Arrow keys move between rows; Enter opens
 * the row's volume.
 */
export function OperationsTable({ node, operations, podNames, history, phase, onAction, limit, commandsSnapshot }: OperationsTableProps) {
  const shown = useMemo(() => operationsShown(operations, limit), [operations, limit]);
  const ctx = useMemo<OperationRowContext>(() => ({ node, phase, onAction, commandsSnapshot: commandsSnapshot ?? null }), [node, phase, onAction, commandsSnapshot]);
  const renderRow = useCallback(
    (op: Operation) => (
      <OperationRow op={op} history={history?.get(operationKey(op)) ?? null} podName={op.podUid === null ? null : (podNames.get(op.podUid) ?? null)} ctx={ctx} />
    ),
    [podNames, history, ctx],
  );
  const router = useRouter();
  const openVolume = useCallback(
    (op: Operation) => {
      router.push(volumeHref(node, op.volume));
    },
    [router, node],
  );
  if (operations.length === 0) return <EmptyState>{NO_OPERATIONS}</EmptyState>;
  return (
    <div>
      <div className="vt__table" role="table" aria-label="Pending operations" aria-rowcount={shown.length + 1}>
        <div role="rowgroup">
          <div role="row" className="vt__head" aria-rowindex={1} style={OPERATION_GRID}>
            {OPERATION_COLUMNS.map((label) => (
              <div key={label} role="columnheader" className={`vt__cell${label === 'Attempts' ? ' num' : ''}`}>
                {label === 'Actions' ? <span className="visually-hidden">{label}</span> : label}
              </div>
            ))}
          </div>
        </div>
        <VirtualList
          items={shown}
          rowHeight={OPERATION_ROW_HEIGHT}
          maxHeight={440}
          getKey={operationKey}
          renderRow={renderRow}
          rowStyle={OPERATION_GRID}
          label="Pending operations, soonest retry first; use the arrow keys to move, Enter to open the volume"
          onActivate={openVolume}
        />
      </div>
      <ShownOf shown={shown.length} total={operations.length} />
    </div>
  );
}
