import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createSseParser,
  formatSseComment,
  formatSseEvent,
  isSseFormatError,
  SSE_KEEPALIVE,
  type SseEventInit,
  type SseMessage,
  type SseParserOptions,
} from './sse.ts';

/** Everything a parser reports for `chunks`. */
function parse(chunks: string[], options: SseParserOptions = {}): SseMessage[] {
  const out: SseMessage[] = [];
  const parser = createSseParser((m) => out.push(m), options);
  for (const chunk of chunks) parser.push(chunk);
  parser.end();
  return out;
}

function caught(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

describe('formatSseEvent', () => {
  it.each<{ name: string; init: SseEventInit; want: string }>([
    {
      name: 'writes event, id and JSON data',
      init: { event: 'delta', id: 42, data: { seq: 42 } },
      want: 'event: delta\nid: 42\ndata: {"seq":42}\n\n',
    },
    { name: 'sends a string as is', init: { data: 'hello' }, want: 'data: hello\n\n' },
    { name: 'splits multi-line data into data lines', init: { data: 'a\nb\r\nc' }, want: 'data: a\ndata: b\ndata: c\n\n' },
    { name: 'writes an empty data line for empty data', init: { data: '' }, want: 'data: \n\n' },
    { name: 'writes retry first', init: { retry: 1000, event: 'x', data: 1 }, want: 'retry: 1000\nevent: x\ndata: 1\n\n' },
  ])('$name', ({ init, want }) => {
    expect(formatSseEvent(init)).toBe(want);
  });

  it.each<{ name: string; init: SseEventInit }>([
    { name: 'a line break in the event type', init: { event: 'a\nb', data: 1 } },
    { name: 'a line break in the id', init: { id: '1\r2', data: 1 } },
    { name: 'NUL in the id', init: { id: 'a\0b', data: 1 } },
    { name: 'a negative retry', init: { retry: -1, data: 1 } },
    { name: 'data without a JSON form', init: { data: undefined } },
  ])('rejects $name', ({ init }) => {
    expect(isSseFormatError(caught(() => formatSseEvent(init)))).toBe(true);
  });

  it('formats the keepalive as a comment', () => {
    expect(SSE_KEEPALIVE).toBe(': keepalive\n\n');
    expect(formatSseComment('a\nb')).toBe(': a\n: b\n\n');
  });
});

describe('createSseParser', () => {
  it.each<{ name: string; chunks: string[]; want: SseMessage[] }>([
    {
      name: 'reads one event with type, id and data',
      chunks: ['event: snapshot\nid: 7\ndata: {"a":1}\n\n'],
      want: [{ event: 'snapshot', id: '7', data: '{"a":1}' }],
    },
    {
      name: 'defaults the type to message and joins data lines',
      chunks: ['data: a\ndata: b\n\n'],
      want: [{ event: 'message', id: '', data: 'a\nb' }],
    },
    {
      name: 'accepts CRLF and CR line ends',
      chunks: ['data: a\r\n\r\ndata: b\r\rdata: c\n\n'],
      want: [
        { event: 'message', id: '', data: 'a' },
        { event: 'message', id: '', data: 'b' },
        { event: 'message', id: '', data: 'c' },
      ],
    },
    {
      name: 'treats a CRLF split across chunks as one line end',
      chunks: ['data: a\r', '\n\r', '\ndata: b\n\n'],
      want: [
        { event: 'message', id: '', data: 'a' },
        { event: 'message', id: '', data: 'b' },
      ],
    },
    {
      name: 'keeps the last id for later events',
      chunks: ['id: 3\ndata: a\n\ndata: b\n\n'],
      want: [
        { event: 'message', id: '3', data: 'a' },
        { event: 'message', id: '3', data: 'b' },
      ],
    },
    {
      name: 'ignores an id containing NUL',
      chunks: ['id: 3\ndata: a\n\nid: 4\0\ndata: b\n\n'],
      want: [
        { event: 'message', id: '3', data: 'a' },
        { event: 'message', id: '3', data: 'b' },
      ],
    },
    {
      name: 'does not dispatch an event without data and resets its type',
      chunks: ['event: x\n\ndata: a\n\n'],
      want: [{ event: 'message', id: '', data: 'a' }],
    },
    {
      name: 'removes only one space after the colon and keeps a field without colon',
      chunks: ['data:  two\ndata\n\n'],
      want: [{ event: 'message', id: '', data: ' two\n' }],
    },
    {
      name: 'skips a leading byte order mark',
      chunks: ['', '\uFEFFdata: a\n\n'],
      want: [{ event: 'message', id: '', data: 'a' }],
    },
    {
      name: 'ignores unknown fields and comments',
      chunks: [': keepalive\n\nfoo: bar\ndata: a\n\n'],
      want: [{ event: 'message', id: '', data: 'a' }],
    },
    {
      name: 'discards an event cut off by the end of the stream',
      chunks: ['data: a\n\ndata: b\n'],
      want: [{ event: 'message', id: '', data: 'a' }],
    },
  ])('$name', ({ chunks, want }) => {
    expect(parse(chunks)).toStrictEqual(want);
  });

  it('reports comments and retry delays', () => {
    const comments: string[] = [];
    const retries: number[] = [];
    parse([': keepalive\nretry: 1500\nretry: soon\n:x\n'], {
      onComment: (c) => comments.push(c),
      onRetry: (ms) => retries.push(ms),
    });
    expect(comments).toEqual(['keepalive', 'x']);
    expect(retries).toEqual([1500]);
  });

  it('exposes the last event id for a reconnect once its event is dispatched', () => {
    // The standard sets the stream's last event id when an event is dispatched: an id whose
    // event has not ended yet was not delivered, so a reconnect must not claim it.
    const parser = createSseParser(() => undefined);
    parser.push('id: 12\ndata: a\n\nid: 13\n');
    expect(parser.lastEventId).toBe('12');
    parser.push('\n');
    expect(parser.lastEventId).toBe('13');
  });

  it('reads back what formatSseEvent wrote, however the text is split', () => {
    const initArb = fc.record({
      event: fc.stringMatching(/^[a-z]{1,8}$/),
      id: fc.nat(),
      data: fc.oneof(fc.string(), fc.jsonValue()),
    });
    fc.assert(
      fc.property(fc.array(initArb, { minLength: 1, maxLength: 5 }), fc.array(fc.nat()), (inits, cuts) => {
        // Arrange: the stream text, cut at arbitrary places (keepalives in between).
        const text = inits.map((init) => formatSseEvent(init) + SSE_KEEPALIVE).join('');
        const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
        const chunks = [0, ...points].map((from, i) => text.slice(from, points[i] ?? text.length));
        // Act
        const got = parse(chunks);
        // Assert
        const want = inits.map((init) => ({
          event: init.event,
          id: String(init.id),
          data: (typeof init.data === 'string' ? init.data : JSON.stringify(init.data)).replace(/\r\n|\r/g, '\n'),
        }));
        expect(got).toStrictEqual(want);
      }),
      { numRuns: 300 },
    );
  });
});
