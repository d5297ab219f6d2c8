'use client';

import Link from 'next/link';
import { useMemo } from 'react';
import type { Snapshot } from '../../lib/api/index.ts';
import { historyByOperationKey } from '../../lib/dashboard/incident-history.ts';
import { podMarkdownSummary } from '../../lib/dashboard/markdown-summary.ts';
import { kubeletSummaryLine, podDisplayName } from '../../lib/dashboard/pipeline.ts';
import { embedHref, nodeHref } from '../../lib/dashboard/routes.ts';
import { podCommands } from '../../lib/dashboard/kube-commands.ts';
import { useAgentConnection } from '../../lib/dashboard/use-agent.ts';
import { ActionDialog } from '../dialogs/action-dialog.tsx';
import { usePendingAction } from '../hooks/use-pending-action.ts';
import { AgentGate } from '../page/agent-gate.tsx';
import { ConnectionStatus } from '../shared/connection-status.tsx';
import { CopyButton } from '../shared/copy-button.tsx';
import { useLivePod } from '../hooks/use-live-pod.ts';
import { usePodNames } from '../hooks/use-pod-names.ts';
import { EventsTable } from '../node/events-table.tsx';
import { OperationHistoryTable } from '../node/operation-history-table.tsx';
import { ReconstructionTable } from '../node/reconstruction-table.tsx';
import { EmptyState } from '../shared/empty-state.tsx';
import { Panel } from '../shared/panel.tsx';
import { TimelinePanel } from '../shared/timeline-panel.tsx';
import { PodGone } from './pod-gone.tsx';
import { PodStatusText } from './pod-status.tsx';
import { useLatest } from '../hooks/use-latest.ts';
import type { RowCommandsSnapshot } from '../../lib/dashboard/row-commands.ts';
import { podStatusOf } from '../../lib/dashboard/pod-status-view.ts';
import { usePublicBaseUrl } from '../page/public-url.tsx';
import { VolumePipeline } from '../volume/volume-pipeline.tsx';
import { MountHealthTable } from '../health/mount-health-table.tsx';
import { podMountHealth } from '../../lib/dashboard/mount-health-view.ts';

