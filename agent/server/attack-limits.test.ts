/**
 * Attack cases against the agent's real HTTP server (127.0.0.1): a 100 MB request body is
 * refused with 413 while it streams, with no memory growth by the body; 1,000 event-stream
 * connections are capped with 503 + Retry-After.
 */
import { request, type IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { startServer, TEST_TOKEN, type ServerFixture } from './testing/server-fixture.ts';

/** Posts `chunks` MiB to `path` chunked, as fast as the server reads them; resolves with the answer and how many MiB were written. */
function postStreamed(baseUrl: string, path: string, chunks: number): Promise<{ status: number; written: number; body: string }> {
  const { hostname, port } = new URL(baseUrl);
  const chunk = Buffer.alloc(1024 * 1024, 0x61);
  return new Promise((resolve, reject) => {
    let written = 0;
    let answered = false;
    const req = request({ hostname, port, path, method: 'POST', headers: { Authorization: `Bearer ${TEST_TOKEN}`, 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' } });
    req.on('response', (res: IncomingMessage) => {
      answered = true;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, written, body });
      });
    });
    // The server closes the connection after its 413; writes after that fail, which is expected.
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    const pump = (): void => {
      while (!answered && written < chunks) {
        written++;
        if (!req.write(chunk)) {
          req.once('drain', pump);
          return;
        }
      }
      if (!answered) req.end();
    };
    pump();
  });
}

describe('agent limits under attack', () => {
  let fx: ServerFixture | undefined;
  afterEach(async () => {
    await fx?.close();
    fx = undefined;
  });

  it('answers a 100 MB body 413 while it streams, without holding it', async () => {
    fx = await startServer();
    global.gc?.();
    const before = process.memoryUsage();

    const res = await postStreamed(fx.baseUrl, '/api/v1/unmount', 100);
    const after = process.memoryUsage();

    expect(res.status).toBe(413);
    expect(JSON.parse(res.body)).toMatchObject({ error: { code: 'payload-too-large' } });
    expect(res.written).toBeLessThan(100); // the connection ended before the whole body was sent
    expect(after.heapUsed - before.heapUsed).toBeLessThan(20 * 1024 * 1024);
    expect(after.rss - before.rss).toBeLessThan(60 * 1024 * 1024);
  });

  it('caps 1,000 event streams of one caller: beyond the cap 503 with Retry-After, the open ones unaffected', async () => {
    fx = await startServer({ server: { maxEventStreamsPerCaller: 50, maxEventStreams: 100 } });
    const { hostname, port } = new URL(fx.baseUrl);
    const open: IncomingMessage[] = [];

    const statuses = await Promise.all(
      Array.from(
        { length: 1000 },
        () =>
          new Promise<{ status: number; retryAfter: string | undefined }>((resolve, reject) => {
            const req = request({ hostname, port, path: '/api/v1/events', headers: { Authorization: `Bearer ${TEST_TOKEN}` }, agent: false });
            req.on('response', (res) => {
              if (res.statusCode === 200) open.push(res);
              else res.resume();
              resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] });
            });
            req.on('error', reject);
            req.end();
          }),
      ),
    );

    expect(statuses.filter((s) => s.status === 200)).toHaveLength(50);
    expect(statuses.filter((s) => s.status === 503)).toHaveLength(950);
    expect(statuses.find((s) => s.status === 503)?.retryAfter).toBe('10');
    for (const res of open) res.destroy();
  });
});
