/**
 * KubeSource: the node agent's object source backed by the Kubernetes API server. It offers the
 * read API of the standalone `ManifestSource` (so the agent can use either), plus this node's
 * Node object.
 *
 * What comes from where:
 * - informers (list + watch, see resilient-informer.ts): this node's pods
 *   (`fieldSelector=spec.nodeName=<node>`), this node's Node (`metadata.name=<node>`) and all
 *   CSIDrivers (cluster-scoped, small, and without secret contents); with
 *   `persistentVolumes: 'informer'` (observe mode, whose role may list them) all PVs too;
 * - GETs by name with a short cache (see referenced-objects.ts): the PersistentVolumeClaims,
 *   ConfigMaps and Secrets these pods reference, the node-side secrets of their CSI volumes and,
 *   with `persistentVolumes: 'get'` (the default), the PVs their claims are bound to. A node
 *   identity (`system:node:<name>`) may only GET individual PVs: the node authorizer answers a
 *   LIST or WATCH of persistentvolumes with 403 "can only get individual resources of this type"
 *   (kubernetes/kubernetes plugin/pkg/auth/authorizer/node/node_authorizer.go@v1.34), which is
 *   why the kubelet GETs the PV of each claim (pkg/kubelet/volumemanager/populator/
 *   desired_state_of_world_populator.go@v1.34 `getPVSpec`).
 *
 * Contracts:
 * - `isSynced()` becomes true once every informer has applied its first list and every object
 *   referenced at that point has had its first GET answered (found, absent or failed); it then
 *   stays true. This is the "sources ready" the volume manager waits for before it may tear
 *   down volumes of pods it does not know.
 * - API failures never remove anything: an informer that fails keeps its objects and is
 *   restarted with backoff; a failed GET keeps the last fetched object. Both show up in
 *   `sourceErrors()` until they recover. In particular an unresolved claim only affects its own
 *   volume (the volume manager reports it for the pod); the pod stays listed (kubernetes#120150).
 * - Pods in phase Succeeded/Failed stay listed (the agent filters them, as for manifests); their
 *   references are not fetched.
 * - Returned objects are frozen and shared; copy before changing.
 * - Changes are published in batches (all callbacks of one list or event, then one change),
 *   after the current synchronous work, to listeners registered with `onChange`. A throwing
 *   listener is logged and does not affect others.
 */
import { isDeepStrictEqual } from 'node:util';
import { CoreV1Api, Observable, StorageV1Api } from '@kubernetes/client-node';
import type { KubeConfig, KubernetesObject, V1CSIDriver, V1Node, V1PersistentVolume, V1Pod } from '@kubernetes/client-node';
import type { Clock } from '../../clock/clock.ts';
import type {
  ConfigMap,
  CSIDriver,
  Node,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  Secret,
} from '../../volume/k8s-types.ts';
import { makeApiClient } from './api-client.ts';
import { isPodTerminated } from '../pod-lifecycle.ts';
import { discardLogger, type Logger } from '../../volume/logger.ts';
import { apiErrorStatus } from '../../kube-client/api-errors.ts';
import type { Backoff } from '../../kube-client/backoff.ts';
import { RequestDeadlines } from '../../kube-client/request-deadline.ts';
import {
  convertConfigMap,
  convertCSIDriver,
  convertNode,
  convertPersistentVolume,
  convertPersistentVolumeClaim,
  convertPod,
  convertSecret,
} from './api-objects.ts';
import type { Conversion } from './api-objects.ts';
import { ContainerStateTracker } from './container-states.ts';
import type { ContainerState } from '../../api/snapshot.ts';
import { KubeSourceStateError } from './errors.ts';
import { persistentVolumeRef, persistentVolumeSecretReferences, podReferences, refPath } from './object-references.ts';
import type { ObjectRef } from './object-references.ts';
import { ReferencedObjectCache } from './referenced-objects.ts';
import type { ReferencedObject } from './referenced-objects.ts';
import { ResilientInformer } from './resilient-informer.ts';
import type { InformerControl, InformerHandlers } from './resilient-informer.ts';
import type { SourceError } from '../source.ts';

