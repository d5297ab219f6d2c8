/**
 * Torture campaign "api-fuzz": a property-based fuzz of every endpoint of a real agent process,
 * driven by the OpenAPI document (lib/api/openapi.ts, served at GET /api/v1/openapi.json).
 *
 * Why fast-check and not schemathesis: fast-check is already a pinned devDependency (CI installs
 * nothing else, and it needs no network), it is well kept, and running in this process lets the
 * campaign do what a generic OpenAPI fuzzer cannot without custom hooks: take the agent's
 * snapshot before and after EVERY rejected mutating request (not a sample) and compare them,
 * mix in the values that exist on the node (real pod UIDs, volume names, the operation in
 * backoff) so requests also reach the handlers' deeper branches (409, 429, 200) instead of only
 * their 404s, and fuzz what sits below the schema (methods, paths, auth headers, bytes that are
 * not JSON or not UTF-8, bodies over the limit, declared lengths that lie). Request bodies come
 * from arbitraries derived from the document's JSON schemas ({@link arbitraryForSchema}); the
 * invalid ones are those derivations mutated and then confirmed invalid by the document's own
 * schema. Generation is seeded (the `seed` figure); `VOLUMESCOPE_FUZZ_SEED=<seed>` replays a run.
 *
 * Checks, per request: an answer within 15 s; status < 500; a status the document lists for the
 * operation (405 with `Allow` for another method on a known path, 404 for an unknown path);
 * the body matches the document's schema for that status (errors: the ApiError shape, a code
 * that belongs to the status, `field` on 400); a request to a protected route without a valid
 * token gets 401 with `WWW-Authenticate: Bearer`. Around every rejected (4xx) non-GET request:
 * the snapshot's state (desired pods, actual volumes and mounts, the operation table's keys,
 * source errors, drivers, pod errors) is unchanged, and the audit log gained at most entries
 * marked `refused`. Every 250 requests and at the end: the agent process is alive and answers
 * /healthz, and the kept pods' volumes are still mounted.
 */
