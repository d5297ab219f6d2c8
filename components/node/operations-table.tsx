'use client';

import Link from 'next/link';
import { useRouter } from 'next/navigation';
import { memo, useCallback, useMemo, type CSSProperties, type ReactNode } from 'react';
import type { AttachVerification, AuditEntry, Driver, Operation, Reconstruction, RecentEvent, SourceError } from '../../lib/api/index.ts';
import { operationKey } from '../../lib/api/index.ts';
import { describeRetry, retryAvailability, retryRequestFor } from '../../lib/dashboard/action-guards.ts';
import type { NodeSummary } from '../../lib/dashboard/node-summary.ts';
import type { ConnectionPhase } from '../../lib/dashboard/queries.ts';
import { podHref, volumeHref } from '../../lib/dashboard/routes.ts';
import { ActionButton, type PendingAction } from '../dialogs/action-dialog.tsx';
import { HealthBadge } from '../shared/status-badges.tsx';
import { OperationCountdown, RelativeTime } from '../shared/time-text.tsx';
import { VirtualList } from '../shared/virtual-list.tsx';

/** A titled section with an anchor id. */
export function Panel({ id, title, count, children, actions }: { id: string; title: string; count?: number; children: ReactNode; actions?: ReactNode }) {
  return (
    <section className="panel" id={id} aria-labelledby={`${id}-title`}>
      <header className="panel__header">
        <h2 id={`${id}-title`}>
          {title}
          {count !== undefined ? <span className="panel__count"> ({count})</span> : null}
        </h2>
        {actions}
      </header>
      {children}
    </section>
  );
}

function Empty({ children }: { children: ReactNode }) {
  return <p className="empty">{children}</p>;
}

