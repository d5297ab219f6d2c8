'use client';

import Link from 'next/link';
import { memo } from 'react';
import { operationKey, type OperationHistory } from '../../lib/api/index.ts';
import { historyTiming } from '../../lib/dashboard/incident-history.ts';
import { rowPodName, stageLabel, type PipelineStage, type VolumeRow } from '../../lib/dashboard/pipeline.ts';
import type { ConnectionPhase } from '../../lib/dashboard/queries.ts';
import { nodeHref, volumeHref } from '../../lib/dashboard/routes.ts';
import { RetryButton } from '../actions/retry-button.tsx';
import { RowCommandsButton } from '../actions/row-commands-button.tsx';
import { volumeRowTargetText } from '../../lib/dashboard/kube-commands.ts';
import { volumeRowCommandText, type RowCommandsSnapshot } from '../../lib/dashboard/row-commands.ts';
import { UnmountButton } from '../actions/unmount-button.tsx';
import type { PendingAction } from '../dialogs/action-dialog.tsx';
import type { KubeletEvidence } from '../../lib/dashboard/kubelet-evidence.ts';
import { uncertainHeadline } from '../../lib/dashboard/volume-state-wording.ts';
import { KubeletBackoffCell } from '../observe/plan-row.tsx';
import { ErrorCauseText } from '../shared/error-cause.tsx';
import { StageStatusBadge, VolumeStateBadge } from '../shared/status-badges.tsx';
import { AbsoluteTime, LiveText, OperationCountdown, RelativeTime, TimeOfDay } from '../shared/time-text.tsx';

/** Since when the operation fails and how often it was tried in all (a Retry now resets neither). */
function HistoryLine({ history }: { history: OperationHistory }) {
  return (
    <p className="small" data-testid="operation-history-line">
      First failure <TimeOfDay at={history.firstFailureAt} /> · {/* No timer role: the card's one timer is the countdown. */}
      <LiveText text={(now) => historyTiming(history, now).text} /> · {history.attemptsTotal} attempt{history.attemptsTotal === 1 ? '' : 's'} in all
    </p>
  );
}

/** The blocking stage's headline, in the words of the cause and the mode: who settles it (volume-state-wording.ts). */
export function blockingTitle(row: Pick<VolumeRow, 'observed' | 'uncertainCause'>, stage: Pick<PipelineStage, 'status'>): string {
  if (stage.status !== 'uncertain') return 'Blocked here.';
  return uncertainHeadline(row.uncertainCause ?? (row.observed ? 'found-on-disk' : 'outcome-unknown'), row.observed);
}

/** What the blocking stage waits for when no operation works on it, in the words of the mode. */
export function nothingPendingText(row: Pick<VolumeRow, 'observed'>, stage: Pick<PipelineStage, 'detail'>): string {
  const next = row.observed ? 'the kubelet picks it up on its next pass.' : 'the reconciler picks it up on its next pass.';
  return `${row.observed ? 'No kubelet event reports a failure for it' : 'No operation is pending for it'}: ${stage.detail ?? next}`;
}

/** Observe mode: the kubelet's failed step, its event and backoff, exactly as the plan shows them. */
function KubeletBlockingDetail({ node, row, kubelet }: { node: string; row: VolumeRow; kubelet: KubeletEvidence }) {
  const step = kubelet.backoff.operation;
  return (
    <>
      <p>
        The kubelet’s <code>{step ?? kubelet.planned.operation}</code> failed for this volume; it retries on its own when its backoff ends (this agent only
        observes). <Link href={`${nodeHref(node)}#observe-plan`}>In the kubelet’s plan</Link>: <code>{kubelet.planned.operation}</code>
        {row.podUid === kubelet.planned.podUid ? null : ' (volume-wide)'}.
      </p>
      <KubeletBackoffCell backoff={kubelet.backoff} />
    </>
  );
}

function BlockingDetail({ node, row, stage, history }: { node: string; row: VolumeRow; stage: PipelineStage; history: OperationHistory | null }) {
  const op = row.operation;
  return (
    <div className="blocking">
      <p className="blocking__title">
        <span aria-hidden="true">▶ </span>
        {blockingTitle(row, stage)}
      </p>
      {row.kubelet !== null ? (
        <KubeletBlockingDetail node={node} row={row} kubelet={row.kubelet} />
      ) : op !== null ? (
        <>
          <p>
            <code>{op.operationName}</code> {op.state === 'running' ? 'is running' : 'is in backoff'}
            {op.failures > 0 ? `, ${op.failures} failure${op.failures === 1 ? '' : 's'}` : ''} — <OperationCountdown op={op} />
            {op.state === 'backoff' && op.retryAt !== null ? (
              <span className="muted">
                {' '}
                (backoff deadline <AbsoluteTime at={op.retryAt} />, window {Math.round(op.durationBeforeRetryMs / 100) / 10} s)
              </span>
            ) : null}
          </p>
          {history !== null ? <HistoryLine history={history} /> : null}
          {op.lastError !== null ? (
            <>
              <p className="muted small">
                Last error, <RelativeTime at={op.lastErrorAt} />:
              </p>
              <ErrorCauseText message={op.lastError} variant="block" />
            </>
          ) : null}
        </>
      ) : (
        <p className="muted">{nothingPendingText(row, stage)}</p>
      )}
    </div>
  );
}

