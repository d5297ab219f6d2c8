/**
 * Errors the dashboard's own server answers with when it cannot get an answer from an agent
 * (as opposed to the agent's answers, which are passed through in the agent's error shape and
 * become an `AgentApiError` from `lib/api`). Shared by the route handlers and the browser.
 */
import { z } from 'zod';
import { agentApiErrorFromResponse, type AgentApiError } from '../api/index.ts';

/**
 * Why the dashboard could not reach an agent:
 * - `unknown-agent`: no agent of that name is configured (404);
 * - `agent-unreachable`: connecting failed or timed out (502);
 * - `agent-unauthorized`: the agent rejected the dashboard's token (502; a configuration error);
 * - `agent-bad-response`: the agent answered something that is not its API (502);
 * - `agent-misconfigured`: the agent's token file is missing or empty (502);
 * - `forbidden`: a cross-site request to an action endpoint (403);
 * - `not-logged-in`: the request has no valid session (401; the page sends the operator to log in).
 */
export const DashboardErrorCodeSchema = z.enum([
  'unknown-agent',
  'agent-unreachable',
  'agent-unauthorized',
  'agent-bad-response',
  'agent-misconfigured',
  'forbidden',
  'not-logged-in',
]);
/** Why the dashboard could not reach an agent; see {@link DashboardErrorCodeSchema}. */
export type DashboardErrorCode = z.infer<typeof DashboardErrorCodeSchema>;

/** The HTTP status the dashboard answers each code with. */
const DASHBOARD_ERROR_STATUS: Record<DashboardErrorCode, number> = {
  'unknown-agent': 404,
  'agent-unreachable': 502,
  'agent-unauthorized': 502,
  'agent-bad-response': 502,
  'agent-misconfigured': 502,
  forbidden: 403,
  'not-logged-in': 401,
};

/** The body of a dashboard error response. */
export const DashboardErrorBodySchema = z.object({
  dashboardError: z.object({
    code: DashboardErrorCodeSchema,
    /** The agent the request was for. */
    agent: z.string(),
    /** What went wrong, for people (e.g. `connect ECONNREFUSED 127.0.0.1:7070`). Never a token. */
    message: z.string(),
    /** When this dashboard server last got bytes from the agent (its clock); `null` if never. */
    lastSeenAt: z.number().nullable(),
  }),
});
/** The body of a dashboard error response. */
export type DashboardErrorBody = z.infer<typeof DashboardErrorBodySchema>;

/** The dashboard could not get an answer from an agent (or does not know it). */
export class AgentUnavailableError extends Error {
  override readonly name = 'AgentUnavailableError';

  constructor(
    readonly code: DashboardErrorCode,
    /** The agent's configured name. */
    readonly agent: string,
    message: string,
    /** When the dashboard server last heard from the agent; `null` if never (or unknown). */
    readonly lastSeenAt: number | null = null,
  ) {
    super(message);
  }

  /** The HTTP status to answer with. */
  get status(): number {
    return DASHBOARD_ERROR_STATUS[this.code];
  }

  /** The JSON body to answer with. */
  toBody(): DashboardErrorBody {
    return { dashboardError: { code: this.code, agent: this.agent, message: this.message, lastSeenAt: this.lastSeenAt } };
  }
}

/** True for an {@link AgentUnavailableError}. */
export function isAgentUnavailableError(err: unknown): err is AgentUnavailableError {
  return err instanceof AgentUnavailableError;
}

/**
 * The error for a non-2xx answer of a dashboard route: an {@link AgentUnavailableError} when the
 * body is the dashboard's own error shape, otherwise the agent's error as an `AgentApiError`.
 */
export function errorFromDashboardResponse(status: number, body: unknown): AgentUnavailableError | AgentApiError {
  const own = DashboardErrorBodySchema.safeParse(body);
  if (own.success) {
    const e = own.data.dashboardError;
    return new AgentUnavailableError(e.code, e.agent, e.message, e.lastSeenAt);
  }
  return agentApiErrorFromResponse(status, body);
}
