/**
 * Durations on the command line, in the Go `time.ParseDuration` style the kubelet's flags use:
 * one or more `<number><unit>` parts (`100ms`, `60s`, `2m`, `1m30s`, `1.5s`), units `ms`, `s`,
 * `m`, `h`. A bare number is refused: a period without a unit is ambiguous.
 */

export class InvalidDurationError extends Error {
  override readonly name = 'InvalidDurationError';
}

export function isInvalidDurationError(err: unknown): err is InvalidDurationError {
  return err instanceof InvalidDurationError;
}

const unitMs: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Parses a duration into whole milliseconds (rounded); throws {@link InvalidDurationError}. */
export function parseDuration(text: string): number {
  const value = text.trim();
  const part = /(\d+(?:\.\d+)?|\.\d+)(ms|s|m|h)/y;
  if (value === '') throw new InvalidDurationError('empty duration; expected e.g. 100ms, 60s or 2m');
  if (value === '0') return 0;
  let total = 0;
  let at = 0;
  while (at < value.length) {
    part.lastIndex = at;
    const m = part.exec(value);
    const [, amount, unit] = m ?? [];
    if (m === null || amount === undefined || unit === undefined) {
      throw new InvalidDurationError(`invalid duration ${JSON.stringify(text)}; expected e.g. 100ms, 60s or 2m`);
    }
    total += Number(amount) * (unitMs[unit] ?? Number.NaN);
    at = part.lastIndex;
  }
  if (!Number.isFinite(total) || total > Number.MAX_SAFE_INTEGER) throw new InvalidDurationError(`duration ${JSON.stringify(text)} is too long`);
  return Math.round(total);
}

/** `1500` → `1.5s`, `100` → `100ms`, `120000` → `2m`: the shortest exact form, for --help and logs. */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms >= 1000) return `${ms / 1000}s`;
  return `${ms}ms`;
}
