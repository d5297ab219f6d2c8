/**
 * Finding things through the user's kubeconfig: the pod's node and UID, the node's agent (the
 * dashboard's discovery rule, lib/dashboard/discovery.ts `servingAgentPods`: the Running agent pod
 * with a pod IP on that node, by label in the agents' namespace) and the user's bearer token.
 */
import type { RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { describeApiError } from '../../lib/kube-client/api-errors.ts';
import type { ClientNode } from '../../lib/kube-client/client-node.ts';
import { isKubeConfigError, kubeconfigPaths, loadKubeConfigFiles, type KubeConfigEnv } from '../../lib/kube-client/kubeconfig.ts';
import { servingAgentPods, type AgentPod } from '../../lib/dashboard/discovery.ts';
import type { AgentEndpoint } from './agent-transport.ts';

/** Something the plugin could not find or was not allowed to read; exit code 3. */
export class LookupError extends Error {
  override readonly name = 'LookupError';
}

/** True for a {@link LookupError}. */
export function isLookupError(err: unknown): err is LookupError {
  return err instanceof LookupError;
}

/** The user's client configuration: `--kubeconfig`, else `KUBECONFIG`, else `~/.kube/config`; `--context` picks a context. */
export function loadUserKubeConfig(k8s: Pick<ClientNode, 'KubeConfig'>, env: KubeConfigEnv, kubeconfig: string | null, context: string | null): KubeConfig {
  let kc: KubeConfig;
  try {
    kc = loadKubeConfigFiles(k8s, kubeconfig === null ? kubeconfigPaths(env) : [kubeconfig]);
  } catch (err) {
    if (isKubeConfigError(err)) throw new LookupError(err.message);
    throw err;
  }
  if (context !== null) {
    if (kc.getContextObject(context) === null) throw new LookupError(`context ${JSON.stringify(context)} is not in the kubeconfig`);
    kc.setCurrentContext(context);
  }
  return kc;
}

/** The namespace of the kubeconfig's current context, else `default` (as kubectl). */
export function contextNamespace(kc: KubeConfig): string {
  const ctx = kc.getContextObject(kc.getCurrentContext());
  return ctx?.namespace ?? 'default';
}

/**
 * The bearer token the kubeconfig's user sends (a token, a token file or an exec plugin's), as
 * client-node computes it; `null` for a user without one (client certificates only).
 */
export async function userBearerToken(kc: KubeConfig): Promise<string | null> {
  const opts: RequestOptions = {};
  await kc.applyToHTTPSOptions(opts);
  const headers = opts.headers;
  if (headers === undefined || Array.isArray(headers)) return null;
  const header = (headers as Record<string, unknown>)['Authorization'] ?? (headers as Record<string, unknown>)['authorization'];
  if (typeof header !== 'string') return null;
  const m = /^Bearer\s+(.+)$/i.exec(header);
  return m?.[1] ?? null;
}

function apiFailure(what: string, err: unknown): LookupError {
  const { status, message } = describeApiError(err);
  if (status === 403) return new LookupError(`${what}: forbidden by your RBAC (${message})`);
  return new LookupError(`${what}: ${message}`);
}

/** The pod as the API server has it: its UID and node; `null` when it does not exist. */
export async function readPod(k8s: Pick<ClientNode, 'CoreV1Api'>, kc: KubeConfig, namespace: string, name: string): Promise<{ uid: string; node: string | null } | null> {
  const api = kc.makeApiClient(k8s.CoreV1Api);
  try {
    const pod = await api.readNamespacedPod({ namespace, name });
    return { uid: pod.metadata?.uid ?? '', node: pod.spec?.nodeName ?? null };
  } catch (err) {
    if (describeApiError(err).status === 404) return null;
    throw apiFailure(`cannot read pod ${namespace}/${name}`, err);
  }
}

/** Where the agents are: `--agent-namespace`, `--agent-selector`, the default port, and the scheme of their URLs (`--agent-scheme`). */
export interface AgentSearch {
  readonly namespace: string;
  readonly selector: string;
  readonly defaultPort: number;
  readonly scheme: 'http' | 'https';
}

/** The agent of `node`, found as the dashboard's discovery finds agents. */
export async function findNodeAgent(k8s: Pick<ClientNode, 'CoreV1Api'>, kc: KubeConfig, search: AgentSearch, node: string): Promise<AgentEndpoint> {
  const api = kc.makeApiClient(k8s.CoreV1Api);
  let pods: readonly AgentPod[];
  try {
    pods = (await api.listNamespacedPod({ namespace: search.namespace, labelSelector: search.selector })).items;
  } catch (err) {
    throw apiFailure(`cannot list the agent pods in namespace ${search.namespace} (selector ${search.selector})`, err);
  }
  const serving = servingAgentPods(pods, search.defaultPort, search.scheme).find((a) => a.node === node);
  if (serving === undefined) {
    throw new LookupError(`no running VolumeScope agent on node ${node} (no Running pod with a pod IP matching ${search.selector} in namespace ${search.namespace})`);
  }
  return { node, url: serving.url, pod: { namespace: search.namespace, name: serving.pod.metadata?.name ?? '', port: serving.port } };
}
