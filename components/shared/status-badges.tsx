import type { Operation } from '../../lib/api/index.ts';
import type { NodeHealth } from '../../lib/dashboard/node-summary.ts';
import type { StageStatus, VolumeState } from '../../lib/dashboard/pipeline.ts';

// Every state is shown as an icon plus a word, so colour is never the only cue.

const VOLUME_STATE_TEXT: Record<VolumeState, { icon: string; label: string }> = {
  ready: { icon: '✓', label: 'ready' },
  uncertain: { icon: '?', label: 'uncertain' },
  backoff: { icon: '!', label: 'backoff' },
  running: { icon: '↻', label: 'running' },
  waiting: { icon: '…', label: 'waiting' },
  unmounting: { icon: '⏏', label: 'unmounting' },
};

export function volumeStateLabel(state: VolumeState): string {
  return VOLUME_STATE_TEXT[state].label;
}

export function VolumeStateBadge({ state }: { state: VolumeState }) {
  const t = VOLUME_STATE_TEXT[state];
  return (
    <span className={`badge badge--${state}`} data-state={state}>
      <span className="badge__icon" aria-hidden="true">
        {t.icon}
      </span>
      {t.label}
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
