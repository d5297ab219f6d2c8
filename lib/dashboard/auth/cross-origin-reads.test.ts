import { NextRequest } from 'next/server';
import { describe, expect, it } from 'vitest';
import { crossOriginDecision, isCorsOriginsConfigError, isCrossOriginReadPath, parseCorsOrigins } from './cross-origin-reads.ts';
import { gateRequest } from './request-gate.ts';
import { SESSION_COOKIE, sealSession, sessionKey } from './session.ts';

const HEADLAMP = 'https://headlamp.example.com';
const ALLOWED = [HEADLAMP];

function headers(h: Record<string, string>): Headers {
  return new Headers(h);
}

describe('VOLUMESCOPE_CORS_ORIGINS', () => {
  it('takes exact origins, comma-separated, and nothing when unset', () => {
    expect(parseCorsOrigins(undefined)).toEqual([]);
    expect(parseCorsOrigins(' ')).toEqual([]);
    expect(parseCorsOrigins('https://headlamp.example.com, http://localhost:4466,https://headlamp.example.com')).toEqual(['https://headlamp.example.com', 'http://localhost:4466']);
  });

  it('refuses wildcards, paths, trailing slashes, other schemes and non-origins, naming the entry', () => {
    for (const bad of ['*', 'https://*.example.com', 'https://headlamp.example.com/', 'https://headlamp.example.com/x', 'HTTPS://Headlamp.example.com', 'https://headlamp.example.com:443', 'file://x', 'null', 'headlamp.example.com']) {
      let caught: unknown = null;
      try {
        parseCorsOrigins(`https://ok.example.com,${bad}`);
      } catch (err) {
        caught = err;
      }
      expect(isCorsOriginsConfigError(caught), bad).toBe(true);
      expect((caught as Error).message, bad).toContain(`VOLUMESCOPE_CORS_ORIGINS: ${JSON.stringify(bad)}`);
    }
  });
});

describe('which requests get CORS headers', () => {
  it('only the read-only snapshot and summary routes', () => {
    expect(isCrossOriginReadPath('/api/agents/node-a/snapshot')).toBe(true);
    expect(isCrossOriginReadPath('/api/agents/summary')).toBe(true);
    for (const p of ['/api/agents', '/api/agents/node-a/events', '/api/agents/node-a/resync', '/api/agents/node-a/operations/retry', '/api/agents/a/b/snapshot', '/nodes/a', '/api/auth/session']) {
      expect(isCrossOriginReadPath(p), p).toBe(false);
    }
  });

  it('a GET or HEAD from a listed origin: the origin echoed exactly, credentials allowed, Vary: Origin', () => {
    for (const method of ['GET', 'HEAD']) {
      expect(crossOriginDecision(method, '/api/agents/node-a/snapshot', headers({ origin: HEADLAMP }), ALLOWED)).toEqual({
        kind: 'read',
        headers: { 'Access-Control-Allow-Origin': HEADLAMP, 'Access-Control-Allow-Credentials': 'true', Vary: 'Origin' },
      });
    }
  });

  it('nothing for an unlisted origin (including a sibling, another port or scheme), no origin, or another route', () => {
    for (const origin of ['https://evil.example.com', 'https://headlamp.example.com:8443', 'http://headlamp.example.com', 'null']) {
      expect(crossOriginDecision('GET', '/api/agents/summary', headers({ origin }), ALLOWED).kind, origin).toBe('none');
    }
    expect(crossOriginDecision('GET', '/api/agents/summary', headers({}), ALLOWED).kind).toBe('none');
    expect(crossOriginDecision('GET', '/api/agents/node-a/events', headers({ origin: HEADLAMP }), ALLOWED).kind).toBe('none');
    expect(crossOriginDecision('GET', '/api/agents/summary', headers({ origin: HEADLAMP }), []).kind).toBe('none');
  });

  it('never for actions: a POST and a preflight asking for POST get nothing', () => {
    expect(crossOriginDecision('POST', '/api/agents/node-a/snapshot', headers({ origin: HEADLAMP }), ALLOWED).kind).toBe('none');
    expect(crossOriginDecision('OPTIONS', '/api/agents/node-a/resync', headers({ origin: HEADLAMP, 'access-control-request-method': 'POST' }), ALLOWED).kind).toBe('none');
    expect(crossOriginDecision('OPTIONS', '/api/agents/node-a/snapshot', headers({ origin: HEADLAMP, 'access-control-request-method': 'POST' }), ALLOWED).kind).toBe('none');
    expect(crossOriginDecision('OPTIONS', '/api/agents/node-a/snapshot', headers({ origin: HEADLAMP }), ALLOWED).kind).toBe('none');
  });

  it('a preflight for a read is granted with GET/HEAD only; one asking for a custom header (the CSRF header) is not', () => {
    const d = crossOriginDecision('OPTIONS', '/api/agents/node-a/snapshot', headers({ origin: HEADLAMP, 'access-control-request-method': 'GET', 'access-control-request-headers': 'Accept' }), ALLOWED);
    expect(d).toEqual({
      kind: 'preflight',
      headers: {
        'Access-Control-Allow-Origin': HEADLAMP,
        'Access-Control-Allow-Credentials': 'true',
        'Access-Control-Allow-Methods': 'GET, HEAD',
        'Access-Control-Allow-Headers': 'accept',
        'Access-Control-Max-Age': '600',
        Vary: 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers',
      },
    });
    expect(crossOriginDecision('OPTIONS', '/api/agents/node-a/snapshot', headers({ origin: HEADLAMP, 'access-control-request-method': 'GET', 'access-control-request-headers': 'x-volumescope-request' }), ALLOWED).kind).toBe('none');
  });
});

