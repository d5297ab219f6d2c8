/**
 * "Copy as Markdown": a concise summary of a pod's volumes (or a node's problem volumes) to paste
 * into a ticket or a runbook: stage, error, next retry, node and time.
 */
import { stageLabel, kubeletSummaryLine, podDisplayName, rowPodName, type PodView, type VolumeRow } from './pipeline.ts';
import type { NodeSummary } from './node-summary.ts';
import { formatGoDuration } from '../volume/util/go-format.ts';
import { formatUtc, operationTiming } from './time-format.ts';

/** Makes text safe inside a Markdown table cell: one line, pipes escaped. */
export function markdownCell(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\|/g, '\\|').replace(/\r?\n|\r/g, ' ').trim();
}

/** The stage text of a row: `ready`, or the blocking stage and how it stands. */
export function rowStageText(row: VolumeRow): string {
  if (row.blocking === null) return 'ready';
  const label = stageLabel(row.blocking.id, row.attachable);
  if (row.blocking.status === 'uncertain') return `uncertain: ${label}`;
  if (!row.desired) return 'not desired: unmounting';
  return `waiting: ${label}`;
}

function retryText(row: VolumeRow, now: number): string {
  const op = row.operation;
  if (op === null) return '—';
  const timing = operationTiming(op, now);
  // Observe mode: the kubelet's own window, as the plan shows it.
  const window = row.kubelet === null ? '' : `, durationBeforeRetry ${formatGoDuration(row.kubelet.backoff.durationBeforeRetryMs)}`;
  if (timing.kind === 'retry-in' && op.retryAt !== null) return `${timing.text} (${formatUtc(op.retryAt)}${window})`;
  return `${timing.text}${window === '' ? '' : ` (${window.slice(2)})`}`;
}

/**
 * The error of a row: the last error verbatim; in observe mode the kubelet's, followed by the
 * event it came from and when that event was seen.
 */
export function rowErrorText(row: Pick<VolumeRow, 'operation' | 'kubelet'>): string {
  const error = row.operation?.lastError ?? null;
  if (error === null) return '—';
  const backoff = row.kubelet?.backoff;
  if (backoff === undefined) return error;
  const at = backoff.observedAt === null ? '' : ` at ${formatUtc(backoff.observedAt)}`;
  return `${error} (the kubelet’s ${backoff.reason ?? 'event'}${at})`;
}

function volumeTable(rows: readonly VolumeRow[], now: number, withPod: boolean): string[] {
  const head = withPod ? '| pod | volume | state | stage | error | next retry |' : '| volume | state | stage | error | next retry |';
  const rule = withPod ? '|---|---|---|---|---|---|' : '|---|---|---|---|---|';
  const lines = [head, rule];
  for (const row of rows) {
    const cells = [
      ...(withPod ? [rowPodName(row)] : []),
      row.volumeName,
      row.state,
      rowStageText(row),
      rowErrorText(row),
      retryText(row, now),
    ];
    lines.push(`| ${cells.map((c) => markdownCell(c)).join(' | ')} |`);
  }
  return lines;
}

/** What {@link podMarkdownSummary} needs. */
export interface PodMarkdownInput {
  /** The agent (node) name the dashboard knows the node by. */
  readonly node: string;
  readonly pod: PodView;
  /** When the summary is taken (browser clock). */
  readonly now: number;
  /** The snapshot's `seq`, so a reader can tell two summaries apart. */
  readonly seq: number;
  /** A link back to the pod page; `null` to leave it out. */
  readonly url: string | null;
}

/**
 * A pod's volumes as Markdown: a heading with pod and node, the time, the kubelet-style summary
 * line, a table (volume, state, blocking stage, last error verbatim, next retry) and the pod's
 * populator errors.
 */
export function podMarkdownSummary(input: PodMarkdownInput): string {
  const { pod, node, now } = input;
  const lines = [
    `**Pod ${podDisplayName(pod)}** (uid \`${pod.uid}\`) on node **${node}**${pod.desired ? '' : ' — not in the desired world'}`,
    `_${formatUtc(now)}, agent seq ${input.seq}_`,
    '',
    `\`${kubeletSummaryLine(pod.rows)}\``,
    '',
  ];
  if (pod.rows.length === 0) lines.push('No volumes.');
  else lines.push(...volumeTable(pod.rows, now, false));
  if (pod.errors.length > 0) {
    lines.push('', 'Pod errors:');
    for (const e of pod.errors) lines.push(`- ${markdownCell(e)}`);
  }
  if (input.url !== null) lines.push('', `[Open in VolumeScope](${input.url})`);
  return `${lines.join('\n')}\n`;
}

/** What {@link nodeMarkdownSummary} needs. */
export interface NodeMarkdownInput {
  readonly node: string;
  readonly summary: NodeSummary;
  /** All rows of the node; only those not ready are listed (at most `limit`). */
  readonly rows: readonly VolumeRow[];
  readonly now: number;
  readonly url: string | null;
  /** How many problem rows to list at most; default 20. */
  readonly limit?: number;
}

/** A node's health, counts and its volumes that are not ready, as Markdown. */
export function nodeMarkdownSummary(input: NodeMarkdownInput): string {
  const { summary: s, now } = input;
  const limit = input.limit ?? 20;
  const problems = input.rows.filter((r) => r.state !== 'ready');
  const lines = [
    `**Node ${input.node}**: ${s.health}${s.reasons.length > 0 ? ` (${s.reasons.join(', ')})` : ''}`,
    `_${formatUtc(now)}, agent seq ${s.seq}_`,
    '',
    `pods ${s.pods} · desired volumes ${s.desiredVolumes} · mounted ${s.mounted} · uncertain ${s.uncertain} · pending ${s.pending} · in backoff ${s.inBackoff} · pod errors ${s.podErrors} · source errors ${s.sourceErrors}`,
    '',
  ];
  if (problems.length === 0) lines.push('Every volume is ready.');
  else {
    lines.push(...volumeTable(problems.slice(0, limit), now, true));
    if (problems.length > limit) lines.push('', `…and ${problems.length - limit} more not ready.`);
  }
  if (input.url !== null) lines.push('', `[Open in VolumeScope](${input.url})`);
  return `${lines.join('\n')}\n`;
}