/** Informer restarts after a failure: 1 s, doubling up to 30 s (client-go's watch backoff range). */
export const defaultKubeRestartBackoff: Backoff = { initialMs: 1000, maxMs: 30_000 };
/** A referenced ConfigMap/Secret/claim is fetched again after 60 s (the kubelet's cache TTL default). */
export const defaultReferencedObjectTtlMs = 60_000;
/** Retries of failed, absent or unbound references: 1 s doubling up to 30 s. */
export const defaultReferencedObjectRetry: Backoff = { initialMs: 1000, maxMs: 30_000 };
/** GETs of referenced objects in flight at once. */
export const defaultMaxConcurrentFetches = 8;
/** A LIST or GET that has not answered after 60 s is abandoned (and retried like a failure). */
const defaultKubeRequestTimeoutMs = 60_000;

export interface KubeSourceOptions {
  /** Where and how to reach the API server (see `loadKubeConfig`). */
  kubeConfig: KubeConfig;
  /** This node's name: selects its pods and its Node object. */
  nodeName: string;
  /** Time source for restart and refresh timers. */
  clock: Clock;
  /** Receives warn lines for failures and info lines for sync and recovery. */
  logger?: Logger;
  restartBackoff?: Backoff;
  referencedObjectTtlMs?: number;
  referencedObjectRetry?: Backoff;
  maxConcurrentFetches?: number;
  /** Deadline of each LIST and GET (watches have client-node's own inactivity timeout). */
  requestTimeoutMs?: number;
  /**
   * Fetch only the claims pods reference, never their ConfigMaps and Secrets (observe mode: the
   * kubelet sets those volumes up, the agent only needs their names, and its role may not read
   * them). Default false.
   */
  claimsOnly?: boolean;
  /**
   * How PersistentVolumes are read: `get` (default) GETs the PV of each referenced bound claim
   * (what a node identity may do); `informer` lists and watches all of them (observe mode's
   * truth diff needs every PV).
   */
  persistentVolumes?: 'get' | 'informer';
}

/**
 * One published change, in the shape of the manifest source's change plus two flags:
 * pod uids added, updated (anything but `metadata.resourceVersion` differs) or removed;
 * `objectsChanged` when a CSIDriver, a referenced claim/config map/secret, or a PersistentVolume
 * of a referenced claim changed (the first GET of a config map or secret is not a change: its
 * readers wait for it); `errorsChanged` when `sourceErrors()` differs; `nodeChanged`
 * when this node's Node differs (ignoring its resourceVersion, so heartbeats do not count);
 * `syncedChanged` when the source just became synced; `containerStatesChanged` when
 * {@link KubeSource.getContainerStates} answers differently for some pod (container statuses
 * alone never make a pod `updated`: see container-states.ts).
 */
export interface KubeSourceChange {
  generation: number;
  pods: { added: string[]; updated: string[]; removed: string[] };
  objectsChanged: boolean;
  errorsChanged: boolean;
  nodeChanged: boolean;
  syncedChanged: boolean;
  containerStatesChanged: boolean;
}

export type KubeSourceChangeListener = (change: KubeSourceChange) => void;

type Phase = 'new' | 'running' | 'stopped';


export class KubeSource {
  readonly nodeName: string;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly core: CoreV1Api;

  private readonly podInformer: ResilientInformer<V1Pod>;
  private readonly nodeInformer: ResilientInformer<V1Node>;
  /** Null with `persistentVolumes: 'get'`. */
  private readonly pvInformer: ResilientInformer<V1PersistentVolume> | null;
  private readonly csiDriverInformer: ResilientInformer<V1CSIDriver>;
  private readonly informers: readonly InformerControl[];
  private readonly references: ReferencedObjectCache;
  private readonly claimsOnly: boolean;
  private readonly deadlines: RequestDeadlines;

  private phase: Phase = 'new';
  private synced = false;
  private generationValue = 0;
  private readonly pods = new Map<string, Pod>();
  /** namespace/name → uid, to notice a pod replaced under the same name. */
  private readonly podUIDs = new Map<string, string>();
  private readonly persistentVolumes = new Map<string, PersistentVolume>();
  private readonly csiDrivers = new Map<string, CSIDriver>();
  private node: Node | undefined;
  /** The containers' states of the pods, outside the pod objects (container-states.ts). */
  private readonly containerStates: ContainerStateTracker;
  private containerStatesDirty = false;
  /** Objects the converter rejected or partly rejected, by API path. */
  private readonly conversionErrors = new Map<string, string>();
  /** PV names bound to referenced claims: only their changes are `objectsChanged`. */
  private referencedPVNames = new Set<string>();

