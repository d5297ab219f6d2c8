/**
 * What the CSI driver panel shows of `csiPanel[]`: per method the error count and latency
 * quantiles estimated from the histogram buckets (as Prometheus' `histogram_quantile`: linear
 * within the bucket), and byte sizes for the volume stats. Pure and client-safe.
 */
import { CSI_OPERATION_BUCKETS_SECONDS, type CsiMethodStats } from '../api/index.ts';

/** The `q` quantile (0..1) in seconds from non-cumulative bucket counts; null without calls. Above the last bucket: its bound. */
export function bucketQuantile(buckets: readonly number[], q: number): number | null {
  const total = buckets.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = q * total;
  let seen = 0;
  for (let i = 0; i < buckets.length; i++) {
    const count = buckets[i] ?? 0;
    if (seen + count >= rank && count > 0) {
      const upper = CSI_OPERATION_BUCKETS_SECONDS[i];
      if (upper === undefined) return CSI_OPERATION_BUCKETS_SECONDS.at(-1) ?? null;
      const lower = i === 0 ? 0 : (CSI_OPERATION_BUCKETS_SECONDS[i - 1] ?? 0);
      return lower + (upper - lower) * ((rank - seen) / count);
    }
    seen += count;
  }
  return CSI_OPERATION_BUCKETS_SECONDS.at(-1) ?? null;
}

/** Calls that did not end OK. */
export function errorCount(m: Pick<CsiMethodStats, 'codes'>): number {
  return Object.entries(m.codes).reduce((n, [code, count]) => (code === 'OK' ? n : n + count), 0);
}

/** `1.5 GiB`-style size; `—` for null. */
export function formatBytes(bytes: number | null): string {
  if (bytes === null) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 ? String(v) : v.toFixed(v >= 100 ? 0 : 1)} ${units[u] ?? 'B'}`;
}

/** `12 ms` / `1.25 s`. */
export function formatSeconds(seconds: number | null): string {
  if (seconds === null) return '—';
  return seconds < 1 ? `${Math.round(seconds * 1000)} ms` : `${seconds.toFixed(2)} s`;
}

/** The bucket labels: `≤0.1s`, …, `>600s`. */
export const BUCKET_LABELS: readonly string[] = [...CSI_OPERATION_BUCKETS_SECONDS.map((le) => `≤${le}s`), `>${CSI_OPERATION_BUCKETS_SECONDS.at(-1) ?? 600}s`];
