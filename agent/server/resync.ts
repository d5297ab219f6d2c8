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
export async function resync(ctx: ActionContext): Promise<HttpAnswer> {
  const { runtime, audit, caller } = ctx;
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
