import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HealthResponseSchema, ResyncResponseSchema } from '../../lib/api/actions.ts';
import { ApiErrorBodySchema } from '../../lib/api/api-error.ts';
import { MAX_REQUEST_BODY_BYTES } from '../../lib/api/request-body.ts';
import { parseSnapshot, safeParseSnapshot } from '../../lib/api/compact-snapshot.ts';
import { SnapshotSchema } from '../../lib/api/snapshot.ts';
import { STATIC_TOKEN_CALLER, staticTokenAuthenticator } from './authenticator.ts';
import { mountPod1, startServer, TEST_TOKEN, type ServerFixture } from './testing/server-fixture.ts';

describe('agent server HTTP', () => {
  let fx: ServerFixture | undefined;
  afterEach(async () => {
    await fx?.close();
    fx = undefined;
  });

  const start = async (): Promise<ServerFixture> => {
    fx = await startServer();
    return fx;
  };

  describe('authentication', () => {
    it.each<{ name: string; headers: Record<string, string> }>([
      { name: 'no Authorization header', headers: {} },
      { name: 'a wrong token', headers: { Authorization: 'Bearer wrong-token' } },
      { name: 'a token that is a prefix of the right one', headers: { Authorization: `Bearer ${TEST_TOKEN.slice(0, -1)}` } },
      { name: 'the right token with another scheme', headers: { Authorization: `Basic ${TEST_TOKEN}` } },
      { name: 'an empty bearer', headers: { Authorization: 'Bearer ' } },
    ])('answers 401 with WWW-Authenticate for $name', async ({ headers }) => {
      const { client } = await start();

      const res = await client.get('/api/v1/snapshot', { token: null, headers });

      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect(ApiErrorBodySchema.parse(res.json).error.code).toBe('unauthorized');
    });

    it('answers 401 before looking at the route, the method or the body', async () => {
      const { client } = await start();

      const unknown = await client.get('/api/v1/nothing-here', { token: null });
      const wrongMethod = await client.request('DELETE', '/api/v1/snapshot', { token: null });
      const badBody = await client.post('/api/v1/unmount', '{not json', { token: null });

      expect([unknown.status, wrongMethod.status, badBody.status]).toEqual([401, 401, 401]);
    });

    it('serves the snapshot with the right token and records the authenticated caller in the audit', async () => {
      const { client } = await start();

      const res = await client.get('/api/v1/snapshot');
      await client.post('/api/v1/resync', '');
      const after = parseSnapshot((await client.get('/api/v1/snapshot')).json);

      expect(res.status).toBe(200);
      expect(safeParseSnapshot(res.json).success).toBe(true);
      expect(after.audit.map((a) => [a.caller, a.action, a.result])).toEqual([['test-client', 'resync', 'succeeded']]);
    });
  });

  describe('snapshot encoding', () => {
    it('serves compact/v2 by default, the full form with ?encoding=full (same state), and 400 naming encoding for other values', async () => {
      const { client } = await start();

      const compact = await client.get('/api/v1/snapshot');
      const full = await client.get('/api/v1/snapshot?encoding=full');
      const bad = await client.get('/api/v1/snapshot?encoding=xml');
      const badStream = await client.get('/api/v1/events?encoding=xml');

      expect(compact.json).toMatchObject({ encoding: 'compact/v2' });
      expect(full.json).not.toHaveProperty('encoding');
      expect(parseSnapshot(compact.json)).toStrictEqual(SnapshotSchema.parse(full.json));
      expect([bad.status, badStream.status]).toEqual([400, 400]);
      expect(bad.json).toMatchObject({ error: { code: 'bad-request', field: 'encoding' } });
    });
  });

  describe('audit caller and persistence', () => {
    it('records the unnamed static token as its service identity, never the socket address', async () => {
      fx = await startServer({ authenticator: staticTokenAuthenticator(TEST_TOKEN) });

      await fx.client.post('/api/v1/resync', '');
      const snapshot = parseSnapshot((await fx.client.get('/api/v1/snapshot')).json);

      expect(snapshot.audit.map((a) => a.caller)).toEqual([STATIC_TOKEN_CALLER]);
      expect(snapshot.audit[0]?.caller).not.toMatch(/127\.0\.0\.1|::1|:\d+$/);
    });

    it('keeps the audit log across a restart of the server, in <state dir>/audit.jsonl', async () => {
      const stateDir = join(mkdtempSync(join(tmpdir(), 'agent-state-')), 'volumescope');
      try {
        const first = await startServer({ server: { stateDir } });
        await first.client.post('/api/v1/resync', '');
        await first.close();

        fx = await startServer({ server: { stateDir } });
        const snapshot = parseSnapshot((await fx.client.get('/api/v1/snapshot')).json);

        expect(snapshot.audit.map((a) => [a.caller, a.action, a.result])).toEqual([['test-client', 'resync', 'succeeded']]);
        expect(readFileSync(join(stateDir, 'audit.jsonl'), 'utf8').trimEnd().split('\n')).toHaveLength(1);
      } finally {
        rmSync(join(stateDir, '..'), { recursive: true, force: true });
      }
    });
  });

  describe('health', () => {
    it('answers /healthz without a token', async () => {
      const { client } = await start();

      const res = await client.get('/healthz', { token: null });

      expect(res.status).toBe(200);
      expect(HealthResponseSchema.parse(res.json)).toEqual({ status: 'ok' });
    });

    it('answers /readyz 503 until the states are synced, then 200, without a token', async () => {
      // Arrange
      const f = await start();

      // Act + Assert: nothing started yet
      const before = await f.client.get('/readyz', { token: null });
      expect(before.status).toBe(503);
      expect(ApiErrorBodySchema.parse(before.json).error).toEqual({ code: 'not-ready', message: 'desired and actual states are not synced yet' });

      // Act + Assert: the reconciler synced, but a pod source has not listed everything
      f.runtime.synced = false;
      await mountPod1(f);
      expect((await f.client.get('/readyz', { token: null })).status).toBe(503);

      // Act + Assert: everything synced
      f.runtime.synced = true;
      const after = await f.client.get('/readyz', { token: null });
      expect(after.status).toBe(200);
      expect(after.json).toEqual({ status: 'ok' });
    });
  });

  describe('bad input', () => {
    it.each([
      { name: 'a missing volume', path: '/api/v1/operations/retry', body: '{}', field: 'volume', message: 'volume: Required' },
      {
        name: 'a volume of the wrong type',
        path: '/api/v1/operations/retry',
        body: '{"volume": 7}',
        field: 'volume',
        message: 'volume: expected string, received number',
      },
      {
        name: 'an unknown field',
        path: '/api/v1/operations/retry',
        body: '{"volume": "v", "pod": "p"}',
        field: 'pod',
        message: 'pod: Unrecognized key: "pod"',
      },
      { name: 'a missing podUid on unmount', path: '/api/v1/unmount', body: '{"volume": "v"}', field: 'podUid', message: 'podUid: Required' },
      // A NUL is no kubelet identifier: the engine would refuse to build the name (a 500 before).
      { name: 'a NUL in the podUid of a retry', path: '/api/v1/operations/retry', body: '{"volume": "v", "podUid": "\\u0000"}', field: 'podUid', message: 'podUid: must not contain NUL' },
      { name: 'a NUL in the volume of an unmount', path: '/api/v1/unmount', body: '{"podUid": "p", "volume": "a\\u0000b"}', field: 'volume', message: 'volume: must not contain NUL' },
      { name: 'malformed JSON', path: '/api/v1/unmount', body: '{"podUid": ', field: 'body', message: null },
      { name: 'an empty body', path: '/api/v1/operations/retry', body: '', field: 'body', message: null },
      { name: 'a body that is not an object', path: '/api/v1/unmount', body: '[1]', field: 'body', message: 'body: expected object, received array' },
    ])('answers 400 naming the field for $name', async ({ path, body, field, message }) => {
      const { client } = await start();

      const res = await client.post(path, body);

      expect(res.status).toBe(400);
      const error = ApiErrorBodySchema.parse(res.json).error;
      expect(error.code).toBe('bad-request');
      expect(error.field).toBe(field);
      if (message !== null) expect(error.message).toBe(message);
      else expect(error.message).toMatch(/^body: malformed JSON/);
    });

    it('answers 400 for a body that is not UTF-8', async () => {
      const { baseUrl } = await start();

      const res = await fetch(`${baseUrl}/api/v1/unmount`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${TEST_TOKEN}` },
        body: new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]),
      });

      expect(res.status).toBe(400);
      expect(ApiErrorBodySchema.parse(await res.json()).error).toMatchObject({ code: 'bad-request', field: 'body' });
    });

    it('answers 413 for a body over 64 KiB and 400 (not 413) for one of exactly 64 KiB', async () => {
      const { client } = await start();
      const padded = (size: number): string => {
        const head = '{"volume":"';
        return `${head}${'x'.repeat(size - head.length - 2)}"}`;
      };

      const over = await client.post('/api/v1/operations/retry', padded(MAX_REQUEST_BODY_BYTES + 1));
      const exact = await client.post('/api/v1/operations/retry', padded(MAX_REQUEST_BODY_BYTES));

      expect(over.status).toBe(413);
      expect(ApiErrorBodySchema.parse(over.json).error.code).toBe('payload-too-large');
      // Within the limit the body is read: a 10 s window allows it, and no such operation exists.
      expect(exact.status).toBe(404);
    });

    it('answers 413 for a chunked body over 64 KiB without a Content-Length', async () => {
      const { baseUrl } = await start();
      const chunk = new TextEncoder().encode('x'.repeat(16 * 1024));
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < 5; i++) controller.enqueue(chunk);
          controller.close();
        },
      });

      const res = await fetch(`${baseUrl}/api/v1/unmount`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${TEST_TOKEN}` },
        body,
        duplex: 'half',
      } as RequestInit);

      expect(res.status).toBe(413);
    });

    it('answers 404 in the error shape for an unknown route', async () => {
      const { client } = await start();

      const res = await client.get('/api/v1/snapshots');

      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.json).toEqual({ error: { code: 'not-found', message: 'no route GET /api/v1/snapshots' } });
    });

    it.each([
      { method: 'POST', path: '/api/v1/snapshot', allow: 'GET' },
      { method: 'GET', path: '/api/v1/unmount', allow: 'POST' },
      { method: 'DELETE', path: '/api/v1/operations/retry', allow: 'POST' },
      { method: 'POST', path: '/healthz', allow: 'GET' },
      { method: 'PUT', path: '/metrics', allow: 'GET' },
    ])('answers 405 with Allow: $allow for $method $path', async ({ method, path, allow }) => {
      const { client } = await start();

      const res = await client.request(method, path);

      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe(allow);
      expect(ApiErrorBodySchema.parse(res.json).error.code).toBe('method-not-allowed');
    });

    it('ignores the query string when routing', async () => {
      const { client } = await start();

      const res = await client.get('/healthz?verbose=1', { token: null });

      expect(res.status).toBe(200);
    });
  });

  describe('resync', () => {
    it('runs the runtime pass and answers with its findings', async () => {
      const f = await start();
      await mountPod1(f);

      const res = await f.client.post('/api/v1/resync', '');

      expect(res.status).toBe(200);
      const body = ResyncResponseSchema.parse(res.json);
      expect(body.attachVerification).toMatchObject({ checked: 1, foundDetached: [] });
      expect(f.runtime.resyncs).toBe(1);
    });

    it('answers 500 and audits a failure when the pass throws', async () => {
      const f = await start();
      f.runtime.resyncError = new Error('mountinfo unreadable');

      const res = await f.client.post('/api/v1/resync', '');
      const snapshot = parseSnapshot((await f.client.get('/api/v1/snapshot')).json);

      expect(res.status).toBe(500);
      expect(ApiErrorBodySchema.parse(res.json).error).toEqual({ code: 'internal', message: 'resync failed: mountinfo unreadable' });
      expect(snapshot.audit).toMatchObject([{ action: 'resync', result: 'failed', message: 'resync failed: mountinfo unreadable', target: null }]);
    });
  });

  describe('logging', () => {
    it('logs one debug line per request and actions at info', async () => {
      const f = await start();

      await f.client.get('/healthz', { token: null });
      await f.client.post('/api/v1/resync', '');
      await f.server.close();

      const requests = f.runtime.logger.lines.filter((l) => l.msg === 'http request');
      expect(requests.map((l) => [l.level, l.fields['method'], l.fields['path'], l.fields['status']])).toEqual([
        ['debug', 'GET', '/healthz', 200],
        ['debug', 'POST', '/api/v1/resync', 200],
      ]);
      expect(f.runtime.logger.lines.filter((l) => l.level === 'info' && l.msg.startsWith('audit:')).map((l) => l.msg)).toEqual([
        'audit: resync succeeded',
      ]);
    });
  });

  describe('close', () => {
    it('closes the listening socket and can be called twice', async () => {
      const f = await start();

      await Promise.all([f.server.close(), f.server.close()]);

      await expect(fetch(`${f.baseUrl}/healthz`)).rejects.toThrow();
    });
  });
});
