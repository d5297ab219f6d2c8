/**
 * The production wiring of the agent proxy: `process.env` configuration, token files, the
 * global fetch, the process clock, and the shutdown hook. Server-only.
 */
import { realClock } from '../clock/clock.ts';
import { getAgentsConfig, readAgentToken } from './agents-config.ts';
import { onServerShutdown, serverContactRegistry, type AgentProxyDeps } from './agent-proxy.ts';

/** How long to wait for an agent's response headers before calling it unreachable. */
export const AGENT_CONNECT_TIMEOUT_MS = 5_000;
/** How long an action may take; above the kubelet's 2 min 3 s pod attach/mount timeout. */
export const AGENT_ACTION_TIMEOUT_MS = 130_000;

/** The dependencies route handlers and server pages use. */
export function serverProxyDeps(): AgentProxyDeps {
  return {
    config: getAgentsConfig,
    fetch: (input, init) => fetch(input, init),
    readToken: (agent) => readAgentToken(agent),
    now: () => realClock.now(),
    registry: serverContactRegistry(),
    onShutdown: onServerShutdown,
    connectTimeoutMs: AGENT_CONNECT_TIMEOUT_MS,
    actionTimeoutMs: AGENT_ACTION_TIMEOUT_MS,
  };
}
