/**
 * Errors of CSI calls and their classification (kubelet `isFinalError`,
 * kubernetes/kubernetes pkg/volume/csi/csi_client.go@v1.34).
 *
 * A *final* error means the driver did not do, and is not doing, the operation. A *non-final*
 * (uncertain) error means the operation may still be running in the driver or may even have
 * completed: the caller must keep its directories and record the mount as uncertain, so that a
 * later Unstage/Unpublish cleans up if the pod goes away. Non-final are the gRPC codes
 * Canceled, DeadlineExceeded, Unavailable, ResourceExhausted and Aborted, plus anything that is
 * not a gRPC status at all (a transport failure: an earlier call may still be in flight, so be
 * safe). Every other code is final.
 */
import { status as GrpcStatus } from '@grpc/grpc-js';
import { errorMessage, UncertainProgressError } from '../errors.ts';
import type { CsiMethod, RegistrationMethod } from './csi-proto.ts';

/** gRPC status codes by number, with the names Go's `codes.Code.String()` prints (`rpc error: code = …`). */
const GO_CODE_NAMES: Readonly<Record<number, string>> = {
  [GrpcStatus.OK]: 'OK',
  [GrpcStatus.CANCELLED]: 'Canceled',
  [GrpcStatus.UNKNOWN]: 'Unknown',
  [GrpcStatus.INVALID_ARGUMENT]: 'InvalidArgument',
  [GrpcStatus.DEADLINE_EXCEEDED]: 'DeadlineExceeded',
  [GrpcStatus.NOT_FOUND]: 'NotFound',
  [GrpcStatus.ALREADY_EXISTS]: 'AlreadyExists',
  [GrpcStatus.PERMISSION_DENIED]: 'PermissionDenied',
  [GrpcStatus.RESOURCE_EXHAUSTED]: 'ResourceExhausted',
  [GrpcStatus.FAILED_PRECONDITION]: 'FailedPrecondition',
  [GrpcStatus.ABORTED]: 'Aborted',
  [GrpcStatus.OUT_OF_RANGE]: 'OutOfRange',
  [GrpcStatus.UNIMPLEMENTED]: 'Unimplemented',
  [GrpcStatus.INTERNAL]: 'Internal',
  [GrpcStatus.UNAVAILABLE]: 'Unavailable',
  [GrpcStatus.DATA_LOSS]: 'DataLoss',
  [GrpcStatus.UNAUTHENTICATED]: 'Unauthenticated',
};

/** The codes after which the operation may still be in progress in the driver. */
export const NON_FINAL_CODES: ReadonlySet<GrpcStatus> = new Set([
  GrpcStatus.CANCELLED,
  GrpcStatus.DEADLINE_EXCEEDED,
  GrpcStatus.UNAVAILABLE,
  GrpcStatus.RESOURCE_EXHAUSTED,
  GrpcStatus.ABORTED,
]);

/** Go's name of a gRPC code, `Code(<n>)` for numbers outside the table (as Go prints them). */
export function goCodeName(code: number): string {
  return GO_CODE_NAMES[code] ?? `Code(${code})`;
}

/**
 * A CSI call answered with a non-OK gRPC status (including DeadlineExceeded when the client's
 * own deadline expired). `message` is Go's status text, `rpc error: code = <Code> desc = <details>`,
 * the wording operators know from kubelet logs. Details never contain secret values.
 */
export class CsiRpcError extends Error {
  override readonly name = 'CsiRpcError';
  /** Go's name of {@link code}, e.g. `DeadlineExceeded`. */
  readonly codeName: string;

  constructor(
    /** The RPC, e.g. `NodeStageVolume`. */
    readonly method: CsiMethod | RegistrationMethod,
    /** The numeric gRPC status code. */
    readonly code: GrpcStatus,
    /** The status details as the driver (or the client, for its own deadline) gave them. */
    readonly details: string,
  ) {
    super(`rpc error: code = ${goCodeName(code)} desc = ${details}`);
    this.codeName = goCodeName(code);
  }
}

export function isCsiRpcError(err: unknown): err is CsiRpcError {
  return err instanceof CsiRpcError;
}

/**
 * A CSI call that failed without a gRPC status (the request could not be issued or the transport
 * failed in a way grpc-js did not turn into a status). Always non-final.
 */
export class CsiTransportError extends Error {
  override readonly name = 'CsiTransportError';
  constructor(
    readonly method: CsiMethod | RegistrationMethod,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export function isCsiTransportError(err: unknown): err is CsiTransportError {
  return err instanceof CsiTransportError;
}

/**
 * `isFinalError`: true when the error proves the operation is not in progress in the driver.
 * gRPC errors are final unless their code is in {@link NON_FINAL_CODES}; any other error
 * (transport failures included) is not final.
 */
export function isFinalCsiError(err: unknown): boolean {
  if (isCsiRpcError(err)) return !NON_FINAL_CODES.has(err.code);
  return false;
}

/**
 * The error of a failed **NodeStageVolume or NodePublishVolume** (the only calls the kubelet's
 * client classifies, kubernetes/kubernetes pkg/volume/csi/csi_client.go@v1.34): non-final errors
 * become an {@link UncertainProgressError} (the operation executor then records the device or
 * volume mount as uncertain, and the plugin keeps its directories and vol_data.json), final ones
 * are returned unchanged. The original error stays reachable as `cause`. `prefix` is prepended to
 * the message.
 *
 * Every other call (capability probes, unstage, unpublish, expand, controller calls) fails with
 * {@link csiCallError}: an uncertain mark there would leave an actual-state entry the plugin has
 * written nothing for (a probe runs before vol_data.json exists), and the executor already treats
 * any unmount or attach error as uncertain.
 */
export function classifyCsiError(err: unknown, prefix = ''): Error {
  const message = `${prefix}${errorMessage(err)}`;
  if (!isFinalCsiError(err)) return new UncertainProgressError(message, { cause: err });
  return csiCallError(err, prefix);
}

/**
 * The error of a failed CSI call that is not NodeStage/NodePublish: a plain (final) error,
 * whatever the gRPC code, with `prefix` prepended (`kubernetes.io/csi: attacher.UnmountDevice
 * failed: `) and the original error as `cause`, as upstream's `errors.New(log("…: %v", err))`.
 */
export function csiCallError(err: unknown, prefix = ''): Error {
  if (prefix === '' && err instanceof Error) return err;
  return new Error(`${prefix}${errorMessage(err)}`, { cause: err });
}
