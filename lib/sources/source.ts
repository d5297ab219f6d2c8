/**
 * The contract every object source implements: the read API of the standalone
 * `ManifestSource` (lib/sources/manifest/) and of the cluster `KubeSource` (lib/sources/kube/).
 * What runs on a node (the pod adapters of lib/sources/pod-lifecycle.ts, the object adapters and
 * the pod sync of the agent) is written against it, so none of it knows which source runs.
 *
 * Every getter answers from the source's current view (its cache, never a live read) and returns
 * `undefined` for an object it does not have.
 */
import type { ConfigMap, CSIDriver, PersistentVolume, PersistentVolumeClaim, Pod, Secret } from '../volume/k8s-types.ts';

/**
 * A problem the source has right now, `{file, message}` as the snapshot shows it. `file` names
 * what is at fault: for the manifest source a file relative to the manifest directory ("." for
 * the directory itself); for the API source an API path, the collection an informer watches
 * (`/api/v1/pods?fieldSelector=spec.nodeName=node-a`) or one object
 * (`/api/v1/namespaces/prod/persistentvolumeclaims/data`). `message` is self-contained; a
 * manifest file's starts with the file name, e.g.
 * `pods.yaml: document 2 (Pod default/web): spec.volumes[0].name: must be a DNS-1123 label`.
 */
export interface SourceError {
  file: string;
  message: string;
}

/** The part of a published change that consumers act on; sources publish more (generation, errors…). */
export interface ObjectSourceChange {
  /** Uids of the pods whose object changed in any field. */
  pods: { updated: string[] };
  /** A ConfigMap, Secret, claim, PV or CSIDriver changed: every pod is processed again. */
  objectsChanged: boolean;
}

export interface ObjectSource {
  /** The pods bound to this node, terminated ones included (see lib/sources/pod-lifecycle.ts). */
  listPods(): Pod[];
  getPodByUID(uid: string): Pod | undefined;
  /** True once everything was listed once ("sources ready"). */
  isSynced(): boolean;
  getPersistentVolume(name: string): PersistentVolume | undefined;
  getPersistentVolumeClaim(namespace: string, name: string): PersistentVolumeClaim | undefined;
  getConfigMap(namespace: string, name: string): ConfigMap | undefined;
  getSecret(namespace: string, name: string): Secret | undefined;
  getCSIDriver(name: string): CSIDriver | undefined;
  /** Current problems; empty when there are none. */
  sourceErrors(): SourceError[];
  /** Registers a listener for published changes; returns its unsubscribe function. */
  onChange(listener: (change: ObjectSourceChange) => void): () => void;
  /** Re-reads everything (rescan of the directory, relist from the API server). */
  resync(): Promise<void>;
  stop(): Promise<void>;
}
