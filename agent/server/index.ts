/**
 * The node agent's HTTP server (docs/api.md): `createAgentServer` over an `AgentRuntime`, the
 * static-token authenticator, and the agent's Prometheus metrics.
 */
export { createAgentServer, type AgentServer, type AgentServerOptions, type ListenAddress } from './agent-server.ts';
export {
  bearerToken,
  InvalidTokenError,
  isInvalidTokenError,
  staticTokenAuthenticator,
  type AuthResult,
  type Authenticator,
  type StaticTokenOptions,
} from './authenticator.ts';
export { createAgentMetrics, type AgentMetrics } from './metrics.ts';
export type { UnmountStillRunningBody } from './unmount-volume.ts';
