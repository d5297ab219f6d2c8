import { describe, expect, it } from 'vitest';
import { allowedHosts, csrfRefusal, isAllowedHost, isAllowedHostsConfigError, isSafeMethod, REQUEST_HEADER } from './request-guard.ts';

function headers(values: Record<string, string>): { get(name: string): string | null } {
  return { get: (name) => values[name.toLowerCase()] ?? null };
}

describe('host allow-list', () => {
  const defaults = allowedHosts(undefined, null);

  it.each(['localhost', 'localhost:3000', '127.0.0.1:43123', '[::1]:3000', 'LOCALHOST:3000'])('allows the loopback name %s by default', (host) => {
    expect(isAllowedHost(host, defaults)).toBe(true);
  });

  it.each(['evil.example', 'evil.example:3000', '10.0.0.5:3000', 'localhost.evil.example', '127.0.0.2', '', 'a b'])('refuses %j by default (a rebinding name, another address)', (host) => {
    expect(isAllowedHost(host, defaults)).toBe(false);
  });

  it('refuses a request without Host', () => {
    expect(isAllowedHost(null, defaults)).toBe(false);
  });

  it('adds the public URL host, with its port when it has one', () => {
    const list = allowedHosts('', 'https://ops.example.com:8443/volumescope');
    expect(isAllowedHost('ops.example.com:8443', list)).toBe(true);
    expect(isAllowedHost('ops.example.com:9000', list)).toBe(false);
    expect(isAllowedHost('localhost:3000', list)).toBe(true);
    expect(isAllowedHost('ops.example.com', allowedHosts(undefined, 'https://ops.example.com'))).toBe(true);
  });

  it('VOLUMESCOPE_ALLOWED_HOSTS replaces the default', () => {
    const list = allowedHosts('volumescope.internal, dash.example.com:443', 'https://ops.example.com');
    expect(isAllowedHost('volumescope.internal:3000', list)).toBe(true);
    expect(isAllowedHost('dash.example.com:443', list)).toBe(true);
    expect(isAllowedHost('dash.example.com', list)).toBe(false);
    expect(isAllowedHost('localhost:3000', list)).toBe(false);
    expect(isAllowedHost('ops.example.com', list)).toBe(false);
  });

  it('names a malformed entry', () => {
    let err: unknown;
    try {
      allowedHosts('ok.example,http://bad.example', null);
    } catch (e) {
      err = e;
    }
    expect(isAllowedHostsConfigError(err)).toBe(true);
    expect(String(err)).toContain('http://bad.example');
  });
});

describe('CSRF check of state-changing requests', () => {
  const good = { host: 'localhost:3000', origin: 'http://localhost:3000', 'sec-fetch-site': 'same-origin', [REQUEST_HEADER]: '1' };

  it('passes the dashboard’s own fetch', () => {
    expect(csrfRefusal(headers(good))).toBeNull();
    const { 'sec-fetch-site': _site, ...withoutFetchMetadata } = good;
    expect(csrfRefusal(headers(withoutFetchMetadata))).toBeNull(); // older browsers send no Sec-Fetch-Site
  });

  it('refuses a POST without Origin (curl, or a client hiding it)', () => {
    const { origin: _origin, ...rest } = good;
    expect(csrfRefusal(headers(rest))).toBe('the request has no Origin header');
    expect(csrfRefusal(headers({ ...good, origin: 'null' }))).toBe('the request has no Origin header');
  });

  it('refuses another origin, and a cross-site form post', () => {
    expect(csrfRefusal(headers({ ...good, origin: 'http://evil.example' }))).toBe('the Origin is not this dashboard');
    expect(csrfRefusal(headers({ host: 'localhost:3000', origin: 'http://evil.example', 'sec-fetch-site': 'cross-site', 'content-type': 'application/x-www-form-urlencoded' }))).not.toBeNull();
    expect(csrfRefusal(headers({ ...good, 'sec-fetch-site': 'same-site' }))).toBe('Sec-Fetch-Site is same-site');
    expect(csrfRefusal(headers({ ...good, origin: 'not a url' }))).toBe('the Origin header is not a URL');
  });

  it('refuses a same-origin request without the custom header (a plain form, a simple fetch)', () => {
    const { [REQUEST_HEADER]: _h, ...rest } = good;
    expect(csrfRefusal(headers(rest))).toBe(`the ${REQUEST_HEADER} header is missing`);
    expect(csrfRefusal(headers({ ...good, [REQUEST_HEADER]: '0' }))).not.toBeNull();
  });

  it('knows which methods change nothing', () => {
    expect(['GET', 'head', 'OPTIONS'].every(isSafeMethod)).toBe(true);
    expect(['POST', 'PUT', 'DELETE', 'PATCH'].some(isSafeMethod)).toBe(false);
  });
});