/** The overview numbers of a node as a definition list. */
export function NodeCounts({ summary }: { summary: NodeSummary }) {
  const items: [string, number, string?][] = [
    ['pods', summary.pods],
    ['desired volumes', summary.desiredVolumes],
    ['mounted', summary.mounted],
    ['uncertain', summary.uncertain, summary.uncertain > 0 ? 'warn' : undefined],
    ['pending', summary.pending, summary.pending > 0 ? 'note' : undefined],
    ['in backoff', summary.inBackoff, summary.inBackoff > 0 ? 'bad' : undefined],
    ['pod errors', summary.podErrors, summary.podErrors > 0 ? 'bad' : undefined],
    ['source errors', summary.sourceErrors, summary.sourceErrors > 0 ? 'bad' : undefined],
  ];
  return (
    <dl className="counts">
      {items.map(([label, value, tone]) => (
        <div key={label} className={`counts__item${tone !== undefined ? ` counts__item--${tone}` : ''}`}>
          <dt>{label}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

/** Health, sync state and agent facts in one line. */
export function NodeFacts({ summary }: { summary: NodeSummary }) {
  return (
    <p className="facts">
      <HealthBadge health={summary.health} />
      {summary.reasons.length > 0 ? <span className="facts__reasons">{summary.reasons.join(' · ')}</span> : null}
      <span>
        states synced: <strong>{summary.statesSynced ? 'yes' : 'no'}</strong>
      </span>
      <span>
        agent {summary.agentVersion}, started <RelativeTime at={summary.agentStartedAt} />
      </span>
      <span>seq {summary.seq}</span>
    </p>
  );
}

/** Reconstruction status and outcome counts, one line. */
export function ReconstructionLine({ summary }: { summary: NodeSummary }) {
  const r = summary.reconstruction;
  const o = r.outcomes;
  return (
    <p className="facts">
      <span>
        reconstruction <strong>{r.state}</strong>
        {r.finishedAt !== null ? (
          <>
            {' '}
            <RelativeTime at={r.finishedAt} />
          </>
        ) : null}
      </span>
      <span>
        {o.reconstructed} reconstructed · {o['confirmed-mounted']} confirmed mounted · {o['cleaned-up']} cleaned up ·{' '}
        <span className={o.failed > 0 ? 'text-bad' : undefined}>{o.failed} failed</span>
      </span>
    </p>
  );
}

export interface OperationsTableProps {
  readonly node: string;
  readonly operations: readonly Operation[];
  readonly podNames: ReadonlyMap<string, string>;
  readonly phase: ConnectionPhase;
  readonly onAction: (action: PendingAction) => void;
  /** Show at most this many (soonest retry first); default all. */
  readonly limit?: number;
}

function byRetry(a: Operation, b: Operation): number {
  if (a.state !== b.state) return a.state === 'running' ? -1 : 1;
  return (a.retryAt ?? 0) - (b.retryAt ?? 0);
}

/** The operations to show: running first, then by next retry, at most `limit`. */
function operationsShown(operations: readonly Operation[], limit: number | undefined): Operation[] {
  return [...operations].sort(byRetry).slice(0, limit ?? operations.length);
}

function OperationStateBadge({ state }: { state: Operation['state'] }) {
  return (
    <span className={`badge badge--${state === 'running' ? 'running' : 'backoff'}`}>
      <span className="badge__icon" aria-hidden="true">
        {state === 'running' ? '↻' : '!'}
      </span>
      {state}
    </span>
  );
}

function RetryButton({ node, op, phase, onAction }: { node: string; op: Operation; phase: ConnectionPhase; onAction: (action: PendingAction) => void }) {
  return (
    <ActionButton
      small
      label="Retry now"
      availability={retryAvailability(op, phase)}
      onClick={() => {
        onAction({ title: 'Retry now', description: describeRetry(node, op), confirmLabel: 'Retry now', request: { kind: 'retry', body: retryRequestFor(op) } });
      }}
    />
  );
}

/** The pending-operations table with live countdowns and Retry now. */
export function OperationsTable({ node, operations, podNames, phase, onAction, limit }: OperationsTableProps) {
  if (operations.length === 0) return <Empty>{NO_OPERATIONS}</Empty>;
  const shown = operationsShown(operations, limit);
  return (
    <div className="table-wrap">
      <table className="table">
        <thead>
          <tr>
            <th scope="col">Operation</th>
            <th scope="col">Volume</th>
            <th scope="col">Pod</th>
            <th scope="col">State</th>
            <th scope="col">Next</th>
            <th scope="col" className="num">
              Failures
            </th>
            <th scope="col">Last error</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {shown.map((op) => (
            <tr key={operationKey(op)} className={op.state === 'backoff' ? 'row--backoff' : undefined}>
              <td>
                <code>{op.operationName}</code>
              </td>
              <td className="cell-wrap">
                <Link href={volumeHref(node, op.volume)}>{op.volume}</Link>
              </td>
              <td>{op.podUid === null ? '—' : <Link href={podHref(node, op.podUid)}>{podNames.get(op.podUid) ?? op.podUid}</Link>}</td>
              <td>
                <OperationStateBadge state={op.state} />
              </td>
              <td>
                <OperationCountdown op={op} />
              </td>
              <td className="num">{op.failures}</td>
              <td className="cell-error">
                {op.lastError === null ? '—' : (
                  <>
                    <span className="error-text">{op.lastError}</span>{' '}
                    <span className="muted">
                      (<RelativeTime at={op.lastErrorAt} />)
                    </span>
                  </>
                )}
              </td>
              <td>
                <RetryButton node={node} op={op} phase={phase} onAction={onAction} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <ShownOf shown={shown.length} total={operations.length} />
    </div>
  );
}

const NO_OPERATIONS = 'No pending operations: nothing runs and nothing is in backoff.';

function ShownOf({ shown, total }: { shown: number; total: number }) {
  return shown < total ? <p className="muted">Showing the first {shown} of {total}.</p> : null;
}

// THE WINDOWED OPERATIONS TABLE (node page)

/** Fixed row height of the windowed operations table (px); the windowing depends on it. */
const OPERATION_ROW_HEIGHT = 44;
/** The grid columns of its header and rows (the order of OPERATION_COLUMNS). */
const OPERATION_GRID: CSSProperties = {
  gridTemplateColumns: '8.5rem minmax(12rem, 2.2fr) minmax(9rem, 1.2fr) 7rem 8.5rem 5.5rem minmax(10rem, 2fr) 7rem',
};
const OPERATION_COLUMNS = ['Operation', 'Volume', 'Pod', 'State', 'Next', 'Failures', 'Last error', 'Actions'] as const;
/** A cell whose overflowing text is cut (with an ellipsis) at its start instead of its end. */
const CUT_AT_START: CSSProperties = { direction: 'rtl', textAlign: 'left' };

interface OperationRowContext {
  readonly node: string;
  readonly phase: ConnectionPhase;
  readonly onAction: (action: PendingAction) => void;
}

/**
 * One row of the windowed table. Memoized: an operation the delta did not touch keeps its object
 * (applyDelta reuses unchanged items), so its row skips rendering when the table updates.
 */
const OperationGridRow = memo(function OperationGridRow({ op, podName, ctx }: { op: Operation; podName: string | null; ctx: OperationRowContext }) {
  return (
    <>
      <div role="cell" className="vt__cell">
        <code>{op.operationName}</code>
      </div>
      {/* Unique volume names share long prefixes: cut them at the start, so the end that tells
          them apart stays visible (the whole name is the title and the link's text). */}
      <div role="cell" className="vt__cell" title={op.volume} style={CUT_AT_START}>
        <Link href={volumeHref(ctx.node, op.volume)} tabIndex={-1}>
          <bdi>{op.volume}</bdi>
        </Link>
      </div>
      <div role="cell" className="vt__cell">
        {op.podUid === null ? '—' : (
          <Link href={podHref(ctx.node, op.podUid)} tabIndex={-1} title={`pod uid ${op.podUid}`}>
            {podName ?? op.podUid}
          </Link>
        )}
      </div>
      <div role="cell" className="vt__cell">
        <OperationStateBadge state={op.state} />
      </div>
      <div role="cell" className="vt__cell">
        <OperationCountdown op={op} />
      </div>
      <div role="cell" className="vt__cell num">
        {op.failures}
      </div>
      <div role="cell" className="vt__cell vt__error" title={op.lastError ?? undefined}>
        {op.lastError === null ? '—' : (
          <>
            {op.lastError}{' '}
            <span className="muted">
              (<RelativeTime at={op.lastErrorAt} />)
            </span>
          </>
        )}
      </div>
      <div role="cell" className="vt__cell vt__actions">
        <RetryButton node={ctx.node} op={op} phase={ctx.phase} onAction={ctx.onAction} />
      </div>
    </>
  );
});

/**
 * The pending-operations table of the node page: the same operations, order, limit and actions as
 * {@link OperationsTable}, as a windowed grid (fixed-height rows, only those in view rendered), so
 * hundreds of operations in backoff cost a screenful of rows per update and per countdown tick.
 * Arrow keys move between rows; Enter opens the row's volume.
 */
export function OperationsGrid({ node, operations, podNames, phase, onAction, limit }: OperationsTableProps) {
  const shown = useMemo(() => operationsShown(operations, limit), [operations, limit]);
  const ctx = useMemo<OperationRowContext>(() => ({ node, phase, onAction }), [node, phase, onAction]);
  const renderRow = useCallback(
    (op: Operation) => <OperationGridRow op={op} podName={op.podUid === null ? null : (podNames.get(op.podUid) ?? null)} ctx={ctx} />,
    [podNames, ctx],
  );
  const router = useRouter();
  const openVolume = useCallback(
    (op: Operation) => {
      router.push(volumeHref(node, op.volume));
    },
    [router, node],
  );
  if (operations.length === 0) return <Empty>{NO_OPERATIONS}</Empty>;
  return (
    <div>
      <div className="vt__table" role="table" aria-label="Pending operations" aria-rowcount={shown.length + 1}>
        <div role="rowgroup">
          <div role="row" className="vt__head" aria-rowindex={1} style={OPERATION_GRID}>
            {OPERATION_COLUMNS.map((label) => (
              <div key={label} role="columnheader" className={`vt__cell${label === 'Failures' ? ' num' : ''}`}>
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

// The tables below are memoized: their inputs keep their identity across deltas that do not
// touch them, so a stream flush re-renders only the tables whose data changed.

/** Each volume directory reconstruction scanned, and its outcome. */
export const ReconstructionTable = memo(function ReconstructionTable({ node, reconstruction, podNames }: { node: string; reconstruction: Reconstruction; podNames: ReadonlyMap<string, string> }) {
  if (reconstruction.volumes.length === 0) {
    return <Empty>{reconstruction.state === 'done' ? 'Reconstruction found no volume directories.' : `Reconstruction is ${reconstruction.state}.`}</Empty>;
  }
  const icon: Record<string, string> = { reconstructed: '?', 'confirmed-mounted': '✓', 'cleaned-up': '⏏', failed: '✕' };
  return (
    <div className="table-wrap">
      <table className="table">
        <thead>
          <tr>
            <th scope="col">Pod</th>
            <th scope="col">Volume directory</th>
            <th scope="col">Plugin</th>
            <th scope="col">Outcome</th>
            <th scope="col">Error</th>
            <th scope="col">When</th>
          </tr>
        </thead>
        <tbody>
          {reconstruction.volumes.map((v) => (
            <tr key={`${v.podUid}|${v.volumeName}`}>
              <td>
                <Link href={podHref(node, v.podUid)}>{podNames.get(v.podUid) ?? v.podUid}</Link>
              </td>
              <td>
                <code>{v.volumeName}</code>
              </td>
              <td>{v.pluginName}</td>
              <td>
                <span className={`outcome outcome--${v.outcome}`}>
                  <span aria-hidden="true">{icon[v.outcome]} </span>
                  {v.outcome}
                </span>
              </td>
              <td className="cell-error">{v.error ?? '—'}</td>
              <td>
                <RelativeTime at={v.at} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
});

/** Recent events, newest first. */
export const EventsTable = memo(function EventsTable({ node, events, podNames }: { node: string; events: readonly RecentEvent[]; podNames: ReadonlyMap<string, string> }) {
  if (events.length === 0) return <Empty>No recent events.</Empty>;
  return (
    <div className="table-wrap">
      <table className="table">
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Type</th>
            <th scope="col">Reason</th>
            <th scope="col">Pod</th>
            <th scope="col">Message</th>
          </tr>
        </thead>
        <tbody>
          {[...events].reverse().map((e, i) => (
            <tr key={`${e.time}-${i}`}>
              <td>
                <RelativeTime at={e.time} />
              </td>
              <td>
                <span className={e.type === 'Warning' ? 'text-bad' : undefined}>
                  <span aria-hidden="true">{e.type === 'Warning' ? '! ' : 'i '}</span>
                  {e.type}
                </span>
              </td>
              <td>{e.reason}</td>
              <td>{e.podUid === null ? 'node' : <Link href={podHref(node, e.podUid)}>{podNames.get(e.podUid) ?? e.podUid}</Link>}</td>
              <td className="cell-error">{e.message}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
});

/** Pod-source files that failed to parse. */
export const SourceErrorsList = memo(function SourceErrorsList({ errors }: { errors: readonly SourceError[] }) {
  if (errors.length === 0) return <Empty>Every pod-source file parses.</Empty>;
  return (
    <ul className="plain-list">
      {errors.map((e) => (
        <li key={e.file}>
          <code>{e.file}</code>: <span className="error-text">{e.message}</span>
        </li>
      ))}
    </ul>
  );
});

/** CSI drivers and the attach verification. */
export const DriversTable = memo(function DriversTable({ drivers, attach }: { drivers: readonly Driver[]; attach: AttachVerification }) {
  return (
    <>
      {drivers.length === 0 ? <Empty>No CSI driver registered.</Empty> : (
        <div className="table-wrap">
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Driver</th>
                <th scope="col">Registered</th>
                <th scope="col">Node ID</th>
                <th scope="col">Capabilities</th>
                <th scope="col">Last probe</th>
                <th scope="col">Last error</th>
              </tr>
            </thead>
            <tbody>
              {drivers.map((d) => (
                <tr key={d.name}>
                  <td>
                    <code>{d.name}</code>
                    <div className="muted small">{d.endpoint}</div>
                  </td>
                  <td>
                    <span aria-hidden="true">{d.registered ? '✓ ' : '✕ '}</span>
                    {d.registered ? 'yes' : 'no'}
                  </td>
                  <td>{d.nodeId ?? '—'}</td>
                  <td>{d.capabilities.length === 0 ? '—' : d.capabilities.join(', ')}</td>
                  <td>
                    <RelativeTime at={d.lastProbeAt} fallback="never" />
                  </td>
                  <td className="cell-error">{d.lastError ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <p className="facts">
        <span>
          attach verification: <RelativeTime at={attach.lastRunAt} fallback="not run yet" />, checked {attach.checked}
        </span>
        <span className={attach.foundDetached.length > 0 ? 'text-bad' : undefined}>
          found detached: {attach.foundDetached.length === 0 ? 'none' : attach.foundDetached.join(', ')}
        </span>
      </p>
    </>
  );
});

/** Operator actions the agent recorded, newest first. */
export const AuditTable = memo(function AuditTable({ audit }: { audit: readonly AuditEntry[] }) {
  if (audit.length === 0) return <Empty>No operator actions yet.</Empty>;
  const icon = { succeeded: '✓', refused: '⊘', failed: '✕' } as const;
  return (
    <div className="table-wrap">
      <table className="table">
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Caller</th>
            <th scope="col">Action</th>
            <th scope="col">Target</th>
            <th scope="col">Result</th>
            <th scope="col">Message / checks</th>
          </tr>
        </thead>
        <tbody>
          {[...audit].reverse().map((a, i) => (
            <tr key={`${a.time}-${i}`}>
              <td>
                <RelativeTime at={a.time} />
              </td>
              <td>{a.caller}</td>
              <td>{a.action}</td>
              <td className="cell-wrap">{a.target ?? 'node'}</td>
              <td>
                <span className={a.result === 'succeeded' ? undefined : 'text-bad'}>
                  <span aria-hidden="true">{icon[a.result]} </span>
                  {a.result}
                </span>
              </td>
              <td className="cell-error">
                {a.message ?? ''}
                {a.checks.length > 0 ? (
                  <span className="muted"> {a.checks.map((c) => `${c.ok ? '✓' : '✕'} ${c.name}`).join(', ')}</span>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
});

