/**
 * Test support: a small HTTP client for the agent API over real sockets (global `fetch`), an
 * event-stream reader built on lib/api's SSE parser.
 */
import { createSseParser, type SseMessage } from '../../../lib/api/sse.ts';
import { waitFor } from '../../../lib/clock/testing/wait-for.ts';

function parseJsonOrNull(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** A response read whole. */
export interface ApiResponse {
  status: number;
  headers: Headers;
  text: string;
  /** The body parsed as JSON; null when it is not JSON. */
  json: unknown;
}

export interface RequestOptions {
  body?: string;
  headers?: Record<string, string>;
  /** The bearer token to send; null sends none; absent uses the client's. */
  token?: string | null;
}

export class ApiClient {
  constructor(
    readonly baseUrl: string,
    readonly token: string | null,
  ) {}

  async request(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse> {
    const token = options.token === undefined ? this.token : options.token;
    const res = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: {
        ...(token !== null ? { Authorization: `Bearer ${token}` } : {}),
        ...(options.body !== undefined ? { 'Content-Type': 'application/json' } : {}),
        ...options.headers,
      },
      ...(options.body !== undefined ? { body: options.body } : {}),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, json: parseJsonOrNull(text) };
  }

  get(path: string, options: RequestOptions = {}): Promise<ApiResponse> {
    return this.request('GET', path, options);
  }

  post(path: string, body: unknown, options: RequestOptions = {}): Promise<ApiResponse> {
    return this.request('POST', path, { ...options, body: typeof body === 'string' ? body : JSON.stringify(body) });
  }

  /** Opens `GET /api/v1/events` (optionally resuming from `lastEventId`). */
  events(lastEventId?: string): Promise<EventStreamReader> {
    return EventStreamReader.open(`${this.baseUrl}/api/v1/events`, {
      ...(this.token !== null ? { Authorization: `Bearer ${this.token}` } : {}),
      ...(lastEventId !== undefined ? { 'Last-Event-ID': lastEventId } : {}),
    });
  }
}

/** An open event stream: every event and comment received so far, and whether it ended. */
export class EventStreamReader {
  readonly events: SseMessage[] = [];
  readonly comments: string[] = [];
  ended = false;
  private readonly parser = createSseParser(
    (message) => {
      this.events.push(message);
    },
    {
      onComment: (text) => {
        this.comments.push(text);
      },
    },
  );

  private constructor(
    readonly status: number,
    readonly headers: Headers,
    private readonly controller: AbortController,
  ) {}

  static async open(url: string, headers: Record<string, string>): Promise<EventStreamReader> {
    const controller = new AbortController();
    const res = await fetch(url, { headers, signal: controller.signal });
    const reader = new EventStreamReader(res.status, res.headers, controller);
    if (res.body === null) {
      reader.ended = true;
    } else {
      void reader.pump(res.body);
    }
    return reader;
  }

  /** Waits until at least `count` events arrived. */
  async waitForEvents(count: number, timeoutMs = 5_000): Promise<SseMessage[]> {
    await waitFor(() => this.events.length >= count, { what: `${count} stream events (have ${this.events.length})`, timeoutMs });
    return this.events.slice(0, count);
  }

  /** Disconnects (the server sees the client go away). */
  close(): void {
    this.controller.abort();
  }

  private async pump(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    const reader = body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        this.parser.push(decoder.decode(value, { stream: true }));
      }
    } catch {
      // Aborted by close(), or the connection was cut: either way the stream is over.
    } finally {
      this.ended = true;
    }
  }
}
