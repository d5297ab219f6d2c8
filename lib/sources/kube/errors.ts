/**
 * Errors the Kubernetes API source throws. Problems talking to the API server after start are
 * not thrown: they are data (`sourceErrors()`), and the source keeps retrying.
 */

/** No usable client configuration: no kubeconfig, an unreadable one, or no in-cluster setup. */
export class KubeConfigError extends Error {
  override readonly name = 'KubeConfigError';
}

export function isKubeConfigError(err: unknown): err is KubeConfigError {
  return err instanceof KubeConfigError;
}

/** `start()` was called twice or after `stop()`, or a wait was cut short by `stop()`. */
export class KubeSourceStateError extends Error {
  override readonly name = 'KubeSourceStateError';
}

export function isKubeSourceStateError(err: unknown): err is KubeSourceStateError {
  return err instanceof KubeSourceStateError;
}

/**
 * A request to the API server failed (anything but a 404 of a single object, which is an
 * answer, not a failure). `status` is the HTTP status, or undefined for a transport failure
 * (connection refused, reset, timeout).
 */
export class KubeApiRequestError extends Error {
  override readonly name = 'KubeApiRequestError';
  readonly status: number | undefined;

  constructor(message: string, status: number | undefined, cause: unknown) {
    super(message, { cause });
    this.status = status;
  }
}

export function isKubeApiRequestError(err: unknown): err is KubeApiRequestError {
  return err instanceof KubeApiRequestError;
}
