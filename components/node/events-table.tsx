'use client';

import Link from 'next/link';
import { memo } from 'react';
import type { RecentEvent } from '../../lib/api/index.ts';
import { podHref } from '../../lib/dashboard/routes.ts';
import { EmptyState } from '../shared/empty-state.tsx';
import { RelativeTime } from '../shared/time-text.tsx';
import { DataTable } from '../shared/data-table.tsx';

/** Recent events, newest first. */
export const EventsTable = memo(function EventsTable({ node, events, podNames }: { node: string; events: readonly RecentEvent[]; podNames: ReadonlyMap<string, string> }) {
  if (events.length === 0) return <EmptyState>No recent events.</EmptyState>;
  return (
    <DataTable columns={['When', 'Type', 'Reason', 'Pod', 'Message']}>
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
    </DataTable>
  );
});