  // Batching of changes until the flush.
  private flushQueued = false;
  private referencesDirty = false;
  private readonly newPodRefs: ObjectRef[] = [];
  private objectsDirty = false;
  private nodeDirty = false;
  private publishedPods = new Map<string, Pod>();
  private publishedErrors: SourceError[] = [];
  private readonly listeners = new Set<KubeSourceChangeListener>();
  private readonly syncWaiters: { resolve: () => void; reject: (err: Error) => void }[] = [];

  constructor(options: KubeSourceOptions) {
    this.nodeName = options.nodeName;
    this.claimsOnly = options.claimsOnly === true;
    this.clock = options.clock;
    this.containerStates = new ContainerStateTracker(() => this.clock.now());
    this.logger = options.logger ?? discardLogger;
    const kc = options.kubeConfig;
    this.core = makeApiClient(kc, CoreV1Api);
    const storage = makeApiClient(kc, StorageV1Api);
    this.deadlines = new RequestDeadlines({ clientNode: { Observable }, clock: this.clock, timeoutMs: options.requestTimeoutMs ?? defaultKubeRequestTimeoutMs });
    const deadlines = this.deadlines;
    const restartBackoff = options.restartBackoff ?? defaultKubeRestartBackoff;
    const common = { kubeConfig: kc, clock: this.clock, logger: this.logger, restartBackoff };

    const podSelector = `spec.nodeName=${this.nodeName}`;
    // No `resourceVersion=0`, unlike the kubelet's reflector (k8s.io/client-go
    // tools/cache/reflector.go@v1.34 lists with "0": any version the API server's watch cache
    // has). A consistent list may wait for the cache to catch up with etcd (up to about 60 ms of a
    // restart with 200 pods here), but a list that lags could leave out a pod whose volumes the
    // previous process had just mounted, and sources ready without that pod would let the
    // reconciler unmount them.
    this.podInformer = new ResilientInformer<V1Pod>({
      ...common,
      path: '/api/v1/pods',
      fieldSelector: podSelector,
      list: () => deadlines.run(`LIST /api/v1/pods?fieldSelector=${podSelector}`, (options) => this.core.listPodForAllNamespaces({ fieldSelector: podSelector }, options)),
      description: `pods on node ${this.nodeName}`,
      handlers: this.handlers<V1Pod>((p) => {
        this.upsertPod(p);
      }, (p) => {
        this.removePod(p);
      }),
    });
    const nodeSelector = `metadata.name=${this.nodeName}`;
    this.nodeInformer = new ResilientInformer<V1Node>({
      ...common,
      path: '/api/v1/nodes',
      fieldSelector: nodeSelector,
      list: () => deadlines.run(`LIST /api/v1/nodes?fieldSelector=${nodeSelector}`, (options) => this.core.listNode({ fieldSelector: nodeSelector }, options)),
      description: `node ${this.nodeName}`,
      handlers: this.handlers<V1Node>((n) => {
        this.upsertNode(n);
      }, (n) => {
        this.removeNode(n);
      }),
    });
    this.pvInformer = options.persistentVolumes !== 'informer' ? null : new ResilientInformer<V1PersistentVolume>({
      ...common,
      path: '/api/v1/persistentvolumes',
      list: () => deadlines.run('LIST /api/v1/persistentvolumes', (options) => this.core.listPersistentVolume({}, options)),
      description: 'persistent volumes',
      handlers: this.handlers<V1PersistentVolume>((pv) => {
        this.upsertPV(pv);
      }, (pv) => {
        this.removePV(pv);
      }),
    });
    this.csiDriverInformer = new ResilientInformer<V1CSIDriver>({
      ...common,
      path: '/apis/storage.k8s.io/v1/csidrivers',
      list: () => deadlines.run('LIST /apis/storage.k8s.io/v1/csidrivers', (options) => storage.listCSIDriver({}, options)),
      description: 'CSI drivers',
      handlers: this.handlers<V1CSIDriver>((d) => {
        this.upsertCSIDriver(d);
      }, (d) => {
        this.removeCSIDriver(d);
      }),
    });
    this.informers = [this.podInformer, this.nodeInformer, ...(this.pvInformer === null ? [] : [this.pvInformer]), this.csiDriverInformer];

    const ttlMs = options.referencedObjectTtlMs ?? defaultReferencedObjectTtlMs;
    const retry = options.referencedObjectRetry ?? defaultReferencedObjectRetry;
    this.references = new ReferencedObjectCache({
      clock: this.clock,
      fetch: (ref) => this.fetchReferenced(ref),
      ttlMs,
      retry: { initialMs: retry.initialMs, maxMs: Math.min(retry.maxMs, ttlMs) },
      maxConcurrent: options.maxConcurrentFetches ?? defaultMaxConcurrentFetches,
      onUpdate: (ref, change) => {
        // The first GET of a config map or secret is no change: the volume SetUps that read one
        // wait for that GET (awaitConfigMap, awaitSecret), so none has seen it missing. Publishing
        // it made the agent reprocess every pod and set up every config map volume of a restart
        // twice (600 SetUps, about 70 ms). A CSI call that read a secret's absence is retried by
        // its backoff either way.
        const firstFetchOfAwaited = change.firstFetch && (ref.kind === 'ConfigMap' || ref.kind === 'Secret');
        if (change.valueChanged && !firstFetchOfAwaited) {
          this.objectsDirty = true;
          // A claim's binding decides which PV is referenced, and a PV which CSI secrets.
          if (ref.kind === 'PersistentVolumeClaim' || ref.kind === 'PersistentVolume') this.referencesDirty = true;
        }
        this.queueFlush();
      },
    });
  }

