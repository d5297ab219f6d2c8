/**
 * A real Prometheus for tests and benchmarks: Debian's `prometheus` binary (or
 * `VOLUMESCOPE_PROMETHEUS_BIN`) with its own configuration and data directory in a temporary
 * directory, listening on a free loopback port. Targets are static, each with its own
 * `__metrics_path__` and labels, so one HTTP server can stand for thousands of agents (one path
 * per node). Readiness is polled through Prometheus's API (never slept for).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { ManagedProcess, childEnv, freePort, waitUntil } from '../../../../scripts/demo/process.ts';

/** The Prometheus binary: `VOLUMESCOPE_PROMETHEUS_BIN`, else Debian's package. */
export function prometheusBinary(env: NodeJS.ProcessEnv = process.env): string {
  return env['VOLUMESCOPE_PROMETHEUS_BIN'] ?? '/usr/bin/prometheus';
}

/** One scrape target. */
export interface ScrapeTarget {
  /** `host:port`. */
  readonly address: string;
  /** The path scraped (default `/metrics`). */
  readonly metricsPath?: string;
  /** Labels Prometheus adds to every series of the target (e.g. `node`). */
  readonly labels?: Readonly<Record<string, string>>;
}

export interface PrometheusServerOptions {
  readonly targets: readonly ScrapeTarget[];
  /** Seconds between scrapes of each target (Prometheus spreads the targets over it). */
  readonly scrapeIntervalSeconds: number;
  /** A file with the bearer token sent with every scrape (agents authenticate `/metrics`). */
  readonly bearerTokenFile?: string;
}

/** The active targets' health as Prometheus reports it. */
export interface TargetHealth {
  readonly up: number;
  readonly total: number;
  /** The last scrape error of one target that is not up, if any. */
  readonly lastError: string | null;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export class PrometheusServer {
  private constructor(
    /** `http://127.0.0.1:<port>`. */
    readonly url: string,
    readonly process: ManagedProcess,
    private readonly dir: string,
  ) {}

  /** Writes the configuration and starts Prometheus; resolves once it answers `/-/ready`. */
  static async start(options: PrometheusServerOptions): Promise<PrometheusServer> {
    const dir = await mkdtemp(join(tmpdir(), 'volumescope-prometheus-'));
    const interval = `${options.scrapeIntervalSeconds}s`;
    const config = {
      global: { scrape_interval: interval, scrape_timeout: `${Math.max(1, Math.min(10, options.scrapeIntervalSeconds))}s`, evaluation_interval: '1m' },
      scrape_configs: [
        {
          job_name: 'volumescope-agent',
          ...(options.bearerTokenFile === undefined ? {} : { authorization: { type: 'Bearer', credentials_file: options.bearerTokenFile } }),
          static_configs: options.targets.map((t) => ({ targets: [t.address], labels: { ...(t.metricsPath === undefined ? {} : { __metrics_path__: t.metricsPath }), ...t.labels } })),
        },
      ],
    };
    const configFile = join(dir, 'prometheus.yml');
    await writeFile(configFile, stringify(config));
    const port = await freePort();
    const process = ManagedProcess.start({
      name: 'prometheus',
      command: prometheusBinary(),
      args: [`--config.file=${configFile}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
      cwd: dir,
      env: childEnv(),
      logFile: join(dir, 'prometheus.log'),
    });
    const server = new PrometheusServer(`http://127.0.0.1:${port}`, process, dir);
    try {
      await waitUntil('Prometheus is ready', async () => (await fetch(`${server.url}/-/ready`, { signal: AbortSignal.timeout(2000) })).ok, { deadlineMs: 60_000, process, intervalMs: 100 });
    } catch (err) {
      await server.stop();
      throw err;
    }
    return server;
  }

  /** How many active targets are up (`GET /api/v1/targets?state=active`). */
  async targetHealth(): Promise<TargetHealth> {
    const res = await fetch(`${this.url}/api/v1/targets?state=active`, { signal: AbortSignal.timeout(10_000) });
    const body: unknown = await res.json();
    const data = isRecord(body) && isRecord(body['data']) ? body['data'] : {};
    const targets = Array.isArray(data['activeTargets']) ? (data['activeTargets'] as unknown[]).filter(isRecord) : [];
    const down = targets.find((t) => t['health'] !== 'up');
    return {
      up: targets.filter((t) => t['health'] === 'up').length,
      total: targets.length,
      lastError: down === undefined || typeof down['lastError'] !== 'string' || down['lastError'] === '' ? null : down['lastError'],
    };
  }

  /** Resolves once `count` targets are up (polled every `intervalMs`); rejects after `deadlineMs`. */
  async waitForTargetsUp(count: number, opts: { deadlineMs: number; intervalMs?: number }): Promise<void> {
    const seen: { last: TargetHealth | null } = { last: null };
    try {
      await waitUntil(
        `${count} Prometheus targets are up`,
        async () => {
          const health = await this.targetHealth();
          seen.last = health;
          return health.up >= count;
        },
        { deadlineMs: opts.deadlineMs, process: this.process, intervalMs: opts.intervalMs ?? 200 },
      );
    } catch (err) {
      const last = seen.last;
      throw new Error(`${err instanceof Error ? err.message : String(err)}${last === null ? '' : ` (up ${last.up} of ${last.total}; last error: ${last.lastError ?? 'none'})`}`, { cause: err });
    }
  }

  /** Stops Prometheus and removes its directory. */
  async stop(): Promise<void> {
    await this.process.stop(10_000);
    await rm(this.dir, { recursive: true, force: true });
  }
}
