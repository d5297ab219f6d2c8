'use client';

import Link from 'next/link';
import { summarizeNode, type NodeSummary } from '../lib/dashboard/node-summary.ts';
import { nodeHref } from '../lib/dashboard/routes.ts';
import { useAgentConnection, useAgentSelect } from '../lib/dashboard/use-agent.ts';
import { ConnectionStatus } from './connection-status.tsx';
import { NodeCounts, NodeFacts, ReconstructionLine } from './node-panels.tsx';

/** A configured agent as the overview lists it. */
export interface OverviewAgent {
  readonly name: string;
  readonly url: string;
}

function NodeCard({ agent }: { agent: OverviewAgent }) {
  const { data: summary } = useAgentSelect<NodeSummary>(agent.name, summarizeNode);
  const connection = useAgentConnection(agent.name);
  return (
    <li className={`node-card${connection.phase === 'unavailable' ? ' node-card--down' : ''}`}>
      <header className="node-card__header">
        <h2>
          <Link href={nodeHref(agent.name)}>{agent.name}</Link>
        </h2>
        <ConnectionStatus agent={agent.name} />
      </header>
      <p className="muted small">{agent.url}</p>
      {summary === undefined ? (
        <p className="empty">No snapshot yet.</p>
      ) : (
        <>
          <NodeFacts summary={summary} />
          <NodeCounts summary={summary} />
          <ReconstructionLine summary={summary} />
        </>
      )}
    </li>
  );
}

/** The nodes overview: one live card per configured agent. */
export function NodesOverview({ agents }: { agents: readonly OverviewAgent[] }) {
  return (
    <ul className="node-cards">
      {agents.map((a) => (
        <NodeCard key={a.name} agent={a} />
      ))}
    </ul>
  );
}