import { Agent, request as httpRequest, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import * as fc from 'fast-check';
import type { z } from 'zod';
import { API_ERROR_STATUS, type ApiErrorCode } from '../../lib/api/api-error.ts';
import { buildOpenApiDocument, openApiSchemaValidator, type JsonSchema, type OpenApiDocument, type OpenApiOperation } from '../../lib/api/openapi.ts';
import { MAX_REQUEST_BODY_BYTES } from '../../lib/api/request-body.ts';
import { operationKey, type AuditEntry, type Snapshot } from '../../lib/api/snapshot.ts';
import { podManifest } from '../../agent/node/testing/pod-manifest.ts';
import { KEPT_PODS, runStandalone, startAgentUnderTest, unmountedKeptVolumes } from './agent-under-test.ts';
import { rssBytes } from './harness.ts';
import { firstDifference } from '../first-difference.ts';
import type { Campaign, CampaignOptions, CampaignResult } from './campaign.ts';
import { errorMessage } from '../../lib/volume/errors.ts';

// SIZES

const REQUESTS = { short: 1_500, full: 10_500 } as const;
/** Requests generated per batch (bounds the memory the generated bodies take). */
const BATCH = 250;
const REQUEST_TIMEOUT_MS = 15_000;
/** Failures listed in the result; the count is in the figures. */
const MAX_FAILURES_LISTED = 40;

/** A pod whose configMap does not exist: its mount stays in backoff, so retry has a target. */
const BACKOFF_POD = { file: 'fuzz-backoff.yaml', name: 'fuzz-backoff', uid: '3c9b2a1d-8e7f-4a6b-9c5d-4e3f2a1b0c99' };

// JSON SCHEMA → ARBITRARY

/** How strings are generated: the schema's bounds, with the node's real values mixed in. */
type StringArbitrary = (minLength: number) => fc.Arbitrary<string>;

/**
 * An arbitrary of values valid for a JSON schema of the document (the subset zod emits for the
 * request bodies: $ref, const, enum, anyOf, type (or a list of types), string bounds, integer
 * bounds, arrays, objects with required keys and closed or open properties).
 */
export function arbitraryForSchema(schema: JsonSchema, defs: Record<string, JsonSchema>, strings: StringArbitrary): fc.Arbitrary<unknown> {
  const ref = schema['$ref'];
  if (typeof ref === 'string') {
    const target = defs[ref.replace('#/components/schemas/', '')];
    if (target === undefined) throw new Error(`unknown $ref ${ref}`);
    return arbitraryForSchema(target, defs, strings);
  }
  if ('const' in schema) return fc.constant(schema['const']);
  const enumValues = schema['enum'];
  if (Array.isArray(enumValues)) return fc.constantFrom(...(enumValues as unknown[]));
  const anyOf = schema['anyOf'] ?? schema['oneOf'];
  if (Array.isArray(anyOf)) return fc.oneof(...(anyOf as JsonSchema[]).map((s) => arbitraryForSchema(s, defs, strings)));
  const type = schema['type'];
  if (Array.isArray(type)) return fc.oneof(...(type as string[]).map((t) => arbitraryForSchema({ ...schema, type: t }, defs, strings)));
  switch (type) {
    case 'string':
      return strings(typeof schema['minLength'] === 'number' ? schema['minLength'] : 0);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'integer':
      return fc.integer({
        min: typeof schema['minimum'] === 'number' ? Math.max(schema['minimum'], -(2 ** 31)) : -(2 ** 31),
        max: typeof schema['maximum'] === 'number' ? Math.min(schema['maximum'], 2 ** 31) : 2 ** 31,
      });
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case 'array': {
      const items = (schema['items'] ?? {}) as JsonSchema;
      return fc.array(arbitraryForSchema(items, defs, strings), { minLength: typeof schema['minItems'] === 'number' ? schema['minItems'] : 0, maxLength: 4 });
    }
    case 'object': {
      const properties = (schema['properties'] ?? {}) as Record<string, JsonSchema>;
      const required = (schema['required'] ?? []) as string[];
      const model = Object.fromEntries(Object.entries(properties).map(([key, s]) => [key, arbitraryForSchema(s, defs, strings)]));
      return fc.record(model, { requiredKeys: required });
    }
    default:
      return fc.jsonValue();
  }
}

// REQUESTS

/** The Authorization header sent, and whether the agent must accept it. */
interface AuthCase {
  label: string;
  header: string | null;
  valid: boolean;
}

interface FuzzRequest {
  /** What the generator meant, for failure lines. */
  label: string;
  method: string;
  path: string;
  auth: AuthCase;
  headers: OutgoingHttpHeaders;
  body: Buffer | null;
  /** Content-Length declared larger than the bytes sent: the server must answer before reading. */
  lyingLength: boolean;
}

interface FuzzResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

function authCases(token: string): fc.Arbitrary<AuthCase> {
  const valid = (label: string, header: string): AuthCase => ({ label, header, valid: true });
  const invalid = (label: string, header: string | null): AuthCase => ({ label, header, valid: false });
  const printable = fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)), minLength: 1, maxLength: 64 });
  return fc.oneof(
    { weight: 85, arbitrary: fc.constant(valid('token', `Bearer ${token}`)) },
    {
      weight: 4,
      arbitrary: fc.constantFrom(
        valid('lower-case scheme', `bearer ${token}`),
        valid('tab and trailing blanks', `BEARER\t${token} \t`),
        valid('two spaces', `Bearer  ${token}`),
      ),
    },
    {
      weight: 11,
      arbitrary: fc.oneof(
        fc.constantFrom(
          invalid('no header', null),
          invalid('empty header', ''),
          invalid('scheme only', 'Bearer'),
          invalid('scheme and blank', 'Bearer '),
          invalid('Basic scheme', `Basic ${token}`),
          invalid('no scheme', token),
          invalid('prefix of the token', `Bearer ${token.slice(0, -1)}`),
          invalid('token with a suffix', `Bearer ${token}x`),
          invalid('token twice', `Bearer ${token} ${token}`),
          invalid('upper-cased token', `Bearer ${token.toUpperCase()}x`),
          invalid('very long token', `Bearer ${'a'.repeat(4000)}`),
        ),
        printable.map((t) => invalid('random token', `Bearer ${t}`)),
        printable.map((t) => invalid('random header', t)),
      ),
    },
  );
}

