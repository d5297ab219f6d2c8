/**
 * The operator actions as the browser calls them (through the dashboard's route handlers, which
 * add the token), and the mutation options the action dialogs use. Every answer is parsed with
 * the contract's schemas; a refusal (409 with the agent's reason and checks) becomes an
 * `AgentApiError`, an unreachable agent an `AgentUnavailableError`.
 */
import { mutationOptions } from '@tanstack/react-query';
import { z } from 'zod';
import {
  OrphanCleanupResponseSchema,
  ResyncResponseSchema,
  RetryOperationResponseSchema,
  UnmountResponseSchema,
  UnmountRunningResponseSchema,
  type ActionNote,
  type OrphanCleanupRequest,
  type OrphanCleanupResponse,
  type ResyncResponse,
  type RetryOperationRequest,
  type RetryOperationResponse,
  type UnmountRequest,
  type UnmountResponse,
  type UnmountRunningResponse,
} from '../api/index.ts';
import { REQUEST_HEADER, REQUEST_HEADER_VALUE } from './auth/request-guard.ts';
import { AgentUnavailableError, errorFromDashboardResponse } from './dashboard-error.ts';
import { agentKeys } from './queries.ts';

/** The result of an action, by kind. */
export type ActionResult =
  | { kind: 'resync'; response: ResyncResponse }
  | { kind: 'retry'; response: RetryOperationResponse }
  | { kind: 'unmount'; response: UnmountResponse | UnmountRunningResponse };

async function post(url: string, body: unknown, fetchFn: typeof fetch): Promise<unknown> {
  let response: Response;
  try {
    response = await fetchFn(url, {
      method: 'POST',
      // The custom header is part of the dashboard's CSRF check (auth/request-guard.ts).
      headers: {
        Accept: 'application/json',
        [REQUEST_HEADER]: REQUEST_HEADER_VALUE,
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      cache: 'no-store',
    });
  } catch (err) {
    throw new AgentUnavailableError('agent-unreachable', '', `the dashboard server did not answer: ${err instanceof Error ? err.message : String(err)}`);
  }
  const json: unknown = await response.json().catch(() => null);
  if (!response.ok) throw errorFromDashboardResponse(response.status, json);
  return json;
}

function actionUrl(agent: string, path: string): string {
  return `/api/agents/${encodeURIComponent(agent)}/${path}`;
}

/** `POST …/resync`: a verification pass now; the operator's note, when given, goes in the body for the audit. */
export async function postResync(agent: string, fetchFn: typeof fetch = fetch, note: ActionNote = {}): Promise<ResyncResponse> {
  const body = note.incidentId === undefined && note.reason === undefined ? undefined : note;
  return ResyncResponseSchema.parse(await post(actionUrl(agent, 'resync'), body, fetchFn));
}

/** `POST …/operations/retry`: clear an operation's backoff. */
export async function postRetry(agent: string, body: RetryOperationRequest, fetchFn: typeof fetch = fetch): Promise<RetryOperationResponse> {
  return RetryOperationResponseSchema.parse(await post(actionUrl(agent, 'operations/retry'), body, fetchFn));
}

/**
 * `POST …/unmount`: unmount one pod's volume after the agent's safety checks. Resolves with the
 * outcome, or with the "still running" answer (202) of a TearDown that had not ended yet.
 */
export async function postUnmount(agent: string, body: UnmountRequest, fetchFn: typeof fetch = fetch): Promise<UnmountResponse | UnmountRunningResponse> {
  return z.union([UnmountResponseSchema, UnmountRunningResponseSchema]).parse(await post(actionUrl(agent, 'unmount'), body, fetchFn));
}

/**
 * `POST …/orphans/cleanup` (observe mode): the guarded cleanup of one orphaned pod directory, or
 * with `dryRun` only its plan. A refusal (409 with every check, also when the agent runs without
 * `--allow-orphan-cleanup`) and the 404 of an agent not in observe mode become an `AgentApiError`.
 */
export async function orphanCleanup(agent: string, body: OrphanCleanupRequest, fetchFn: typeof fetch = fetch): Promise<OrphanCleanupResponse> {
  return OrphanCleanupResponseSchema.parse(await post(actionUrl(agent, 'orphans/cleanup'), body, fetchFn));
}

/**
 * Mutation options for the orphan cleanup on `agent` (dry run and real run). Never retried: a
 * cleanup must run at most once per click. The next observe refresh brings the new orphan list
 * through the live stream; the audit entry arrives the same way.
 */
export function orphanCleanupMutationOptions(agent: string) {
  return mutationOptions<OrphanCleanupResponse, Error, OrphanCleanupRequest>({
    mutationKey: [...agentKeys.agent(agent), 'orphan-cleanup'],
    retry: false,
    mutationFn: (request) => orphanCleanup(agent, request),
  });
}

/** What an action dialog asks the agent to do. */
export type ActionRequest =
  | { kind: 'resync'; note?: ActionNote }
  | { kind: 'retry'; body: RetryOperationRequest }
  | { kind: 'unmount'; body: UnmountRequest };

/** The request with the operator's note (incident ID, reason) added: into the body, or as resync's note. */
export function withActionNote(request: ActionRequest, note: ActionNote): ActionRequest {
  switch (request.kind) {
    case 'resync':
      return { kind: 'resync', note };
    case 'retry':
      return { kind: 'retry', body: { ...request.body, ...note } };
    case 'unmount':
      return { kind: 'unmount', body: { ...request.body, ...note } };
  }
}

/** The orphan cleanup request with the operator's note added. */
export function withCleanupNote(request: OrphanCleanupRequest, note: ActionNote): OrphanCleanupRequest {
  return { ...request, ...note };
}

/**
 * Mutation options for actions on `agent`. Never retried (an action must run at most once per
 * click). The live stream brings the resulting state and audit entry; no refetch is needed.
 */
export function agentActionMutationOptions(agent: string) {
  return mutationOptions<ActionResult, Error, ActionRequest>({
    mutationKey: [...agentKeys.agent(agent), 'action'],
    retry: false,
    mutationFn: async (request) => {
      switch (request.kind) {
        case 'resync':
          return { kind: 'resync', response: await postResync(agent, fetch, request.note) };
        case 'retry':
          return { kind: 'retry', response: await postRetry(agent, request.body) };
        case 'unmount':
          return { kind: 'unmount', response: await postUnmount(agent, request.body) };
      }
    },
  });
}
