/**
 * `GET|POST|DELETE /api/attachments/nodes/<node>/out-of-service`: the plan (what the taint would
 * force-delete and detach), applying the taint after the operator's attestation, and removing it.
 * Every check runs here, on a live read of the Node and its pods right before the write (never on
 * the informers' cache, never on what the browser believes); see out-of-service.ts for the list.
 * Server-only.
 */
import type { V1Node } from '@kubernetes/client-node';
import { z } from 'zod';
import { realClock } from '../../clock/clock.ts';
import { describeApiError } from '../../kube-client/api-errors.ts';
import { isCrossSiteRequest } from '../agent-proxy.ts';
import { currentSession } from '../auth/server-session.ts';
import type { Session } from '../auth/session.ts';
import { currentOperator } from './current-operator.ts';
import type { PodObject } from './objects.ts';
import { outOfServicePatch, planOutOfService, removeOutOfServicePatch, type OutOfServiceRefusal, type OutOfServiceResponse } from './out-of-service.ts';
import { isAttachmentsConfigError, serverKubeApi, type KubeApi } from './server-attachments.ts';

export interface OutOfServiceDeps {
  readonly api: () => Promise<KubeApi>;
  readonly now: () => number;
  /** Where the audit line goes (the dashboard's log). */
  readonly audit: (line: string) => void;
  /** The login session of the request: the attestation is recorded under its user ({@link currentOperator}). */
  readonly session: (req: Request) => Promise<Pick<Session, 'username'> | null>;
}

export function serverOutOfServiceDeps(): OutOfServiceDeps {
  return {
    api: () => serverKubeApi(),
    now: () => realClock.now(),
    audit: (line) => {
      process.stdout.write(`${line}\n`);
    },
    session: (req) => currentSession(req),
  };
}

/** The body of the POST: the attestation. */
const AttestationSchema = z.object({
  /** The operator confirms the node is powered off (or cut off from its storage). */
  attestNodeOff: z.literal(true),
  /**
   * Ignored (older dashboards sent a typed name): the operator is the login session's user,
   * never a name the request carries.
   */
  operator: z.string().max(128).optional(),
});

const noStore = { 'cache-control': 'no-store' };
const refused = (r: OutOfServiceRefusal): Response => Response.json({ reason: r.reason, error: r.message }, { status: r.status, headers: noStore });

async function liveState(api: KubeApi, name: string): Promise<{ node: V1Node | undefined; pods: PodObject[] }> {
  const core = api.kubeConfig.makeApiClient(api.k8s.CoreV1Api);
  let node: V1Node | undefined;
  try {
    node = await core.readNode({ name });
  } catch (err) {
    if (describeApiError(err).status !== 404) throw err;
  }
  const pods = node === undefined ? [] : (await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${name}` })).items;
  return { node, pods };
}

async function handle(deps: OutOfServiceDeps, act: (api: KubeApi) => Promise<Response>): Promise<Response> {
  let api: KubeApi;
  try {
    api = await deps.api();
  } catch (err) {
    if (!isAttachmentsConfigError(err)) throw err;
    return Response.json({ error: err.message, variable: err.variable }, { status: 503, headers: noStore });
  }
  try {
    return await act(api);
  } catch (err) {
    const { status, message } = describeApiError(err);
    // 403: the dashboard's service account lacks the opt-in role (patch on nodes).
    return Response.json({ error: `the Kubernetes API refused: ${message}` }, { status: status === 403 ? 403 : 502, headers: noStore });
  }
}

/** The plan, for the attestation dialog. */
export function getOutOfService(node: string, deps: OutOfServiceDeps): Promise<Response> {
  return handle(deps, async (api) => {
    const live = await liveState(api, node);
    const body: OutOfServiceResponse = { plan: planOutOfService(node, live.node, live.pods) };
    return Response.json(body, { headers: noStore });
  });
}

/** Applies the taint after the attestation; refused for a Ready node (409 `node-ready`). */
export async function postOutOfService(req: Request, node: string, deps: OutOfServiceDeps): Promise<Response> {
  if (isCrossSiteRequest(req)) return Response.json({ error: 'actions are accepted only from the dashboard itself' }, { status: 403, headers: noStore });
  let raw: unknown;
  try {
    raw = await req.json();
  } catch {
    raw = null;
  }
  const parsed = AttestationSchema.safeParse(raw);
  if (!parsed.success) return refused({ status: 400, reason: 'not-attested', message: 'the operator must attest that the node is powered off (attestNodeOff: true)' });
  const operator = currentOperator(await deps.session(req));
  if (operator === null) return refused({ status: 401, reason: 'no-operator', message: 'the attestation is recorded under the logged-in user: log in to the dashboard first' });
  return handle(deps, async (api) => {
    const live = await liveState(api, node);
    const plan = planOutOfService(node, live.node, live.pods);
    if (plan.refusal !== null || live.node === undefined) return refused(plan.refusal ?? { status: 404, reason: 'node-not-found', message: `there is no Node ${node}` });
    const core = api.kubeConfig.makeApiClient(api.k8s.CoreV1Api);
    const at = new Date(deps.now()).toISOString();
    const patch = outOfServicePatch(live.node, operator.name, at);
    await core.patchNode({ name: node, body: patch }, api.k8s.setHeaderOptions('Content-Type', api.k8s.PatchStrategy.JsonPatch));
    deps.audit(
      `out-of-service: ${node} tainted node.kubernetes.io/out-of-service=nodeshutdown:NoExecute at ${at}; attested powered off by ${JSON.stringify(operator.name)} (${operator.source}); pods to be force-deleted: ${plan.podsToForceDelete.map((p) => `${p.namespace}/${p.name}`).join(', ') || 'none'}`,
    );
    const after = await liveState(api, node);
    const body: OutOfServiceResponse = { plan: planOutOfService(node, after.node, after.pods), appliedBy: operator };
    return Response.json(body, { headers: noStore });
  });
}

/** Removes the taint (the node is back and clean). */
export async function deleteOutOfService(req: Request, node: string, deps: OutOfServiceDeps): Promise<Response> {
  if (isCrossSiteRequest(req)) return Response.json({ error: 'actions are accepted only from the dashboard itself' }, { status: 403, headers: noStore });
  return handle(deps, async (api) => {
    const live = await liveState(api, node);
    if (live.node === undefined) return refused({ status: 404, reason: 'node-not-found', message: `there is no Node ${node}` });
    const patch = removeOutOfServicePatch(live.node);
    if (patch !== null) {
      const core = api.kubeConfig.makeApiClient(api.k8s.CoreV1Api);
      await core.patchNode({ name: node, body: patch }, api.k8s.setHeaderOptions('Content-Type', api.k8s.PatchStrategy.JsonPatch));
      const operator = currentOperator(await deps.session(req));
      deps.audit(`out-of-service: taint removed from ${node} at ${new Date(deps.now()).toISOString()} by ${operator === null ? 'an unnamed operator' : JSON.stringify(operator.name)}`);
    }
    const after = await liveState(api, node);
    const body: OutOfServiceResponse = { plan: planOutOfService(node, after.node, after.pods) };
    return Response.json(body, { headers: noStore });
  });
}
