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

/** The kubelet's backoff deadline printed in pod b's event. */
export const OBSERVED_RETRY_AT = Date.parse('2031-01-02T03:04:05.5Z');
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

/** Puts the Node, pods a and b, b's FailedMount event, and the failed CSI attachment into `api`. */
export function putObservedApiObjects(api: FakeApiServer, nodeName: string, namespace = 'default'): void {
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
    lastTimestamp: '2031-01-02T03:03:01Z',
    source: { component: 'kubelet', host: nodeName },
    message:
      'Operation for "{volumeName:kubernetes.io/empty-dir/uid-b-scratch podName:uid-b nodeName:}" failed. No retries permitted until 2031-01-02 03:04:05.5 +0000 UTC m=+3600.000000001 (durationBeforeRetry 1m4s). Error: MountVolume.SetUp failed for volume "scratch" (UniqueName: "kubernetes.io/empty-dir/uid-b-scratch") pod "b" (UID: "uid-b") : mkdir: no space left on device',
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
