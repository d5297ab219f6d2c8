/**
 * `POST /api/v1/resync`: runs the runtime's verification pass (rescan of volume directories and
 * the mount table, batched attach verification) and answers with what it found.
 */
import type { ResyncResponse } from '../../lib/api/actions.ts';
import { compareKeys } from '../../lib/api/normalize-snapshot.ts';
import type { ResyncFindings } from '../runtime.ts';
import type { ActionContext } from './action-context.ts';
import { errorAnswer, jsonAnswer, type HttpAnswer } from './http-response.ts';
import { errorMessage } from '../../lib/volume/errors.ts';
import type { SlidingWindowRateLimiter } from './rate-limiter.ts';

/**
 * The default resync limit per node: at most 5 passes per minute. A pass rescans every volume
 * directory and the mount table and verifies every attachment against the API server: a
 * client looping on `POST /resync` must not turn that into constant disk and API load.
 */
export const RESYNC_RATE_LIMIT = { limit: 5, windowMs: 60_000 } as const;

/** The API's answer for a runtime's findings. */
function resyncResponse(findings: ResyncFindings): ResyncResponse {
  return {
    startedAt: findings.startedAt,
    finishedAt: findings.finishedAt,
    rescanned: { volumes: findings.rescanned.volumes, mountPoints: findings.rescanned.mountPoints },
    attachVerification: {
      lastRunAt: findings.finishedAt,
      checked: findings.attachVerification.checked.length,
      foundDetached: [...findings.attachVerification.foundDetached].sort(compareKeys),
    },
    changes: [...findings.changes],
  };
}

/**
 * Runs the pass and audits it. A pass that throws is an agent-side failure (500), never the
 * request's fault; errors of single attach checks are reported in the audit message and the log.
 */
export async function resync(ctx: ActionContext & { limiter: Pick<SlidingWindowRateLimiter, 'tryAcquire' | 'limit' | 'windowMs'> }): Promise<HttpAnswer> {
  const { runtime, audit, caller, limiter } = ctx;
  const slot = limiter.tryAcquire();
  if (!slot.ok) {
    const message = `too many resyncs: at most ${limiter.limit} per ${limiter.windowMs / 1000} s on this node; retry in ${Math.ceil(slot.retryAfterMs / 1000)} s`;
    audit.record({ caller, action: 'resync', target: null, checks: [{ name: 'rate-limit', ok: false, detail: message }], result: 'refused', message });
    return errorAnswer('rate-limited', message, { headers: { 'Retry-After': String(Math.ceil(slot.retryAfterMs / 1000)) } });
  }
  let findings: ResyncFindings;
  try {
    findings = await runtime.resync();
  } catch (err) {
    const message = `resync failed: ${errorMessage(err)}`;
    audit.record({ caller, action: 'resync', target: null, checks: [], result: 'failed', message });
    return errorAnswer('internal', message);
  }
  const errors = findings.attachVerification.errors;
  if (errors.length > 0) runtime.logger.warn('resync: attach verification errors', { errors });
  audit.record({
    caller,
    action: 'resync',
    target: null,
    checks: [],
    result: 'succeeded',
    message: errors.length > 0 ? `attach verification errors: ${errors.join('; ')}` : null,
  });
  return jsonAnswer(200, resyncResponse(findings));
}
