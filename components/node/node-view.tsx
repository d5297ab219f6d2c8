'use client';

import { Suspense, memo, useDeferredValue, useMemo } from 'react';
import type { Snapshot } from '../../lib/api/index.ts';
import { describeResync, resyncAvailability } from '../../lib/dashboard/action-guards.ts';
import { nodeMarkdownSummary } from '../../lib/dashboard/markdown-summary.ts';
import { nodeSectionLinks } from '../../lib/dashboard/observe-view.ts';
import type { NodeFirstScreen } from '../../lib/dashboard/node-first-screen.ts';
import type { PodNames } from '../../lib/dashboard/pod-refs.ts';
import { RECONSTRUCTION_FIRST_MS } from '../../lib/dashboard/blind-view.ts';
import { summarizeNode } from '../../lib/dashboard/node-summary.ts';
import { historyByOperationKey } from '../../lib/dashboard/incident-history.ts';
import { createVolumeRowsSelector } from '../../lib/dashboard/pipeline.ts';
import { nodeProblems } from '../../lib/dashboard/problems.ts';
import { embedHref } from '../../lib/dashboard/routes.ts';
import type { ConnectionPhase } from '../../lib/dashboard/queries.ts';
import { useAgentConnection, useAgentSnapshot } from '../../lib/dashboard/use-agent.ts';
import { ActionButton } from '../actions/action-button.tsx';
import { ActionDialog, type PendingAction } from '../dialogs/action-dialog.tsx';
import { useAgentRestart, useBefore } from '../hooks/use-agent-restart.ts';
import { usePendingAction } from '../hooks/use-pending-action.ts';
import { usePodNames } from '../hooks/use-pod-names.ts';
import { ObservePanels } from '../observe/observe-panels.tsx';
import { AgentGate } from '../page/agent-gate.tsx';
import { usePublicBaseUrl } from '../page/public-url.tsx';
import { ConnectionStatus } from '../shared/connection-status.tsx';
import { CopyButton } from '../shared/copy-button.tsx';
import { Panel } from '../shared/panel.tsx';
import { StaleFrame, StaleProvider } from '../shared/stale-frame.tsx';
import { AuditTable } from './audit-table.tsx';
import { CsiPanel } from './csi-panel.tsx';
import { DriversTable } from './drivers-table.tsx';
import { EventsTable } from './events-table.tsx';
import { JumpToProblems } from './jump-to-problems.tsx';
import { NodeConditions } from './node-conditions.tsx';
import { NodeCounts } from './node-counts.tsx';
import { NodeFacts } from './node-facts.tsx';
import { OperationHistoryTable } from './operation-history-table.tsx';
import { OperationsTable } from './operations-table.tsx';
import { ReconstructionPanel } from './reconstruction-panel.tsx';
import { RestartBanner } from './restart-banner.tsx';
import { SourceErrorsList } from './source-errors-list.tsx';
import { VolumeTable } from './volume-table.tsx';
import { MountHealthTable } from '../health/mount-health-table.tsx';
import { unhealthyMounts } from '../../lib/dashboard/mount-health-view.ts';
import { useLatest } from '../hooks/use-latest.ts';
import type { RowCommandsSnapshot } from '../../lib/dashboard/row-commands.ts';

/** Operation history entries the node page renders before "Show all" (the most urgent first). */
const HISTORY_LIMIT = 50;

interface LowPriorityPanelsProps {
  readonly agent: string;
  readonly snapshot: Snapshot;
  readonly phase: ConnectionPhase;
  readonly onAction: (action: PendingAction) => void;
  /** The reconstruction panel is at the top of the page (just after a restart), not here. */
  readonly reconstructionFirst: boolean;
  /** The latest snapshot, read when a row's commands are copied. */
  readonly commandsSnapshot: () => RowCommandsSnapshot;
}

/**
 * The panels below the pods table. NodeBody passes them a deferred snapshot: on a stream flush
 * the urgent render (counts, facts, the pods table) skips them (memo, same props) and React
 * renders them afterwards in a transition, which yields to the browser between components, so
 * hundreds of operations and events never add to the flush's task.
 */
