/**
 * Pure derivations for the observe-mode panels (components/observe/observe-panels.tsx): the order and
 * filtering of the plan, the orphans and the truth diff, the live texts ("outstanding for 3m 12s",
 * "retry in 0:57"), the labels of every state (icon + word, never colour alone), and the exact
 * texts of the orphan cleanup (confirmation and result). Every function that depends on time
 * takes `now` (epoch ms, the browser's clock) explicitly; agent times are compared with it,
 * assuming synchronized clocks, as time-format.ts does.
 */
import type { OrphanCleanupResponse } from '../api/actions.ts';
import type { KubeletBackoff, Observe, OrphanPod, OrphanVolume, PlannedOperation, TruthDiffRow } from '../api/observe.ts';
import type { Snapshot } from '../api/snapshot.ts';
import { outstandingWork } from '../api/summary.ts';
import type { ConnectionPhase } from './queries.ts';
import { formatGoDuration } from '../volume/util/go-format.ts';
import { formatClock } from './time-format.ts';

// TYPES

/** How a state is shown: a tone (badge colour), an icon and a word. The word alone must suffice. */
export interface StateLabel {
  readonly tone: 'bad' | 'warn' | 'info' | 'ok' | 'neutral';
  readonly icon: string;
  readonly label: string;
}

/** Whether an action can run now; the reason is shown next to the disabled control. */
export type ObserveActionAvailability = { readonly allowed: true } | { readonly allowed: false; readonly reason: string };

/** The kubelet's backoff at `now`, as the plan's backoff column shows it. */
export type KubeletBackoffTiming =
  /** `retryAt` is ahead: `retry in 0:57` (seconds rounded up, never `0:00` while waiting). */
  | { readonly kind: 'retry-in'; readonly text: string; readonly remainingMs: number }
  /** `now >= retryAt`: the kubelet may retry on its next reconciler pass. */
  | { readonly kind: 'retry-due'; readonly text: string };

/** The part of a long list that is rendered, and how many rows were left out. */
export interface CappedRows<T> {
  readonly shown: readonly T[];
  /** Rows not rendered (0 when everything is shown). */
  readonly hidden: number;
}

// CONSTANTS

/** Lists longer than this render only their first rows until "show all" is chosen. */
export const OBSERVE_ROW_CAP = 200;

/** The reason shown on the disabled cleanup actions when `cleanupAllowed` is false. */
export const CLEANUP_DISABLED_REASON = 'the agent runs without --allow-orphan-cleanup';

/** The one-line banner of observe mode: the agent reads, the kubelet acts. */
export const OBSERVE_BANNER =
  'Observe mode: this agent only watches the kubelet. It never mounts or unmounts anything; the kubelet does. The only action it offers is the opt-in orphan cleanup.';

// TIME TEXTS

/**
 * A compact elapsed time: `42s`, `3m 12s`, `1h 4m`, `2d 3h` (rounded down; negative counts
 * as 0, for a clock slightly behind the agent's).
 */
