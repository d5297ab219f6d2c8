'use client';

import { memo } from 'react';
import type { Reconstruction } from '../../lib/api/index.ts';
import { RECONSTRUCTION_LEGEND } from '../../lib/dashboard/blind-view.ts';
import { reconstructionNote } from '../../lib/dashboard/reconstruction-view.ts';
import { EmptyState } from '../shared/empty-state.tsx';
import { RelativeTime } from '../shared/time-text.tsx';
import { DataTable } from '../shared/data-table.tsx';
import { PodRefLink } from '../shared/pod-ref.tsx';

// Memoized, as every table of the node page: its inputs keep their identity across deltas that
// do not touch them, so a stream flush re-renders only the tables whose data changed.

/** The outcome icons, shared with the legend above the table. */
const OUTCOME_ICON: ReadonlyMap<string, string> = new Map(RECONSTRUCTION_LEGEND.map((e) => [e.outcome, e.icon]));

/** Why a reconstructed volume is kept mounted although no desired pod names it (kubernetes#120150). */
function KeptNote({ volume }: { volume: Reconstruction['volumes'][number] }) {
  const note = reconstructionNote(volume);
  if (note === null) return null;
  return (
    <div className={`badge badge--${note.tone}`} title={note.detail}>
      {note.label}: <span className="cell-error">{volume.keptBecause}</span>
    </div>
  );
}

/** Each volume directory reconstruction scanned, and its outcome. */
export const ReconstructionTable = memo(function ReconstructionTable({ node, reconstruction, podNames }: { node: string; reconstruction: Reconstruction; podNames: ReadonlyMap<string, string> }) {
  if (reconstruction.volumes.length === 0) {
    return <EmptyState>{reconstruction.state === 'done' ? 'Reconstruction found no volume directories.' : `Reconstruction is ${reconstruction.state}.`}</EmptyState>;
  }
  return (
    <DataTable columns={['Pod', 'Volume directory', 'Plugin', 'Outcome', 'Error', 'When']}>
      {reconstruction.volumes.map((v) => (
        <tr key={`${v.podUid}|${v.volumeName}`}>
          <td>
            <PodRefLink node={node} uid={v.podUid} name={podNames.get(v.podUid)} />
          </td>
          <td>
            <code>{v.volumeName}</code>
          </td>
          <td>{v.pluginName}</td>
          <td>
            <span className={`outcome outcome--${v.outcome}`}>
              <span aria-hidden="true">{OUTCOME_ICON.get(v.outcome)} </span>
              {v.outcome}
            </span>
            <KeptNote volume={v} />
          </td>
          <td className="cell-error">{v.error ?? '—'}</td>
          <td>
            <RelativeTime at={v.at} />
          </td>
        </tr>
      ))}
    </DataTable>
  );
});
