/**
 * What `kubectl volumescope` prints, from one snapshot and a time. Pure. Every judgement comes from
 * the dashboard's view code (lib/dashboard: the pipeline rows and first blocking stage, the
 * kubelet-style summary line, the Markdown summary, the node summary and health, the retry
 * countdown), so the terminal, the dashboard and the Headlamp plugin say the same thing; this
 * module only lays it out for a terminal and composes the JSON/YAML reports of the contract's
 * shapes (lib/api).
 */
import { z } from 'zod';
import {
  ActualVolumeSchema,
  AgentSummarySchema,
  DesiredPodSchema,
  OperationHistorySchema,
  OperationSchema,
  ReconstructionSchema,
  summarizeSnapshot,
  type Operation,
  type Snapshot,
} from '../../lib/api/index.ts';
import { OrphanPodSchema, PlannedOperationSchema } from '../../lib/api/observe.ts';
import { kubeletOperations } from '../../lib/dashboard/kubelet-evidence.ts';
import { nodeCountsLine, podMarkdownSummary, nodeMarkdownSummary, retryText, rowErrorText, rowStageText } from '../../lib/dashboard/markdown-summary.ts';
import { summarizeNode, type NodeSummary } from '../../lib/dashboard/node-summary.ts';
import { sortOrphans, sortPlan, orphanVerdictLabel } from '../../lib/dashboard/observe-view.ts';
import { deriveVolumeRows, kubeletSummaryLine, podDisplayName, rowPodName, stageLabel, type PipelineStage, type PodView, type VolumeRow } from '../../lib/dashboard/pipeline.ts';
import { reconstructionNote } from '../../lib/dashboard/reconstruction-view.ts';
import { formatUtc, operationTiming } from '../../lib/dashboard/time-format.ts';

// STYLE

/** ANSI colours, or none (not a TTY, `NO_COLOR`, `--no-color`). */
export interface Style {
  readonly red: (text: string) => string;
  readonly green: (text: string) => string;
  readonly yellow: (text: string) => string;
  readonly bold: (text: string) => string;
  readonly dim: (text: string) => string;
}

const ansi = (open: number, close: number) => (text: string) => `\u001b[${open}m${text}\u001b[${close}m`;
export const COLOR_STYLE: Style = { red: ansi(31, 39), green: ansi(32, 39), yellow: ansi(33, 39), bold: ansi(1, 22), dim: ansi(2, 22) };
const same = (text: string): string => text;
export const PLAIN_STYLE: Style = { red: same, green: same, yellow: same, bold: same, dim: same };

// POD

/** The marks of a stage: done, skipped, uncertain, missing; the blocking one is bracketed. */
const STAGE_MARK: Record<PipelineStage['status'], string> = { done: '✓', skipped: '–', uncertain: '?', missing: '✗' };

function stateText(row: VolumeRow, style: Style): string {
  switch (row.state) {
    case 'ready':
      return style.green(row.state);
    case 'backoff':
      return style.red(row.state);
    default:
      return style.yellow(row.state);
  }
}

function pipelineLine(row: VolumeRow, style: Style): string {
  return row.stages
    .map((stage) => {
      const text = `${STAGE_MARK[stage.status]} ${stageLabel(stage.id, row.attachable)}`;
      if (stage === row.blocking) return style.bold(`[${text}]`);
      return stage.status === 'done' ? text : style.dim(text);
    })
    .join(' → ');
}

/** The lines of one volume: heading, pipeline, blocking stage's detail, error verbatim, retry. */
function volumeLines(row: VolumeRow, now: number, style: Style): string[] {
  const lines = [`${style.bold(row.volumeName)} (${row.pluginName}) ${stateText(row, style)}: ${rowStageText(row)}`, `  ${pipelineLine(row, style)}`];
  const detail = row.blocking?.detail ?? null;
  if (detail !== null) lines.push(`  ${stageLabel(row.blocking?.id ?? 'desired', row.attachable)}: ${detail}`);
  const op = row.operation;
  if (op !== null) {
    const failures = op.failures > 0 ? `, failures ×${op.failures}` : '';
    lines.push(`  operation: ${op.operationName} ${op.state}${failures}`);
    if (op.lastError !== null) lines.push(`  error: ${style.red(rowErrorText(row))}`);
    lines.push(`  next retry: ${retryText(row, now)}`);
  }
  return lines;
}

/** The pod as text: heading, the kubelet-style summary line, then each volume's pipeline. */
export function podText(node: string, pod: PodView, snapshot: Pick<Snapshot, 'seq'>, now: number, style: Style): string {
  const gone = pod.desired ? '' : style.yellow(' — not in the desired world (the pod is gone; its volumes are being unmounted)');
  const lines = [`Pod ${style.bold(podDisplayName(pod))} (uid ${pod.uid}) on node ${style.bold(node)}${gone}`, style.dim(`${formatUtc(now)}, agent seq ${snapshot.seq}`), kubeletSummaryLine(pod.rows), ''];
  if (pod.rows.length === 0) lines.push('No volumes.');
  for (const row of pod.rows) lines.push(...volumeLines(row, now, style), '');
  if (pod.errors.length > 0) {
    lines.push('Pod errors:');
    for (const e of pod.errors) lines.push(`  ${style.red(e)}`);
    lines.push('');
  }
  return `${lines.join('\n').trimEnd()}\n`;
}

