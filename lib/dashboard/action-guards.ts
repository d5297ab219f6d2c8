/**
 * Whether an operator action makes sense now, and what exactly it will do: the dashboard
 * disables an action (saying why) when the agent would refuse it, and the confirmation dialog
 * shows the description verbatim. Pure.
 */
import type { Operation, Snapshot } from '../api/index.ts';
import { rowPodName, type VolumeRow } from './pipeline.ts';
import type { ConnectionPhase } from './queries.ts';
import type { RetryTargetNames } from './retry-follow-up.ts';

/** An action's availability: allowed, or not with the reason shown next to the disabled button. */
export type ActionAvailability = { readonly allowed: true } | { readonly allowed: false; readonly reason: string };

const ALLOWED: ActionAvailability = { allowed: true };

function connectionBlock(phase: ConnectionPhase): ActionAvailability | null {
  if (phase === 'unavailable') return { allowed: false, reason: 'the agent is unreachable' };
  return null;
}

/** Force resync: allowed whenever the agent is reachable. */
export function resyncAvailability(phase: ConnectionPhase): ActionAvailability {
  return connectionBlock(phase) ?? ALLOWED;
}

/** Retry now: only for an operation in backoff (a running one gets 409). */
export function retryAvailability(op: Operation, phase: ConnectionPhase): ActionAvailability {
  const blocked = connectionBlock(phase);
  if (blocked !== null) return blocked;
  if (op.state === 'running') return { allowed: false, reason: 'it is running right now (the agent would answer 409)' };
  return ALLOWED;
}

/**
 * Unmount: only for a volume mounted for a pod that no longer wants it (the agent refuses with
 * 409 while the pod is in the desired state, and with 503 before its states are synced).
 */
export function unmountAvailability(row: VolumeRow, snapshot: Pick<Snapshot, 'statesSynced'> & { observing?: boolean }, phase: ConnectionPhase): ActionAvailability {
  // Observe mode: the mounts are the kubelet's; the agent refuses (409) whatever the row says.
  if (snapshot.observing === true) return { allowed: false, reason: 'this agent only observes the kubelet (--mode=observe): it never unmounts' };
  const blocked = connectionBlock(phase);
  if (blocked !== null) return blocked;
  if (row.desired) return { allowed: false, reason: `pod ${rowPodName(row)} still wants this volume (the agent would refuse)` };
  if (row.mount === null) return { allowed: false, reason: 'it is not mounted for this pod' };
  if (!snapshot.statesSynced) return { allowed: false, reason: 'the agent’s states are not synced yet (it would answer 503)' };
  if (row.operation?.state === 'running') return { allowed: false, reason: 'an operation on this volume runs right now (the agent would answer 409)' };
  return ALLOWED;
}

/**
 * The confirmation text of Force resync. Observe mode (`observing`): a refresh of what the agent
 * reads; the kubelet's state is the kubelet's, nothing is corrected or mounted by the agent.
 */
export function describeResync(node: string, observing = false): string {
  if (observing) {
    return (
      `Force resync on ${node}: the agent reads the kubelet's root dir, the mount table, the kubelet's events and the ` +
      'VolumeAttachments again, now instead of at its next refresh. It never mounts or unmounts anything (the kubelet does); ' +
      'what changed is listed.'
    );
  }
  return (
    `Force resync on ${node}: the agent rescans the pod volume directories and the mount table and checks ` +
    'that attached volumes are still attached, now instead of at its next periodic pass. Nothing is mounted ' +
    'or unmounted; the actual state is corrected where it was wrong, and every change is listed.'
  );
}

/**
 * The kubelet's initial `durationBeforeRetry` (lib/operationexecutor/exponential-backoff.ts; not
 * imported: dashboard code depends on lib/api only). Retry now deletes the operation's backoff
 * entry, as a success would, so a failure after it backs off this long, not the doubled delay.
 */
const INITIAL_BACKOFF_TEXT = '500 ms';

/** The confirmation text of Retry now. */
export function describeRetry(node: string, op: Operation, names: RetryTargetNames = {}): string {
  const pod =
    op.podUid === null ? 'a volume-level operation' : names.podName === undefined || names.podName === null ? `pod uid ${op.podUid}` : `pod ${names.podName}, uid ${op.podUid}`;
  return (
    `Retry now on ${node}: clears the backoff of ${op.operationName} for volume ${op.volume} (${pod}, ` +
    `${op.failures} failure${op.failures === 1 ? '' : 's'} so far), so the reconciler starts it again on its ` +
    `next pass instead of waiting for the backoff to expire. If it fails again, the backoff restarts at ${INITIAL_BACKOFF_TEXT} ` +
    '(the kubelet’s initial durationBeforeRetry).'
  );
}

/**
 * The confirmation text of Unmount. `podName`: the pod's `namespace/name` when the row has only
 * its UID (a pod that is gone, named by its events).
 */
export function describeUnmount(node: string, row: VolumeRow, podName: string | null = null): string {
  const pod = podName !== null ? `${podName} (uid ${row.podUid})` : `${rowPodName(row)}${row.podName === row.podUid ? '' : ` (uid ${row.podUid})`}`;
  return (
    `Unmount volume “${row.volumeName}” (${row.uniqueVolumeName}) of pod ${pod} on ${node}: ` +
    'the agent first checks that the pod is gone from the desired state and from its source (read live), that the source ' +
    'reports no error for it and that no operation runs on the volume; ' +
    'if every check passes it tears the pod’s mount down (TearDown). If a check fails, nothing is done and ' +
    'the refusal is shown here. The device stays attached; the reconciler unmounts the device when no pod uses it.'
  );
}

/** The request body of Retry now for an operation (the pod UID left out for volume-level ones). */
export function retryRequestFor(op: Operation): { volume: string; podUid?: string } {
  return op.podUid === null ? { volume: op.volume } : { volume: op.volume, podUid: op.podUid };
}