  /** Incremented by every published change. */
  get generation(): number {
    return this.generationValue;
  }

  /**
   * Starts the informers; resolves after each has made its first attempt (listed, or failed
   * and scheduled a retry). It does not wait for sync: see {@link waitUntilSynced}. Throws
   * {@link KubeSourceStateError} if called twice or after stop.
   */
  async start(): Promise<void> {
    if (this.phase !== 'new') throw new KubeSourceStateError(`the API source for node ${this.nodeName} was already started (a source runs once)`);
    this.phase = 'running';
    this.logger.info('API source starting', { node: this.nodeName });
    await Promise.all(this.informers.map((informer) => informer.start()));
  }

  /** Stops informers and refreshes. Idempotent. The last state stays readable; no more changes. */
  async stop(): Promise<void> {
    if (this.phase === 'stopped') return;
    this.phase = 'stopped';
    this.references.stop();
    this.deadlines.abortAll();
    for (const waiter of this.syncWaiters.splice(0)) waiter.reject(new KubeSourceStateError('the API source was stopped before it synced'));
    await Promise.all(this.informers.map((informer) => informer.stop()));
  }

  /** See the class contract. Stays true after stop. */
  isSynced(): boolean {
    return this.synced;
  }

  /** Resolves once synced; rejects with {@link KubeSourceStateError} if stopped first. */
  waitUntilSynced(): Promise<void> {
    if (this.synced) return Promise.resolve();
    if (this.phase === 'stopped') return Promise.reject(new KubeSourceStateError('the API source is stopped'));
    return new Promise<void>((resolve, reject) => {
      this.syncWaiters.push({ resolve, reject });
    });
  }

  /**
   * A forced resync: every informer lists again from scratch and every referenced object is
   * fetched again. Resolves when that is done (or failed and is being retried).
   */
  async resync(): Promise<void> {
    if (this.phase !== 'running') return;
    await Promise.all([...this.informers.map((informer) => informer.relist()), this.references.refreshAll()]);
  }

  /** This node's pods, in list order. */
  listPods(): Pod[] {
    return [...this.pods.values()];
  }

  getPodByUID(uid: string): Pod | undefined {
    return this.pods.get(uid);
  }

  /** The containers' states of a listed pod from its `status`; undefined when it has none (see container-states.ts). */
  getContainerStates(uid: string): readonly ContainerState[] | undefined {
    return this.pods.has(uid) ? this.containerStates.get(uid) : undefined;
  }

  /** Whether PVs come from an informer (`persistentVolumes: 'informer'`), which is kept fresh by its watch. */
  watchesPersistentVolumes(): boolean {
    return this.pvInformer !== null;
  }