/** `-o markdown`: the dashboard's "Copy as Markdown" of the pod. */
export function podMarkdown(node: string, pod: PodView, snapshot: Snapshot, now: number, dashboardUrl: string | null): string {
  return podMarkdownSummary({ node, pod, snapshot, now, baseUrl: dashboardUrl });
}

/** A pod is blocked while one of its volumes is not ready (exit code 1). */
export function podBlocked(pod: PodView): boolean {
  return pod.rows.some((r) => r.state !== 'ready');
}

/** The per-volume verdicts of `-o json|yaml`, derived by the pipeline code. */
export const VolumeVerdictSchema = z.object({
  volumeName: z.string(),
  uniqueVolumeName: z.string(),
  pluginName: z.string(),
  state: z.enum(['ready', 'uncertain', 'backoff', 'running', 'waiting', 'unmounting']),
  /** The first stage that is not done or skipped (`desired`, `reported-in-use`, `attached`, …); `null` when ready. */
  blockingStage: z.string().nullable(),
  blockingStatus: z.enum(['done', 'skipped', 'uncertain', 'missing']).nullable(),
  /** The operation's last error verbatim; `null` when none. */
  lastError: z.string().nullable(),
  retryAt: z.number().nullable(),
});

/**
 * `kubectl volumescope pod -o json|yaml`: the pod's part of the agent's snapshot in the
 * contract's own schemas (lib/api: the desired pod, the actual volumes it mounts or wants, its
 * operations and their history, its populator errors) with the verdicts beside them.
 */
export const PodReportSchema = z.object({
  kind: z.literal('PodVolumes'),
  node: z.string(),
  seq: z.number(),
  uid: z.string(),
  namespace: z.string().nullable(),
  name: z.string(),
  desired: DesiredPodSchema.nullable(),
  actual: z.array(ActualVolumeSchema),
  operations: z.array(OperationSchema),
  operationHistory: z.array(OperationHistorySchema),
  podErrors: z.array(z.string()),
  summaryLine: z.string(),
  volumes: z.array(VolumeVerdictSchema),
});
export type PodReport = z.infer<typeof PodReportSchema>;

export function podReport(node: string, pod: PodView, snapshot: Snapshot): PodReport {
  const volumes = new Set(pod.rows.map((r) => r.uniqueVolumeName));
  return {
    kind: 'PodVolumes',
    node,
    seq: snapshot.seq,
    uid: pod.uid,
    namespace: pod.namespace,
    name: pod.name,
    desired: snapshot.desired.pods.find((p) => p.uid === pod.uid) ?? null,
    actual: snapshot.actual.volumes.filter((v) => volumes.has(v.uniqueVolumeName)),
    operations: snapshot.operations.filter((op) => volumes.has(op.volume) && (op.podUid === null || op.podUid === pod.uid)),
    operationHistory: snapshot.operationHistory.filter((h) => volumes.has(h.volume) && (h.podUid === null || h.podUid === pod.uid)),
    podErrors: [...pod.errors],
    summaryLine: kubeletSummaryLine(pod.rows),
    volumes: pod.rows.map((r) => ({
      volumeName: r.volumeName,
      uniqueVolumeName: r.uniqueVolumeName,
      pluginName: r.pluginName,
      state: r.state,
      blockingStage: r.blocking?.id ?? null,
      blockingStatus: r.blocking?.status ?? null,
      lastError: r.operation?.lastError ?? null,
      retryAt: r.operation?.retryAt ?? null,
    })),
  };
}

// NODE

/** The pending operations of a node: the agent's own, and in observe mode the kubelet's in backoff. */
function pendingOperations(snapshot: Snapshot): readonly Operation[] {
  return [...snapshot.operations, ...kubeletOperations(snapshot.observe)];
}

function operationLine(op: Operation, rows: readonly VolumeRow[], now: number, style: Style): string[] {
  const row = rows.find((r) => r.uniqueVolumeName === op.volume && (op.podUid === null || r.podUid === op.podUid));
  const subject = row === undefined ? op.volume : `${rowPodName(row)} / ${row.volumeName}`;
  const timing = operationTiming(op, now);
  const when = timing.kind === 'retry-in' && op.retryAt !== null ? `${timing.text} (${formatUtc(op.retryAt)})` : timing.text;
  const failures = op.failures > 0 ? ` failures ×${op.failures}` : '';
  const lines = [`  ${op.operationName} ${subject}: ${op.state === 'backoff' ? style.red(op.state) : style.yellow(op.state)}${failures}, ${when}`];
  if (op.lastError !== null) lines.push(`    error: ${op.lastError}`);
  return lines;
}

