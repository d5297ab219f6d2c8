import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument, openApiOperationKeys, openApiSchemaValidator, serializeOpenApiDocument } from './openapi.ts';
import { API_ROUTES } from './routes.ts';
import { emptySnapshot, exampleSnapshot } from './testing/snapshot-fixtures.ts';
import { SUMMARY_ROUTE, summarizeSnapshot } from './summary.ts';

const doc = buildOpenApiDocument();
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

describe('buildOpenApiDocument', () => {
  it('equals the checked-in docs/openapi.json (run `npm run openapi` after changing the contract)', () => {
    const checkedIn = readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8');

    expect(checkedIn).toBe(serializeOpenApiDocument(doc));
  });

  it('is deterministic', () => {
    expect(serializeOpenApiDocument(buildOpenApiDocument())).toBe(serializeOpenApiDocument(doc));
  });

  it('describes every route of the contract, public ones without security', () => {
    const routes = [...Object.values(API_ROUTES), SUMMARY_ROUTE];

    expect(openApiOperationKeys(doc)).toEqual(routes.map((r) => `${r.method} ${r.path}`).sort());
    for (const route of routes) {
      const operation = doc.paths[route.path]?.[route.method === 'GET' ? 'get' : 'post'];
      expect(operation?.security, `${route.method} ${route.path}`).toEqual(route.auth ? undefined : []);
      if (route.auth) expect(Object.keys(operation?.responses ?? {}), route.path).toEqual(expect.arrayContaining(['401', '403']));
    }
  });

  it('references only components it defines', () => {
    const refs = [...serializeOpenApiDocument(doc).matchAll(/"\$ref": "#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1] ?? '');

    expect(refs.length).toBeGreaterThan(0);
    expect(refs.filter((name) => !(name in doc.components.schemas))).toEqual([]);
  });
});

describe('openApiSchemaValidator (the document checks what the agent sends)', () => {
  it('accepts the contract fixtures and their summaries', () => {
    const snapshot = openApiSchemaValidator(doc, ref('Snapshot'));
    const summary = openApiSchemaValidator(doc, ref('AgentSummary'));

    for (const s of [emptySnapshot(), exampleSnapshot()]) {
      expect(snapshot.safeParse(s).success).toBe(true);
      expect(summary.safeParse(summarizeSnapshot(s)).success).toBe(true);
    }
  });

  it('rejects a snapshot with a field of the wrong type or a missing field', () => {
    const snapshot = openApiSchemaValidator(doc, ref('Snapshot'));
    const { seq: _seq, ...withoutSeq } = exampleSnapshot();

    expect(snapshot.safeParse({ ...exampleSnapshot(), statesSynced: 'yes' }).success).toBe(false);
    expect(snapshot.safeParse(withoutSeq).success).toBe(false);
  });

  it('keeps request bodies strict and response bodies open to added fields', () => {
    const retry = openApiSchemaValidator(doc, ref('RetryOperationRequest'));
    const error = openApiSchemaValidator(doc, ref('ApiError'));

    expect(retry.safeParse({ volume: 'v' }).success).toBe(true);
    expect(retry.safeParse({ volume: 'v', force: true }).success).toBe(false);
    expect(retry.safeParse({ volume: '' }).success).toBe(false);
    expect(error.safeParse({ error: { code: 'conflict', message: 'm', later: 1 } }).success).toBe(true);
    expect(error.safeParse({ error: { code: 'teapot', message: 'm' } }).success).toBe(false);
  });
});