function PodBody({ agent, uid, snapshot }: { agent: string; uid: string; snapshot: Snapshot }) {
  const connection = useAgentConnection(agent);
  const { pending, open: onAction, close: closeDialog } = usePendingAction();
  const pod = useLivePod(snapshot, uid);
  const podNames = usePodNames(snapshot);
  const publicBaseUrl = usePublicBaseUrl();
  const commandsSnapshot = useLatest<RowCommandsSnapshot>(snapshot);
  // status.phase and the containers' states as the pod source has them; nothing without a status (a manifest): nothing is invented.
  const status = useMemo(() => podStatusOf(snapshot.desired.pods, uid), [snapshot.desired.pods, uid]);
  const events = useMemo(() => snapshot.recentEvents.filter((e) => e.podUid === uid), [snapshot.recentEvents, uid]);
  const mountHealth = useMemo(() => podMountHealth(snapshot, uid), [snapshot, uid]);
  const volumes = useMemo(() => new Set(pod?.rows.map((r) => r.uniqueVolumeName) ?? []), [pod]);
  // The pod's own operations, and the volume-wide ones (attach, device mount) of its volumes.
  const history = useMemo(
    () => snapshot.operationHistory.filter((h) => h.podUid === uid || (h.podUid === null && volumes.has(h.volume))),
    [snapshot.operationHistory, uid, volumes],
  );
  const historyByKey = useMemo(() => historyByOperationKey(history), [history]);
  const timelineSubject = useMemo(() => ({ podUid: uid }), [uid]);
  const reconstruction = useMemo(
    () => ({ ...snapshot.reconstruction, volumes: snapshot.reconstruction.volumes.filter((v) => v.podUid === uid) }),
    [snapshot.reconstruction, uid],
  );
  // The dialog stays mounted (same tree position) when the pod disappears, so the result of an
  // action that made it disappear (unmounting an orphan's last volume) is still shown.
  const dialog = (
    <ActionDialog agent={agent} pending={pending} onClose={closeDialog} />
  );
  const body =
    pod === null ? (
      <PodGone agent={agent} uid={uid} podName={podNames.get(uid) ?? null} />
    ) : (
      <>
        <header className="page-header">
          <div>
            <p className="breadcrumb">
              <Link href={nodeHref(agent)}>{agent}</Link> / pod
            </p>
            <h1>{podDisplayName(pod)}</h1>
            <p className="muted small">
              uid <code>{pod.uid}</code>
              {status?.phase === undefined && status?.containers === undefined ? null : (
                <>
                  {' · '}
                  <PodStatusText status={status} />
                </>
              )}
              {pod.desired ? '' : ' · not in the desired world (its volumes are being unmounted)'}
            </p>
          </div>
          <ConnectionStatus agent={agent} />
          <div className="toolbar">
            <CopyButton label="Copy link" getText={() => window.location.href} />
            <CopyButton
              label="Copy kubectl commands"
              accessibleName={`Copy kubectl commands for pod ${podDisplayName(pod)}`}
              getText={() => podCommands({ node: agent, uid, podName: podDisplayName(pod) })}
            />
            <CopyButton
              label="Copy as Markdown"
              getText={() => podMarkdownSummary({ node: agent, pod, snapshot, now: Date.now(), baseUrl: publicBaseUrl() })}
            />
            <a className="button" href={embedHref(agent, uid)} target="_blank" rel="noreferrer">
              Embed view
            </a>
          </div>
        </header>
        <p className="summary-line">
          <span className="muted small">kubelet summary </span>
          <code data-testid="kubelet-summary">{kubeletSummaryLine(pod.rows)}</code>
        </p>
        {pod.errors.length > 0 ? (
          <div className="result result--bad" role="alert">
            <p>
              <strong>Pod errors</strong>
            </p>
            <ul>
              {pod.errors.map((e, i) => (
                <li key={i} className="error-text">
                  {e}
                </li>
              ))}
            </ul>
          </div>
        ) : null}
        <Panel id="volumes" title="Volumes" count={pod.rows.length}>
          {pod.rows.length === 0 ? <EmptyState>The pod has no volumes that need mounting.</EmptyState> : null}
          <div className="pipelines">
            {pod.rows.map((row) => (
              <VolumePipeline
                key={row.id}
                node={agent}
                row={row}
                phase={connection.phase}
                synced={snapshot.statesSynced}
                observing={snapshot.observe !== undefined}
                onAction={onAction}
                history={historyByKey}
                commandsSnapshot={commandsSnapshot}
              />
            ))}
          </div>
        </Panel>
        <Panel id="mount-health" title="Mount health" count={mountHealth.length}>
          <MountHealthTable node={agent} rows={mountHealth} podNames={podNames} empty="None of this pod's mounts has been checked yet." caption="Health checks of this pod's volume paths and of the staging paths of its volumes" />
        </Panel>
        <TimelinePanel snapshot={snapshot} subject={timelineSubject} title={`pod ${podNames.get(uid) ?? uid}`} fileName={`timeline-pod-${uid}`} />
        <Panel id="events" title="Recent events for this pod" count={events.length}>
          <EventsTable node={agent} events={events} snapshot={snapshot} podNames={podNames} />
        </Panel>
        <Panel id="operation-history" title="Operation history" count={history.length}>
          <OperationHistoryTable node={agent} history={history} podNames={podNames} />
        </Panel>
        {reconstruction.volumes.length > 0 ? (
          <Panel id="reconstruction" title="Reconstruction">
            <ReconstructionTable node={agent} reconstruction={reconstruction} podNames={podNames} />
          </Panel>
        ) : null}
      </>
    );
  return (
    <>
      {body}
      {dialog}
    </>
  );
}

/** The pod page: each volume's mount pipeline, live. */
export function PodView({ agent, uid }: { agent: string; uid: string }) {
  return <AgentGate agent={agent}>{(snapshot) => <PodBody agent={agent} uid={uid} snapshot={snapshot} />}</AgentGate>;
}