  /** The PV from the informer, or (`persistentVolumes: 'get'`) the cached GET of a referenced claim's PV. */
  getPersistentVolume(name: string): PersistentVolume | undefined {
    if (this.pvInformer !== null) return this.persistentVolumes.get(name);
    const object = this.references.get(persistentVolumeRef(name));
    return object !== undefined && isPersistentVolume(object) ? object : undefined;
  }

  /** Every PersistentVolume the informer holds; with `persistentVolumes: 'get'` the referenced ones fetched. */
  listPersistentVolumes(): PersistentVolume[] {
    if (this.pvInformer !== null) return [...this.persistentVolumes.values()];
    return [...this.referencedPVNames].flatMap((name) => {
      const pv = this.getPersistentVolume(name);
      return pv === undefined ? [] : [pv];
    });
  }

  /**
   * GETs a PV now (the kubelet's populator GETs the PV of a claim each time: a PV that was just
   * bound or changed must not be answered from a cache). With `persistentVolumes: 'get'` a
   * referenced PV's cache entry is updated too. Resolves undefined when the PV does not exist;
   * rejects with `KubeApiRequestError` when the GET fails.
   */
  async fetchPersistentVolume(name: string): Promise<PersistentVolume | undefined> {
    const object = await this.references.fetchNow(persistentVolumeRef(name));
    return object !== undefined && isPersistentVolume(object) ? object : undefined;
  }

  /** The cached claim, if a pod of this node references it and it was found. */
  getPersistentVolumeClaim(namespace: string, name: string): PersistentVolumeClaim | undefined {
    const object = this.references.get({ kind: 'PersistentVolumeClaim', namespace, name });
    return object !== undefined && isClaim(object) ? object : undefined;
  }

  /** The cached config map, if a pod of this node references it and it was found. */
  getConfigMap(namespace: string, name: string): ConfigMap | undefined {
    const object = this.references.get({ kind: 'ConfigMap', namespace, name });
    return object !== undefined && isConfigMap(object) ? object : undefined;
  }

  /** The cached secret, if a pod (or a CSI volume of a pod) of this node references it and it was found. */
  getSecret(namespace: string, name: string): Secret | undefined {
    const object = this.references.get({ kind: 'Secret', namespace, name });
    return object !== undefined && isSecret(object) ? object : undefined;
  }

  /** {@link KubeSource.getConfigMap} once the config map's first GET has ended (ReferencedObjectCache.getWhenFetched). */
  async awaitConfigMap(namespace: string, name: string): Promise<ConfigMap | undefined> {
    const object = await this.references.getWhenFetched({ kind: 'ConfigMap', namespace, name });
    return object !== undefined && isConfigMap(object) ? object : undefined;
  }

  /** {@link KubeSource.getSecret} once the secret's first GET has ended (ReferencedObjectCache.getWhenFetched). */
  async awaitSecret(namespace: string, name: string): Promise<Secret | undefined> {
    const object = await this.references.getWhenFetched({ kind: 'Secret', namespace, name });
    return object !== undefined && isSecret(object) ? object : undefined;
  }

  getCSIDriver(name: string): CSIDriver | undefined {
    return this.csiDrivers.get(name);
  }

  /** This node's Node object, once the node informer has seen it. */
  getNode(): Node | undefined {
    return this.node;
  }

  /**
   * `node.status.volumesAttached` as name → devicePath, or null while the Node object is not
   * known (no information: callers fall back to asking the API server).
   */
  getAttachedVolumesFromNodeStatus(): Map<string, string> | null {
    if (this.node === undefined) return null;
    return new Map((this.node.status?.volumesAttached ?? []).map((v) => [v.name, v.devicePath]));
  }

  /**
   * GETs a claim now (the kubelet's populator reads claims from the API server each time). A
   * referenced claim's cache entry is updated too. Resolves undefined when the claim does not
   * exist; rejects with `KubeApiRequestError` when the GET fails.
   */
  async fetchPersistentVolumeClaim(namespace: string, name: string): Promise<PersistentVolumeClaim | undefined> {
    const object = await this.references.fetchNow({ kind: 'PersistentVolumeClaim', namespace, name });
    return object !== undefined && isClaim(object) ? object : undefined;
  }

