/**
 * What the agent needs of a pod and object source: the read API that both the standalone
 * `ManifestSource` (lib/sources/manifest/) and the cluster `KubeSource` (lib/sources/kube/) offer.
 * The agent's adapters (ManifestPods, ManifestObjects, KubeObjects) and its pod sync are written
 * against this, so the rest of the agent does not know which source runs.
 */
import type { ConfigMap, CSIDriver, PersistentVolume, PersistentVolumeClaim, Pod, Secret } from '../../lib/volume/k8s-types.ts';

/** The part of a published change the agent acts on. */
export interface AgentSourceChange {
  pods: { updated: string[] };
  /** A ConfigMap, Secret, claim, PV or CSIDriver changed: every pod is processed again. */
  objectsChanged: boolean;
}

export interface AgentSource {
  listPods(): Pod[];
  getPodByUID(uid: string): Pod | undefined;
  /** True once everything was listed once ("sources ready"). */
  isSynced(): boolean;
  getPersistentVolume(name: string): PersistentVolume | undefined;
  getPersistentVolumeClaim(namespace: string, name: string): PersistentVolumeClaim | undefined;
  getConfigMap(namespace: string, name: string): ConfigMap | undefined;
  getSecret(namespace: string, name: string): Secret | undefined;
  getCSIDriver(name: string): CSIDriver | undefined;
  /** Current problems; `file` names the manifest file or the API path at fault. */
  sourceErrors(): { file: string; message: string }[];
  onChange(listener: (change: AgentSourceChange) => void): () => void;
  /** Re-reads everything (rescan of the directory, relist from the API server). */
  resync(): Promise<void>;
  stop(): Promise<void>;
}
