/**
 * The API objects the engine and the plugins read (VolumeKubeClient for PVCs and PVs,
 * VolumeObjectGetter for ConfigMaps, Secrets, CSIDrivers and current pods), answered from the
 * manifest source. Standalone there is no Node object, so `getNode` is absent and the engine
 * skips node-status steps as the kubelet does without an API client; file-system resize results
 * are not written back either (manifests are the operator's files, not the agent's).
 */
import type { ObjectSource } from '../../lib/sources/source.ts';
import type { ConfigMap, CSIDriver, PersistentVolume, PersistentVolumeClaim, Pod, Secret } from '../../lib/volume/k8s-types.ts';
import { ObjectNotFoundError, type VolumeKubeClient } from '../../lib/volume/kube-client.ts';
import type { VolumeObjectGetter } from '../../lib/volume/object-getter.ts';

/** The getters of the source the adapter reads (tests can hand in a stand-in). */
export type ObjectGetters = Pick<
  ObjectSource,
  'getPersistentVolume' | 'getPersistentVolumeClaim' | 'getConfigMap' | 'getSecret' | 'getCSIDriver' | 'getPodByUID'
>;

export class ManifestObjects implements VolumeKubeClient, VolumeObjectGetter {
  constructor(private readonly source: ObjectGetters) {}

  /** Rejects with ObjectNotFoundError (`persistentvolumeclaims "ns/name" not found`) when absent. */
  getPersistentVolumeClaim(namespace: string, name: string): Promise<PersistentVolumeClaim> {
    const pvc = this.source.getPersistentVolumeClaim(namespace, name);
    return pvc === undefined ? Promise.reject(new ObjectNotFoundError('persistentvolumeclaims', name)) : Promise.resolve(pvc);
  }

  getPersistentVolume(name: string): Promise<PersistentVolume> {
    const pv = this.source.getPersistentVolume(name);
    return pv === undefined ? Promise.reject(new ObjectNotFoundError('persistentvolumes', name)) : Promise.resolve(pv);
  }

  getConfigMap(namespace: string, name: string): ConfigMap | undefined {
    return this.source.getConfigMap(namespace, name);
  }

  getSecret(namespace: string, name: string): Secret | undefined {
    return this.source.getSecret(namespace, name);
  }

  getCSIDriver(name: string): CSIDriver | undefined {
    return this.source.getCSIDriver(name);
  }

  getPodByUID(uid: string): Pod | undefined {
    return this.source.getPodByUID(uid);
  }
}
