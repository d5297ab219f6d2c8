'use client';

import Link from 'next/link';
import type { ReactNode } from 'react';
import type { AttachVerification, AuditEntry, Driver, Operation, Reconstruction, RecentEvent, SourceError } from '../lib/api/index.ts';
import { operationKey } from '../lib/api/index.ts';
import { describeRetry, retryAvailability, retryRequestFor } from '../lib/dashboard/action-guards.ts';
import type { NodeSummary } from '../lib/dashboard/node-summary.ts';
import type { ConnectionPhase } from '../lib/dashboard/queries.ts';
import { podHref, volumeHref } from '../lib/dashboard/routes.ts';
import { ActionButton, type PendingAction } from './action-dialog.tsx';
import { HealthBadge } from './status-badges.tsx';
import { OperationCountdown, RelativeTime } from './time-text.tsx';

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

/** The pending-operations table with live countdowns and Retry now. */
export function OperationsTable({ node, operations, podNames, phase, onAction, limit }: OperationsTableProps) {
  if (operations.length === 0) return <Empty>No pending operations: nothing runs and nothing is in backoff.</Empty>;
  const shown = [...operations].sort(byRetry).slice(0, limit ?? operations.length);
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
                <span className={`badge badge--${op.state === 'running' ? 'running' : 'backoff'}`}>
                  <span className="badge__icon" aria-hidden="true">
                    {op.state === 'running' ? '↻' : '!'}
                  </span>
                  {op.state}
                </span>
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
                <ActionButton
                  small
                  label="Retry now"
                  availability={retryAvailability(op, phase)}
                  onClick={() => {
                    onAction({ title: 'Retry now', description: describeRetry(node, op), confirmLabel: 'Retry now', request: { kind: 'retry', body: retryRequestFor(op) } });
                  }}
                />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {shown.length < operations.length ? <p className="muted">Showing the first {shown.length} of {operations.length}.</p> : null}
    </div>
  );
}

/** Each volume directory reconstruction scanned, and its outcome. */
export function ReconstructionTable({ node, reconstruction, podNames }: { node: string; reconstruction: Reconstruction; podNames: ReadonlyMap<string, string> }) {
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
}

/** Recent events, newest first. */
export function EventsTable({ node, events, podNames }: { node: string; events: readonly RecentEvent[]; podNames: ReadonlyMap<string, string> }) {
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
}

/** Pod-source files that failed to parse. */
export function SourceErrorsList({ errors }: { errors: readonly SourceError[] }) {
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
}

/** CSI drivers and the attach verification. */
export function DriversTable({ drivers, attach }: { drivers: readonly Driver[]; attach: AttachVerification }) {
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
}

/** Operator actions the agent recorded, newest first. */
export function AuditTable({ audit }: { audit: readonly AuditEntry[] }) {
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
}

