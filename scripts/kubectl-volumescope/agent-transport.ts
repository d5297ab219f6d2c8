/**
 * How `kubectl volumescope` reaches one agent: the single module that opens connections to
 * agents (plain or TLS), so a change of transport is made here only.
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
 * Both speak `http`, or `https` (the agents' `--tls-cert-file`): the TLS session runs end to end
 * through the port-forward's tunnel too, and the agent's certificate is verified against the CA
 * bundle of `--agent-ca-file` for the name of `--agent-tls-server-name` (deploy/'s agents share
 * one certificate for `volumescope-agent.volumescope.svc`, dialled at a pod IP or 127.0.0.1),
 * with the dashboard's CA-verifying transport (lib/dashboard/agent-transport.ts). Verification
 * is never turned off; without a CA file `https` agents are verified against the system's CAs.
 *
 * The API server's pod or service proxy (`…/pods/<pod>:<port>/proxy/`) is NOT offered: the API
 * server removes the caller's `Authorization` header once it has authenticated the request
 * (k8s.io/apiserver pkg/endpoints/filters/authentication.go), so the agent would see no token and
 * answer 401; and it refuses to proxy to loopback pod IPs.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';
import { agentApiErrorFromResponse } from '../../lib/api/index.ts';
import type { ClientNode } from '../../lib/kube-client/client-node.ts';
import { caVerifyingTransport, isAgentCaFileError } from '../../lib/dashboard/agent-transport.ts';

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

/** `--agent-scheme`. */
export type AgentScheme = 'http' | 'https';
export const AGENT_SCHEMES: readonly AgentScheme[] = ['http', 'https'];

/** How an `https` agent's certificate is verified: `--agent-ca-file`, `--agent-tls-server-name`. */
export interface AgentTlsSettings {
  /** The CA bundle (PEM); `null`: the system's CAs. */
  readonly caFile: string | null;
  /** The name the certificate must be valid for; `null`: the host dialled. */
  readonly serverName: string | null;
}

/**
 * The TLS handshake with the agent failed: its certificate is not signed by the CA bundle, not
 * valid for the server name, or it does not speak TLS. The message names the CA file and the
 * server name checked. Exit code 3.
 */
export class AgentTlsError extends Error {
  override readonly name = 'AgentTlsError';
}

/** True for an {@link AgentTlsError}. */
export function isAgentTlsError(err: unknown): err is AgentTlsError {
  return err instanceof AgentTlsError;
}

/** The HTTP client of connections to agents: its scheme and fetch, and what closes its connections. */
export interface AgentHttp {
  readonly scheme: AgentScheme;
  readonly fetch: typeof fetch;
  /** Set for `https`. */
  readonly tls: AgentTlsSettings | null;
  close(): Promise<void>;
}

/**
 * The client for `scheme`: the global fetch for `http` and for `https` without a CA file; with
 * one, the dashboard's CA-verifying fetch (checking `serverName` when given). A CA file that
 * cannot be read or holds no certificate throws an {@link AgentTlsError} naming it.
 */
export async function openAgentHttp(scheme: AgentScheme, tls: AgentTlsSettings): Promise<AgentHttp> {
  const plain = (): AgentHttp => ({ scheme, fetch: (input, init) => fetch(input, init), tls: scheme === 'https' ? tls : null, close: () => Promise.resolve() });
  if (scheme === 'http' || tls.caFile === null) return plain();
  let ca: string;
  try {
    ca = await readFile(tls.caFile, 'utf8');
  } catch (err) {
    throw new AgentTlsError(`cannot read the agent CA file ${tls.caFile} (--agent-ca-file): ${err instanceof Error ? err.message : String(err)}`);
  }
  try {
    const transport = caVerifyingTransport(ca, tls.serverName ?? undefined);
    return { scheme, fetch: transport.fetch, tls, close: () => transport.close() };
  } catch (err) {
    if (isAgentCaFileError(err)) throw new AgentTlsError(`the agent CA file ${tls.caFile} (--agent-ca-file): ${err.message}`);
    throw err;
  }
}

/** OpenSSL's and Node's codes of a failed TLS handshake or certificate check. */
const TLS_FAILURE_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'EPROTO',
]);

/** The TLS failure in `err`'s cause chain (a fetch failure wraps the socket's error): its code and message. */
function tlsFailure(err: unknown): { code: string; message: string } | null {
  let e: unknown = err;
  for (let depth = 0; depth < 4 && e instanceof Error; depth++) {
    const code = 'code' in e && typeof e.code === 'string' ? e.code : '';
    if (TLS_FAILURE_CODES.has(code) || code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_')) return { code, message: e.message };
    e = e.cause;
  }
  return null;
}

/** The message of a failed TLS handshake with the agent at `baseUrl`, naming what was checked. */
function tlsFailureMessage(node: string, baseUrl: string, tls: AgentTlsSettings, failure: { code: string; message: string }): string {
  const ca = tls.caFile === null ? "the system's CAs (no --agent-ca-file)" : `the CA file ${tls.caFile}`;
  const name =
    tls.serverName === null ? `the address dialled, ${new URL(baseUrl).hostname} (no --agent-tls-server-name)` : `the server name ${tls.serverName}`;
  return `TLS to the agent of node ${node} at ${baseUrl} failed: ${failure.message} (${failure.code}); its certificate was checked against ${ca} for ${name}. Check --agent-ca-file and --agent-tls-server-name (deploy/'s agents: the ca.crt of their certificate, volumescope-agent.volumescope.svc)`;
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
function connection(node: string, baseUrl: string, token: string | null, http: AgentHttp, close: () => Promise<void>, transportDetail: () => string | null = () => null): AgentConnection {
  let closed: Promise<void> | null = null;
  return {
    node,
    baseUrl,
    async get(path, init = {}) {
      let res: Response;
      try {
        res = await http.fetch(`${baseUrl}${path}`, {
          headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...init.headers },
          ...(init.signal === undefined ? {} : { signal: init.signal }),
        });
      } catch (err) {
        if (init.signal?.aborted === true) throw err;
        const tls = http.tls === null ? null : tlsFailure(err);
        if (http.tls !== null && tls !== null) throw new AgentTlsError(tlsFailureMessage(node, baseUrl, http.tls, tls));
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
    close() {
      closed ??= close().then(() => http.close());
      return closed;
    },
  };
}

/**
 * A connection to `url` itself (the pod IP, or an agent URL given on the command line), whose
 * scheme must be `http`'s (the caller makes the URL with it). Closing it closes `http`.
 */
export function directConnection(endpoint: Pick<AgentEndpoint, 'node' | 'url'>, token: string | null, http: AgentHttp): AgentConnection {
  return connection(endpoint.node, endpoint.url.replace(/\/+$/, ''), token, http, () => Promise.resolve());
}

/**
 * A connection through a port-forward to the agent's pod: a listener on 127.0.0.1 (an ephemeral
 * port) whose every connection becomes one `pods/portforward` stream of client-node's
 * PortForward, authenticated as the kubeconfig's user. Requests go to
 * `<http.scheme>://127.0.0.1:<port>`; closing the connection closes `http`.
 */
export async function portForwardConnection(k8s: Pick<ClientNode, 'PortForward'>, kubeConfig: KubeConfig, endpoint: AgentEndpoint, token: string | null, http: AgentHttp): Promise<AgentConnection> {
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
  return connection(endpoint.node, `${http.scheme}://127.0.0.1:${port}`, token, http, () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => {
        resolve();
      });
    }), () => lastFailure);
}

