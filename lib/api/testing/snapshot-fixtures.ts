/**
 * Hand-written snapshots for tests, stories and docs: an empty node, a small realistic node, and
 * a generated large node. Pure data builders; nothing here reads a clock.
 */
import type { ActualVolume, DesiredPod, Operation, Snapshot } from '../snapshot.ts';

/** A fixed instant (2026-11-30T08:00:00Z) the fixtures' times are relative to. */
export const FIXTURE_T0 = 1_796_025_600_000;

/** A node whose agent just started: nothing desired, nothing mounted, reconstruction pending. */
export function emptySnapshot(overrides: Partial<Snapshot> = {}): Snapshot {
  return {
    nodeName: 'node-a',
    seq: 0,
    statesSynced: false,
    agent: { version: '0.1.0', startedAt: FIXTURE_T0 },
    mounter: { kind: 'linux', privileged: true },
    desired: { pods: [] },
    actual: { volumes: [] },
    operations: [],
    operationHistory: [],
    reconstruction: { state: 'pending', startedAt: null, finishedAt: null, volumes: [] },
    podErrors: {},
    sourceErrors: [],
    recentEvents: [],
    audit: [],
    drivers: [],
    attachVerification: { lastRunAt: null, checked: 0, foundDetached: [] },
    mountHealth: [],
    unmountBlockers: [],
    operationLog: [],
    ...overrides,
  };
}

const WEB_UID = '5c0a4c2e-0d3b-4f0e-9a51-2f6f1f3c7e10';
const DB_UID = 'a7d9e3b1-6c45-4b8a-8f2d-0e1c9b7a5d33';
const CSI_DATA = 'kubernetes.io/csi/csi-loop.volumescope.dev^vol-data';
const CSI_PG = 'kubernetes.io/csi/csi-loop.volumescope.dev^vol-pg';
const WEB_CONFIG = `kubernetes.io/configmap/${WEB_UID}-config`;

/**
 * A small node: a web pod with a CSI volume and a configMap (both mounted), a database pod whose
 * CSI mount keeps failing (an operation in backoff, a pod error, a warning event), reconstruction
 * done, one registered driver and one audited resync.
 */
export function exampleSnapshot(): Snapshot {
  return emptySnapshot({
    seq: 42,
    statesSynced: true,
    desired: {
      pods: [
        {
          uid: WEB_UID,
          namespace: 'default',
          name: 'web-0',
          volumes: [
            {
              name: 'config',
              uniqueVolumeName: WEB_CONFIG,
              pluginName: 'kubernetes.io/configmap',
              attachable: false,
              deviceMountable: false,
              reportedInUse: false,
            },
            {
              name: 'data',
              uniqueVolumeName: CSI_DATA,
              pluginName: 'kubernetes.io/csi',
              attachable: true,
              deviceMountable: true,
              reportedInUse: true,
            },
          ],
        },
        {
          uid: DB_UID,
          namespace: 'default',
          name: 'db-0',
          volumes: [
            {
              name: 'pgdata',
              uniqueVolumeName: CSI_PG,
              pluginName: 'kubernetes.io/csi',
              attachable: true,
              deviceMountable: true,
              reportedInUse: true,
            },
          ],
        },
      ],
    },
    actual: {
      volumes: [
        {
          uniqueVolumeName: CSI_DATA,
          pluginName: 'kubernetes.io/csi',
          attachState: 'attached',
          devicePath: '/dev/loop3',
          deviceMountState: 'mounted',
          deviceMountPath:
            '/var/lib/kubelet/plugins/kubernetes.io/csi/csi-loop.volumescope.dev/0f3c1e/globalmount',
          pods: [
            {
              podUid: WEB_UID,
              podName: WEB_UID,
              podNamespace: 'default',
              outerVolumeName: 'data',
              mountState: 'mounted',
              remountRequired: false,
            },
          ],
        },
        {
          uniqueVolumeName: CSI_PG,
          pluginName: 'kubernetes.io/csi',
          attachState: 'attached',
          devicePath: '/dev/loop4',
          deviceMountState: 'uncertain',
          deviceMountPath: '/var/lib/kubelet/plugins/kubernetes.io/csi/csi-loop.volumescope.dev/9a2b7d/globalmount',
          pods: [],
        },
        {
          uniqueVolumeName: WEB_CONFIG,
          pluginName: 'kubernetes.io/configmap',
          attachState: 'attached',
          devicePath: '',
          deviceMountState: 'not-mounted',
          deviceMountPath: '',
          pods: [
            {
              podUid: WEB_UID,
              podName: WEB_UID,
              podNamespace: 'default',
              outerVolumeName: 'config',
              mountState: 'mounted',
              remountRequired: false,
            },
          ],
        },
      ],
    },
    operations: [
      {
        operationName: 'volume_mount',
        volume: CSI_PG,
        podUid: DB_UID,
        nodeName: null,
        state: 'backoff',
        failures: 3,
        lastError:
          'MountVolume.MountDevice failed for volume "pgdata" : rpc error: code = DeadlineExceeded desc = context deadline exceeded',
        lastErrorAt: FIXTURE_T0 + 61_000,
        retryAt: FIXTURE_T0 + 63_000,
        durationBeforeRetryMs: 2_000,
        startedAt: null,
      },
    ],
    operationHistory: [
      {
        operationName: 'volume_mount',
        volume: CSI_PG,
        podUid: DB_UID,
        nodeName: null,
        firstFailureAt: FIXTURE_T0 + 59_000,
        attemptsTotal: 3,
        attempts: [
          { startedAt: FIXTURE_T0 + 58_000, durationMs: 1_000, error: 'MountVolume.MountDevice failed for volume "pgdata" : rpc error: code = DeadlineExceeded desc = context deadline exceeded' },
          { startedAt: FIXTURE_T0 + 59_500, durationMs: 500, error: 'MountVolume.MountDevice failed for volume "pgdata" : rpc error: code = DeadlineExceeded desc = context deadline exceeded' },
          { startedAt: FIXTURE_T0 + 60_000, durationMs: 1_000, error: 'MountVolume.MountDevice failed for volume "pgdata" : rpc error: code = DeadlineExceeded desc = context deadline exceeded' },
        ],
        succeededAt: null,
      },
    ],
    reconstruction: {
      state: 'done',
      startedAt: FIXTURE_T0 + 100,
      finishedAt: FIXTURE_T0 + 180,
      volumes: [
        {
          podUid: WEB_UID,
          volumeName: 'data',
          pluginName: 'kubernetes.io/csi',
          outcome: 'confirmed-mounted',
          error: null,
          at: FIXTURE_T0 + 2_400,
        },
      ],
    },
    podErrors: {
      [DB_UID]: ['MountVolume.MountDevice failed for volume "pgdata": context deadline exceeded'],
    },
    recentEvents: [
      {
        time: FIXTURE_T0 + 61_000,
        type: 'Warning',
        reason: 'FailedMount',
        podUid: DB_UID,
        message:
          'MountVolume.MountDevice failed for volume "pgdata" : rpc error: code = DeadlineExceeded desc = context deadline exceeded',
        volume: CSI_PG,
      },
    ],
    audit: [
      {
        time: FIXTURE_T0 + 30_000,
        caller: 'dashboard',
        action: 'resync',
        target: null,
        checks: [],
        result: 'succeeded',
        message: null,
      },
    ],
    drivers: [
      {
        name: 'csi-loop.volumescope.dev',
        endpoint: 'unix:///var/lib/kubelet/plugins/csi-loop.volumescope.dev/csi.sock',
        registered: true,
        nodeId: 'node-a',
        capabilities: ['STAGE_UNSTAGE_VOLUME'],
        lastProbeAt: FIXTURE_T0 + 60_000,
        lastError: null,
      },
    ],
    attachVerification: { lastRunAt: FIXTURE_T0 + 60_000, checked: 2, foundDetached: [] },
    mountHealth: [
      {
        path: `/var/lib/kubelet/pods/${WEB_UID}/volumes/kubernetes.io~csi/pv-data/mount`,
        podUid: WEB_UID,
        volume: CSI_DATA,
        kind: 'pod',
        state: 'healthy',
        error: null,
        checkedAt: FIXTURE_T0 + 60_000,
        since: FIXTURE_T0 + 3_000,
      },
    ],
    unmountBlockers: [],
  });
}

