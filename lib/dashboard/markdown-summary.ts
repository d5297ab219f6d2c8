/**
 * "Copy as Markdown": a concise summary of a pod's volumes (or a node's problem volumes) to paste
 * into a ticket, a runbook or an incident document: stage, error, next retry, how long and how
 * often it has failed (failures ×N since T, stuck for D), the last three aggregated events, the
 * recent operator actions with who took them and why (incident ID, reason, checks, outcome),
 * node and time. Every link is absolute, on the dashboard's public base URL (public-url.ts), so
 * it works wherever the text is pasted.
 *
 * Every text that pod authors (or drivers) control is escaped (markdown-escape.ts): names,
 * paths, error texts and event messages read as themselves; no link, image, HTML or autolink
 * can come out of them. Only the links this module builds itself are links.
 */
import type { AuditEntry, OperationHistory, RecentEvent, Snapshot } from '../api/index.ts';
import { escapeMarkdownText, markdownCode } from './markdown-escape.ts';
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
import { podStatusLine, podStatusOf } from './pod-status-view.ts';
import { publicLink } from './public-url.ts';
import { volumeStateText } from './volume-state-wording.ts';
import { nodeHref, podHref, volumeHref } from './routes.ts';
import { formatGoDuration } from '../volume/util/go-format.ts';
import { formatUtc, operationTiming } from './time-format.ts';

/** How many aggregated events a summary lists: the latest groups. */
export const MARKDOWN_EVENT_GROUPS = 3;

/** How many operator actions a summary lists: the latest ones. */
export const MARKDOWN_AUDIT_ENTRIES = 5;

/** The parts of a snapshot a summary reads besides its rows. */
export type MarkdownSnapshot = Pick<Snapshot, 'seq' | 'desired' | 'actual' | 'operationHistory' | 'recentEvents'> & Partial<Pick<Snapshot, 'audit'>>;

/**
 * Makes text that pod authors or drivers control (names, paths, errors, event messages) safe
 * inside Markdown, a table cell included: one line, every metacharacter escaped; `(empty)` for
 * blank text.
 */
export function markdownCell(text: string): string {
  const trimmed = text.trim();
  // Empty, it would leave `- ` alone on a line: a setext underline that turns the line above into a heading.
  return trimmed === '' ? '(empty)' : escapeMarkdownText(trimmed);
}

/**
 * This module's own words (states, stage labels, times, counts) in a table cell: one line with
 * pipes escaped; nothing else in them is Markdown, and they read better unescaped where a
 * ticket system shows the raw text. Never for text from outside.
 */
function ownCell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\r?\n|\r/g, ' ');
}

