/**
 * The comparison behind e2e/cluster/side-by-side.test.ts, as pure functions: facts are sections
 * of normalised lines per node (names made relative and node-independent), compared as multisets;
 * a line that only one node has is a difference, explained or not by the list of deliberate
 * differences. Unit tests: side-by-side-compare.test.ts (no cluster).
 */

/** Which node a fact was read on: kubelet-0 (the upstream kubelet) or agent-0 (the agent). */
export type Side = 'kubelet' | 'agent';

/** Section name → normalised lines (order is irrelevant; duplicates count). */
export type Facts = Readonly<Record<string, readonly string[]>>;

/** A difference the project keeps on purpose; docs/engine.md lists the same, with the reason. */
export interface Deliberate {
  readonly section: string;
  /** The node that has the line the other lacks. */
  readonly side: Side;
  /** Matches the whole normalised line. */
  readonly line: RegExp;
  readonly reason: string;
  /** True when the line may be absent in a run (it depends on timing): the entry is then not reported unused. */
  readonly optional?: boolean;
}

/** A line one node has and the other does not. */
export interface Difference {
  readonly section: string;
  readonly side: Side;
  readonly line: string;
}

export interface Explained {
  /** Differences no deliberate entry matches: each is a bug of one side (or of the normalisation). */
  readonly unexplained: readonly Difference[];
  /** Per deliberate entry (same order), the differences it matched. */
  readonly matched: readonly (readonly Difference[])[];
  /** Non-optional entries that matched nothing: the list is out of date. */
  readonly unused: readonly Deliberate[];
}

function counts(lines: readonly string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const l of lines) m.set(l, (m.get(l) ?? 0) + 1);
  return m;
}

/** The lines of `a` not matched by a line of `b` (multiset difference), sorted. */
function minus(a: readonly string[], b: readonly string[]): string[] {
  const left = counts(b);
  const out: string[] = [];
  for (const l of a) {
    const n = left.get(l) ?? 0;
    if (n > 0) left.set(l, n - 1);
    else out.push(l);
  }
  return out.sort();
}

/** Every line one side has more often than the other, section by section (sections sorted). */
export function differences(kubelet: Facts, agent: Facts): Difference[] {
  const sections = [...new Set([...Object.keys(kubelet), ...Object.keys(agent)])].sort();
  const out: Difference[] = [];
  for (const section of sections) {
    const k = kubelet[section] ?? [];
    const a = agent[section] ?? [];
    for (const line of minus(k, a)) out.push({ section, side: 'kubelet', line });
    for (const line of minus(a, k)) out.push({ section, side: 'agent', line });
  }
  return out;
}

const matches = (d: Deliberate, diff: Difference): boolean => d.section === diff.section && d.side === diff.side && new RegExp(`^(?:${d.line.source})$`, d.line.flags).test(diff.line);

/** Sorts the differences into explained (first matching entry) and unexplained. */
export function explain(diffs: readonly Difference[], deliberate: readonly Deliberate[]): Explained {
  const matched: Difference[][] = deliberate.map(() => []);
  const unexplained: Difference[] = [];
  for (const diff of diffs) {
    const i = deliberate.findIndex((d) => matches(d, diff));
    if (i < 0) unexplained.push(diff);
    else matched[i]?.push(diff);
  }
  return { unexplained, matched, unused: deliberate.filter((d, i) => d.optional !== true && (matched[i]?.length ?? 0) === 0) };
}

/** A literal or pattern and what it becomes. */
export type Replacement = readonly [string | RegExp, string];

/**
 * A function applying the replacements in order: literal strings everywhere (longest first, so
 * a root dir is replaced before the state dir that contains it), then the patterns (global).
 */
export function normaliser(replacements: readonly Replacement[]): (text: string) => string {
  const literals = replacements.filter((r): r is readonly [string, string] => typeof r[0] === 'string' && r[0] !== '').sort((x, y) => y[0].length - x[0].length);
  const patterns = replacements.filter((r): r is readonly [RegExp, string] => r[0] instanceof RegExp);
  return (text) => {
    let out = text;
    for (const [from, to] of literals) out = out.split(from).join(to);
    for (const [from, to] of patterns) out = out.replace(new RegExp(from.source, from.flags.includes('g') ? from.flags : `${from.flags}g`), to);
    return out;
  };
}

