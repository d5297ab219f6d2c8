'use client';

import Link from 'next/link';
import { useMemo, useState, type ReactNode } from 'react';
import type { OperationHistory, Snapshot } from '../../lib/api/index.ts';
import { failingFirst, healthySummary } from '../../lib/dashboard/embed-view.ts';
import { historyByOperationKey } from '../../lib/dashboard/incident-history.ts';
import { nodeMarkdownSummary, podMarkdownSummary } from '../../lib/dashboard/markdown-summary.ts';
import { summarizeNode } from '../../lib/dashboard/node-summary.ts';
import { stageLabel, createVolumeRowsSelector, kubeletSummaryLine, podDisplayName, rowPodName, type VolumeRow } from '../../lib/dashboard/pipeline.ts';
import type { ConnectionPhase } from '../../lib/dashboard/queries.ts';
import { nodeHref, podHref } from '../../lib/dashboard/routes.ts';
import { useAgentConnection } from '../../lib/dashboard/use-agent.ts';
import { AgentGate } from '../page/agent-gate.tsx';
import { usePublicBaseUrl } from '../page/public-url.tsx';
import { ConnectionStatus } from '../shared/connection-status.tsx';
import { CopyButton } from '../shared/copy-button.tsx';
import { useLivePod } from '../hooks/use-live-pod.ts';
import { NodeCounts } from '../node/node-counts.tsx';
import { PodGone } from '../pod/pod-gone.tsx';
import { PodStatusText } from '../pod/pod-status.tsx';
import { podStatusOf } from '../../lib/dashboard/pod-status-view.ts';
import { EmptyState } from '../shared/empty-state.tsx';
import { ErrorCauseText } from '../shared/error-cause.tsx';
import { HealthBadge, VolumeStateBadge } from '../shared/status-badges.tsx';
import { OperationCountdown } from '../shared/time-text.tsx';
import { VolumePipeline } from '../volume/volume-pipeline.tsx';
import { DataTable } from '../shared/data-table.tsx';

/** How many failing rows the node embed lists. */
const EMBED_ROWS = 8;
/** How many healthy rows the node embed's collapsed list shows when opened. */
const EMBED_HEALTHY_ROWS = 50;

/**
 * The healthy rows, collapsed: a closed `<details>` whose content is rendered only once opened
 * (a node's thousands of ready volumes cost nothing while nobody looks).
 */
function Collapsed({ count, testId, children }: { count: number; testId: string; children: () => ReactNode }) {
  const [open, setOpen] = useState(false);
  if (count === 0) return null;
  return (
    <details
      className="embed__healthy"
      data-testid={testId}
      onToggle={(e) => {
        setOpen(e.currentTarget.open);
      }}
    >
      <summary>{healthySummary(count)}</summary>
      {open ? children() : null}
    </details>
  );
}

/** The node embed's volumes: the failing ones first with their error's cause, the healthy ones collapsed. */
export function EmbedNodeVolumes({ agent, rows }: { agent: string; rows: readonly VolumeRow[] }) {
  const { failing, healthy } = useMemo(() => failingFirst(rows), [rows]);
  return (
    <>
      {failing.length === 0 ? (
        <EmptyState>Every volume is ready.</EmptyState>
      ) : (
        <div className="embed__failing">
          <DataTable columns={['Pod / volume', 'State', 'Stage / error', 'Next']} caption="Volumes not ready" compact bare>
            {failing.slice(0, EMBED_ROWS).map((r) => (
              <tr key={r.id} data-testid="embed-failing-row">
                <td className="cell-wrap">
                  <a href={podHref(agent, r.podUid)} target="_top">
                    {rowPodName(r)}
                  </a>{' '}
                  / {r.volumeName}
                </td>
                <td>
                  <VolumeStateBadge state={r.state} cause={r.uncertainCause} />
                </td>
                <td className="cell-error">
                  {r.blocking === null ? '—' : stageLabel(r.blocking.id, r.attachable)}
                  {r.operation !== null && r.operation.lastError !== null ? (
                    <span className="embed__error">
                      <ErrorCauseText message={r.operation.lastError} />
                    </span>
                  ) : null}
                </td>
                <td>{r.operation === null ? '—' : <OperationCountdown op={r.operation} />}</td>
              </tr>
            ))}
          </DataTable>
        </div>
      )}
      {failing.length > EMBED_ROWS ? <p className="muted small">…and {failing.length - EMBED_ROWS} more not ready.</p> : null}
      <Collapsed count={healthy.length} testId="embed-healthy">
        {() => (
          <ul className="plain-list small">
            {healthy.slice(0, EMBED_HEALTHY_ROWS).map((r) => (
              <li key={r.id} className="break">
                <a href={podHref(agent, r.podUid)} target="_top">
                  {rowPodName(r)}
                </a>{' '}
                / {r.volumeName}
              </li>
            ))}
            {healthy.length > EMBED_HEALTHY_ROWS ? (
              <li>
                …and {healthy.length - EMBED_HEALTHY_ROWS} more on{' '}
                <a href={nodeHref(agent)} target="_top">
                  the node page
                </a>
              </li>
            ) : null}
          </ul>
        )}
      </Collapsed>
    </>
  );
}

