/**
 * The final step of a pod deletion, as the kubelet's status manager
 * (kubernetes/kubernetes pkg/kubelet/status/status_manager.go@v1.34 `syncPod` → `canBeDeleted`
 * → `Delete` with `GracePeriodSeconds: 0` and a UID precondition): `kubectl delete pod` only
 * sets `metadata.deletionTimestamp`; the API server removes the object once the node deletes it
 * with grace period 0, which the node does only when nothing of the pod is left on it.
 *
 * Here a pod with a deletionTimestamp has no running containers at once (no runtime:
 * lib/sources/pod-lifecycle.ts), so its volumes are torn down; the pod is deleted once its
 * resources are reclaimed: the kubelet's `PodResourcesAreReclaimed` volume check
 * (pkg/kubelet/kubelet_pods.go@v1.34, `podVolumesExist`: no mounted or possibly mounted volume
 * in the volume manager's actual state). Mirror pods are not deleted by this path upstream
 * either (`kubetypes.IsMirrorPod`), and static pods do not come from the API server here.
 *
 * Contract: at most one DELETE per pod in flight; a 404 (already gone) or 409 (a precondition
 * failed: another pod now has the name) ends the work for that UID; any other failure is retried
 * at the next {@link PodDeleter.sync} (every change, and the period as a safety net).
 */
import type { Clock, TimerHandle } from '../../lib/clock/clock.ts';
import { describeApiError, requestErrorStatus } from '../../lib/kube-client/api-errors.ts';
import { isPodDeleting } from '../../lib/sources/pod-lifecycle.ts';
import type { Pod } from '../../lib/volume/k8s-types.ts';
import type { Logger } from '../../lib/volume/logger.ts';

/** `kubetypes.ConfigMirrorAnnotationKey`. */
const mirrorAnnotation = 'kubernetes.io/config.mirror';

export interface PodDeleterOptions {
  /** The pods the source lists for this node. */
  listPods: () => readonly Pod[];
  /** Whether the volume manager may still have a volume of the pod mounted. */
  hasPossiblyMountedVolumes: (uid: string) => boolean;
  /**
   * Whether the actual state can be trusted (the reconciler's states have been synced: after
   * reconstruction, a mounted volume of a pod is in it). Nothing is deleted before.
   */
  volumeStatesSynced: () => boolean;
  /** DELETE with `gracePeriodSeconds: 0` and `preconditions.uid`. */
  deletePod: (namespace: string, name: string, uid: string) => Promise<void>;
  clock: Clock;
  logger: Logger;
  /** Safety-net period; default 10 s (the status manager's `syncPeriod`). */
  periodMs?: number;
}

export class PodDeleter {
  private readonly inFlight = new Set<string>();
  /** UIDs whose DELETE was answered (done, 404 or 409): never sent again. */
  private readonly done = new Set<string>();
  private timer: TimerHandle | null = null;
  private requested: TimerHandle | null = null;
  private stopped = false;
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly o: PodDeleterOptions) {}

  start(): void {
    const tick = (): void => {
      if (this.stopped) return;
      this.sync();
      this.timer = this.o.clock.setTimeout(tick, this.o.periodMs ?? 10_000);
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) this.o.clock.clearTimeout(this.timer);
    this.timer = null;
    if (this.requested !== null) this.o.clock.clearTimeout(this.requested);
    this.requested = null;
    await Promise.all(this.pending);
  }

  /**
   * A {@link sync} soon (the next timer turn), coalescing the requests made meanwhile: a burst of
   * volume-manager changes (a restart confirms thousands of mounts) costs one walk of the pods,
   * not one per change.
   */
  requestSync(): void {
    if (this.stopped || this.requested !== null) return;
    this.requested = this.o.clock.setTimeout(() => {
      this.requested = null;
      this.sync();
    }, 0);
  }

  /** Sends the DELETE of every deleting pod whose volumes are gone; returns the UIDs sent now. */
  sync(): string[] {
    if (this.stopped || !this.o.volumeStatesSynced()) return [];
    const sent: string[] = [];
    const listed = new Set<string>();
    for (const pod of this.o.listPods()) {
      const uid = pod.metadata.uid ?? '';
      listed.add(uid);
      if (uid === '' || !isPodDeleting(pod) || this.inFlight.has(uid) || this.done.has(uid)) continue;
      if (pod.metadata.annotations?.[mirrorAnnotation] !== undefined) continue;
      if (this.o.hasPossiblyMountedVolumes(uid)) continue;
      sent.push(uid);
      this.delete(pod.metadata.namespace ?? 'default', pod.metadata.name, uid);
    }
    // Forget UIDs the source no longer lists (the set stays bounded).
    for (const uid of this.done) if (!listed.has(uid)) this.done.delete(uid);
    return sent;
  }

  private delete(namespace: string, name: string, uid: string): void {
    this.inFlight.add(uid);
    const work = this.o
      .deletePod(namespace, name, uid)
      .then(
        () => {
          this.done.add(uid);
          this.o.logger.info(`Pod fully terminated and removed from etcd: ${namespace}/${name}`, { pod: `${namespace}/${name}`, podUID: uid });
        },
        (err: unknown) => {
          // KubeObjects wraps the client's error in a KubeApiRequestError that carries the status.
          const status = requestErrorStatus(err);
          if (status === 404 || status === 409) {
            this.done.add(uid);
            return;
          }
          this.o.logger.warn(`Failed to delete status for pod ${namespace}/${name}: ${describeApiError(err).message}`, { pod: `${namespace}/${name}`, podUID: uid });
        },
      )
      .finally(() => {
        this.inFlight.delete(uid);
        this.pending.delete(work);
      });
    this.pending.add(work);
  }
}
