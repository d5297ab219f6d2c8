/**
 * `POST /api/v1/operations/retry` ("retry now"): clears the exponential backoff of one entry of
 * the pending-operations table so the reconciler retries it on its next pass.
 *
 * Safety (operators-and-csi.md Part E, "Clear back-off"): only an entry with no running
 * operation is cleared (the table's own rule, so the per-volume serialisation is never
 * bypassed), and the action is rate-limited per node.
 */
import type { RetryOperationRequest, RetryOperationResponse } from '../../lib/api/actions.ts';
import { operationKey, type Check } from '../../lib/api/snapshot.ts';
import type { PendingOperationView } from '../../lib/operationexecutor/nested-pending-operations.ts';
import type { UniquePodName, UniqueVolumeName } from '../../lib/volume/types.ts';
import type { ActionContext } from './action-context.ts';
import { OBSERVE_MODE_REFUSAL } from './unmount-volume.ts';
import { errorAnswer, jsonAnswer, type HttpAnswer } from './http-response.ts';
import type { SlidingWindowRateLimiter } from './rate-limiter.ts';

/** The default limit: at most 10 retries per 10 s on one node. */
export const RETRY_RATE_LIMIT = { limit: 10, windowMs: 10_000 } as const;

/** The API key (`operationKey`) of a table entry. */
export function pendingOperationKey(op: PendingOperationView): string {
  return operationKey({
    operationName: op.operationName,
    volume: op.key.volumeName,
    podUid: op.key.podName === '' ? null : op.key.podName,
    nodeName: op.key.nodeName === '' ? null : op.key.nodeName,
  });
}

/**
 * The entry `retryNow(volume, podUid)` acts on, found with the table's matching rules
 * (`NestedPendingOperations.findOperation`): same volume; pod names equal or either empty; a
 * running entry wins, then an exact (pod, no node) match, then the first match in table order.
 * Needed because `retryNow` reports only the outcome, and the answer names the cleared key.
 */
export function findOperationForRetry(
  ops: readonly PendingOperationView[],
  volume: string,
  podUid: string | null,
): PendingOperationView | undefined {
  const pod = podUid ?? '';
  let found: PendingOperationView | undefined;
  let exact = false;
  for (const op of ops) {
    if (op.key.volumeName !== volume) continue;
    if (op.key.podName !== '' && pod !== '' && op.key.podName !== pod) continue;
    if (op.pending) return op;
    if (op.key.podName === pod && op.key.nodeName === '') {
      found = op;
      exact = true;
    } else if (!exact && found === undefined) {
      found = op;
    }
  }
  return found;
}

/** Runs one retry request: rate limit, lookup, clear; every outcome is audited. */
export function retryOperation(ctx: ActionContext & { limiter: SlidingWindowRateLimiter }, request: RetryOperationRequest): HttpAnswer {
  const { runtime, audit, caller, limiter } = ctx;
  const vm = runtime.volumeManager;
  const podUid = request.podUid ?? null;
  const target = podUid === null ? request.volume : `${podUid}/${request.volume}`;
  const what = podUid === null ? `volume ${request.volume}` : `volume ${request.volume} of pod ${podUid}`;
  const checks: Check[] = [];
  const refuse = (answer: HttpAnswer, message: string): HttpAnswer => {
    audit.record({ caller, action: 'retry', target, checks, result: 'refused', message });
    return answer;
  };
  if (vm.planOnly) {
    checks.push({ name: 'managed-mode', ok: false, detail: 'the agent runs with --mode=observe beside a kubelet' });
    return refuse(errorAnswer('conflict', OBSERVE_MODE_REFUSAL, { checks }), OBSERVE_MODE_REFUSAL);
  }

  const windowSeconds = limiter.windowMs / 1000;
  const decision = limiter.tryAcquire();
  if (!decision.ok) {
    const retryAfter = Math.ceil(decision.retryAfterMs / 1000);
    const message = `too many retries: at most ${limiter.limit} per ${windowSeconds} s on this node; try again in ${retryAfter} s`;
    checks.push({ name: 'rate-limit', ok: false, detail: message });
    // 429 has no code of its own in the contract; `conflict` is the closest (the action was refused).
    return refuse(errorAnswer('rate-limited', message, { headers: { 'Retry-After': String(retryAfter) } }), message);
  }
  checks.push({ name: 'rate-limit', ok: true, detail: `within ${limiter.limit} retries per ${windowSeconds} s on this node` });

  const op = findOperationForRetry(vm.getPendingOperations(), request.volume, podUid);
  if (op === undefined) {
    const message = `no operation for ${what} in the pending-operations table`;
    checks.push({ name: 'operation-exists', ok: false, detail: message });
    return refuse(errorAnswer('not-found', message), message);
  }
  const key = pendingOperationKey(op);
  checks.push({ name: 'operation-exists', ok: true, detail: `operation ${key}` });
  if (op.pending) {
    const message = `operation ${key} is running; only an operation in backoff can be retried`;
    checks.push({ name: 'operation-not-running', ok: false, detail: 'the operation is running now' });
    return refuse(errorAnswer('conflict', message, { checks }), message);
  }
  checks.push({
    name: 'operation-not-running',
    ok: true,
    detail: `in backoff after ${op.failures} failure(s)${op.retryAt === null ? '' : `, next retry allowed after ${new Date(op.retryAt).toISOString()}`}`,
  });

  const result = vm.retryNow(request.volume as UniqueVolumeName, podUid as UniquePodName | null);
  if (result === 'cleared') {
    audit.record({ caller, action: 'retry', target, checks, result: 'succeeded', message: null });
    const body: RetryOperationResponse = { cleared: key };
    return jsonAnswer(200, body);
  }
  // The table changed between the lookup and the call (both run in one turn, so this is a bug).
  const message = result === 'running' ? `operation ${key} is running` : `no operation for ${what} in the pending-operations table`;
  return refuse(result === 'running' ? errorAnswer('conflict', message, { checks }) : errorAnswer('not-found', message), message);
}
