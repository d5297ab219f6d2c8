/**
 * An observe-mode snapshot for tests, the node the demo's observer shows (scripts/demo/observer.ts):
 * pod `a` with two volumes the agent rebuilt from the kubelet's root dir (uncertain: found on
 * disk, not confirmed), pod `b` whose emptyDir `scratch` failed the kubelet's
 * `MountVolume.SetUp` (its FailedMount event carries the backoff: 1m4s, 7 times), an orphan
 * `uid-o1` with a secret still mounted and an orphan `uid-o2` with an empty directory. Pure data.
 */
import type { KubeletBackoff, Observe, OrphanPod, PlannedOperation } from '../observe.ts';
import type { ActualVolume, DesiredPod, Snapshot } from '../snapshot.ts';
import { FIXTURE_T0, emptySnapshot } from './snapshot-fixtures.ts';

export const OBSERVED_ROOT = '/var/lib/kubelet';
export const SCRATCH = 'kubernetes.io/empty-dir/uid-b-scratch';
/** When pod b's last SetUp failed (its event's `lastTimestamp`). */
export const SCRATCH_FAILED_AT = FIXTURE_T0 + 60_000;
export const SCRATCH_ERROR = 'MountVolume.SetUp failed for volume "scratch" (UniqueName: "kubernetes.io/empty-dir/uid-b-scratch") pod "b" (UID: "uid-b") : mkdir: no space left on device';

/** Pod b's backoff as the agent reads it from its FailedMount event. */
export function scratchBackoff(overrides: Partial<KubeletBackoff> = {}): KubeletBackoff {
  return {
    retryAt: SCRATCH_FAILED_AT + 64_000,
    durationBeforeRetryMs: 64_000,
    error: SCRATCH_ERROR,
    observedAt: SCRATCH_FAILED_AT,
    basis: 'message',
    operation: 'MountVolume.SetUp',
    reason: 'FailedMount',
    count: 7,
    ...overrides,
  };
}

function emptyDir(podUid: string, name: string, plugin = 'kubernetes.io/empty-dir') {
  return { name, uniqueVolumeName: `${plugin}/${podUid}-${name}`, pluginName: plugin, attachable: false, deviceMountable: false, reportedInUse: false };
}

function rebuilt(podUid: string, name: string, namespace: string | null, plugin = 'kubernetes.io/empty-dir'): ActualVolume {
  return {
    uniqueVolumeName: `${plugin}/${podUid}-${name}`,
    pluginName: plugin,
    attachState: 'attached',
    devicePath: '',
    deviceMountState: 'not-mounted',
    deviceMountPath: '',
    pods: [{ podUid, podName: podUid, ...(namespace === null ? {} : { podNamespace: namespace }), outerVolumeName: name, mountState: 'uncertain', remountRequired: false }],
  };
}

/** Pod b's planned mount of scratch, with the kubelet's backoff (`kubeletBackoff` overrides it). */
export function scratchPlanned(kubeletBackoff: KubeletBackoff | null = scratchBackoff()): PlannedOperation {
  return planned('volume_mount', SCRATCH, 'uid-b', 'desired by the pod, not mounted', kubeletBackoff);
}

function planned(operation: string, volume: string, podUid: string | null, reason: string, backoff: KubeletBackoff | null = null): PlannedOperation {
  return {
    key: `${operation}|${volume}|${podUid ?? ''}`,
    operation,
    volume,
    podUid,
    pod: podUid === 'uid-b' ? 'default/b' : null,
    outerVolumeName: podUid === null ? null : (volume.split('-').at(-1) ?? null),
    reason,
    since: FIXTURE_T0,
    kubeletBackoff: backoff,
  };
}

function orphan(podUid: string, verdict: OrphanPod['verdict'], mounts: OrphanPod['mounts']): OrphanPod {
  return { podUid, path: `${OBSERVED_ROOT}/pods/${podUid}`, modifiedAt: FIXTURE_T0, verdict, explanation: `verdict ${verdict}`, volumes: [], leftovers: [], mounts };
}

/** The observe section of {@link observedSnapshot}; `plan` replaces the plan. */
export function observedSection(overrides: Partial<Observe> = {}): Observe {
  return {
    kubeletRootDir: OBSERVED_ROOT,
    refreshedAt: FIXTURE_T0 + 61_000,
    refreshError: null,
    plan: [
      scratchPlanned(),
      planned('volume_unmount', 'kubernetes.io/empty-dir/uid-o2-x', 'uid-o2', 'found on disk, not confirmed: nothing is mounted there, and no pod wants it; the kubelet removes it'),
      planned('volume_unmount', 'kubernetes.io/secret/uid-o1-tok', 'uid-o1', 'mounted for a pod that no longer wants it; found on disk, not confirmed since'),
    ],
    orphans: [
      orphan('uid-o1', 'mounted', [{ mountPoint: `${OBSERVED_ROOT}/pods/uid-o1/volumes/kubernetes.io~secret/tok`, fsType: 'tmpfs', source: 'tmpfs' }]),
      orphan('uid-o2', 'empty-volume-dirs', []),
    ],
    orphansTruncated: false,
    truthDiff: [],
    cleanupAllowed: true,
    cleanupBlocked: null,
    ...overrides,
  };
}

/** The observe-mode node described in the module comment; `observe` overrides parts of its section. */
export function observedSnapshot(observe: Partial<Observe> = {}): Snapshot {
  const pods: DesiredPod[] = [
    { uid: 'uid-a', namespace: 'default', name: 'a', volumes: [emptyDir('uid-a', 'cache'), emptyDir('uid-a', 'creds', 'kubernetes.io/secret')] },
    { uid: 'uid-b', namespace: 'default', name: 'b', volumes: [emptyDir('uid-b', 'scratch')] },
  ];
  return emptySnapshot({
    nodeName: 'observer',
    seq: 9,
    statesSynced: true,
    mounter: { kind: 'unprivileged', privileged: false },
    desired: { pods },
    actual: { volumes: [rebuilt('uid-a', 'cache', 'default'), rebuilt('uid-o2', 'x', null), rebuilt('uid-a', 'creds', 'default', 'kubernetes.io/secret'), rebuilt('uid-o1', 'tok', null, 'kubernetes.io/secret')] },
    reconstruction: {
      state: 'done',
      startedAt: FIXTURE_T0,
      finishedAt: FIXTURE_T0 + 3,
      volumes: ['uid-a|cache', 'uid-a|creds', 'uid-o1|tok', 'uid-o2|x'].map((k) => {
        const [podUid = '', volumeName = ''] = k.split('|');
        return { podUid, volumeName, pluginName: volumeName === 'x' || volumeName === 'cache' ? 'kubernetes.io/empty-dir' : 'kubernetes.io/secret', outcome: 'reconstructed' as const, error: null, at: FIXTURE_T0 + 3 };
      }),
    },
    recentEvents: [{ time: SCRATCH_FAILED_AT, type: 'Warning', reason: 'FailedMount', podUid: 'uid-b', message: `Operation for "{volumeName:${SCRATCH} podName:uid-b nodeName:}" failed. No retries permitted until … (durationBeforeRetry 1m4s). Error: ${SCRATCH_ERROR}`, volume: SCRATCH, count: 7 }],
    observe: observedSection(observe),
  });
}
