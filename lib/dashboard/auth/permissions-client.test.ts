import { describe, expect, it } from 'vitest';
import { credentialKey } from './agent-credential.ts';
import { safeNextPath } from './login-routes.ts';
import { withPermission } from './permissions-client.ts';

describe('action availability with permissions', () => {
  const allowed = { allowed: true } as const;

  it('a viewer (no update) is refused with the reason', () => {
    expect(withPermission(allowed, { user: 'viewer', get: true, update: false, reason: 'viewer may not update nodes/volumemanager of n1' })).toEqual({
      allowed: false,
      reason: 'viewer may not update nodes/volumemanager of n1',
    });
  });

  it('an operator keeps the action’s own availability; unknown permissions change nothing', () => {
    const own = { allowed: false, reason: 'not synced yet' } as const;
    expect(withPermission(own, { user: 'op', get: true, update: true, reason: null })).toBe(own);
    expect(withPermission(allowed, null)).toBe(allowed);
  });
});

describe('helpers', () => {
  it.each([
    ['/nodes/a', '/nodes/a'],
    ['//evil.example/x', '/'],
    ['/\\evil.example', '/'],
    ['https://evil.example', '/'],
    [null, '/'],
  ])('after login, %j goes to %j', (raw, path) => {
    expect(safeNextPath(raw)).toBe(path);
  });

  it('shares state per credential, never keyed by the raw token', () => {
    const a = credentialKey({ kind: 'token', username: 'a', groups: [], token: 'token-a', expiresAt: 1 });
    const b = credentialKey({ kind: 'oidc', username: 'a', groups: [], token: 'token-b', expiresAt: 1 });
    expect(a).not.toBe(b);
    expect(a).not.toContain('token-a');
    expect(credentialKey({ kind: 'local', username: 'l', groups: [], expiresAt: 1 })).toBe('local');
  });
});
