/**
 * fast-check arbitraries of snapshots and their items, for the property tests of the snapshot
 * contract (JSON, deltas, the compact encoding).
 */
import fc from 'fast-check';
import { mountHealthKey, unmountBlockersKey, type MountHealth, type UnmountBlockers } from '../mount-health.ts';
import {
  actualVolumeKey,
  desiredPodKey,
  desiredVolumeKey,
  driverKey,
  operationKey,
  podMountKey,
  reconstructedVolumeKey,
  sourceErrorKey,
  type ActualVolume,
  type AuditEntry,
  type DesiredPod,
  type DesiredVolumeSpec,
  type Driver,
  type Operation,
  type OperationHistory,
  type PodMount,
  type ReconstructedVolume,
  type ReconstructionStatus,
  type RecentEvent,
  type Snapshot,
  type SourceError,
  type VolumeStats,
} from '../snapshot.ts';

// ARBITRARIES
// Keys come from small pools so that random changes hit existing items as often as new ones.

export function pool(prefix: string, size: number): fc.Arbitrary<string> {
  return fc.constantFrom(...Array.from({ length: size }, (_, i) => `${prefix}-${i}`));
}

export function rec<T>(model: { [K in keyof T]: fc.Arbitrary<T[K]> }): fc.Arbitrary<T> {
  return fc.record(model, { noNullPrototype: true });
}

export const podUid = pool('uid', 6);
export const volumeName = pool('kubernetes.io/csi/d^vol', 6);
export const text = fc.string({ maxLength: 10 });
export const time = fc.integer({ min: 0, max: 4_000_000_000_000 });
export const maybeTime = fc.option(time, { nil: null });
export const maybeText = fc.option(text, { nil: null });
export const count = fc.nat({ max: 1_000 });

// Optional fields are absent or present (never `undefined`), as in JSON.
export const volumeSpec: fc.Arbitrary<DesiredVolumeSpec> = fc.record(
  {
    sourceType: fc.constantFrom('hostPath', 'persistentVolumeClaim', 'csi', 'emptyDir'),
    source: fc.array(rec({ path: text, value: text }), { maxLength: 2 }),
    mounts: fc.array(fc.record({ container: text, mountPath: text, readOnly: fc.boolean(), subPath: text }, { requiredKeys: ['container', 'mountPath', 'readOnly'], noNullPrototype: true }), { maxLength: 2 }),
    claimName: text,
    persistentVolumeName: text,
    csiDriver: text,
    volumeAttachment: text,
  },
  { requiredKeys: ['sourceType', 'source', 'mounts'], noNullPrototype: true },
);

export const desiredPod: fc.Arbitrary<DesiredPod> = rec({
  uid: podUid,
  namespace: text,
  name: text,
  volumes: fc.uniqueArray(
    fc.record(
      {
        name: pool('v', 4),
        uniqueVolumeName: volumeName,
        pluginName: text,
        attachable: fc.boolean(),
        deviceMountable: fc.boolean(),
        reportedInUse: fc.boolean(),
        spec: volumeSpec,
      },
      { requiredKeys: ['name', 'uniqueVolumeName', 'pluginName', 'attachable', 'deviceMountable', 'reportedInUse'], noNullPrototype: true },
    ),
    { selector: desiredVolumeKey, maxLength: 3 },
  ),
});

export const podMount: fc.Arbitrary<PodMount> = fc.record(
  {
    podUid,
    podName: text,
    podNamespace: text,
    outerVolumeName: text,
    mountState: fc.constantFrom('mounted' as const, 'uncertain' as const),
    remountRequired: fc.boolean(),
  },
  { requiredKeys: ['podUid', 'podName', 'outerVolumeName', 'mountState', 'remountRequired'], noNullPrototype: true },
);

export const actualVolume: fc.Arbitrary<ActualVolume> = rec({
  uniqueVolumeName: volumeName,
  pluginName: text,
  attachState: fc.constantFrom('attached' as const, 'uncertain' as const),
  devicePath: text,
  deviceMountState: fc.constantFrom('mounted' as const, 'uncertain' as const, 'not-mounted' as const),
  deviceMountPath: text,
  pods: fc.uniqueArray(podMount, { selector: podMountKey, maxLength: 3 }),
});

