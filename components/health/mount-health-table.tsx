'use client';

import type { MountHealthState } from '../../lib/api/index.ts';
import { MOUNT_STATE_WORDS, type MountHealthRow } from '../../lib/dashboard/mount-health-view.ts';
import { DataTable } from '../shared/data-table.tsx';
import { EmptyState } from '../shared/empty-state.tsx';
import { PodRefList } from '../shared/pod-ref.tsx';
import { RelativeTime } from '../shared/time-text.tsx';

/** A health state as an icon plus words (colour is never the only cue). */
export function MountStateBadge({ state }: { state: MountHealthState }) {
  const healthy = state === 'healthy';
  return (
    <span className={`badge badge--${healthy ? 'ready' : 'backoff'}`} data-state={state}>
      <span className="badge__icon" aria-hidden="true">
        {healthy ? '✓' : state === 'hung' ? '⏸' : '!'}
      </span>
      {MOUNT_STATE_WORDS[state]}
    </span>
  );
}

/**
 * The mount health checks of a node, pod or volume: path, kind, state (with the error), the pods
 * it affects, since when and the last check.
 */
export function MountHealthTable({ node, rows, podNames, empty, caption }: { node: string; rows: readonly MountHealthRow[]; podNames: ReadonlyMap<string, string>; empty: string; caption: string }) {
  if (rows.length === 0) return <EmptyState>{empty}</EmptyState>;
  return (
    <DataTable columns={['State', 'Path', 'Kind', 'Affected pods', 'Since', 'Checked']} caption={caption}>
      {rows.map(({ entry, affectedPods }) => (
        <tr key={entry.path} data-state={entry.state}>
          <td>
            <MountStateBadge state={entry.state} />
            {entry.error !== null ? <div className="small break">{entry.error}</div> : null}
          </td>
          <td>
            <code className="break">{entry.path}</code>
          </td>
          <td>{entry.kind === 'staging' ? 'staging (device mount)' : 'pod volume'}</td>
          <td>
            <PodRefList node={node} uids={affectedPods} podNames={podNames} empty="none" />
          </td>
          <td>
            <RelativeTime at={entry.since} />
          </td>
          <td>
            <RelativeTime at={entry.checkedAt} />
          </td>
        </tr>
      ))}
    </DataTable>
  );
}
