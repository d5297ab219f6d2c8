/**
 * `GET /api/v1/volumes/blockers?volume=<unique name>&podUid=<uid>`: who keeps a volume's path
 * busy (lib/api/mount-health.ts `BlockersResponse`). The search itself is the runtime's
 * (agent/node/unmount-blockers/find-blockers.ts); this maps the query and its refusals:
 * 400 for a missing or empty `volume`/`podUid` (naming the field) or a path outside the root dir,
 * 404 for a volume or pod mount the actual state does not know, or a runtime without the search.
 */
import type { IncomingMessage } from 'node:http';
import { BlockersQuerySchema } from '../../lib/api/mount-health.ts';
import { isBlockersTargetError, type AgentRuntime } from '../runtime.ts';
import { errorAnswer, jsonAnswer, type HttpAnswer } from './http-response.ts';

export async function volumeBlockers(runtime: AgentRuntime, req: IncomingMessage): Promise<HttpAnswer> {
  const params = new URL(req.url ?? '/', 'http://agent').searchParams;
  const raw: Record<string, string> = {};
  for (const name of ['volume', 'podUid'] as const) {
    const value = params.get(name);
    if (value !== null) raw[name] = value;
  }
  const query = BlockersQuerySchema.safeParse(raw);
  if (!query.success) {
    const issue = query.error.issues[0];
    const field = String(issue?.path[0] ?? 'volume');
    return errorAnswer('bad-request', `${field}: ${raw[field] === undefined ? 'required' : 'must not be empty'}`, { field });
  }
  if (runtime.findBlockers === undefined) return errorAnswer('not-found', 'this agent has no blocker search');
  try {
    return jsonAnswer(200, await runtime.findBlockers(query.data));
  } catch (err) {
    if (isBlockersTargetError(err)) {
      return err.reason === 'not-found' ? errorAnswer('not-found', err.message) : errorAnswer('bad-request', err.message, { field: query.data.podUid === undefined ? 'volume' : 'podUid' });
    }
    throw err;
  }
}