function EmbedNodeBody({ agent, snapshot }: { agent: string; snapshot: Snapshot }) {
  const selectRows = useMemo(() => createVolumeRowsSelector(), []);
  const rows = useMemo(() => selectRows(snapshot), [selectRows, snapshot]);
  const summary = summarizeNode(snapshot);
  const publicBaseUrl = usePublicBaseUrl();
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
        <CopyButton label="Copy as Markdown" getText={() => nodeMarkdownSummary({ node: agent, summary, rows, snapshot, now: Date.now(), baseUrl: publicBaseUrl() })} />
      </header>
      <NodeCounts summary={summary} />
      <EmbedNodeVolumes agent={agent} rows={rows} />
    </>
  );
}

/** The chrome-less node view for runbooks (readable at 600×400). */
export function EmbedNode({ agent }: { agent: string }) {
  return <AgentGate agent={agent}>{(snapshot) => <EmbedNodeBody agent={agent} snapshot={snapshot} />}</AgentGate>;
}

export interface EmbedPodVolumesProps {
  readonly agent: string;
  readonly rows: readonly VolumeRow[];
  readonly phase: ConnectionPhase;
  readonly synced: boolean;
  /** The operations' histories by `operationKey`: first failure, stuck for, attempts. */
  readonly history: ReadonlyMap<string, OperationHistory>;
}

/** The pod embed's volumes: failing pipelines first (error and history in view), the healthy ones collapsed. */
export function EmbedPodVolumes({ agent, rows, phase, synced, history }: EmbedPodVolumesProps) {
  const { failing, healthy } = useMemo(() => failingFirst(rows), [rows]);
  const card = (row: VolumeRow) => <VolumePipeline key={row.id} node={agent} row={row} phase={phase} synced={synced} onAction={null} compact history={history} />;
  return (
    <>
      {failing.length > 0 ? <div className="pipelines embed__failing">{failing.map(card)}</div> : null}
      {rows.length === 0 ? <EmptyState>The pod has no volumes that need mounting.</EmptyState> : null}
      <Collapsed count={healthy.length} testId="embed-healthy">
        {() => <div className="pipelines">{healthy.map(card)}</div>}
      </Collapsed>
    </>
  );
}

function EmbedPodBody({ agent, uid, snapshot }: { agent: string; uid: string; snapshot: Snapshot }) {
  const pod = useLivePod(snapshot, uid);
  const connection = useAgentConnection(agent);
  const history = useMemo(() => historyByOperationKey(snapshot.operationHistory), [snapshot.operationHistory]);
  const publicBaseUrl = usePublicBaseUrl();
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
        <CopyButton label="Copy as Markdown" getText={() => podMarkdownSummary({ node: agent, pod, snapshot, now: Date.now(), baseUrl: publicBaseUrl() })} />
      </header>
      <p className="summary-line">
        <code>{kubeletSummaryLine(pod.rows)}</code>{' '}
        <span className="muted small">
          <PodStatusText status={podStatusOf(snapshot.desired.pods, uid)} />
        </span>
      </p>
      <EmbedPodVolumes agent={agent} rows={pod.rows} phase={connection.phase} synced={snapshot.statesSynced} history={history} />
    </>
  );
}

/** The chrome-less pod view for runbooks (readable at 600×400). */
export function EmbedPod({ agent, uid }: { agent: string; uid: string }) {
  return <AgentGate agent={agent}>{(snapshot) => <EmbedPodBody agent={agent} uid={uid} snapshot={snapshot} />}</AgentGate>;
}
