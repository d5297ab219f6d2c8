import type { Operation } from '../../lib/api/index.ts';
import type { NodeHealth } from '../../lib/dashboard/node-summary.ts';
import type { StageStatus, VolumeState } from '../../lib/dashboard/pipeline.ts';
import { volumeStateText, type UncertainCause } from '../../lib/dashboard/volume-state-wording.ts';

// Every state is shown as an icon plus a word, so colour is never the only cue.

const VOLUME_STATE_ICON: Record<VolumeState, string> = {
  ready: '✓',
  uncertain: '?',
  backoff: '!',
  running: '↻',
  waiting: '…',
  unmounting: '⏏',
};

/** The state's name (the state filter's options). */
export function volumeStateLabel(state: VolumeState): string {
  return volumeStateText(state);
}

/**
 * A row's state: icon and words (volume-state-wording.ts). An uncertain volume the agent only
 * rebuilt from disk (`cause` `found-on-disk`) reads "found on disk, not confirmed", as the plan.
 */
export function VolumeStateBadge({ state, cause = null }: { state: VolumeState; cause?: UncertainCause | null }) {
  return (
    <span className={`badge badge--${state}`} data-state={state} data-cause={cause ?? undefined}>
      <span className="badge__icon" aria-hidden="true">
        {VOLUME_STATE_ICON[state]}
      </span>
      {volumeStateText(state, cause)}
    </span>
  );
}

const HEALTH_TEXT: Record<NodeHealth, { icon: string; label: string }> = {
  healthy: { icon: '✓', label: 'healthy' },
  degraded: { icon: '!', label: 'degraded' },
  syncing: { icon: '↻', label: 'syncing' },
};

export function HealthBadge({ health }: { health: NodeHealth }) {
  const t = HEALTH_TEXT[health];
  return (
    <span className={`badge badge--health-${health}`}>
      <span className="badge__icon" aria-hidden="true">
        {t.icon}
      </span>
      {t.label}
    </span>
  );
}

const STAGE_TEXT: Record<StageStatus, { icon: string; label: string }> = {
  done: { icon: '✓', label: 'done' },
  skipped: { icon: '–', label: 'not applicable' },
  uncertain: { icon: '?', label: 'uncertain' },
  missing: { icon: '○', label: 'not yet' },
};

export function StageStatusBadge({ status }: { status: StageStatus }) {
  const t = STAGE_TEXT[status];
  return (
    <span className={`stage-status stage-status--${status}`}>
      <span className="badge__icon" aria-hidden="true">
        {t.icon}
      </span>
      {t.label}
    </span>
  );
}

/** An operation that runs now (`↻ running`) or waits for its retry (`! backoff`). */
export function OperationStateBadge({ state }: { state: Operation['state'] }) {
  return (
    <span className={`badge badge--${state === 'running' ? 'running' : 'backoff'}`}>
      <span className="badge__icon" aria-hidden="true">
        {state === 'running' ? '↻' : '!'}
      </span>
      {state}
    </span>
  );
}
