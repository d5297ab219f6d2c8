/**
 * The production wiring of the agent proxy: `process.env` configuration, the token of the
 * request's session (the user's own; the token files for the demo's local session; see
 * auth/agent-credential.ts), the global fetch, the process clock, and the shutdown hook.
 * Server-only; call it inside a request (the session is read from its cookies).
 */
import { realClock } from '../clock/clock.ts';
import { getAgentsConfig, readAgentToken } from './agents-config.ts';
import { agentTokenFor } from './auth/agent-credential.ts';
import { currentSession } from './auth/server-session.ts';
import type { Session } from './auth/session.ts';
import { onServerShutdown, serverContactRegistry, type AgentProxyDeps } from './agent-proxy.ts';
import { FIRST_LIST_WAIT_MS, startedServerDiscovery } from './discovery.ts';
import { agentTransportFromEnv, type AgentTransport } from './agent-transport.ts';

/** The process's transport to agents (one connection pool), made on first use. */
function serverTransport(): AgentTransport {
  const g = globalThis as { __volumescopeAgentTransport?: AgentTransport };
  g.__volumescopeAgentTransport ??= agentTransportFromEnv(process.env);
  return g.__volumescopeAgentTransport;
}

/** How long to wait for an agent's response headers before calling it unreachable. */
const AGENT_CONNECT_TIMEOUT_MS = 5_000;
/** How long an action may take; above the kubelet's 2 min 3 s pod attach/mount timeout. */
const AGENT_ACTION_TIMEOUT_MS = 130_000;

/** The dependencies route handlers (with their request) and server pages (without) use. */
export function serverProxyDeps(req?: Request): AgentProxyDeps {
  let session: Promise<Session | null> | null = null; // read once, when a token is first needed
  return {
    config: getAgentsConfig,
    // VOLUMESCOPE_AGENT_CA_FILE: agents' TLS certificates are verified with that CA bundle (agent-transport.ts).
    fetch: (input, init) => serverTransport().fetch(input, init),
    readToken: async (agent) => agentTokenFor(await (session ??= currentSession(req)), agent, (a) => readAgentToken(a)),
    // The per-user cap on relayed event streams counts the session's user.
    requestUser: async () => (await (session ??= currentSession(req)))?.username ?? null,
    now: () => realClock.now(),
    registry: serverContactRegistry(),
    onShutdown: onServerShutdown,
    connectTimeoutMs: AGENT_CONNECT_TIMEOUT_MS,
    actionTimeoutMs: AGENT_ACTION_TIMEOUT_MS,
  };
}

/**
 * Resolves once the agent list is usable: at once for a static configuration; with discovery,
 * once the agent pods were first listed or discovery failed, at most {@link FIRST_LIST_WAIT_MS}
 * after the process's first request (so a request right after the dashboard started does not
 * call a node unknown). Never rejects; a malformed configuration is left to `config()`.
 */
export async function serverAgentsReady(): Promise<void> {
  let source: string;
  try {
    source = getAgentsConfig().source; // starts the discovery when it is configured
  } catch {
    return;
  }
  if (source === 'kubernetes') await startedServerDiscovery()?.whenSettled(FIRST_LIST_WAIT_MS);
}
