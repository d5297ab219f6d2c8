import * as clientNode from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeApiServer } from '../sources/kube/testing/fake-apiserver.ts';
import { fakeKubeConfig } from '../sources/kube/testing/kubeconfig-file.ts';
import { KubeApiRequestError, KubeRequestTimeoutError, apiErrorStatus, describeApiError, isApiGone, isApiNotFound, isConnectionRefused, isKubeApiRequestError, isKubeRequestTimeoutError, isRequestTimeout } from './index.ts';

let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** undici's transport failure: `TypeError: fetch failed` with the errno on its cause. */
function fetchFailed(code: string): TypeError {
  return new TypeError('fetch failed', { cause: Object.assign(new Error(`connect ${code} 127.0.0.1:1`), { code }) });
}

describe('API error classification', () => {
  it.each<{ name: string; err: unknown; expected: { status: number | undefined; message: string }; gone: boolean }>([
    {
      name: 'an ApiException with a Status body as JSON text',
      err: Object.assign(new Error('HTTP-Code: 403'), { code: 403, body: '{"kind":"Status","message":"pods is forbidden: no"}' }),
      expected: { status: 403, message: 'HTTP 403 Forbidden: pods is forbidden: no' },
      gone: false,
    },
    {
      name: 'a watch failure with a statusCode',
      err: Object.assign(new Error('Gone'), { statusCode: 410 }),
      expected: { status: 410, message: 'HTTP 410 Gone' },
      gone: true,
    },
    {
      name: 'a status without a text of its own',
      err: { code: 418, body: { message: 'short and stout' } },
      expected: { status: 418, message: 'HTTP 418: short and stout' },
      gone: false,
    },
    {
      name: 'connection refused',
      err: fetchFailed('ECONNREFUSED'),
      expected: { status: undefined, message: 'fetch failed (ECONNREFUSED)' },
      gone: false,
    },
    {
      name: 'a fetch timeout',
      err: new DOMException('The operation was aborted due to timeout', 'TimeoutError'),
      expected: { status: undefined, message: 'TimeoutError: The operation was aborted due to timeout' },
      gone: false,
    },
    {
      name: 'a missed deadline',
      err: new KubeRequestTimeoutError('LIST /api/v1/pods timed out after 100 ms'),
      expected: { status: undefined, message: 'LIST /api/v1/pods timed out after 100 ms' },
      gone: false,
    },
    {
      name: 'something that is not an Error',
      err: 'boom\nsecond line',
      expected: { status: undefined, message: 'boom' },
      gone: false,
    },
  ])('describes $name', ({ err, expected, gone }) => {
    expect(describeApiError(err)).toEqual(expected);
    expect(apiErrorStatus(err)).toBe(expected.status);
    expect(isApiGone(err)).toBe(gone);
  });

  it.each<{ name: string; err: unknown; refused: boolean; timeout: boolean }>([
    { name: 'connection refused', err: fetchFailed('ECONNREFUSED'), refused: true, timeout: false },
    { name: 'connection reset', err: fetchFailed('ECONNRESET'), refused: false, timeout: false },
    { name: 'a fetch TimeoutError', err: new DOMException('timed out', 'TimeoutError'), refused: false, timeout: true },
    { name: 'our deadline', err: new KubeRequestTimeoutError('GET x timed out after 5 ms'), refused: false, timeout: true },
    { name: 'an HTTP 504', err: { code: 504 }, refused: false, timeout: false },
  ])('classifies $name', ({ err, refused, timeout }) => {
    expect(isConnectionRefused(err)).toBe(refused);
    expect(isRequestTimeout(err)).toBe(timeout);
  });

  it('a deadline error is a request error without a status; the status of a request error is its own', () => {
    const timeout = new KubeRequestTimeoutError('GET x timed out after 5 ms');
    expect([isKubeApiRequestError(timeout), isKubeRequestTimeoutError(timeout), timeout.status]).toEqual([true, true, undefined]);

    const gone = new KubeApiRequestError('watch failed', 410, undefined);
    expect([isApiGone(gone), isApiNotFound(gone), isKubeRequestTimeoutError(gone)]).toEqual([true, false, false]);
  });

  it('reads what the real client throws: a 404 of a GET, and a refused connection', async () => {
    const api = await FakeApiServer.start({ token: 't' });
    cleanups.push(() => api.close());
    const core = fakeKubeConfig({ server: api.url, token: 't' }).makeApiClient(clientNode.CoreV1Api);

    const missing: unknown = await core.readNamespacedSecret({ namespace: 'default', name: 'nope' }).then(() => null, (err: unknown) => err);
    expect(isApiNotFound(missing)).toBe(true);
    expect(describeApiError(missing).message).toBe('HTTP 404 Not Found: secrets "nope" not found');

    await api.stop();
    const refused: unknown = await core.readNamespacedSecret({ namespace: 'default', name: 'nope' }).then(() => null, (err: unknown) => err);
    expect(isConnectionRefused(refused)).toBe(true);
    expect(describeApiError(refused)).toMatchObject({ status: undefined, message: expect.stringContaining('ECONNREFUSED') as string });
  });
});
