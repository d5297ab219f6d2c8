/**
 * "Never green while blind": what the dashboard says while an agent cannot be reached, and after
 * it comes back as a new process. Pure: times are passed in (browser clock for `now` and
 * `lastSeenAt`, the agent's clock for `startedAt`, assumed synchronized as elsewhere), and so are
 * the time formatters (the views pass the local time of day; tests a fixed UTC one).
 *
 * - The stamp: while the connection is `reconnecting` or `unavailable`, every panel shows the
 *   last data dimmed, "as of <time> (agent unreachable)". A hidden tab (`paused`) is closed on
 *   purpose and resyncs when shown, so it is not stamped.
 * - The restart: a snapshot whose `agent.startedAt` is newer than the previous one's is a new
 *   agent process (its stream ids `<startedAt>.<seq>` start over). The banner says when, how
 *   long the previous run was up, and links to the reconstruction section.
 * - The reconstruction panel goes first for {@link RECONSTRUCTION_FIRST_MS} after the agent
 *   started, and opens with one sentence in plain words and a legend of the outcomes.
 */
import type { AgentInfo, ReconstructedVolume, ReconstructionStatus } from '../api/index.ts';
import type { ConnectionPhase } from './queries.ts';
import { formatDuration } from './time-format.ts';

/** Formats an epoch-ms time for people (the views: the local time of day, `18:59:27`). */
export type TimeFormatter = (at: number) => string;

// THE STAMP

/** Whether the dashboard is blind to the agent in `phase`: its data is the last known, not live. */
export function isBlind(phase: ConnectionPhase): boolean {
  return phase === 'reconnecting' || phase === 'unavailable';
}

/** How a panel shows its data. */
export interface StaleStamp {
  /** Dim the panel: the data is not live. */
  readonly stale: boolean;
  /** `as of 18:59:27 (agent unreachable)` while stale; `null` while live. */
  readonly text: string | null;
}

/**
 * The stamp of every panel of an agent in connection state `state`: the data is as of when bytes
 * last arrived (`lastSeenAt`), else as of when the outage began, else unknown.
 */
export function staleStamp(state: { readonly phase: ConnectionPhase; readonly lastSeenAt: number | null; readonly disconnectedSince: number | null }, formatTime: TimeFormatter): StaleStamp {
  if (!isBlind(state.phase)) return { stale: false, text: null };
  const asOf = state.lastSeenAt ?? state.disconnectedSince;
  return { stale: true, text: `as of ${asOf === null ? 'an unknown time' : formatTime(asOf)} (agent unreachable)` };
}

// THE RESTART

/** One agent process as the tab saw it. */
export interface AgentRun {
  /** `agent.startedAt` of its snapshots. */
  readonly startedAt: number;
  /** When the tab last had data from it (browser clock). */
  readonly lastSeenAt: number;
}

/** The agent came back as a new process. */
export interface AgentRestart {
  /** `agent.startedAt` of the new process. */
  readonly restartedAt: number;
  readonly previousStartedAt: number;
  /**
   * How long the previous process was up, at least: from its start to the last data the tab had
   * from it (it may have run a little longer, unseen).
   */
  readonly previousUptimeMs: number;
}

/** The restart between the run seen before and the agent of the current snapshot; `null` if none. */
export function detectRestart(previous: AgentRun | null, current: Pick<AgentInfo, 'startedAt'>): AgentRestart | null {
  // An older startedAt is a stale answer (a cached snapshot), not a restart.
  if (previous === null || current.startedAt <= previous.startedAt) return null;
  return {
    restartedAt: current.startedAt,
    previousStartedAt: previous.startedAt,
    previousUptimeMs: Math.max(0, Math.min(previous.lastSeenAt, current.startedAt) - previous.startedAt),
  };
}

/** What a tab remembers of an agent across snapshots. */
export interface RunTracker {
  readonly run: AgentRun | null;
  /** The last restart seen; kept until the next one. */
  readonly restart: AgentRestart | null;
}

/** Before the first snapshot. */
export const INITIAL_RUN_TRACKER: RunTracker = { run: null, restart: null };

/** `tracker` after a snapshot of `agent` arrived at `seenAt` (browser clock). */
export function trackAgentRun(tracker: RunTracker, agent: Pick<AgentInfo, 'startedAt'>, seenAt: number): RunTracker {
  const run = tracker.run;
  if (run !== null && agent.startedAt <= run.startedAt) {
    return agent.startedAt === run.startedAt && seenAt > run.lastSeenAt ? { ...tracker, run: { ...run, lastSeenAt: seenAt } } : tracker;
  }
  return { run: { startedAt: agent.startedAt, lastSeenAt: seenAt }, restart: detectRestart(run, agent) ?? tracker.restart };
}

/** The reconstruction panel is shown first for this long after the agent started. */
export const RECONSTRUCTION_FIRST_MS = 5 * 60_000;

/** Whether `now` is within {@link RECONSTRUCTION_FIRST_MS} of the agent's start (also when the clocks disagree by a little, `now` before it). */
export function isJustAfterRestart(agentStartedAt: number, now: number): boolean {
  return now - agentStartedAt < RECONSTRUCTION_FIRST_MS;
}