describe('in the request gate', () => {
  const SECRET = 'cors-test-secret-0123456789abcdefghij';
  const NOW = 1_800_000_000;
  const ENV = { VOLUMESCOPE_SESSION_SECRET: SECRET, VOLUMESCOPE_PUBLIC_URL: 'https://volumescope.example.com', VOLUMESCOPE_CORS_ORIGINS: HEADLAMP };
  const req = (path: string, method: string, h: Record<string, string>) => new NextRequest(`https://volumescope.example.com${path}`, { method, headers: { host: 'volumescope.example.com', ...h } });
  const cookie = async () => `${SESSION_COOKIE}=${await sealSession({ kind: 'token', username: 'alice', groups: [], token: 'alice-token', expiresAt: NOW + 600 }, sessionKey(SECRET))}`;

  it('answers the preflight itself (no cookie comes with it) and passes a credentialed read with the headers', async () => {
    const pre = await gateRequest(req('/api/agents/node-a/snapshot', 'OPTIONS', { origin: HEADLAMP, 'access-control-request-method': 'GET' }), ENV, NOW);
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe(HEADLAMP);
    const read = await gateRequest(req('/api/agents/node-a/snapshot', 'GET', { origin: HEADLAMP, cookie: await cookie() }), ENV, NOW);
    expect(read.headers.get('x-middleware-next')).toBe('1');
    expect(read.headers.get('access-control-allow-origin')).toBe(HEADLAMP);
    expect(read.headers.get('access-control-allow-credentials')).toBe('true');
    expect(read.headers.get('vary')).toContain('Origin');
  });

  it('a read without a session is a 401 the listed page can read (to say "log in to VolumeScope")', async () => {
    const res = await gateRequest(req('/api/agents/summary', 'GET', { origin: HEADLAMP }), ENV, NOW);
    expect(res.status).toBe(401);
    expect(res.headers.get('access-control-allow-origin')).toBe(HEADLAMP);
  });

  it('an action from the listed origin gets no CORS header and is refused by the CSRF check', async () => {
    const res = await gateRequest(req('/api/agents/node-a/resync', 'POST', { origin: HEADLAMP, cookie: await cookie(), 'x-volumescope-request': '1' }), ENV, NOW);
    expect(res.status).toBe(403);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('an unlisted origin: no headers, and its preflight is not answered', async () => {
    const read = await gateRequest(req('/api/agents/node-a/snapshot', 'GET', { origin: 'https://evil.example.com', cookie: await cookie() }), ENV, NOW);
    expect(read.headers.get('access-control-allow-origin')).toBeNull();
    const pre = await gateRequest(req('/api/agents/node-a/snapshot', 'OPTIONS', { origin: 'https://evil.example.com', 'access-control-request-method': 'GET' }), ENV, NOW);
    expect(pre.status).not.toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('a malformed VOLUMESCOPE_CORS_ORIGINS answers 500 naming the entry', async () => {
    const res = await gateRequest(req('/api/agents/summary', 'GET', {}), { ...ENV, VOLUMESCOPE_CORS_ORIGINS: 'https://*.example.com' }, NOW);
    expect(res.status).toBe(500);
    expect(await res.text()).toContain('https://*.example.com');
  });
});
