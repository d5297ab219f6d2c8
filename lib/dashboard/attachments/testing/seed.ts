/** Test support: a FakeApiServer holding one RWO CSI volume attached to node-a, and `pods`. */
import type { FakeApiServer } from '../../../sources/kube/testing/fake-apiserver.ts';
import type { PodObject } from '../objects.ts';
import { csiDriver, lease, node, pv, pvc, va } from './fixtures.ts';

export function seedAttachedVolume(api: FakeApiServer, pods: readonly PodObject[], leaseRenewedMs: number): void {
  api.put('csidrivers', { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', ...csiDriver() });
  api.put('persistentvolumes', { apiVersion: 'v1', kind: 'PersistentVolume', ...pv('pv-1') });
  api.put('persistentvolumeclaims', { apiVersion: 'v1', kind: 'PersistentVolumeClaim', ...pvc('pv-1') });
  api.put('nodes', { apiVersion: 'v1', kind: 'Node', ...node('node-a', { attached: ['pv-1'], inUse: ['pv-1'] }) });
  api.put('nodes', { apiVersion: 'v1', kind: 'Node', ...node('node-b') });
  for (const p of pods) api.put('pods', { apiVersion: 'v1', kind: 'Pod', ...p });
  api.put('volumeattachments', { apiVersion: 'storage.k8s.io/v1', kind: 'VolumeAttachment', ...va('pv-1', 'node-a') });
  api.put('leases', { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', ...lease('node-a', leaseRenewedMs) });
}
