/**
 * Every node's summary from Prometheus, for the overview at scale (`VOLUMESCOPE_PROMETHEUS_URL`):
 * two instant queries over the agents' `volumescope_summary` and `volumescope_summary_info`
 * gauges (lib/api/summary-metrics.ts) rebuild each node's `AgentSummary`, whatever the number
 * of nodes, instead of one request per agent. Server-only.
 *
 * - The queries aggregate by `node_name` (the label the agent sets), so the scrape configuration's
 *   own labels (`instance`, `job`, `node`, …) do not matter and a node scraped twice counts once.
 * - A node counts only when its series make a valid summary (`summaryFromSeries`: a count
 *   without a series is 0) and its newest sample is at most {@link MAX_SAMPLE_AGE_MS} old; the
 *   relay asks the agent itself for every other node.
 * - A read is shared: reads asked for while one runs, or within {@link PROMETHEUS_REUSE_MS} after
 *   it finished, get its result (the relays of several sessions poll at once). The data is the
 *   same for every session: counts only, no agent token is involved (docs/cluster.md).
 */
import {
  SUMMARY_FIELD_LABEL,
  SUMMARY_INFO_LABELS,
  SUMMARY_INFO_METRIC,
  SUMMARY_METRIC,
  SUMMARY_NODE_LABEL,
  summaryFromSeries,
  type AgentSummary,
  type SummaryInfoLabel,
} from '../../api/index.ts';
import { realClock } from '../../clock/clock.ts';
import { PrometheusClient, type PromSample } from './client.ts';

/** The query for every numeric field of every node. */
export const SUMMARY_VALUES_QUERY = `max by (${SUMMARY_NODE_LABEL}, ${SUMMARY_FIELD_LABEL}) (${SUMMARY_METRIC})`;
/** The query for every node's info labels, valued with the time of its newest scrape (seconds). */
export const SUMMARY_INFO_QUERY = `max by (${[SUMMARY_NODE_LABEL, ...SUMMARY_INFO_LABELS].join(', ')}) (timestamp(${SUMMARY_INFO_METRIC}))`;

/**
 * Samples older than this do not count (the node is asked directly): eight scrapes at the usual
 * 15 s interval. Prometheus itself keeps answering with a sample for 5 minutes after the last
 * scrape when a target vanishes without a staleness marker (Prometheus restarted, target removed).
 */
export const MAX_SAMPLE_AGE_MS = 120_000;
/** How long a finished read is reused. */
export const PROMETHEUS_REUSE_MS = 1_000;

/** One node's summary as Prometheus has it. */
export interface PrometheusNodeSummary {
  readonly summary: AgentSummary;
  /** When Prometheus scraped it (epoch ms, Prometheus's clock). */
  readonly sampledAt: number;
}

/** The result of one read. */
export interface PrometheusOverviewRead {
  /** The Prometheus base URL. */
  readonly url: string;
  /** When the queries were evaluated (epoch ms, Prometheus's clock). */
  readonly queriedAt: number;
  /** The nodes with a whole, recent summary, by `nodeName`. */
  readonly nodes: ReadonlyMap<string, PrometheusNodeSummary>;
}

export interface PrometheusOverviewOptions {
  readonly reuseMs?: number;
  readonly maxSampleAgeMs?: number;
  /** The dashboard server's clock (for reuse only; sample ages use Prometheus's evaluation time). */
  readonly now?: () => number;
}

/** Builds the summaries of the two queries' samples (see the module comment). */
export function summariesFromSamples(values: readonly PromSample[], info: readonly PromSample[], maxSampleAgeMs: number): Map<string, PrometheusNodeSummary> {
  const byNode = new Map<string, Map<string, number>>();
  for (const s of values) {
    const node = s.labels[SUMMARY_NODE_LABEL];
    const field = s.labels[SUMMARY_FIELD_LABEL];
    if (node === undefined || field === undefined) continue;
    let fields = byNode.get(node);
    if (fields === undefined) {
      fields = new Map();
      byNode.set(node, fields);
    }
    fields.set(field, s.value);
  }
  // The newest info series per node (two only while an agent's labels change between scrapes).
  const newest = new Map<string, PromSample>();
  for (const s of info) {
    const node = s.labels[SUMMARY_NODE_LABEL];
    if (node === undefined) continue;
    const seen = newest.get(node);
    if (seen === undefined || s.value > seen.value) newest.set(node, s);
  }
  const nodes = new Map<string, PrometheusNodeSummary>();
  for (const [node, s] of newest) {
    const sampledAt = Math.round(s.value * 1000);
    const fields = byNode.get(node);
    if (fields === undefined || s.at - sampledAt > maxSampleAgeMs) continue;
    const labels = {} as Record<SummaryInfoLabel, string>;
    for (const l of SUMMARY_INFO_LABELS) labels[l] = s.labels[l] ?? '';
    const summary = summaryFromSeries({ nodeName: node, values: fields, info: labels });
    if (summary !== null) nodes.set(node, { summary, sampledAt });
  }
  return nodes;
}

/** The shared reads of one Prometheus server; see the module comment. */
export class PrometheusOverview {
  private readonly reuseMs: number;
  private readonly maxSampleAgeMs: number;
  private readonly now: () => number;
  private running: Promise<PrometheusOverviewRead> | null = null;
  private last: { at: number; read: PrometheusOverviewRead } | null = null;

  constructor(
    readonly client: PrometheusClient,
    options: PrometheusOverviewOptions = {},
  ) {
    this.reuseMs = options.reuseMs ?? PROMETHEUS_REUSE_MS;
    this.maxSampleAgeMs = options.maxSampleAgeMs ?? MAX_SAMPLE_AGE_MS;
    this.now = options.now ?? (() => realClock.now());
  }

  /** The current read, a recent one, or a new one. Rejects with the client's `PrometheusQueryError`. */
  read(): Promise<PrometheusOverviewRead> {
    if (this.running !== null) return this.running;
    if (this.last !== null && this.now() - this.last.at < this.reuseMs) return Promise.resolve(this.last.read);
    const read = this.readNow().finally(() => {
      this.running = null;
    });
    this.running = read;
    return read;
  }

  private async readNow(): Promise<PrometheusOverviewRead> {
    const [values, info] = await Promise.all([this.client.query(SUMMARY_VALUES_QUERY), this.client.query(SUMMARY_INFO_QUERY)]);
    const queriedAt = info[0]?.at ?? values[0]?.at ?? this.now();
    const read: PrometheusOverviewRead = { url: this.client.baseUrl, queriedAt, nodes: summariesFromSamples(values, info, this.maxSampleAgeMs) };
    this.last = { at: this.now(), read };
    return read;
  }
}

interface PrometheusGlobals {
  __volumescopePrometheusOverview?: { url: string; overview: PrometheusOverview };
}

/** The environment variable with the Prometheus base URL (unset or empty: the overview asks every agent). */
export const PROMETHEUS_URL_ENV = 'VOLUMESCOPE_PROMETHEUS_URL';

/** This process's reader of `VOLUMESCOPE_PROMETHEUS_URL`, or `null` when it is not set. */
export function serverPrometheusOverview(env: NodeJS.ProcessEnv = process.env): PrometheusOverview | null {
  const url = env[PROMETHEUS_URL_ENV]?.trim() ?? '';
  if (url === '') return null;
  const g = globalThis as PrometheusGlobals;
  if (g.__volumescopePrometheusOverview?.url !== url) g.__volumescopePrometheusOverview = { url, overview: new PrometheusOverview(new PrometheusClient(url)) };
  return g.__volumescopePrometheusOverview.overview;
}
