/**
 * `POST /api/v1/orphans/cleanup`: the guarded cleanup of one orphaned pod directory, the only
 * mutating action of observe mode. The runtime (agent/node/observe-controller.ts) runs every
 * safety check (docs/safety.md) right before acting; this handler maps its result to the API and audits it.
 *
 * Answers: 200 with the plan (dry run) or what was done; 409 `conflict` with every check when a
 * check refused (nothing was done); 404 when the agent is not in observe mode; 409 when the
 * cleanup is disabled (`--allow-orphan-cleanup` missing) — the operator can fix that, it is not
 * a missing route.
 */
import type { OrphanCleanupRequest, OrphanCleanupResponse } from '../../lib/api/actions.ts';
import type { Check } from '../../lib/api/snapshot.ts';
import type { OrphanCleanupResult } from '../../lib/observe/orphan-cleanup.ts';
import { isOrphanCleanupDisabledError } from '../runtime.ts';
import type { ActionContext } from './action-context.ts';
import { errorAnswer, jsonAnswer, type HttpAnswer } from './http-response.ts';
import { errorMessage } from '../../lib/volume/errors.ts';

export async function cleanupOrphan(ctx: ActionContext, request: OrphanCleanupRequest): Promise<HttpAnswer> {
  const { runtime, audit, caller } = ctx;
  const dryRun = request.dryRun === true;
  const action = dryRun ? 'orphan-cleanup-dry-run' : 'orphan-cleanup';
  const target = request.podUid;
  if (runtime.cleanupOrphan === undefined) {
    return errorAnswer('not-found', 'orphan cleanup exists only in observe mode (--mode=observe); in managed mode the agent removes orphaned pod directories itself');
  }
  let result: OrphanCleanupResult;
  try {
    result = await runtime.cleanupOrphan(request.podUid, dryRun);
  } catch (err) {
    const message = errorMessage(err);
    if (isOrphanCleanupDisabledError(err)) {
      audit.record({ caller, action, target, checks: [], result: 'refused', message });
      return errorAnswer('conflict', message, { checks: [{ name: 'cleanup-enabled', ok: false, detail: message }] });
    }
    audit.record({ caller, action, target, checks: [], result: 'failed', message });
    return errorAnswer('internal', `orphan cleanup failed: ${message}`);
  }
  const checks: Check[] = result.checks.map((c) => ({ name: c.check, ok: c.passed, detail: c.detail }));
  if (result.outcome === 'refused') {
    const message = result.refused.map((r) => `${r.code}: ${r.message}`).join('; ');
    audit.record({ caller, action, target, checks, result: 'refused', message });
    return errorAnswer('conflict', message, { checks });
  }
  const body: OrphanCleanupResponse = { podUid: request.podUid, outcome: result.outcome, unmounts: [], removals: [], kept: [], failures: [], checks };
  if (result.outcome === 'planned') {
    body.unmounts = result.plan.unmounts.map((u) => u.mountPoint);
    body.removals = result.plan.removals.map((r) => r.path);
    body.kept = result.plan.keep.map((k) => ({ path: k.path, reason: k.reason }));
  } else if (result.outcome === 'completed' || result.outcome === 'aborted') {
    body.unmounts = result.unmounted;
    body.removals = result.removed;
    body.kept = result.kept.map((k) => ({ path: k.path, reason: k.reason }));
    body.failures = result.failures.map((f) => ({ path: f.path, step: f.step, message: f.message }));
  }
  const failed = result.outcome === 'aborted';
  const message = result.outcome === 'aborted'
    ? `aborted: ${[...result.refused.map((r) => r.message), ...result.failures.map((f) => `${f.step} ${f.path}: ${f.message}`)].join('; ')}`
    : `${result.outcome}: ${String(body.unmounts.length)} unmount(s), ${String(body.removals.length)} empty director${body.removals.length === 1 ? 'y' : 'ies'}, ${String(body.kept.length)} kept`;
  audit.record({ caller, action, target, checks, result: failed ? 'failed' : 'succeeded', message });
  return jsonAnswer(200, body);
}
