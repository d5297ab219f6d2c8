'use client';

import Link from 'next/link';
import { useMemo } from 'react';
import type { Snapshot } from '../../lib/api/index.ts';
import { historyByOperationKey } from '../../lib/dashboard/incident-history.ts';
import { notOnNodeText } from '../../lib/dashboard/kubelet-evidence.ts';
import { sortPlan } from '../../lib/dashboard/observe-view.ts';
import { createVolumeRowsSelector, indexSnapshot, rowPodName, volumeKnown } from '../../lib/dashboard/pipeline.ts';
import { nodeHref, podHref } from '../../lib/dashboard/routes.ts';
import { attachFact, volumeSpecView } from '../../lib/dashboard/volume-spec-view.ts';
import { useAgentConnection } from '../../lib/dashboard/use-agent.ts';
import { ActionDialog } from '../dialogs/action-dialog.tsx';
import { usePendingAction } from '../hooks/use-pending-action.ts';
import { AgentGate } from '../page/agent-gate.tsx';
import { ConnectionStatus } from '../shared/connection-status.tsx';
import { CopyButton } from '../shared/copy-button.tsx';
import { usePodNames } from '../hooks/use-pod-names.ts';
import { AuditTable } from '../node/audit-table.tsx';
import { EventsTable } from '../node/events-table.tsx';
import { OperationHistoryTable } from '../node/operation-history-table.tsx';
import { OperationsTable } from '../node/operations-table.tsx';
import { ReconstructionTable } from '../node/reconstruction-table.tsx';
import { PlanRow, planColumns } from '../observe/plan-row.tsx';
import { useLatest } from '../hooks/use-latest.ts';
import type { RowCommandsSnapshot } from '../../lib/dashboard/row-commands.ts';
import { volumeStateText } from '../../lib/dashboard/volume-state-wording.ts';
import { DataTable } from '../shared/data-table.tsx';
import { EmptyState } from '../shared/empty-state.tsx';
import { Panel } from '../shared/panel.tsx';
import { TimelinePanel } from '../shared/timeline-panel.tsx';
import { VolumeStatsTable } from './volume-stats.tsx';
import { VolumePipeline } from './volume-pipeline.tsx';
import { VolumeSpecSection } from './volume-spec.tsx';
import { PodRefLink } from '../shared/pod-ref.tsx';
import { volumeCommands } from '../../lib/dashboard/kube-commands.ts';
import { volumeMountHealth } from '../../lib/dashboard/mount-health-view.ts';
import { MountHealthTable } from '../health/mount-health-table.tsx';
import { BlockersPanelBody } from '../health/blockers-panel.tsx';

