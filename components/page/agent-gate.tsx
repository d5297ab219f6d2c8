'use client';

import type { ReactNode } from 'react';
import type { Snapshot } from '../../lib/api/index.ts';
import { useAgentConnection, useAgentSnapshot } from '../../lib/dashboard/use-agent.ts';
import { ConnectionStatus } from '../shared/connection-status.tsx';
import { StaleProvider } from '../shared/stale-frame.tsx';

/**
 * Renders `children(snapshot)` once the agent's snapshot is in the cache; until then, the
 * connection state (connecting, or unreachable with its error and last-seen time). The children's
 * panels are dimmed and stamped "as of <time> (agent unreachable)" while the agent is unreachable.
 */
export function AgentGate({ agent, children }: { agent: string; children: (snapshot: Snapshot) => ReactNode }) {
  const { data } = useAgentSnapshot(agent);
  const connection = useAgentConnection(agent);
  if (data !== undefined) return <StaleProvider agent={agent}>{children(data)}</StaleProvider>;
  return (
    <div className="gate" aria-busy={connection.phase === 'connecting'}>
      <p>
        {connection.phase === 'unavailable' || connection.phase === 'reconnecting'
          ? `No data from agent ${agent} yet.`
          : `Waiting for the first snapshot from agent ${agent}…`}
      </p>
      <ConnectionStatus agent={agent} />
    </div>
  );
}
