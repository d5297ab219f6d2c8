import { describe, expect, it } from 'vitest';
import { bucketQuantile, errorCount, formatBytes, formatSeconds } from './csi-panel-view.ts';

describe('the CSI panel view', () => {
  it('estimates quantiles inside the bucket, as histogram_quantile', () => {
    // 10 calls ≤ 0.1 s, 10 in (0.1, 0.25].
    const buckets = [10, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    expect(bucketQuantile(buckets, 0.5)).toBeCloseTo(0.1);
    expect(bucketQuantile(buckets, 0.75)).toBeCloseTo(0.175);
    expect(bucketQuantile([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3], 0.99)).toBe(600);
    expect(bucketQuantile(new Array<number>(14).fill(0), 0.5)).toBeNull();
  });

  it('counts every code but OK as an error, and formats sizes and durations', () => {
    expect(errorCount({ codes: { OK: 5, DeadlineExceeded: 2, 'unknown-non-grpc': 1 } })).toBe(3);
    expect([formatBytes(null), formatBytes(512), formatBytes(64 * 2 ** 20), formatBytes(1.5 * 2 ** 30)]).toEqual(['—', '512 B', '64.0 MiB', '1.5 GiB']);
    expect([formatSeconds(0.012), formatSeconds(1.25), formatSeconds(null)]).toEqual(['12 ms', '1.25 s', '—']);
  });
});
