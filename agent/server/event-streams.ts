/**
 * `GET /api/v1/events`: the open server-sent-event streams. Each stream starts with the current
 * snapshot (or, on a reconnect whose `Last-Event-ID` the journal still covers, the deltas after
 * it) and then receives every published delta. Events are written as soon as they are
 * published, with nothing buffering them on the way (no compression, `X-Accel-Buffering: no`
 * for proxies, Nagle off); an idle stream gets a `: keepalive` comment.
 */
import type { SnapshotEncoding } from '../../lib/api/compact-snapshot.ts';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseStreamEventId } from '../../lib/api/agent-stream.ts';
import { SSE_KEEPALIVE, SSE_KEEPALIVE_INTERVAL_MS } from '../../lib/api/sse.ts';
import type { Clock, TimerHandle } from '../../lib/clock/clock.ts';
import type { Logger } from '../../lib/volume/logger.ts';
import type { SnapshotFeed } from './snapshot-feed.ts';

/**
 * A client with this much unsent data beyond what its stream started with (the snapshot may be
 * many MB) is not reading: its stream is closed, and it resumes from the journal (or a fresh
 * snapshot) when it reconnects.
 */
const MAX_UNSENT_STREAM_BYTES = 16 * 1024 * 1024;

/** The headers of an event stream. */
const EVENT_STREAM_HEADERS = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-cache, no-transform',
  'X-Accel-Buffering': 'no',
} as const;

/**
 * A `Last-Event-ID` header as `{startedAt, seq}` (the stream's `<startedAt>.<seq>` ids), or null
 * when absent or of another form (a bare seq included: it cannot say which agent process it
 * came from).
 */
export function parseLastEventId(header: string | string[] | undefined): { startedAt: number; seq: number } | null {
  const value = Array.isArray(header) ? header[header.length - 1] : header;
  return value === undefined ? null : parseStreamEventId(value);
}

/** Default caps: open streams in all, and per caller (a dashboard relays many browsers as one caller with the static token). */
export const DEFAULT_MAX_EVENT_STREAMS = 512;
export const DEFAULT_MAX_EVENT_STREAMS_PER_CALLER = 256;
/** What a refused client is told to wait (seconds). */
export const EVENT_STREAM_RETRY_AFTER_SECONDS = 10;

export interface EventStreamsOptions {
  feed: SnapshotFeed;
  clock: Clock;
  logger: Logger;
  /** The idle time before a `: keepalive` comment (default 15 s). */
  keepaliveMs?: number;
  /** Open streams in all (default {@link DEFAULT_MAX_EVENT_STREAMS}); beyond it a new one is refused (503 + Retry-After). */
  maxStreams?: number;
  /** Open streams per caller (default {@link DEFAULT_MAX_EVENT_STREAMS_PER_CALLER}). */
  maxStreamsPerCaller?: number;
}

interface OpenStream {
  res: ServerResponse;
  caller: string;
  close(): void;
}

export class EventStreams {
  private readonly streams = new Set<OpenStream>();
  private readonly feed: SnapshotFeed;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly keepaliveMs: number;
  private readonly maxStreams: number;
  private readonly maxPerCaller: number;
  private readonly perCaller = new Map<string, number>();

  constructor(opts: EventStreamsOptions) {
    this.maxStreams = opts.maxStreams ?? DEFAULT_MAX_EVENT_STREAMS;
    this.maxPerCaller = opts.maxStreamsPerCaller ?? DEFAULT_MAX_EVENT_STREAMS_PER_CALLER;
    this.feed = opts.feed;
    this.clock = opts.clock;
    this.logger = opts.logger;
    this.keepaliveMs = opts.keepaliveMs ?? SSE_KEEPALIVE_INTERVAL_MS;
  }

  /** The number of open streams. */
  get size(): number {
    return this.streams.size;
  }

  /** Why a new stream of `caller` would be refused now, or null when it may open. */
  refusal(caller: string): string | null {
    if (this.streams.size >= this.maxStreams) return `too many event streams (at most ${this.maxStreams}); retry later`;
    if ((this.perCaller.get(caller) ?? 0) >= this.maxPerCaller) return `too many event streams for ${caller} (at most ${this.maxPerCaller}); retry later`;
    return null;
  }

  /**
   * Turns an authenticated request into a stream (the caller checks {@link refusal} first). The stream stays open until the client
   * disconnects, the client stops reading, or {@link closeAll} ends it.
   */
  open(req: IncomingMessage, res: ServerResponse, caller: string, encoding: SnapshotEncoding = 'compact'): void {
    const { clock, feed, logger } = this;
    let keepalive: TimerHandle | null = null;
    let closed = false;
    let budget = MAX_UNSENT_STREAM_BYTES;

    const armKeepalive = (): void => {
      if (keepalive !== null) clock.clearTimeout(keepalive);
      keepalive = clock.setTimeout(() => {
        keepalive = null;
        write(SSE_KEEPALIVE);
      }, this.keepaliveMs);
    };
    const write = (text: string): void => {
      if (closed) return;
      res.write(text);
      if (res.writableLength > budget) {
        logger.warn('event stream client is not reading; closing its stream', { caller, unsentBytes: res.writableLength });
        res.destroy();
        return;
      }
      armKeepalive();
    };

    res.writeHead(200, EVENT_STREAM_HEADERS);
    res.flushHeaders();
    req.socket.setNoDelay(true);

    // Bring the snapshot up to date when a rebuild is due anyway; a later one arrives as a delta.
    feed.publishIfDue();
    const lastEventId = parseLastEventId(req.headers['last-event-id']);
    const resumed = lastEventId === null ? null : feed.deltasSince(lastEventId.seq, lastEventId.startedAt);
    const first = resumed === null ? feed.snapshotEvent(encoding) : resumed.map((entry) => entry.event).join('');
    const unsubscribe = feed.subscribe((entry) => {
      write(entry.event);
    });

    const stream: OpenStream = {
      res,
      caller,
      close: () => {
        if (closed) return;
        closed = true;
        const left = (this.perCaller.get(caller) ?? 1) - 1;
        if (left <= 0) this.perCaller.delete(caller);
        else this.perCaller.set(caller, left);
        unsubscribe();
        if (keepalive !== null) clock.clearTimeout(keepalive);
        keepalive = null;
        this.streams.delete(stream);
      },
    };
    this.streams.add(stream);
    this.perCaller.set(caller, (this.perCaller.get(caller) ?? 0) + 1);
    res.on('close', () => {
      stream.close();
      logger.debug('event stream closed', { caller, open: this.streams.size });
    });
    logger.debug('event stream opened', {
      caller,
      lastEventId,
      start: resumed === null ? 'snapshot' : `resume ${resumed.length} deltas`,
      open: this.streams.size,
    });
    budget += Buffer.byteLength(first);
    if (first === '') armKeepalive();
    else write(first);
  }

  /** Ends every stream (server shutdown): clients see the stream end and may reconnect elsewhere. */
  closeAll(): void {
    for (const stream of [...this.streams]) {
      stream.close();
      stream.res.end();
    }
  }
}
