/**
 * The cross-node pod search, browser-safe part: the answer's shape, the pure matching
 * ({@link matchPods}: pods whose `namespace/name` or UID contains the text, case-insensitively;
 * the pods each node wants, and pods that are gone but still named by their events,
 * `podNamesOf`) and the browser's fetch. The server side (`GET /api/agents/pods?q=<text>`, which
 * asks every agent with its token) is pod-search-relay.ts: it reads files, so a client component
 * must never import it.
 */
import { z } from 'zod';
import type { Snapshot } from '../api/index.ts';
import { podNamesOf } from './pod-refs.ts';

/** At most this many matches are answered (over all nodes); `truncated` says when more matched. */
export const POD_SEARCH_LIMIT = 100;
/** The browser's path of the search. */
export const POD_SEARCH_PATH = '/api/agents/pods';

export const PodSearchMatchSchema = z.object({
  node: z.string(),
  uid: z.string(),
  /** `namespace/name`. */
  name: z.string(),
  /** In the node's desired state; false: gone, named by its events (its page shows what is left). */
  desired: z.boolean(),
});
export type PodSearchMatch = z.infer<typeof PodSearchMatchSchema>;

export const PodSearchAnswerSchema = z.object({
  query: z.string(),
  matches: z.array(PodSearchMatchSchema),
  /** More pods matched than {@link POD_SEARCH_LIMIT}. */
  truncated: z.boolean(),
  /** Nodes that could not be searched, with why. */
  failed: z.array(z.object({ node: z.string(), message: z.string() })),
});
export type PodSearchAnswer = z.infer<typeof PodSearchAnswerSchema>;

/** The pods of one node's snapshot whose `namespace/name` or UID contains `query` (case-insensitive), desired first, by name. */
export function matchPods(node: string, snapshot: Pick<Snapshot, 'desired' | 'recentEvents'>, query: string): PodSearchMatch[] {
  const needle = query.trim().toLowerCase();
  if (needle === '') return [];
  const desired = new Set(snapshot.desired.pods.map((p) => p.uid));
  const out: PodSearchMatch[] = [];
  for (const [uid, name] of podNamesOf(snapshot.desired.pods, snapshot.recentEvents)) {
    if (name.toLowerCase().includes(needle) || uid.toLowerCase().includes(needle)) out.push({ node, uid, name, desired: desired.has(uid) });
  }
  return out.sort((a, b) => Number(b.desired) - Number(a.desired) || a.name.localeCompare(b.name) || a.uid.localeCompare(b.uid));
}

/** The browser's search: the dashboard's answer, parsed. */
export async function fetchPodSearch(query: string, fetchFn: typeof fetch, signal?: AbortSignal): Promise<PodSearchAnswer> {
  const response = await fetchFn(`${POD_SEARCH_PATH}?q=${encodeURIComponent(query)}`, { headers: { Accept: 'application/json' }, cache: 'no-store', ...(signal === undefined ? {} : { signal }) });
  const body: unknown = await response.json().catch(() => null);
  const parsed = PodSearchAnswerSchema.safeParse(body);
  if (!response.ok || !parsed.success) throw new PodSearchError(`the dashboard answered the pod search with HTTP ${response.status}${parsed.success ? '' : ' (not a search answer)'}`);
  return parsed.data;
}

/** The dashboard's answer to a pod search was not one. */
export class PodSearchError extends Error {
  override readonly name = 'PodSearchError';
}

export function isPodSearchError(err: unknown): err is PodSearchError {
  return err instanceof PodSearchError;
}
