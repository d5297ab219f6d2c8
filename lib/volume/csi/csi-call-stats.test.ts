import { describe, expect, it } from 'vitest';
import { CSI_OPERATION_BUCKETS_SECONDS, CsiCallStats, PROBES_PER_DRIVER, RECENT_CALLS_PER_DRIVER } from './csi-call-stats.ts';
import type { CsiCallRecord } from './csi-driver-registry.ts';

function call(over: Partial<CsiCallRecord>): CsiCallRecord {
  return {
    driver: 'd',
    method: 'NodeStageVolume',
    fullMethod: '/csi.v1.Node/NodeStageVolume',
    grpcStatusCode: 'OK',
    startedAt: 1_000,
    durationMs: 50,
    redactedRequest: () => ({ volume_id: over.volumeId ?? 'v1' }),
    volumeId: 'v1',
    response: {},
    error: null,
    ...over,
  };
}

describe('CsiCallStats', () => {
  it('counts calls per method and status code in the kubelet buckets, with one slot above 600 s', () => {
    const stats = new CsiCallStats();
    stats.record(call({ durationMs: 100 }));
    stats.record(call({ durationMs: 101, grpcStatusCode: 'DeadlineExceeded', error: 'rpc error: code = DeadlineExceeded desc = context deadline exceeded' }));
    stats.record(call({ durationMs: 700_000, grpcStatusCode: 'unknown-non-grpc', error: 'x' }));

    const [driver] = stats.view();
    const method = driver?.methods[0];
    expect(method).toMatchObject({ method: 'NodeStageVolume', calls: 3, codes: { OK: 1, DeadlineExceeded: 1, 'unknown-non-grpc': 1 }, maxMs: 700_000, totalMs: 700_201 });
    expect(method?.buckets).toHaveLength(CSI_OPERATION_BUCKETS_SECONDS.length + 1);
    expect(method?.buckets[0]).toBe(1);
    expect(method?.buckets[1]).toBe(1);
    expect(method?.buckets[CSI_OPERATION_BUCKETS_SECONDS.length]).toBe(1);
  });

  it('keeps the latest calls and probes bounded, and lists successful NodeGetVolumeStats and probes only in their places', () => {
    const stats = new CsiCallStats();
    for (let i = 0; i < RECENT_CALLS_PER_DRIVER + 10; i++) stats.record(call({ startedAt: i, volumeId: `v${i}` }));
    for (let i = 0; i < PROBES_PER_DRIVER + 5; i++) stats.record(call({ method: 'Probe', fullMethod: '/csi.v1.Identity/Probe', startedAt: i, response: { ready: { value: i % 2 === 0 } } }));
    stats.record(call({ method: 'NodeGetVolumeStats', volumeId: 'ok' }));
    stats.record(call({ method: 'NodeGetVolumeStats', grpcStatusCode: 'Internal', volumeId: 'bad', error: 'rpc error: code = Internal desc = down' }));

    const [driver] = stats.view();
    expect(driver?.recentCalls).toHaveLength(RECENT_CALLS_PER_DRIVER);
    expect(driver?.recentCalls[0]?.volumeId).toBe('v11');
    expect(driver?.recentCalls.at(-1)).toMatchObject({ method: 'NodeGetVolumeStats', volumeId: 'bad', code: 'Internal' });
    expect(driver?.recentCalls.some((c) => c.volumeId === 'ok')).toBe(false);
    expect(driver?.probes).toHaveLength(PROBES_PER_DRIVER);
    expect(driver?.probes.at(-1)).toMatchObject({ method: 'Probe', ready: true, at: PROBES_PER_DRIVER + 4 });
  });
});
