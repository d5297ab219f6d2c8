'use client';

import { RowLink } from '../shared/row-link.tsx';
import { memo, useMemo } from 'react';
import type { RecentEvent, Snapshot } from '../../lib/api/index.ts';
import { eventGroupSummary, eventsByVolume, type VolumeEvents } from '../../lib/dashboard/incident-history.ts';
import { volumeHref } from '../../lib/dashboard/routes.ts';
import { EmptyState } from '../shared/empty-state.tsx';
import { ErrorCauseText } from '../shared/error-cause.tsx';
import { DataTable } from '../shared/data-table.tsx';
import { LiveText, TimeOfDay } from '../shared/time-text.tsx';
import { PodRefList } from '../shared/pod-ref.tsx';

export interface EventsTableProps {
  readonly node: string;
  /** The events to show (all of the snapshot's, or those of one pod or volume), oldest first. */
  readonly events: readonly RecentEvent[];
  /** Where the volumes, their mounts and the operations' successes are looked up. */
  readonly snapshot: Pick<Snapshot, 'desired' | 'actual' | 'operationHistory'>;
  readonly podNames: ReadonlyMap<string, string>;
}

function ResolutionText({ resolution }: { resolution: VolumeEvents['groups'][number]['resolution'] }) {
  if (resolution.state === 'open') return null;
  if (resolution.state === 'pods-gone') return <span className="muted">over: its pods are gone</span>;
  return (
    <span className="text-good">
      <span aria-hidden="true">✓ </span>
      resolved: mounted{resolution.mountedAt === null ? '' : ' at '}
      {resolution.mountedAt === null ? null : <TimeOfDay at={resolution.mountedAt} />}
    </span>
  );
}

function VolumeEventsTable({ node, entry, podNames }: { node: string; entry: VolumeEvents; podNames: ReadonlyMap<string, string> }) {
  return (
    <section className="event-volume" aria-label={entry.volume === null ? 'Events about no one volume' : `Events of volume ${entry.volume}`}>
      <h4 className="break">
        {entry.volume === null ? 'Node and other events' : <RowLink href={volumeHref(node, entry.volume)}>{entry.volume}</RowLink>}
        {entry.settled ? null : <span className="text-bad"> · failing</span>}
      </h4>
      <DataTable columns={['Events', 'Type', 'Pods', 'Status', 'Last message']} compact>
        {entry.groups.map((g) => (
          <tr key={g.key}>
            <td>
              <LiveText text={(now) => eventGroupSummary(g, now)} />
            </td>
            <td>
              <span className={g.type === 'Warning' ? 'text-bad' : undefined}>
                <span aria-hidden="true">{g.type === 'Warning' ? '! ' : 'i '}</span>
                {g.type}
              </span>
            </td>
            <td>
              <PodRefList node={node} uids={g.podUids} podNames={podNames} empty="node" />
            </td>
            <td>
              <ResolutionText resolution={g.resolution} />
            </td>
            <td className="cell-error">
              <ErrorCauseText message={g.lastMessage} />
            </td>
          </tr>
        ))}
      </DataTable>
    </section>
  );
}

/**
 * Recent events aggregated like kubectl ("FailedMount ×9 over 61 s, last 3 s ago"), grouped per
 * volume (failing volumes first), each mount failure marked resolved once its volume is mounted.
 */
export const EventsTable = memo(function EventsTable({ node, events, snapshot, podNames }: EventsTableProps) {
  const volumes = useMemo(() => eventsByVolume(events, snapshot), [events, snapshot]);
  if (events.length === 0) return <EmptyState>No recent events.</EmptyState>;
  return (
    <div className="event-volumes">
      {volumes.map((entry) => (
        <VolumeEventsTable key={entry.volume ?? ''} node={node} entry={entry} podNames={podNames} />
      ))}
    </div>
  );
});
