/**
 * What Retry now is about, in words, and what happened after it: the dialog names the target
 * ("mount volume pgdata for pod default/db") and then follows the operation live through the
 * snapshot (waiting for the reconciler → retrying → failed again / mounted ✓). Pure.
 *
 * The follow-up compares the operation after the retry with the operation as the dialog was
 * opened (`before`), by times of the agent's clock only (the browser's clock may be skewed): a
 * failure after the retry has a later `lastErrorAt`, a success a `succeededAt` after the last
 * failure before it.
 */
import { operationKey, type Operation, type OperationHistory } from '../api/index.ts';

/** What the kubelet's operation does, as a verb phrase to put before "volume …". */
const OPERATION_VERBS: ReadonlyMap<string, string> = new Map([
  ['volume_mount', 'mount'],
  ['volume_unmount', 'unmount'],
  ['unmount_device', 'unmount the device of'],
  ['map_volume', 'map'],
  ['unmap_volume', 'unmap'],
  ['unmap_device', 'unmap the device of'],
  ['volume_attach', 'attach'],
  ['volume_detach', 'detach'],
  ['verify_controller_attached_volume', 'verify the attach of'],
  ['volume_fs_resize', 'resize the file system of'],
]);

/** What a success of the operation is called, shown with ✓. */
const OPERATION_SUCCESSES: ReadonlyMap<string, string> = new Map([
  ['volume_mount', 'mounted'],
  ['volume_unmount', 'unmounted'],
  ['unmount_device', 'device unmounted'],
  ['map_volume', 'mapped'],
  ['unmap_volume', 'unmapped'],
  ['unmap_device', 'device unmapped'],
  ['volume_attach', 'attached'],
  ['volume_detach', 'detached'],
  ['verify_controller_attached_volume', 'attach verified'],
  ['volume_fs_resize', 'file system resized'],
]);

/**
 * A unique volume name cut to what tells it apart: a CSI volume's handle (after `^`), else its
 * last path segment without the pod UID prefix of per-pod volumes (`<plugin>/<podUID>-<name>`).
 */
export function volumeShortName(uniqueVolumeName: string): string {
  const caret = uniqueVolumeName.lastIndexOf('^');
  if (caret >= 0) return uniqueVolumeName.slice(caret + 1);
  const last = uniqueVolumeName.slice(uniqueVolumeName.lastIndexOf('/') + 1);
  return last.replace(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-/i, '');
}

/** What the action is about, beyond the operation: names the operator knows. */
export interface RetryTargetNames {
  /** The pod's `namespace/name`; null or undefined when unknown (then the UID is used). */
  readonly podName?: string | null;
  /** The pod's name for the volume (`spec.volumes[].name`); else the unique name is shortened. */
  readonly volumeName?: string | null;
}

/** `mount volume pgdata for pod default/db`: the target of Retry now in words. */
export function retryTargetText(op: Pick<Operation, 'operationName' | 'volume' | 'podUid'>, names: RetryTargetNames = {}): string {
  const verb = OPERATION_VERBS.get(op.operationName) ?? `${op.operationName} of`;
  const volume = names.volumeName ?? volumeShortName(op.volume);
  const pod = op.podUid === null ? '' : ` for pod ${names.podName ?? `uid ${op.podUid}`}`;
  return `${verb} volume ${volume}${pod}`;
}

/** What happened after a Retry now, as far as the snapshot tells. */
export type RetryFollowUp =
  /** The backoff is cleared and no attempt has been seen yet: the reconciler's next pass starts it. */
  | { readonly kind: 'waiting' }
  /** An attempt runs now. */
  | { readonly kind: 'retrying' }
  /** The attempt failed; `sameError`: with the error of before; `op` has the next retry. */
  | { readonly kind: 'failed-again'; readonly sameError: boolean; readonly op: Operation }
  /** The operation succeeded: `text` is what it did (`mounted`). */
  | { readonly kind: 'succeeded'; readonly text: string; readonly at: number };

/**
 * The follow-up of a Retry now of `before` (the operation as the dialog showed it), from the
 * current snapshot's operations and histories.
 */
export function retryFollowUp(
  before: Operation,
  now: { readonly operations: readonly Operation[]; readonly operationHistory: readonly OperationHistory[] },
): RetryFollowUp {
  const key = operationKey(before);
  const baseline = before.lastErrorAt ?? 0;
  const history = now.operationHistory.find((h) => operationKey(h) === key);
  if (history !== undefined && history.succeededAt !== null && history.succeededAt > baseline) {
    return { kind: 'succeeded', text: OPERATION_SUCCESSES.get(before.operationName) ?? `${before.operationName} succeeded`, at: history.succeededAt };
  }
  const op = now.operations.find((o) => operationKey(o) === key);
  // Retry now deletes the backoff entry: until the reconciler starts it again it is not in the table.
  if (op === undefined) return { kind: 'waiting' };
  if (op.state === 'running') return { kind: 'retrying' };
  if (op.lastErrorAt !== null && op.lastErrorAt > baseline) return { kind: 'failed-again', sameError: op.lastError === before.lastError, op };
  return { kind: 'waiting' };
}

/** Whether two follow-ups say the same thing (a new failure is a new step, even with the same error). */
function sameStep(a: RetryFollowUp, b: RetryFollowUp): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === 'failed-again' && b.kind === 'failed-again') return a.op.lastErrorAt === b.op.lastErrorAt;
  return true;
}

/** At most this many steps are kept (the latest): a retry that keeps failing does not grow the dialog. */
export const FOLLOW_UP_STEPS = 6;

/**
 * The steps seen so far, with `next` appended when it says something new (and the oldest dropped
 * beyond {@link FOLLOW_UP_STEPS}); the same array when it does not.
 */
export function appendFollowUp(steps: readonly RetryFollowUp[], next: RetryFollowUp): readonly RetryFollowUp[] {
  const last = steps[steps.length - 1];
  if (last !== undefined && sameStep(last, next)) {
    // The same failure, its next retry moved (a later snapshot): keep the step, with the newer operation.
    return next.kind === 'failed-again' && last.kind === 'failed-again' && last.op !== next.op ? [...steps.slice(0, -1), next] : steps;
  }
  return [...steps, next].slice(-FOLLOW_UP_STEPS);
}
