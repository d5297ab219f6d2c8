'use client';

import { RowLink } from '../shared/row-link.tsx';
import { memo, type CSSProperties } from 'react';
import type { KubeletBackoff, PlannedOperation } from '../../lib/api/observe.ts';
import { backoffBasisNote, durationBeforeRetryText, kubeletBackoffTiming, outstandingText } from '../../lib/dashboard/observe-view.ts';
import { podHref } from '../../lib/dashboard/routes.ts';
import { formatUtc } from '../../lib/dashboard/time-format.ts';
import { useNow } from '../../lib/dashboard/use-agent.ts';
import { RelativeTime } from '../shared/time-text.tsx';
import { RowCommandsButton } from '../actions/row-commands-button.tsx';
import { operationRowTargetText } from '../../lib/dashboard/kube-commands.ts';
import { plannedRowCommandText, type RowCommandsSnapshot } from '../../lib/dashboard/row-commands.ts';

// Live texts keep their width while they count (tabular digits, a minimum width of their longest
// usual text), so neither the row nor the table column moves every second.
const OUTSTANDING_STYLE: CSSProperties = { minWidth: '23ch' };
const RETRY_STYLE: CSSProperties = { minWidth: '13ch' };

/** "outstanding for 3m 12s", live. */
function OutstandingFor({ since }: { since: number }) {
  const now = useNow(1000);
  return (
    <span className="countdown" role="timer" style={OUTSTANDING_STYLE} title={`planned without interruption since ${formatUtc(since)}`} suppressHydrationWarning>
      {outstandingText(since, now)}
    </span>
  );
}

/** "retry in 0:57" until the kubelet's `retryAt`, then "retry due", live. */
function KubeletRetryCountdown({ backoff }: { backoff: KubeletBackoff }) {
  const now = useNow(1000);
  const timing = kubeletBackoffTiming(backoff, now);
  return (
    <span className={`countdown countdown--${timing.kind}`} role="timer" style={RETRY_STYLE} title={`No retries permitted until ${formatUtc(backoff.retryAt)}`} suppressHydrationWarning>
      {timing.text}
    </span>
  );
}

/**
 * The kubelet's backoff as the plan shows it: a live "retry in", its durationBeforeRetry, the
 * error verbatim and when its event was seen. The pod and volume pages show the same facts.
 */
export function KubeletBackoffCell({ backoff }: { backoff: KubeletBackoff | null }) {
  if (backoff === null) return <span className="muted">none known</span>;
  const note = backoffBasisNote(backoff);
  return (
    <>
      <KubeletRetryCountdown backoff={backoff} /> <span className="muted">{durationBeforeRetryText(backoff)}</span>
      {note !== null ? <span className="muted"> {note}</span> : null}
      <div className="error-text">{backoff.error}</div>
      {backoff.observedAt !== null ? (
        <div className="muted small">
          {backoff.reason ?? 'event'} event seen <RelativeTime at={backoff.observedAt} />
          {backoff.count !== undefined && backoff.count > 1 ? ` (${backoff.count} times)` : ''}
        </div>
      ) : null}
    </>
  );
}

/** The plan table's columns; with `commands`, the rows' Copy commands. */
export function planColumns(commands: boolean): string[] {
  const columns = ['Operation', 'Volume', 'Pod', 'Reason', 'Outstanding', 'Kubelet’s backoff'];
  return commands ? [...columns, 'Commands'] : columns;
}

/** One operation of the kubelet’s plan: what, for which pod, why, for how long, and its backoff. */
export const PlanRow = memo(function PlanRow({ node, op, commandsSnapshot }: { node: string; op: PlannedOperation; commandsSnapshot?: () => RowCommandsSnapshot }) {
  return (
    <tr className={op.kubeletBackoff !== null ? 'row--backoff' : undefined}>
      <td>
        <code>{op.operation}</code>
      </td>
      <td className="cell-wrap">
        <code>{op.volume}</code>
      </td>
      <td className="cell-wrap">
        {op.podUid === null ? '—' : (
          <>
            <RowLink href={podHref(node, op.podUid)} title={`pod uid ${op.podUid}`}>
              {op.pod ?? op.podUid}
            </RowLink>
            {op.outerVolumeName !== null ? <div className="muted small">as {op.outerVolumeName}</div> : null}
          </>
        )}
      </td>
      <td className="cell-wrap">{op.reason}</td>
      <td>
        <OutstandingFor since={op.since} />
      </td>
      <td className="cell-error">
        <KubeletBackoffCell backoff={op.kubeletBackoff} />
      </td>
      {commandsSnapshot === undefined ? null : (
        <td>
          <RowCommandsButton
            target={operationRowTargetText({ op: { operationName: op.operation, volume: op.volume, podUid: op.podUid }, podName: op.pod })}
            getText={() => plannedRowCommandText(node, op, commandsSnapshot())}
          />
        </td>
      )}
    </tr>
  );
});