/** A desired pod with one CSI volume, number `i` of a generated node. */
export function generatedPod(i: number): DesiredPod {
  const uid = `pod-${String(i).padStart(6, '0')}`;
  return {
    uid,
    namespace: 'load',
    name: `load-${i}`,
    volumes: [
      {
        name: 'data',
        uniqueVolumeName: generatedVolumeName(i),
        pluginName: 'kubernetes.io/csi',
        attachable: true,
        deviceMountable: true,
        reportedInUse: true,
      },
    ],
  };
}

/** The unique volume name of volume number `i` of a generated node. */
export function generatedVolumeName(i: number): string {
  return `kubernetes.io/csi/csi-loop.volumescope.dev^vol-${String(i).padStart(6, '0')}`;
}

/** The mounted actual-state volume of generated pod `i`. */
export function generatedVolume(i: number): ActualVolume {
  const uid = `pod-${String(i).padStart(6, '0')}`;
  return {
    uniqueVolumeName: generatedVolumeName(i),
    pluginName: 'kubernetes.io/csi',
    attachState: 'attached',
    devicePath: `/dev/loop${i}`,
    deviceMountState: 'mounted',
    deviceMountPath: `/var/lib/kubelet/plugins/kubernetes.io/csi/csi-loop.volumescope.dev/${i}/globalmount`,
    pods: [
      { podUid: uid, podName: uid, podNamespace: 'load', outerVolumeName: 'data', mountState: 'mounted', remountRequired: false },
    ],
  };
}

/** A failing mount of generated volume `i`, in backoff. */
export function generatedOperation(i: number, failures: number): Operation {
  return {
    operationName: 'volume_mount',
    volume: generatedVolumeName(i),
    podUid: `pod-${String(i).padStart(6, '0')}`,
    nodeName: null,
    state: 'backoff',
    failures,
    lastError: 'rpc error: code = Unavailable desc = driver not ready',
    lastErrorAt: FIXTURE_T0 + failures * 1000,
    retryAt: FIXTURE_T0 + failures * 1000 + 500 * 2 ** (failures - 1),
    durationBeforeRetryMs: 500 * 2 ** (failures - 1),
    startedAt: null,
  };
}

/** A synced node with `count` pods, each with one mounted CSI volume. */
export function largeSnapshot(count: number): Snapshot {
  const pods: DesiredPod[] = [];
  const volumes: ActualVolume[] = [];
  for (let i = 0; i < count; i++) {
    pods.push(generatedPod(i));
    volumes.push(generatedVolume(i));
  }
  return emptySnapshot({
    seq: 1,
    statesSynced: true,
    desired: { pods },
    actual: { volumes },
    reconstruction: { state: 'done', startedAt: FIXTURE_T0, finishedAt: FIXTURE_T0 + 5_000, volumes: [] },
  });
}
