/**
 * The Kubernetes API as the logged-in user: a client configuration with the dashboard's cluster
 * (server and CA, from its service account or `KUBECONFIG`) and the user's bearer token only, and
 * the two questions the dashboard asks with it. Server-only.
 *
 * - Token login: a SelfSubjectReview (authentication.k8s.io/v1) with the pasted token: the API
 *   server authenticates it as it would any request and answers who it is. The dashboard needs
 *   no permission for this (every authenticated user may review itself), and an invalid token is
 *   answered 401.
 * - Permissions: SelfSubjectAccessReviews for `get` and `update` on `nodes/volumemanager` of a
 *   node, the attributes the agents authorize with (agent/server/webhook-auth.ts), so the pages
 *   can disable what the agent would refuse. The agent stays the one that decides.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { describeApiError, apiErrorStatus } from '../../kube-client/api-errors.ts';
import { loadClientNode, type ClientNode } from '../../kube-client/client-node.ts';
import { abortableRequestOptions } from '../../kube-client/request-deadline.ts';
import { model } from '../../kube-client/model.ts';
import { loadDiscoveryKubeConfig } from '../discovery.ts';
import { kubeApiSource, processDiscoveryFiles } from '../discovery-settings.ts';

/** The agents' resource (as in agent/server/webhook-auth.ts `AGENT_API_RESOURCE`). */
const AGENT_API_RESOURCE = { group: '', resource: 'nodes', subresource: 'volumemanager' } as const;

/** The user a token belongs to. */
export interface KubeUser {
  readonly username: string;
  readonly groups: readonly string[];
}

/** Why a token could not be used: `invalid` (the API server refused it) or `unavailable` (no answer, no API configured). */
export class KubeUserError extends Error {
  override readonly name = 'KubeUserError';

  constructor(
    readonly reason: 'invalid' | 'unavailable',
    message: string,
  ) {
    super(message);
  }
}

/** True for a {@link KubeUserError}. */
export function isKubeUserError(err: unknown): err is KubeUserError {
  return err instanceof KubeUserError;
}

/** A client configuration for `cluster` of `base` that authenticates with `token` only. */
export function withUserToken(k8s: Pick<ClientNode, 'KubeConfig'>, base: KubeConfig, token: string): KubeConfig {
  const cluster = base.getCurrentCluster();
  if (cluster === null) throw new KubeUserError('unavailable', 'the Kubernetes client configuration has no current cluster');
  const kc = new k8s.KubeConfig();
  kc.loadFromClusterAndUser(cluster, { name: 'volumescope-user', token });
  return kc;
}

/** The dashboard's own cluster configuration (its service account, or KUBECONFIG). */
export async function processKubeConfig(): Promise<{ k8s: ClientNode; kubeConfig: KubeConfig }> {
  const k8s = await loadClientNode();
  try {
    const files = processDiscoveryFiles();
    return { k8s, kubeConfig: loadDiscoveryKubeConfig(k8s, kubeApiSource(process.env, files), process.env, files.serviceAccountDir) };
  } catch (err) {
    throw new KubeUserError('unavailable', `token login needs the Kubernetes API: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** How long one review may take. */
const REVIEW_TIMEOUT_MS = 10_000;

/** Who `token` is, by a SelfSubjectReview; throws {@link KubeUserError}. */
export async function reviewOwnToken(k8s: ClientNode, base: KubeConfig, token: string): Promise<KubeUser> {
  if (token === '' || /\s/.test(token)) throw new KubeUserError('invalid', 'a bearer token has no spaces or line breaks');
  const userConfig = withUserToken(k8s, base, token);
  const authn = userConfig.makeApiClient(k8s.AuthenticationV1Api);
  const body = model(k8s.V1SelfSubjectReview, { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
  let review;
  try {
    review = await authn.createSelfSubjectReview({ body }, abortableRequestOptions(k8s, AbortSignal.timeout(REVIEW_TIMEOUT_MS)));
  } catch (err) {
    if (apiErrorStatus(err) === 401) throw new KubeUserError('invalid', 'the API server did not accept this token (401)');
    throw new KubeUserError('unavailable', `the API server could not review the token: ${describeApiError(err).message}`);
  }
  const info = review.status?.userInfo;
  const username = info?.username ?? '';
  if (username === '') throw new KubeUserError('unavailable', 'the SelfSubjectReview answered without a user name');
  return { username, groups: info?.groups ?? [] };
}

/** What the user may do with one node's agent. */
export interface NodePermissions {
  readonly get: boolean;
  readonly update: boolean;
}

/** `get`/`update` on `nodes/volumemanager` of `node` for the token's user (SelfSubjectAccessReviews). */
export async function nodePermissions(k8s: ClientNode, base: KubeConfig, token: string, node: string): Promise<NodePermissions> {
  const userConfig = withUserToken(k8s, base, token);
  const authz = userConfig.makeApiClient(k8s.AuthorizationV1Api);
  const ask = async (verb: 'get' | 'update'): Promise<boolean> => {
    const body = model(k8s.V1SelfSubjectAccessReview, {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectAccessReview',
      spec: model(k8s.V1SelfSubjectAccessReviewSpec, { resourceAttributes: model(k8s.V1ResourceAttributes, { ...AGENT_API_RESOURCE, name: node, verb }) }),
    });
    try {
      return (await authz.createSelfSubjectAccessReview({ body }, abortableRequestOptions(k8s, AbortSignal.timeout(REVIEW_TIMEOUT_MS)))).status?.allowed === true;
    } catch (err) {
      if (apiErrorStatus(err) === 401) throw new KubeUserError('invalid', 'the API server no longer accepts this session\'s token (401)');
      throw new KubeUserError('unavailable', `the API server could not review the permissions: ${describeApiError(err).message}`);
    }
  };
  const [get, update] = await Promise.all([ask('get'), ask('update')]);
  return { get, update };
}
