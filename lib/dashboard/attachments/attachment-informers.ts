/**
 * The dashboard server's informer set for the attachment view: one set per server process,
 * shared by every browser, started by the first request and stopped after
 * {@link ATTACHMENT_INFORMERS_IDLE_MS} without one. It lists and watches (lib/kube-client's
 * restarting informer over client-node's `ListWatch`) VolumeAttachments, PersistentVolumes,
 * PersistentVolumeClaims, Pods, Nodes, CSIDrivers, CSINodes and the node Leases of
 * `kube-node-lease`, and rebuilds the attachment model (model.ts) after every change, so that
 * the ADC's detach-request time is taken when the change arrives, not when a page asks.
 *
 * Failures keep the cached objects (a failing API server never looks like "everything was
 * detached") and are reported per resource until its watch is established again. Server-only;
 * client-node arrives through `clientNode` (loaded only when the view is used).
 */
import type {
  ConfigurationOptions,
  KubeConfig,
  KubernetesListObject,
  KubernetesObject,
  V1CSIDriver,
  V1CSINode,
  V1Lease,
  V1Node,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1Pod,
  V1VolumeAttachment,
} from '@kubernetes/client-node';
import type { Clock, TimerHandle } from '../../clock/clock.ts';
import { describeApiError } from '../../kube-client/api-errors.ts';
import type { Backoff } from '../../kube-client/backoff.ts';
import type { ClientNode } from '../../kube-client/client-node.ts';
import { RequestDeadlines } from '../../kube-client/request-deadline.ts';
import { RestartingInformer } from '../../kube-client/restarting-informer.ts';
import { NODE_LEASE_NAMESPACE } from './adc-constants.ts';
import { buildAttachmentModel, type AttachmentModel, type DetachRequest } from './model.ts';
import type { AttachmentObjects } from './objects.ts';

/** The informer set stops this long after the last request. */
export const ATTACHMENT_INFORMERS_IDLE_MS = 5 * 60_000;
const LIST_TIMEOUT_MS = 30_000;
const DEFAULT_BACKOFF: Backoff = { initialMs: 1_000, maxMs: 30_000 };
/** Changes within this window are folded into one rebuild. */
const REBUILD_DELAY_MS = 50;

/** The watched kinds, by the field of {@link AttachmentObjects} they fill. */
export type WatchedKind = keyof AttachmentObjects;

/** A resource whose list or watch fails (the cached objects are kept). */
export interface InformerProblem {
  readonly kind: WatchedKind;
  /** The collection path, e.g. `/apis/storage.k8s.io/v1/volumeattachments`. */
  readonly path: string;
  readonly message: string;
  readonly sinceMs: number;
}

/** What a request gets: the model, whether every resource has been listed, and the failures. */
export interface AttachmentView {
  /** Every informer has listed once; before that `model` is `null`. */
  readonly listed: boolean;
  readonly model: AttachmentModel | null;
  readonly problems: readonly InformerProblem[];
}

export interface AttachmentInformersOptions {
  readonly clientNode: ClientNode;
  readonly kubeConfig: KubeConfig;
  readonly clock: Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'>;
  readonly backoff?: Backoff;
  readonly idleMs?: number;
  /** Called after every rebuild of the model (tests). Must not throw. */
  readonly onRebuild?: (model: AttachmentModel) => void;
}

interface Watched {
  readonly kind: WatchedKind;
  readonly path: string;
  readonly informer: RestartingInformer<KubernetesObject>;
}

type Lister = (options: ConfigurationOptions) => Promise<KubernetesListObject<KubernetesObject>>;

/** The list calls of each kind (the paths are what `ListWatch` watches). */
function listers(k8s: ClientNode, kc: KubeConfig): Record<WatchedKind, { path: string; list: Lister }> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const storage = kc.makeApiClient(k8s.StorageV1Api);
  const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
  const as = <T extends KubernetesObject>(p: Promise<KubernetesListObject<T>>): Promise<KubernetesListObject<KubernetesObject>> => p;
  return {
    volumeAttachments: { path: '/apis/storage.k8s.io/v1/volumeattachments', list: (o) => as<V1VolumeAttachment>(storage.listVolumeAttachment({}, o)) },
    persistentVolumes: { path: '/api/v1/persistentvolumes', list: (o) => as<V1PersistentVolume>(core.listPersistentVolume({}, o)) },
    persistentVolumeClaims: { path: '/api/v1/persistentvolumeclaims', list: (o) => as<V1PersistentVolumeClaim>(core.listPersistentVolumeClaimForAllNamespaces({}, o)) },
    pods: { path: '/api/v1/pods', list: (o) => as<V1Pod>(core.listPodForAllNamespaces({}, o)) },
    nodes: { path: '/api/v1/nodes', list: (o) => as<V1Node>(core.listNode({}, o)) },
    csiDrivers: { path: '/apis/storage.k8s.io/v1/csidrivers', list: (o) => as<V1CSIDriver>(storage.listCSIDriver({}, o)) },
    csiNodes: { path: '/apis/storage.k8s.io/v1/csinodes', list: (o) => as<V1CSINode>(storage.listCSINode({}, o)) },
    leases: {
      path: `/apis/coordination.k8s.io/v1/namespaces/${NODE_LEASE_NAMESPACE}/leases`,
      list: (o) => as<V1Lease>(coordination.listNamespacedLease({ namespace: NODE_LEASE_NAMESPACE }, o)),
    },
  };
}

