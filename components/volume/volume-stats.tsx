'use client';

/** The volume page's usage section: the last stats pass of each pod's mount of the volume (`volumeStats[]`). */
import type { VolumeStats } from '../../lib/api/index.ts';
import { formatBytes } from '../../lib/dashboard/csi-panel-view.ts';
import { DataTable } from '../shared/data-table.tsx';
import { EmptyState } from '../shared/empty-state.tsx';
import { ErrorCauseText } from '../shared/error-cause.tsx';
import { RelativeTime } from '../shared/time-text.tsx';

function percent(part: number | null, whole: number | null): string {
  return part === null || whole === null || whole === 0 ? '' : ` (${Math.round((part / whole) * 100)} %)`;
}

export function VolumeStatsTable({ stats, podNames }: { stats: readonly VolumeStats[] | undefined; podNames: ReadonlyMap<string, string> }) {
  if (stats === undefined) return <EmptyState>No usage collected yet (the first stats pass runs within a minute of the mount; none with --volume-stats-agg-period=0 or in observe mode).</EmptyState>;
  if (stats.length === 0) return <EmptyState>No pod has this volume mounted.</EmptyState>;
  return (
    <DataTable columns={['Pod', 'Source', 'Capacity', 'Used', 'Available', 'Inodes used', 'Condition', 'Collected']} caption="Usage of the volume per pod mount">
      {stats.map((s) => (
        <tr key={`${s.podUid}|${s.volumeName}`}>
          <td>
            {podNames.get(s.podUid) ?? s.podUid}
            <div className="muted small">
              {s.volumeName}
              {s.persistentVolumeClaim === null ? '' : ` · claim ${s.persistentVolumeClaim.namespace}/${s.persistentVolumeClaim.name}`}
            </div>
          </td>
          <td>{s.source === 'csi' ? 'NodeGetVolumeStats' : 'statfs'}</td>
          {s.error !== null ? (
            <td colSpan={4} className="cell-error">
              <ErrorCauseText message={s.error} />
            </td>
          ) : (
            <>
              <td>{formatBytes(s.capacityBytes)}</td>
              <td>
                {formatBytes(s.usedBytes)}
                {percent(s.usedBytes, s.capacityBytes)}
              </td>
              <td>{formatBytes(s.availableBytes)}</td>
              <td>
                {s.inodesUsed ?? '—'} / {s.inodes ?? '—'}
                {percent(s.inodesUsed, s.inodes)}
              </td>
            </>
          )}
          <td className={s.condition?.abnormal === true ? 'text-bad' : undefined}>
            {s.condition === null ? (
              <span className="muted">not reported</span>
            ) : (
              <>
                <span aria-hidden="true">{s.condition.abnormal ? '! ' : '✓ '}</span>
                {s.condition.abnormal ? 'abnormal' : 'normal'}
                {s.condition.message === '' ? '' : `: ${s.condition.message}`}
              </>
            )}
          </td>
          <td>
            <RelativeTime at={s.collectedAt} />
          </td>
        </tr>
      ))}
    </DataTable>
  );
}
