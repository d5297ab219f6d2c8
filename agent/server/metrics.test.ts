import { afterEach, describe, expect, it } from 'vitest';
import type { OperationRecord, UncertainEntry, VolumeManager } from '../../lib/volumemanager/index.ts';
import { podUID, uniqueVolumeName } from '../../lib/volume/types.ts';
import type { VolumeStats } from '../../lib/api/snapshot.ts';
import { summaryFromSeries, type SummaryInfoLabel } from '../../lib/api/summary-metrics.ts';
import { createAgentMetrics } from './metrics.ts';
import { mountPod1, startServer, type ServerFixture } from './testing/server-fixture.ts';

/** The value of one sample line `name{labels} value` (labels in prom-client's order), or null. */
function sample(text: string, line: string): number | null {
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? null : Number(found.slice(line.length + 1));
}

describe('GET /metrics', () => {
  let fx: ServerFixture | undefined;
  afterEach(async () => {
    await fx?.close();
    fx = undefined;
  });

  it('needs the token', async () => {
    fx = await startServer();

    const res = await fx.client.get('/metrics', { token: null });

    expect(res.status).toBe(401);
  });

  it('exports every volume manager metric with its labels after one mount', async () => {
    // Arrange
    fx = await startServer();
    await mountPod1(fx);

    // Act
    const res = await fx.client.get('/metrics');

    // Assert
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = res.text;
    expect(sample(text, 'volume_manager_total_volumes{plugin_name="fake-plugin",state="actual_state_of_world"}')).toBe(1);
    expect(sample(text, 'volume_manager_total_volumes{plugin_name="fake-plugin",state="desired_state_of_world"}')).toBe(1);
    for (const operation of ['volume_attach', 'volume_mount']) {
      expect(
        sample(
          text,
          `storage_operation_duration_seconds_count{volume_plugin="fake-plugin",operation_name="${operation}",status="success",migrated="false"}`,
        ),
      ).toBe(1);
    }
    expect(text).toContain(
      'storage_operation_duration_seconds_bucket{le="0.1",volume_plugin="fake-plugin",operation_name="volume_mount",status="success",migrated="false"}',
    );
    expect(text).toContain('storage_operation_duration_seconds_bucket{le="600",');
    expect(sample(text, 'volume_operation_total_seconds_count{plugin_name="fake-plugin",operation_name="overall_volume_mount"}')).toBe(1);
    for (const counter of [
      'reconstruct_volume_operations_total',
      'reconstruct_volume_operations_errors_total',
      'force_cleaned_failed_volume_operations_total',
      'force_cleaned_failed_volume_operation_errors_total',
    ]) {
      expect(sample(text, counter)).toBe(0);
    }
    expect(text).toContain('# TYPE process_cpu_user_seconds_total counter');
    expect(text).toContain('# TYPE nodejs_heap_size_used_bytes gauge');
  });

  it('exports the summary as volumescope_summary{node_name,field} and _info, the same summary GET /api/v1/summary answers', async () => {
    // Arrange
    fx = await startServer();
    await mountPod1(fx);

    // Act: the summary first, so both read the same published snapshot.
    const summary: unknown = JSON.parse((await fx.client.get('/api/v1/summary')).text);
    const text = (await fx.client.get('/metrics')).text;

    // Assert
    const labels = (line: string): Record<string, string> => Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1] ?? '', m[2] ?? '']));
    const values = new Map<string, number>();
    const nodes = new Set<string>();
    for (const line of text.split('\n').filter((l) => l.startsWith('volumescope_summary{'))) {
      const l = labels(line);
      nodes.add(l['node_name'] ?? '');
      values.set(l['field'] ?? '', Number(line.slice(line.lastIndexOf(' ') + 1)));
    }
    const infoLines = text.split('\n').filter((l) => l.startsWith('volumescope_summary_info{'));
    expect(infoLines).toHaveLength(1);
    expect(infoLines[0]?.endsWith(' 1')).toBe(true);
    const info = labels(infoLines[0] ?? '') as Record<SummaryInfoLabel | 'node_name', string>;
    expect([...nodes]).toEqual([info.node_name]);
    expect(values.get('counts.mounted')).toBe(1);
    expect(summaryFromSeries({ nodeName: info.node_name, values, info })).toEqual(summary);
  });

  it('counts the actual state by Mounted pairs only, and drops series that went away', async () => {
    fx = await startServer();
    await mountPod1(fx);
    const { harness } = fx;

    harness.pods.delete('pod1uid');
    await harness.until(() => harness.asw.getMountedVolumes().length === 0 && harness.dsw.countVolumesToMount() === 0);
    const text = (await fx.client.get('/metrics')).text;

    expect(text).not.toMatch(/^volume_manager_total_volumes\{/m);
  });
});

