/**
 * The node page's first screen: what its top (header, facts, counts, section links) and the first
 * rows of its pods table show, computed on the server from the agent's snapshot. The server
 * renders the page from this alone and the browser hydrates from it, so the page's HTML and its
 * payload carry a few dozen rows instead of the whole snapshot (7 MB at 2,000 pods × 5 volumes,
 * which made the first rows take over a second); the live stream then brings the full snapshot.
 * Pure, and plain data only (it crosses the server/client boundary as props).
 */
import type { NodeCondition, Snapshot } from '../api/index.ts';
import { summarizeNode, type NodeSummary } from './node-summary.ts';
import { nodeSectionLinks, type SectionLink } from './observe-view.ts';
import { deriveVolumeRows, type VolumeRow } from './pipeline.ts';
import { podNamesOf } from './pod-refs.ts';
import { nodeProblems, type Problems } from './problems.ts';
import { applyVolumeFilters, namespacesOf, type VolumeFilters } from './volume-filters.ts';

/**
 * Rows of the table in the first screen: more than its window shows at first (560 px of 44 px
 * rows, plus the list's overscan of 8), so the rows in view are all server-rendered.
 */
export const FIRST_SCREEN_ROWS = 24;

/** The pods table's first screen: its first rows under the URL's filters, and the totals. */
export interface FirstScreenTable {
  /** The first {@link FIRST_SCREEN_ROWS} rows that pass the filters, in the filters' order. */
  readonly rows: readonly VolumeRow[];
  /** How many rows pass the filters. */
  readonly shown: number;
  /** How many rows the node has. */
  readonly total: number;
  /** The namespaces of all rows (the namespace filter's options). */
  readonly namespaces: readonly string[];
  /** The filters the rows were selected with (the page URL's). */
  readonly filters: VolumeFilters;
}

/** Everything the node page's first screen shows; see the module comment. */
export interface NodeFirstScreen {
  readonly nodeName: string;
  readonly statesSynced: boolean;
  readonly observing: boolean;
  readonly summary: NodeSummary;
  readonly problems: Problems;
  readonly nodeConditions: readonly NodeCondition[] | undefined;
  readonly sectionLinks: readonly SectionLink[];
  readonly sourceErrors: number;
  /** uid → `namespace/name` of the pods of `table.rows` that the snapshot can name. */
  readonly podNames: readonly (readonly [string, string])[];
  readonly table: FirstScreenTable;
}

/** The first screen of `snapshot`'s node page under the URL's `filters`. */
export function nodeFirstScreen(snapshot: Snapshot, filters: VolumeFilters): NodeFirstScreen {
  const rows = deriveVolumeRows(snapshot);
  const shown = applyVolumeFilters(rows, filters);
  const first = shown.slice(0, FIRST_SCREEN_ROWS);
  const names = podNamesOf(snapshot.desired.pods, snapshot.recentEvents);
  const podNames: [string, string][] = [];
  for (const uid of new Set(first.map((r) => r.podUid))) {
    const name = names.get(uid);
    if (name !== undefined) podNames.push([uid, name]);
  }
  return {
    nodeName: snapshot.nodeName,
    statesSynced: snapshot.statesSynced,
    observing: snapshot.observe !== undefined,
    summary: summarizeNode(snapshot),
    problems: nodeProblems(snapshot, rows),
    nodeConditions: snapshot.nodeConditions,
    sectionLinks: nodeSectionLinks(snapshot),
    sourceErrors: snapshot.sourceErrors.length,
    podNames,
    table: { rows: first, shown: shown.length, total: rows.length, namespaces: namespacesOf(rows), filters },
  };
}
