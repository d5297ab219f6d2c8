/**
 * The Headlamp plugin's sections as plain React (components/headlamp/plugin wraps them in Headlamp's
 * SectionBox and feeds them the snapshot): a pod's volumes with their mount pipeline, first
 * blocking stage, error verbatim and next retry; a node's counts. Every judgement is the
 * dashboard's (lib/dashboard: pipeline rows, kubelet-style summary line, node summary, countdown
 * text), so Headlamp, the dashboard and `kubectl volumescope` agree. Links go to the VolumeScope
 * dashboard, where the actions are. No Node built-ins (browser code).
 */
import type { Snapshot } from '../../lib/api/index.ts';
import { nodeCountsLine, retryText, rowErrorText, rowStageText } from '../../lib/dashboard/markdown-summary.ts';
import { summarizeNode } from '../../lib/dashboard/node-summary.ts';
import { deriveVolumeRows, findPod, kubeletSummaryLine, stageLabel, type VolumeRow } from '../../lib/dashboard/pipeline.ts';
import { publicLink } from '../../lib/dashboard/public-url.ts';
import { nodeHref, podHref } from '../../lib/dashboard/routes.ts';

const MARK = { done: '✓', skipped: '–', uncertain: '?', missing: '✗' } as const;

function Pipeline({ row }: { row: VolumeRow }) {
  return (
    <ol aria-label={`mount pipeline of ${row.volumeName}`} style={{ display: 'flex', flexWrap: 'wrap', gap: '0.5em', listStyle: 'none', margin: 0, padding: 0 }}>
      {row.stages.map((stage) => (
        <li key={stage.id} aria-current={stage === row.blocking ? 'step' : undefined} style={stage === row.blocking ? { fontWeight: 'bold' } : undefined}>
          {MARK[stage.status]} {stageLabel(stage.id, row.attachable)}
          {stage === row.blocking ? ' (blocking)' : ''}
        </li>
      ))}
    </ol>
  );
}

function DashboardLink({ base, path, children }: { base: string | null; path: string; children: string }) {
  if (base === null) return null;
  return (
    <a href={publicLink(base, path)} target="_blank" rel="noreferrer">
      {children}
    </a>
  );
}

export interface PodVolumesProps {
  readonly snapshot: Snapshot;
  /** The pod's UID (Headlamp's `resource.metadata.uid`). */
  readonly podUid: string;
  readonly now: number;
  /** The dashboard's public URL for the links to its actions; `null` for no links. */
  readonly dashboardUrl: string | null;
}

/** The "Volumes" section of a pod: the kubelet-style line, then one row per volume. */
export function PodVolumes({ snapshot, podUid, now, dashboardUrl }: PodVolumesProps) {
  const pod = findPod(snapshot, podUid, deriveVolumeRows(snapshot));
  const node = snapshot.nodeName;
  if (pod === null) return <p>The VolumeScope agent of node {node} does not know this pod (not in its desired world, no mounts, operations or errors).</p>;
  return (
    <div>
      <p>
        <code>{kubeletSummaryLine(pod.rows)}</code>
        {pod.desired ? '' : ' — not in the desired world: its volumes are being unmounted'}
      </p>
      <table>
        <thead>
          <tr>
            <th scope="col">Volume</th>
            <th scope="col">State</th>
            <th scope="col">Pipeline</th>
            <th scope="col">Error</th>
            <th scope="col">Next retry</th>
          </tr>
        </thead>
        <tbody>
          {pod.rows.map((row) => (
            <tr key={row.id}>
              <th scope="row">
                {row.volumeName}
                <br />
                <small>{row.pluginName}</small>
              </th>
              <td>
                {row.state}
                <br />
                <small>{rowStageText(row)}</small>
              </td>
              <td>
                <Pipeline row={row} />
              </td>
              <td>{rowErrorText(row)}</td>
              <td>{retryText(row, now)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {pod.errors.length > 0 ? (
        <ul aria-label="pod errors">
          {pod.errors.map((e) => (
            <li key={e}>{e}</li>
          ))}
        </ul>
      ) : null}
      <p>
        <DashboardLink base={dashboardUrl} path={podHref(node, podUid)}>
          Open in VolumeScope (retry, unmount, history)
        </DashboardLink>
      </p>
    </div>
  );
}

export interface NodeCountsProps {
  readonly snapshot: Snapshot;
  readonly dashboardUrl: string | null;
}

/** The node page's section: health and the counts, with a link to the node in VolumeScope. */
export function NodeCounts({ snapshot, dashboardUrl }: NodeCountsProps) {
  const s = summarizeNode(snapshot);
  return (
    <div>
      <p>
        <strong>{s.health}</strong>
        {s.reasons.length > 0 ? ` (${s.reasons.join(', ')})` : ''} · mode {s.mode} · agent {s.agentVersion}
      </p>
      <p>{nodeCountsLine(s)}</p>
      <p>
        <DashboardLink base={dashboardUrl} path={nodeHref(s.nodeName)}>
          Open node in VolumeScope
        </DashboardLink>
      </p>
    </div>
  );
}