describe('createAgentMetrics', () => {
  const record = (over: Partial<OperationRecord>): OperationRecord => ({
    operationName: 'volume_mount',
    volume: '',
    pod: '',
    node: '',
    plugin: 'kubernetes.io/csi:csi-loop.volumescope.dev',
    migrated: false,
    generatedAt: 1_000,
    startedAt: 1_100,
    finishedAt: 3_600,
    outcome: 'success',
    error: null,
    ...over,
  });

  it.each([
    {
      name: 'a success is observed from generation to finish',
      record: record({}),
      line: 'storage_operation_duration_seconds_sum{volume_plugin="kubernetes.io/csi:csi-loop.volumescope.dev",operation_name="volume_mount",status="success",migrated="false"}',
      value: 2.6,
    },
    {
      name: 'a failure has status fail-unknown',
      record: record({ outcome: 'failure', error: 'boom', operationName: 'unmount_device' }),
      line: 'storage_operation_duration_seconds_count{volume_plugin="kubernetes.io/csi:csi-loop.volumescope.dev",operation_name="unmount_device",status="fail-unknown",migrated="false"}',
      value: 1,
    },
    {
      name: 'a migrated operation has migrated="true"',
      record: record({ migrated: true }),
      line: 'storage_operation_duration_seconds_count{volume_plugin="kubernetes.io/csi:csi-loop.volumescope.dev",operation_name="volume_mount",status="success",migrated="true"}',
      value: 1,
    },
    {
      name: 'an operation without a plugin counts under N/A',
      record: record({ plugin: '' }),
      line: 'storage_operation_duration_seconds_count{volume_plugin="N/A",operation_name="volume_mount",status="success",migrated="false"}',
      value: 1,
    },
  ])('onOperationRecord: $name', async ({ record: r, line, value }) => {
    const metrics = createAgentMetrics();
    const onRecord = metrics.onOperationRecord; // detached, as the wiring passes it

    onRecord(r);

    expect(sample(await metrics.registry.metrics(), line)).toBeCloseTo(value, 6);
  });

  it.each([
    { name: 'a successful reconstruction counts the total only', call: 'reconstruct', failed: false, totals: [1, 0, 0, 0] },
    { name: 'a failed reconstruction counts the total and the error', call: 'reconstruct', failed: true, totals: [1, 1, 0, 0] },
    { name: 'a started force cleanup counts the total only', call: 'forceClean', failed: false, totals: [0, 0, 1, 0] },
    { name: 'a force cleanup that failed to start counts both', call: 'forceClean', failed: true, totals: [0, 0, 1, 1] },
  ])('reconciler metrics: $name', async ({ call, failed, totals }) => {
    const metrics = createAgentMetrics();

    if (call === 'reconstruct') metrics.reconstructVolumeOperation(failed);
    else metrics.forceCleanedFailedVolumeOperation(failed);

    const text = await metrics.registry.metrics();
    expect(
      [
        'reconstruct_volume_operations_total',
        'reconstruct_volume_operations_errors_total',
        'force_cleaned_failed_volume_operations_total',
        'force_cleaned_failed_volume_operation_errors_total',
      ].map((name) => sample(text, name)),
    ).toEqual(totals);
  });

  it('exports volumescope_volume_uncertain from the uncertain entries, pod_uid empty for attach and device', async () => {
    const metrics = createAgentMetrics();
    const entries: UncertainEntry[] = [
      { volumeName: uniqueVolumeName('kubernetes.io/csi/d^v1'), kind: 'attach', podUID: null },
      { volumeName: uniqueVolumeName('kubernetes.io/csi/d^v1'), kind: 'mount', podUID: podUID('uid-1') },
    ];
    // Only what the gauges of the volume manager read.
    const vm = { getUncertainVolumes: () => entries, getVolumeCount: () => new Map(), getPendingOperations: () => [] };
    metrics.bindVolumeManager(vm as unknown as VolumeManager);

    const text = await metrics.registry.metrics();

    expect(text.split('\n').filter((l) => l.startsWith('volumescope_volume_uncertain{')).sort()).toEqual([
      'volumescope_volume_uncertain{volume="kubernetes.io/csi/d^v1",pod_uid="",kind="attach"} 1',
      'volumescope_volume_uncertain{volume="kubernetes.io/csi/d^v1",pod_uid="uid-1",kind="mount"} 1',
    ]);
  });

  it('keeps series of two instances apart (one registry each)', async () => {
    const a = createAgentMetrics();
    const b = createAgentMetrics();

    a.observeOverallMount('kubernetes.io/csi:x', 1.5);

    const line = 'volume_operation_total_seconds_count{plugin_name="kubernetes.io/csi:x",operation_name="overall_volume_mount"}';
    expect(sample(await a.registry.metrics(), line)).toBe(1);
    expect(sample(await b.registry.metrics(), line)).toBeNull();
  });
});

