import { describe, expect, it } from 'vitest';
import { ExponentialBackoff } from '../operationexecutor/exponential-backoff.ts';
import {
  backoffAfterFailures,
  backoffRemainingMs,
  latestBackoffPerVolume,
  parseKubeletBackoff,
  parseVolumeOperationFailure,
} from './kubelet-backoff-events.ts';
import type { CoreEvent, KubeletBackoff } from './kubelet-backoff-events.ts';

const POD_UID = '6f1c2d3e-4b5a-4c6d-8e9f-0a1b2c3d4e5f';
const EBS = 'kubernetes.io/csi/ebs.csi.aws.com^vol-0abc123';

describe('parseKubeletBackoff', () => {
  it.each<{ name: string; message: string; want: KubeletBackoff }>([
    {
      name: 'a v1.30 log line with a struct key, a device mount error and the klog header',
      message:
        `E0102 03:04:05.678901    1234 nestedpendingoperations.go:348] Operation for "{volumeName:${EBS} podName: nodeName:}" failed. ` +
        'No retries permitted until 2024-01-02 03:06:07.678901234 +0000 UTC m=+1234.567890123 (durationBeforeRetry 2m2s). ' +
        `Error: MountVolume.MountDevice failed for volume "pvc-1a2b" (UniqueName: "${EBS}") pod "web-0" (UID: "${POD_UID}") : rpc error: code = DeadlineExceeded desc = context deadline exceeded`,
      want: {
        form: 'operation-failed',
        retryAt: Date.UTC(2024, 0, 2, 3, 6, 7, 678) + 1,
        durationBeforeRetryMs: 122_000,
        failedAt: Date.UTC(2024, 0, 2, 3, 4, 5, 678),
        operationKey: `{volumeName:${EBS} podName: nodeName:}`,
        uniqueVolumeName: EBS,
        volumeName: 'pvc-1a2b',
        error: `MountVolume.MountDevice failed for volume "pvc-1a2b" (UniqueName: "${EBS}") pod "web-0" (UID: "${POD_UID}") : rpc error: code = DeadlineExceeded desc = context deadline exceeded`,
      },
    },
    {
      name: 'a pod-scoped key with an operation name and a sub-second window',
      message:
        `Operation for "{volumeName:kubernetes.io/secret/${POD_UID}-token podName:${POD_UID} nodeName: operationName:volume_mount}" failed. ` +
        'No retries permitted until 2024-06-01 14:00:00.5 +0200 CEST m=+10.5 (durationBeforeRetry 500ms). ' +
        'Error: MountVolume.SetUp failed for volume "token" : secret "token" not found',
      want: {
        form: 'operation-failed',
        retryAt: Date.UTC(2024, 5, 1, 12, 0, 0, 500),
        durationBeforeRetryMs: 500,
        failedAt: Date.UTC(2024, 5, 1, 12, 0, 0),
        operationKey: `{volumeName:kubernetes.io/secret/${POD_UID}-token podName:${POD_UID} nodeName: operationName:volume_mount}`,
        uniqueVolumeName: `kubernetes.io/secret/${POD_UID}-token`,
        podUID: POD_UID,
        operationName: 'volume_mount',
        volumeName: 'token',
        error: 'MountVolume.SetUp failed for volume "token" : secret "token" not found',
      },
    },
    {
      name: 'a pre-1.19 line whose key and error are %q-quoted',
      message:
        'Operation for "\\"kubernetes.io/secret/5a0e3c7e-uid-default-token-x7k2p\\" (\\"5a0e3c7e-uid\\")" failed. ' +
        'No retries permitted until 2018-03-23 09:17:52.530376538 +0000 UTC m=+1179.489590658 (durationBeforeRetry 1m4s). ' +
        'Error: "MountVolume.SetUp failed for volume \\"default-token-x7k2p\\" (UniqueName: \\"kubernetes.io/secret/5a0e3c7e-uid-default-token-x7k2p\\") pod \\"nginx\\" (UID: \\"5a0e3c7e-uid\\") : secrets \\"default-token-x7k2p\\" not found"',
      want: {
        form: 'operation-failed',
        retryAt: Date.UTC(2018, 2, 23, 9, 17, 52, 531),
        durationBeforeRetryMs: 64_000,
        failedAt: Date.UTC(2018, 2, 23, 9, 16, 48, 530),
        operationKey: '"kubernetes.io/secret/5a0e3c7e-uid-default-token-x7k2p" ("5a0e3c7e-uid")',
        uniqueVolumeName: 'kubernetes.io/secret/5a0e3c7e-uid-default-token-x7k2p',
        podUID: '5a0e3c7e-uid',
        volumeName: 'default-token-x7k2p',
        error:
          'MountVolume.SetUp failed for volume "default-token-x7k2p" (UniqueName: "kubernetes.io/secret/5a0e3c7e-uid-default-token-x7k2p") pod "nginx" (UID: "5a0e3c7e-uid") : secrets "default-token-x7k2p" not found',
      },
    },
    {
      name: 'the refusal form with both times',
      message:
        `Failed to create operation with name "{volumeName:${EBS} podName: nodeName:}". ` +
        'An operation with that name failed at 2024-01-02 03:04:05.5 +0000 UTC m=+10.000000001. ' +
        'No retries permitted until 2024-01-02 03:04:06.5 +0000 UTC m=+11.000000001 (1s). ' +
        'Last error: "Volume not attached according to node status".',
      want: {
        form: 'backoff-refused',
        retryAt: Date.UTC(2024, 0, 2, 3, 4, 6, 500),
        durationBeforeRetryMs: 1000,
        failedAt: Date.UTC(2024, 0, 2, 3, 4, 5, 500),
        operationKey: `{volumeName:${EBS} podName: nodeName:}`,
        uniqueVolumeName: EBS,
        error: 'Volume not attached according to node status',
      },
    },
    {
      name: 'an error that names the unique volume outside the operation-executor phrasing',
      message:
        'Operation for "{volumeName: podName: nodeName:node-1}" failed. No retries permitted until 2024-01-02 03:04:06 +0000 UTC (durationBeforeRetry 2s). ' +
        `Error: verify failed (UniqueName: "${EBS}")`,
      want: {
        form: 'operation-failed',
        retryAt: Date.UTC(2024, 0, 2, 3, 4, 6),
        durationBeforeRetryMs: 2000,
        failedAt: Date.UTC(2024, 0, 2, 3, 4, 4),
        operationKey: '{volumeName: podName: nodeName:node-1}',
        nodeName: 'node-1',
        uniqueVolumeName: EBS,
        error: `verify failed (UniqueName: "${EBS}")`,
      },
    },
  ])('reads $name', ({ message, want }) => {
    expect(parseKubeletBackoff(message)).toEqual(want);
  });

  it("reads the messages VolumeScope's own back-off writes", () => {
    const b = new ExponentialBackoff();
    const now = Date.UTC(2024, 0, 1, 12, 0, 0, 250);
    for (let i = 0; i < 3; i++) b.update(new Error('MountVolume.SetUp failed for volume "data" : boom'), now);
    const parsed = parseKubeletBackoff(b.generateNoRetriesPermittedMsg(`{volumeName:${EBS} podName: nodeName:}`));
    expect(parsed).toMatchObject({ retryAt: now + 2000, durationBeforeRetryMs: 2000, failedAt: now, volumeName: 'data', uniqueVolumeName: EBS, error: 'MountVolume.SetUp failed for volume "data" : boom' });
  });

  const valid =
    'Operation for "{volumeName:v podName: nodeName:}" failed. No retries permitted until 2024-01-02 03:04:06 +0000 UTC (durationBeforeRetry 2s). Error: boom';
  it.each([
    { name: 'an empty message', message: '' },
    { name: 'a message without back-off text', message: 'MountVolume.SetUp failed for volume "data" : boom' },
    { name: 'an unterminated key', message: 'Operation for "{volumeName:v failed. No retries permitted until 2024-01-02 03:04:06 +0000 UTC (durationBeforeRetry 2s). Error: boom' },
    { name: 'an impossible date', message: valid.replace('2024-01-02', '2024-02-30') },
    { name: 'a time in another layout', message: valid.replace('2024-01-02 03:04:06 +0000 UTC', '2024-01-02T03:04:06Z') },
    { name: 'a duration without unit', message: valid.replace('2s)', '2)') },
    { name: 'a negative duration', message: valid.replace('2s)', '-2s)') },
    { name: 'a missing duration part', message: valid.replace(' (durationBeforeRetry 2s)', '') },
    { name: 'a missing error part', message: valid.replace('. Error: boom', '') },
    { name: 'a truncated message', message: valid.slice(0, 60) },
    { name: 'a refusal without its last error', message: 'Failed to create operation with name "x". An operation with that name failed at 2024-01-02 03:04:05 +0000 UTC. No retries permitted until 2024-01-02 03:04:06 +0000 UTC (1s).' },
  ])('returns null for $name', ({ message }) => {
    expect(parseKubeletBackoff(message)).toBeNull();
  });

  it.each<unknown>([null, undefined, 42, {}])('returns null for the non-string %j', (value) => {
    expect(parseKubeletBackoff(value as string)).toBeNull();
  });
});