export interface VolumePipelineProps {
  readonly node: string;
  readonly row: VolumeRow;
  readonly phase: ConnectionPhase;
  readonly synced: boolean;
  /** The agent runs in observe mode: no Unmount. */
  readonly observing?: boolean;
  readonly onAction: ((action: PendingAction) => void) | null;
  /** One-line stages for the embed view. */
  readonly compact?: boolean;
  /** The operations' histories by `operationKey`: the blocking operation's first failure, stuck for, attempts in all. */
  readonly history?: ReadonlyMap<string, OperationHistory>;
  /** The latest snapshot (`useLatest`), read when the card's commands are copied; without it the card has no Copy commands. */
  readonly commandsSnapshot?: () => RowCommandsSnapshot;
}

/**
 * One volume's mount pipeline: in desired world → reported in use → attached → device mounted →
 * mounted into pod → ready. The first blocking stage is highlighted with the operation's last
 * error verbatim and its backoff deadline; an uncertain stage is shown as uncertain.
 */
export const VolumePipeline = memo(function VolumePipeline({ node, row, phase, synced, observing = false, onAction, compact = false, history, commandsSnapshot }: VolumePipelineProps) {
  const op = row.operation;
  const opHistory = op === null ? null : (history?.get(operationKey(op)) ?? null);
  return (
    <article className={`pipeline-card pipeline-card--${row.state}${compact ? ' pipeline-card--compact' : ''}`} aria-labelledby={`vol-${row.id}`}>
      <header className="pipeline-card__header">
        <h3 id={`vol-${row.id}`}>
          <Link href={volumeHref(node, row.uniqueVolumeName)}>{row.volumeName}</Link>
        </h3>
        <VolumeStateBadge state={row.state} cause={row.uncertainCause} />
        {!compact ? <code className="muted small">{row.uniqueVolumeName}</code> : null}
        {onAction !== null ? (
          <span className="toolbar">
            {op !== null && !row.observed ? <RetryButton node={node} op={op} podName={rowPodName(row)} volumeName={row.volumeName} phase={phase} onAction={onAction} /> : null}
            {!row.desired && !row.observed ? <UnmountButton node={node} row={row} phase={phase} synced={synced} observing={observing} onAction={onAction} /> : null}
          </span>
        ) : null}
        {commandsSnapshot !== undefined && !compact ? (
          <RowCommandsButton
            target={volumeRowTargetText({ volumeName: row.volumeName, podName: rowPodName(row), podUid: row.podUid })}
            getText={() => volumeRowCommandText(node, row, null, commandsSnapshot())}
          />
        ) : null}
      </header>
      {/* Compact (the embeds): the error and its history right under the name, above the stages,
          so a 400 px high frame shows them without scrolling. */}
      {row.blocking !== null && compact && op !== null ? (
        <>
          <p className="compact-error">
            <OperationCountdown op={op} /> {op.lastError !== null ? <ErrorCauseText message={op.lastError} /> : null}
          </p>
          {opHistory !== null ? <HistoryLine history={opHistory} /> : null}
        </>
      ) : null}
      <ol className="pipeline" aria-label={`Mount pipeline of ${row.volumeName}`}>
        {row.stages.map((stage) => {
          const blocking = row.blocking?.id === stage.id;
          return (
            <li key={stage.id} className={`stage stage--${stage.status}${blocking ? ' stage--blocking' : ''}`} aria-current={blocking ? 'step' : undefined}>
              <span className="stage__label">{stageLabel(stage.id, row.attachable)}</span>
              <StageStatusBadge status={stage.status} />
              {blocking ? <span className="stage__flag">blocking</span> : null}
              {stage.detail !== null && !compact ? <span className="stage__detail">{stage.detail}</span> : null}
            </li>
          );
        })}
      </ol>
      {row.blocking !== null && !compact ? <BlockingDetail node={node} row={row} stage={row.blocking} history={opHistory} /> : null}
    </article>
  );
});