  /** Current problems, sorted by `file`: failing informers, failing GETs, unreadable objects. */
  sourceErrors(): SourceError[] {
    const errors: SourceError[] = [];
    for (const informer of this.informers) {
      const message = informer.error();
      if (message !== undefined) errors.push({ file: informer.target, message });
    }
    for (const [file, message] of this.conversionErrors) errors.push({ file, message });
    errors.push(...this.references.errors());
    return errors.sort((a, b) => compareStrings(a.file, b.file) || compareStrings(a.message, b.message));
  }

  /** Registers a listener for published changes; returns the function that unregisters it. */
  onChange(listener: KubeSourceChangeListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  // -------------------------------------------------------------------------------------------
  // Informer handlers (called synchronously by the informers; batched into one flush)

  private upsertPod(raw: V1Pod): void {
    const { namespace, name } = nameOf(raw);
    const key = `${namespace}/${name}`;
    const converted = this.converted(convertPod(raw), `/api/v1/namespaces/${namespace}/pods/${name}`, `Pod ${key}`);
    if (converted === undefined) return;
    const uid = converted.metadata.uid ?? key;
    const previousUID = this.podUIDs.get(key);
    if (previousUID !== undefined && previousUID !== uid) {
      this.pods.delete(previousUID);
      if (this.containerStates.remove(previousUID)) this.containerStatesDirty = true;
    }
    if (this.containerStates.update(uid, raw)) this.containerStatesDirty = true;
    const previous = this.pods.get(uid);
    this.pods.set(uid, converted);
    this.podUIDs.set(key, uid);
    if (previous === undefined) {
      // A new pod: fetch what it references again even if cached (the kubelet invalidates its
      // cache when a pod registers), so a pod never starts on a stale secret.
      this.newPodRefs.push(...this.wanted(podReferences(converted)));
      this.referencesDirty = true;
    } else if (!isDeepStrictEqual(podReferences(previous), podReferences(converted)) || isPodTerminated(previous) !== isPodTerminated(converted)) {
      this.referencesDirty = true;
    }
    this.queueFlush();
  }

  private removePod(raw: V1Pod): void {
    const { namespace, name } = nameOf(raw);
    const key = `${namespace}/${name}`;
    const uid = this.podUIDs.get(key);
    this.podUIDs.delete(key);
    if (uid !== undefined) {
      this.pods.delete(uid);
      if (this.containerStates.remove(uid)) this.containerStatesDirty = true;
    }
    this.conversionErrors.delete(`/api/v1/namespaces/${namespace}/pods/${name}`);
    this.referencesDirty = true;
    this.queueFlush();
  }

  private upsertNode(raw: V1Node): void {
    const { name } = nameOf(raw);
    const converted = this.converted(convertNode(raw), `/api/v1/nodes/${name}`, `Node ${name}`);
    if (converted === undefined || name !== this.nodeName) return;
    if (this.node === undefined || !equalIgnoringResourceVersion(this.node, converted)) this.nodeDirty = true;
    this.node = converted;
    this.queueFlush();
  }

  private removeNode(raw: V1Node): void {
    const { name } = nameOf(raw);
    this.conversionErrors.delete(`/api/v1/nodes/${name}`);
    if (name !== this.nodeName || this.node === undefined) return;
    this.node = undefined;
    this.nodeDirty = true;
    this.queueFlush();
  }

  private upsertPV(raw: V1PersistentVolume): void {
    const { name } = nameOf(raw);
    const converted = this.converted(convertPersistentVolume(raw), `/api/v1/persistentvolumes/${name}`, `PersistentVolume ${name}`);
    if (converted === undefined) return;
    const previous = this.persistentVolumes.get(name);
    this.persistentVolumes.set(name, converted);
    if (this.referencedPVNames.has(name) && (previous === undefined || !equalIgnoringResourceVersion(previous, converted))) {
      this.objectsDirty = true;
      this.referencesDirty = true;
    }
    this.queueFlush();
  }

  private removePV(raw: V1PersistentVolume): void {
    const { name } = nameOf(raw);
    this.persistentVolumes.delete(name);
    this.conversionErrors.delete(`/api/v1/persistentvolumes/${name}`);
    if (this.referencedPVNames.has(name)) {
      this.objectsDirty = true;
      this.referencesDirty = true;
    }
    this.queueFlush();
  }

  private upsertCSIDriver(raw: V1CSIDriver): void {
    const { name } = nameOf(raw);
    const converted = this.converted(convertCSIDriver(raw), `/apis/storage.k8s.io/v1/csidrivers/${name}`, `CSIDriver ${name}`);
    if (converted === undefined) return;
    const previous = this.csiDrivers.get(name);
    this.csiDrivers.set(name, converted);
    if (previous === undefined || !equalIgnoringResourceVersion(previous, converted)) this.objectsDirty = true;
    this.queueFlush();
  }

  private removeCSIDriver(raw: V1CSIDriver): void {
    const { name } = nameOf(raw);
    this.conversionErrors.delete(`/apis/storage.k8s.io/v1/csidrivers/${name}`);
    if (this.csiDrivers.delete(name)) this.objectsDirty = true;
    this.queueFlush();
  }

  /**
   * The converted object, recording conversion problems under `file`. A rejected object is
   * skipped: a new one is not added and a known one keeps its last valid version.
   */
  private converted<T>(conversion: Conversion<T>, file: string, what: string): T | undefined {
    const previous = this.conversionErrors.get(file);
    let message: string | undefined;
    let result: T | undefined;
    if (!conversion.ok) {
      message = `${what}: cannot be read: ${conversion.error} (ignored; a previously read version stays in use)`;
    } else {
      result = conversion.object;
      if (conversion.warnings.length > 0) message = `${what}: ${conversion.warnings.join('; ')}`;
    }
    if (message === undefined) {
      this.conversionErrors.delete(file);
    } else {
      this.conversionErrors.set(file, message);
      if (message !== previous) this.logger.warn('API object not fully usable', { object: file, error: message });
    }
    if (message !== previous) this.queueFlush();
    return result;
  }

  /** Informer callbacks that never throw; a state change schedules a flush. */
  private handlers<T>(upsert: (object: T) => void, remove: (object: T) => void): InformerHandlers<T> {
    return {
      upsert: (object) => {
        this.guard(() => {
          upsert(object);
        });
      },
      remove: (object) => {
        this.guard(() => {
          remove(object);
        });
      },
      stateChanged: () => {
        this.queueFlush();
      },
    };
  }

  /** Runs an informer callback; a bug in it must not reach the client library's promise chain. */
  private guard(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.logger.warn('API source failed to apply an informer event', { err });
    }
  }

