/**
 * Proxy deps for tests against real agents: the real network (`fetch`), the agents' token files,
 * a fresh contact registry and no shutdown hooks. Timeouts default to 2 s each.
 */
import { realClock } from '../../clock/clock.ts';
import { AgentContactRegistry, type AgentProxyDeps } from '../agent-proxy.ts';
import { readAgentToken, type AgentsConfig } from '../agents-config.ts';

export interface RealProxyDepsOptions {
  /** The clock the relays read; default the real clock. */
  readonly now?: () => number;
  readonly connectTimeoutMs?: number;
  readonly actionTimeoutMs?: number;
}

export function realProxyDeps(config: () => AgentsConfig, options: RealProxyDepsOptions = {}): AgentProxyDeps {
  return {
    config,
    fetch: (input, init) => fetch(input, init),
    readToken: (agent) => readAgentToken(agent),
    now: options.now ?? (() => realClock.now()),
    registry: new AgentContactRegistry(),
    onShutdown: () => () => undefined,
    connectTimeoutMs: options.connectTimeoutMs ?? 2_000,
    actionTimeoutMs: options.actionTimeoutMs ?? 2_000,
  };
}
