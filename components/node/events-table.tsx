'use client';

import Link from 'next/link';
import { memo } from 'react';
import type { RecentEvent } from '../../lib/api/index.ts';
import { podHref } from '../../lib/dashboard/routes.ts';
import { EmptyState } from '../shared/empty-state.tsx';
import { RelativeTime } from '../shared/time-text.tsx';

/** Recent events, newest first. */
export const EventsTable = memo(function EventsTable({ node, events, podNames }: { node: string; events: readonly RecentEvent[]; podNames: ReadonlyMap<string, string> }) {
  if (events.length === 0) return <EmptyState>No recent events.</EmptyState>;
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
