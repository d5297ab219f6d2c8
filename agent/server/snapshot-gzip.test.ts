import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { acceptsGzip } from './http-response.ts';
import { mountPod1, startServer, TEST_TOKEN, type ServerFixture } from './testing/server-fixture.ts';

/** A raw GET (no automatic decompression), returning headers and body bytes. */
function rawGet(url: string, headers: Record<string, string>): Promise<{ headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        resolve({ headers: res.headers, body: Buffer.concat(chunks) });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('GET /api/v1/snapshot compression', () => {
  let fixture: ServerFixture | undefined;
  afterEach(async () => {
    await fixture?.close();
    fixture = undefined;
  });

  it('serves the same snapshot gzip-compressed to clients that accept gzip, and plain to the others', async () => {
    // Arrange
    fixture = await startServer();
    await mountPod1(fixture);
    const url = `${fixture.baseUrl}/api/v1/snapshot`;
    const auth = { authorization: `Bearer ${TEST_TOKEN}` };

    // Act
    const plain = await rawGet(url, auth);
    const gzipped = await rawGet(url, { ...auth, 'accept-encoding': 'gzip, deflate, br' });

    // Assert
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(gzipped.headers.vary).toBe('Accept-Encoding');
    expect(gunzipSync(gzipped.body).toString('utf8')).toBe(plain.body.toString('utf8'));
    expect(JSON.parse(plain.body.toString('utf8'))).toMatchObject({ nodeName: 'mynodename' });
  });

  it.each([
    { header: undefined, want: false },
    { header: 'gzip', want: true },
    { header: 'br, gzip;q=0.8', want: true },
    { header: 'gzip;q=0', want: false },
    { header: 'identity', want: false },
    { header: '*', want: true },
  ])('acceptsGzip($header) is $want', ({ header, want }) => {
    expect(acceptsGzip(header)).toBe(want);
  });
});