/** Path variants that must not match a route (or, with a query, must match the same one). */
function pathVariants(doc: OpenApiDocument): fc.Arbitrary<{ path: string; label: string }> {
  const paths = Object.keys(doc.paths);
  const known = fc.constantFrom(...paths);
  const segment = fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 12 }).map((s) => encodeURIComponent(s));
  return fc.oneof(
    { weight: 80, arbitrary: known.map((path) => ({ path, label: 'documented path' })) },
    {
      weight: 8,
      arbitrary: fc.tuple(known, fc.constantFrom('?', '?x=1', '?volume=a&podUid=b', '?%00', `?${'q'.repeat(2000)}`, '#frag')).map(([p, q]) => ({ path: p + q, label: 'with a query' })),
    },
    {
      weight: 12,
      arbitrary: fc.oneof(
        known.map((p) => ({ path: `${p}/`, label: 'trailing slash' })),
        known.map((p) => ({ path: p.toUpperCase(), label: 'upper case' })),
        known.map((p) => ({ path: p.replace('/', '//'), label: 'double slash' })),
        known.map((p) => ({ path: p.replace(/[a-z]/, (c) => `%${c.charCodeAt(0).toString(16)}`), label: 'percent-encoded letter' })),
        known.map((p) => ({ path: `/api/v1/../..${p}`, label: 'dot segments' })),
        known.map((p) => ({ path: `${p}%2F..%2F..`, label: 'encoded dot segments' })),
        fc.constantFrom('/', '/api', '/api/v1', '/api/v2/snapshot', '/favicon.ico', '/%00', '/api/v1/snapshot%00').map((path) => ({ path, label: 'unknown path' })),
        fc.array(segment, { minLength: 1, maxLength: 6 }).map((s) => ({ path: `/${s.join('/')}`, label: 'random path' })),
        fc.constant({ path: `/${'a'.repeat(3000)}`, label: 'long path' }),
      ),
    },
  );
}

/** A body: JSON text or raw bytes, with what it is. */
interface BodyCase {
  label: string;
  bytes: Buffer | null;
  lyingLength?: boolean;
  contentType?: string | null;
}

const text = (label: string, body: string): BodyCase => ({ label, bytes: Buffer.from(body, 'utf8') });

function nested(depth: number, open: string, close: string, inner: string): string {
  return open.repeat(depth) + inner + close.repeat(depth);
}

/** Bodies valid for the schema, and invalid ones derived from valid ones (each checked invalid). */
function bodyCases(schema: JsonSchema | null, doc: OpenApiDocument, strings: StringArbitrary, targets: readonly Record<string, string>[] = []): fc.Arbitrary<BodyCase> {
  const raw = fc.oneof(
    fc.constantFrom(
      { label: 'no body', bytes: null },
      text('empty body', ''),
      text('whitespace', ' \n\t'),
      text('null', 'null'),
      text('a number', '42'),
      text('a string', '"volume"'),
      text('an array', '[{"volume":"v","podUid":"p"}]'),
      text('truncated JSON', '{"volume": "v", "podUid": '),
      text('trailing garbage', '{"volume":"v"} x'),
      text('single quotes', "{'volume': 'v'}"),
      text('duplicate keys', '{"volume":"a","volume":1,"podUid":"p"}'),
      text('__proto__ key', '{"__proto__":{"polluted":true},"volume":"v","podUid":"p"}'),
      text('constructor key', '{"constructor":{"prototype":{"x":1}},"volume":"v","podUid":"p"}'),
      text('huge number', '{"volume":"v","podUid":"p","dryRun":1e400}'),
      text('escaped NUL', '{"volume":"\\u0000","podUid":"\\u0000"}'),
      text('lone surrogate', '{"volume":"\\ud800","podUid":"\\udfff"}'),
      text('BOM before JSON', '\ufeff{"volume":"v","podUid":"p"}'),
      text('deeply nested arrays', nested(30_000, '[', ']', '')),
      text('deeply nested objects in a field', `{"volume":${nested(10_000, '{"a":', '}', '1')}}`),
      text('long string field', JSON.stringify({ volume: 'v'.repeat(60_000), podUid: 'p' })),
      { label: 'not UTF-8', bytes: Buffer.from([0x7b, 0x22, 0x76, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]) },
      { label: 'over the size limit', bytes: Buffer.from(`{"volume":"${'x'.repeat(MAX_REQUEST_BODY_BYTES)}"}`) },
      { label: 'declared length over the limit', bytes: Buffer.from('{}'), lyingLength: true },
      { label: 'JSON as text/plain', bytes: Buffer.from('{"volume":"v","podUid":"p"}'), contentType: 'text/plain' },
      { label: 'JSON without a content type', bytes: Buffer.from('{"volume":"v","podUid":"p"}'), contentType: null },
    ),
    fc.uint8Array({ minLength: 1, maxLength: 256 }).map((b) => ({ label: 'random bytes', bytes: Buffer.from(b) })),
    fc.jsonValue({ maxDepth: 3 }).map((v) => text('random JSON', JSON.stringify(v) ?? 'null')),
  );
  if (schema === null) return fc.oneof({ weight: 6, arbitrary: fc.constant<BodyCase>({ label: 'no body', bytes: null }) }, { weight: 4, arbitrary: raw });

  const defs = doc.components.schemas;
  const validator: z.ZodType = openApiSchemaValidator(doc, schema);
  const valid = arbitraryForSchema(schema, defs, strings).map((v) => text('valid body', JSON.stringify(v)));
  const target = defs[String(schema['$ref']).replace('#/components/schemas/', '')] ?? schema;
  const keys = Object.keys((target['properties'] ?? {}));
  const wrongValues = fc.oneof(fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.string(), fc.array(fc.string(), { maxLength: 3 }), fc.dictionary(fc.string(), fc.string(), { maxKeys: 3 }));
  const mutated = fc
    .tuple(arbitraryForSchema(schema, defs, strings), fc.constantFrom(...(keys.length > 0 ? keys : ['x'])), wrongValues, fc.nat(3), fc.string({ minLength: 1, maxLength: 16 }))
    .map(([value, key, wrong, how, extraKey]) => {
      const source = value as Record<string, unknown>;
      // how 0: the key removed; 1: a value of another type; 2: an unknown key; 3: an empty string.
      const object = how === 0 ? Object.fromEntries(Object.entries(source).filter(([k]) => k !== key)) : { ...source };
      if (how === 1) object[key] = wrong;
      else if (how === 2) object[keys.includes(extraKey) ? `${extraKey}_` : extraKey] = wrong;
      else object[key] = '';
      return object;
    })
    .filter((object) => !validator.safeParse(object).success)
    .map((object) => text('schema-invalid body', JSON.stringify(object)));
  // Bodies naming what exists on the node (the operation in backoff, the kept pods' volumes), so
  // the handlers get past their lookups; only those the schema accepts.
  const named = targets.filter((t) => validator.safeParse(t).success).map((t) => text('body naming a real target', JSON.stringify(t)));
  return fc.oneof(
    { weight: 35, arbitrary: valid },
    { weight: 35, arbitrary: mutated },
    { weight: 20, arbitrary: raw },
    ...(named.length > 0 ? [{ weight: 10, arbitrary: fc.constantFrom(...named) }] : []),
  );
}

