/**
 * Secret redaction for anything the driver logs or reports. CSI marks secret fields with the
 * `csi_secret` option; in csi.v1 every such field is a map named `secrets`, so the redactor
 * replaces the value of every key of every `secrets` map, at any depth, keeping the keys
 * (which are useful for debugging and not secret).
 */
export const REDACTED = '***stripped***';

export function redactSecrets(value: unknown): unknown {
  if (Array.isArray(value)) {
    return value.map((item) => redactSecrets(item));
  }
  if (value === null || typeof value !== 'object') {
    return value;
  }
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value as Record<string, unknown>)) {
    if (key === 'secrets' && field !== null && typeof field === 'object') {
      out[key] = Object.fromEntries(Object.keys(field).map((name) => [name, REDACTED]));
    } else {
      out[key] = redactSecrets(field);
    }
  }
  return out;
}
