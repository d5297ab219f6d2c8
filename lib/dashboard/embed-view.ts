/**
 * What the runbook embeds (`/embed/...`, framed at about 600×400) show first: the failing
 * volumes, most urgent first, so the first failing volume's error is in view without scrolling;
 * the healthy ones collapsed below them.
 */
import type { VolumeRow } from './pipeline.ts';
import { DEFAULT_VOLUME_FILTERS, applyVolumeFilters } from './volume-filters.ts';

/** Rows split for an embed: `failing` (not ready) and `healthy` (ready). */
export interface FailingFirst {
  /** Every row that is not ready, most urgent state first (uncertain, backoff, running, waiting, unmounting), then by pod and volume. */
  readonly failing: readonly VolumeRow[];
  /** The ready rows, in the order given (sorting thousands of healthy rows on every flush buys nothing): shown collapsed. */
  readonly healthy: readonly VolumeRow[];
}

/** Splits `rows` into failing (most urgent first) and healthy rows; every row lands in exactly one. */
export function failingFirst(rows: readonly VolumeRow[]): FailingFirst {
  const failing = applyVolumeFilters(
    rows.filter((r) => r.state !== 'ready'),
    { ...DEFAULT_VOLUME_FILTERS, sort: 'state' },
  );
  return { failing, healthy: rows.filter((r) => r.state === 'ready') };
}

/** The summary of the collapsed healthy rows: `3 ready volumes` (`1 ready volume`). */
export function healthySummary(count: number): string {
  return `${count} ready volume${count === 1 ? '' : 's'}`;
}
