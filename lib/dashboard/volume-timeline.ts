/**
 * The timeline of one volume or one pod, from what the snapshot holds: every finished operation
 * (`operationLog`) and every running one (`operations[]`) as bars on a lane per operation, in
 * the order a volume goes through them (attach → device mount/stage → mount/publish → expand;
 * teardown: unmount → unmount device → detach); the backoff of each failed operation as a series
 * of retry deadlines (each failed attempt's end plus its backoff window: 500 ms doubling to the
 * cap 2m2s, as the kubelet's exponential backoff); and point marks for events (health changes
 * included: they are events) and reconstruction results.
 *
 * Pure and client-safe (no Node built-ins): the chart (components/shared/timeline-chart.tsx)
 * only draws what this returns.
 */
import type { OperationHistory, Snapshot } from '../api/index.ts';

/** The kubelet's exponential backoff: initial window and cap (`initialDurationBeforeRetry`, `maxDurationBeforeRetry`). */
export const BACKOFF_INITIAL_MS = 500;
export const BACKOFF_CAP_MS = 2 * 60_000 + 2_000;

/** The lanes' order: set-up first, then teardown; unknown operations after them, by name. */
const LANE_ORDER = [
  'volume_attach',
  'verify_controller_attached_volume',
  'mount_device',
  'volume_mount',
  'map_volume',
  'volume_expand',
  'expand_volume',
  'volume_fs_resize',
  'volume_unmount',
  'unmap_volume',
  'unmount_device',
  'unmap_device',
  'volume_detach',
];

export interface TimelineBar {
  start: number;
  end: number;
  outcome: 'success' | 'failure' | 'running';
  /** What the bar's tooltip says. */
  title: string;
}

export interface TimelineLane {
  operationName: string;
  bars: TimelineBar[];
}

/** One retry deadline of a backed-off operation. */
export interface BackoffPoint {
  operationName: string;
  /** When the failed attempt ended. */
  failedAt: number;
  /** When the next attempt was allowed (strictly after). */
  retryAt: number;
  windowMs: number;
  /** 1 for the first failure. */
  failure: number;
}

export interface TimelineMark {
  at: number;
  kind: 'event' | 'reconstruction';
  warning: boolean;
  label: string;
}

export interface Timeline {
  from: number;
  to: number;
  lanes: TimelineLane[];
  backoff: BackoffPoint[];
  marks: TimelineMark[];
}

/** Which operations, events and reconstruction entries belong to the timeline. */
export type TimelineSubject = { volume: string } | { podUid: string };

/** The backoff window after the `failure`-th consecutive failure (1-based). */
export function backoffWindowMs(failure: number): number {
  return Math.min(BACKOFF_CAP_MS, BACKOFF_INITIAL_MS * 2 ** Math.max(0, failure - 1));
}

function laneRank(name: string): number {
  const i = LANE_ORDER.indexOf(name);
  return i < 0 ? LANE_ORDER.length : i;
}

function matches(subject: TimelineSubject, volume: string, podUid: string | null, podVolumes: ReadonlySet<string>): boolean {
  if ('volume' in subject) return volume === subject.volume;
  // A volume-wide operation (attach, device mount, detach) belongs to a pod whose volume it is.
  return podUid === subject.podUid || (podUid === null && podVolumes.has(volume));
}

function backoffPoints(h: OperationHistory): BackoffPoint[] {
  const first = h.attemptsTotal - h.attempts.length + 1;
  const out: BackoffPoint[] = [];
  h.attempts.forEach((a, i) => {
    if (a.error === null) return;
    const failure = first + i;
    const failedAt = a.startedAt + a.durationMs;
    const windowMs = backoffWindowMs(failure);
    out.push({ operationName: h.operationName, failedAt, retryAt: failedAt + windowMs, windowMs, failure });
  });
  return out;
}

/** The timeline of `subject` at `now` (the agent's clock as the snapshot has it). */
export function buildTimeline(snapshot: Pick<Snapshot, 'operationLog' | 'operations' | 'operationHistory' | 'recentEvents' | 'reconstruction' | 'desired' | 'actual'>, subject: TimelineSubject, now: number): Timeline {
  const podVolumes = new Set<string>();
  if ('podUid' in subject) {
    for (const v of snapshot.actual.volumes) if (v.pods.some((p) => p.podUid === subject.podUid)) podVolumes.add(v.uniqueVolumeName);
    for (const p of snapshot.desired.pods) if (p.uid === subject.podUid) for (const v of p.volumes) podVolumes.add(v.uniqueVolumeName);
  }
  const lanes = new Map<string, TimelineBar[]>();
  const lane = (name: string): TimelineBar[] => {
    let bars = lanes.get(name);
    if (bars === undefined) {
      bars = [];
      lanes.set(name, bars);
    }
    return bars;
  };
  for (const op of snapshot.operationLog) {
    if (!matches(subject, op.volume, op.podUid, podVolumes)) continue;
    const took = op.finishedAt - op.startedAt;
    lane(op.operationName).push({
      start: op.startedAt,
      end: op.finishedAt,
      outcome: op.outcome,
      title: `${op.operationName} ${op.outcome === 'success' ? 'succeeded' : 'failed'} after ${took} ms${op.error === null ? '' : `: ${op.error}`}`,
    });
  }
  for (const op of snapshot.operations) {
    if (op.startedAt === null || !matches(subject, op.volume, op.podUid, podVolumes)) continue;
    lane(op.operationName).push({ start: op.startedAt, end: Math.max(op.startedAt, now), outcome: 'running', title: `${op.operationName} running for ${Math.max(0, now - op.startedAt)} ms` });
  }
  const backoff: BackoffPoint[] = [];
  for (const h of snapshot.operationHistory) {
    if (matches(subject, h.volume, h.podUid, podVolumes)) backoff.push(...backoffPoints(h));
  }
  const marks: TimelineMark[] = [];
  for (const e of snapshot.recentEvents) {
    const ofSubject = 'volume' in subject ? e.volume === subject.volume : e.podUid === subject.podUid;
    if (ofSubject) marks.push({ at: e.time, kind: 'event', warning: e.type === 'Warning', label: `${e.reason}: ${e.message}` });
  }
  for (const r of snapshot.reconstruction.volumes) {
    const ofSubject = 'podUid' in subject ? r.podUid === subject.podUid : snapshot.actual.volumes.some((v) => v.uniqueVolumeName === subject.volume && v.pods.some((p) => p.podUid === r.podUid && p.outerVolumeName === r.volumeName));
    if (ofSubject) marks.push({ at: r.at, kind: 'reconstruction', warning: r.outcome === 'failed', label: `reconstruction ${r.outcome}: ${r.volumeName}${r.error === null ? '' : ` (${r.error})`}` });
  }
  const sorted = [...lanes.entries()].sort(([a], [b]) => laneRank(a) - laneRank(b) || (a < b ? -1 : a > b ? 1 : 0)).map(([operationName, bars]) => ({ operationName, bars: bars.sort((x, y) => x.start - y.start) }));
  const times = [...sorted.flatMap((l) => l.bars.flatMap((b) => [b.start, b.end])), ...backoff.flatMap((b) => [b.failedAt, b.retryAt]), ...marks.map((m) => m.at)];
  const from = times.length === 0 ? now : Math.min(...times);
  const to = times.length === 0 ? now : Math.max(now, ...times);
  return { from, to: Math.max(to, from + 1), lanes: sorted, backoff: backoff.sort((a, b) => a.failedAt - b.failedAt), marks: marks.sort((a, b) => a.at - b.at) };
}
