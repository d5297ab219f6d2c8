import { afterEach, describe, expect, it, vi } from 'vitest';
import { currentSession, nowSeconds } from './server-session.ts';
import { SESSION_COOKIE, sealSession, sessionKey } from './session.ts';

const SECRET = 'server-session-test-secret-0123456789';

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('the session of a route handler’s request', () => {
  it('is read from the request’s cookie, also after the handler read the body', async () => {
    vi.stubEnv('VOLUMESCOPE_SESSION_SECRET', SECRET);
    vi.stubEnv('VOLUMESCOPE_LOCAL_SESSION', 'off');
    const sealed = await sealSession({ kind: 'token', username: 'alice', groups: ['ops'], token: 'alice-token', expiresAt: nowSeconds() + 60 }, sessionKey(SECRET));
    const req = new Request('http://dash.example/api/agents/a/unmount', { method: 'POST', headers: { cookie: `other=1; ${SESSION_COOKIE}=${sealed}` }, body: '{"podUid":"p"}' });
    expect(await req.text()).toBe('{"podUid":"p"}');
    expect(await currentSession(req)).toMatchObject({ kind: 'token', username: 'alice', token: 'alice-token' });
  });

  it('is null without a cookie when local sessions are off, and the local one when on', async () => {
    vi.stubEnv('VOLUMESCOPE_SESSION_SECRET', SECRET);
    vi.stubEnv('VOLUMESCOPE_LOCAL_SESSION', 'off');
    expect(await currentSession(new Request('http://dash.example/api/agents'))).toBeNull();
    vi.stubEnv('VOLUMESCOPE_LOCAL_SESSION', 'on');
    expect(await currentSession(new Request('http://dash.example/api/agents'))).toMatchObject({ kind: 'local' });
  });
});
