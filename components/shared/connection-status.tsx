'use client';

import type { AgentConnectionState } from '../../lib/dashboard/queries.ts';
import { formatDuration, formatUtc } from '../../lib/dashboard/time-format.ts';
import { useAgentConnection, useNow } from '../../lib/dashboard/use-agent.ts';
import { RelativeTime } from './time-text.tsx';

/** After this long without live data, the indicator says "stale since …" instead of "reconnecting for …". */
const STALE_AFTER_MS = 30_000;

/** "live", "reconnecting for 12 s", "stale since 08:01:03", "unreachable: …", "paused": the agent's event stream. */
export function ConnectionStatus({ agent, compact = false }: { agent: string; compact?: boolean }) {
  return <ConnectionIndicator agent={agent} state={useAgentConnection(agent)} compact={compact} />;
}

/** What the indicator shows: an event stream's state, or the overview's poll status of one agent. */
export type ConnectionIndicatorState = Pick<AgentConnectionState, 'phase' | 'disconnectedSince' | 'lastSeenAt' | 'error'>;

/** The indicator itself (test id `connection-status`, `data-phase`), for any source of the state. */
export function ConnectionIndicator({ agent, state, compact = false }: { agent: string; state: ConnectionIndicatorState; compact?: boolean }) {
  const now = useNow(1000);
  let icon: string;
  let text: string;
  let tone: 'live' | 'warn' | 'bad' | 'idle';
  switch (state.phase) {
    case 'live':
      icon = '●';
      text = 'live';
      tone = 'live';
      break;
    case 'connecting':
      icon = '○';
      text = state.disconnectedSince === null ? 'connecting…' : 'resyncing…';
      tone = 'idle';
      break;
    case 'paused':
      icon = '❙❙';
      text = 'paused while the tab is hidden';
      tone = 'idle';
      break;
    case 'reconnecting':
    case 'unavailable': {
      const since = state.disconnectedSince ?? now;
      const stale = now - since >= STALE_AFTER_MS;
      icon = state.phase === 'unavailable' ? '✕' : '↻';
      const clock = new Date(since).toLocaleTimeString();
      if (state.phase === 'unavailable') text = stale ? `unreachable, stale since ${clock}` : `unreachable for ${formatDuration(now - since)}`;
      else text = stale ? `stale since ${clock}` : `reconnecting for ${formatDuration(now - since)}`;
      tone = state.phase === 'unavailable' || stale ? 'bad' : 'warn';
      break;
    }
  }
  return (
    <div className={`conn conn--${tone}${compact ? ' conn--compact' : ''}`} data-testid="connection-status" data-phase={state.phase}>
      <span className="visually-hidden" aria-live="polite">
        {`${agent}: ${state.phase}`}
      </span>
      <span className="conn__main" title={state.disconnectedSince === null ? undefined : `since ${formatUtc(state.disconnectedSince)}`} suppressHydrationWarning>
        <span aria-hidden="true" className="conn__icon">
          {icon}
        </span>{' '}
        {text}
      </span>
      {state.phase !== 'live' && state.phase !== 'connecting' && state.phase !== 'paused' && !compact ? (
        <span className="conn__detail">
          {state.error !== null ? <span className="conn__error">{state.error}</span> : null}
          <span>
            last seen <RelativeTime at={state.lastSeenAt} fallback="never" />
          </span>
        </span>
      ) : null}
    </div>
  );
}
