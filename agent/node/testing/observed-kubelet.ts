/**
 * Test support: a node as an observe-mode agent sees it — a kubelet root dir left the way a
 * kubelet leaves it, and the API objects that go with it. Shared by agent/observe.test.ts and the
 * dashboard's e2e stack (e2e/global-setup.ts), so both check the same situation:
 *
 * - pod `a` (uid-a, in the API): emptyDir `cache` holding `state.db`, secret `creds` on a tmpfs;
 * - pod `b` (uid-b, in the API): nothing on disk yet; its FailedMount event carries the kubelet's
 *   backoff ("No retries permitted until {@link OBSERVED_RETRY_AT}… (durationBeforeRetry 1m4s)");
 * - orphan uid-o1 (gone from the API): secret `tok` still on a tmpfs, emptyDir `data` with a file;
 * - orphan uid-o2 (gone from the API): one empty emptyDir directory;
 * - a CSI VolumeAttachment to this node whose attach failed (PV `pv-x`, driver csi.example.com).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Mounter } from '../../../lib/mount-utils/mounter.ts';
import type { FakeApiServer } from '../../../lib/sources/kube/testing/fake-apiserver.ts';

/** When pod b's mount failed in the fixed fixture (tests); the demo passes its own start time. */
export const OBSERVED_FAILED_AT = Date.parse('2031-01-02T03:03:01.5Z');
/** pod b's `durationBeforeRetry` (1m4s: the 8th failure in a row). */
export const OBSERVED_BACKOFF_MS = 64_000;
/** The kubelet's backoff deadline printed in pod b's event of the fixed fixture. */
export const OBSERVED_RETRY_AT = OBSERVED_FAILED_AT + OBSERVED_BACKOFF_MS;

/** Go's `time.Time.String()` of a UTC time, with a monotonic reading, as the kubelet prints it. */
function goTimeString(ms: number): string {
  const iso = new Date(ms).toISOString(); // 2031-01-02T03:04:05.500Z
  const [date = '', time = ''] = iso.slice(0, -1).split('T');
  const [whole = '', fraction = ''] = time.split('.');
  const trimmed = fraction.replace(/0+$/, '');
  return `${date} ${whole}${trimmed === '' ? '' : `.${trimmed}`} +0000 UTC m=+3600.000000001`;
}
/** The plan key of pod b's outstanding mount. */
export const OBSERVED_PLANNED_KEY = 'volume_mount|kubernetes.io/empty-dir/uid-b-scratch|uid-b';

/** The tmpfs mount points the fixture creates, for tests and for teardown. */
export function observedMountPoints(rootDir: string): string[] {
  return [join(rootDir, 'pods/uid-a/volumes/kubernetes.io~secret/creds'), join(rootDir, 'pods/uid-o1/volumes/kubernetes.io~secret/tok')];
}

/** Builds the root dir; `mounter` makes the two tmpfs mounts (real, or the unprivileged stand-ins). */
export async function buildObservedKubeletRoot(rootDir: string, mounter: Pick<Mounter, 'mount'>): Promise<void> {
  const vol = (uid: string, plugin: string, name: string) => join(rootDir, 'pods', uid, 'volumes', plugin, name);
  for (const dir of [
    vol('uid-a', 'kubernetes.io~empty-dir', 'cache'),
    vol('uid-a', 'kubernetes.io~secret', 'creds'),
    vol('uid-o1', 'kubernetes.io~secret', 'tok'),
    vol('uid-o1', 'kubernetes.io~empty-dir', 'data'),
    vol('uid-o2', 'kubernetes.io~empty-dir', 'x'),
  ]) {
    await mkdir(dir, { recursive: true });
  }
  await writeFile(join(vol('uid-a', 'kubernetes.io~empty-dir', 'cache'), 'state.db'), 'live data');
  await writeFile(join(vol('uid-o1', 'kubernetes.io~empty-dir', 'data'), 'left-behind.log'), 'old data');
  for (const target of observedMountPoints(rootDir)) await mounter.mount('tmpfs', target, 'tmpfs', []);
}

function apiPod(nodeName: string, namespace: string, name: string, uid: string, volumes: Record<string, unknown>[]): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, uid },
    spec: {
      nodeName,
      containers: [{ name: 'app', image: 'busybox', volumeMounts: volumes.map((v) => ({ name: v['name'], mountPath: `/${String(v['name'])}` })) }],
      volumes,
    },
    status: { phase: 'Running' },
  };
}

/**
 * Puts the Node, pods a and b, b's FailedMount event, and the failed CSI attachment into `api`.
 * `failedAt`: when b's last mount attempt failed (default {@link OBSERVED_FAILED_AT}); its retry
 * is permitted {@link OBSERVED_BACKOFF_MS} later.
 */
export function putObservedApiObjects(api: FakeApiServer, nodeName: string, options: { namespace?: string; failedAt?: number } = {}): void {
  const namespace = options.namespace ?? 'default';
  const failedAt = options.failedAt ?? OBSERVED_FAILED_AT;
  api.put('nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: nodeName }, status: { volumesAttached: [], volumesInUse: [] } });
  api.put('pods', apiPod(nodeName, namespace, 'a', 'uid-a', [{ name: 'cache', emptyDir: {} }, { name: 'creds', secret: { secretName: 'creds' } }]));
  api.put('pods', apiPod(nodeName, namespace, 'b', 'uid-b', [{ name: 'scratch', emptyDir: {} }]));
  api.put('events', {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: 'b.1', namespace },
    involvedObject: { kind: 'Pod', namespace, name: 'b', uid: 'uid-b' },
    reason: 'FailedMount',
    type: 'Warning',
    count: 7,
    // Events keep whole seconds.
    lastTimestamp: new Date(Math.floor(failedAt / 1000) * 1000).toISOString().replace('.000Z', 'Z'),
    source: { component: 'kubelet', host: nodeName },
    message:
      `Operation for "{volumeName:kubernetes.io/empty-dir/uid-b-scratch podName:uid-b nodeName:}" failed. No retries permitted until ${goTimeString(failedAt + OBSERVED_BACKOFF_MS)} (durationBeforeRetry 1m4s). Error: MountVolume.SetUp failed for volume "scratch" (UniqueName: "kubernetes.io/empty-dir/uid-b-scratch") pod "b" (UID: "uid-b") : mkdir: no space left on device`,
  });
  api.put('persistentvolumes', {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: 'pv-x' },
    spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], csi: { driver: 'csi.example.com', volumeHandle: 'h-x' } },
  });
  api.put('volumeattachments', {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'VolumeAttachment',
    metadata: { name: 'csi-0123' },
    spec: { attacher: 'csi.example.com', nodeName, source: { persistentVolumeName: 'pv-x' } },
    status: { attached: false, attachError: { message: 'rpc error: code = ResourceExhausted desc = too many disks on the node' } },
  });
}
