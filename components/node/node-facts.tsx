import type { NodeSummary } from '../../lib/dashboard/node-summary.ts';
import { HealthBadge } from '../shared/status-badges.tsx';
import { RelativeTime } from '../shared/time-text.tsx';

/** Health, sync state and agent facts in one line. */
export function NodeFacts({ summary }: { summary: NodeSummary }) {
  return (
    <p className="facts">
      <HealthBadge health={summary.health} />
      {summary.reasons.length > 0 ? <span className="facts__reasons">{summary.reasons.join(' · ')}</span> : null}
      <span>
        states synced: <strong>{summary.statesSynced ? 'yes' : 'no'}</strong>
      </span>
      <span>
        agent {summary.agentVersion}, started <RelativeTime at={summary.agentStartedAt} />
      </span>
      <span>seq {summary.seq}</span>
    </p>
  );
}
