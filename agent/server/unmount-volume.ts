/**
 * `POST /api/v1/unmount`: a forced TearDown of one pod's volume that the desired state no longer
 * wants: an orphan the reconciler has not cleaned up, or a TearDown stuck in backoff.
 *
 * The safety checks and the TearDown itself are the engine's (`VolumeManager.forceUnmount`,
 * lib/volumemanager/operator-actions.ts): it reads the pod source live through the runtime's
 * `podSource` and clears a TearDown's backoff only within the per-node limiter shared with
 * "retry now". This handler maps the result to the API and audits it:
 * - a failed check: 409 `conflict` with every check; 404 when the only failure is that the pod
 *   has no such mount; 429 `rate-limited` (with `Retry-After`) when the backoff may not be
 *   cleared now;
 * - started: waits for the outcome up to `outcomeTimeoutMs` of the runtime clock and answers 200
 *   with it; a TearDown still running then is answered 202 and audited as `running`, and its
 *   outcome is audited (succeeded, or failed with the error verbatim) when it ends.
 */
import type { UnmountRequest, UnmountResponse, UnmountRunningResponse } from '../../lib/api/actions.ts';
import { operationKey, type Check } from '../../lib/api/snapshot.ts';
import type { Clock } from '../../lib/clock/clock.ts';
import type { OperatorRateLimiter, TearDownOutcome } from '../../lib/volumemanager/index.ts';
import type { ActionContext } from './action-context.ts';
import type { AuditRecord } from './audit-log.ts';
import { errorAnswer, jsonAnswer, type HttpAnswer } from './http-response.ts';

/** How long the request waits for the TearDown's outcome before answering 202 (still running). */
export const DEFAULT_UNMOUNT_OUTCOME_TIMEOUT_MS = 30_000;

export interface UnmountContext extends ActionContext {
  /** The per-node limiter "retry now" uses; clearing a TearDown's backoff takes a slot of it. */
  limiter: OperatorRateLimiter;
  /** The wait bound for the outcome (default 30 s of the runtime clock). */
  outcomeTimeoutMs?: number;
  /** Aborted when the server closes: stop waiting and answer "still running". */
  signal: AbortSignal;
}

/** Why observe mode refuses the managed-mode actions. */
export const OBSERVE_MODE_REFUSAL =
  'this agent observes a kubelet (--mode=observe): it never unmounts or retries the kubelet\'s operations; directories of pods gone from the API can be cleaned up with POST /api/v1/orphans/cleanup';

/** The message of the `running` audit entry and of the 202 answer. */
export const TEARDOWN_STILL_RUNNING_MESSAGE = 'TearDown started and is still running; its outcome will show in the snapshot (operations, actual state, audit)';

/** Resolves with the outcome, or with null once `timeoutMs` of `clock` passed or `signal` aborted. */
function waitForOutcome(outcome: Promise<TearDownOutcome>, clock: Clock, timeoutMs: number, signal: AbortSignal): Promise<TearDownOutcome | null> {
  return new Promise((resolve) => {
    const finish = (value: TearDownOutcome | null): void => {
      clock.clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      resolve(value);
    };
    const onAbort = (): void => {
      finish(null);
    };
    const timer = clock.setTimeout(onAbort, timeoutMs);
    signal.addEventListener('abort', onAbort);
    if (signal.aborted) onAbort();
    void outcome.then(finish);
  });
}

/** The audit result and message of a finished TearDown. */
function outcomeAudit(outcome: TearDownOutcome): Pick<AuditRecord, 'result' | 'message'> {
  return { result: outcome.outcome === 'unmounted' ? 'succeeded' : 'failed', message: outcome.error };
}

/** Runs one unmount request: engine checks and TearDown, then the answer; every outcome is audited. */
export async function unmountVolume(ctx: UnmountContext, request: UnmountRequest): Promise<HttpAnswer> {
  const { runtime, audit, caller } = ctx;
  const vm = runtime.volumeManager;
  const { podUid, volume } = request;
  const target = `${podUid}/${volume}`;
  const record = (checks: Check[], result: Pick<AuditRecord, 'result' | 'message'>): void => {
    audit.record({ caller, action: 'unmount', target, checks, ...result });
  };
  if (vm.planOnly) {
    // Observe mode: the mounts are the kubelet's. Refused before any check looks at them.
    const checks = [{ name: 'managed-mode', ok: false, detail: 'the agent runs with --mode=observe beside a kubelet' }];
    record(checks, { result: 'refused', message: OBSERVE_MODE_REFUSAL });
    return errorAnswer('conflict', OBSERVE_MODE_REFUSAL, { checks });
  }

  const result = await vm.forceUnmount(request, { source: runtime.podSource, limiter: ctx.limiter });
  switch (result.kind) {
    case 'refused':
      record(result.checks, { result: 'refused', message: result.message });
      return errorAnswer('conflict', result.message, { checks: result.checks });
    case 'no-such-mount':
      record(result.checks, { result: 'refused', message: result.message });
      return errorAnswer('not-found', result.message);
    case 'rate-limited': {
      record(result.checks, { result: 'refused', message: result.message });
      const retryAfter = String(Math.ceil(result.retryAfterMs / 1000));
      return errorAnswer('rate-limited', result.message, { headers: { 'Retry-After': retryAfter } });
    }
    case 'not-started': {
      record(result.checks, { result: 'failed', message: result.error });
      const body: UnmountResponse = { podUid, volume: result.volumeName, outcome: 'failed', error: result.error, checks: result.checks, startedAt: result.startedAt, finishedAt: result.finishedAt };
      return jsonAnswer(200, body);
    }
    case 'started':
      break;
  }

  const { checks, volumeName, podName, operationName, startedAt } = result;
  runtime.logger.info('unmount: TearDown started', { caller, podUid, volume: volumeName, operation: operationName });
  const outcome = await waitForOutcome(result.outcome, runtime.clock, ctx.outcomeTimeoutMs ?? DEFAULT_UNMOUNT_OUTCOME_TIMEOUT_MS, ctx.signal);
  if (outcome === null) {
    record(checks, { result: 'running', message: TEARDOWN_STILL_RUNNING_MESSAGE });
    // The second entry: the outcome, whenever the TearDown ends (also after the server closed).
    void result.outcome.then((finished) => {
      record(checks, outcomeAudit(finished));
    });
    const key = operationKey({ operationName, volume: volumeName, podUid: podName, nodeName: null });
    const body: UnmountRunningResponse = { podUid, volume: volumeName, status: 'running', operation: key, message: TEARDOWN_STILL_RUNNING_MESSAGE, checks, startedAt };
    return jsonAnswer(202, body);
  }
  record(checks, outcomeAudit(outcome));
  const body: UnmountResponse = { podUid, volume: volumeName, outcome: outcome.outcome, error: outcome.error, checks, startedAt, finishedAt: outcome.finishedAt };
  return jsonAnswer(200, body);
}
