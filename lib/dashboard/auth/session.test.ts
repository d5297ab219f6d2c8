import { describe, expect, it } from 'vitest';
import { sealClaims, sealSession, sessionKey, sessionView, unsealClaims, unsealSession, type Session } from './session.ts';

const KEY = sessionKey('a'.repeat(32));
const OTHER = sessionKey('b'.repeat(32));
const NOW = 1_800_000_000;
const SESSION: Session = { kind: 'token', username: 'system:serviceaccount:ops:alice', groups: ['system:authenticated'], token: 'eyJ.secret-token.sig', expiresAt: NOW + 3600 };

describe('session sealing', () => {
  it('round-trips a session, token included', async () => {
    expect(await unsealSession(await sealSession(SESSION, KEY), KEY, NOW)).toEqual(SESSION);
  });

  it('hides the token and the user: the cookie value contains neither', async () => {
    const sealed = await sealSession(SESSION, KEY);
    expect(sealed).not.toContain('secret-token');
    expect(Buffer.from(sealed.replace(/[-_]/g, (c) => (c === '-' ? '+' : '/')), 'base64').toString('latin1')).not.toContain('alice');
    expect(sealed.split('.')).toHaveLength(5); // compact JWE
  });

  it('refuses an expired session, at the second', async () => {
    const sealed = await sealSession(SESSION, KEY);
    expect(await unsealSession(sealed, KEY, NOW + 3599)).not.toBeNull();
    expect(await unsealSession(sealed, KEY, NOW + 3600)).toBeNull();
  });

  it('refuses another key, a changed byte, garbage and nothing', async () => {
    const sealed = await sealSession(SESSION, KEY);
    expect(await unsealSession(sealed, OTHER, NOW)).toBeNull();
    const parts = sealed.split('.');
    const cipher = parts[3] ?? '';
    parts[3] = `${cipher.slice(0, 5)}${cipher[5] === 'A' ? 'B' : 'A'}${cipher.slice(6)}`;
    expect(await unsealSession(parts.join('.'), KEY, NOW)).toBeNull();
    expect(await unsealSession('not-a-jwe', KEY, NOW)).toBeNull();
    expect(await unsealSession(undefined, KEY, NOW)).toBeNull();
    expect(await unsealSession('', KEY, NOW)).toBeNull();
  });

  it('refuses sealed claims that are not a session (e.g. an OIDC flow cookie)', async () => {
    const flow = await sealClaims({ v: 'verifier', s: 'state' }, NOW + 60, KEY);
    expect(await unsealClaims(flow, KEY, NOW)).toMatchObject({ v: 'verifier', s: 'state' });
    expect(await unsealSession(flow, KEY, NOW)).toBeNull();
  });

  it('keeps a local session without a token', async () => {
    const local: Session = { kind: 'local', username: 'volumescope:local', groups: [], expiresAt: NOW + 60 };
    const back = await unsealSession(await sealSession(local, KEY), KEY, NOW);
    expect(back).toEqual(local);
    expect(back && 'token' in back).toBe(false);
  });

  it('shows the browser no token', () => {
    expect(JSON.stringify(sessionView(SESSION))).not.toContain('secret-token');
  });

  it('needs a secret of at least 32 characters', () => {
    expect(() => sessionKey('short')).toThrow(RangeError);
    expect(sessionKey('x'.repeat(32))).toHaveLength(32);
  });
});