export const operation: fc.Arbitrary<Operation> = rec({
  operationName: fc.constantFrom('volume_mount', 'unmount_device'),
  volume: volumeName,
  podUid: fc.option(podUid, { nil: null }),
  nodeName: fc.option(fc.constant('node-a'), { nil: null }),
  state: fc.constantFrom('running' as const, 'backoff' as const),
  failures: count,
  lastError: maybeText,
  lastErrorAt: maybeTime,
  retryAt: maybeTime,
  durationBeforeRetryMs: count,
  startedAt: maybeTime,
});

export const operationHistory: fc.Arbitrary<OperationHistory> = rec({
  operationName: fc.constantFrom('volume_mount', 'unmount_device'),
  volume: volumeName,
  podUid: fc.option(podUid, { nil: null }),
  nodeName: fc.option(fc.constant('node-a'), { nil: null }),
  firstFailureAt: time,
  attemptsTotal: fc.integer({ min: 1, max: 1_000 }),
  attempts: fc.array(rec({ startedAt: time, durationMs: count, error: maybeText }), { maxLength: 3 }),
  succeededAt: maybeTime,
});

export const reconstructionStatus: fc.Arbitrary<ReconstructionStatus> = rec({
  state: fc.constantFrom('pending' as const, 'running' as const, 'done' as const),
  startedAt: maybeTime,
  finishedAt: maybeTime,
});

export const reconstructedVolume: fc.Arbitrary<ReconstructedVolume> = rec({
  podUid,
  volumeName: pool('v', 4),
  pluginName: text,
  outcome: fc.constantFrom('reconstructed' as const, 'failed' as const, 'confirmed-mounted' as const, 'cleaned-up' as const),
  error: maybeText,
  at: time,
});

export const sourceError: fc.Arbitrary<SourceError> = rec({ file: pool('/etc/kubernetes/manifests/m', 4), message: text });

export const recentEvent: fc.Arbitrary<RecentEvent> = rec({
  time,
  type: fc.constantFrom('Normal' as const, 'Warning' as const),
  reason: fc.constantFrom('FailedMount', 'SuccessfulMountVolume'),
  podUid: fc.option(podUid, { nil: null }),
  message: fc.constantFrom('a', 'b', 'c'),
  volume: volumeName,
});

export const auditEntry: fc.Arbitrary<AuditEntry> = rec({
  time,
  caller: text,
  action: fc.constantFrom('resync', 'retry', 'unmount'),
  target: maybeText,
  checks: fc.array(rec({ name: text, ok: fc.boolean(), detail: text }), { maxLength: 3 }),
  result: fc.constantFrom('succeeded' as const, 'refused' as const, 'failed' as const),
  message: maybeText,
});

export const driver: fc.Arbitrary<Driver> = rec({
  name: pool('driver', 3),
  endpoint: text,
  registered: fc.boolean(),
  nodeId: maybeText,
  capabilities: fc.array(text, { maxLength: 3 }),
  lastProbeAt: maybeTime,
  lastError: maybeText,
});

export const podErrorList = fc.array(text, { maxLength: 3 });

export const mountHealth: fc.Arbitrary<MountHealth> = rec({
  path: pool('/var/lib/kubelet/pods/p', 4),
  podUid: fc.option(podUid, { nil: null }),
  volume: volumeName,
  kind: fc.constantFrom('pod', 'staging'),
  state: fc.constantFrom('healthy', 'not-connected', 'io-error', 'stale', 'hung', 'error'),
  error: maybeText,
  checkedAt: time,
  since: time,
});