describe('parseVolumeOperationFailure', () => {
  it.each([
    {
      name: 'the event form',
      message: 'MountVolume.SetUp failed for volume "config" : configmap "app-config" not found',
      want: { prefix: 'MountVolume.SetUp failed', operation: 'MountVolume.SetUp', volumeName: 'config', error: 'configmap "app-config" not found' },
    },
    {
      name: 'a prefix with words after the step',
      message: 'MountVolume.NewMounter initialization failed for volume "pvc-1" : volume mode "Block" not supported',
      want: { prefix: 'MountVolume.NewMounter initialization failed', operation: 'MountVolume.NewMounter', volumeName: 'pvc-1', error: 'volume mode "Block" not supported' },
    },
    {
      name: 'the detailed form',
      message: `MapVolume.SetUpDevice failed for volume "pvc-2" (UniqueName: "${EBS}") pod "db-0" (UID: "${POD_UID}") : rpc error: code = Internal desc = boom`,
      want: {
        prefix: 'MapVolume.SetUpDevice failed', operation: 'MapVolume.SetUpDevice', volumeName: 'pvc-2', uniqueVolumeName: EBS,
        podName: 'db-0', podUID: POD_UID, error: 'rpc error: code = Internal desc = boom',
      },
    },
    {
      name: 'an attach from the controller with a node',
      message: `AttachVolume.Attach failed for volume "pvc-3" (UniqueName: "${EBS}") from node "node-1" : timed out`,
      want: { prefix: 'AttachVolume.Attach failed', operation: 'AttachVolume.Attach', volumeName: 'pvc-3', uniqueVolumeName: EBS, nodeName: 'node-1', error: 'timed out' },
    },
    {
      name: 'an aggregated message',
      message: '(combined from similar events): MountVolume.SetUp failed for volume "data" : boom',
      want: { prefix: 'MountVolume.SetUp failed', operation: 'MountVolume.SetUp', volumeName: 'data', error: 'boom' },
    },
    {
      name: 'a message without error (trailing space)',
      message: 'MountVolume.SetUp failed for volume "data" ',
      want: { prefix: 'MountVolume.SetUp failed', operation: 'MountVolume.SetUp', volumeName: 'data', error: '' },
    },
  ])('reads $name', ({ message, want }) => {
    expect(parseVolumeOperationFailure(message)).toEqual(want);
  });

  it.each([
    'Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[data kube-api-access-x]: timed out waiting for the condition',
    'Multi-Attach error for volume "pvc-1" Volume is already exclusively attached to one node and can\'t be attached to another',
    'MountVolume.SetUp succeeded for volume "data"',
    'MountVolume.SetUp failed for volume "unterminated : boom',
    'MountVolume.SetUp failed for volume "data" garbage',
    '',
  ])('returns null for %j', (message) => {
    expect(parseVolumeOperationFailure(message)).toBeNull();
  });
});

