import { describe, expect, it } from 'vitest';
import { isFrameAncestorsError, parseFrameAncestors, securityHeaderRules } from './frame-ancestors.js';

describe('frame ancestors of embeds', () => {
  it.each([
    { name: 'unset is self', value: undefined, expected: "'self'" },
    { name: 'blank is self', value: '  ', expected: "'self'" },
    { name: 'origins separated by spaces or commas', value: 'https://wiki.example.com, https://runbooks.example.com:8443', expected: 'https://wiki.example.com https://runbooks.example.com:8443' },
    { name: 'bare keywords get their quotes', value: 'self https://wiki.example.com', expected: "'self' https://wiki.example.com" },
    { name: 'a wildcard subdomain and a scheme', value: 'https://*.example.com https:', expected: 'https://*.example.com https:' },
    { name: 'duplicates once', value: 'https://a.example https://a.example', expected: 'https://a.example' },
  ])('$name', ({ value, expected }) => {
    expect(parseFrameAncestors(value)).toBe(expected);
  });

  it.each([
    { name: 'another directive smuggled in', value: "https://a.example; script-src 'unsafe-inline'" },
    { name: 'a path', value: 'https://a.example/wiki' },
    { name: 'none with an origin', value: 'none https://a.example' },
  ])('$name is refused', ({ value }) => {
    let err: unknown;
    try {
      parseFrameAncestors(value);
    } catch (e) {
      err = e;
    }
    expect(isFrameAncestorsError(err)).toBe(true);
  });

  it('embeds may be framed by the allowed origins; every other page denies framing', () => {
    // Act
    const rules = securityHeaderRules('https://wiki.example.com');
    const header = (source: string, key: string) => rules.find((r) => r.source === source)?.headers.find((h) => h.key === key)?.value;

    // Assert
    expect(header('/embed/:path*', 'Content-Security-Policy')).toBe('frame-ancestors https://wiki.example.com');
    expect(header('/embed/:path*', 'X-Frame-Options')).toBeUndefined();
    expect(header('/:path((?!embed(?:/|$)).*)', 'Content-Security-Policy')).toBe("frame-ancestors 'none'");
    expect(header('/:path((?!embed(?:/|$)).*)', 'X-Frame-Options')).toBe('DENY');
  });

  it('the non-embed pattern matches every path but the embed ones', () => {
    const pattern = /^\/(?!embed(?:\/|$)).*$/;
    expect(['/', '/nodes/a', '/api/agents', '/embedded'].every((p) => pattern.test(p))).toBe(true);
    expect(['/embed', '/embed/nodes/a'].some((p) => pattern.test(p))).toBe(false);
  });
});
