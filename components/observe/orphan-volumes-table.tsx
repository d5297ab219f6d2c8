import type { OrphanPod } from '../../lib/api/observe.ts';
import { orphanVolumeDetail, orphanVolumeStateLabel } from '../../lib/dashboard/observe-view.ts';
import { MountList } from './mount-list.tsx';
import { StateBadge } from './state-badge.tsx';

/** The volume paths below an orphaned pod directory: state, what is there, and its mounts. */
export function OrphanVolumesTable({ orphan }: { orphan: OrphanPod }) {
  if (orphan.volumes.length === 0) return <p className="muted">No volume paths.</p>;
  return (
    <div className="table-wrap">
      <table className="table table--compact">
        <caption className="visually-hidden">Volume paths of pod {orphan.podUid}</caption>
        <thead>
          <tr>
            <th scope="col">Volume</th>
            <th scope="col">State</th>
            <th scope="col">What is there</th>
            <th scope="col">Mounts</th>
          </tr>
        </thead>
        <tbody>
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
        </tbody>
      </table>
    </div>
  );
}
