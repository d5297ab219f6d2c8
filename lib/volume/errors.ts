/**
 * Error classes of `pkg/volume/util/types` and the volume plugins. Each class has an `is…`
 * predicate; classification drives the actual-state transitions of the operation executor.
 */

/**
 * The operation may still be in progress in the plugin or driver (timeouts, CSI
 * DeadlineExceeded/Unavailable/…): the mount is recorded as uncertain, never as failed.
 */
export class UncertainProgressError extends Error {
  override readonly name = 'UncertainProgressError';
}

export function isUncertainProgressError(err: unknown): err is UncertainProgressError {
  return err instanceof UncertainProgressError;
}

/** A failure that is not final and not uncertain, e.g. a CSI driver that is not registered yet. */
export class TransientOperationFailure extends Error {
  override readonly name = 'TransientOperationFailure';
}

export function isTransientOperationFailure(err: unknown): err is TransientOperationFailure {
  return err instanceof TransientOperationFailure;
}

/** `IsOperationFinishedError`: final unless uncertain or transient. */
export function isOperationFinishedError(err: unknown): boolean {
  return !isUncertainProgressError(err) && !isTransientOperationFailure(err);
}

/** A precondition of a mount is not met yet; the reconciler treats it as expected (no log). */
export class MountPreConditionFailedError extends Error {
  override readonly name = 'MountPreConditionFailedError';
}

export function isMountFailedPreconditionError(err: unknown): err is MountPreConditionFailedError {
  return err instanceof MountPreConditionFailedError;
}

/** Node expansion cannot run while the volume is in use (CSI FailedPrecondition). */
export class FailedPreconditionError extends Error {
  override readonly name = 'FailedPreconditionError';
}

export function isFailedPreconditionError(err: unknown): err is FailedPreconditionError {
  return err instanceof FailedPreconditionError;
}

/** The plugin does not support the operation (expansion only); counts as done. */
export class OperationNotSupportedError extends Error {
  override readonly name = 'OperationNotSupportedError';
}

export function isOperationNotSupportedError(err: unknown): err is OperationNotSupportedError {
  return err instanceof OperationNotSupportedError;
}

/** Returns the message of anything thrown. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
