/**
 * The engine's view of pods (PodManager, PodStateProvider, SourcesReady of
 * lib/volumemanager/populator/pod-source.ts) over the manifest source. Standalone there is no
 * container runtime: a pod's containers "run" exactly while the pod is listed and not terminated.
 *
 * Lifecycle rules:
 * - A pod whose manifest file was removed is gone: containers terminating and runtime removed.
 * - A pod in phase Succeeded or Failed is terminated: containers terminating and runtime removed,
 *   and the pod manager does not list it. Hiding it matters: the populator keeps the volumes of
 *   pods it still knows until they were mounted once, so a terminated pod that stayed listed
 *   would keep a never-mounted volume desired forever.
 * - A manifest that becomes invalid never removes its pod: the source keeps serving the last
 *   valid version (see ManifestSource).
 */
import type { ManifestSource } from '../../lib/sources/manifest/index.ts';
import { isPodTerminated } from '../../lib/sources/manifest/index.ts';
import type { Pod } from '../../lib/volume/k8s-types.ts';
import type { PodUID } from '../../lib/volume/types.ts';
import type { PodManager, PodStateProvider, SourcesReady } from '../../lib/volumemanager/index.ts';

/** The subset of ManifestSource the adapters read (tests can hand in a stand-in). */
export type PodSource = Pick<ManifestSource, 'listPods' | 'getPodByUID' | 'isSynced'>;

export class ManifestPods implements PodManager, PodStateProvider, SourcesReady {
  constructor(private readonly source: PodSource) {}

  /** Listed, non-terminated pods, in source order. */
  getPods(): Pod[] {
    return this.source.listPods().filter((p) => !isPodTerminated(p));
  }

  /** The pod while it is listed and not terminated. */
  getPodByUID(uid: PodUID): Pod | undefined {
    const pod = this.source.getPodByUID(uid);
    return pod === undefined || isPodTerminated(pod) ? undefined : pod;
  }

  shouldPodContainersBeTerminating(uid: PodUID): boolean {
    return this.getPodByUID(uid) === undefined;
  }

  shouldPodRuntimeBeRemoved(uid: PodUID): boolean {
    return this.getPodByUID(uid) === undefined;
  }

  /** Sources are ready once the manifest directory was listed completely once. */
  allReady(): boolean {
    return this.source.isSynced();
  }
}
