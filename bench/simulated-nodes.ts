/**
 * Thousands of simulated agents behind one HTTP server on one loopback port, for
 * `npm run bench:overview`: node `<name>` answers under `/nodes/<name>/`, so its agent URL is
 * `http://127.0.0.1:<port>/nodes/<name>` and Prometheus scrapes `/nodes/<name>/metrics`.
 *
 * - `GET /nodes/<name>/api/v1/summary`: the node's summary (the body an agent serves);
 * - `GET /nodes/<name>/metrics`: the summary as the agent's `volumescope_summary` and
 *   `volumescope_summary_info` series (lib/api/summary-metrics.ts), in the text format.
 *
 * Every request needs the bearer token. The summaries are fixed per node (counts vary with the
 * node's index) and rendered once, so the server's own cost per request is a lookup and a write.
 */
import { createServer, type Server } from 'node:http';
import { SUMMARY_FIELD_LABEL, SUMMARY_INFO_METRIC, SUMMARY_METRIC, SUMMARY_NODE_LABEL, summarySeries, type AgentSummary } from '../lib/api/index.ts';

/** The summary of simulated node `index` (named `name`), at `now`. */
export function simulatedSummary(name: string, index: number, now: number): AgentSummary {
  const pods = 10 + (index % 30);
  const inBackoff = index % 97 === 0 ? 1 : 0;
  return {
    nodeName: name,
    seq: 1000 + index,
    statesSynced: true,
    agent: { version: '0.1.0', startedAt: now - 3_600_000 },
    mode: index % 50 === 0 ? 'observe' : 'managed',
    mounter: { kind: 'linux', privileged: true },
    counts: { pods, desiredVolumes: pods * 2, mounted: pods * 2 - inBackoff, uncertain: 0, pending: inBackoff, inBackoff, running: 0, retrying: 0, podErrors: 0, sourceErrors: 0, foundDetached: 0 },
    reconstruction: { state: 'done', startedAt: now - 3_590_000, finishedAt: now - 3_580_000, outcomes: { reconstructed: 0, 'confirmed-mounted': pods, 'cleaned-up': 0, failed: 0 } },
    drivers: { total: 2, registered: 2, failing: 0 },
    ...(index % 50 === 0 ? { observe: { orphans: index % 3, attachErrors: 0, outstanding: inBackoff, failing: 0 } } : {}),
  };
}

/** Label value escaping of the text exposition format. */
function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** The node's `/metrics` text: the two summary gauges, as the agent renders them. */
export function summaryMetricsText(summary: AgentSummary): string {
  const s = summarySeries(summary);
  const node = escapeLabel(s.nodeName);
  const lines = [`# HELP ${SUMMARY_METRIC} The node's summary`, `# TYPE ${SUMMARY_METRIC} gauge`];
  for (const [field, value] of s.values) lines.push(`${SUMMARY_METRIC}{${SUMMARY_NODE_LABEL}="${node}",${SUMMARY_FIELD_LABEL}="${escapeLabel(field)}"} ${value}`);
  lines.push(`# HELP ${SUMMARY_INFO_METRIC} The node's summary fields that are not numbers`, `# TYPE ${SUMMARY_INFO_METRIC} gauge`);
  const info = Object.entries(s.info).map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',');
  lines.push(`${SUMMARY_INFO_METRIC}{${SUMMARY_NODE_LABEL}="${node}",${info}} 1`);
  return `${lines.join('\n')}\n`;
}

export interface SimulatedNodes {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  /** The node names, in order. */
  readonly names: readonly string[];
  /** The agent URL of a node. */
  agentUrl(name: string): string;
  /** Requests answered so far, by kind. */
  requests(): { summary: number; metrics: number; other: number };
  close(): Promise<void>;
}

/** Starts the server for `count` nodes named `<prefix>-00000` …. */
export async function startSimulatedNodes(opts: { count: number; token: string; prefix?: string; now: number }): Promise<SimulatedNodes> {
  const prefix = opts.prefix ?? 'sim';
  const names: string[] = [];
  const summaries = new Map<string, Buffer>();
  const metrics = new Map<string, Buffer>();
  for (let i = 0; i < opts.count; i++) {
    const name = `${prefix}-${String(i).padStart(5, '0')}`;
    names.push(name);
    const summary = simulatedSummary(name, i, opts.now);
    summaries.set(name, Buffer.from(JSON.stringify(summary)));
    metrics.set(name, Buffer.from(summaryMetricsText(summary)));
  }
  const counts = { summary: 0, metrics: 0, other: 0 };
  const expected = `Bearer ${opts.token}`;
  const server: Server = createServer((req, res) => {
    if (req.headers.authorization !== expected) {
      res.writeHead(401).end();
      return;
    }
    const match = /^\/nodes\/([^/]+)\/(metrics|api\/v1\/summary)$/.exec(req.url ?? '');
    const body = match === null ? undefined : (match[2] === 'metrics' ? metrics : summaries).get(match[1] ?? '');
    if (match === null || body === undefined) {
      counts.other++;
      res.writeHead(404).end();
      return;
    }
    if (match[2] === 'metrics') {
      counts.metrics++;
      res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8', 'Content-Length': body.length });
    } else {
      counts.summary++;
      res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': body.length });
    }
    res.end(body);
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => {
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    port,
    names,
    agentUrl: (name) => `${url}/nodes/${name}`,
    requests: () => ({ ...counts }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}