/** The banner's sentence: `The agent restarted at 18:59:27; its previous run was up 3 h 12 min.` */
export function restartBannerText(restart: AgentRestart, formatTime: TimeFormatter): string {
  return `The agent restarted at ${formatTime(restart.restartedAt)}; its previous run was up ${formatDuration(restart.previousUptimeMs)}.`;
}

// THE RECONSTRUCTION

/** `19 ms` below a second, else {@link formatDuration}. */
function tookText(ms: number): string {
  return ms < 1000 ? `${Math.max(0, Math.round(ms))} ms` : formatDuration(ms);
}

function directories(n: number): string {
  return `${n} volume ${n === 1 ? 'directory' : 'directories'}`;
}

/**
 * The reconstruction in one plain sentence, e.g. `After the restart at 18:59:27: 7 volume
 * directories found, all 7 confirmed, 0 uncertain, 0 cleaned up, took 19 ms`. Confirmed:
 * `confirmed-mounted`; uncertain: `reconstructed` (in the actual state as uncertain, waiting for
 * the desired state); failures are added only when there are some.
 */
export function reconstructionSentence(
  reconstruction: Pick<ReconstructionStatus, 'state' | 'startedAt' | 'finishedAt'> & { readonly outcomes: Readonly<Record<ReconstructedVolume['outcome'], number>> },
  agentStartedAt: number,
  formatTime: TimeFormatter,
): string {
  const prefix = `After the restart at ${formatTime(agentStartedAt)}`;
  const o = reconstruction.outcomes;
  const found = o.reconstructed + o['confirmed-mounted'] + o['cleaned-up'] + o.failed;
  if (reconstruction.state === 'pending') return `${prefix}: reconstruction has not started yet`;
  if (reconstruction.state === 'running') return `${prefix}: reconstruction is running, ${directories(found)} found so far`;
  const confirmed = o['confirmed-mounted'];
  const parts = [
    `${found === 0 ? 'no volume directories' : directories(found)} found`,
    found > 0 && confirmed === found ? `all ${confirmed} confirmed` : `${confirmed} confirmed`,
    `${o.reconstructed} uncertain`,
    `${o['cleaned-up']} cleaned up`,
  ];
  if (o.failed > 0) parts.push(`${o.failed} failed`);
  if (reconstruction.startedAt !== null && reconstruction.finishedAt !== null) parts.push(`took ${tookText(reconstruction.finishedAt - reconstruction.startedAt)}`);
  return `${prefix}: ${parts.join(', ')}`;
}

/** One entry of the reconstruction legend. */
export interface OutcomeLegendEntry {
  readonly outcome: ReconstructedVolume['outcome'];
  /** The table's icon (decorative: the outcome is also written out). */
  readonly icon: string;
  /** The word the sentence uses. */
  readonly label: string;
  readonly meaning: string;
}

/** The outcomes, in the order the sentence names them. */
export const RECONSTRUCTION_LEGEND: readonly OutcomeLegendEntry[] = [
  { outcome: 'confirmed-mounted', icon: '✓', label: 'confirmed', meaning: 'a pod still wants it and the mount was confirmed' },
  {
    outcome: 'reconstructed',
    icon: '?',
    label: 'uncertain',
    meaning: 'found mounted and added to the actual state as uncertain; it is confirmed or cleaned up once the desired state is known',
  },
  { outcome: 'cleaned-up', icon: '⏏', label: 'cleaned up', meaning: 'no pod wants it: it was unmounted and its directory removed' },
  { outcome: 'failed', icon: '✕', label: 'failed', meaning: 'it could not be reconstructed or cleaned up (see the error)' },
];

// THE OVERVIEW

/** An overview node in observe mode, with its counts (`null` from agents that do not send them). */
export interface ObserveNode {
  readonly name: string;
  readonly counts: { readonly orphans: number; readonly attachErrors: number } | null;
}

/** What the overview reads of a card. */
interface ObserveCardInput {
  readonly name: string;
  readonly summary: { readonly mode: 'managed' | 'observe'; readonly observe: { readonly orphans: number; readonly attachErrors: number } | null } | null;
}

/** The nodes in observe mode, in the cards' order (cards without a summary yet are left out). */
export function observeNodes(cards: readonly ObserveCardInput[]): ObserveNode[] {
  const nodes: ObserveNode[] = [];
  for (const card of cards) {
    if (card.summary?.mode === 'observe') nodes.push({ name: card.name, counts: card.summary.observe });
  }
  return nodes;
}

/** `2 orphaned pod directories, 1 attachment error`; `counts not reported` when the agent does not send them. */
export function observeCountsText(counts: ObserveNode['counts']): string {
  if (counts === null) return 'counts not reported';
  const orphans = `${counts.orphans} orphaned pod ${counts.orphans === 1 ? 'directory' : 'directories'}`;
  return `${orphans}, ${counts.attachErrors} attachment ${counts.attachErrors === 1 ? 'error' : 'errors'}`;
}
