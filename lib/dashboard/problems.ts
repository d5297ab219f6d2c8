/**
 * The node page's "jump to problems" link: what needs attention, in page order, and where the
 * first of it is, so a keyboard user reaches it from the top of the page in a few Tabs. Pure.
 */
import type { Snapshot } from '../api/index.ts';
import type { VolumeRow, VolumeState } from './pipeline.ts';

/** Row states an operator has to look at (a running or waiting volume is still progressing). */
const PROBLEM_STATES: ReadonlySet<VolumeState> = new Set<VolumeState>(['uncertain', 'backoff']);

/** One kind of problem and the section (anchor) that shows it. */
export interface ProblemGroup {
  /** `#pods`, `#mount-health`, `#operations`, `#source-errors`, `#drivers`: the node page's section anchors. */
  readonly href: string;
  readonly count: number;
  /** `2 volumes failing or uncertain`. */
  readonly text: string;
}

/** The problems of the node page, in page order. */
export interface Problems {
  /** The sections with problems, in page order; empty when there are none. */
  readonly groups: readonly ProblemGroup[];
  /** Where the link goes: the first group's section; null when there are no problems. */
  readonly href: string | null;
  /** `Jump to problems: 2 volumes failing or uncertain, 1 source error`, or `No problems`. */
  readonly label: string;
}

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** The problems shown on the node page of `snapshot`, whose pods table has `rows`. */
export function nodeProblems(
  snapshot: Pick<Snapshot, 'operations' | 'sourceErrors' | 'drivers' | 'attachVerification'> & Partial<Pick<Snapshot, 'mountHealth'>>,
  rows: readonly VolumeRow[],
): Problems {
  const unhealthy = (snapshot.mountHealth ?? []).reduce((n, h) => n + (h.state === 'healthy' ? 0 : 1), 0);
  const failingRows = rows.reduce((n, r) => n + (PROBLEM_STATES.has(r.state) ? 1 : 0), 0);
  const backoff = snapshot.operations.reduce((n, op) => n + (op.state === 'backoff' ? 1 : 0), 0);
  const driverErrors = snapshot.drivers.reduce((n, d) => n + (d.lastError !== null || !d.registered ? 1 : 0), 0) + snapshot.attachVerification.foundDetached.length;
  const candidates: ProblemGroup[] = [
    { href: '#pods', count: failingRows, text: `${plural(failingRows, 'volume', 'volumes')} failing or uncertain` },
    { href: '#mount-health', count: unhealthy, text: plural(unhealthy, 'unhealthy mount', 'unhealthy mounts') },
    { href: '#operations', count: backoff, text: `${plural(backoff, 'operation', 'operations')} in backoff` },
    { href: '#source-errors', count: snapshot.sourceErrors.length, text: plural(snapshot.sourceErrors.length, 'source error', 'source errors') },
    { href: '#drivers', count: driverErrors, text: plural(driverErrors, 'CSI driver or attach problem', 'CSI driver or attach problems') },
  ];
  const groups = candidates.filter((g) => g.count > 0);
  const first = groups[0];
  if (first === undefined) return { groups, href: null, label: 'No problems' };
  return { groups, href: first.href, label: `Jump to problems: ${groups.map((g) => g.text).join(', ')}` };
}
