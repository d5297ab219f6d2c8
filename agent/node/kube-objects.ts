/**
 * The API objects the engine and the plugins read, answered from the Kubernetes API source
 * (lib/sources/kube/) — the cluster counterpart of manifest-objects.ts.
 *
 * Where each answer comes from, and why:
 * - claims: a GET each time (`fetchPersistentVolumeClaim`), as the kubelet's populator reads
 *   claims from the API server on every pod (re)process: a claim that was just bound must not be
 *   answered from a stale cache. A failing GET rejects with the API error; the populator then
 *   reports it for that one volume and never removes anything (kubernetes#120150).
 * - persistent volumes: a GET each time in managed mode (a node may only GET individual PVs);
 *   observe mode's informer cache (watched, so fresh), a GET for a PV it has not delivered yet.
 * - CSIDrivers: the informer's cache (watched, so fresh).
 * - config maps, secrets: the source's referenced-object cache (GETs with a TTL, like the
 *   kubelet's default `configMapAndSecretChangeDetectionStrategy: Watch`'s cache behaviour).
 * - the Node: `getNode` GETs it (the kubelet's VerifyControllerAttachedVolume reads the node from
 *   the API server); `getAttachedVolumesFromNodeStatus` answers from the node informer.
 * - VolumeAttachments: a GET by name, for the CSI plugin when the controller attaches.
 * - service account tokens: a TokenRequest (`POST …/serviceaccounts/<name>/token`) each time the
 *   token manager (lib/volume/token/) asks; it caches them.
 * - the node's pods for observe mode's orphan cleanup: a live LIST (`listNodePodsLive`), never
 *   the informer, because "the pod is gone" must not rest on a cache that may have missed it.
 */
import {
  AuthenticationV1TokenRequest,
  CoreV1Api,
  Observable,
  PatchStrategy,
  setHeaderOptions,
  StorageV1Api,
  V1BoundObjectReference,
  V1DeleteOptions,
  V1ObjectMeta,
  V1Preconditions,
  V1TokenRequestSpec,
  type ConfigurationOptions,
  type KubeConfig,
} from '@kubernetes/client-node';
import { model } from '../../lib/kube-client/model.ts';
import { realClock, type Clock } from '../../lib/clock/clock.ts';
import { makeApiClient } from '../../lib/sources/kube/api-client.ts';
import { describeApiError, isApiNotFound, KubeApiRequestError } from '../../lib/kube-client/api-errors.ts';
import { RequestDeadlines } from '../../lib/kube-client/request-deadline.ts';
import type { KubeSource } from '../../lib/sources/kube/index.ts';
import { convertNode, convertPersistentVolume } from '../../lib/sources/kube/api-objects.ts';
import type { VolumeAttachmentReader, VolumeAttachmentStatus } from '../../lib/volume/csi/index.ts';
import type { ConfigMap, Node, PersistentVolume, PersistentVolumeClaim, Secret } from '../../lib/volume/k8s-types.ts';
import type { ServiceAccountTokenSource, TokenRequestResult, TokenRequestSpec } from '../../lib/volume/token/token-manager.ts';
import { ObjectNotFoundError } from '../../lib/volume/kube-client.ts';
import type { NodeName } from '../../lib/volume/types.ts';
import type { CoreEvent } from '../../lib/observe/kubelet-backoff-events.ts';
import type { VolumeAttachment } from '../../lib/observe/volume-attachment.ts';
import { ConfigMirrorAnnotationKey, type LivePodIdentity } from './observe-controller.ts';
import { ManifestObjects } from './manifest-objects.ts';

function optionalTime<K extends string>(key: K, value: Date | string | undefined | null): Partial<Record<K, string>> {
  const iso = isoTime(value);
  return iso === null ? {} : ({ [key]: iso } as Partial<Record<K, string>>);
}

/** Bytes as a Kubernetes quantity: the largest binary unit that divides it (`2Gi`), else bytes. */
export function formatQuantity(bytes: number): string {
  for (const [unit, size] of [['Ti', 2 ** 40], ['Gi', 2 ** 30], ['Mi', 2 ** 20], ['Ki', 2 ** 10]] as const) {
    if (bytes >= size && bytes % size === 0) return `${String(bytes / size)}${unit}`;
  }
  return String(bytes);
}

