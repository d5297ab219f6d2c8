/**
 * The one error shape of the agent's HTTP API, `{error: {code, message, field?, checks?}}`,
 * used for every 4xx and 5xx answer, and the error class a client turns it into.
 */
import { z } from 'zod';
import { CheckSchema, type Check } from './snapshot.ts';

/** The error codes and the HTTP status each is sent with. */
export const API_ERROR_STATUS = {
  /** Malformed JSON or a schema violation; `field` names the offending field. */
  'bad-request': 400,
  /** Missing or wrong `Authorization: Bearer <token>`. */
  unauthorized: 401,
  /** Authenticated, but a SubjectAccessReview denied the verb on `nodes/volumemanager`. */
  forbidden: 403,
  /** Unknown route, or nothing matches (e.g. no such operation). */
  'not-found': 404,
  /** The route exists but not for this method. */
  'method-not-allowed': 405,
  /** The action was refused by a check or conflicts with running work; see `checks`. */
  conflict: 409,
  /** The request body is larger than 64 KiB. */
  'payload-too-large': 413,
  /** Too many retries of one operation in a short time; `Retry-After` says when to try again. */
  'rate-limited': 429,
  /** A bug or an unexpected failure in the agent, never caused by the request's content. */
  internal: 500,
  /** The agent is not ready (states not synced yet). */
  'not-ready': 503,
} as const;

/** An error code of the API. */
export const ApiErrorCodeSchema = z.enum(
  Object.keys(API_ERROR_STATUS) as [keyof typeof API_ERROR_STATUS, ...(keyof typeof API_ERROR_STATUS)[]],
);
/** An error code of the API (see {@link API_ERROR_STATUS} for the status of each). */
export type ApiErrorCode = z.infer<typeof ApiErrorCodeSchema>;

/** The body of every error response. */
export const ApiErrorBodySchema = z.object({
  error: z.object({
    code: ApiErrorCodeSchema,
    /** What went wrong, for people; for 400 it starts with the field path (`volume: Required`). */
    message: z.string(),
    /** The offending field's path for 400 (`podUid`, `body` for the body as a whole); absent otherwise. */
    field: z.string().optional(),
    /** The checks evaluated before a refused action (409 from unmount); absent otherwise. */
    checks: z.array(CheckSchema).optional(),
  }),
});
/** The body of every error response. */
export type ApiErrorBody = z.infer<typeof ApiErrorBodySchema>;

/** Builds an error body; `field` and `checks` are left out when not given. */
export function apiErrorBody(
  code: ApiErrorCode,
  message: string,
  extras: { field?: string; checks?: Check[] } = {},
): ApiErrorBody {
  return {
    error: {
      code,
      message,
      ...(extras.field !== undefined ? { field: extras.field } : {}),
      ...(extras.checks !== undefined ? { checks: extras.checks } : {}),
    },
  };
}

/** A non-2xx answer of the agent's API, as a client sees it. */
export class AgentApiError extends Error {
  override readonly name = 'AgentApiError';

  constructor(
    /** The HTTP status. */
    readonly status: number,
    /** The error code; `null` when the body was not the API's error shape (e.g. a proxy's page). */
    readonly code: ApiErrorCode | null,
    message: string,
    /** The offending field (400 only); `null` otherwise. */
    readonly field: string | null = null,
    /** The checks of a refused action (409 only); empty otherwise. */
    readonly checks: Check[] = [],
  ) {
    super(message);
  }
}

/** True for an {@link AgentApiError}. */
export function isAgentApiError(err: unknown): err is AgentApiError {
  return err instanceof AgentApiError;
}

/** The {@link AgentApiError} for an error response's status and (parsed JSON) body. */
export function agentApiErrorFromResponse(status: number, body: unknown): AgentApiError {
  const parsed = ApiErrorBodySchema.safeParse(body);
  if (!parsed.success) return new AgentApiError(status, null, `HTTP ${status}`);
  const { code, message, field, checks } = parsed.data.error;
  return new AgentApiError(status, code, message, field ?? null, checks ?? []);
}