const LowPriorityPanels = memo(function LowPriorityPanels({ agent, snapshot, phase, onAction, reconstructionFirst, commandsSnapshot }: LowPriorityPanelsProps) {
  const podNames = usePodNames(snapshot);
  const history = useMemo(() => historyByOperationKey(snapshot.operationHistory), [snapshot.operationHistory]);
  const unhealthy = useMemo(() => unhealthyMounts(snapshot), [snapshot]);
  return (
    <>
      <Panel lazy id="mount-health" title="Unhealthy mounts" count={unhealthy.length}>
        <p className="small">
          {snapshot.mountHealth.length - unhealthy.length} of {snapshot.mountHealth.length} checked mounts (pod volume and staging paths) are healthy.
        </p>
        <MountHealthTable node={agent} rows={unhealthy} podNames={podNames} empty="Every checked mount answers." caption="Mounts whose last health check failed, with the pods they affect" />
      </Panel>
      <ObservePanels agent={agent} observe={snapshot.observe} commandsSnapshot={commandsSnapshot} />
      {/* Observe mode: the agent runs no operations; the kubelet's are in its plan above. */}
      {snapshot.observe === undefined ? (
        <>
          <Panel lazy id="operations" title="Pending operations" count={snapshot.operations.length}>
            <OperationsTable node={agent} operations={snapshot.operations} podNames={podNames} history={history} phase={phase} onAction={onAction} limit={500} commandsSnapshot={commandsSnapshot} />
          </Panel>
          <Panel lazy id="operation-history" title="Operation history" count={snapshot.operationHistory.length}>
            <OperationHistoryTable node={agent} history={snapshot.operationHistory} podNames={podNames} limit={HISTORY_LIMIT} />
          </Panel>
        </>
      ) : null}
      {reconstructionFirst ? null : <ReconstructionPanel agent={agent} snapshot={snapshot} />}
      <Panel lazy id="events" title="Recent events" count={snapshot.recentEvents.length}>
        <EventsTable node={agent} events={snapshot.recentEvents} snapshot={snapshot} podNames={podNames} />
      </Panel>
      <Panel lazy id="source-errors" title="Source errors" count={snapshot.sourceErrors.length}>
        <SourceErrorsList errors={snapshot.sourceErrors} />
      </Panel>
      <Panel lazy id="drivers" title="CSI drivers" count={snapshot.drivers.length}>
        <DriversTable drivers={snapshot.drivers} attach={snapshot.attachVerification} volumes={snapshot.actual.volumes} />
      </Panel>
      <Panel lazy id="csi-panel" title="CSI driver" count={snapshot.csiPanel?.length}>
        <CsiPanel panel={snapshot.csiPanel} />
      </Panel>
      <Panel lazy id="audit" title="Audit log" count={snapshot.audit.length}>
        <AuditTable audit={snapshot.audit} podNames={podNames} />
      </Panel>
    </>
  );
});

/** What the top of the node page shows: from the live snapshot, or the server's first screen. */
interface NodeTopProps extends Pick<NodeFirstScreen, 'nodeName' | 'observing' | 'summary' | 'problems' | 'nodeConditions' | 'sectionLinks' | 'sourceErrors'> {
  readonly agent: string;
  readonly reconstructionFirst: boolean;
  readonly onAction: (action: PendingAction) => void;
  /** Renders the Markdown copy of the node; `null` while the page has only its first screen. */
  readonly markdown: (() => string) | null;
}

/** The header, facts, counts and section links: the same for the live page and its first screen. */
function NodeTop({ agent, nodeName, observing, summary, problems, nodeConditions, sectionLinks, sourceErrors, reconstructionFirst, onAction, markdown }: NodeTopProps) {
  const connection = useAgentConnection(agent);
  return (
    <>
      <header className="page-header">
        <div>
          <JumpToProblems problems={problems} />
          <p className="breadcrumb">Node</p>
          <h1>{agent}</h1>
          {nodeName !== agent ? <p className="muted">Node object: {nodeName}</p> : null}
        </div>
        <ConnectionStatus agent={agent} />
        <div className="toolbar">
          <ActionButton
            label="Force resync"
            accessibleName={`Force resync of node ${agent}`}
            availability={resyncAvailability(connection.phase)}
            onClick={() => {
              onAction({ title: `Force resync of node ${agent}`, description: describeResync(agent, observing), confirmLabel: 'Resync now', request: { kind: 'resync' } });
            }}
          />
          <CopyButton label="Copy link" getText={() => window.location.href} />
          {markdown === null ? null : <CopyButton label="Copy as Markdown" getText={markdown} />}
          <a className="button" href={embedHref(agent)} target="_blank" rel="noreferrer">
            Embed view
          </a>
        </div>
      </header>
      <StaleFrame>
        <NodeFacts summary={summary} />
        <NodeConditions conditions={nodeConditions} />
        <NodeCounts summary={summary} />
      </StaleFrame>
      <nav className="toc" aria-label="Sections">
        {reconstructionFirst ? <a href="#reconstruction">Reconstruction</a> : null}
        <a href="#pods">Pods and volumes</a>
        {sectionLinks.map((l) => (
          <a key={l.href} href={l.href}>
            {l.label}
          </a>
        ))}
        {reconstructionFirst ? null : <a href="#reconstruction">Reconstruction</a>}
        <a href="#events">Recent events</a>
        <a href="#source-errors">Source errors ({sourceErrors})</a>
        <a href="#drivers">CSI drivers</a>
        <a href="#audit">Audit log</a>
      </nav>
    </>
  );
}