/** The request arbitrary: a documented operation most of the time, then paths, methods, auth, bodies. */
function requestArbitrary(doc: OpenApiDocument, token: string, strings: StringArbitrary, targets: readonly Record<string, string>[]): fc.Arbitrary<FuzzRequest> {
  const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ path, method: method.toUpperCase(), op: op })),
  );
  const bodySchemaOf = (op: OpenApiOperation): JsonSchema | null => op.requestBody?.content['application/json']?.schema ?? null;
  const bodiesByOperation = new Map(operations.map((o) => [`${o.method} ${o.path}`, bodyCases(bodySchemaOf(o.op), doc, strings, targets)]));
  const anyBody = bodyCases(null, doc, strings);
  const methods = fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD');
  return fc
    .record({
      operation: fc.constantFrom(...operations),
      path: pathVariants(doc),
      usePath: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
      otherMethod: fc.oneof({ weight: 85, arbitrary: fc.constant(null) }, { weight: 15, arbitrary: methods }),
      auth: authCases(token),
      gzip: fc.boolean(),
      lastEventId: fc.oneof({ weight: 3, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.oneof(fc.string({ unit: 'grapheme-ascii', maxLength: 40 }), fc.constantFrom('0', '0.0', '1796025600000.42', '-1', 'NaN', '1e999.1')) }),
      seed: fc.nat(),
    })
    .chain((r) => {
      const path = r.usePath ? r.path : { path: r.operation.path, label: 'documented path' };
      const method = r.otherMethod ?? r.operation.method;
      const bodies = method === 'POST' ? (bodiesByOperation.get(`${method} ${path.path}`) ?? anyBody) : anyBody;
      return bodies.map((body): FuzzRequest => {
        const headers: OutgoingHttpHeaders = {};
        if (r.auth.header !== null) headers['authorization'] = r.auth.header;
        const contentType = body.contentType === undefined ? 'application/json' : body.contentType;
        if (body.bytes !== null && contentType !== null) headers['content-type'] = contentType;
        if (r.gzip) headers['accept-encoding'] = 'gzip';
        if (r.lastEventId !== null) headers['last-event-id'] = r.lastEventId;
        return {
          label: `${path.label}, ${r.otherMethod === null ? 'documented method' : 'any method'}, auth: ${r.auth.label}, body: ${body.label}`,
          method,
          path: path.path,
          auth: r.auth,
          headers,
          body: method === 'GET' || method === 'HEAD' ? null : body.bytes,
          lyingLength: body.lyingLength === true,
        };
      });
    });
}