/** The stage text of a row: `ready`, or the blocking stage and how it stands. */
export function rowStageText(row: VolumeRow): string {
  if (row.blocking === null) return 'ready';
  const label = stageLabel(row.blocking.id, row.attachable);
  if (row.blocking.status === 'uncertain') return `${volumeStateText('uncertain', row.uncertainCause)}: ${label}`;
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

/** {@link rowErrorText} as Markdown: the error and the event reason escaped, the rest ours. */
function rowErrorMarkdown(row: Pick<VolumeRow, 'operation' | 'kubelet'>): string {
  const error = row.operation?.lastError ?? null;
  if (error === null) return '—';
  const backoff = row.kubelet?.backoff;
  if (backoff === undefined) return markdownCell(error);
  const at = backoff.observedAt === null ? '' : ` at ${formatUtc(backoff.observedAt)}`;
  return `${markdownCell(error)} (the kubelet’s ${backoff.reason == null ? 'event' : markdownCell(backoff.reason)}${at})`;
}

/** A URL as a Markdown link destination: nothing in it can end the destination or be read as Markdown. */
function linkDestination(url: string): string {
  return url.replace(/[()<>\\ !*'`[\]]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

/**
 * A Markdown link on the public base URL; the bare (escaped) text when there is no base. Names
 * in the path are percent-encoded by the route builders, which leave `(`, `)`, `!`, `*` and `'`
 * as they are: those (and any `<`, `>`, `\\`, space) are percent-encoded here too, so no name
 * can end the destination and start a link or an image of its own.
 */
function link(text: string, base: string | null, path: string): string {
  const label = markdownCell(text);
  return base === null ? label : `[${label}](${linkDestination(publicLink(base, path))})`;
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
      ownCell(volumeStateText(row.state, row.uncertainCause)),
      ownCell(rowStageText(row)),
      rowErrorMarkdown(row),
      ownCell(failureText(row, failures, now)),
      ownCell(retryText(row, now)),
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
    // The reason is the event's (anyone who may post events chose it); the rest is ours.
    const summary = eventGroupSummary(g, now);
    const counted = summary.startsWith(g.reason) ? `${markdownCell(g.reason)}${ownCell(summary.slice(g.reason.length))}` : markdownCell(summary);
    lines.push(`- ${markdownCell(g.type)} ${counted} (${subject}): ${markdownCell(g.lastMessage)}${resolutionText(resolution)}`);
  }
  return lines;
}

/**
 * One operator action as a Markdown list item: when, who (with groups), what on which target,
 * the outcome, the incident ID and reason typed in the dialog, the message and the checks
 * (✓/✕ name: detail). Every text is escaped.
 */
export function auditEntryMarkdown(entry: AuditEntry): string {
  const groups = entry.groups !== undefined && entry.groups.length > 0 ? ` (${markdownCell(entry.groups.join(', '))})` : '';
  const parts = [`- ${formatUtc(entry.time)} **${markdownCell(entry.caller)}**${groups}: ${markdownCell(entry.action)} ${entry.target === null ? 'node' : markdownCode(entry.target)} → **${entry.result}**`];
  if (entry.incidentId != null) parts.push(`incident ${markdownCell(entry.incidentId)}`);
  if (entry.reason != null) parts.push(`reason: ${markdownCell(entry.reason)}`);
  if (entry.message !== null) parts.push(markdownCell(entry.message));
  if (entry.checks.length > 0) parts.push(`checks: ${entry.checks.map((c) => `${c.ok ? '✓' : '✕'} ${markdownCell(c.name)}: ${markdownCell(c.detail)}`).join('; ')}`);
  return parts.join(' · ');
}

/** The latest {@link MARKDOWN_AUDIT_ENTRIES} actions, newest first; none: nothing. */
function auditLines(audit: readonly AuditEntry[]): string[] {
  if (audit.length === 0) return [];
  const latest = audit.slice(-MARKDOWN_AUDIT_ENTRIES).reverse();
  return ['', `Operator actions (${latest.length === 1 ? 'the latest' : `the latest ${latest.length}`}):`, ...latest.map(auditEntryMarkdown)];
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
 * A pod's volumes as Markdown: a heading with pod and node, the time, the pod's phase and
 * containers' states where its source has a status, the kubelet-style summary
 * line, a table (volume, state, blocking stage, last error verbatim, failures ×N since T and
 * stuck for D, next retry), the pod's last three aggregated events, its populator errors and the
 * links to its page and its node's.
 */
export function podMarkdownSummary(input: PodMarkdownInput): string {
  const { pod, node, now, snapshot, baseUrl: base } = input;
  const status = podStatusLine(podStatusOf(snapshot.desired.pods, pod.uid), now);
  const lines = [
    `**Pod ${markdownCell(podDisplayName(pod))}** (uid ${markdownCode(pod.uid)}) on node **${markdownCell(node)}**${pod.desired ? '' : ' — not in the desired world'}`,
    `_${formatUtc(now)}, agent seq ${snapshot.seq}_`,
    // The pod's phase and containers' states, only where the source has a status.
    ...(status === null ? [] : [markdownCell(status)]),
    '',
    markdownCode(kubeletSummaryLine(pod.rows)),
    '',
  ];
  if (pod.rows.length === 0) lines.push('No volumes.');
  else lines.push(...volumeTable(pod.rows, node, now, false, base, failureContext(snapshot.operationHistory)));
  lines.push(...eventLines(snapshot.recentEvents.filter((e) => e.podUid === pod.uid), snapshot, pod.rows, node, now, false, base));
  if (pod.errors.length > 0) {
    lines.push('', 'Pod errors:');
    for (const e of pod.errors) lines.push(`- ${markdownCell(e)}`);
  }
  lines.push(...auditLines((snapshot.audit ?? []).filter((a) => a.target !== null && (a.target === pod.uid || a.target.startsWith(`${pod.uid}/`)))));
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
    `**Node ${markdownCell(node)}**: ${s.health}${s.reasons.length > 0 ? ` (${markdownCell(s.reasons.join(', '))})` : ''}`,
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
  lines.push(...auditLines(input.snapshot.audit ?? []));
  if (base !== null) lines.push('', link(`Open node ${node} in VolumeScope`, base, nodeHref(node)));
  return `${lines.join('\n')}\n`;
}
