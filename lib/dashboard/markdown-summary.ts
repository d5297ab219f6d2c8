/**
 * "Copy as Markdown": a concise summary of a pod's volumes (or a node's problem volumes) to paste
 * into a ticket, a runbook or an incident document: stage, error, next retry, how long and how
 * often it has failed (failures ×N since T, stuck for D), the last three aggregated events, node
 * and time. Every link is absolute, on the dashboard's public base URL (public-url.ts), so it
 * works wherever the text is pasted.
 */
import type { OperationHistory, RecentEvent, Snapshot } from '../api/index.ts';
import {
  aggregateEvents,
  eventGroupResolution,
  eventGroupSummary,
  failureSummary,
  historyByOperationKey,
  pairFailureHistory,
  volumeNameLookup,
  type EventGroupResolution,
} from './incident-history.ts';
import { stageLabel, kubeletSummaryLine, podDisplayName, rowPodName, type PodView, type VolumeRow } from './pipeline.ts';
import type { NodeSummary } from './node-summary.ts';
import { publicLink } from './public-url.ts';
import { nodeHref, podHref, volumeHref } from './routes.ts';
import { formatGoDuration } from '../volume/util/go-format.ts';
import { formatUtc, operationTiming } from './time-format.ts';

/** How many aggregated events a summary lists: the latest groups. */
export const MARKDOWN_EVENT_GROUPS = 3;

/** The parts of a snapshot a summary reads besides its rows. */
export type MarkdownSnapshot = Pick<Snapshot, 'seq' | 'desired' | 'actual' | 'operationHistory' | 'recentEvents'>;

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

/**
 * The next retry of a row at `now`: `retry in 0:57 (<UTC time>)`, `retry due`, `running 3 s`; in
 * observe mode with the kubelet's `durationBeforeRetry`; `—` without an operation.
 */
