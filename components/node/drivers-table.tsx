'use client';

import { memo } from 'react';
import type { ActualVolume, AttachVerification, Driver } from '../../lib/api/index.ts';
import { driverLimit } from '../../lib/dashboard/driver-limits.ts';
import { EmptyState } from '../shared/empty-state.tsx';
import { ErrorCauseText } from '../shared/error-cause.tsx';
import { RelativeTime } from '../shared/time-text.tsx';
import { DataTable } from '../shared/data-table.tsx';

const NO_VOLUMES: readonly ActualVolume[] = [];

function LimitText({ limit }: { limit: ReturnType<typeof driverLimit> }) {
  return limit.full ? (
    <span className="text-bad" title="the next volume of this driver cannot be attached to this node">
      <span aria-hidden="true">! </span>
      {limit.text} (full)
    </span>
  ) : (
    <span title="NodeGetInfo max_volumes_per_node, the CSINode allocatable.count">{limit.text}</span>
  );
}

/** CSI drivers (with their attach limit against the node's volumes of each) and the attach verification. */
export const DriversTable = memo(function DriversTable({
  drivers,
  attach,
  volumes = NO_VOLUMES,
}: {
  drivers: readonly Driver[];
  attach: AttachVerification;
  /** The actual state's volumes, counted against each driver's attach limit. */
  volumes?: readonly ActualVolume[];
}) {
  return (
    <>
      {drivers.length === 0 ? <EmptyState>No CSI driver registered.</EmptyState> : (
        <DataTable columns={['Driver', 'Registered', 'Node ID', 'Attach limit', 'Capabilities', 'Last probe', 'Last error']}>
          {drivers.map((d) => (
            <tr key={d.name}>
              <td>
                <code>{d.name}</code>
                <div className="muted small">{d.endpoint}</div>
              </td>
              <td>
                <span aria-hidden="true">{d.registered ? '✓ ' : '✕ '}</span>
                {d.registered ? 'yes' : 'no'}
              </td>
              <td>{d.nodeId ?? '—'}</td>
              <td>
                <LimitText limit={driverLimit(d, volumes)} />
              </td>
              <td>{d.capabilities.length === 0 ? '—' : d.capabilities.join(', ')}</td>
              <td>
                <RelativeTime at={d.lastProbeAt} fallback="never" />
              </td>
              <td className="cell-error">{d.lastError === null ? '—' : <ErrorCauseText message={d.lastError} />}</td>
            </tr>
          ))}
        </DataTable>
      )}
      <p className="facts">
        <span>
          attach verification: <RelativeTime at={attach.lastRunAt} fallback="not run yet" />, checked {attach.checked}
        </span>
        <span className={attach.foundDetached.length > 0 ? 'text-bad' : undefined}>
          found detached: {attach.foundDetached.length === 0 ? 'none' : attach.foundDetached.join(', ')}
        </span>
      </p>
    </>
  );
});
