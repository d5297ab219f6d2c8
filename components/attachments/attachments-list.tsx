'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { attachmentHref, attachmentsQueryOptions } from '../../lib/dashboard/attachments/attachments-client.ts';
import type { InformerProblem } from '../../lib/dashboard/attachments/attachment-informers.ts';
import { formatDuration } from '../../lib/dashboard/time-format.ts';
import { DataTable } from '../shared/data-table.tsx';
import { EmptyState } from '../shared/empty-state.tsx';
import { SeverityBadge } from './verdict-view.tsx';

export function InformerProblems({ problems, nowMs }: { problems: readonly InformerProblem[]; nowMs: number }) {
  if (problems.length === 0) return null;
  return (
    <div className="gate" role="alert">
      <p>The dashboard cannot read everything the attach/detach controller reads; what it shows may be out of date:</p>
      <ul>
        {problems.map((p) => (
          <li key={p.kind}>
            <code>{p.path}</code>: {p.message} (for {formatDuration(nowMs - p.sinceMs)})
          </li>
        ))}
      </ul>
    </div>
  );
}

export function OutOfServiceReminder({ nodes }: { nodes: readonly string[] }) {
  if (nodes.length === 0) return null;
  return (
    <p className="gate" role="status">
      Marked out of service: {nodes.join(', ')}. Pods there are force-deleted and their volumes detached without waiting; remove the taint once the node is back and clean.
    </p>
  );
}

/** The request failed and nothing was loaded before. */
export function QueryErrorGate({ error }: { error: Error }) {
  return (
    <div className="gate" role="alert">
      <p>{error.message}</p>
    </div>
  );
}

/** `/volumes/attachments`: every blocked or suspect attachment, polled. */
export function AttachmentsList() {
  const query = useQuery(attachmentsQueryOptions());
  if (query.error !== null && query.data === undefined) return <QueryErrorGate error={query.error} />;
  const data = query.data;
  if (data === undefined) return <p aria-busy="true">Reading the cluster's attachments…</p>;
  return (
    <>
      <InformerProblems problems={data.problems} nowMs={data.nowMs} />
      <OutOfServiceReminder nodes={data.outOfServiceNodes} />
      {!data.listed ? (
        <p aria-busy="true">Listing VolumeAttachments, volumes, pods and nodes…</p>
      ) : (
        <p className="muted">
          {data.counts.volumes} attachable volume{data.counts.volumes === 1 ? '' : 's'}: {data.counts.blocked} blocked, {data.counts.suspect} suspect.
        </p>
      )}
      {data.listed && data.volumes.length === 0 ? <EmptyState>No attachment is blocked or suspect.</EmptyState> : null}
      {data.volumes.length > 0 ? (
        <DataTable columns={['Volume', 'Claim', 'State', 'What', 'Node']} caption="Blocked and suspect attachments">
          {data.volumes.map((v) => (
            <tr key={v.pv}>
              <td>
                <Link href={attachmentHref(v.pv)}>{v.pv}</Link>
                <div className="muted small">{v.driver}</div>
              </td>
              <td>{v.claim ?? '—'}</td>
              <td>
                <SeverityBadge severity={v.severity} />
              </td>
              <td>{v.verdicts[0]?.title ?? ''}{v.verdicts.length > 1 ? <span className="muted small"> (+{v.verdicts.length - 1} more)</span> : null}</td>
              <td>{v.verdicts[0]?.node ?? ''}</td>
            </tr>
          ))}
        </DataTable>
      ) : null}
    </>
  );
}
