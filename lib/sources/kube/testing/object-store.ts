/**
 * Test support: the fake API server's in-memory object store, with etcd-like resourceVersions.
 *
 * Contracts:
 * - One global, strictly increasing resourceVersion: every write (create, update, delete) takes
 *   the next one, and a LIST reports the current one, as etcd revisions do.
 * - Every write is kept in a history, so a watch from resourceVersion R replays the writes after
 *   R. {@link ObjectStore.compact} (or the history limit) forgets history: a watch from before
 *   the compaction point must then be answered with 410 Gone.
 * - Objects are plain JSON and are copied in and out: callers never share the stored objects.
 * - The store sets `metadata.uid`, `creationTimestamp`, `resourceVersion`, `namespace` ("default"
 *   when a namespaced object has none), `apiVersion` and `kind`; a `metadata.generateName`
 *   without a name gets a random suffix.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Clock } from '../../../clock/clock.ts';
import type { JsonObject } from '../plain-json.ts';
import { isJsonObject, toRFC3339 } from '../plain-json.ts';

/** A resource the fake API server serves. */
export interface ResourceType {
  /** The plural resource name in URLs: `pods`. */
  resource: string;
  /** The API group; "" for the core group. */
  group: string;
  version: string;
  kind: string;
  namespaced: boolean;
  /** Whether the kind has a `status` subresource (main-resource writes then keep the status). */
  hasStatus: boolean;
}

export const fakeResourceTypes = {
  pods: { resource: 'pods', group: '', version: 'v1', kind: 'Pod', namespaced: true, hasStatus: true },
  nodes: { resource: 'nodes', group: '', version: 'v1', kind: 'Node', namespaced: false, hasStatus: true },
  persistentvolumes: { resource: 'persistentvolumes', group: '', version: 'v1', kind: 'PersistentVolume', namespaced: false, hasStatus: true },
  persistentvolumeclaims: {
    resource: 'persistentvolumeclaims',
    group: '',
    version: 'v1',
    kind: 'PersistentVolumeClaim',
    namespaced: true,
    hasStatus: true,
  },
  configmaps: { resource: 'configmaps', group: '', version: 'v1', kind: 'ConfigMap', namespaced: true, hasStatus: false },
  secrets: { resource: 'secrets', group: '', version: 'v1', kind: 'Secret', namespaced: true, hasStatus: false },
  events: { resource: 'events', group: '', version: 'v1', kind: 'Event', namespaced: true, hasStatus: false },
  namespaces: { resource: 'namespaces', group: '', version: 'v1', kind: 'Namespace', namespaced: false, hasStatus: true },
  csidrivers: { resource: 'csidrivers', group: 'storage.k8s.io', version: 'v1', kind: 'CSIDriver', namespaced: false, hasStatus: false },
  csinodes: { resource: 'csinodes', group: 'storage.k8s.io', version: 'v1', kind: 'CSINode', namespaced: false, hasStatus: false },
  leases: { resource: 'leases', group: 'coordination.k8s.io', version: 'v1', kind: 'Lease', namespaced: true, hasStatus: false },
  volumeattachments: {
    resource: 'volumeattachments',
    group: 'storage.k8s.io',
    version: 'v1',
    kind: 'VolumeAttachment',
    namespaced: false,
    hasStatus: true,
  },
} as const satisfies Record<string, ResourceType>;

export type FakeResource = keyof typeof fakeResourceTypes;

export function isFakeResource(name: string): name is FakeResource {
  return Object.hasOwn(fakeResourceTypes, name);
}

