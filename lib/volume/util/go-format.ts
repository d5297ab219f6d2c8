/**
 * Go's textual formats, so that messages read exactly like the kubelet's: operators grep for
 * "durationBeforeRetry 2m2s", not "122000 ms".
 */

/** Go's `time.Duration.String()` for a duration in milliseconds: `0s`, `500ms`, `1s`, `1m4s`, `2m2s`, `1h0m0s`. */
export function formatGoDuration(ms: number): string {
  if (ms === 0) return '0s';
  const negative = ms < 0;
  let rest = Math.abs(ms);
  let out: string;
  if (rest < 1000) {
    // Sub-second durations use the largest unit that keeps an integer part: ms, µs, ns.
    if (rest >= 1) out = `${trimFloat(rest)}ms`;
    else if (rest >= 0.001) out = `${trimFloat(rest * 1000)}µs`;
    else out = `${Math.round(rest * 1e6)}ns`;
  } else {
    const hours = Math.floor(rest / 3_600_000);
    rest -= hours * 3_600_000;
    const minutes = Math.floor(rest / 60_000);
    rest -= minutes * 60_000;
    const seconds = `${trimFloat(rest / 1000)}s`;
    if (hours > 0) out = `${hours}h${minutes}m${seconds}`;
    else if (minutes > 0) out = `${minutes}m${seconds}`;
    else out = seconds;
  }
  return negative ? `-${out}` : out;
}

function trimFloat(value: number): string {
  // At most nanosecond precision, no trailing zeros (Go prints 1.5s, not 1.500s).
  return Number(value.toFixed(9)).toString();
}

/**
 * Go's `time.Time.String()` in UTC, without the monotonic clock suffix:
 * `2024-01-01 12:00:00.5 +0000 UTC`.
 */
export function formatGoTime(epochMs: number): string {
  const d = new Date(epochMs);
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  const date = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  const millis = d.getUTCMilliseconds();
  const fraction = millis === 0 ? '' : `.${pad(millis, 3).replace(/0+$/, '')}`;
  const time = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}${fraction}`;
  return `${date} ${time} +0000 UTC`;
}

/** Go's `%q` for a string (`strconv.Quote`): double quotes, with `"` and `\` escaped. */
export function goQuote(value: string): string {
  // Most values (names, UIDs, paths) need no escape: one string, not one per character.
  if (!needsQuoteEscape(value)) return `"${value}"`;
  let out = '"';
  for (const ch of value) {
    const code = ch.codePointAt(0) ?? 0;
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\r') out += '\\r';
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/** True when `value` has a character {@link goQuote} escapes (`"`, a backslash, a control character). */
function needsQuoteEscape(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code === 0x22 || code === 0x5c || code === 0x7f) return true;
  }
  return false;
}

/** Go's `%v` of a string slice: `[a b c]`. */
export function goSlice(values: readonly string[]): string {
  return `[${values.join(' ')}]`;
}
