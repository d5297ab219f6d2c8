/**
 * What the operation generator and the populator read from the Kubernetes API, as an
 * interface. Standalone agents answer from manifest files; cluster agents from the API server.
 */
import type { Node, PersistentVolume, PersistentVolumeClaim } from './k8s-types.ts';
import type { NodeName } from './types.ts';

export class ObjectNotFoundError extends Error {
  override readonly name = 'ObjectNotFoundError';
  constructor(kind: string, name: string) {
    super(`${kind} "${name}" not found`);
  }
}

export function isObjectNotFoundError(err: unknown): err is ObjectNotFoundError {
  return err instanceof ObjectNotFoundError;
}

export interface VolumeKubeClient {
  getPersistentVolumeClaim(namespace: string, name: string): Promise<PersistentVolumeClaim>;
  getPersistentVolume(name: string): Promise<PersistentVolume>;
  /**
   * GETs this node's Node object. Absent when there is no API server by design (standalone),
   * in which case node-status steps are skipped as the kubelet skips them without a client.
   */
  getNode?: (name: NodeName) => Promise<Node>;
  /**
   * The node informer's cached `volumesAttached` (name → devicePath), or null when no informer
   * exists. Lets VerifyControllerAttachedVolume fail fast without starting an operation.
   */
  getAttachedVolumesFromNodeStatus?: () => Map<string, string> | null;
  /** Records a finished file-system resize on the claim (`MarkFSResizeFinished`). Optional. */
  markFSResizeFinished?: (pvc: PersistentVolumeClaim, newSizeBytes: number) => Promise<void>;
}
