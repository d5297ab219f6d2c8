/**
 * Parsers for the Go text formats the kubelet writes into its messages, the inverse of
 * lib/volume/util/go-format.ts: `time.Duration.String()`, `time.Time.String()` and `%q`
 * (`strconv.Quote`). Observe mode reads these out of Event messages and logs written by a real
 * kubelet, so every parser accepts the whole Go output range (any zone, monotonic suffix,
 * nanosecond fractions) and returns null for anything else; none of them throws.
 */

/** Milliseconds per Go duration unit (`time.ParseDuration` accepts both micro signs and `us`). */
const GO_DURATION_UNIT_MS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  '\u00b5s': 1e-3,
  '\u03bcs': 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

const GO_DURATION_PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)/y;

/**
 * `time.ParseDuration` for the strings `time.Duration.String()` produces (`500ms`, `1s`, `1m4s`,
 * `2m2s`, `1h0m0s`, `1.5µs`, `0s`, `-1s`), in milliseconds; sub-millisecond parts are kept as a
 * fraction. A bare `0` is accepted as Go does. Returns null for anything else (empty text, a
 * number without unit, unknown units, trailing text).
 */
export function parseGoDuration(text: string): number | null {
  if (typeof text !== 'string') return null;
  let rest = text;
  let sign = 1;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    sign = rest.startsWith('-') ? -1 : 1;
    rest = rest.slice(1);
  }
  if (rest === '0') return 0;
  if (rest === '') return null;
  let total = 0;
  let at = 0;
  while (at < rest.length) {
    GO_DURATION_PART.lastIndex = at;
    const m = GO_DURATION_PART.exec(rest);
    if (m === null) return null;
    const [, amount = '', unit = ''] = m;
    const unitMs = GO_DURATION_UNIT_MS[unit];
    if (unitMs === undefined) return null;
    total += Number(amount) * unitMs;
    at = GO_DURATION_PART.lastIndex;
  }
  if (!Number.isFinite(total)) return null;
  // Nanosecond resolution, without binary float noise (1.1s must be 1100, not 1100.0000000000002).
  return sign * (Math.round(total * 1e6) / 1e6);
}

/** A parsed `time.Time.String()`. */
export interface GoTime {
  /** The instant, in whole epoch milliseconds, rounded down. */
  epochMs: number;
  /** Nanoseconds past {@link epochMs} (0–999999), so no precision of the text is lost. */
  subMillisecondNanos: number;
  /** The zone offset east of UTC, in minutes (`-0700` → -420). */
  offsetMinutes: number;
  /** The zone abbreviation as printed (`UTC`, `CEST`, `+03`); empty when absent. */
  zone: string;
  /**
   * The monotonic clock reading (`m=+123.456`) in seconds since the process start of the
   * writer, when printed. Only comparable with readings of the same process.
   */
  monotonicSeconds?: number;
}

const GO_TIME =
  /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))? ([+-])(\d{2})(\d{2})(?: ([^\s]+))?(?: m=([+-]\d+(?:\.\d{1,9})?))?$/;

/**
 * Parses Go's `time.Time.String()`, layout `2006-01-02 15:04:05.999999999 -0700 MST`, optionally
 * followed by the monotonic reading ` m=+123.456789012` (present when the value came from
 * `time.Now()` and was only shifted with `Add`, which is how the kubelet computes "No retries
 * permitted until"). The numeric offset fixes the instant; the zone abbreviation is kept as text
 * only. Returns null when the text does not match or names an impossible date.
 */
export function parseGoTime(text: string): GoTime | null {
  if (typeof text !== 'string') return null;
  const m = GO_TIME.exec(text.trim());
  if (m === null) return null;
  const [, y, mo, d, h, mi, s, frac = '', sign, oh, om, zone = '', mono] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  const offH = Number(oh);
  const offM = Number(om);
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59 || offH > 23 || offM > 59) return null;
  // Date.UTC maps years 0–99 to 1900+; setUTCFullYear keeps Go's zero time (year 1) intact.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return null;
  date.setUTCHours(hour, minute, second, 0);
  const offsetMinutes = (sign === '-' ? -1 : 1) * (offH * 60 + offM);
  const nanos = Number(frac.padEnd(9, '0'));
  const epochMs = date.getTime() - offsetMinutes * 60_000 + Math.floor(nanos / 1e6);
  const out: GoTime = { epochMs, subMillisecondNanos: nanos % 1e6, offsetMinutes, zone };
  if (mono !== undefined) out.monotonicSeconds = Number(mono);
  return out;
}

