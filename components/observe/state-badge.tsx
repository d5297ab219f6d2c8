import type { StateLabel } from '../../lib/dashboard/observe-view.ts';

const TONE_CLASS: Record<StateLabel['tone'], string> = {
  bad: 'badge--backoff',
  warn: 'badge--uncertain',
  info: 'badge--running',
  ok: 'badge--ready',
  neutral: 'badge--waiting',
};

/** A state as icon + word (the colour only repeats what the word says). */
export function StateBadge({ state }: { state: StateLabel }) {
  return (
    <span className={`badge ${TONE_CLASS[state.tone]}`}>
      <span className="badge__icon" aria-hidden="true">
        {state.icon}
      </span>
      {state.label}
    </span>
  );
}
