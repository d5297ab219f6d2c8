/**
 * What the logged-in user may do with an agent, as the browser asks it
 * (`GET /api/agents/<name>/permissions`), and its effect on an action button. Importable by
 * the browser.
 */
import { z } from 'zod';
import type { ActionAvailability } from '../action-guards.ts';

export const AgentPermissionsSchema = z.object({
  user: z.string(),
  get: z.boolean(),
  update: z.boolean(),
  /** Why `update` (or `get`) is missing; `null` when both are granted. */
  reason: z.string().nullable(),
});
export type AgentPermissions = z.infer<typeof AgentPermissionsSchema>;

/** The permissions route of an agent. */
export function permissionsUrl(agent: string): string {
  return `/api/agents/${encodeURIComponent(agent)}/permissions`;
}

/** Fetches the permissions; throws for an answer that is not them. */
export async function fetchAgentPermissions(agent: string, fetchFn: typeof fetch, signal?: AbortSignal): Promise<AgentPermissions> {
  const response = await fetchFn(permissionsUrl(agent), { headers: { Accept: 'application/json' }, cache: 'no-store', ...(signal === undefined ? {} : { signal }) });
  if (!response.ok) throw new Error(`permissions of ${agent}: HTTP ${response.status}`);
  return AgentPermissionsSchema.parse(await response.json());
}

/**
 * An action's availability for a user: refused with the permission's reason when the user may
 * not `update` the agent (every action is an `update`), else the action's own availability.
 * Unknown permissions (not asked yet, or the question failed) change nothing: the agent decides.
 */
export function withPermission(availability: ActionAvailability, permissions: AgentPermissions | null | undefined): ActionAvailability {
  if (permissions === null || permissions === undefined || permissions.update) return availability;
  return { allowed: false, reason: permissions.reason ?? `${permissions.user} may not change this node` };
}
