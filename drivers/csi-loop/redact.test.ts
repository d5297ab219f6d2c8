import { describe, expect, it } from 'vitest';
import { REDACTED, redactSecrets } from './redact.ts';

describe('redactSecrets', () => {
  it('replaces every value of every secrets map, at any depth, and keeps the keys', () => {
    const request = {
      volume_id: 'v1',
      secrets: { password: 'p4ss', token: 't0k' },
      nested: { list: [{ secrets: { key: 'inner' } }] },
      volume_context: { capacity: '64Mi' },
    };
    const redacted = redactSecrets(request);
    expect(redacted).toEqual({
      volume_id: 'v1',
      secrets: { password: REDACTED, token: REDACTED },
      nested: { list: [{ secrets: { key: REDACTED } }] },
      volume_context: { capacity: '64Mi' },
    });
    expect(JSON.stringify(redacted)).not.toMatch(/p4ss|t0k|inner/);
    // The input is left untouched.
    expect(request.secrets.password).toBe('p4ss');
  });

  it.each([null, 'text', 42, true])('passes %j through unchanged', (value) => {
    expect(redactSecrets(value)).toBe(value);
  });
});