export function formatElapsed(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h ${m % 60}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

/** `outstanding for 3m 12s`: how long the operation has been planned without interruption. */
export function outstandingText(since: number, now: number): string {
  return `outstanding for ${formatElapsed(now - since)}`;
}

/** The kubelet's backoff at `now`: `retry in 0:57` until `retryAt`, then `retry due`. */
export function kubeletBackoffTiming(backoff: Pick<KubeletBackoff, 'retryAt'>, now: number): KubeletBackoffTiming {
  const remainingMs = backoff.retryAt - now;
  if (remainingMs <= 0) return { kind: 'retry-due', text: 'retry due' };
  return { kind: 'retry-in', text: `retry in ${formatClock(Math.ceil(remainingMs / 1000))}`, remainingMs };
}

/** `durationBeforeRetry 1m4s`, in the kubelet's words. */
export function durationBeforeRetryText(backoff: Pick<KubeletBackoff, 'durationBeforeRetryMs'>): string {
  return `durationBeforeRetry ${formatGoDuration(backoff.durationBeforeRetryMs)}`;
}

/** The note for a backoff that was estimated, not read from the event; `null` when exact. */
export function backoffBasisNote(backoff: Pick<KubeletBackoff, 'basis'>): string | null {
  return backoff.basis === 'event-count' ? '(estimated from event count)' : null;
}

// ORDER AND FILTERS

function byKey(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The plan, longest outstanding first (oldest `since`), then by key. Does not mutate its input. */
export function sortPlan(plan: readonly PlannedOperation[]): PlannedOperation[] {
  return [...plan].sort((a, b) => a.since - b.since || byKey(a.key, b.key));
}

const VERDICT_RANK: Record<OrphanPod['verdict'], number> = {
  mounted: 0,
  'volume-data': 1,
  'vol-data-only': 2,
  'empty-volume-dirs': 3,
  'no-volume-dirs': 4,
};

/**
 * The orphans, most dangerous verdict first (`mounted`, `volume-data`, `vol-data-only`,
 * `empty-volume-dirs`, `no-volume-dirs`), then oldest modification first, then by pod UID.
 */
export function sortOrphans(orphans: readonly OrphanPod[]): OrphanPod[] {
  return [...orphans].sort((a, b) => VERDICT_RANK[a.verdict] - VERDICT_RANK[b.verdict] || a.modifiedAt - b.modifiedAt || byKey(a.podUid, b.podUid));
}

const SEVERITY_RANK: Record<TruthDiffRow['findings'][number]['severity'], number> = { error: 0, warning: 1, info: 2 };

/** The rank of a row's worst finding (0 error, 1 warning, 2 info); 3 when it has none. */
export function worstSeverityRank(row: Pick<TruthDiffRow, 'findings'>): number {
  return row.findings.reduce((worst, f) => Math.min(worst, SEVERITY_RANK[f.severity]), 3);
}

/**
 * The truth-diff rows to show: only those with findings unless `showAll`; worst severity first
 * (rows without findings last), then by key. Findings inside a row keep the agent's order.
 */
export function truthDiffRowsShown(rows: readonly TruthDiffRow[], showAll: boolean): TruthDiffRow[] {
  const kept = showAll ? [...rows] : rows.filter((r) => r.findings.length > 0);
  return kept.sort((a, b) => worstSeverityRank(a) - worstSeverityRank(b) || byKey(a.key, b.key));
}

/** Counts of the truth-diff rows: all of them, and those with at least one finding. */
export function truthDiffCounts(rows: readonly TruthDiffRow[]): { total: number; withFindings: number } {
  return { total: rows.length, withFindings: rows.filter((r) => r.findings.length > 0).length };
}

/** The first {@link OBSERVE_ROW_CAP} (or `cap`) rows unless `showAll`. */
export function capRows<T>(rows: readonly T[], showAll: boolean, cap: number = OBSERVE_ROW_CAP): CappedRows<T> {
  if (showAll || rows.length <= cap) return { shown: rows, hidden: 0 };
  return { shown: rows.slice(0, cap), hidden: rows.length - cap };
}

// STATE LABELS

const VERDICT_LABEL: Record<OrphanPod['verdict'], StateLabel> = {
  mounted: { tone: 'bad', icon: '◉', label: 'still mounted' },
  'volume-data': { tone: 'warn', icon: '!', label: 'volume data left' },
  'vol-data-only': { tone: 'warn', icon: '?', label: 'CSI vol_data.json only' },
  'empty-volume-dirs': { tone: 'neutral', icon: '○', label: 'empty volume directories' },
  'no-volume-dirs': { tone: 'neutral', icon: '–', label: 'no volume directories' },
};

/** How an orphan's verdict is shown. */
export function orphanVerdictLabel(verdict: OrphanPod['verdict']): StateLabel {
  return VERDICT_LABEL[verdict];
}

const VOLUME_STATE_LABEL: Record<OrphanVolume['state'], StateLabel> = {
  'mount-point': { tone: 'bad', icon: '◉', label: 'mount point' },
  'non-empty': { tone: 'warn', icon: '!', label: 'non-empty' },
  'has-vol-data': { tone: 'warn', icon: '?', label: 'has vol_data.json' },
  empty: { tone: 'ok', icon: '○', label: 'empty' },
  symlink: { tone: 'neutral', icon: '↪', label: 'symlink' },
  file: { tone: 'neutral', icon: '▭', label: 'file' },
  other: { tone: 'neutral', icon: '–', label: 'other' },
};

/** How the state of one volume path of an orphan is shown. */
export function orphanVolumeStateLabel(state: OrphanVolume['state']): StateLabel {
  return VOLUME_STATE_LABEL[state];
}

const SEVERITY_LABEL: Record<TruthDiffRow['findings'][number]['severity'], StateLabel> = {
  error: { tone: 'bad', icon: '✕', label: 'error' },
  warning: { tone: 'warn', icon: '!', label: 'warning' },
  info: { tone: 'info', icon: 'i', label: 'info' },
};

/** How a truth-diff finding's severity is shown. */
export function findingSeverityLabel(severity: TruthDiffRow['findings'][number]['severity']): StateLabel {
  return SEVERITY_LABEL[severity];
}

/** `0 B`, `512 B`, `1.5 KiB`, `3.2 GiB` (binary units, one decimal from KiB). */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let value = Math.max(0, bytes);
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit] ?? 'B'}`;
}

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/**
 * What one volume path of an orphan holds, in words: `3 files, 1.5 KiB` for non-empty (`at
 * least` when the walk was truncated), `driver … handle …` for `has-vol-data`, `empty`, the mount
 * count for a mount point. The agent's explanation is shown beside it, not repeated here.
 */
export function orphanVolumeDetail(volume: OrphanVolume): string {
  const atLeast = volume.truncated ? 'at least ' : '';
  switch (volume.state) {
    case 'mount-point':
      return `${plural(volume.mounts.length, 'mount', 'mounts')} at or below it`;
    case 'non-empty':
      return `${atLeast}${plural(volume.files, 'file', 'files')}, ${atLeast}${formatBytes(volume.bytes)}`;
    case 'has-vol-data': {
      const driver = volume.volData?.driverName ?? 'unknown driver';
      const handle = volume.volData?.volumeHandle ?? 'unknown handle';
      return `driver ${driver}, volume handle ${handle}`;
    }
    case 'empty':
      return 'empty';
    case 'symlink':
    case 'file':
    case 'other':
      return volume.state;
  }
}

// NODE PAGE SECTIONS

/** An in-page link of the node page's table of contents. */
export interface SectionLink {
  readonly href: string;
  readonly label: string;
}

/**
 * The table of contents' links to the operation sections of the mode: the agent's pending
 * operations and their history (managed mode), or the observe-mode panels (the kubelet's plan,
 * with the one outstanding-work count, the orphans and the truth diff; ids of ObservePanels).
 */
export function nodeSectionLinks(snapshot: Pick<Snapshot, 'observe' | 'operations' | 'operationHistory'>): SectionLink[] {
  const observe = snapshot.observe;
  if (observe === undefined) {
    return [
      { href: '#operations', label: `Pending operations (${snapshot.operations.length})` },
      { href: '#operation-history', label: `Operation history (${snapshot.operationHistory.length})` },
    ];
  }
  return [
    { href: '#observe-plan', label: `Kubelet’s outstanding work (${outstandingWork(observe)})` },
    { href: '#observe-orphans', label: `Orphaned pod directories (${observe.orphans.length})` },
    { href: '#observe-truth', label: 'Node truth diff' },
  ];
}

// ORPHAN CLEANUP

/**
 * Dry run and Clean up are possible only when the agent has `--allow-orphan-cleanup` (it answers
 * 409 `cleanup-enabled` otherwise, even for a dry run), nothing blocks every cleanup
 * (`cleanupBlocked`: the agent's mount table is not the root dir's) and the agent is reachable.
 */
export function orphanCleanupAvailability(observe: Pick<Observe, 'cleanupAllowed' | 'cleanupBlocked'>, phase: ConnectionPhase): ObserveActionAvailability {
  if (phase === 'unavailable') return { allowed: false, reason: 'the agent is unreachable' };
  if (!observe.cleanupAllowed) return { allowed: false, reason: CLEANUP_DISABLED_REASON };
  if (typeof observe.cleanupBlocked === 'string') return { allowed: false, reason: observe.cleanupBlocked };
  return { allowed: true };
}

/** Files and bytes below the orphan's volume paths (lower bounds when a walk was truncated). */
export function orphanFileTotals(orphan: Pick<OrphanPod, 'volumes'>): { files: number; bytes: number; truncated: boolean } {
  let files = 0;
  let bytes = 0;
  let truncated = false;
  for (const v of orphan.volumes) {
    files += v.files;
    bytes += v.bytes;
    truncated ||= v.truncated;
  }
  return { files, bytes, truncated };
}

/**
 * Clean up of one orphan: as the node allows it (`availability`), except for an orphan whose
 * own verdict leaves the next step to the kubelet (`mounted`: its volumes are still mounted and
 * the kubelet unmounts them; the agent refuses with `kubelet-must-unmount`). Its Dry run stays
 * available and shows that refusal with every check.
 */
export function cleanupAvailabilityFor(orphan: Pick<OrphanPod, 'verdict' | 'explanation'>, availability: ObserveActionAvailability): ObserveActionAvailability {
  if (!availability.allowed) return availability;
  if (orphan.verdict === 'mounted') return { allowed: false, reason: `the kubelet has to unmount first (${orphan.explanation})` };
  return availability;
}

/** `nothing`, or exactly the mount points (with their file system and source) in the given order. */
function exactUnmounts(mounts: readonly { mountPoint: string; fsType?: string; source?: string }[]): string {
  if (mounts.length === 0) return 'nothing';
  return `exactly ${plural(mounts.length, 'mount', 'mounts')}: ${mounts.map((m) => (m.fsType === undefined ? m.mountPoint : `${m.mountPoint} (${m.fsType} from ${m.source ?? '?'})`)).join(', ')}`;
}

/**
 * The confirmation text of Clean up, shown verbatim: what it unmounts, exactly (the mounts the
 * last inspection listed below the pod directory: none, for an orphan it may clean up), then it
 * removes only empty directories; files are never deleted; any failed check refuses it all.
 */
export function describeOrphanCleanup(node: string, orphan: Pick<OrphanPod, 'podUid' | 'path' | 'mounts' | 'volumes'>): string {
  const totals = orphanFileTotals(orphan);
  const kept =
    totals.files > 0
      ? ` The ${totals.truncated ? 'at least ' : ''}${plural(totals.files, 'file', 'files')} (${formatBytes(totals.bytes)}) in it stay, and so do the directories that hold them.`
      : '';
  return (
    `Clean up the orphaned directory of pod ${orphan.podUid} on ${node}: ` +
    `unmounts ${exactUnmounts(orphan.mounts)} below ${orphan.path}, then removes only empty directories; files are never deleted; refused if any check fails.` +
    kept +
    ' The agent checks again right before acting that the pod is gone (API server, desired state, container runtime) and reads the mount table afresh before every unmount.'
  );
}

/** The result of a cleanup request as a headline and its tone. */
export interface CleanupResultSummary {
  readonly tone: 'ok' | 'bad';
  readonly icon: string;
  readonly headline: string;
}

/** The headline of the agent's 200 answer to a cleanup (dry run or not). */
export function summarizeCleanupResult(r: Pick<OrphanCleanupResponse, 'outcome' | 'unmounts' | 'removals' | 'kept' | 'failures' | 'podUid'>): CleanupResultSummary {
  const unmounts = plural(r.unmounts.length, 'mount', 'mounts');
  const removals = plural(r.removals.length, 'empty directory', 'empty directories');
  const kept = `${r.kept.length} kept`;
  switch (r.outcome) {
    case 'planned':
      return {
        tone: 'ok',
        icon: '✓',
        headline: `Dry run for pod ${r.podUid}: would unmount ${exactUnmounts(r.unmounts.map((mountPoint) => ({ mountPoint })))} and remove ${removals}; ${kept}. Nothing was changed.`,
      };
    case 'completed':
      return { tone: 'ok', icon: '✓', headline: `Cleaned up pod ${r.podUid}: unmounted ${unmounts}, removed ${removals}; ${kept}.` };
    case 'aborted':
      return {
        tone: 'bad',
        icon: '✕',
        headline: `Aborted for pod ${r.podUid} after unmounting ${unmounts} and removing ${removals}; ${plural(r.failures.length, 'failure', 'failures')}, ${kept}.`,
      };
    case 'not-found':
      return { tone: 'ok', icon: '–', headline: `Nothing to do: the directory of pod ${r.podUid} is already gone.` };
  }
}

/** The failed checks of a refusal (or result), in the agent's order. */
export function failedChecks<C extends { ok: boolean }>(checks: readonly C[]): C[] {
  return checks.filter((c) => !c.ok);
}
