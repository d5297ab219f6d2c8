/**
 * Server-sent events (the `text/event-stream` format of the WHATWG HTML standard): a formatter
 * for the agent and an incremental parser (over `eventsource-parser`) for the dashboard and
 * tests. Text in, text out; byte decoding (`TextDecoder` with `{stream: true}`) is the caller's.
 */
import { createParser } from 'eventsource-parser';

/** How often the agent sends `: keepalive` on an idle stream. */
export const SSE_KEEPALIVE_INTERVAL_MS = 15_000;

/** A field value that cannot be written to an event stream (a line break, NUL in an id, …). */
export class SseFormatError extends Error {
  override readonly name = 'SseFormatError';
}

/** True for a {@link SseFormatError}. */
export function isSseFormatError(err: unknown): err is SseFormatError {
  return err instanceof SseFormatError;
}

/** One event to write. */
export interface SseEventInit {
  /** The event type (`event:` line); omitted means the default type `message`. */
  event?: string;
  /** The event id (`id:` line), e.g. the snapshot seq; omitted means no id line. */
  id?: string | number;
  /** The payload: a string is sent as is (split on line breaks), anything else as JSON. */
  data: unknown;
  /** The reconnection delay to ask of the client (`retry:` line), in ms; omitted means none. */
  retry?: number;
}

const LINE_BREAK = /\r\n|\r|\n/;

function singleLine(field: string, value: string): string {
  if (LINE_BREAK.test(value)) throw new SseFormatError(`SSE ${field} must not contain a line break`);
  return value;
}

/**
 * One event as stream text, ending in the blank line that dispatches it:
 * `event: delta\nid: 42\ndata: {...}\n\n`. Throws a {@link SseFormatError} for a line break in
 * `event` or `id`, NUL in `id`, a `retry` that is not a non-negative integer, or data that has
 * no JSON form (`undefined`, a function).
 */
export function formatSseEvent(init: SseEventInit): string {
  let out = '';
  if (init.retry !== undefined) {
    if (!Number.isSafeInteger(init.retry) || init.retry < 0) {
      throw new SseFormatError(`SSE retry must be a non-negative integer, got ${init.retry}`);
    }
    out += `retry: ${init.retry}\n`;
  }
  if (init.event !== undefined) out += `event: ${singleLine('event', init.event)}\n`;
  if (init.id !== undefined) {
    const id = singleLine('id', String(init.id));
    if (id.includes('\0')) throw new SseFormatError('SSE id must not contain NUL');
    out += `id: ${id}\n`;
  }
  const data: unknown = typeof init.data === 'string' ? init.data : JSON.stringify(init.data);
  if (typeof data !== 'string') throw new SseFormatError('SSE data has no JSON representation');
  for (const line of data.split(LINE_BREAK)) out += `data: ${line}\n`;
  return `${out}\n`;
}

/** A comment block (`: text`), ignored by clients; used for keepalives. */
export function formatSseComment(text: string): string {
  return `${text
    .split(LINE_BREAK)
    .map((line) => `: ${line}\n`)
    .join('')}\n`;
}

/** The keepalive comment the agent sends every {@link SSE_KEEPALIVE_INTERVAL_MS}. */
export const SSE_KEEPALIVE = formatSseComment('keepalive');

/** One dispatched event. */
export interface SseMessage {
  /** The event type; `message` when the event had no `event:` line. */
  event: string;
  /** The data lines joined with `\n`. */
  data: string;
  /** The last event id seen on the stream so far (ids persist across events); `''` if none. */
  id: string;
}

/** Optional callbacks of {@link createSseParser}. */
export interface SseParserOptions {
  /** Called for each comment line with the text after `:` (one leading space removed). */
  onComment?: (text: string) => void;
  /** Called for each valid `retry:` line with the delay in ms. */
  onRetry?: (ms: number) => void;
}

/** An incremental event-stream parser. */
export interface SseParser {
  /** Feeds the next piece of decoded text; chunks may split lines and events anywhere. */
  push(chunk: string): void;
  /** Ends the stream: an event without its closing blank line is discarded, as browsers do. */
  end(): void;
  /** The id of the last dispatched event that set one (a reconnect's `Last-Event-ID`); `''` if none. */
  readonly lastEventId: string;
}

/**
 * A parser that calls `onEvent` for each complete event, following the HTML standard's
 * interpretation rules: CRLF, CR and LF line ends; a leading BOM is skipped; lines starting with
 * `:` are comments; an event with no `data:` line is not dispatched; an `id` containing NUL is
 * ignored; unknown fields are ignored. The parsing is `eventsource-parser`'s; this keeps the
 * stream's last event id across events (it reports only each event's own) and the
 * push/end/lastEventId surface the agent's tests and the dashboard's connection use. The last
 * event id changes when its event is dispatched (an event still open has not been delivered).
 */
export function createSseParser(onEvent: (message: SseMessage) => void, options: SseParserOptions = {}): SseParser {
  let lastEventId = '';
  const parser = createParser({
    // Called before the event's onEvent, also for an event without data (the standard sets the
    // last event id when an event is dispatched, whether or not it has data).
    onId: (id) => {
      lastEventId = id;
    },
    onEvent: (message) => {
      onEvent({ event: message.event ?? 'message', data: message.data, id: lastEventId });
    },
    ...(options.onComment !== undefined ? { onComment: options.onComment } : {}),
    ...(options.onRetry !== undefined ? { onRetry: options.onRetry } : {}),
  });
  return {
    push(chunk: string): void {
      parser.feed(chunk);
    },
    end(): void {
      parser.reset();
    },
    get lastEventId(): string {
      return lastEventId;
    },
  };
}