/** client-node turns date-time fields into Date objects; the observe code reads RFC 3339 text. */
function isoTime(value: Date | string | undefined | null): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return value;
  return Number.isNaN(value.getTime()) ? null : value.toISOString();
}

/** Deadline of each GET made here; the operation that asked fails and is retried with backoff. */
export const kubeObjectGetTimeoutMs = 30_000;

/**
 * A request the API server answered with an error (other than 404 for GETs), a transport failure
 * or a missed deadline: a {@link KubeApiRequestError} that names the API path.
 */
export class KubeObjectGetError extends KubeApiRequestError {
  override readonly name: string = 'KubeObjectGetError';
  constructor(
    readonly path: string,
    status: number | undefined,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, status, options?.cause);
  }
}

export function isKubeObjectGetError(err: unknown): err is KubeObjectGetError {
  return err instanceof KubeObjectGetError;
}

/** A pod of {@link KubeObjects.listNodePodsLive}: what identifies it and whether it terminated. */
export interface LivePod extends LivePodIdentity {
  uid: string;
  namespace: string;
  name: string;
  /** `status.phase`; null when the server sent none. */
  phase: string | null;
}

export class KubeObjects extends ManifestObjects implements VolumeAttachmentReader, ServiceAccountTokenSource {
  private readonly core: CoreV1Api;
  private readonly storage: StorageV1Api;
  private readonly deadlines: RequestDeadlines;

  constructor(
    private readonly kube: KubeSource,
    kubeConfig: KubeConfig,
    clock: Clock = realClock,
  ) {
    super(kube);
    this.core = makeApiClient(kubeConfig, CoreV1Api);
    this.storage = makeApiClient(kubeConfig, StorageV1Api);
    this.deadlines = new RequestDeadlines({ clientNode: { Observable }, clock, timeoutMs: kubeObjectGetTimeoutMs });
  }

  /** The config map once its first GET ended (a pod's volume is set up right after the pod arrives). */
  awaitConfigMap(namespace: string, name: string): Promise<ConfigMap | undefined> {
    return this.kube.awaitConfigMap(namespace, name);
  }

  /** The secret once its first GET ended. */
  awaitSecret(namespace: string, name: string): Promise<Secret | undefined> {
    return this.kube.awaitSecret(namespace, name);
  }

  /** Rejects with ObjectNotFoundError when absent, with the API error when the GET fails. */
  override async getPersistentVolumeClaim(namespace: string, name: string): Promise<PersistentVolumeClaim> {
    const pvc = await this.kube.fetchPersistentVolumeClaim(namespace, name);
    if (pvc === undefined) throw new ObjectNotFoundError('persistentvolumeclaims', name);
    return pvc;
  }

  /**
   * With a PV informer (observe mode) its watched cache, else a GET. Without one (managed mode:
   * a node may only GET individual PVs) always a GET, as the kubelet's populator `getPVSpec`
   * (kubernetes/kubernetes pkg/kubelet/volumemanager/populator/desired_state_of_world_populator.go@v1.34):
   * a PV just bound or changed is never answered from a cache. A failed GET rejects (the volume
   * waits; nothing is removed).
   */
  override async getPersistentVolume(name: string): Promise<PersistentVolume> {
    if (this.kube.watchesPersistentVolumes()) {
      const cached = this.kube.getPersistentVolume(name);
      if (cached !== undefined) return cached;
      const raw = await this.get(`/api/v1/persistentvolumes/${name}`, (options) => this.core.readPersistentVolume({ name }, options));
      if (raw === undefined) throw new ObjectNotFoundError('persistentvolumes', name);
      const converted = convertPersistentVolume(raw);
      if (!converted.ok) throw new KubeObjectGetError(`/api/v1/persistentvolumes/${name}`, undefined, `persistent volume ${name} cannot be read: ${converted.error}`);
      return converted.object;
    }
    const pv = await this.kube.fetchPersistentVolume(name);
    if (pv === undefined) throw new ObjectNotFoundError('persistentvolumes', name);
    return pv;
  }

