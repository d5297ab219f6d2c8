/**
 * The pod lifecycle rules of a node without a container runtime connection, and the engine's
 * view of pods (PodManager, PodStateProvider, SourcesReady of
 * lib/volumemanager/populator/pod-source.ts) built on them over any {@link ObjectSource}.
 *
 * The kubelet's pod workers decide when a pod's containers must stop and when none of them can
 * still run (kubernetes/kubernetes pkg/kubelet/pod_workers.go@v1.34,
 * `ShouldPodContainersBeTerminating`, `ShouldPodRuntimeBeRemoved`); a pod in a terminal phase
 * never runs again (pkg/kubelet/kubelet_pods.go@v1.34, `isAdmittedPodTerminal`). Here a pod's
 * containers "run" exactly while the pod is listed by its source and not terminated:
 * - A pod the source no longer lists (manifest file removed, pod deleted from the API server) is
 *   gone: containers terminating and runtime removed.
 * - A pod in phase Succeeded or Failed is terminated: containers terminating and runtime
 *   removed, and the pod manager does not list it. Hiding it matters: the populator keeps the
 *   volumes of pods it still knows until they were mounted once, so a terminated pod that stayed
 *   listed would keep a never-mounted volume desired forever.
 * - A pod with `metadata.deletionTimestamp` (`kubectl delete pod`) is being deleted: its
 *   containers must stop (the kubelet kills them within the grace period, pod_workers.go
 *   `ShouldPodContainersBeTerminating`). Without a runtime there is nothing to wait for, so they
 *   are stopped at once: containers terminating and runtime removed, not listed by the pod
 *   manager; its volumes are torn down, after which the agent deletes the pod object as the
 *   kubelet's status manager does (agent/node/pod-deleter.ts).
 * - A manifest that becomes invalid never removes its pod: the manifest source keeps serving the
 *   last valid version (see ManifestSource).
 */
import type { Pod } from '../volume/k8s-types.ts';
import type { PodUID } from '../volume/types.ts';
import type { PodManager, PodStateProvider, SourcesReady } from '../volumemanager/populator/pod-source.ts';
import type { ObjectSource } from './source.ts';

/** Phase Succeeded or Failed: no container of the pod runs again. A missing phase is not terminal. */
export function isTerminalPodPhase(phase: string | null | undefined): boolean {
  return phase === 'Succeeded' || phase === 'Failed';
}

/**
 * A pod in phase Succeeded or Failed is terminated: its containers will not run again, so its
 * volumes may be torn down although the pod object still exists. This is only data on the pod;
 * a terminated pod stays listed by its source until it is removed there.
 */
export function isPodTerminated(pod: Pod): boolean {
  return isTerminalPodPhase(pod.status?.phase);
}

/** The pod has a `metadata.deletionTimestamp`: the API server is waiting for the node to stop it. */
export function isPodDeleting(pod: Pod): boolean {
  return pod.metadata.deletionTimestamp !== undefined;
}

/** Terminated, or being deleted: none of its containers runs (see the file comment). */
function isPodStopped(pod: Pod): boolean {
  return isPodTerminated(pod) || isPodDeleting(pod);
}

/** The part of a source the pod adapter reads (tests can hand in a stand-in). */
export type PodListSource = Pick<ObjectSource, 'listPods' | 'getPodByUID' | 'isSynced'>;

/** The engine's pod manager, pod state provider and sources-ready over one object source. */
export class SourcePods implements PodManager, PodStateProvider, SourcesReady {
  constructor(private readonly source: PodListSource) {}

  /** Listed pods that are neither terminated nor being deleted, in source order. */
  getPods(): Pod[] {
    return this.source.listPods().filter((p) => !isPodStopped(p));
  }

  /** The pod while it is listed, not terminated and not being deleted. */
  getPodByUID(uid: PodUID): Pod | undefined {
    const pod = this.source.getPodByUID(uid);
    return pod === undefined || isPodStopped(pod) ? undefined : pod;
  }

  shouldPodContainersBeTerminating(uid: PodUID): boolean {
    return this.getPodByUID(uid) === undefined;
  }

  shouldPodRuntimeBeRemoved(uid: PodUID): boolean {
    return this.getPodByUID(uid) === undefined;
  }

  /** Sources are ready once the source listed everything once. */
  allReady(): boolean {
    return this.source.isSynced();
  }
}
