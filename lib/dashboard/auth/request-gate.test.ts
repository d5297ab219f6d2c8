import { NextRequest } from 'next/server';
import { describe, expect, it } from 'vitest';
import { gateRequest } from './request-gate.ts';
import { SESSION_COOKIE, sealSession, sessionKey } from './session.ts';

const SECRET = 'gate-test-secret-0123456789abcdefghij';
const NOW = 1_800_000_000;
const LOCAL_DEMO = { VOLUMESCOPE_SESSION_SECRET: SECRET, VOLUMESCOPE_LISTEN_HOST: '127.0.0.1' };
const CLUSTER = { VOLUMESCOPE_SESSION_SECRET: SECRET, VOLUMESCOPE_PUBLIC_URL: 'https://ops.example.com' };

function request(url: string, init: { method?: string; headers?: Record<string, string> } = {}): NextRequest {
  const u = new URL(url);
  return new NextRequest(url, { method: init.method ?? 'GET', headers: { host: u.host, ...init.headers } });
}

/** Whether the gate let the request through to the page or route (`NextResponse.next()`). */
function passed(res: Response): boolean {
  return res.headers.get('x-middleware-next') === '1';
}

async function userCookie(): Promise<string> {
  return `${SESSION_COOKIE}=${await sealSession({ kind: 'token', username: 'alice', groups: [], token: 'alice-token', expiresAt: NOW + 600 }, sessionKey(SECRET))}`;
}

describe('the request gate (proxy.ts)', () => {
  it('refuses a Host off the allow-list before anything else, for pages and API routes', async () => {
    for (const path of ['/', '/api/agents', '/login']) {
      const res = await gateRequest(request(`http://rebind.example:3000${path}`), LOCAL_DEMO, NOW);
      expect(res.status, path).toBe(403);
    }
    expect(passed(await gateRequest(request('https://ops.example.com/'), { ...CLUSTER }, NOW))).toBe(false); // allowed host, but no session: login
  });

  it('demo on loopback: a page without a cookie passes and gets the local session cookie (httpOnly, Strict)', async () => {
    const res = await gateRequest(request('http://127.0.0.1:3000/nodes/a'), LOCAL_DEMO, NOW);
    expect(passed(res)).toBe(true);
    const cookie = res.headers.get('set-cookie') ?? '';
    expect(cookie).toContain(`${SESSION_COOKIE}=`);
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Strict/i);
    expect(cookie).toMatch(/Max-Age=28800/i);
  });

  it('without a session in cluster mode: pages go to /login (with where they were), API routes get 401', async () => {
    const page = await gateRequest(request('https://ops.example.com/nodes/a?x=1'), CLUSTER, NOW);
    expect(page.status).toBe(303);
    expect(page.headers.get('location')).toBe('https://ops.example.com/login?next=%2Fnodes%2Fa%3Fx%3D1');
    const api = await gateRequest(request('https://ops.example.com/api/agents/a/snapshot'), CLUSTER, NOW);
    expect(api.status).toBe(401);
    expect(passed(await gateRequest(request('https://ops.example.com/login'), CLUSTER, NOW))).toBe(true);
    expect(passed(await gateRequest(request('https://ops.example.com/api/auth/session'), CLUSTER, NOW))).toBe(true);
  });

  it('a user session passes; the same cookie after it expired does not', async () => {
    const headers = { cookie: await userCookie() };
    expect(passed(await gateRequest(request('https://ops.example.com/api/agents/a/snapshot', { headers }), CLUSTER, NOW))).toBe(true);
    expect((await gateRequest(request('https://ops.example.com/api/agents/a/snapshot', { headers }), CLUSTER, NOW + 601)).status).toBe(401);
  });

  it('a POST needs Origin, the custom header and the session cookie; the login POST needs no session', async () => {
    const url = 'https://ops.example.com/api/agents/a/unmount';
    const good = { cookie: await userCookie(), origin: 'https://ops.example.com', 'sec-fetch-site': 'same-origin', 'x-volumescope-request': '1' };
    expect(passed(await gateRequest(request(url, { method: 'POST', headers: good }), CLUSTER, NOW))).toBe(true);
    const { origin: _o, ...noOrigin } = good;
    expect((await gateRequest(request(url, { method: 'POST', headers: noOrigin }), CLUSTER, NOW)).status).toBe(403);
    const { 'x-volumescope-request': _h, ...noHeader } = good;
    expect((await gateRequest(request(url, { method: 'POST', headers: noHeader }), CLUSTER, NOW)).status).toBe(403);
    expect((await gateRequest(request(url, { method: 'POST', headers: { ...good, 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' } }), CLUSTER, NOW)).status).toBe(403);
    const { cookie: _c, ...noCookie } = good;
    expect((await gateRequest(request(url, { method: 'POST', headers: noCookie }), CLUSTER, NOW)).status).toBe(401);
    expect(passed(await gateRequest(request('https://ops.example.com/api/auth/login', { method: 'POST', headers: noCookie }), CLUSTER, NOW))).toBe(true);
    expect((await gateRequest(request('https://ops.example.com/api/auth/login', { method: 'POST', headers: noOrigin }), CLUSTER, NOW)).status).toBe(403);
  });

  it('demo: a POST needs the local session cookie too (the first page sets it)', async () => {
    const url = 'http://127.0.0.1:3000/api/agents/a/resync';
    const headers = { origin: 'http://127.0.0.1:3000', 'x-volumescope-request': '1' };
    expect((await gateRequest(request(url, { method: 'POST', headers }), LOCAL_DEMO, NOW)).status).toBe(401);
    const first = await gateRequest(request('http://127.0.0.1:3000/'), LOCAL_DEMO, NOW);
    const cookie = (first.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    expect(passed(await gateRequest(request(url, { method: 'POST', headers: { ...headers, cookie } }), LOCAL_DEMO, NOW))).toBe(true);
  });
});
