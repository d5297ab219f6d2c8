/**
 * The Kubernetes API object source (node agent `--kubeconfig` / `KUBECONFIG` / in-cluster).
 *
 * - kube-source.ts: `KubeSource`, the same read API as `ManifestSource` (listPods, getPodByUID,
 *   getPersistentVolume, getPersistentVolumeClaim, getConfigMap, getSecret, getCSIDriver,
 *   sourceErrors, onChange, isSynced, start/stop, resync) plus `getNode()`,
 *   `getAttachedVolumesFromNodeStatus()`, `waitUntilSynced()` and `fetchPersistentVolumeClaim()`.
 * - resilient-informer.ts: lib/kube-client's restarting informer, with its failure kept as a
 *   source error message and logged.
 * - referenced-objects.ts: the PVCs, ConfigMaps and Secrets the node's pods reference, fetched
 *   by name with a short cache (why not informers: see that file).
 * - object-references.ts: which objects a pod (and its CSI PVs) references.
 * - api-objects.ts: client-node objects → lib/volume/k8s-types.ts shapes (RFC 3339 timestamps,
 *   unmodelled fields dropped); plain-json.ts: helpers for both.
 * - api-client.ts: `makeApiClient`, client-node's API clients with an HTTP library that reads
 *   response bodies without web streams, on one connection pool per KubeConfig (the agent's
 *   clients are made with it); `shareConnections` puts client-node's watches on that pool too.
 *
 * The Kubernetes client itself (kubeconfig loading, the restarting informer, request deadlines,
 * API error classification, backoff) is lib/kube-client/, shared with the dashboard's discovery.
 *
 * Test support (lib/sources/kube/testing/): `FakeApiServer`, a Kubernetes-protocol server over
 * real HTTP for the real client; `writeKubeconfigFile`/`fakeKubeConfig` pointing at it;
 * object builders (fixtures.ts) and `waitFor`.
 */
export { makeApiClient, shareConnections } from './api-client.ts';
export type { ApiClientClass } from './api-client.ts';
export {
  KubeSource,
  defaultKubeRestartBackoff,
  defaultMaxConcurrentFetches,
  defaultReferencedObjectRetry,
  defaultReferencedObjectTtlMs,
} from './kube-source.ts';
export type { KubeSourceChange, KubeSourceChangeListener, KubeSourceOptions } from './kube-source.ts';
export type { ObjectRef, ReferencedKind } from './object-references.ts';
export { persistentVolumeSecretReferences, podReferences } from './object-references.ts';
export { KubeSourceStateError, isKubeSourceStateError } from './errors.ts';
export { KubeEventSink, KubeEventSinkOptionsError, isKubeEventSinkOptionsError, type KubeEventSinkBacklog, type KubeEventSinkCounters, type KubeEventSinkOptions, type KubeEventSinkStopOptions } from './event-sink.ts';
