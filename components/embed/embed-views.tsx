'use client';

import Link from 'next/link';
import { useMemo } from 'react';
import { summarizeNode } from '../../lib/dashboard/node-summary.ts';
import { stageLabel, createVolumeRowsSelector, kubeletSummaryLine, podDisplayName, rowPodName } from '../../lib/dashboard/pipeline.ts';
import { nodeHref, podHref } from '../../lib/dashboard/routes.ts';
import { useAgentConnection } from '../../lib/dashboard/use-agent.ts';
import { AgentGate } from '../page/agent-gate.tsx';
import { ConnectionStatus } from '../shared/connection-status.tsx';
import { useLivePod } from '../hooks/use-live-pod.ts';
import { NodeCounts } from '../node/node-counts.tsx';
import { PodGone } from '../pod/pod-gone.tsx';
import { EmptyState } from '../shared/empty-state.tsx';
import { HealthBadge, VolumeStateBadge } from '../shared/status-badges.tsx';
import { OperationCountdown } from '../shared/time-text.tsx';
import { VolumePipeline } from '../volume/volume-pipeline.tsx';
import type { Snapshot } from '../../lib/api/index.ts';
import { DataTable } from '../shared/data-table.tsx';

/** How many problem rows the node embed lists. */
const EMBED_ROWS = 8;

function EmbedNodeBody({ agent, snapshot }: { agent: string; snapshot: Snapshot }) {
  const selectRows = useMemo(() => createVolumeRowsSelector(), []);
  const rows = useMemo(() => selectRows(snapshot), [selectRows, snapshot]);
  const problems = useMemo(() => rows.filter((r) => r.state !== 'ready'), [rows]);
  const summary = summarizeNode(snapshot);
  return (
    <>
      <header className="embed__header">
        <h1>
          <a href={nodeHref(agent)} target="_top">
            {agent}
          </a>
        </h1>
        <HealthBadge health={summary.health} />
        <ConnectionStatus agent={agent} compact />
      </header>
      <NodeCounts summary={summary} />
      {problems.length === 0 ? (
        <EmptyState>Every volume is ready.</EmptyState>
      ) : (
        <DataTable columns={['Pod / volume', 'State', 'Stage', 'Next']} caption="Volumes not ready" compact bare>
          {problems.slice(0, EMBED_ROWS).map((r) => (
            <tr key={r.id}>
              <td className="cell-wrap">
                <a href={podHref(agent, r.podUid)} target="_top">
                  {rowPodName(r)}
                </a>{' '}
                / {r.volumeName}
              </td>
              <td>
                <VolumeStateBadge state={r.state} />
              </td>
              <td>{r.blocking === null ? '—' : stageLabel(r.blocking.id, r.attachable)}</td>
              <td>{r.operation === null ? '—' : <OperationCountdown op={r.operation} />}</td>
            </tr>
          ))}
        </DataTable>
      )}
      {problems.length > EMBED_ROWS ? <p className="muted small">…and {problems.length - EMBED_ROWS} more not ready.</p> : null}
    </>
  );
}

/** The chrome-less node view for runbooks (readable at 600×400). */
export function EmbedNode({ agent }: { agent: string }) {
  return <AgentGate agent={agent}>{(snapshot) => <EmbedNodeBody agent={agent} snapshot={snapshot} />}</AgentGate>;
}

function EmbedPodBody({ agent, uid, snapshot }: { agent: string; uid: string; snapshot: Snapshot }) {
  const pod = useLivePod(snapshot, uid);
  const connection = useAgentConnection(agent);
  if (pod === null) return <PodGone agent={agent} uid={uid} />;
  return (
    <>
      <header className="embed__header">
        <h1>
          <a href={podHref(agent, uid)} target="_top">
            {podDisplayName(pod)}
          </a>
        </h1>
        <span className="muted small">
          on <Link href={nodeHref(agent)} target="_top">{agent}</Link>
        </span>
        <ConnectionStatus agent={agent} compact />
      </header>
      <p className="summary-line">
        <code>{kubeletSummaryLine(pod.rows)}</code>
      </p>
      <div className="pipelines">
        {pod.rows.map((row) => (
          <VolumePipeline key={row.id} node={agent} row={row} phase={connection.phase} synced={snapshot.statesSynced} onAction={null} compact />
        ))}
      </div>
    </>
  );
}

/** The chrome-less pod view for runbooks (readable at 600×400). */
export function EmbedPod({ agent, uid }: { agent: string; uid: string }) {
  return <AgentGate agent={agent}>{(snapshot) => <EmbedPodBody agent={agent} uid={uid} snapshot={snapshot} />}</AgentGate>;
}