/** Names that differ in every run whatever the node: the atomic writer's timestamped dirs, the admission plugin's suffix, loop devices, the CSI plugin's hashes. */
export const RUN_NAMES: readonly Replacement[] = [
  [/\.\.\d{4}(?:_\d{2}){5}\.[A-Za-z0-9]+/, '..<ts>'],
  [/kube-api-access-[a-z0-9]{5}/, 'kube-api-access-<x>'],
  [/\/dev\/loop\d+/, '/dev/loop<n>'],
  [/csi-[0-9a-f]{64}/, 'csi-<hash>'],
  [/\b[0-9a-f]{64}\b/, '<sha256>'],
];

/** The kubelet's back-off ladder (nestedpendingoperations: 500 ms doubling up to 2 min 2 s). */
export const BACKOFF_INITIAL_MS = 500;
export const BACKOFF_MAX_MS = 122_000;

/** `500ms`, `1s`, `2m2s`: Go's time.Duration String for the ladder's values. */
export function goDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  const s = ms / 1000;
  if (s < 60) return `${s}s`;
  return `${Math.floor(s / 60)}m${s % 60}s`;
}

function goDurationMs(text: string): number | undefined {
  const m = /^(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?$/.exec(text);
  if (m === null || text === '') return undefined;
  return Number(m[1] ?? 0) * 60_000 + Number(m[2] ?? 0) * 1000 + Number(m[3] ?? 0);
}

/**
 * The kubelet's back-off windows for one operation, in order, from its log lines
 * `Operation for "{volumeName:<volume> podName:… nodeName:}" failed. No retries permitted until … (durationBeforeRetry 500ms). Error: …`.
 */
export function kubeletBackoff(log: string, volumeName: string): number[] {
  const out: number[] = [];
  for (const line of log.split('\n')) {
    if (!line.includes(`{volumeName:${volumeName} `)) continue;
    const m = /No retries permitted until .*\(durationBeforeRetry ([0-9.ms]+)\)/.exec(line);
    const ms = m === null ? undefined : goDurationMs(m[1] ?? '');
    if (ms !== undefined) out.push(ms);
  }
  return out;
}

/** One attempt of the agent's operation history (docs/api.md `operationHistory[]`). */
export interface Attempt {
  readonly startedAt: number;
  readonly durationMs: number;
}

/**
 * The agent's back-off windows, read from when its attempts started: the wait between the end of
 * one failed attempt and the start of the next, rounded down to the ladder step it is in (a
 * retry is allowed strictly after the window, at the reconciler's next pass, 100 ms later at most
 * on a quiet machine). Returns one window per attempt that was followed by another.
 */
export function agentBackoff(attempts: readonly Attempt[]): number[] {
  const out: number[] = [];
  for (let i = 0; i + 1 < attempts.length; i++) {
    const a = attempts[i];
    const b = attempts[i + 1];
    if (a === undefined || b === undefined) continue;
    const gap = b.startedAt - (a.startedAt + a.durationMs);
    let step = BACKOFF_INITIAL_MS;
    while (step * 2 <= gap && step * 2 <= BACKOFF_MAX_MS) step *= 2;
    out.push(gap < BACKOFF_INITIAL_MS ? gap : step);
  }
  return out;
}

const cell = (s: string): string => s.replace(/\|/g, '\\|');

/**
 * The comparison as a Markdown table: section, the line, and what each node has (`=` both, or
 * the side alone), with the reason of the deliberate entry that explains it.
 */
export function renderTable(kubelet: Facts, agent: Facts, deliberate: readonly Deliberate[]): string {
  const diffs = differences(kubelet, agent);
  const rows: string[] = ['| section | fact (normalised) | kubelet-0 | agent-0 | why they differ |', '|---|---|---|---|---|'];
  const sections = [...new Set([...Object.keys(kubelet), ...Object.keys(agent)])].sort();
  for (const section of sections) {
    const diffLines = new Set(diffs.filter((d) => d.section === section).map((d) => `${d.side}\u0000${d.line}`));
    const common = minus(kubelet[section] ?? [], minus(kubelet[section] ?? [], agent[section] ?? []));
    for (const line of [...new Set(common)].sort()) rows.push(`| ${section} | \`${cell(line)}\` | yes | yes | |`);
    for (const key of [...diffLines].sort()) {
      const [side, line] = key.split('\u0000') as [Side, string];
      const why = deliberate.find((d) => matches(d, { section, side, line }))?.reason ?? '**not explained**';
      rows.push(`| ${section} | \`${cell(line)}\` | ${side === 'kubelet' ? 'yes' : '—'} | ${side === 'agent' ? 'yes' : '—'} | ${cell(why)} |`);
    }
  }
  return rows.join('\n');
}
