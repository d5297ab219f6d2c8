/**
 * How `kubectl volumescope` reaches one agent: the single module that opens connections, so a
 * later change of transport (TLS to the agents, a CA bundle flag) is made here only.
 *
 * Two ways, both carrying the USER's bearer token to the agent, which authenticates it with a
 * TokenReview and authorizes it with a SubjectAccessReview (`get` on `nodes/volumemanager` of its
 * node; agent/server/webhook-auth.ts), so the user's RBAC decides what the plugin may read:
 *
 * - `port-forward` (default): a local listener on 127.0.0.1 whose connections are tunnelled to the
 *   agent pod's API port through the API server (`pods/portforward`, as `kubectl port-forward`);
 *   needs the Role volumescope-port-forward of deploy/base/user-rbac.yaml and a node whose kubelet
 *   can port-forward (a container runtime).
 * - `direct`: the agent pod's IP, as the dashboard's discovery reaches it; for a machine on the pod
 *   network (inside the cluster, flat networks).
 *
 * The API server's pod or service proxy (`…/pods/<pod>:<port>/proxy/`) is NOT offered: the API
 * server removes the caller's `Authorization` header once it has authenticated the request
 * (k8s.io/apiserver pkg/endpoints/filters/authentication.go), so the agent would see no token and
 * answer 401; and it refuses to proxy to loopback pod IPs.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';
import { agentApiErrorFromResponse } from '../../lib/api/index.ts';
import type { ClientNode } from '../../lib/kube-client/client-node.ts';

/** `--transport`. */
export type TransportKind = 'port-forward' | 'direct';
export const TRANSPORT_KINDS: readonly TransportKind[] = ['port-forward', 'direct'];

/** An agent as found: its node, its URL on the pod network and, when found through the API, its pod. */
export interface AgentEndpoint {
  readonly node: string;
  readonly url: string;
  readonly pod: { readonly namespace: string; readonly name: string; readonly port: number } | null;
}

/** A request to the agent that got no HTTP answer (refused, reset, DNS, timeout). */
export class AgentUnreachableError extends Error {
  override readonly name = 'AgentUnreachableError';
}

/** True for an {@link AgentUnreachableError}. */
export function isAgentUnreachableError(err: unknown): err is AgentUnreachableError {
  return err instanceof AgentUnreachableError;
}

/** Requests to one agent with one bearer token. */
export interface AgentConnection {
  readonly node: string;
  /** Where requests go (the local port-forward listener, or the agent's URL). */
  readonly baseUrl: string;
  /** GET `path` with the token; a non-2xx answer throws the API's {@link isAgentApiError} error. */
  get(path: string, init?: { signal?: AbortSignal; headers?: Record<string, string> }): Promise<Response>;
  /** Closes the local listener and its tunnels (port-forward). Idempotent. */
  close(): Promise<void>;
}

/** A reason text of a fetch failure: `fetch failed: connect ECONNREFUSED …`. */
function fetchFailure(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
  return `${err.message}${cause}`;
}

/** The text of a port-forward failure, which client-node rejects with an Error, an event or a status object. */
function forwardFailure(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'object' && err !== null) {
    const o = err as { message?: unknown; reason?: unknown; status?: unknown };
    for (const v of [o.message, o.reason, o.status]) if (typeof v === 'string' && v !== '') return v;
    try {
      return JSON.stringify(err);
    } catch {
      return 'unknown error';
    }
  }
  return String(err);
}

/**
 * `transportDetail` names what went wrong below HTTP (a port-forward's failure) for the
 * unreachable error.
 */
function connection(node: string, baseUrl: string, token: string | null, close: () => Promise<void>, transportDetail: () => string | null = () => null): AgentConnection {
  return {
    node,
    baseUrl,
    async get(path, init = {}) {
      let res: Response;
      try {
        res = await fetch(`${baseUrl}${path}`, {
          headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...init.headers },
          ...(init.signal === undefined ? {} : { signal: init.signal }),
        });
      } catch (err) {
        if (init.signal?.aborted === true) throw err;
        const detail = transportDetail();
        throw new AgentUnreachableError(`cannot reach the agent of node ${node} at ${baseUrl}: ${fetchFailure(err)}${detail === null ? '' : ` (${detail})`}`);
      }
      if (res.ok) return res;
      const text = await res.text();
      let body: unknown = null;
      try {
        body = JSON.parse(text);
      } catch {
        // Not the API's JSON: the status alone is reported.
      }
      throw agentApiErrorFromResponse(res.status, body);
    },
    close,
  };
}

/** A connection to `url` itself (the pod IP, or an agent URL given on the command line). */
export function directConnection(endpoint: Pick<AgentEndpoint, 'node' | 'url'>, token: string | null): AgentConnection {
  return connection(endpoint.node, endpoint.url.replace(/\/+$/, ''), token, () => Promise.resolve());
}

/**
 * A connection through a port-forward to the agent's pod: a listener on 127.0.0.1 (an ephemeral
 * port) whose every connection becomes one `pods/portforward` stream of client-node's
 * PortForward, authenticated as the kubeconfig's user.
 */
export async function portForwardConnection(k8s: Pick<ClientNode, 'PortForward'>, kubeConfig: KubeConfig, endpoint: AgentEndpoint, token: string | null): Promise<AgentConnection> {
  const pod = endpoint.pod;
  if (pod === null) throw new Error(`the agent of node ${endpoint.node} has no pod to port-forward to; use --transport=direct`);
  const forward = new k8s.PortForward(kubeConfig);
  const sockets = new Set<Socket>();
  let lastFailure: string | null = null;
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    // A reset by the tunnel is reported through the request that used the socket.
    socket.on('error', () => undefined);
    forward.portForward(pod.namespace, pod.name, [pod.port], socket, null, socket).catch((err: unknown) => {
      lastFailure = `port-forward to pod ${pod.namespace}/${pod.name} port ${pod.port} through the API server failed: ${forwardFailure(err)}`;
      socket.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  let closed: Promise<void> | null = null;
  return connection(endpoint.node, `http://127.0.0.1:${port}`, token, () => {
    closed ??= new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => {
        resolve();
      });
    });
    return closed;
  }, () => lastFailure);
}

