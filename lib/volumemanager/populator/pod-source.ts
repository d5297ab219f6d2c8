/**
 * What the populator reads about pods, as interfaces (kubelet pod manager, pod state provider,
 * sources-ready). The agent implements them over manifest files or the API server.
 */
import type { Pod } from '../../volume/k8s-types.ts';
import type { PodUID } from '../../volume/types.ts';

/** `podManager`: the pods bound to this node that the kubelet knows about. */
export interface PodManager {
  getPods(): Pod[];
  getPodByUID(uid: PodUID): Pod | undefined;
}

/** `podStateProvider`: container lifecycle as seen by the pod workers. */
export interface PodStateProvider {
  /** The pod's containers must stop (deleted, or reached a terminal phase): do not (re)add its volumes. */
  shouldPodContainersBeTerminating(uid: PodUID): boolean;
  /** The pod is terminated and none of its containers can still be running: its volumes may go. */
  shouldPodRuntimeBeRemoved(uid: PodUID): boolean;
}

/** `config.SourcesReady`: every pod source has delivered its initial list. */
export interface SourcesReady {
  allReady(): boolean;
}