describe('backoffAfterFailures', () => {
  it.each([
    { failures: 1, ms: 500 },
    { failures: 2, ms: 1000 },
    { failures: 3, ms: 2000 },
    { failures: 8, ms: 64_000 },
    { failures: 9, ms: 122_000 },
    { failures: 1000, ms: 122_000 },
    { failures: 0, ms: 500 },
    { failures: Number.NaN, ms: 500 },
  ])('gives $ms ms after $failures failures', ({ failures, ms }) => {
    expect(backoffAfterFailures(failures)).toBe(ms);
  });
});

describe('latestBackoffPerVolume', () => {
  const T = Date.UTC(2024, 0, 2, 3, 0, 0);
  const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
  function ev(reason: string, message: string, at: number, extra: Partial<CoreEvent> = {}): CoreEvent {
    return {
      metadata: { name: `web-0.${at}`, namespace: 'default' },
      involvedObject: { kind: 'Pod', namespace: 'default', name: 'web-0', uid: POD_UID },
      reason,
      message,
      type: 'Warning',
      count: 1,
      firstTimestamp: iso(at),
      lastTimestamp: iso(at),
      ...extra,
    };
  }

  it('keeps the latest event per volume, estimating from the repeat count where no deadline is printed', () => {
    // Arrange
    const events = [
      ev('FailedMount', 'MountVolume.SetUp failed for volume "config" : configmap "app" not found', T, { count: 1 }),
      ev('FailedMount', 'MountVolume.SetUp failed for volume "config" : configmap "app" not found', T + 10_000, { count: 5 }),
      ev('FailedMount', 'Unable to attach or mount volumes: unmounted volumes=[config], unattached volumes=[]: timed out waiting for the condition', T + 20_000),
      ev('Scheduled', 'Successfully assigned default/web-0 to node-1', T + 30_000),
      ev('FailedAttachVolume', `AttachVolume.Attach failed for volume "pvc-9" : rpc error: code = NotFound desc = disk not found`, T + 5000, { count: 100 }),
      ev('FailedMount', 'Multi-Attach error for volume "pvc-8" Volume is already exclusively attached to one node', T + 5000),
    ];

    // Act
    const got = latestBackoffPerVolume(events);

    // Assert
    expect(got).toEqual([
      {
        volume: 'config', volumeName: 'config', reason: 'FailedMount', operation: 'MountVolume.SetUp', error: 'configmap "app" not found',
        basis: 'event-count', retryAt: T + 10_000 + 8000, durationBeforeRetryMs: 8000, observedAt: T + 10_000, count: 5,
        event: { name: `web-0.${T + 10_000}`, namespace: 'default' },
      },
      {
        volume: 'pvc-9', volumeName: 'pvc-9', reason: 'FailedAttachVolume', operation: 'AttachVolume.Attach', error: 'rpc error: code = NotFound desc = disk not found',
        basis: 'event-count', retryAt: T + 5000 + 122_000, durationBeforeRetryMs: 122_000, observedAt: T + 5000, count: 100,
        event: { name: `web-0.${T + 5000}`, namespace: 'default' },
      },
    ]);
  });

  it('takes an exact deadline from a message that carries the back-off text', () => {
    const message =
      `Operation for "{volumeName:${EBS} podName: nodeName:}" failed. No retries permitted until 2024-01-02 03:02:02 +0000 UTC m=+5.5 (durationBeforeRetry 2m2s). ` +
      `Error: MountVolume.WaitForAttach failed for volume "pvc-1" (UniqueName: "${EBS}") pod "web-0" (UID: "${POD_UID}") : timed out waiting for external-attacher`;
    const [got] = latestBackoffPerVolume([
      ev('FailedMount', 'MountVolume.WaitForAttach failed for volume "pvc-1" : timed out waiting for external-attacher', T, { count: 3 }),
      ev('FailedMount', message, T),
    ]);
    expect(got).toMatchObject({
      volume: 'pvc-1', uniqueVolumeName: EBS, basis: 'message', operation: 'MountVolume.WaitForAttach',
      retryAt: Date.UTC(2024, 0, 2, 3, 2, 2), durationBeforeRetryMs: 122_000, operationKey: `{volumeName:${EBS} podName: nodeName:}`,
    });
  });

  it('prefers the later event even when it only gives an estimate', () => {
    const exact =
      'Operation for "{volumeName:v podName: nodeName:}" failed. No retries permitted until 2024-01-02 03:02:02 +0000 UTC (durationBeforeRetry 2m2s). Error: MountVolume.SetUp failed for volume "data" : old';
    const got = latestBackoffPerVolume([ev('FailedMount', exact, T), ev('FailedMount', 'MountVolume.SetUp failed for volume "data" : new', T + 1000)]);
    expect(got.map((b) => [b.volume, b.basis, b.error])).toEqual([['data', 'event-count', 'new']]);
  });

  it('uses series and event times, and skips events without a usable timestamp', () => {
    const got = latestBackoffPerVolume([
      ev('FailedMount', 'MountVolume.SetUp failed for volume "a" : x', T, { firstTimestamp: null, lastTimestamp: null, eventTime: '2024-01-02T03:00:01.250000Z' }),
      ev('FailedMount', 'MountVolume.SetUp failed for volume "b" : x', T, { count: undefined, series: { count: 2, lastObservedTime: '2024-01-02T03:00:09.000000Z' } }),
      ev('FailedMount', 'MountVolume.SetUp failed for volume "c" : x', T, { firstTimestamp: 'garbage', lastTimestamp: undefined }),
    ]);
    expect(got.map((b) => [b.volume, b.observedAt, b.durationBeforeRetryMs])).toEqual([
      ['a', T + 1250, 500],
      ['b', T + 9000, 1000],
    ]);
  });

  it("ignores a recreated pod's predecessor when given the pod UID", () => {
    const events = [
      ev('FailedMount', 'MountVolume.SetUp failed for volume "old" : x', T, { involvedObject: { kind: 'Pod', name: 'web-0', uid: 'previous-uid' } }),
      ev('FailedMount', 'MountVolume.SetUp failed for volume "new" : x', T),
    ];
    expect(latestBackoffPerVolume(events, { podUID: POD_UID }).map((b) => b.volume)).toEqual(['new']);
    expect(latestBackoffPerVolume(events).map((b) => b.volume)).toEqual(['new', 'old']);
  });

  it('never throws on malformed events', () => {
    const junk = [null, 42, {}, { reason: 'FailedMount' }, { reason: 'FailedMount', message: 7, lastTimestamp: '2024-01-02T03:00:00Z' }, { reason: 'FailedMount', message: 'MountVolume.SetUp failed for volume "x" : y', lastTimestamp: '2024-01-02T03:00:00Z', count: -3 }];
    const got = latestBackoffPerVolume(junk as unknown as CoreEvent[]);
    expect(got.map((b) => [b.volume, b.count, b.durationBeforeRetryMs])).toEqual([['x', 1, 500]]);
    expect(latestBackoffPerVolume(null as unknown as CoreEvent[])).toEqual([]);
  });

  it('counts down to the deadline', () => {
    expect(backoffRemainingMs({ retryAt: T + 500 }, T)).toBe(500);
    expect(backoffRemainingMs({ retryAt: T + 500 }, T + 600)).toBe(0);
  });
});
