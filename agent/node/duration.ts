/**
 * Durations on the command line, in the Go `time.ParseDuration` style the kubelet's flags use:
 * one or more `<number><unit>` parts (`100ms`, `60s`, `2m`, `1m30s`, `1.5s`), units `ms`, `s`,
 * `m`, `h`. A bare number is refused: a period without a unit is ambiguous.
 */
import { parseGoDuration } from '../../lib/observe/go-text.ts';

export class InvalidDurationError extends Error {
  override readonly name = 'InvalidDurationError';
}

export function isInvalidDurationError(err: unknown): err is InvalidDurationError {
  return err instanceof InvalidDurationError;
}

/**
 * The subset of Go's grammar a flag accepts: no sign and no unit below a millisecond (no period
 * of the agent is that short). The value itself is read by Go's parser, {@link parseGoDuration}.
 */
const FLAG_DURATION = /^(?:(?:\d+(?:\.\d+)?|\.\d+)(?:ms|s|m|h))+$/;

/** Parses a duration into whole milliseconds (rounded); throws {@link InvalidDurationError}. */
export function parseDuration(text: string): number {
  const value = text.trim();
  if (value === '') throw new InvalidDurationError('empty duration; expected e.g. 100ms, 60s or 2m');
  if (value === '0') return 0;
  if (!FLAG_DURATION.test(value)) throw new InvalidDurationError(`invalid duration ${JSON.stringify(text)}; expected e.g. 100ms, 60s or 2m`);
  // The text is well formed, so the parser only refuses a total too large to be finite.
  const total = parseGoDuration(value);
  if (total === null || total > Number.MAX_SAFE_INTEGER) throw new InvalidDurationError(`duration ${JSON.stringify(text)} is too long`);
  return Math.round(total);
}
