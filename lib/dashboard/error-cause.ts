/**
 * The cause of a kubelet operation error: what an operator reads first when the error is cut to
 * one line. The kubelet's detailed errors put the volume and pod in front and the error it got
 * last, after `" : "` (`GenerateErrorDetailed`: `"%s %s : %v"`, kubernetes/kubernetes
 * pkg/volume/util/operationexecutor/operation_executor.go@v1.34), so the cause is the text after
 * the last `" : "`. Pure; the verbatim message stays available beside it.
 */

/** The separator the kubelet puts between an operation's details and the error it got. */
export const KUBELET_CAUSE_SEPARATOR = ' : ';

/** An error message split for display: the cause first, the verbatim message on demand. */
export interface ErrorCause {
  /** The text after the last {@link KUBELET_CAUSE_SEPARATOR}; the whole message when there is none. */
  readonly cause: string;
  /** The message as the agent sent it. */
  readonly message: string;
  /** The cause is shorter than the message, so the verbatim message says more. */
  readonly truncated: boolean;
}

/**
 * The cause of `message`: always a suffix of it. A message without `" : "`, or one whose last
 * `" : "` ends it (nothing after), is its own cause.
 */
export function errorCause(message: string): ErrorCause {
  const at = message.lastIndexOf(KUBELET_CAUSE_SEPARATOR);
  const cause = at < 0 ? message : message.slice(at + KUBELET_CAUSE_SEPARATOR.length);
  if (cause === '') return { cause: message, message, truncated: false };
  return { cause, message, truncated: cause.length < message.length };
}
