'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { ATTACHMENTS_HREF, attachmentQueryOptions } from '../../lib/dashboard/attachments/attachments-client.ts';
import type { NodeFacts, VolumeOnNode } from '../../lib/dashboard/attachments/model.ts';
import { formatDuration } from '../../lib/dashboard/time-format.ts';
import { DataTable } from '../shared/data-table.tsx';
import { EmptyState } from '../shared/empty-state.tsx';
import { InformerProblems, OutOfServiceReminder, QueryErrorGate } from './attachments-list.tsx';
import { OutOfServicePanel } from './out-of-service-panel.tsx';
import { SeverityBadge, VerdictView } from './verdict-view.tsx';

function yesNo(b: boolean): string {
  return b ? 'yes' : 'no';
}

function NodeRow({ s, node, nowMs }: { s: VolumeOnNode; node: NodeFacts | undefined; nowMs: number }) {
  return (
    <tr>
      <td>
        <code>{s.node}</code>
        {node?.outOfService !== null && node?.outOfService !== undefined ? <div className="small text-bad">out of service</div> : null}
      </td>
      <td>{node === undefined || !node.exists ? 'gone' : `${node.ready ?? 'no condition'}${node.readyReason === null ? '' : ` (${node.readyReason})`}`}</td>
      <td>{node?.leaseRenewedMs === null || node?.leaseRenewedMs === undefined ? '—' : `${formatDuration(nowMs - node.leaseRenewedMs)} ago`}</td>
      <td>{s.pods.length === 0 ? '—' : s.pods.map((p) => `${p.namespace}/${p.name}${p.deleting ? ' (deleting)' : ''}`).join(', ')}</td>
      <td>{yesNo(s.desired)}</td>
      <td>{s.attachment === null ? '—' : `${s.attachment.name} (${s.attachment.attached ? 'attached' : 'not attached'}${s.attachment.deletionMs !== null ? ', deleting' : ''})`}</td>
      <td>{yesNo(s.reportedAttached)}</td>
      <td>{yesNo(s.inUse)}</td>
    </tr>
  );
}

/** `/attachments/<pv>`: one volume's desired and actual attachments and every verdict. */
export function AttachmentDetail({ pv }: { pv: string }) {
  const query = useQuery(attachmentQueryOptions(pv));
  if (query.error !== null && query.data === undefined) return <QueryErrorGate error={query.error} />;
  const data = query.data;
  if (data === undefined) return <p aria-busy="true">Reading the attachments of {pv}…</p>;
  const nodes = new Map(data.nodes.map((n) => [n.name, n]));
  return (
    <>
      <p>
        <Link href={ATTACHMENTS_HREF}>All blocked and suspect attachments</Link>
      </p>
      <InformerProblems problems={data.problems} nowMs={data.nowMs} />
      <OutOfServiceReminder nodes={data.nodes.filter((n) => n.outOfService !== null).map((n) => n.name)} />
      {!data.listed ? <p aria-busy="true">Listing VolumeAttachments, volumes, pods and nodes…</p> : null}
      {data.listed && data.volume === null ? (
        <EmptyState>No CSI volume named {pv} needs attaching (it does not exist, is not CSI, or its driver has attachRequired: false).</EmptyState>
      ) : null}
      {data.volume !== null ? (
        <>
          <p className="facts">
            <SeverityBadge severity={data.explanation?.severity ?? 'ok'} /> <code>{data.volume.driver}</code> · {data.volume.accessModes.join(', ') || 'no access modes'}
            {data.volume.claim !== null ? ` · claim ${data.volume.claim.namespace}/${data.volume.claim.name}` : ''}
            {!data.volume.pvExists ? ' · the PersistentVolume is deleted' : ''}
          </p>
          <DataTable columns={['Node', 'Ready', 'Lease', 'Pods using it', 'Desired', 'VolumeAttachment', 'In volumesAttached', 'In volumesInUse']} caption="Desired and actual attachments per node">
            {data.volume.nodes.map((s) => (
              <NodeRow key={s.node} s={s} node={nodes.get(s.node)} nowMs={data.nowMs} />
            ))}
          </DataTable>
          {data.explanation !== null && data.explanation.verdicts.length === 0 ? <EmptyState>Attached where it is needed; nothing blocks it.</EmptyState> : null}
          {data.explanation?.verdicts.map((v, i) => (
            <VerdictView key={`${v.kind}-${v.node}-${i}`} verdict={v} nowMs={data.nowMs} headingLevel={2} />
          ))}
          {/* The guided non-graceful shutdown, for the nodes holding the volume that are not Ready. */}
          {data.nodes
            .filter((n) => n.exists && !n.healthy && data.volume?.nodes.some((s) => s.node === n.name && s.attached) === true)
            .map((n) => (
              <OutOfServicePanel key={n.name} node={n.name} tainted={n.outOfService !== null} />
            ))}
        </>
      ) : null}
    </>
  );
}
