'use client';

import { memo } from 'react';
import type { AttachVerification, Driver } from '../../lib/api/index.ts';
import { EmptyState } from '../shared/empty-state.tsx';
import { RelativeTime } from '../shared/time-text.tsx';

/** CSI drivers and the attach verification. */
export const DriversTable = memo(function DriversTable({ drivers, attach }: { drivers: readonly Driver[]; attach: AttachVerification }) {
  return (
    <>
      {drivers.length === 0 ? <EmptyState>No CSI driver registered.</EmptyState> : (
        <div className="table-wrap">
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Driver</th>
                <th scope="col">Registered</th>
                <th scope="col">Node ID</th>
                <th scope="col">Capabilities</th>
                <th scope="col">Last probe</th>
                <th scope="col">Last error</th>
              </tr>
            </thead>
            <tbody>
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
                  <td>{d.capabilities.length === 0 ? '—' : d.capabilities.join(', ')}</td>
                  <td>
                    <RelativeTime at={d.lastProbeAt} fallback="never" />
                  </td>
                  <td className="cell-error">{d.lastError ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
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
