/**
 * `GET /api/v1/summary` (lib/api/summary.ts): the node's counts, taken from the snapshot the
 * feed publishes anyway, so a summary costs no snapshot build of its own.
 *
 * Each request publishes pending changes when the feed's pacing allows a rebuild now
 * (`publishIfDue`, as `GET /api/v1/snapshot` does), never sooner: readers cannot force rebuilds.
 * A summary and a snapshot fetched one after the other read the same build. The counts are computed once per
 * published snapshot (one pass over its collections) and reused until the next `seq`: 200
 * dashboards polling every few seconds cost one count per change, not one per request.
 */
import { summarizeSnapshot, type AgentSummary } from '../../lib/api/summary.ts';
import type { Snapshot } from '../../lib/api/snapshot.ts';
import { jsonAnswer, type HttpAnswer } from './http-response.ts';

/**
 * What the cache reads: the feed's current snapshot, pending changes published when due
 * (`publishIfDue`), or only once the last build is `maxAgeMs` old (`publishIfOlderThan`).
 */
export interface SummarySource {
  publishIfDue(): Snapshot;
  publishIfOlderThan(maxAgeMs: number): Snapshot;
}

/** The summary of the source's current snapshot, memoized per snapshot object. */
export class SummaryCache {
  private last: { snapshot: Snapshot; summary: AgentSummary } | null = null;

  constructor(private readonly source: SummarySource) {}

  /** The summary of the current snapshot (`GET /api/v1/summary`). */
  current(): AgentSummary {
    return this.of(this.source.publishIfDue());
  }

  /** The summary of a snapshot at most `maxAgeMs` behind the agent's changes (the metrics' gauges). */
  atMostOld(maxAgeMs: number): AgentSummary {
    return this.of(this.source.publishIfOlderThan(maxAgeMs));
  }

  private of(snapshot: Snapshot): AgentSummary {
    if (this.last?.snapshot !== snapshot) this.last = { snapshot, summary: summarizeSnapshot(snapshot) };
    return this.last.summary;
  }
}

/** The route's handler: a 200 with the current summary (of `cache`, which the metrics may share). */
export function summaryHandler(cache: SummaryCache): () => Promise<HttpAnswer> {
  return () => Promise.resolve(jsonAnswer(200, cache.current()));
}
