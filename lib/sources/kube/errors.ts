/**
 * Errors the Kubernetes API source throws. Problems talking to the API server after start are
 * not thrown: they are data (`sourceErrors()`), and the source keeps retrying. The client
 * layer's errors (a failed request, no client configuration) are lib/kube-client's
 * `KubeApiRequestError` and `KubeConfigError`.
 */

/** `start()` was called twice or after `stop()`, or a wait was cut short by `stop()`. */
export class KubeSourceStateError extends Error {
  override readonly name = 'KubeSourceStateError';
}

export function isKubeSourceStateError(err: unknown): err is KubeSourceStateError {
  return err instanceof KubeSourceStateError;
}
