/**
 * A small client of Prometheus's HTTP API: instant queries (`GET /api/v1/query`), each within a
 * timeout, answers checked by hand (a vector of thousands of series is parsed once, without a
 * schema pass per sample). Every failure is a {@link PrometheusQueryError} naming the URL asked
 * and what went wrong. Server-only (undici).
 */
import { request } from 'undici';
import { describeFetchError } from '../fetch-error.ts';

/** The default time one query may take (headers and body). */
export const PROMETHEUS_QUERY_TIMEOUT_MS = 5_000;

/** One sample of an instant vector: its labels (with `__name__` unless aggregated away) and value. */
export interface PromSample {
  readonly labels: Readonly<Record<string, string>>;
  /** The sample's value (`NaN`, `+Inf` as Prometheus writes them). */
  readonly value: number;
  /** The evaluation time of the query, epoch ms (Prometheus answers in seconds). */
  readonly at: number;
}

/** A query that failed: Prometheus unreachable, slow, an error answer, or an answer of another shape. */
export class PrometheusQueryError extends Error {
  override readonly name = 'PrometheusQueryError';
  constructor(
    /** The URL asked (without the query, which is in the message). */
    readonly url: string,
    message: string,
  ) {
    super(message);
  }
}

/** True for a {@link PrometheusQueryError}. */
export function isPrometheusQueryError(err: unknown): err is PrometheusQueryError {
  return err instanceof PrometheusQueryError;
}

export interface PrometheusClientOptions {
  /** Per query (headers and body); default {@link PROMETHEUS_QUERY_TIMEOUT_MS}. */
  readonly timeoutMs?: number;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The timeout signal's abort, and undici's HeadersTimeoutError and BodyTimeoutError. */
function timeoutReason(err: Error): string | null {
  return err.name === 'AbortError' || err.name.endsWith('TimeoutError') ? 'no answer in time' : null;
}

/** The instant-query client of one Prometheus server. */
export class PrometheusClient {
  /** The base URL without a trailing slash (a path prefix such as `/prometheus` is kept). */
  readonly baseUrl: string;
  private readonly timeoutMs: number;

  constructor(baseUrl: string, options: PrometheusClientOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? PROMETHEUS_QUERY_TIMEOUT_MS;
  }

  /** The samples of the instant vector `expr` evaluates to now (Prometheus's clock). */
  async query(expr: string): Promise<PromSample[]> {
    const url = `${this.baseUrl}/api/v1/query`;
    const fail = (why: string): PrometheusQueryError => new PrometheusQueryError(url, `Prometheus at ${url} ${why} (query ${expr})`);
    const signal = AbortSignal.timeout(this.timeoutMs);
    let text: string;
    let status: number;
    try {
      const res = await request(`${url}?${new URLSearchParams({ query: expr }).toString()}`, {
        method: 'GET',
        headers: { accept: 'application/json' },
        signal,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
      });
      status = res.statusCode;
      text = await res.body.text();
    } catch (err) {
      throw fail(`could not be queried: ${describeFetchError(err, timeoutReason)}`);
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw fail(`answered HTTP ${status} that is not JSON`);
    }
    if (!isRecord(body)) throw fail(`answered HTTP ${status} with an unexpected body`);
    if (body['status'] !== 'success') {
      const type = typeof body['errorType'] === 'string' ? body['errorType'] : 'error';
      const said = typeof body['error'] === 'string' ? `: ${type}: ${body['error']}` : '';
      throw fail(`refused the query with HTTP ${status}${said}`);
    }
    const data = body['data'];
    if (!isRecord(data) || data['resultType'] !== 'vector' || !Array.isArray(data['result'])) throw fail('answered something other than an instant vector');
    const samples: PromSample[] = [];
    for (const item of data['result'] as unknown[]) {
      if (!isRecord(item) || !isRecord(item['metric']) || !Array.isArray(item['value'])) throw fail('answered a sample of an unexpected shape');
      const [t, v] = item['value'] as unknown[];
      if (typeof t !== 'number' || typeof v !== 'string') throw fail('answered a sample of an unexpected shape');
      samples.push({ labels: item['metric'] as Record<string, string>, value: Number(v), at: Math.round(t * 1000) });
    }
    return samples;
  }
}
