import { describe, expect, it } from 'vitest';
import { PUBLIC_URL_ENV, isPublicUrlConfigError, parsePublicUrl, publicLink, publicUrlFromEnv } from './public-url.ts';

describe('VOLUMESCOPE_PUBLIC_URL', () => {
  it.each([
    [undefined, null],
    ['', null],
    ['   ', null],
    ['https://volumescope.example.com', 'https://volumescope.example.com'],
    ['https://volumescope.example.com/', 'https://volumescope.example.com'],
    ['http://10.0.0.7:3000', 'http://10.0.0.7:3000'],
    ['https://ops.example.com/tools/volumescope/', 'https://ops.example.com/tools/volumescope'],
    ['HTTPS://Ops.Example.com:443/vs', 'https://ops.example.com/vs'],
  ])('%j is the base %j (unset: the page’s own origin)', (value, base) => {
    expect(parsePublicUrl(value)).toBe(base);
  });

  it.each([
    ['volumescope.example.com', 'is not an absolute URL'],
    ['/volumescope', 'is not an absolute URL'],
    ['ftp://files.example.com', 'has the scheme ftp:'],
    ['javascript:alert(1)', 'has the scheme javascript:'],
    ['https://user:secret@vs.example.com', 'must not carry credentials'],
    ['https://vs.example.com/?x=1', 'must not have a query or fragment'],
    ['https://vs.example.com/#top', 'must not have a query or fragment'],
  ])('%j is refused with an error naming the variable', (value, reason) => {
    let caught: unknown = null;
    try {
      parsePublicUrl(value);
    } catch (err) {
      caught = err;
    }
    expect(isPublicUrlConfigError(caught)).toBe(true);
    const message = caught instanceof Error ? caught.message : '';
    expect(message.startsWith(`${PUBLIC_URL_ENV}="`)).toBe(true);
    expect(message).toContain(reason);
    // The message is shown on the pages: a password in the value never is.
    expect(message).not.toContain('secret');
  });

  it('the page setting carries the message instead of throwing', () => {
    expect(publicUrlFromEnv({ [PUBLIC_URL_ENV]: 'https://vs.example.com/' })).toEqual({ ok: true, base: 'https://vs.example.com' });
    expect(publicUrlFromEnv({})).toEqual({ ok: true, base: null });
    expect(publicUrlFromEnv({ [PUBLIC_URL_ENV]: 'vs.example.com' })).toEqual({
      ok: false,
      error: 'VOLUMESCOPE_PUBLIC_URL="vs.example.com" is not an absolute URL (expected http(s)://host[:port][/path])',
    });
  });

  it('links join the base and an app path with exactly one slash', () => {
    expect(publicLink('https://vs.example.com', '/nodes/node-a')).toBe('https://vs.example.com/nodes/node-a');
    expect(publicLink('https://vs.example.com/prefix/', '/nodes/node-a')).toBe('https://vs.example.com/prefix/nodes/node-a');
    expect(publicLink('https://vs.example.com/prefix', 'nodes/node-a')).toBe('https://vs.example.com/prefix/nodes/node-a');
  });
});
