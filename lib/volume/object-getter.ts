/**
 * Read access to the API objects real volume plugins need (configMap/secret contents, CSIDriver
 * settings). Standalone agents answer from manifest files; cluster agents from informers. A
 * missing object is `undefined`, never an exception.
 */
import type { ConfigMap, CSIDriver, Pod, Secret } from './k8s-types.ts';

export interface VolumeObjectGetter {
  getConfigMap(namespace: string, name: string): ConfigMap | undefined;
  getSecret(namespace: string, name: string): Secret | undefined;
  getCSIDriver(name: string): CSIDriver | undefined;
  /** The current version of a pod (downward API contents follow label/annotation changes). */
  getPodByUID?(uid: string): Pod | undefined;
}
