/**
 * The node agent's HTTP server (docs/api.md): `createAgentServer` over an `AgentRuntime`, the
 * authenticators (static token; TokenReview/SubjectAccessReview webhook), and the agent's
 * Prometheus metrics.
 */
export { createAgentServer, type AgentServer, type AgentServerOptions, type ListenAddress } from './agent-server.ts';
export {
  authFailureAnswer,
  bearerToken,
  InvalidTokenError,
  isInvalidTokenError,
  staticTokenAuthenticator,
  type AuthFailure,
  type AuthFailureReason,
  type AuthResult,
  type AuthSuccess,
  type Authenticator,
  type StaticTokenOptions,
} from './authenticator.ts';
export {
  AGENT_API_RESOURCE,
  AuthConfigError,
  createAgentAuthenticator,
  DEFAULT_AUTHENTICATION_CACHE_TTL_MS,
  DEFAULT_AUTHORIZED_TTL_MS,
  DEFAULT_REVIEW_TIMEOUT_MS,
  DEFAULT_UNAUTHORIZED_TTL_MS,
  DEFAULT_WEBHOOK_CACHE_SIZE,
  isAuthConfigError,
  isWebhookReviewError,
  verbForMethod,
  WebhookAuthenticator,
  WebhookReviewError,
  type AgentApiVerb,
  type AgentAuthenticator,
  type AgentAuthenticatorOptions,
  type AuthorizationMode,
  type ReviewedUser,
  type WebhookAuthOptions,
} from './webhook-auth.ts';
export { createAgentMetrics, type AgentMetrics } from './metrics.ts';