export function retryText(row: Pick<VolumeRow, 'operation' | 'kubelet'>, now: number): string {
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

/** A Markdown link on the public base URL; the bare (escaped) text when there is no base. */
function link(text: string, base: string | null, path: string): string {
  const label = markdownCell(text).replace(/[[\]]/g, '\\$&');
  return base === null ? label : `[${label}](${publicLink(base, path)})`;
}

/** What the table's rows need to say how they fail. */
interface FailureContext {
  readonly history: readonly OperationHistory[];
  readonly byKey: ReadonlyMap<string, OperationHistory>;
}

function failureContext(history: readonly OperationHistory[]): FailureContext {
  return { history, byKey: historyByOperationKey(history) };
}

/** `failures ×N since T, stuck for D` of a row; without a history, the pending operation's failures. */
function failureText(row: VolumeRow, failures: FailureContext, now: number): string {
  if (row.state === 'ready') return '—';
  const history = pairFailureHistory(row, failures.history, failures.byKey);
  if (history !== null) return failureSummary(history, now);
  const op = row.operation;
  return op !== null && op.failures > 0 ? `failures ×${op.failures}` : '—';
}

function volumeTable(rows: readonly VolumeRow[], node: string, now: number, withPod: boolean, base: string | null, failures: FailureContext): string[] {
  const columns = [...(withPod ? ['pod'] : []), 'volume', 'state', 'stage', 'error', 'failing', 'next retry'];
  const lines = [`| ${columns.join(' | ')} |`, `|${columns.map(() => '---|').join('')}`];
  for (const row of rows) {
    const cells = [
      ...(withPod ? [link(rowPodName(row), base, podHref(node, row.podUid))] : []),
      link(row.volumeName, base, volumeHref(node, row.uniqueVolumeName)),
      markdownCell(row.state),
      markdownCell(rowStageText(row)),
      markdownCell(rowErrorText(row)),
      markdownCell(failureText(row, failures, now)),
      markdownCell(retryText(row, now)),
    ];
    lines.push(`| ${cells.join(' | ')} |`);
  }
  return lines;
}

function resolutionText(resolution: EventGroupResolution): string {
  if (resolution.state === 'open') return '';
  if (resolution.state === 'pods-gone') return ' — over: its pods are gone';
  return resolution.mountedAt === null ? ' — resolved: mounted' : ` — resolved: mounted at ${formatUtc(resolution.mountedAt)}`;
}

/**
 * The latest {@link MARKDOWN_EVENT_GROUPS} groups of `events` aggregated like kubectl
 * (`FailedMount ×9 over 61 s, last 3 s ago`), each with what it is about (`pod / volume` with
 * `withPod`, linked), its latest message verbatim on one line and whether it is resolved.
 */
function eventLines(events: readonly RecentEvent[], snapshot: MarkdownSnapshot, rows: readonly VolumeRow[], node: string, now: number, withPod: boolean, base: string | null): string[] {
  const groups = aggregateEvents(events, volumeNameLookup(snapshot)).slice(0, MARKDOWN_EVENT_GROUPS);
  if (groups.length === 0) return [];
  const actual = new Map(snapshot.actual.volumes.map((v) => [v.uniqueVolumeName, v]));
  const desiredPods = new Set(snapshot.desired.pods.map((p) => p.uid));
  const lines = ['', `Last events (${groups.length === 1 ? 'the latest group' : `the latest ${groups.length} groups`}, aggregated):`];
  for (const g of groups) {
    const podUid = g.podUids[0] ?? null;
    const row = g.volume === null ? undefined : rows.find((r) => r.uniqueVolumeName === g.volume && (podUid === null || r.podUid === podUid));
    const about: string[] = [];
    if (withPod && podUid !== null) about.push(link(row === undefined ? podUid : rowPodName(row), base, podHref(node, podUid)));
    if (g.volume !== null) about.push(link(row?.volumeName ?? g.volume, base, volumeHref(node, g.volume)));
    const subject = about.length === 0 ? 'node' : about.join(' / ');
    const resolution = eventGroupResolution(g, actual, snapshot.operationHistory, desiredPods);
    lines.push(`- ${g.type} ${markdownCell(eventGroupSummary(g, now))} (${subject}): ${markdownCell(g.lastMessage)}${resolutionText(resolution)}`);
  }
  return lines;
}

/** What {@link podMarkdownSummary} needs. */
export interface PodMarkdownInput {
  /** The agent (node) name the dashboard knows the node by. */
  readonly node: string;
  readonly pod: PodView;
  /** The snapshot the pod was derived from: its seq, operation history and events. */
  readonly snapshot: MarkdownSnapshot;
  /** When the summary is taken (browser clock). */
  readonly now: number;
  /** The public base URL every link is built on (public-url.ts); `null` to leave links out. */
  readonly baseUrl: string | null;
}

/**
 * A pod's volumes as Markdown: a heading with pod and node, the time, the kubelet-style summary
 * line, a table (volume, state, blocking stage, last error verbatim, failures ×N since T and
 * stuck for D, next retry), the pod's last three aggregated events, its populator errors and the
 * links to its page and its node's.
 */
export function podMarkdownSummary(input: PodMarkdownInput): string {
  const { pod, node, now, snapshot, baseUrl: base } = input;
  const lines = [
    `**Pod ${podDisplayName(pod)}** (uid \`${pod.uid}\`) on node **${node}**${pod.desired ? '' : ' — not in the desired world'}`,
    `_${formatUtc(now)}, agent seq ${snapshot.seq}_`,
    '',
    `\`${kubeletSummaryLine(pod.rows)}\``,
    '',
  ];
  if (pod.rows.length === 0) lines.push('No volumes.');
  else lines.push(...volumeTable(pod.rows, node, now, false, base, failureContext(snapshot.operationHistory)));
  lines.push(...eventLines(snapshot.recentEvents.filter((e) => e.podUid === pod.uid), snapshot, pod.rows, node, now, false, base));
  if (pod.errors.length > 0) {
    lines.push('', 'Pod errors:');
    for (const e of pod.errors) lines.push(`- ${markdownCell(e)}`);
  }
  if (base !== null) lines.push('', `${link('Open the pod in VolumeScope', base, podHref(node, pod.uid))} · ${link(`node ${node}`, base, nodeHref(node))}`);
  return `${lines.join('\n')}\n`;
}

/** The counts of a node on one line: `pods 4 · desired volumes 8 · mounted 7 · …`. */
export function nodeCountsLine(s: Pick<NodeSummary, 'pods' | 'desiredVolumes' | 'mounted' | 'uncertain' | 'pending' | 'inBackoff' | 'podErrors' | 'sourceErrors'>): string {
  return `pods ${s.pods} · desired volumes ${s.desiredVolumes} · mounted ${s.mounted} · uncertain ${s.uncertain} · pending ${s.pending} · in backoff ${s.inBackoff} · pod errors ${s.podErrors} · source errors ${s.sourceErrors}`;
}

/** What {@link nodeMarkdownSummary} needs. */
export interface NodeMarkdownInput {
  readonly node: string;
  readonly summary: NodeSummary;
  /** All rows of the node; only those not ready are listed (at most `limit`). */
  readonly rows: readonly VolumeRow[];
  /** The snapshot the rows were derived from: its operation history and events. */
  readonly snapshot: MarkdownSnapshot;
  readonly now: number;
  /** The public base URL every link is built on (public-url.ts); `null` to leave links out. */
  readonly baseUrl: string | null;
  /** How many problem rows to list at most; default 20. */
  readonly limit?: number;
}

/** A node's health, counts, its volumes that are not ready and its last three aggregated events, as Markdown. */
export function nodeMarkdownSummary(input: NodeMarkdownInput): string {
  const { summary: s, now, node, baseUrl: base } = input;
  const limit = input.limit ?? 20;
  const problems = input.rows.filter((r) => r.state !== 'ready');
  const lines = [
    `**Node ${node}**: ${s.health}${s.reasons.length > 0 ? ` (${s.reasons.join(', ')})` : ''}`,
    `_${formatUtc(now)}, agent seq ${s.seq}_`,
    '',
    nodeCountsLine(s),
    '',
  ];
  if (problems.length === 0) lines.push('Every volume is ready.');
  else {
    lines.push(...volumeTable(problems.slice(0, limit), node, now, true, base, failureContext(input.snapshot.operationHistory)));
    if (problems.length > limit) lines.push('', `…and ${problems.length - limit} more not ready.`);
  }
  lines.push(...eventLines(input.snapshot.recentEvents, input.snapshot, input.rows, node, now, true, base));
  if (base !== null) lines.push('', link(`Open node ${node} in VolumeScope`, base, nodeHref(node)));
  return `${lines.join('\n')}\n`;
}
