import { describe, expect, it } from 'vitest';
import { isAuthSettingsError, isLoopbackAddress, localSessionAllowed, parseAuthSettings, processSessionKey } from './auth-settings.ts';
import { resolveSession } from './session-resolver.ts';
import { sealSession, sessionKey } from './session.ts';

function settingsError(env: Record<string, string>): string {
  try {
    parseAuthSettings(env);
  } catch (err) {
    if (isAuthSettingsError(err)) return err.message;
    throw err;
  }
  return 'no error';
}

describe('login settings', () => {
  it('defaults: local session auto, 8 h, no OIDC', () => {
    expect(parseAuthSettings({})).toEqual({ localSession: 'auto', listenHost: null, sessionTtlSeconds: 28_800, oidc: null });
  });

  it('names the variable of a bad value', () => {
    expect(settingsError({ VOLUMESCOPE_LOCAL_SESSION: 'yes' })).toContain('VOLUMESCOPE_LOCAL_SESSION');
    expect(settingsError({ VOLUMESCOPE_SESSION_TTL: '10' })).toContain('VOLUMESCOPE_SESSION_TTL');
    expect(settingsError({ VOLUMESCOPE_SESSION_SECRET: 'short' })).toContain('VOLUMESCOPE_SESSION_SECRET');
    expect(settingsError({ VOLUMESCOPE_OIDC_ISSUER_URL: 'https://idp.example' })).toContain('VOLUMESCOPE_OIDC_CLIENT_ID');
    expect(settingsError({ VOLUMESCOPE_OIDC_ISSUER_URL: 'idp', VOLUMESCOPE_OIDC_CLIENT_ID: 'x' })).toContain('VOLUMESCOPE_OIDC_ISSUER_URL');
  });

  it('reads OIDC with its defaults', () => {
    expect(parseAuthSettings({ VOLUMESCOPE_OIDC_ISSUER_URL: 'https://idp.example', VOLUMESCOPE_OIDC_CLIENT_ID: 'volumescope' }).oidc).toEqual({
      issuerUrl: 'https://idp.example',
      clientId: 'volumescope',
      clientSecret: null,
      scopes: 'openid email profile',
      usernameClaim: 'email',
      groupsClaim: 'groups',
    });
  });

  it.each([
    ['127.0.0.1', true],
    ['::1', true],
    ['[::1]', true],
    ['localhost', true],
    ['0.0.0.0', false],
    ['::', false],
    ['10.0.0.5', false],
  ])('listening on %s is loopback-only: %s', (host, loopback) => {
    expect(isLoopbackAddress(host)).toBe(loopback);
  });
});

describe('the local session', () => {
  const onLoopback = parseAuthSettings({ VOLUMESCOPE_LISTEN_HOST: '127.0.0.1' });

  it('auto: only when listening on loopback, and only for loopback Host names', () => {
    expect(localSessionAllowed(onLoopback, '127.0.0.1:3000')).toBe(true);
    expect(localSessionAllowed(onLoopback, 'localhost:3000')).toBe(true);
    expect(localSessionAllowed(onLoopback, 'dash.example.com')).toBe(false);
    expect(localSessionAllowed(parseAuthSettings({ VOLUMESCOPE_LISTEN_HOST: '0.0.0.0' }), 'localhost:3000')).toBe(false);
    expect(localSessionAllowed(parseAuthSettings({}), 'localhost:3000')).toBe(false); // unknown address: not loopback
  });

  it('on: also on other addresses (configured explicitly); off: never', () => {
    expect(localSessionAllowed(parseAuthSettings({ VOLUMESCOPE_LISTEN_HOST: '0.0.0.0', VOLUMESCOPE_LOCAL_SESSION: 'on' }), '10.0.0.5:3000')).toBe(true);
    expect(localSessionAllowed(parseAuthSettings({ VOLUMESCOPE_LISTEN_HOST: '127.0.0.1', VOLUMESCOPE_LOCAL_SESSION: 'off' }), 'localhost:3000')).toBe(false);
  });

  it('a sealed session wins; a sealed local one ends once local sessions are refused', async () => {
    const key = sessionKey('k'.repeat(32));
    const now = 1_800_000_000;
    const token = await sealSession({ kind: 'token', username: 'alice', groups: [], token: 't', expiresAt: now + 60 }, key);
    const local = await sealSession({ kind: 'local', username: 'volumescope:local', groups: [], expiresAt: now + 60 }, key);
    const remote = parseAuthSettings({ VOLUMESCOPE_LISTEN_HOST: '0.0.0.0' });
    expect(await resolveSession({ cookie: token, host: 'dash.example.com' }, remote, key, now)).toMatchObject({ sealed: true, session: { username: 'alice' } });
    expect(await resolveSession({ cookie: local, host: 'dash.example.com' }, remote, key, now)).toBeNull();
    expect(await resolveSession({ cookie: undefined, host: 'localhost:3000' }, onLoopback, key, now)).toMatchObject({ sealed: false, session: { kind: 'local' } });
    expect(await resolveSession({ cookie: local, host: 'localhost:3000' }, onLoopback, key, now)).toMatchObject({ sealed: true, session: { kind: 'local' } });
  });

  it('one key per process without a secret; the secret’s key with one', () => {
    expect(processSessionKey({})).toBe(processSessionKey({}));
    expect(processSessionKey({ VOLUMESCOPE_SESSION_SECRET: 's'.repeat(40) })).toEqual(sessionKey('s'.repeat(40)));
  });
});
