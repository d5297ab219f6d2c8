/**
 * `POST /api/v1/operations/retry` ("retry now"): clears the exponential backoff of one entry of
 * the pending-operations table so the reconciler retries it on its next pass.
 *
 * The checks and the clearing are the engine's (`VolumeManager.retryOperation`,
 * lib/volumemanager/operator-actions.ts): a slot of the per-node limiter first, then the entry
 * the table's own matching rules find, and only if it is not running (so the per-volume
 * serialisation is never bypassed). This handler maps the result to the API and audits it.
 */
import type { RetryOperationRequest, RetryOperationResponse } from '../../lib/api/actions.ts';
import type { OperatorRateLimiter } from '../../lib/volumemanager/index.ts';
import type { ActionContext } from './action-context.ts';
import { errorAnswer, jsonAnswer, type HttpAnswer } from './http-response.ts';
import { operationViewKey } from './snapshot-items.ts';
import { OBSERVE_MODE_REFUSAL } from './unmount-volume.ts';

/** The default limit: at most 10 retries per 10 s on one node (a forced TearDown's backoff clear counts as one). */
export const RETRY_RATE_LIMIT = { limit: 10, windowMs: 10_000 } as const;

/** Runs one retry request; every outcome is audited. */
export function retryOperation(ctx: ActionContext & { limiter: OperatorRateLimiter }, request: RetryOperationRequest): HttpAnswer {
  const { runtime, audit, caller, limiter } = ctx;
  const vm = runtime.volumeManager;
  const podUid = request.podUid ?? null;
  const target = podUid === null ? request.volume : `${podUid}/${request.volume}`;
  if (vm.planOnly) {
    const checks = [{ name: 'managed-mode', ok: false, detail: 'the agent runs with --mode=observe beside a kubelet' }];
    audit.record({ caller, action: 'retry', target, checks, result: 'refused', message: OBSERVE_MODE_REFUSAL });
    return errorAnswer('conflict', OBSERVE_MODE_REFUSAL, { checks });
  }

  const result = vm.retryOperation({ volume: request.volume, podUid }, limiter);
  const refuse = (answer: HttpAnswer, message: string): HttpAnswer => {
    audit.record({ caller, action: 'retry', target, checks: result.checks, result: 'refused', message });
    return answer;
  };
  switch (result.kind) {
    case 'rate-limited': {
      const retryAfter = String(Math.ceil(result.retryAfterMs / 1000));
      return refuse(errorAnswer('rate-limited', result.message, { headers: { 'Retry-After': retryAfter } }), result.message);
    }
    case 'not-found':
      return refuse(errorAnswer('not-found', result.message), result.message);
    case 'running': {
      const message = `operation ${operationViewKey(result.operation)} is running; only an operation in backoff can be retried`;
      return refuse(errorAnswer('conflict', message, { checks: result.checks }), message);
    }
    case 'cleared': {
      audit.record({ caller, action: 'retry', target, checks: result.checks, result: 'succeeded', message: null });
      const body: RetryOperationResponse = { cleared: operationViewKey(result.operation) };
      return jsonAnswer(200, body);
    }
  }
}
