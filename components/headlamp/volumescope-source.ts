/**
 * Where the Headlamp plugin (components/headlamp/plugin) gets an agent's snapshot: from the VolumeScope
 * dashboard's own routes (`GET /api/agents/<node>/snapshot`, lib/dashboard/agent-proxy.ts), reached
 * through the API server's service proxy to the dashboard Service of deploy/base
 * (`/api/v1/namespaces/volumescope/services/volumescope-dashboard:http/proxy/…`). Headlamp sends
 * that request to the API server with the signed-in user's credentials, so the API server's RBAC
 * (`get` on `services/proxy` in namespace volumescope) decides who sees it, and Headlamp needs no
 * second origin or CORS. Browser code: no Node built-ins.
 *
 * Live: the section polls every {@link HEADLAMP_POLL_MS} (the overview's own interval); an SSE
 * stream through Headlamp's request helper is not available to plugins.
 */
import { useEffect, useState } from 'react';
import { normalizeSnapshot, SnapshotSchema, type Snapshot } from '../../lib/api/index.ts';
import { agentSnapshotApiHref } from '../../lib/dashboard/routes.ts';

/** How often the sections read the snapshot again: the dashboard overview's interval (SUMMARY_POLL_INTERVAL_MS). */
export const HEADLAMP_POLL_MS = 3_000;

/** The dashboard Service of deploy/base through the API server's service proxy. */
export const DASHBOARD_SERVICE_PROXY = '/api/v1/namespaces/volumescope/services/volumescope-dashboard:http/proxy';

/** Headlamp's `ApiProxy.request(path)`: a GET through the API server as the signed-in user, the parsed JSON. */
export type HeadlampRequest = (path: string) => Promise<unknown>;

/** What a section shows: loading, the snapshot, or why there is none. */
export type SnapshotState = { readonly kind: 'loading' } | { readonly kind: 'ready'; readonly snapshot: Snapshot; readonly at: number } | { readonly kind: 'error'; readonly message: string };

/** Reads the agent snapshot of `node` once, validated against the contract. */
export async function readAgentSnapshot(request: HeadlampRequest, node: string): Promise<Snapshot> {
  const body = await request(`${DASHBOARD_SERVICE_PROXY}${agentSnapshotApiHref(node)}`);
  return normalizeSnapshot(SnapshotSchema.parse(body));
}

/** The snapshot of `node`, read now and every {@link HEADLAMP_POLL_MS}; the last one is kept across a failed read. */
export function useAgentSnapshot(request: HeadlampRequest, node: string | null, pollMs: number = HEADLAMP_POLL_MS): SnapshotState {
  const [state, setState] = useState<SnapshotState>({ kind: 'loading' });
  useEffect(() => {
    if (node === null) return undefined;
    let stopped = false;
    const read = (): void => {
      readAgentSnapshot(request, node).then(
        (snapshot) => {
          if (!stopped) setState({ kind: 'ready', snapshot, at: Date.now() });
        },
        (err: unknown) => {
          if (stopped) return;
          const message = err instanceof Error ? err.message : String(err);
          setState((prev) => (prev.kind === 'ready' ? prev : { kind: 'error', message }));
        },
      );
    };
    read();
    const timer = setInterval(read, pollMs);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [request, node, pollMs]);
  return state;
}
