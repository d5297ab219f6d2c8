/**
 * The node summary (`GET /api/v1/summary`, summary.ts) as Prometheus series, so an overview of
 * thousands of nodes reads every node's counts from Prometheus with a few queries instead of
 * asking each agent (the dashboard's `VOLUMESCOPE_PROMETHEUS_URL`, docs/cluster.md):
 *
 * - `volumescope_summary{node_name,field}`: one series per numeric field of the summary, `field`
 *   its dotted JSON path (`counts.pods`, `reconstruction.outcomes.failed`, `observe.orphans`, …);
 *   booleans are 0/1, times epoch milliseconds. No series for a `null` time, for the absent
 *   `observe` section, and for a count (`counts.*`, `reconstruction.outcomes.*`, `drivers.*`,
 *   `observe.*`) while it is 0: most counts of a healthy node are 0, and leaving them out halves
 *   what Prometheus stores and what the overview reads for thousands of nodes. A series that
 *   leaves a scrape gets a staleness marker, so a query never sees a count that has dropped to
 *   0; `seq`, `statesSynced`, `agent.startedAt` and `mounter.privileged` are always there;
 * - `volumescope_summary_info{node_name,mode,agent_version,mounter_kind,reconstruction_state}`:
 *   always 1, the summary's fields that are not numbers.
 *
 * `node_name` is the summary's `nodeName` (the agent sets it, so it survives any scrape
 * configuration; Prometheus's own `node`/`instance` labels are not used). {@link summaryFromSeries}
 * is the exact inverse of {@link summarySeries}: the dashboard rebuilds the same `AgentSummary`.
 * Depends on zod and the summary schema only, like the rest of `lib/api/`.
 */
import { AgentSummarySchema, type AgentSummary } from './summary.ts';

/** The gauge with one series per numeric summary field. */
export const SUMMARY_METRIC = 'volumescope_summary';
/** The gauge (always 1) whose labels carry the summary's non-numeric fields. */
export const SUMMARY_INFO_METRIC = 'volumescope_summary_info';
/** The label both gauges carry with the summary's `nodeName`. */
export const SUMMARY_NODE_LABEL = 'node_name';
/** The label of {@link SUMMARY_METRIC} naming the field. */
export const SUMMARY_FIELD_LABEL = 'field';
/** The labels of {@link SUMMARY_INFO_METRIC} besides {@link SUMMARY_NODE_LABEL}. */
export const SUMMARY_INFO_LABELS = ['mode', 'agent_version', 'mounter_kind', 'reconstruction_state'] as const;
/** A label of {@link SUMMARY_INFO_METRIC} besides the node's. */
export type SummaryInfoLabel = (typeof SUMMARY_INFO_LABELS)[number];

const COUNT_FIELDS = ['pods', 'desiredVolumes', 'mounted', 'uncertain', 'pending', 'inBackoff', 'running', 'retrying', 'podErrors', 'sourceErrors', 'foundDetached'] as const;
const OUTCOME_FIELDS = ['reconstructed', 'confirmed-mounted', 'cleaned-up', 'failed'] as const;
const DRIVER_FIELDS = ['total', 'registered', 'failing'] as const;
const OBSERVE_FIELDS = ['orphans', 'attachErrors', 'outstanding', 'failing'] as const;

/** Every `field` label value {@link SUMMARY_METRIC} can carry. */
export const SUMMARY_FIELDS: readonly string[] = [
  'seq',
  'statesSynced',
  'agent.startedAt',
  'mounter.privileged',
  ...COUNT_FIELDS.map((f) => `counts.${f}`),
  'reconstruction.startedAt',
  'reconstruction.finishedAt',
  ...OUTCOME_FIELDS.map((f) => `reconstruction.outcomes.${f}`),
  ...DRIVER_FIELDS.map((f) => `drivers.${f}`),
  ...OBSERVE_FIELDS.map((f) => `observe.${f}`),
];

/** What the agent exports for one summary: the numeric series by field, and the info labels. */
export interface SummarySeries {
  readonly nodeName: string;
  readonly values: ReadonlyMap<string, number>;
  readonly info: Readonly<Record<SummaryInfoLabel, string>>;
}

/** The series of one summary (see the module comment). */
export function summarySeries(s: AgentSummary): SummarySeries {
  const values = new Map<string, number>([
    ['seq', s.seq],
    ['statesSynced', s.statesSynced ? 1 : 0],
    ['agent.startedAt', s.agent.startedAt],
    ['mounter.privileged', s.mounter.privileged ? 1 : 0],
  ]);
  const count = (field: string, value: number | undefined): void => {
    if (value !== undefined && value !== 0) values.set(field, value);
  };
  for (const f of COUNT_FIELDS) count(`counts.${f}`, s.counts[f]);
  if (s.reconstruction.startedAt !== null) values.set('reconstruction.startedAt', s.reconstruction.startedAt);
  if (s.reconstruction.finishedAt !== null) values.set('reconstruction.finishedAt', s.reconstruction.finishedAt);
  for (const f of OUTCOME_FIELDS) count(`reconstruction.outcomes.${f}`, s.reconstruction.outcomes[f]);
  for (const f of DRIVER_FIELDS) count(`drivers.${f}`, s.drivers[f]);
  if (s.observe !== undefined) for (const f of OBSERVE_FIELDS) count(`observe.${f}`, s.observe[f]);
  return {
    nodeName: s.nodeName,
    values,
    info: { mode: s.mode, agent_version: s.agent.version, mounter_kind: s.mounter.kind, reconstruction_state: s.reconstruction.state },
  };
}

/**
 * The summary the series describe (a count without a series is 0), or `null` when they do not
 * make a valid one (an always-present field missing, a value that is not a count, or info labels
 * of another version).
 */
export function summaryFromSeries(series: SummarySeries): AgentSummary | null {
  const v = series.values;
  const numbers = <K extends string>(prefix: string, fields: readonly K[]): Record<K, number> => {
    const out = {} as Record<K, number>;
    for (const f of fields) out[f] = v.get(`${prefix}${f}`) ?? 0;
    return out;
  };
  const bool = (field: string): boolean | undefined => {
    const n = v.get(field);
    return n === undefined ? undefined : n !== 0;
  };
  const observe = numbers('observe.', OBSERVE_FIELDS);
  const candidate = {
    nodeName: series.nodeName,
    seq: v.get('seq'),
    statesSynced: bool('statesSynced'),
    agent: { version: series.info.agent_version, startedAt: v.get('agent.startedAt') },
    mode: series.info.mode,
    mounter: { kind: series.info.mounter_kind, privileged: bool('mounter.privileged') },
    counts: numbers('counts.', COUNT_FIELDS),
    reconstruction: {
      state: series.info.reconstruction_state,
      startedAt: v.get('reconstruction.startedAt') ?? null,
      finishedAt: v.get('reconstruction.finishedAt') ?? null,
      outcomes: numbers('reconstruction.outcomes.', OUTCOME_FIELDS),
    },
    drivers: numbers('drivers.', DRIVER_FIELDS),
    ...(series.info.mode === 'observe' ? { observe } : {}),
  };
  const parsed = AgentSummarySchema.safeParse(candidate);
  return parsed.success ? parsed.data : null;
}