// SENDING

/** Sends one request over 127.0.0.1 (on `keepAlive`'s one connection unless its length lies); an event stream is read up to its first event. */
function send(keepAlive: Agent, port: number, req: FuzzRequest): Promise<FuzzResponse> {
  return new Promise((resolve, reject) => {
    const headers: OutgoingHttpHeaders = { ...req.headers };
    if (req.lyingLength) headers['content-length'] = String(MAX_REQUEST_BODY_BYTES * 4);
    else if (req.body !== null) headers['content-length'] = String(req.body.length);
    const outgoing = httpRequest(
      { host: '127.0.0.1', port, method: req.method, path: req.path, headers, agent: req.lyingLength ? false : keepAlive },
      (res) => {
        const chunks: Buffer[] = [];
        const stream = (res.headers['content-type'] ?? '').startsWith('text/event-stream');
        const finish = (): void => {
          if (req.lyingLength) outgoing.destroy();
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
        };
        res.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          if (stream && Buffer.concat(chunks).includes('\n\n')) {
            finish();
            res.destroy();
          }
        });
        res.on('end', finish);
        res.on('error', (err) => {
          if (!stream) reject(err);
        });
      },
    );
    outgoing.setTimeout(REQUEST_TIMEOUT_MS, () => {
      outgoing.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`));
    });
    outgoing.on('error', reject);
    if (req.body !== null) outgoing.write(req.body);
    if (req.lyingLength) {
      // The rest of the declared body never comes: the agent must answer without it.
      outgoing.flushHeaders();
      return;
    }
    outgoing.end();
  });
}

// CHECKS

/**
 * Plugins whose volumes the reconciler mounts again on its own (`RequiresRemount`: the kubelet's
 * periodic refresh of configMap, secret, projected and downwardAPI contents).
 */
const REMOUNTED_PLUGINS = ['kubernetes.io/configmap/', 'kubernetes.io/secret/', 'kubernetes.io/projected/', 'kubernetes.io/downward-api/'];

/**
 * The parts of a snapshot a request can change, without clocks, counters and ring buffers, and
 * without `volume_mount` operations of the remounted plugins: the reconciler starts those on its
 * own at any time, and no action (retry, unmount, cleanup, resync) ever starts a mount.
 */
function stateOf(s: Snapshot): unknown {
  const remount = (o: Snapshot['operations'][number]): boolean => o.operationName === 'volume_mount' && REMOUNTED_PLUGINS.some((p) => o.volume.startsWith(p));
  return {
    nodeName: s.nodeName,
    statesSynced: s.statesSynced,
    mounter: s.mounter,
    desired: s.desired,
    actual: s.actual.volumes.map((v) => ({ ...v, pods: v.pods.map((p) => ({ podUid: p.podUid, outerVolumeName: p.outerVolumeName, mountState: p.mountState })) })),
    operations: s.operations.filter((o) => !remount(o)).map((o) => operationKey(o)),
    reconstruction: { state: s.reconstruction.state, volumes: s.reconstruction.volumes.map((v) => ({ ...v, at: 0 })) },
    podErrors: s.podErrors,
    sourceErrors: s.sourceErrors,
    drivers: s.drivers.map((d) => ({ name: d.name, registered: d.registered, nodeId: d.nodeId })),
  };
}

/** The first path where `after` differs from `before` (`$.actual[0].mountState: "x" → "y"`), or null. */
export function firstChange(before: unknown, after: unknown): string | null {
  const show = (v: unknown): string => JSON.stringify(v)?.slice(0, 200) ?? 'undefined';
  return firstDifference(before, after, (path, a, b) => `${path}: ${show(a)} → ${show(b)}`);
}

/** The audit entries `after` has beyond `before` (the ring is bounded, so old ones may be gone). */
export function appendedAuditEntries(before: readonly AuditEntry[], after: readonly AuditEntry[]): AuditEntry[] {
  const same = (a: readonly AuditEntry[], b: readonly AuditEntry[]): boolean => JSON.stringify(a) === JSON.stringify(b);
  for (let dropped = 0; dropped <= before.length; dropped++) {
    const kept = before.slice(dropped);
    if (same(kept, after.slice(0, kept.length))) return after.slice(kept.length);
  }
  return [...after];
}

function requestPathOf(path: string): string {
  const end = path.search(/[?#]/);
  return end < 0 ? path : path.slice(0, end);
}

function parseJson(body: Buffer): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(body.toString('utf8')) as unknown };
  } catch {
    return { ok: false };
  }
}

class ResponseChecker {
  private readonly validators = new Map<string, z.ZodType>();
  constructor(private readonly doc: OpenApiDocument) {}

  private validator(schema: JsonSchema): z.ZodType {
    const key = JSON.stringify(schema);
    let v = this.validators.get(key);
    if (v === undefined) {
      v = openApiSchemaValidator(this.doc, schema);
      this.validators.set(key, v);
    }
    return v;
  }

  private errorProblems(res: FuzzResponse, body: Buffer): string[] {
    const parsed = parseJson(body);
    if (!parsed.ok) return [`status ${res.status}: the body is not JSON: ${body.toString('utf8').slice(0, 120)}`];
    const result = this.validator({ $ref: '#/components/schemas/ApiError' }).safeParse(parsed.value);
    if (!result.success) return [`status ${res.status}: the body is not the ApiError shape: ${JSON.stringify(parsed.value).slice(0, 200)}`];
    const error = (parsed.value as { error: { code: ApiErrorCode; field?: string } }).error;
    const problems: string[] = [];
    if (API_ERROR_STATUS[error.code] !== res.status) problems.push(`status ${res.status} with code ${error.code} (which is sent with ${API_ERROR_STATUS[error.code]})`);
    if (res.status === 400 && error.field === undefined) problems.push('a 400 without `field`');
    return problems;
  }

  /** Every way the answer breaks the document. */
  check(req: FuzzRequest, res: FuzzResponse): string[] {
    if (res.status >= 500) return [`status ${res.status}: ${res.body.toString('utf8').slice(0, 200)}`];
    const path = requestPathOf(req.path);
    const item = this.doc.paths[path];
    const head = req.method === 'HEAD';
    const body = res.headers['content-encoding'] === 'gzip' && !head ? gunzipSync(res.body) : res.body;
    const isPublic = item !== undefined && Object.values(item).every((op) => op.security !== undefined);
    if (!isPublic && !req.auth.valid) {
      if (res.status !== 401) return [`a request without a valid token got ${res.status}, not 401`];
      if (res.headers['www-authenticate'] !== 'Bearer') return ['a 401 without WWW-Authenticate: Bearer'];
      return head ? [] : this.errorProblems(res, body);
    }
    if (item === undefined) {
      if (res.status !== 404) return [`an unknown path got ${res.status}, not 404`];
      return head ? [] : this.errorProblems(res, body);
    }
    const operation = item[req.method.toLowerCase() as 'get' | 'post'];
    if (operation === undefined) {
      if (res.status !== 405) return [`${req.method} on ${path} got ${res.status}, not 405`];
      const allow = Object.keys(item).map((m) => m.toUpperCase()).join(', ');
      if (res.headers['allow'] !== allow) return [`a 405 with Allow ${JSON.stringify(res.headers['allow'])}, not ${JSON.stringify(allow)}`];
      return head ? [] : this.errorProblems(res, body);
    }
    const documented = operation.responses[String(res.status)];
    if (documented === undefined) return [`status ${res.status} is not documented for ${req.method} ${path}`];
    if (res.status >= 400) return this.errorProblems(res, body);
    const contentType = (res.headers['content-type'] ?? '').split(';')[0]?.trim() ?? '';
    const media = documented.content?.[contentType];
    if (media === undefined) return [`content type ${JSON.stringify(contentType)} is not documented for ${res.status} of ${req.method} ${path}`];
    if (contentType === 'text/event-stream') {
      const first = /^event: (\w+)\n(?:id: [^\n]*\n)?data: ([^\n]*)\n/m.exec(body.toString('utf8'));
      if (first?.[1] !== 'snapshot') return [`the event stream did not start with a snapshot event: ${body.toString('utf8').slice(0, 120)}`];
      const parsed = parseJson(Buffer.from(first[2] ?? ''));
      // The first event is a CompactSnapshot by default, a Snapshot with `encoding=full`.
      const ok = parsed.ok && this.validator({ oneOf: [{ $ref: '#/components/schemas/CompactSnapshot' }, { $ref: '#/components/schemas/Snapshot' }] }).safeParse(parsed.value).success;
      return ok ? [] : ['the first event is neither a CompactSnapshot nor a Snapshot'];
    }
    if (contentType !== 'application/json') return [];
    const parsed = parseJson(body);
    if (!parsed.ok) return [`status ${res.status}: the body is not JSON`];
    const result = this.validator(media.schema).safeParse(parsed.value);
    return result.success ? [] : [`status ${res.status}: the body breaks the documented schema: ${result.error.issues.slice(0, 3).map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`];
  }
}

// CAMPAIGN

function knownStrings(snapshot: Snapshot): string[] {
  const values = new Set<string>();
  for (const pod of snapshot.desired.pods) {
    values.add(pod.uid);
    for (const v of pod.volumes) {
      values.add(v.uniqueVolumeName);
      values.add(v.name);
    }
  }
  for (const v of snapshot.actual.volumes) values.add(v.uniqueVolumeName);
  for (const o of snapshot.operations) {
    values.add(o.volume);
    if (o.podUid !== null) values.add(o.podUid);
  }
  return [...values];
}

/** Request bodies that name real things: each operation, each pod's mounted volume (by both names). */
function knownTargets(snapshot: Snapshot): Record<string, string>[] {
  const targets: Record<string, string>[] = [];
  for (const o of snapshot.operations) targets.push(o.podUid === null ? { volume: o.volume } : { volume: o.volume, podUid: o.podUid });
  for (const v of snapshot.actual.volumes) {
    for (const p of v.pods) targets.push({ podUid: p.podUid, volume: v.uniqueVolumeName }, { podUid: p.podUid, volume: p.outerVolumeName });
  }
  return targets;
}

function stringsFrom(known: readonly string[]): StringArbitrary {
  return (minLength) =>
    fc.oneof(
      { weight: 40, arbitrary: fc.constantFrom(...known) },
      { weight: 20, arbitrary: fc.string({ minLength, maxLength: 40 }) },
      { weight: 10, arbitrary: fc.string({ unit: 'binary', minLength, maxLength: 40 }) },
      { weight: 10, arbitrary: fc.constantFrom('../../etc/passwd', '/', '.', '..', 'kubernetes.io~empty-dir/../..', '%2e%2e', '*', 'a\u0000b', '\u202e', ' ', 'null', '<script>') },
      { weight: 5, arbitrary: fc.nat(60_000).map((n) => 'x'.repeat(Math.max(n, minLength))) },
      { weight: 15, arbitrary: fc.constantFrom(...known).map((k) => `${k}x`) },
    ).filter((s) => s.length >= minLength);
}

async function runApiFuzz(options: CampaignOptions): Promise<CampaignResult> {
  const { size, workDir, log } = options;
  const total = REQUESTS[size];
  const seed = Number(process.env['VOLUMESCOPE_FUZZ_SEED'] ?? Date.now() % 2 ** 31);
  const failures: string[] = [];
  let failureCount = 0;
  const fail = (line: string): void => {
    failureCount++;
    if (failures.length < MAX_FAILURES_LISTED) failures.push(line);
  };
  const started = performance.now();
  const backoffPod = podManifest(BACKOFF_POD.name, BACKOFF_POD.uid, { settings: { configMap: { name: 'fuzz-absent' } } });
  log(`starting the agent (seed ${seed}, ${total} requests)`);
  const under = await startAgentUnderTest(workDir, { [BACKOFF_POD.file]: backoffPod });
  const keepAlive = new Agent({ keepAlive: true, maxSockets: 1 });
  const { agent } = under;
  const port = Number(new URL(agent.baseUrl).port);
  const figures: Record<string, number | string | boolean> = { seed };
  let sent = 0;
  const statuses = new Map<number, number>();
  /** Answers per documented operation and status: what the fuzz reached. */
  const byOperation = new Map<string, number>();
  /** Rejected (4xx) non-GET requests, each with its before/after snapshot comparison. */
  let stateChecks = 0;
  let crashed: boolean;
  try {
    const snapshot = (): Promise<Snapshot> => agent.snapshot();
    await agent.waitForSnapshot('the backoff pod has an operation', (s) => s.operations.some((o) => o.podUid === BACKOFF_POD.uid), 30_000);

    // The document the agent serves is the one lib/api builds (and so docs/openapi.json).
    const served = await send(keepAlive, port, { label: 'document', method: 'GET', path: '/api/v1/openapi.json', auth: { label: 'token', header: `Bearer ${agent.token}`, valid: true }, headers: { authorization: `Bearer ${agent.token}` }, body: null, lyingLength: false });
    const doc = buildOpenApiDocument();
    if (served.status !== 200 || served.body.toString('utf8') !== JSON.stringify(doc)) fail(`GET /api/v1/openapi.json did not serve the generated document (status ${served.status})`);

    const checker = new ResponseChecker(doc);
    const initial = await snapshot();
    const arbitrary = requestArbitrary(doc, agent.token, stringsFrom(knownStrings(initial)), knownTargets(initial));
    const rssStart = await rssBytes(agent.pid);
    let rssMax = rssStart;

    for (let batch = 0; sent < total; batch++) {
      const requests = fc.sample(arbitrary, { numRuns: Math.min(BATCH, total - sent), seed: seed + batch });
      for (const req of requests) {
        const mutating = req.method !== 'GET' && req.method !== 'HEAD';
        const before = mutating ? await snapshot() : null;
        let res: FuzzResponse;
        try {
          res = await send(keepAlive, port, req);
        } catch (err) {
          fail(`${req.method} ${req.path.slice(0, 80)} (${req.label}): no answer: ${errorMessage(err)}`);
          sent++;
          if (agent.hasExited) break;
          continue;
        }
        sent++;
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        const answered = `${req.method} ${requestPathOf(req.path)} ${res.status}`;
        if (doc.paths[requestPathOf(req.path)]?.[req.method.toLowerCase() as 'get' | 'post'] !== undefined) byOperation.set(answered, (byOperation.get(answered) ?? 0) + 1);
        for (const problem of checker.check(req, res)) fail(`${req.method} ${req.path.slice(0, 80)} (${req.label}): ${problem}`);
        if (before !== null && res.status >= 400 && res.status < 500) {
          stateChecks++;
          const after = await snapshot();
          const change = firstChange(stateOf(before), stateOf(after));
          if (change !== null) fail(`${req.method} ${req.path.slice(0, 80)} (${req.label}): rejected with ${res.status} but the state changed (${change})`);
          const appended = appendedAuditEntries(before.audit, after.audit).filter((e) => e.result !== 'refused');
          if (appended.length > 0) fail(`${req.method} ${req.path.slice(0, 80)} (${req.label}): rejected with ${res.status} but audited as ${appended.map((e) => `${e.action} ${e.result}`).join(', ')}`);
        }
      }
      if (agent.hasExited) {
        fail(`the agent process exited: ${JSON.stringify(await agent.exited)}; stderr: ${agent.stderr.slice(-500)}`);
        break;
      }
      const health = await fetch(`${agent.baseUrl}/healthz`);
      if (health.status !== 200) fail(`/healthz answered ${health.status} after ${String(sent)} requests`);
      const missing = unmountedKeptVolumes(await snapshot());
      if (missing.length > 0) fail(`after ${String(sent)} requests the kept pods lost mounts: ${missing.join('; ')}`);
      rssMax = Math.max(rssMax, await rssBytes(agent.pid));
      log(`${String(sent)}/${total} requests, ${failureCount} failures`);
    }
    figures['rssStartBytes'] = rssStart;
    figures['rssMaxBytes'] = rssMax;
  } finally {
    keepAlive.destroy();
    crashed = agent.hasExited;
    await under.stop();
  }
  figures['agentCrashed'] = crashed;
  figures['rejectedMutatingRequestsCheckedForStateChange'] = stateChecks;
  figures['status5xx'] = [...statuses].filter(([s]) => s >= 500).reduce((n, [, c]) => n + c, 0);
  for (const [status, count] of [...statuses].sort(([a], [b]) => a - b)) figures[`status${status}`] = count;
  for (const [answered, count] of [...byOperation].sort(([a], [b]) => a.localeCompare(b))) figures[answered] = count;
  figures['failures'] = failureCount;
  figures['keptPods'] = KEPT_PODS.length;
  figures['durationMs'] = Math.round(performance.now() - started);
  figures['requests'] = sent;
  const ok = failureCount === 0 && !crashed && sent >= total;
  return { name: 'api-fuzz', ok, figures, failures };
}

export const apiFuzz: Campaign = { name: 'api-fuzz', run: runApiFuzz };

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  await runStandalone(apiFuzz, process.argv.slice(2));
}