export const unmountBlockers: fc.Arbitrary<UnmountBlockers> = rec({
  operationName: fc.constantFrom('volume_unmount', 'unmount_device'),
  volume: volumeName,
  podUid: fc.option(podUid, { nil: null }),
  report: rec({
    path: text,
    holders: fc.array(
      rec({
        pid: fc.integer({ min: 1, max: 100_000 }),
        command: text,
        kind: fc.constantFrom('fd', 'cwd', 'root', 'mmap', 'mount-namespace'),
        path: text,
        container: fc.option(rec({ podUid: fc.option(podUid, { nil: null }), containerId: maybeText, runtime: fc.constantFrom('containerd', 'cri-o', 'docker', null) }), { nil: null }),
      }),
      { maxLength: 2 },
    ),
    truncated: fc.boolean(),
    incomplete: maybeText,
    processesScanned: count,
    checkedAt: time,
    durationMs: count,
  }),
});

export const snapshotArb: fc.Arbitrary<Snapshot> = rec({
  nodeName: text,
  seq: fc.nat({ max: 1_000_000 }),
  statesSynced: fc.boolean(),
  agent: rec({ version: text, startedAt: time }),
  mounter: rec({ kind: fc.constantFrom('linux', 'unprivileged'), privileged: fc.boolean() }),
  desired: rec({ pods: fc.uniqueArray(desiredPod, { selector: desiredPodKey, maxLength: 5 }) }),
  actual: rec({ volumes: fc.uniqueArray(actualVolume, { selector: actualVolumeKey, maxLength: 5 }) }),
  operations: fc.uniqueArray(operation, { selector: operationKey, maxLength: 5 }),
  operationHistory: fc.uniqueArray(operationHistory, { selector: operationKey, maxLength: 3 }),
  reconstruction: fc
    .tuple(reconstructionStatus, fc.uniqueArray(reconstructedVolume, { selector: reconstructedVolumeKey, maxLength: 4 }))
    .map(([status, volumes]) => ({ ...status, volumes })),
  podErrors: fc.dictionary(podUid, podErrorList, { maxKeys: 3, noNullPrototype: true }),
  sourceErrors: fc.uniqueArray(sourceError, { selector: sourceErrorKey, maxLength: 3 }),
  recentEvents: fc.array(recentEvent, { maxLength: 5 }),
  audit: fc.array(auditEntry, { maxLength: 3 }),
  drivers: fc.uniqueArray(driver, { selector: driverKey, maxLength: 3 }),
  attachVerification: rec({ lastRunAt: maybeTime, checked: count, foundDetached: fc.array(volumeName, { maxLength: 2 }) }),
  mountHealth: fc.uniqueArray(mountHealth, { selector: mountHealthKey, maxLength: 3 }),
  unmountBlockers: fc.uniqueArray(unmountBlockers, { selector: unmountBlockersKey, maxLength: 2 }),
  operationLog: fc.array(
    rec({ operationName: text, volume: volumeName, podUid: fc.option(podUid, { nil: null }), startedAt: time, finishedAt: time, outcome: fc.constantFrom('success', 'failure'), error: fc.option(text, { nil: null }) }),
    { maxLength: 3 },
  ),
});

/** The pods directory the kubelet-shaped arbitraries put pod paths under. */
export const ARB_PODS_DIR = '/var/lib/kubelet/pods';

/** Plugin names: table ones (sent as numbers) and others (sent as text). */
const pluginName = fc.constantFrom('kubernetes.io/empty-dir', 'kubernetes.io/csi', 'kubernetes.io/configmap', 'example.com/flex', '');

/** A pod path as the kubelet builds it, or another path (sent in full). */
function podPath(uid: string): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constantFrom('kubernetes.io~empty-dir/v-0', 'kubernetes.io~csi/pvc-1/mount').map((rest) => `${ARB_PODS_DIR}/${uid}/volumes/${rest}`),
    pool('/var/lib/kubelet/plugins/kubernetes.io/csi/d/globalmount', 2),
  );
}

const maybeNumber = fc.option(fc.nat(), { nil: null });

