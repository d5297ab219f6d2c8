/**
 * The Kubernetes client layer of the agent's API source (lib/sources/kube/, agent/node/
 * kube-objects.ts, the webhook authorizer) and the dashboard's discovery (lib/dashboard/
 * discovery.ts). Everything here talks to an API server through `@kubernetes/client-node`,
 * which it receives as a parameter (client-node.ts) so the dashboard can load it lazily.
 *
 * - client-node.ts: the `ClientNode` module type and `loadClientNode()`.
 * - kubeconfig.ts: one loader for `--kubeconfig` / `KUBECONFIG` / in-cluster, with one
 *   in-cluster behaviour; `KubeConfigError`.
 * - restarting-informer.ts: a `ListWatch` restarted with backoff after failures (client-node
 *   2.x informers stop on any error but 410 Gone), with a final stop and a forced relist.
 * - request-deadline.ts: a deadline (on the injected clock) for each single request.
 * - api-errors.ts: `KubeApiRequestError`, `KubeRequestTimeoutError` and the classification of
 *   client-node errors (status, 404, 410, timeout, connection refused) with one-line messages.
 * - backoff.ts: the API retry backoff (not the kubelet's operation backoff, which is the
 *   engine's).
 *
 * Boundaries: the engine (lib/volumemanager, lib/operationexecutor, lib/volume) and lib/api do
 * not import this layer.
 */
export { loadClientNode } from './client-node.ts';
export type { ClientNode } from './client-node.ts';
export {
  KubeConfigError,
  defaultServiceAccountDir,
  inClusterKubeConfig,
  isKubeConfigError,
  kubeconfigPaths,
  loadKubeConfig,
  loadKubeConfigFiles,
  loadKubeConfigWithOrigin,
} from './kubeconfig.ts';
export type { KubeConfigEnv, KubeConfigOrigin, LoadKubeConfigOptions } from './kubeconfig.ts';
export { RestartingInformer } from './restarting-informer.ts';
export type { InformerPhase, RestartingInformerHandlers, RestartingInformerOptions } from './restarting-informer.ts';
export { RequestDeadlines, abortableRequestOptions } from './request-deadline.ts';
export type { RequestDeadlinesOptions } from './request-deadline.ts';
export {
  KubeApiRequestError,
  KubeRequestTimeoutError,
  apiErrorStatus,
  describeApiError,
  isApiGone,
  isApiNotFound,
  isConnectionRefused,
  isKubeApiRequestError,
  isKubeRequestTimeoutError,
  isRequestTimeout,
  transportErrorCode,
} from './api-errors.ts';
export type { ApiErrorInfo } from './api-errors.ts';
export { nextBackoffMs } from './backoff.ts';
export type { Backoff } from './backoff.ts';