  /** GET of this node (the engine passes its own node name). */
  readonly getNode = async (name: NodeName): Promise<Node> => {
    const raw = await this.get(`/api/v1/nodes/${name}`, (options) => this.core.readNode({ name }, options));
    if (raw === undefined) throw new ObjectNotFoundError('nodes', name);
    const converted = convertNode(raw);
    if (!converted.ok) throw new KubeObjectGetError(`/api/v1/nodes/${name}`, undefined, `node ${name} cannot be read: ${converted.error}`);
    return converted.object;
  };

  readonly getAttachedVolumesFromNodeStatus = (): Map<string, string> | null => this.kube.getAttachedVolumesFromNodeStatus();

  async getVolumeAttachment(name: string): Promise<VolumeAttachmentStatus | undefined> {
    const va = await this.get(`/apis/storage.k8s.io/v1/volumeattachments/${name}`, (options) => this.storage.readVolumeAttachment({ name }, options));
    if (va === undefined) return undefined;
    const status = va.status;
    const attachError = status?.attachError?.message;
    return {
      attached: status?.attached === true,
      attachmentMetadata: { ...(status?.attachmentMetadata ?? {}) },
      ...(attachError === undefined ? {} : { attachError }),
    };
  }

  /**
   * `MarkFSResizeFinished` (pkg/volume/util/resize_util.go) after a successful node expansion:
   * the claim's `status.capacity.storage` becomes the new size, its `FileSystemResizePending`
   * condition goes, and `allocatedResourceStatuses.storage` is cleared — a merge patch of the
   * status subresource, read-modify-write on the current conditions.
   */
  readonly markFSResizeFinished = async (pvc: PersistentVolumeClaim, newSizeBytes: number): Promise<void> => {
    const namespace = pvc.metadata.namespace ?? 'default';
    const name = pvc.metadata.name;
    const path = `/api/v1/namespaces/${namespace}/persistentvolumeclaims/${name}/status`;
    // The claim itself (not its status subresource): the managed role may `get` claims.
    const current = await this.get(`/api/v1/namespaces/${namespace}/persistentvolumeclaims/${name}`, (options) => this.core.readNamespacedPersistentVolumeClaim({ name, namespace }, options));
    if (current === undefined) throw new ObjectNotFoundError('persistentvolumeclaims', name);
    const conditions = (current.status?.conditions ?? []).filter((c) => c.type !== 'FileSystemResizePending');
    const body = {
      status: {
        capacity: { storage: formatQuantity(newSizeBytes) },
        conditions: conditions.map((c) => ({
          type: c.type,
          status: c.status,
          ...(c.reason === undefined ? {} : { reason: c.reason }),
          ...(c.message === undefined ? {} : { message: c.message }),
          ...optionalTime('lastProbeTime', c.lastProbeTime),
          ...optionalTime('lastTransitionTime', c.lastTransitionTime),
        })),
        allocatedResourceStatuses: { storage: null },
      },
    };
    await this.request('PATCH', path, (options) =>
      this.core.patchNamespacedPersistentVolumeClaimStatus({ name, namespace, body }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch, options)),
    );
  };

  /**
   * Sets `node.status.volumesInUse` to exactly `volumes` with a strategic merge patch of the
   * status subresource (the field has no patch strategy, so the list is replaced, as the
   * kubelet's node status patch does). Resolves with the list the server returned.
   */
  async patchVolumesInUse(nodeName: NodeName, volumes: readonly string[]): Promise<string[]> {
    const node = await this.request('PATCH', `/api/v1/nodes/${nodeName}/status`, (options) =>
      this.core.patchNodeStatus({ name: nodeName, body: { status: { volumesInUse: [...volumes] } } }, setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch, options)),
    );
    return [...(node.status?.volumesInUse ?? [])];
  }

  /**
   * The registered node's status report (`--register-node`): a strategic merge patch of the
   * status subresource with `status` (conditions and addresses merge by `type`; `volumesInUse`,
   * when present, is replaced). Resolves with the node's `status.volumesInUse` as returned.
   */
  async patchNodeStatus(nodeName: NodeName, status: Record<string, unknown>): Promise<string[]> {
    const node = await this.request('PATCH', `/api/v1/nodes/${nodeName}/status`, (options) =>
      this.core.patchNodeStatus({ name: nodeName, body: { status } }, setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch, options)),
    );
    return [...(node.status?.volumesInUse ?? [])];
  }

  /**
   * The status manager's final delete of a pod (agent/node/pod-deleter.ts): grace period 0, and
   * only the pod with this UID (a pod recreated under the same name is left alone: 409).
   */
  async deletePod(namespace: string, name: string, uid: string): Promise<void> {
    await this.request('DELETE', `/api/v1/namespaces/${namespace}/pods/${name}`, (options) =>
      this.core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0, body: model(V1DeleteOptions, { gracePeriodSeconds: 0, preconditions: model(V1Preconditions, { uid }) }) }, options),
    );
  }

  /**
   * Every VolumeAttachment of this node (observe mode's truth diff). The list is cluster-wide;
   * the API server has no field selector on `spec.nodeName` for VolumeAttachments.
   */
  async listVolumeAttachments(nodeName: string): Promise<VolumeAttachment[]> {
    const path = '/apis/storage.k8s.io/v1/volumeattachments';
    const list = await this.request('LIST', path, (options) => this.storage.listVolumeAttachment({}, options));
    return list.items
      .filter((va) => va.spec.nodeName === nodeName)
      .map((va) => ({
        metadata: { name: va.metadata?.name ?? '', ...optionalTime('deletionTimestamp', va.metadata?.deletionTimestamp) },
        spec: {
          attacher: va.spec.attacher,
          nodeName: va.spec.nodeName,
          source: va.spec.source.persistentVolumeName === undefined ? {} : { persistentVolumeName: va.spec.source.persistentVolumeName },
        },
        status: {
          attached: va.status?.attached === true,
          ...(va.status?.attachError?.message === undefined ? {} : { attachError: { message: va.status.attachError.message } }),
          ...(va.status?.detachError?.message === undefined ? {} : { detachError: { message: va.status.detachError.message } }),
        },
      }));
  }

  /**
   * This node's pods as the API server has them now: a LIST (`GET /api/v1/pods` with
   * `fieldSelector=spec.nodeName=<node>` and no resourceVersion, which the server answers with a
   * consistent read), never an informer's cache, so a pod the cache missed or dropped still shows
   * up. A pod directory names only the pod's UID and pods cannot be read by UID, so this list is how
   * a single pod is looked up live; spec.nodeName never changes once set, so every pod of this node
   * is in it. Serves the operator unmount's pod-source check and observe mode's orphan cleanup.
   */
  async listNodePodsLive(nodeName: NodeName | string): Promise<LivePod[]> {
    const fieldSelector = `spec.nodeName=${nodeName}`;
    const list = await this.request('LIST', `/api/v1/pods?fieldSelector=${fieldSelector}`, (options) => this.core.listPodForAllNamespaces({ fieldSelector }, options));
    return list.items.flatMap((pod) => {
      const uid = pod.metadata?.uid;
      if (uid === undefined || uid === '') return [];
      const mirrorOf = pod.metadata?.annotations?.[ConfigMirrorAnnotationKey];
      return [{
        uid,
        namespace: pod.metadata?.namespace ?? 'default',
        name: pod.metadata?.name ?? '',
        phase: pod.status?.phase ?? null,
        ...(mirrorOf === undefined || mirrorOf === '' ? {} : { mirrorOf }),
      }];
    });
  }

  /**
   * A bound service account token (the kubelet token manager's `CreateToken`): rejects with
   * {@link KubeObjectGetError} (`POST <path>: <API error>`), also when the answer has no token.
   */
  async createServiceAccountToken(namespace: string, serviceAccountName: string, spec: TokenRequestSpec, uid?: string): Promise<TokenRequestResult> {
    const path = `/api/v1/namespaces/${namespace}/serviceaccounts/${serviceAccountName}/token`;
    const ref = spec.boundObjectRef;
    const body = model(AuthenticationV1TokenRequest, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      ...(uid === undefined ? {} : { metadata: model(V1ObjectMeta, { uid }) }),
      spec: model(V1TokenRequestSpec, {
        audiences: [...spec.audiences],
        ...(spec.expirationSeconds === undefined ? {} : { expirationSeconds: spec.expirationSeconds }),
        ...(ref === undefined ? {} : { boundObjectRef: model(V1BoundObjectReference, { apiVersion: ref.apiVersion, kind: ref.kind, name: ref.name, uid: ref.uid }) }),
      }),
    });
    const tr = await this.request('POST', path, (options) => this.core.createNamespacedServiceAccountToken({ name: serviceAccountName, namespace, body }, options));
    const token = tr.status?.token;
    const expiration = isoTime(tr.status?.expirationTimestamp);
    if (token === undefined || token === '' || expiration === null) throw new KubeObjectGetError(path, undefined, `POST ${path}: the TokenRequest answer has no token or expirationTimestamp`);
    const answered = tr.spec;
    const boundObjectRef = answered?.boundObjectRef;
    return {
      spec: {
        audiences: [...(answered?.audiences ?? spec.audiences)],
        ...(answered?.expirationSeconds === undefined ? {} : { expirationSeconds: answered.expirationSeconds }),
        // The server echoes the bound object; the request's stands in if it did not.
        ...(boundObjectRef === undefined
          ? ref === undefined
            ? {}
            : { boundObjectRef: { ...ref } }
          : { boundObjectRef: { apiVersion: boundObjectRef.apiVersion ?? '', kind: boundObjectRef.kind ?? '', name: boundObjectRef.name ?? '', uid: boundObjectRef.uid ?? '' } }),
      },
      status: { token, expirationTimestamp: expiration },
    };
  }

  /** The core/v1 Events about one pod (observe mode: the kubelet's FailedMount backoff). */
  async listPodEvents(namespace: string, podUid: string): Promise<CoreEvent[]> {
    const path = `/api/v1/namespaces/${namespace}/events`;
    const list = await this.request('LIST', path, (options) => this.core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.uid=${podUid}` }, options));
    return list.items.map((e) => ({
      ...(e.reason === undefined ? {} : { reason: e.reason }),
      ...(e.message === undefined ? {} : { message: e.message }),
      ...(e.type === undefined ? {} : { type: e.type }),
      ...(e.count === undefined ? {} : { count: e.count }),
      metadata: { ...(e.metadata.name === undefined ? {} : { name: e.metadata.name }), ...(e.metadata.namespace === undefined ? {} : { namespace: e.metadata.namespace }) },
      involvedObject: { ...(e.involvedObject.uid === undefined ? {} : { uid: e.involvedObject.uid }), ...(e.involvedObject.name === undefined ? {} : { name: e.involvedObject.name }) },
      firstTimestamp: isoTime(e.firstTimestamp),
      lastTimestamp: isoTime(e.lastTimestamp),
      eventTime: isoTime(e.eventTime),
    }));
  }

  /** A request with a deadline; {@link KubeObjectGetError} (`<verb> <path>: <API error>`) on any failure. */
  private async request<T>(verb: 'GET' | 'LIST' | 'POST' | 'PATCH' | 'DELETE', path: string, call: (options: ConfigurationOptions) => Promise<T>): Promise<T> {
    try {
      return await this.deadlines.run('the request', call);
    } catch (err) {
      const info = describeApiError(err);
      throw new KubeObjectGetError(path, info.status, `${verb} ${path}: ${info.message}`, { cause: err });
    }
  }

  /** A GET with a deadline; undefined on 404, {@link KubeObjectGetError} on any other failure. */
  private async get<T>(path: string, call: (options: ConfigurationOptions) => Promise<T>): Promise<T | undefined> {
    try {
      return await this.request('GET', path, call);
    } catch (err) {
      if (isKubeObjectGetError(err) && isApiNotFound(err)) return undefined;
      throw err;
    }
  }
}