const KINDS: readonly WatchedKind[] = ['volumeAttachments', 'persistentVolumes', 'persistentVolumeClaims', 'pods', 'nodes', 'csiDrivers', 'csiNodes', 'leases'];

export class AttachmentInformers {
  private readonly options: AttachmentInformersOptions;
  private watched: Watched[] = [];
  private readonly problems = new Map<WatchedKind, InformerProblem>();
  private readonly listedKinds = new Set<WatchedKind>();
  private deadlines: RequestDeadlines | null = null;
  private model: AttachmentModel | null = null;
  private detachRequests = new Map<string, DetachRequest>();
  private rebuildTimer: TimerHandle | undefined;
  private idleTimer: TimerHandle | undefined;
  private running = false;
  private stopping: Promise<void> | null = null;
  /** Waiters of {@link whenListed}. */
  private readonly waiters = new Set<() => void>();

  constructor(options: AttachmentInformersOptions) {
    this.options = options;
  }

  /** Whether the informers are running (started and not stopped for being idle). */
  isRunning(): boolean {
    return this.running;
  }

  /**
   * The current view; starts the informers when they are not running and (re)arms the idle
   * stop. Does not wait for the first lists: {@link whenListed} does.
   */
  view(): AttachmentView {
    this.touch();
    return { listed: this.model !== null, model: this.model, problems: [...this.problems.values()] };
  }

  /** Resolves once every resource was listed, a failure is known, or `timeoutMs` passed. */
  whenListed(timeoutMs: number): Promise<void> {
    this.touch();
    if (this.model !== null || this.problems.size > 0) return Promise.resolve();
    const { clock } = this.options;
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clock.clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = clock.setTimeout(done, timeoutMs);
      this.waiters.add(done);
    });
  }

  private settle(): void {
    for (const waiter of [...this.waiters]) waiter();
  }

  /** Stops every informer (also done by the idle timer). A later {@link view} starts them again. */
  async stop(): Promise<void> {
    if (this.idleTimer !== undefined) this.options.clock.clearTimeout(this.idleTimer);
    if (this.rebuildTimer !== undefined) this.options.clock.clearTimeout(this.rebuildTimer);
    this.idleTimer = undefined;
    this.rebuildTimer = undefined;
    if (!this.running) return this.stopping ?? undefined;
    this.running = false;
    this.settle();
    const watched = this.watched;
    this.watched = [];
    this.deadlines?.abortAll();
    this.deadlines = null;
    this.model = null;
    this.detachRequests = new Map();
    this.listedKinds.clear();
    this.problems.clear();
    this.stopping = Promise.all(watched.map((w) => w.informer.stop())).then(() => undefined);
    await this.stopping;
  }

  private touch(): void {
    if (!this.running) this.start();
    if (this.idleTimer !== undefined) this.options.clock.clearTimeout(this.idleTimer);
    this.idleTimer = this.options.clock.setTimeout(() => {
      this.idleTimer = undefined;
      void this.stop();
    }, this.options.idleMs ?? ATTACHMENT_INFORMERS_IDLE_MS);
  }

  private start(): void {
    const { clientNode: k8s, kubeConfig, clock } = this.options;
    this.running = true;
    const deadlines = new RequestDeadlines({ clientNode: k8s, clock, timeoutMs: LIST_TIMEOUT_MS });
    this.deadlines = deadlines;
    const calls = listers(k8s, kubeConfig);
    this.watched = KINDS.map((kind) => {
      const { path, list } = calls[kind];
      const informer = new RestartingInformer<KubernetesObject>({
        clientNode: k8s,
        kubeConfig,
        clock,
        path,
        list: () => deadlines.run(`LIST ${path}`, (o) => list(o)),
        restartBackoff: this.options.backoff ?? DEFAULT_BACKOFF,
        handlers: {
          upsert: () => { this.changed(); },
          remove: () => { this.changed(); },
          listed: () => {
            this.listedKinds.add(kind);
            this.changed();
          },
          established: () => {
            if (this.problems.delete(kind)) this.changed();
          },
          failed: (err: unknown) => {
            const previous = this.problems.get(kind);
            this.problems.set(kind, { kind, path, message: describeApiError(err).message, sinceMs: previous?.sinceMs ?? clock.now() });
            this.settle();
          },
        },
      });
      return { kind, path, informer };
    });
    for (const w of this.watched) void w.informer.start();
  }

  private changed(): void {
    if (!this.running || this.rebuildTimer !== undefined) return;
    this.rebuildTimer = this.options.clock.setTimeout(() => {
      this.rebuildTimer = undefined;
      this.rebuild();
    }, REBUILD_DELAY_MS);
  }

  private rebuild(): void {
    if (!this.running || this.listedKinds.size < KINDS.length) return;
    // client-node's V1 objects (LIST) and plain JSON (WATCH) both have the structural shape of objects.ts.
    const objects = Object.fromEntries(this.watched.map((w) => [w.kind, w.informer.objects()])) as unknown as AttachmentObjects;
    const { model, detachRequests } = buildAttachmentModel(objects, {
      nowMs: this.options.clock.now(),
      detachRequests: this.detachRequests,
      baseline: this.model === null,
    });
    this.model = model;
    this.detachRequests = detachRequests;
    this.settle();
    this.options.onRebuild?.(model);
  }
}