function NodeBody({ agent, snapshot }: { agent: string; snapshot: Snapshot }) {
  const connection = useAgentConnection(agent);
  const { pending, open: onAction, close: closeDialog } = usePendingAction();
  const selectRows = useMemo(() => createVolumeRowsSelector(), []);
  const rows = useMemo(() => selectRows(snapshot), [selectRows, snapshot]);
  const summary = summarizeNode(snapshot);
  const podNames = usePodNames(snapshot);
  const problems = useMemo(() => nodeProblems(snapshot, rows), [snapshot, rows]);
  const deferredSnapshot = useDeferredValue(snapshot);
  // Read on click by the rows' Copy commands: the rows stay memoized across deltas.
  const commandsSnapshot = useLatest<RowCommandsSnapshot>(snapshot);
  const restart = useAgentRestart(snapshot);
  const publicBaseUrl = usePublicBaseUrl();
  // For the first minutes after the agent started, what it found on disk is what matters most.
  const reconstructionFirst = useBefore(snapshot.agent.startedAt + RECONSTRUCTION_FIRST_MS);
  const markdown = (): string => nodeMarkdownSummary({ node: agent, summary, rows, snapshot, now: Date.now(), baseUrl: publicBaseUrl() });

  return (
    <>
      <RestartBanner restart={restart} />
      <NodeTop
        agent={agent}
        nodeName={snapshot.nodeName}
        observing={snapshot.observe !== undefined}
        summary={summary}
        problems={problems}
        nodeConditions={snapshot.nodeConditions}
        sectionLinks={nodeSectionLinks(snapshot)}
        sourceErrors={snapshot.sourceErrors.length}
        reconstructionFirst={reconstructionFirst}
        onAction={onAction}
        markdown={markdown}
      />
      {reconstructionFirst ? <ReconstructionPanel agent={agent} snapshot={snapshot} /> : null}
      <Panel id="pods" title="Pods and volumes">
        <Suspense fallback={<p className="empty">Loading the table…</p>}>
          <VolumeTable node={agent} rows={rows} phase={connection.phase} synced={snapshot.statesSynced} observing={snapshot.observe !== undefined} onAction={onAction} podNames={podNames} commandsSnapshot={commandsSnapshot} />
        </Suspense>
      </Panel>
      <LowPriorityPanels agent={agent} snapshot={deferredSnapshot} phase={connection.phase} onAction={onAction} reconstructionFirst={reconstructionFirst} commandsSnapshot={commandsSnapshot} />
      <ActionDialog agent={agent} pending={pending} onClose={closeDialog} />
    </>
  );
}

/**
 * The node page before the live snapshot arrived: the server's first screen (top of the page
 * and the first rows of the table), the same components as {@link NodeBody}. The panels below
 * the table come with the snapshot.
 */
function NodeFirstScreenBody({ agent, first }: { agent: string; first: NodeFirstScreen }) {
  const connection = useAgentConnection(agent);
  const { pending, open: onAction, close: closeDialog } = usePendingAction();
  const podNames = useMemo<PodNames>(() => new Map(first.podNames), [first.podNames]);
  return (
    <>
      <NodeTop
        agent={agent}
        nodeName={first.nodeName}
        observing={first.observing}
        summary={first.summary}
        problems={first.problems}
        nodeConditions={first.nodeConditions}
        sectionLinks={first.sectionLinks}
        sourceErrors={first.sourceErrors}
        reconstructionFirst={false}
        onAction={onAction}
        markdown={null}
      />
      <Panel id="pods" title="Pods and volumes">
        <Suspense fallback={<p className="empty">Loading the table…</p>}>
          <VolumeTable node={agent} rows={first.table.rows} firstScreen={first.table} phase={connection.phase} synced={first.statesSynced} observing={first.observing} onAction={onAction} podNames={podNames} />
        </Suspense>
      </Panel>
      <p className="empty" aria-busy="true" data-testid="node-first-screen">
        Loading the rest of the node…
      </p>
      <ActionDialog agent={agent} pending={pending} onClose={closeDialog} />
    </>
  );
}

/**
 * The node page: everything the agent knows about one node, live. `firstScreen` (server-rendered,
 * see node-first-screen.ts) is shown until the live snapshot is in the cache.
 */
export function NodeView({ agent, firstScreen = null }: { agent: string; firstScreen?: NodeFirstScreen | null }) {
  const { data } = useAgentSnapshot(agent);
  if (data === undefined && firstScreen !== null) {
    return (
      <StaleProvider agent={agent}>
        <NodeFirstScreenBody agent={agent} first={firstScreen} />
      </StaleProvider>
    );
  }
  return <AgentGate agent={agent}>{(snapshot) => <NodeBody agent={agent} snapshot={snapshot} />}</AgentGate>;
}
