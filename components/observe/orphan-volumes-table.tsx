import type { OrphanPod } from '../../lib/api/observe.ts';
import { orphanVolumeDetail, orphanVolumeStateLabel } from '../../lib/dashboard/observe-view.ts';
import { MountList } from './mount-list.tsx';
import { StateBadge } from './state-badge.tsx';
import { DataTable } from '../shared/data-table.tsx';

/** The volume paths below an orphaned pod directory: state, what is there, and its mounts. */
export function OrphanVolumesTable({ orphan }: { orphan: OrphanPod }) {
  if (orphan.volumes.length === 0) return <p className="muted">No volume paths.</p>;
  return (
    <DataTable columns={['Volume', 'State', 'What is there', 'Mounts']} caption={`Volume paths of pod ${orphan.podUid}`} compact>
      {orphan.volumes.map((v) => (
        <tr key={v.path}>
          <td className="cell-wrap">
            <code>{v.volumeName}</code>
            <div className="muted small">{v.pluginName ?? 'volume-subpaths'}</div>
            <div className="muted small break">{v.path}</div>
          </td>
          <td>
            <StateBadge state={orphanVolumeStateLabel(v.state)} />
          </td>
          <td className="cell-wrap">
            {orphanVolumeDetail(v)}
            <div className="muted small">{v.explanation}</div>
          </td>
          <td className="cell-wrap">
            <MountList mounts={v.mounts} none="—" />
          </td>
        </tr>
      ))}
    </DataTable>
  );
}
