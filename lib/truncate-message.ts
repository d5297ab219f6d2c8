/**
 * Bounds a message that came from outside the process (above all a CSI driver's gRPC error
 * details, which a broken or hostile driver can make megabytes long) before it is kept or shown:
 * in log lines, events and the agent's snapshot. One helper, so every place cuts the same way
 * and an operator always sees that text was cut: the kept head ends with
 * {@link TRUNCATION_MARKER} and the number of characters dropped.
 *
 * Like upstream's scheduler `truncateMessage` (which cuts at the event note limit and appends
 * " ..."), the result, marker included, is never longer than the limit. Depends on nothing.
 */

/** Longest message kept in a log line, an error the engine records, or the snapshot. */
export const MESSAGE_LENGTH_LIMIT = 4096;

/** events.k8s.io `NoteLengthLimit`: the longest event note the API server accepts. */
export const EVENT_NOTE_LENGTH_LIMIT = 1024;

/** What a cut message ends with, before the count of characters dropped. */
const TRUNCATION_MARKER = ' ... [truncated';

/**
 * `message` unchanged when it has at most `limit` characters (UTF-16 code units); else its head
 * followed by ` ... [truncated N characters]`, `limit` characters in all. Never splits a
 * surrogate pair. Idempotent for any one limit.
 */
export function truncateMessage(message: string, limit: number = MESSAGE_LENGTH_LIMIT): string {
  if (message.length <= limit) return message;
  // The marker's count depends on the cut, and the cut on the marker's length: take the widest
  // count (all of the message dropped) so the result never exceeds the limit.
  const markerWidth = `${TRUNCATION_MARKER} ${message.length} characters]`.length;
  let keep = Math.max(0, limit - markerWidth);
  const code = message.charCodeAt(keep - 1);
  if (keep > 0 && code >= 0xd800 && code <= 0xdbff) keep--;
  const marker = `${TRUNCATION_MARKER} ${message.length - keep} characters]`;
  return marker.length > limit ? message.slice(0, limit) : message.slice(0, keep) + marker;
}

/** Whether {@link truncateMessage} cut this text. */
export function isTruncatedMessage(message: string): boolean {
  return /\.\.\. \[truncated [0-9]+ characters\]$/.test(message);
}
