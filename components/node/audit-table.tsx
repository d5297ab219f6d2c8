'use client';

import { checkQuestion } from '../../lib/dashboard/check-questions.ts';
import { memo } from 'react';
import type { AuditEntry } from '../../lib/api/index.ts';
import { auditTargetText, type PodNames } from '../../lib/dashboard/pod-refs.ts';
import { EmptyState } from '../shared/empty-state.tsx';
import { RelativeTime } from '../shared/time-text.tsx';
import { DataTable } from '../shared/data-table.tsx';

const NO_NAMES: PodNames = new Map();

/** Operator actions the agent recorded, newest first; targets with their pod named (`auditTargetText`). */
export const AuditTable = memo(function AuditTable({ audit, podNames = NO_NAMES }: { audit: readonly AuditEntry[]; podNames?: PodNames }) {
  if (audit.length === 0) return <EmptyState>No operator actions yet.</EmptyState>;
  const icon = { succeeded: '✓', refused: '⊘', failed: '✕', running: '…' } as const;
  return (
    <DataTable columns={['When', 'Caller', 'Action', 'Target', 'Incident / reason', 'Result', 'Message / checks']}>
      {[...audit].reverse().map((a, i) => (
        <tr key={`${a.time}-${i}`}>
          <td>
            <RelativeTime at={a.time} />
          </td>
          <td className="cell-wrap">
            {a.caller}
            {a.groups !== undefined && a.groups.length > 0 ? <span className="muted"> ({a.groups.join(', ')})</span> : null}
          </td>
          <td>{a.action}</td>
          <td className="cell-wrap">{a.target === null ? 'node' : auditTargetText(a.target, podNames)}</td>
          <td className="cell-wrap">
            {a.incidentId == null ? null : <strong>{a.incidentId}</strong>}
            {a.incidentId != null && a.reason != null ? ': ' : null}
            {a.reason ?? null}
            {a.incidentId == null && a.reason == null ? <span className="muted">—</span> : null}
          </td>
          <td>
            <span className={a.result === 'succeeded' || a.result === 'running' ? undefined : 'text-bad'}>
              <span aria-hidden="true">{icon[a.result]} </span>
              {a.result}
            </span>
          </td>
          <td className="cell-error">
            {a.message ?? ''}
            {a.checks.length > 0 ? (
              <span className="muted"> {a.checks.map((c) => `${c.ok ? '✓' : '✕'} ${checkQuestion(c).question} ${checkQuestion(c).answer}`).join(', ')}</span>
            ) : null}
          </td>
        </tr>
      ))}
    </DataTable>
  );
});
