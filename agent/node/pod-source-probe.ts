/**
 * The engine's `PodSourceProbe` (lib/volumemanager/operator-actions.ts) over the agent's pod
 * source: what the forced TearDown reads about a pod right before it acts.
 *
 * - Kubernetes source: the pod is looked up in a live LIST of this node's pods from the API
 *   server (never the informer cache, which may have missed or dropped it; the LIST is needed
 *   because only the pod's UID is known, and a pod never moves to another node). The errors that
 *   may concern the pod: a failing pod informer (its view of this node's pods is stale), and any
 *   error naming the pod (its API path or its UID).
 * - Manifest source: the directory is re-read first (a rescan, as a resync does), then the pod
 *   is looked up. Every source error may concern the pod: an unreadable or invalid file may be
 *   the one that defines it, and an unreadable directory hides every pod.
 */
import { isPodTerminated, isTerminalPodPhase } from '../../lib/sources/pod-lifecycle.ts';
import type { NodeName, PodUID } from '../../lib/volume/types.ts';
import type { PodRef, PodSourceLookup, PodSourceProbe } from '../../lib/volumemanager/index.ts';
import type { AgentSource } from './agent-source.ts';
import type { LivePod } from './kube-objects.ts';

/** The informer path of the pod list (`/api/v1/pods?fieldSelector=…`): its errors concern every pod. */
const podListPath = '/api/v1/pods';

function podPath(pod: PodRef): string {
  return `/api/v1/namespaces/${pod.namespace}/pods/${pod.name}`;
}

/** The probe of an agent with the manifest source. */
export function manifestPodSourceProbe(source: Pick<AgentSource, 'resync' | 'getPodByUID' | 'sourceErrors'>): PodSourceProbe {
  return {
    async lookupPod(podUid: PodUID): Promise<PodSourceLookup> {
      await source.resync();
      const pod = source.getPodByUID(podUid);
      if (pod === undefined) return { presence: 'absent', detail: `no manifest file defines pod ${podUid} (directory re-read just now)`, pod: null };
      const ref = { namespace: pod.metadata.namespace ?? 'default', name: pod.metadata.name };
      const label = `pod ${ref.namespace}/${ref.name} (uid ${podUid})`;
      if (isPodTerminated(pod)) return { presence: 'terminated', detail: `${label} is in phase ${pod.status?.phase ?? ''} in its manifest file`, pod: ref };
      return { presence: 'present', detail: `${label} is defined by a manifest file (directory re-read just now)`, pod: ref };
    },
    errorsForPod() {
      return source.sourceErrors();
    },
  };
}

/** The probe of an agent with the Kubernetes source. */
export function kubePodSourceProbe(
  nodeName: NodeName,
  listNodePodsLive: (nodeName: NodeName) => Promise<LivePod[]>,
  source: Pick<AgentSource, 'sourceErrors'>,
): PodSourceProbe {
  return {
    async lookupPod(podUid: PodUID): Promise<PodSourceLookup> {
      const pod = (await listNodePodsLive(nodeName)).find((p) => p.uid === podUid);
      if (pod === undefined) return { presence: 'absent', detail: `the API server has no pod with uid ${podUid} on node ${nodeName} (read just now)`, pod: null };
      const ref = { namespace: pod.namespace, name: pod.name };
      const label = `pod ${pod.namespace}/${pod.name} (uid ${podUid})`;
      if (isTerminalPodPhase(pod.phase)) return { presence: 'terminated', detail: `${label} is in phase ${pod.phase} in the API server`, pod: ref };
      return { presence: 'present', detail: `${label} exists in the API server (read just now)`, pod: ref };
    },
    errorsForPod(podUid: PodUID, pod: PodRef | null) {
      return source
        .sourceErrors()
        .filter((e) => e.file.startsWith(`${podListPath}?`) || e.file === podListPath || (pod !== null && e.file === podPath(pod)) || e.message.includes(podUid));
    },
  };
}
