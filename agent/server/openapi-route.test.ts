import { afterEach, describe, expect, it } from 'vitest';
import { ApiErrorBodySchema } from '../../lib/api/api-error.ts';
import { buildOpenApiDocument, openApiOperationKeys } from '../../lib/api/openapi.ts';
import { startServer, type ServerFixture } from './testing/server-fixture.ts';

describe('GET /api/v1/openapi.json', () => {
  let fx: ServerFixture | undefined;
  afterEach(async () => {
    await fx?.close();
    fx = undefined;
  });

  it('describes exactly the routes the router serves, with the same authentication', async () => {
    fx = await startServer();
    const doc = buildOpenApiDocument();
    const routes = fx.server.routes();

    expect(routes.map((r) => `${r.method} ${r.path}`).sort()).toEqual(openApiOperationKeys(doc));
    for (const route of routes) {
      const operation = doc.paths[route.path]?.[route.method === 'GET' ? 'get' : 'post'];
      expect(operation?.security === undefined, `${route.method} ${route.path}`).toBe(route.auth);
    }
  });

  it('serves the generated document to an authenticated caller', async () => {
    fx = await startServer();

    const res = await fx.client.get('/api/v1/openapi.json');

    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.json).toEqual(buildOpenApiDocument());
  });

  it('answers 401 without the token, like every read beyond health', async () => {
    fx = await startServer();

    const res = await fx.client.get('/api/v1/openapi.json', { token: null });

    expect(res.status).toBe(401);
    expect(ApiErrorBodySchema.parse(res.json).error.code).toBe('unauthorized');
  });
});
