/**
 * Read access to the API objects real volume plugins need (configMap/secret contents, CSIDriver
 * settings). Standalone agents answer from manifest files; cluster agents from informers. A
 * missing object is `undefined`, never an exception.
 */
import type { ConfigMap, CSIDriver, Pod, Secret } from './k8s-types.ts';

export interface VolumeObjectGetter {
  getConfigMap(namespace: string, name: string): ConfigMap | undefined;
  getSecret(namespace: string, name: string): Secret | undefined;
  /**
   * What getConfigMap / getSecret answer, once a first read of the object has ended. A getter
   * that reads lazily (the cluster agent's GET cache) implements these, so that SetUp never takes
   * "not read yet" for "not found": the kubelet's configmap and secret managers wait for their
   * cache (watch strategy) or GET (cache strategy) before they answer. Absent: the synchronous
   * getters are always up to date (manifests).
   */
  awaitConfigMap?(namespace: string, name: string): Promise<ConfigMap | undefined>;
  awaitSecret?(namespace: string, name: string): Promise<Secret | undefined>;
  getCSIDriver(name: string): CSIDriver | undefined;
  /** The current version of a pod (downward API contents follow label/annotation changes). */
  getPodByUID?(uid: string): Pod | undefined;
}
