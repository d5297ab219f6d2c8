/**
 * Comparison of the two sides' states, through the allow-list of deliberate differences
 * (docs/engine.md, "Differential testing"): each entry rewrites both states the same way before
 * they are compared, and counts the steps where the rewrite hid a difference.
 */
import { firstDifference as firstJsonDifference } from '../first-difference.ts';
import { operationOrder, type ObservedState } from './trace.ts';

export interface AllowedDifference {
  id: string;
  /** One line; the full reason is in docs/engine.md. */
  reason: string;
  normalize: (state: ObservedState) => ObservedState;
}

const verifyOperationName = 'verify_volumes_are_attached_per_node';

export const allowList: readonly AllowedDifference[] = [
  {
    id: 'verify-operation-entry',
    reason: 'attach verification runs under a per-node key and keeps a failed run in the table with its error and backoff; upstream uses an empty key and only logs the error',
    normalize: (state) => ({
      ...state,
      operations: state.operations
        .filter((o) => o.name !== verifyOperationName || o.pending)
        .map((o) => (o.name === verifyOperationName ? { ...o, volume: '', durationBeforeRetry: '0s', lastError: '' } : o))
        .sort(operationOrder),
    }),
  },
];

/** The first differing path of two JSON values, or null when equal. */
export function firstDifference(a: unknown, b: unknown): string | null {
  return firstJsonDifference(a, b, (path, oracle, engine) => `${path}: oracle ${JSON.stringify(oracle)} ≠ engine ${JSON.stringify(engine)}`);
}

export interface Divergence {
  step: number;
  difference: string;
  oracle: ObservedState | undefined;
  engine: ObservedState | undefined;
}

/** Compares step by step; `skipped` counts, per allow-list entry, the steps it made equal. */
export function compareRuns(
  oracle: readonly ObservedState[],
  engine: readonly ObservedState[],
  skipped: Map<string, number>,
): Divergence | null {
  for (let i = 0; i < Math.max(oracle.length, engine.length); i++) {
    let o = oracle[i];
    let e = engine[i];
    if (o === undefined || e === undefined) return { step: i, difference: `step ${i} missing on the ${o === undefined ? 'oracle' : 'engine'} side`, oracle: o, engine: e };
    if (firstDifference(o, e) === null) continue;
    for (const entry of allowList) {
      o = entry.normalize(o);
      e = entry.normalize(e);
      if (firstDifference(o, e) === null) {
        skipped.set(entry.id, (skipped.get(entry.id) ?? 0) + 1);
        break;
      }
    }
    const difference = firstDifference(o, e);
    if (difference !== null) return { step: i, difference, oracle: oracle[i], engine: engine[i] };
  }
  return null;
}