function VolumeBody({ agent, volume, snapshot }: { agent: string; volume: string; snapshot: Snapshot }) {
  const connection = useAgentConnection(agent);
  const { pending, open: onAction, close: closeDialog } = usePendingAction();
  const selectRows = useMemo(() => createVolumeRowsSelector(), []);
  const allRows = useMemo(() => selectRows(snapshot), [selectRows, snapshot]);
  const rows = useMemo(() => allRows.filter((r) => r.uniqueVolumeName === volume), [allRows, volume]);
  const podNames = usePodNames(snapshot);
  const commandsSnapshot = useLatest<RowCommandsSnapshot>(snapshot);
  const actual = indexSnapshot(snapshot).actualByName.get(volume) ?? null;
  // The words of an uncertain state, by its cause (volume-state-wording.ts): found on disk, or uncertain.
  const uncertainText = (podUid: string | null): string =>
    volumeStateText('uncertain', rows.find((r) => (podUid === null || r.podUid === podUid) && r.uncertainCause !== null)?.uncertainCause ?? null);
  const spec = useMemo(() => volumeSpecView(snapshot, volume, actual), [snapshot, volume, actual]);
  const operations = useMemo(() => snapshot.operations.filter((op) => op.volume === volume), [snapshot.operations, volume]);
  const mountHealth = useMemo(() => volumeMountHealth(snapshot, volume), [snapshot, volume]);
  const planned = useMemo(() => (snapshot.observe === undefined ? null : sortPlan(snapshot.observe.plan.filter((op) => op.volume === volume))), [snapshot.observe, volume]);
  const operationHistory = useMemo(() => snapshot.operationHistory.filter((h) => h.volume === volume), [snapshot.operationHistory, volume]);
  const historyByKey = useMemo(() => historyByOperationKey(operationHistory), [operationHistory]);
  const timelineSubject = useMemo(() => ({ volume }), [volume]);
  const usage = useMemo(() => snapshot.volumeStats?.filter((s) => s.uniqueVolumeName === volume), [snapshot.volumeStats, volume]);
  const history = useMemo(() => {
    const pairs = new Set(rows.map((r) => `${r.podUid}|${r.volumeName}`));
    const names = [...new Set(rows.map((r) => r.volumeName))];
    const pods = new Set(rows.map((r) => r.podUid));
    return {
      // An event names its volume; one from an agent that predates `volume` is matched by its message.
      events: snapshot.recentEvents.filter((e) =>
        e.volume !== undefined
          ? e.volume === volume
          : e.message.includes(volume) || ((e.podUid === null || pods.has(e.podUid)) && names.some((n) => e.message.includes(`"${n}"`))),
      ),
      audit: snapshot.audit.filter((a) => a.target !== null && a.target.includes(volume)),
      reconstruction: { ...snapshot.reconstruction, volumes: snapshot.reconstruction.volumes.filter((v) => pairs.has(`${v.podUid}|${v.volumeName}`)) },
    };
  }, [rows, snapshot.recentEvents, snapshot.audit, snapshot.reconstruction, volume]);

  if (!volumeKnown(snapshot, volume)) {
    return (
      <div className="gate" role="status">
        <h1>Volume not known</h1>
        <p>
          Agent {agent} does not know the volume <code>{volume}</code> (any more).
        </p>
        <p>
          <Link href={nodeHref(agent)}>Back to node {agent}</Link>
        </p>
      </div>
    );
  }
  return (
    <>
      <header className="page-header">
        <div>
          <p className="breadcrumb">
            <Link href={nodeHref(agent)}>{agent}</Link> / volume
          </p>
          <h1 className="break">{volume}</h1>
        </div>
        <ConnectionStatus agent={agent} />
        <div className="toolbar">
          <CopyButton label="Copy link" getText={() => window.location.href} />
          <CopyButton
            label="Copy kubectl commands"
            accessibleName={`Copy kubectl commands for volume ${volume}`}
            getText={() => volumeCommands({ node: agent, uniqueVolumeName: volume, namespace: rows[0]?.namespace ?? null, spec: spec.pods[0]?.spec ?? null })}
          />
        </div>
      </header>
      <Panel id="actual" title="On the node">
        {actual === null ? (
          <EmptyState>{notOnNodeText(snapshot.observe !== undefined, rows)}</EmptyState>
        ) : (
          <dl className="facts-grid">
            <dt>plugin</dt>
            <dd>{actual.pluginName}</dd>
            <dt>attach</dt>
            <dd>
              {attachFact(actual, spec.attachable)}
              {actual.devicePath !== '' ? (
                <>
                  {' '}
                  at <code>{actual.devicePath}</code>
                </>
              ) : null}
            </dd>
            <dt>device mount</dt>
            <dd>
              {actual.deviceMountState === 'mounted' ? '✓ mounted' : actual.deviceMountState === 'uncertain' ? `? ${uncertainText(null)}` : '– not mounted'}
              {actual.deviceMountPath !== '' ? (
                <>
                  {' '}
                  at <code className="break">{actual.deviceMountPath}</code>
                </>
              ) : null}
            </dd>
            <dt>pods with it mounted</dt>
            <dd>
              {actual.pods.length === 0
                ? 'none'
                : actual.pods.map((m, i) => (
                    <span key={m.podUid}>
                      {i > 0 ? ', ' : ''}
                      <PodRefLink node={agent} uid={m.podUid} name={podNames.get(m.podUid)} /> ({m.mountState === 'uncertain' ? `? ${uncertainText(m.podUid)}` : 'mounted'}
                      {m.remountRequired ? ', remount required' : ''})
                    </span>
                  ))}
            </dd>
          </dl>
        )}
      </Panel>
      <Panel id="mount-health" title="Mount health" count={mountHealth.length}>
        <MountHealthTable node={agent} rows={mountHealth} podNames={podNames} empty="No path of this volume has been checked yet." caption="Health checks of this volume's staging path and pod paths" />
      </Panel>
      <Panel id="blockers" title="Who keeps it busy">
        <BlockersPanelBody agent={agent} volume={volume} snapshot={snapshot} />
      </Panel>
      <Panel id="usage" title="Usage" count={usage?.length}>
        <VolumeStatsTable stats={usage} podNames={podNames} />
      </Panel>
      <TimelinePanel snapshot={snapshot} subject={timelineSubject} title={`volume ${volume}`} fileName={`timeline-volume-${volume.replace(/[^A-Za-z0-9._-]+/g, '_')}`} />
      <Panel id="spec" title="Spec">
        <VolumeSpecSection node={agent} view={spec} />
      </Panel>
      <Panel id="pods" title="Pods" count={rows.length}>
        {rows.length === 0 ? <EmptyState>No pod wants or has this volume.</EmptyState> : null}
        <div className="pipelines">
          {rows.map((row) => (
            <div key={row.id}>
              <p className="small">
                Pod <Link href={podHref(agent, row.podUid)}>{rowPodName(row)}</Link>
              </p>
              <VolumePipeline node={agent} row={row} phase={connection.phase} synced={snapshot.statesSynced} onAction={onAction} history={historyByKey} commandsSnapshot={commandsSnapshot} />
            </div>
          ))}
        </div>
      </Panel>
      {planned === null ? (
        <>
          <Panel id="operations" title="Operations" count={operations.length}>
            <OperationsTable node={agent} operations={operations} podNames={podNames} history={historyByKey} phase={connection.phase} onAction={onAction} commandsSnapshot={commandsSnapshot} />
          </Panel>
          <Panel id="operation-history" title="Operation history" count={operationHistory.length}>
            <OperationHistoryTable node={agent} history={operationHistory} podNames={podNames} />
          </Panel>
        </>
      ) : (
        // Observe mode: the agent runs no operations; these are the kubelet's, as in its plan.
        <Panel id="operations" title="Kubelet’s outstanding work for this volume" count={planned.length}>
          {planned.length === 0 ? (
            <EmptyState>The kubelet has nothing outstanding for this volume.</EmptyState>
          ) : (
            <DataTable columns={planColumns(true)} caption="The kubelet’s plan for this volume, longest outstanding first">
              {planned.map((op) => (
                <PlanRow key={op.key} node={agent} op={op} commandsSnapshot={commandsSnapshot} />
              ))}
            </DataTable>
          )}
        </Panel>
      )}
      <Panel id="history" title="History">
        <h3>Events</h3>
        <EventsTable node={agent} events={history.events} snapshot={snapshot} podNames={podNames} />
        <h3>Operator actions</h3>
        <AuditTable audit={history.audit} podNames={podNames} />
        {history.reconstruction.volumes.length > 0 ? (
          <>
            <h3>Reconstruction</h3>
            <ReconstructionTable node={agent} reconstruction={history.reconstruction} podNames={podNames} />
          </>
        ) : null}
      </Panel>
      <ActionDialog agent={agent} pending={pending} onClose={closeDialog} />
    </>
  );
}

/** The volume page: one volume across its pods, its operations and its history, live. */
export function VolumeView({ agent, volume }: { agent: string; volume: string }) {
  return <AgentGate agent={agent}>{(snapshot) => <VolumeBody agent={agent} volume={volume} snapshot={snapshot} />}</AgentGate>;
}