  // -------------------------------------------------------------------------------------------
  // Referenced objects

  private async fetchReferenced(ref: ObjectRef): Promise<ReferencedObject | undefined> {
    const params = { namespace: ref.namespace, name: ref.name };
    let conversion: Conversion<ReferencedObject>;
    try {
      conversion = await this.deadlines.run(`GET ${refPath(ref)}`, async (options) => {
        switch (ref.kind) {
          case 'PersistentVolumeClaim':
            return convertPersistentVolumeClaim(await this.core.readNamespacedPersistentVolumeClaim(params, options));
          case 'PersistentVolume':
            return convertPersistentVolume(await this.core.readPersistentVolume({ name: ref.name }, options));
          case 'ConfigMap':
            return convertConfigMap(await this.core.readNamespacedConfigMap(params, options));
          case 'Secret':
            return convertSecret(await this.core.readNamespacedSecret(params, options));
        }
      });
    } catch (err) {
      if (apiErrorStatus(err) === 404) return undefined;
      throw err;
    }
    if (!conversion.ok) throw new Error(`the object cannot be read: ${conversion.error}`);
    return conversion.object;
  }

  /** The references of all running pods, plus the CSI secrets of the PVs their claims are bound to. */
  private recomputeReferences(): void {
    const refs: ObjectRef[] = [];
    for (const pod of this.pods.values()) {
      if (!isPodTerminated(pod)) refs.push(...podReferences(pod));
    }
    const pvNames = new Set<string>();
    for (const ref of [...refs]) {
      if (ref.kind !== 'PersistentVolumeClaim') continue;
      const volumeName = this.getPersistentVolumeClaim(ref.namespace, ref.name)?.spec.volumeName;
      if (volumeName === undefined || volumeName === '') continue;
      pvNames.add(volumeName);
      if (this.pvInformer === null) refs.push(persistentVolumeRef(volumeName));
      const pv = this.getPersistentVolume(volumeName);
      if (pv !== undefined) refs.push(...persistentVolumeSecretReferences(pv));
    }
    this.referencedPVNames = pvNames;
    this.references.setReferences(this.wanted(refs));
  }

