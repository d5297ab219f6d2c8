import { describe, expect, it } from 'vitest';
import { describeFetchError } from './fetch-error.ts';

const noTimeout = (): null => null;

describe('describeFetchError', () => {
  it("prefers the timeout's own reason, then the socket error in cause, then the message", () => {
    const timeout = Object.assign(new Error('x'), { name: 'TimeoutError' });
    expect(describeFetchError(timeout, (e) => (e.name === 'TimeoutError' ? 'no answer in time' : null))).toBe('no answer in time');
    expect(describeFetchError(new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 127.0.0.1:1') }), noTimeout)).toBe('connect ECONNREFUSED 127.0.0.1:1');
    expect(describeFetchError(new TypeError('fetch failed', { cause: new Error('') }), noTimeout)).toBe('fetch failed');
    expect(describeFetchError('boom', noTimeout)).toBe('boom');
  });
});