describe('mount health metrics', () => {
  it('counts mounts by state and lists each unhealthy one', async () => {
    // Arrange
    const metrics = createAgentMetrics();
    const entry = { podUid: 'u1', volume: 'v1', kind: 'pod' as const, error: null, checkedAt: 1, since: 1 };
    metrics.bindMountHealth(() => [
      { ...entry, path: '/r/a', state: 'healthy' },
      { ...entry, path: '/r/b', state: 'healthy' },
      { ...entry, path: '/r/c', state: 'hung', error: 'no answer' },
    ]);

    // Act
    const text = await metrics.registry.metrics();

    // Assert
    expect(sample(text, 'volumescope_mount_health_mounts{kind="pod",state="healthy"}')).toBe(2);
    expect(sample(text, 'volumescope_mount_health_mounts{kind="pod",state="hung"}')).toBe(1);
    expect(sample(text, 'volumescope_mount_unhealthy{kind="pod",state="hung",volume="v1",pod_uid="u1",path="/r/c"}')).toBe(1);
    expect(text).not.toContain('path="/r/a"');
  });
});

describe('kubelet_volume_stats_*', () => {
  const entry = (podUid: string, claim: { namespace: string; name: string } | null, over: Partial<VolumeStats> = {}): VolumeStats => ({
    podUid,
    volumeName: 'data',
    uniqueVolumeName: 'u',
    pluginName: 'kubernetes.io/csi',
    driver: 'd',
    path: '/p',
    persistentVolumeClaim: claim,
    source: 'csi',
    capacityBytes: 1000,
    availableBytes: 400,
    usedBytes: 600,
    inodes: 10,
    inodesFree: 4,
    inodesUsed: 6,
    condition: null,
    collectedAt: 0,
    durationMs: 1,
    error: null,
    ...over,
  });

  it('exports the first pod’s numbers per claim, none for volumes without a claim, and the health gauge only with a condition', async () => {
    const metrics = createAgentMetrics();
    metrics.bindVolumeStats(() => [
      entry('a', { namespace: 'ns', name: 'c1' }, { condition: { abnormal: true, message: 'broken' } }),
      entry('b', { namespace: 'ns', name: 'c1' }, { capacityBytes: 5 }),
      entry('c', { namespace: 'ns', name: 'c2' }, { usedBytes: null }),
      entry('d', null),
    ]);

    const text = await metrics.registry.metrics();

    expect(sample(text, 'kubelet_volume_stats_capacity_bytes{namespace="ns",persistentvolumeclaim="c1"}')).toBe(1000);
    expect(sample(text, 'kubelet_volume_stats_inodes_used{namespace="ns",persistentvolumeclaim="c1"}')).toBe(6);
    expect(sample(text, 'kubelet_volume_stats_health_status_abnormal{namespace="ns",persistentvolumeclaim="c1"}')).toBe(1);
    expect(sample(text, 'kubelet_volume_stats_health_status_abnormal{namespace="ns",persistentvolumeclaim="c2"}')).toBeNull();
    expect(sample(text, 'kubelet_volume_stats_used_bytes{namespace="ns",persistentvolumeclaim="c2"}')).toBeNull();
    expect(sample(text, 'kubelet_volume_stats_available_bytes{namespace="ns",persistentvolumeclaim="c2"}')).toBe(400);
    expect(text.split('\n').filter((l) => l.startsWith('kubelet_volume_stats_capacity_bytes{'))).toHaveLength(2);
  });

  it('records csi_operations_seconds with the kubelet labels', async () => {
    const metrics = createAgentMetrics();
    metrics.observeCsiCall({ driver: 'd', method: 'Probe', fullMethod: '/csi.v1.Identity/Probe', grpcStatusCode: 'Unavailable', startedAt: 0, durationMs: 300, redactedRequest: () => ({}), volumeId: null, response: null, error: 'e' });

    const text = await metrics.registry.metrics();

    expect(sample(text, 'csi_operations_seconds_count{driver_name="d",method_name="/csi.v1.Identity/Probe",grpc_status_code="Unavailable",migrated="false"}')).toBe(1);
    expect(sample(text, 'csi_operations_seconds_bucket{le="0.25",driver_name="d",method_name="/csi.v1.Identity/Probe",grpc_status_code="Unavailable",migrated="false"}')).toBe(0);
    expect(sample(text, 'csi_operations_seconds_bucket{le="0.5",driver_name="d",method_name="/csi.v1.Identity/Probe",grpc_status_code="Unavailable",migrated="false"}')).toBe(1);
  });
});