/** The node as text: health, counts, pending operations with backoff, reconstruction, orphans (observe). */
export function nodeText(snapshot: Snapshot, now: number, style: Style): string {
  const s = summarizeNode(snapshot);
  const rows = deriveVolumeRows(snapshot);
  const health = s.health === 'healthy' ? style.green(s.health) : s.health === 'degraded' ? style.red(s.health) : style.yellow(s.health);
  const lines = [
    `Node ${style.bold(s.nodeName)}: ${health}${s.reasons.length > 0 ? ` (${s.reasons.join(', ')})` : ''}`,
    style.dim(`${formatUtc(now)}, agent ${s.agentVersion}, mode ${s.mode}, seq ${s.seq}`),
    nodeCountsLine(s),
    '',
  ];
  const ops = pendingOperations(snapshot);
  lines.push(ops.length === 0 ? 'Pending operations: none' : `Pending operations (${ops.length}):`);
  for (const op of ops) lines.push(...operationLine(op, rows, now, style));
  lines.push('', ...reconstructionLines(s, snapshot));
  if (snapshot.observe !== undefined) lines.push('', ...observeLines(snapshot));
  return `${lines.join('\n').trimEnd()}\n`;
}

function reconstructionLines(s: NodeSummary, snapshot: Snapshot): string[] {
  const r = s.reconstruction;
  const outcomes = Object.entries(r.outcomes)
    .filter(([, n]) => n > 0)
    .map(([outcome, n]) => `${outcome} ${n}`);
  const when = r.finishedAt === null ? '' : ` at ${formatUtc(r.finishedAt)}`;
  const lines = [`Reconstruction: ${r.state}${when}${outcomes.length === 0 ? ', no volume directories found' : `: ${outcomes.join(', ')}`}`];
  for (const v of snapshot.reconstruction.volumes) {
    if (v.outcome !== 'failed' && reconstructionNote(v) === null) continue;
    lines.push(`  ${v.podUid}/${v.volumeName} (${v.pluginName}): ${v.outcome}${v.error === null ? '' : `: ${v.error}`}`);
    const note = reconstructionNote(v);
    if (note !== null) lines.push(`    ${note.label}: ${note.detail}`);
  }
  return lines;
}

function observeLines(snapshot: Snapshot): string[] {
  const observe = snapshot.observe;
  if (observe === undefined) return [];
  const lines = [`Outstanding kubelet work (observe mode): ${observe.plan.length}`];
  for (const p of sortPlan(observe.plan)) {
    const backoff = p.kubeletBackoff === null ? '' : `, kubelet backoff until ${formatUtc(p.kubeletBackoff.retryAt)}`;
    lines.push(`  ${p.operation} ${p.pod ?? p.podUid ?? ''}${p.outerVolumeName === null ? '' : ` / ${p.outerVolumeName}`}: ${p.reason}${backoff}`);
  }
  const orphans = sortOrphans(observe.orphans);
  lines.push(`Orphaned pod directories: ${orphans.length}`);
  for (const o of orphans) lines.push(`  ${o.podUid} ${orphanVerdictLabel(o.verdict).label}: ${o.explanation} (${o.path})`);
  return lines;
}

/** `-o markdown` of a node: the dashboard's node summary. */
export function nodeMarkdown(snapshot: Snapshot, now: number, dashboardUrl: string | null): string {
  const summary = summarizeNode(snapshot);
  return nodeMarkdownSummary({ node: summary.nodeName, summary, rows: deriveVolumeRows(snapshot), snapshot, now, baseUrl: dashboardUrl });
}

/** A node is blocked unless it is healthy (exit code 1). */
export function nodeBlocked(snapshot: Snapshot): boolean {
  return summarizeNode(snapshot).health !== 'healthy';
}

/**
 * `kubectl volumescope node -o json|yaml`: the agent's summary (lib/api `AgentSummary`, the
 * `GET /api/v1/summary` shape), the pending operations, reconstruction, and in observe mode the
 * kubelet's outstanding work and the orphaned pod directories.
 */
export const NodeReportSchema = z.object({
  kind: z.literal('NodeVolumes'),
  summary: AgentSummarySchema,
  operations: z.array(OperationSchema),
  reconstruction: ReconstructionSchema,
  observe: z.object({ plan: z.array(PlannedOperationSchema), orphans: z.array(OrphanPodSchema) }).nullable(),
});
export type NodeReport = z.infer<typeof NodeReportSchema>;

export function nodeReport(snapshot: Snapshot): NodeReport {
  return {
    kind: 'NodeVolumes',
    summary: summarizeSnapshot(snapshot),
    operations: [...pendingOperations(snapshot)],
    reconstruction: snapshot.reconstruction,
    observe: snapshot.observe === undefined ? null : { plan: snapshot.observe.plan, orphans: snapshot.observe.orphans },
  };
}