/** One volume stats entry, its path under {@link ARB_PODS_DIR} or not, its unique name per-pod or not. */
export const volumeStats: fc.Arbitrary<VolumeStats> = fc
  .record({ podUid, volumeName: pool('v', 4), pluginName, perPod: fc.boolean(), uniqueVolumeName: volumeName })
  .chain(({ podUid: uid, volumeName: name, pluginName: plugin, perPod, uniqueVolumeName }) =>
    rec({
      podUid: fc.constant(uid),
      volumeName: fc.constant(name),
      uniqueVolumeName: fc.constant(perPod ? `${plugin}/${uid}-${name}` : uniqueVolumeName),
      pluginName: fc.constant(plugin),
      driver: maybeText,
      path: podPath(uid),
      persistentVolumeClaim: fc.option(rec({ namespace: text, name: text }), { nil: null }),
      source: fc.constantFrom('csi' as const, 'statfs' as const),
      capacityBytes: maybeNumber,
      availableBytes: maybeNumber,
      usedBytes: maybeNumber,
      inodes: maybeNumber,
      inodesFree: maybeNumber,
      inodesUsed: maybeNumber,
      condition: fc.option(rec({ abnormal: fc.boolean(), message: text }), { nil: null }),
      collectedAt: time,
      durationMs: count,
      error: maybeText,
    }),
  );

/** A mount health entry whose pod paths are (mostly) under {@link ARB_PODS_DIR}. */
const kubeletMountHealth: fc.Arbitrary<MountHealth> = fc.option(podUid, { nil: null }).chain((uid) =>
  rec({
    path: uid === null ? pool('/var/lib/kubelet/plugins/kubernetes.io/csi/d/globalmount', 3) : podPath(uid),
    podUid: fc.constant(uid),
    volume: volumeName,
    kind: fc.constantFrom('pod' as const, 'staging' as const),
    state: fc.constantFrom('healthy' as const, 'hung' as const),
    error: maybeText,
    checkedAt: time,
    since: fc.oneof(time, fc.constant(-1)),
  }).map((h) => (h.since === -1 ? { ...h, since: h.checkedAt } : h)),
);

/** A desired pod whose volumes have per-pod unique names (as the kubelet gives non-attachable ones) or not. */
const kubeletDesiredPod: fc.Arbitrary<DesiredPod> = fc.tuple(desiredPod, fc.array(fc.tuple(fc.boolean(), pluginName), { minLength: 3, maxLength: 3 })).map(([pod, shapes]) => ({
  ...pod,
  volumes: pod.volumes.map((v, i) => {
    const [perPod, plugin] = shapes[i] ?? [false, v.pluginName];
    return perPod ? { ...v, pluginName: plugin, uniqueVolumeName: `${plugin}/${pod.uid}-${v.name}` } : v;
  }),
}));

/** An actual volume whose pod mounts often have podName equal to the UID and table plugin names. */
const kubeletActualVolume: fc.Arbitrary<ActualVolume> = fc.tuple(actualVolume, pluginName, fc.boolean()).map(([v, plugin, uidNames]) => ({
  ...v,
  pluginName: plugin,
  pods: uidNames ? v.pods.map((m) => ({ ...m, podName: m.podUid })) : v.pods,
}));

/**
 * Snapshots shaped like an agent's: {@link snapshotArb} with items whose derivable fields are
 * often derivable (per-pod unique names, pod names equal to UIDs, paths under the pods
 * directory), and volume stats.
 */
export const kubeletSnapshotArb: fc.Arbitrary<Snapshot> = fc
  .record({
    base: snapshotArb,
    pods: fc.uniqueArray(kubeletDesiredPod, { selector: desiredPodKey, maxLength: 5 }),
    volumes: fc.uniqueArray(kubeletActualVolume, { selector: actualVolumeKey, maxLength: 5 }),
    mountHealth: fc.uniqueArray(kubeletMountHealth, { selector: mountHealthKey, maxLength: 4 }),
    volumeStats: fc.option(fc.uniqueArray(volumeStats, { selector: (s) => `${s.podUid}|${s.volumeName}`, maxLength: 4 }), { nil: undefined }),
  })
  .map(({ base, pods, volumes, mountHealth: health, volumeStats: stats }) => ({
    ...base,
    desired: { pods },
    actual: { volumes },
    mountHealth: health,
    ...(stats !== undefined ? { volumeStats: stats } : {}),
  }));
