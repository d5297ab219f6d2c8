/**
 * Keeps CSI secrets out of logs, events and the snapshot. Upstream marks secret fields with the
 * `csi_secret` option and the Go sidecars log requests through `protosanitizer`; the repo's
 * .proto subset omits the option and names every secret field `secrets` instead (see
 * lib/csi-spec/README.md), so redaction goes by that field name, at any depth.
 */

/** What replaces every secret value (the same marker as protosanitizer and the csi-loop driver). */
export const STRIPPED = '***stripped***';

/**
 * A deep copy of `value` in which every value of a map field named `secrets` is replaced by
 * {@link STRIPPED}. The keys stay visible (they name which credentials were sent). The input is
 * never modified.
 */
export function redactSecrets<T>(value: T): T {
  return redact(value) as T;
}

function redact(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redact);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    if (key === 'secrets' && v !== null && typeof v === 'object' && !Array.isArray(v)) {
      out[key] = Object.fromEntries(Object.keys(v).map((k) => [k, STRIPPED]));
    } else {
      out[key] = redact(v);
    }
  }
  return out;
}

/** Every non-empty value of every `secrets` map in `value`, at any depth. */
export function collectSecretValues(value: unknown): string[] {
  const found = new Set<string>();
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) {
      v.forEach(walk);
      return;
    }
    if (v === null || typeof v !== 'object') return;
    for (const [key, child] of Object.entries(v as Record<string, unknown>)) {
      if (key === 'secrets' && child !== null && typeof child === 'object') {
        for (const s of Object.values(child)) if (typeof s === 'string' && s !== '') found.add(s);
      } else {
        walk(child);
      }
    }
  };
  walk(value);
  return [...found];
}

/**
 * Replaces every occurrence of a secret value in `text` by {@link STRIPPED}. Used on error
 * details a driver returns for a call that carried secrets: a driver that echoes its request in
 * an error message must not leak the credentials into the agent's log, events or snapshot.
 * Longer secrets are replaced first so a secret containing another is removed whole.
 */
export function scrubSecretValues(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of [...secrets].sort((a, b) => b.length - a.length)) {
    if (s !== '') out = out.split(s).join(STRIPPED);
  }
  return out;
}
