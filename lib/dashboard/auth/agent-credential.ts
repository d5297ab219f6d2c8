/**
 * Which bearer token goes to an agent for a session: the user's own (token and OIDC sessions:
 * the agent reviews it, so Kubernetes RBAC decides what the user may do), or, for the local
 * session of the standalone demo, the agent's configured token file. Server-only.
 */
import { createHash } from 'node:crypto';
import type { AgentConfig } from '../agents-config.ts';
import { AgentUnavailableError } from '../dashboard-error.ts';
import type { Session } from './session.ts';

/** The token for `agent`; throws `not-logged-in` without a session. */
export async function agentTokenFor(session: Session | null, agent: AgentConfig, readAgentToken: (agent: AgentConfig) => Promise<string>): Promise<string> {
  if (session === null) throw new AgentUnavailableError('not-logged-in', agent.name, 'log in first: this request has no valid session');
  if (session.kind === 'local') return readAgentToken(agent);
  if (session.token === undefined) throw new AgentUnavailableError('not-logged-in', agent.name, 'the session holds no token; log in again');
  return session.token;
}

/**
 * A key naming whose credentials a session uses, for state shared between requests of the same
 * credentials only (never the token itself): `local`, or a SHA-256 of the token.
 */
export function credentialKey(session: Session | null): string {
  if (session === null) return 'none';
  if (session.kind === 'local' || session.token === undefined) return 'local';
  return `token:${createHash('sha256').update(session.token).digest('base64url')}`;
}
