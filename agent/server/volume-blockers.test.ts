/** `GET /api/v1/volumes/blockers` over real HTTP: the query's validation, the runtime's refusals, the answer. */
import { afterEach, describe, expect, it } from 'vitest';
import type { BlockersQuery, BlockersResponse } from '../../lib/api/mount-health.ts';
import { ApiErrorBodySchema } from '../../lib/api/api-error.ts';
import { BlockersResponseSchema } from '../../lib/api/mount-health.ts';
import { BlockersTargetError } from '../runtime.ts';
import { startServer, type ServerFixture } from './testing/server-fixture.ts';

describe('GET /api/v1/volumes/blockers', () => {
  let fx: ServerFixture | undefined;
  afterEach(async () => {
    await fx?.close();
    fx = undefined;
  });

  const answer: BlockersResponse = {
    volume: 'v1',
    podUid: 'u1',
    path: '/r/pods/u1/volumes/x/v1',
    holders: [{ pid: 42, command: 'sleep 600', kind: 'cwd', path: '/r/pods/u1/volumes/x/v1', container: null }],
    truncated: false,
    incomplete: null,
    processesScanned: 7,
    checkedAt: 1,
    durationMs: 2,
  };

  it('needs the token, and answers 404 when the agent has no search', async () => {
    fx = await startServer();
    expect((await fx.client.get('/api/v1/volumes/blockers?volume=v1', { token: null })).status).toBe(401);
    expect((await fx.client.get('/api/v1/volumes/blockers?volume=v1')).status).toBe(404);
  });

  it('passes the query on and answers with the report', async () => {
    fx = await startServer();
    const asked: BlockersQuery[] = [];
    fx.runtime.findBlockers = (query) => {
      asked.push(query);
      return Promise.resolve(answer);
    };

    const res = await fx.client.get('/api/v1/volumes/blockers?volume=v1&podUid=u1');

    expect(res.status).toBe(200);
    expect(BlockersResponseSchema.parse(res.json)).toEqual(answer);
    expect(asked).toEqual([{ volume: 'v1', podUid: 'u1' }]);
  });

  it.each([
    ['/api/v1/volumes/blockers', 'volume', 'volume: required'],
    ['/api/v1/volumes/blockers?volume=', 'volume', 'volume: must not be empty'],
    ['/api/v1/volumes/blockers?volume=v1&podUid=', 'podUid', 'podUid: must not be empty'],
  ])('%s is a 400 naming %s', async (path, field, message) => {
    fx = await startServer();
    fx.runtime.findBlockers = () => Promise.resolve(answer);

    const res = await fx.client.get(path);

    expect(res.status).toBe(400);
    expect(ApiErrorBodySchema.parse(res.json).error).toMatchObject({ code: 'bad-request', field, message });
  });

  it('maps the runtime refusals: unknown volume 404, a path outside the root dir 400', async () => {
    fx = await startServer();
    let refusal = new BlockersTargetError('not-found', 'volume "v9" is not in the actual state');
    fx.runtime.findBlockers = () => Promise.reject(refusal);

    const missing = await fx.client.get('/api/v1/volumes/blockers?volume=v9');
    refusal = new BlockersTargetError('outside-root-dir', 'the path "/etc" is outside the agent\'s root dir /r');
    const outside = await fx.client.get('/api/v1/volumes/blockers?volume=v9&podUid=u1');

    expect(missing.status).toBe(404);
    expect(ApiErrorBodySchema.parse(missing.json).error.message).toBe('volume "v9" is not in the actual state');
    expect(outside.status).toBe(400);
    expect(ApiErrorBodySchema.parse(outside.json).error).toMatchObject({ field: 'podUid', message: 'the path "/etc" is outside the agent\'s root dir /r' });
  });
});
