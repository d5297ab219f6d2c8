/**
 * Comparison of the two sides' states, through the allow-list of deliberate differences
 * (docs/engine.md, "Differential testing"): each entry rewrites both states the same way before
 * they are compared, and counts the steps where the rewrite hid a difference.
 */
import type { ObservedState } from './trace.ts';

export interface AllowedDifference {
  id: string;
  /** One line; the full reason is in docs/engine.md. */
  reason: string;
  normalize: (state: ObservedState) => ObservedState;
}

export const allowList: readonly AllowedDifference[] = [];

/** The first differing path of two JSON values, or null when equal. */
export function firstDifference(a: unknown, b: unknown, path = '$'): string | null {
  if (Object.is(a, b)) return null;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) {
    return `${path}: oracle ${JSON.stringify(a)} ≠ engine ${JSON.stringify(b)}`;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const d = firstDifference(a[i], b[i], `${path}[${i}]`);
      if (d !== null) return d;
    }
    return null;
  }
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  for (const k of [...new Set([...Object.keys(ra), ...Object.keys(rb)])].sort()) {
    const d = firstDifference(ra[k], rb[k], `${path}.${k}`);
    if (d !== null) return d;
  }
  return null;
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
