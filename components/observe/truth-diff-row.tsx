'use client';

import { RowLink } from '../shared/row-link.tsx';
import { memo, type CSSProperties, type ReactNode } from 'react';
import type { TruthDiffRow } from '../../lib/api/observe.ts';
import { findingSeverityLabel } from '../../lib/dashboard/observe-view.ts';
import { podHref } from '../../lib/dashboard/routes.ts';
import { StateBadge } from './state-badge.tsx';

const LIST_STYLE: CSSProperties = { listStyle: 'none', margin: 0, padding: 0 };

/** A yes/no fact as icon + words: `✓ attached`, `– not listed`. */
function Mark({ on, children }: { on: boolean; children: ReactNode }) {
  return (
    <span>
      <span aria-hidden="true">{on ? '✓ ' : '– '}</span>
      {children}
    </span>
  );
}

function VolumeAttachmentsCell({ vas }: { vas: TruthDiffRow['volumeAttachments'] }) {
  if (vas.length === 0) return <span className="muted">none</span>;
  return (
    <ul className="plain-list">
      {vas.map((va) => (
        <li key={va.name}>
          <code>{va.name}</code>: <Mark on={va.attached}>{va.attached ? 'attached' : 'not attached'}</Mark>
          {va.deleting ? (
            <span>
              {' '}
              · <span aria-hidden="true">⏏ </span>deleting
            </span>
          ) : null}
          {va.attachError !== null ? (
            <div className="error-text">
              <span aria-hidden="true">✕ </span>attachError: {va.attachError}
            </div>
          ) : null}
          {va.detachError !== null ? (
            <div className="error-text">
              <span aria-hidden="true">✕ </span>detachError: {va.detachError}
            </div>
          ) : null}
        </li>
      ))}
    </ul>
  );
}

function MountsCell({ node, row }: { node: string; row: TruthDiffRow }) {
  if (row.globalMounts.length === 0 && row.podMounts.length === 0) return <span className="muted">none</span>;
  return (
    <ul className="plain-list">
      {row.globalMounts.map((m) => (
        <li key={`g|${m}`}>
          global: <code>{m}</code>
        </li>
      ))}
      {row.podMounts.map((m) => (
        <li key={`p|${m.podUid}|${m.mountPoint}`}>
          pod <RowLink href={podHref(node, m.podUid)}>{m.podUid}</RowLink>: <code>{m.mountPoint}</code>
        </li>
      ))}
    </ul>
  );
}

/** One volume of the truth diff: each source’s view of it, and the findings where they disagree. */
export const TruthRow = memo(function TruthRow({ node, row }: { node: string; row: TruthDiffRow }) {
  return (
    <tr className={row.findings.some((f) => f.severity === 'error') ? 'row--backoff' : undefined}>
      <td className="cell-wrap">
        <code>{row.volume ?? row.key}</code>
      </td>
      <td className="cell-wrap">
        {row.desiredPods === null ? (
          <span className="muted">not desired</span>
        ) : (
          <ul className="plain-list">
            {row.desiredPods.map((uid) => (
              <li key={uid}>
                <RowLink href={podHref(node, uid)}>{uid}</RowLink>
              </li>
            ))}
          </ul>
        )}
      </td>
      <td>
        <Mark on={row.inUse}>{row.inUse ? 'in use' : 'not in use'}</Mark>
      </td>
      <td className="cell-wrap">
        {row.attachedDevicePath === null ? (
          <Mark on={false}>not listed</Mark>
        ) : (
          <>
            <Mark on>attached</Mark>
            {row.attachedDevicePath !== '' ? (
              <div>
                <code>{row.attachedDevicePath}</code>
              </div>
            ) : null}
          </>
        )}
      </td>
      <td className="cell-wrap">
        <VolumeAttachmentsCell vas={row.volumeAttachments} />
      </td>
      <td className="cell-wrap">
        <MountsCell node={node} row={row} />
      </td>
      <td className="cell-error">
        {row.findings.length === 0 ? (
          <Mark on>all sources agree</Mark>
        ) : (
          <ul className="plain-list" style={LIST_STYLE}>
            {row.findings.map((f) => (
              <li key={f.code}>
                <StateBadge state={findingSeverityLabel(f.severity)} /> <code>{f.code}</code>
                <div>{f.explanation}</div>
              </li>
            ))}
          </ul>
        )}
      </td>
    </tr>
  );
});
