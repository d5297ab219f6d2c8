/**
 * Where the Headlamp plugin (components/headlamp/plugin) gets an agent's snapshot: straight from
 * the VolumeScope dashboard's read-only route `GET <dashboard>/api/agents/<node>/snapshot`
 * (app/api/agents/[agent]/snapshot, lib/dashboard/agent-proxy.ts), with
 * `fetch(…, { credentials: 'include' })`, so the browser sends the user's own VolumeScope session
 * cookie and the dashboard reads the agent with that user's token, as for its own pages.
 *
 * Why not through the Kubernetes API server's service proxy with Headlamp's credentials: the API
 * server removes the `Authorization` header after authenticating a request
 * (kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/endpoints/filters/authentication.go@v1.34),
 * so the dashboard behind it never sees who the user is, and Headlamp keeps its tokens in httpOnly
 * cookies a plugin cannot read to forward.
 *
 * What that needs (README "Headlamp"): the dashboard's URL as the plugin setting, Headlamp's
 * origin in the dashboard's `VOLUMESCOPE_CORS_ORIGINS` (lib/dashboard/auth/cross-origin-reads.ts),
 * and both on the same site, because the session cookie is `SameSite=Strict`.
 *
 * Live: the sections poll every {@link HEADLAMP_POLL_MS} (the overview's own interval). Browser
 * code: no Node built-ins.
 */
import { useEffect, useState } from 'react';
import { normalizeSnapshot, parseSnapshot, type Snapshot } from '../../lib/api/index.ts';
import { errorFromDashboardResponse } from '../../lib/dashboard/dashboard-error.ts';
import { publicLink } from '../../lib/dashboard/public-url.ts';
import { agentSnapshotApiHref } from '../../lib/dashboard/routes.ts';

/** How often the sections read the snapshot again: the dashboard overview's interval (SUMMARY_POLL_INTERVAL_MS). */
export const HEADLAMP_POLL_MS = 3_000;

/** The `fetch` the sections use (the browser's; injected in tests). */
export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

/** The dashboard answered 401: the user has no VolumeScope session in this browser (or the cookie was not sent). */
export class DashboardLoginNeededError extends Error {
  override readonly name = 'DashboardLoginNeededError';
  constructor(readonly dashboardUrl: string) {
    super(`log in to VolumeScope at ${dashboardUrl} in this browser (its session cookie is sent only when Headlamp and the dashboard are on the same site)`);
  }
}

/** True for a {@link DashboardLoginNeededError}. */
export function isDashboardLoginNeededError(err: unknown): err is DashboardLoginNeededError {
  return err instanceof DashboardLoginNeededError;
}

/** What a section shows: no dashboard URL set, loading, the snapshot, or why there is none. */
export type SnapshotState =
  | { readonly kind: 'unconfigured' }
  | { readonly kind: 'loading' }
  | { readonly kind: 'ready'; readonly snapshot: Snapshot; readonly at: number }
  | { readonly kind: 'error'; readonly message: string; readonly loginNeeded: boolean };

/** The URL the plugin reads `node`'s snapshot from. */
export function snapshotUrl(dashboardUrl: string, node: string): string {
  return publicLink(dashboardUrl, agentSnapshotApiHref(node));
}

/**
 * Reads the agent snapshot of `node` once from the dashboard at `dashboardUrl`, with the user's
 * session cookie, validated against the contract. Throws {@link DashboardLoginNeededError} on
 * 401, the dashboard's or agent's error (its message verbatim) on other failures.
 */
export async function readAgentSnapshot(fetchFn: FetchLike, dashboardUrl: string, node: string): Promise<Snapshot> {
  const res = await fetchFn(snapshotUrl(dashboardUrl, node), { credentials: 'include', headers: { Accept: 'application/json' }, cache: 'no-store' });
  if (res.status === 401) throw new DashboardLoginNeededError(dashboardUrl);
  const body: unknown = await res.json();
  if (!res.ok) throw errorFromDashboardResponse(res.status, body);
  return normalizeSnapshot(parseSnapshot(body));
}

/**
 * The snapshot of `node`, read now and every {@link HEADLAMP_POLL_MS}; the last one is kept across
 * a failed read. `dashboardUrl` null: nothing is read (`unconfigured`).
 */
export function useAgentSnapshot(fetchFn: FetchLike, dashboardUrl: string | null, node: string | null, pollMs: number = HEADLAMP_POLL_MS): SnapshotState {
  const [state, setState] = useState<SnapshotState>({ kind: 'loading' });
  useEffect(() => {
    if (node === null || dashboardUrl === null) return undefined;
    let stopped = false;
    const read = (): void => {
      readAgentSnapshot(fetchFn, dashboardUrl, node).then(
        (snapshot) => {
          if (!stopped) setState({ kind: 'ready', snapshot, at: Date.now() });
        },
        (err: unknown) => {
          if (stopped) return;
          const message = err instanceof Error ? err.message : String(err);
          const loginNeeded = isDashboardLoginNeededError(err);
          // A lost session is shown at once (the data would go stale silently otherwise); a passing failure keeps the last state.
          setState((prev) => (prev.kind === 'ready' && !loginNeeded ? prev : { kind: 'error', message, loginNeeded }));
        },
      );
    };
    read();
    const timer = setInterval(read, pollMs);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [fetchFn, dashboardUrl, node, pollMs]);
  return dashboardUrl === null ? { kind: 'unconfigured' } : state;
}