/** The result of {@link readGoQuoted}: the decoded value and the index just past the closing quote. */
export interface GoQuoted {
  value: string;
  end: number;
}

const SIMPLE_ESCAPES: Readonly<Record<string, number>> = {
  a: 0x07,
  b: 0x08,
  f: 0x0c,
  n: 0x0a,
  r: 0x0d,
  t: 0x09,
  v: 0x0b,
  '\\': 0x5c,
  '"': 0x22,
  "'": 0x27,
};

/**
 * Reads a Go double-quoted string literal (`strconv.Quote` / `%q` output) that starts at
 * `text[start]`: escapes `\a \b \f \n \r \t \v \\ \"`, `\xHH` and `\OOO` (single bytes, joined
 * and decoded as UTF-8), `\uHHHH` and `\UHHHHHHHH`. Returns null when there is no complete,
 * valid literal at `start`.
 */
export function readGoQuoted(text: string, start = 0): GoQuoted | null {
  if (typeof text !== 'string' || text[start] !== '"') return null;
  const bytes: number[] = [];
  const pushText = (s: string): void => {
    for (const b of Buffer.from(s, 'utf8')) bytes.push(b);
  };
  let i = start + 1;
  while (i < text.length) {
    const ch = text[i] ?? '';
    if (ch === '"') return { value: Buffer.from(bytes).toString('utf8'), end: i + 1 };
    if (ch === '\n') return null;
    if (ch !== '\\') {
      const cp = text.codePointAt(i) ?? 0;
      const s = String.fromCodePoint(cp);
      pushText(s);
      i += s.length;
      continue;
    }
    const e = text[i + 1];
    if (e === undefined) return null;
    const simple = SIMPLE_ESCAPES[e];
    if (simple !== undefined) {
      bytes.push(simple);
      i += 2;
    } else if (e === 'x') {
      const hex = text.slice(i + 2, i + 4);
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) return null;
      bytes.push(Number.parseInt(hex, 16));
      i += 4;
    } else if (e >= '0' && e <= '7') {
      const oct = text.slice(i + 1, i + 4);
      if (!/^[0-7]{3}$/.test(oct) || Number.parseInt(oct, 8) > 0xff) return null;
      bytes.push(Number.parseInt(oct, 8));
      i += 4;
    } else if (e === 'u' || e === 'U') {
      const width = e === 'u' ? 4 : 8;
      const hex = text.slice(i + 2, i + 2 + width);
      if (!new RegExp(`^[0-9a-fA-F]{${width}}$`).test(hex)) return null;
      const cp = Number.parseInt(hex, 16);
      if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return null;
      pushText(String.fromCodePoint(cp));
      i += 2 + width;
    } else {
      return null;
    }
  }
  return null;
}

/** Decodes `text` when all of it is one Go quoted literal; null otherwise. */
export function unquoteGoString(text: string): string | null {
  const q = readGoQuoted(text, 0);
  return q !== null && q.end === text.length ? q.value : null;
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/**
 * Parses the RFC 3339 timestamps of Kubernetes objects (`metav1.Time`, e.g.
 * `2024-01-01T12:00:00Z`, and `metav1.MicroTime`, e.g. `2024-01-01T12:00:00.123456Z`) into epoch
 * milliseconds, rounded down. Returns null for anything else, including null and undefined.
 */
export function parseRfc3339(text: string | null | undefined): number | null {
  if (typeof text !== 'string') return null;
  const m = RFC3339.exec(text);
  if (m === null) return null;
  const [, y, mo, d, h, mi, s, frac = '', z, sign, oh = '0', om = '0'] = m;
  const month = Number(mo);
  const day = Number(d);
  if (month < 1 || month > 12 || day < 1 || Number(h) > 23 || Number(mi) > 59 || Number(s) > 60 || Number(oh) > 23 || Number(om) > 59) return null;
  const date = new Date(0);
  date.setUTCFullYear(Number(y), month - 1, day);
  if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return null;
  date.setUTCHours(Number(h), Number(mi), Number(s), 0);
  const offset = z !== undefined ? 0 : (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om));
  return date.getTime() - offset * 60_000 + Math.floor(Number(frac.padEnd(9, '0')) / 1e6);
}
