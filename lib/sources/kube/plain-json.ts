/**
 * Plain JSON values, and the conversion of what `@kubernetes/client-node` hands out into them.
 *
 * The client returns two different shapes for the same kind: objects of a LIST response are
 * deserialized into its model classes (timestamps become `Date` objects, absent fields are
 * `undefined`), while objects of a WATCH event are the raw parsed JSON (timestamps are strings,
 * absent fields may be `null`). {@link toPlainJson} maps both onto the wire form, so one schema
 * validates them.
 */

export type JsonPrimitive = string | number | boolean | null;
export type JsonValue = JsonPrimitive | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

/** A JSON object (not null, not an array). */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A Kubernetes `metav1.Time` in RFC 3339 form, as the API server writes it: whole seconds
 * (`2024-01-01T12:00:00Z`); sub-second precision is kept only when present (`metav1.MicroTime`).
 */
export function toRFC3339(date: Date): string {
  const iso = date.toISOString();
  return iso.endsWith('.000Z') ? `${iso.slice(0, -5)}Z` : iso;
}

/**
 * The wire form of a client-node value: `Date`s become RFC 3339 strings, model class instances
 * become plain objects, and `null`/`undefined` members are dropped (null means "unset" in the
 * Kubernetes JSON decoder). Functions and symbols are dropped too. Returns `undefined` for a
 * value that has no JSON form.
 */
export function toPlainJson(value: unknown): JsonValue | undefined {
  if (value === null || value === undefined) return undefined;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? undefined : toRFC3339(value);
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : undefined;
    case 'object': {
      if (Array.isArray(value)) {
        const out: JsonValue[] = [];
        for (const item of value as unknown[]) {
          const converted = toPlainJson(item);
          // An array element cannot be dropped without shifting the others: keep null in place.
          out.push(converted === undefined ? null : converted);
        }
        return out;
      }
      const out: JsonObject = {};
      for (const [key, member] of Object.entries(value)) {
        const converted = toPlainJson(member);
        if (converted !== undefined) out[key] = converted;
      }
      return out;
    }
    default:
      return undefined;
  }
}

/**
 * The object without `metadata.managedFields` (a shallow copy of the two levels that change; the
 * value itself when it has none, or is not an object). No conversion here reads the field
 * managers' sets, and an object's are often as large as the rest of it: for the pods of a LIST
 * they were about half of what {@link toPlainJson} copied and allocated.
 */
export function withoutManagedFields(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const metadata: unknown = (value as { metadata?: unknown }).metadata;
  if (typeof metadata !== 'object' || metadata === null || !('managedFields' in metadata)) return value;
  const { managedFields: _omitted, ...rest } = metadata as Record<string, unknown>;
  return { ...(value as Record<string, unknown>), metadata: rest };
}

/** Freezes a value and everything reachable from it; returns the value. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const member of Object.values(value)) deepFreeze(member);
  }
  return value;
}