export function apiVersionOf(type: ResourceType): string {
  return type.group === '' ? type.version : `${type.group}/${type.version}`;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** One write, as kept in the history and sent to watchers. */
export interface StoreEvent {
  resourceVersion: number;
  resource: FakeResource;
  type: WatchEventType;
  /** The object after the write (for DELETED: the last state, with the deletion's resourceVersion). */
  object: JsonObject;
  /** The object before the write; undefined for ADDED. Watchers with selectors need it. */
  previous: JsonObject | undefined;
}

/** A write was refused, with the Kubernetes status reason and HTTP code to answer with. */
export class StoreError extends Error {
  override readonly name = 'StoreError';
  readonly status: number;
  readonly reason: 'NotFound' | 'AlreadyExists' | 'Conflict' | 'Invalid' | 'BadRequest';

  constructor(status: number, reason: StoreError['reason'], message: string) {
    super(message);
    this.status = status;
    this.reason = reason;
  }
}

export function isStoreError(err: unknown): err is StoreError {
  return err instanceof StoreError;
}

/** `metadata` of a stored object, with its name. */
export function metadataOf(object: JsonObject): JsonObject & { name: string } {
  const metadata = object.metadata;
  if (!isJsonObject(metadata) || typeof metadata.name !== 'string') throw new StoreError(422, 'Invalid', 'metadata.name: Required value');
  return metadata as JsonObject & { name: string };
}

export function namespaceOf(object: JsonObject): string | undefined {
  const metadata = object.metadata;
  return isJsonObject(metadata) && typeof metadata.namespace === 'string' ? metadata.namespace : undefined;
}

function storeKey(namespace: string | undefined, name: string): string {
  return `${namespace ?? ''}/${name}`;
}

export interface ReplaceOptions {
  /**
   * Which part the write may change: `all` (a test control), `main` (a write to the main
   * resource: the status of a kind with a status subresource is kept, as real API servers do),
   * or `status` (a write to the status subresource: everything but the status is kept).
   */
  part?: 'all' | 'main' | 'status';
  /** Refuse with 409 Conflict when the input carries a different `metadata.resourceVersion`. */
  checkResourceVersion?: boolean;
}

export class ObjectStore {
  private readonly clock: Clock;
  private readonly maxHistory: number;
  private revision = 1;
  /** Watches from a resourceVersion below this must get 410 Gone. */
  private compactedRevision = 1;
  private readonly objects = new Map<FakeResource, Map<string, JsonObject>>();
  private readonly history: StoreEvent[] = [];
  private readonly listeners = new Set<(event: StoreEvent) => void>();

  constructor(clock: Clock, maxHistory = 10_000) {
    this.clock = clock;
    this.maxHistory = maxHistory;
  }

  /** The resourceVersion of the latest write. */
  currentResourceVersion(): number {
    return this.revision;
  }

  get(resource: FakeResource, namespace: string | undefined, name: string): JsonObject | undefined {
    const object = this.bucket(resource).get(storeKey(this.namespaceFor(resource, namespace), name));
    return object === undefined ? undefined : structuredClone(object);
  }

  /** Objects of a resource (in one namespace, or all), sorted by namespace/name as etcd keys are. */
  list(resource: FakeResource, namespace?: string): JsonObject[] {
    const entries = [...this.bucket(resource).entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return entries.map(([, object]) => object).filter((object) => namespace === undefined || namespaceOf(object) === namespace).map((object) => structuredClone(object));
  }

  create(resource: FakeResource, input: JsonObject): JsonObject {
    const type = fakeResourceTypes[resource];
    const object = structuredClone(input);
    const metadata = isJsonObject(object.metadata) ? object.metadata : (object.metadata = {});
    if (typeof metadata.name !== 'string' || metadata.name === '') {
      if (typeof metadata.generateName !== 'string' || metadata.generateName === '') {
        throw new StoreError(422, 'Invalid', 'metadata.name: Required value: name or generateName is required');
      }
      metadata.name = `${metadata.generateName}${randomBytes(3).toString('hex').slice(0, 5)}`;
    }
    if (type.namespaced) metadata.namespace = this.namespaceFor(resource, typeof metadata.namespace === 'string' ? metadata.namespace : undefined) ?? 'default';
    else delete metadata.namespace;
    const name = metadataOf(object).name;
    const key = storeKey(namespaceOf(object), name);
    if (this.bucket(resource).has(key)) throw new StoreError(409, 'AlreadyExists', `${resource} "${name}" already exists`);
    metadata.uid = typeof metadata.uid === 'string' && metadata.uid !== '' ? metadata.uid : randomUUID();
    metadata.creationTimestamp = toRFC3339(new Date(this.clock.now()));
    return this.write(resource, key, object, undefined, 'ADDED');
  }

  /** Replaces an existing object (PUT semantics); see {@link ReplaceOptions}. */
  replace(resource: FakeResource, input: JsonObject, options: ReplaceOptions = {}): JsonObject {
    const type = fakeResourceTypes[resource];
    const name = metadataOf(input).name;
    const namespace = this.namespaceFor(resource, namespaceOf(input));
    const key = storeKey(namespace, name);
    const existing = this.bucket(resource).get(key);
    if (existing === undefined) throw new StoreError(404, 'NotFound', `${resource} "${name}" not found`);
    const existingMeta = metadataOf(existing);
    const inputRV = metadataOf(input).resourceVersion;
    if (options.checkResourceVersion === true && typeof inputRV === 'string' && inputRV !== '' && inputRV !== existingMeta.resourceVersion) {
      throw new StoreError(409, 'Conflict', `Operation cannot be fulfilled on ${resource} "${name}": the object has been modified; please apply your changes to the latest version and try again`);
    }
    let object: JsonObject;
    const part = options.part ?? 'all';
    if (part === 'status') {
      object = structuredClone(existing);
      if (input.status === undefined) delete object.status;
      else object.status = structuredClone(input.status);
      if (resource === 'nodes') {
        // nodeStatusStrategy.PrepareForUpdate (pkg/registry/core/node/strategy.go@v1.34) resets
        // only the spec: labels and annotations written through nodes/status are kept (the
        // kubelet sets its CSI annotation and topology labels that way).
        const inputMeta = metadataOf(input);
        const meta = metadataOf(object);
        if (inputMeta.labels === undefined) delete meta.labels;
        else meta.labels = structuredClone(inputMeta.labels);
        if (inputMeta.annotations === undefined) delete meta.annotations;
        else meta.annotations = structuredClone(inputMeta.annotations);
      }
    } else {
      object = structuredClone(input);
      if (part === 'main' && type.hasStatus) {
        if (existing.status === undefined) delete object.status;
        else object.status = structuredClone(existing.status);
      }
    }
    const metadata = metadataOf(object);
    metadata.uid = existingMeta.uid ?? randomUUID();
    metadata.creationTimestamp = existingMeta.creationTimestamp ?? toRFC3339(new Date(this.clock.now()));
    if (type.namespaced) metadata.namespace = namespace ?? 'default';
    return this.write(resource, key, object, existing, 'MODIFIED');
  }

  /** Creates or replaces the whole object (a test control: no preconditions, status included). */
  upsert(resource: FakeResource, input: JsonObject): JsonObject {
    const name = metadataOf(input).name;
    const existing = this.bucket(resource).get(storeKey(this.namespaceFor(resource, namespaceOf(input)), name));
    return existing === undefined ? this.create(resource, input) : this.replace(resource, input);
  }

  delete(resource: FakeResource, namespace: string | undefined, name: string): JsonObject {
    const key = storeKey(this.namespaceFor(resource, namespace), name);
    const existing = this.bucket(resource).get(key);
    if (existing === undefined) throw new StoreError(404, 'NotFound', `${resource} "${name}" not found`);
    this.bucket(resource).delete(key);
    return this.record(resource, 'DELETED', structuredClone(existing), existing);
  }

  /**
   * The writes to `resource` after `resourceVersion`, oldest first; undefined when that
   * resourceVersion is older than the history reaches (the watch must get 410 Gone).
   */
  eventsAfter(resource: FakeResource, resourceVersion: number): StoreEvent[] | undefined {
    if (resourceVersion < this.compactedRevision) return undefined;
    return this.history.filter((e) => e.resource === resource && e.resourceVersion > resourceVersion).map((e) => structuredClone(e));
  }

  /** Forgets all history: watches from any resourceVersion before now get 410 Gone. */
  compact(): void {
    this.history.length = 0;
    this.compactedRevision = this.revision;
  }

  /** Calls `listener` after every write; returns the unsubscribe function. */
  subscribe(listener: (event: StoreEvent) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  // -------------------------------------------------------------------------------------------

  private bucket(resource: FakeResource): Map<string, JsonObject> {
    let bucket = this.objects.get(resource);
    if (bucket === undefined) {
      bucket = new Map();
      this.objects.set(resource, bucket);
    }
    return bucket;
  }

  private namespaceFor(resource: FakeResource, namespace: string | undefined): string | undefined {
    return fakeResourceTypes[resource].namespaced ? (namespace ?? 'default') : undefined;
  }

  private write(resource: FakeResource, key: string, object: JsonObject, previous: JsonObject | undefined, type: WatchEventType): JsonObject {
    const typeInfo = fakeResourceTypes[resource];
    object.apiVersion = apiVersionOf(typeInfo);
    object.kind = typeInfo.kind;
    const stored = this.record(resource, type, object, previous);
    this.bucket(resource).set(key, stored);
    return structuredClone(stored);
  }

  /** Takes the next resourceVersion for `object`, appends the history entry and notifies. */
  private record(resource: FakeResource, type: WatchEventType, object: JsonObject, previous: JsonObject | undefined): JsonObject {
    this.revision += 1;
    metadataOf(object).resourceVersion = String(this.revision);
    const event: StoreEvent = { resourceVersion: this.revision, resource, type, object: structuredClone(object), previous: previous === undefined ? undefined : structuredClone(previous) };
    this.history.push(event);
    if (this.history.length > this.maxHistory) {
      const dropped = this.history.splice(0, this.history.length - this.maxHistory);
      const last = dropped[dropped.length - 1];
      if (last !== undefined) this.compactedRevision = last.resourceVersion;
    }
    for (const listener of [...this.listeners]) listener(structuredClone(event));
    return object;
  }
}
