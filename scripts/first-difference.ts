/**
 * The first place where two JSON-like values differ, as `<path>: <described by format>`, or null
 * when they are equal. Arrays compare index by index (a missing element is `undefined`), objects
 * key by key in sorted order, so the answer does not depend on key insertion order. Shared by the
 * differential test (oracle vs engine) and the API fuzzer (state before vs after a refusal).
 */
export function firstDifference(a: unknown, b: unknown, format: (path: string, a: unknown, b: unknown) => string, path = '$'): string | null {
  if (Object.is(a, b)) return null;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) {
    return format(path, a, b);
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const d = firstDifference(a[i], b[i], format, `${path}[${i}]`);
      if (d !== null) return d;
    }
    return null;
  }
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  for (const k of [...new Set([...Object.keys(ra), ...Object.keys(rb)])].sort()) {
    const d = firstDifference(ra[k], rb[k], format, `${path}.${k}`);
    if (d !== null) return d;
  }
  return null;
}