  /** The references this source fetches: all, or only claims with `claimsOnly`. */
  private wanted(refs: ObjectRef[]): ObjectRef[] {
    return this.claimsOnly ? refs.filter((r) => r.kind === 'PersistentVolumeClaim' || r.kind === 'PersistentVolume') : refs;
  }

  // -------------------------------------------------------------------------------------------
  // Publishing

  private queueFlush(): void {
    if (this.flushQueued || this.phase !== 'running') return;
    this.flushQueued = true;
    queueMicrotask(() => {
      this.flushQueued = false;
      this.guard(() => {
        this.flush();
      });
    });
  }

  private flush(): void {
    if (this.phase !== 'running') return;
    if (this.referencesDirty) {
      this.referencesDirty = false;
      this.recomputeReferences();
    }
    if (this.newPodRefs.length > 0) this.references.refresh(this.newPodRefs.splice(0));

    let syncedChanged = false;
    if (!this.synced && this.informers.every((informer) => informer.hasListed()) && this.references.allFetchedOnce()) {
      this.synced = true;
      syncedChanged = true;
      this.logger.info('API source synced', { node: this.nodeName, pods: this.pods.size });
      for (const waiter of this.syncWaiters.splice(0)) waiter.resolve();
    }

    const added: string[] = [];
    const updated: string[] = [];
    const removed: string[] = [];
    for (const [uid, pod] of this.pods) {
      const previous = this.publishedPods.get(uid);
      if (previous === undefined) added.push(uid);
      else if (previous !== pod && !equalIgnoringResourceVersion(previous, pod)) updated.push(uid);
    }
    for (const uid of this.publishedPods.keys()) if (!this.pods.has(uid)) removed.push(uid);
    this.publishedPods = new Map(this.pods);

    const errors = this.sourceErrors();
    const errorsChanged = !isDeepStrictEqual(errors, this.publishedErrors);
    this.publishedErrors = errors;
    const objectsChanged = this.objectsDirty;
    const nodeChanged = this.nodeDirty;
    const containerStatesChanged = this.containerStatesDirty;
    this.objectsDirty = false;
    this.nodeDirty = false;
    this.containerStatesDirty = false;

    if (added.length + updated.length + removed.length === 0 && !objectsChanged && !errorsChanged && !nodeChanged && !syncedChanged && !containerStatesChanged) return;
    this.generationValue += 1;
    const change: KubeSourceChange = {
      generation: this.generationValue,
      pods: { added, updated, removed },
      objectsChanged,
      errorsChanged,
      nodeChanged,
      syncedChanged,
      containerStatesChanged,
    };
    for (const listener of [...this.listeners]) {
      try {
        listener(change);
      } catch (err) {
        this.logger.warn('API source change listener failed', { err });
      }
    }
  }
}

/** Of the referenced kinds only claims and PVs have a spec; the converters set `kind` (api-objects.ts). */
function isClaim(object: ReferencedObject): object is PersistentVolumeClaim {
  return 'spec' in object && object.kind !== 'PersistentVolume';
}

function isPersistentVolume(object: ReferencedObject): object is PersistentVolume {
  return object.kind === 'PersistentVolume';
}

/** The converters set `kind`, which tells a config map from a secret (their fields are all optional). */
function isConfigMap(object: ReferencedObject): object is ConfigMap {
  return object.kind === 'ConfigMap';
}

function isSecret(object: ReferencedObject): object is Secret {
  return object.kind === 'Secret';
}

function nameOf(object: KubernetesObject): { namespace: string; name: string } {
  return { namespace: object.metadata?.namespace ?? '', name: object.metadata?.name ?? '' };
}

function withoutResourceVersion<T extends { metadata: { resourceVersion?: string } }>(object: T): T {
  return { ...object, metadata: { ...object.metadata, resourceVersion: undefined } };
}

function equalIgnoringResourceVersion<T extends { metadata: { resourceVersion?: string } }>(a: T, b: T): boolean {
  return isDeepStrictEqual(withoutResourceVersion(a), withoutResourceVersion(b));
}

function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  return a < b ? -1 : 1;
}
