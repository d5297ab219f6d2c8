/**
 * The OpenAPI 3.1 document of the agent API, generated from the contract's zod schemas (so it
 * cannot drift from what the agent validates and serves). The agent serves it at
 * `GET /api/v1/openapi.json`; `npm run openapi` writes it to docs/openapi.json, and a unit test
 * keeps that file equal to what this module builds.
 *
 * Schema conventions: OpenAPI 3.1 schemas are JSON Schema 2020-12. Schemas are generated in
 * zod's "input" form: request bodies are strict objects (`additionalProperties: false`, an
 * unknown field is a 400), response objects are open, because clients must ignore fields added
 * in later versions (docs/api.md). Uniqueness of keyed collections and other refinements are
 * not expressible and are left to the zod schemas.
 *
 * Depends on zod only (no Node APIs), like the rest of lib/api.
 */
import { z } from 'zod';
import {
  HealthResponseSchema,
  OrphanCleanupRequestSchema,
  OrphanCleanupResponseSchema,
  ResyncRequestSchema,
  ResyncResponseSchema,
  RetryOperationRequestSchema,
  RetryOperationResponseSchema,
  UnmountRequestSchema,
  UnmountResponseSchema,
  UnmountRunningResponseSchema,
} from './actions.ts';
import { ApiErrorBodySchema } from './api-error.ts';
import { DeltaSchema } from './delta.ts';
import { MAX_REQUEST_BODY_BYTES } from './request-body.ts';
import { API_ROUTES, type ApiRoute } from './routes.ts';
import { CompactSnapshotSchema } from './compact-snapshot.ts';
import { CheckSchema, SnapshotSchema, SourceErrorSchema } from './snapshot.ts';
import { AgentSummarySchema, SUMMARY_ROUTE } from './summary.ts';
import { BlockersResponseSchema } from './mount-health.ts';

// TYPES

/** A JSON Schema (2020-12) as it appears in the document. */
export type JsonSchema = Record<string, unknown>;

/** The parts of an OpenAPI 3.1 document this module writes. */
export interface OpenApiDocument {
  openapi: '3.1.0';
  info: { title: string; version: string; description: string };
  jsonSchemaDialect: string;
  security: Record<string, string[]>[];
  paths: Record<string, Partial<Record<'get' | 'post', OpenApiOperation>>>;
  components: {
    securitySchemes: Record<string, { type: 'http'; scheme: 'bearer'; description: string }>;
    schemas: Record<string, JsonSchema>;
  };
}

export interface OpenApiOperation {
  operationId: string;
  summary: string;
  description: string;
  /** `[]` for the public routes; absent (the document's default: bearer token) otherwise. */
  security?: Record<string, string[]>[];
  parameters?: { name: string; in: 'header' | 'query'; required: boolean; description: string; schema: JsonSchema }[];
  requestBody?: { required: boolean; content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, OpenApiResponse>;
}

export interface OpenApiResponse {
  description: string;
  headers?: Record<string, { description: string; schema: JsonSchema }>;
  content?: Record<string, { schema: JsonSchema }>;
}

// SCHEMAS

/** The contract's schemas as `components.schemas`, by name. */
const componentSchemas = {
  HealthResponse: HealthResponseSchema,
  Snapshot: SnapshotSchema,
  CompactSnapshot: CompactSnapshotSchema,
  Delta: DeltaSchema,
  AgentSummary: AgentSummarySchema,
  ResyncRequest: ResyncRequestSchema,
  ResyncResponse: ResyncResponseSchema,
  RetryOperationRequest: RetryOperationRequestSchema,
  RetryOperationResponse: RetryOperationResponseSchema,
  UnmountRequest: UnmountRequestSchema,
  UnmountResponse: UnmountResponseSchema,
  UnmountRunningResponse: UnmountRunningResponseSchema,
  OrphanCleanupRequest: OrphanCleanupRequestSchema,
  OrphanCleanupResponse: OrphanCleanupResponseSchema,
  ApiError: ApiErrorBodySchema,
  Check: CheckSchema,
  SourceError: SourceErrorSchema,
  BlockersResponse: BlockersResponseSchema,
} as const satisfies Record<string, z.ZodType>;

/** A component's name. */
export type OpenApiSchemaName = keyof typeof componentSchemas;

const schemaRef = (name: OpenApiSchemaName): JsonSchema => ({ $ref: `#/components/schemas/${name}` });

/** Every component schema, cross-referenced by `$ref` where one contains another. */
function buildComponentSchemas(): Record<string, JsonSchema> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(componentSchemas)) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, {
    target: 'draft-2020-12',
    io: 'input',
    uri: (id) => `#/components/schemas/${id}`,
  });
  const out: Record<string, JsonSchema> = {};
  for (const id of Object.keys(componentSchemas)) {
    const schema = schemas[id];
    if (schema === undefined) throw new Error(`zod produced no JSON schema for ${id}`);
    // The document's jsonSchemaDialect says the dialect; `$id` would re-base the `$ref`s.
    const { $schema: _dialect, $id: _id, ...rest } = schema as JsonSchema;
    out[id] = rest;
  }
  return out;
}

// RESPONSES

/** `?encoding=` of the snapshot and of the event stream's first event. */
const ENCODING_PARAMETER = {
  name: 'encoding',
  in: 'query' as const,
  required: false,
  description: 'The snapshot encoding: `compact` (default, `compact/v2`) or `full`.',
  schema: { type: 'string', enum: ['compact', 'full'] },
};

const json = (schema: JsonSchema): Record<string, { schema: JsonSchema }> => ({ 'application/json': { schema } });

function errorResponse(description: string, headers?: OpenApiResponse['headers']): OpenApiResponse {
  return { description, ...(headers === undefined ? {} : { headers }), content: json(schemaRef('ApiError')) };
}

const ok = (description: string, name: OpenApiSchemaName): OpenApiResponse => ({ description, content: json(schemaRef(name)) });

/** The answers of the authenticator, on every route that needs the token. */
const authResponses: Record<string, OpenApiResponse> = {
  '401': errorResponse('No token, a wrong one, or one the TokenReview did not authenticate (code `unauthorized`).', {
    'WWW-Authenticate': { description: 'Always `Bearer`.', schema: { type: 'string', const: 'Bearer' } },
  }),
  '403': errorResponse('Authenticated, but the SubjectAccessReview denied the verb on `nodes/volumemanager` (code `forbidden`).'),
  '500': errorResponse('The SubjectAccessReview could not be made (code `internal`), or an agent bug; never caused by the content of a request.'),
};

/** The answers of reading and validating a JSON body. */
const bodyResponses: Record<string, OpenApiResponse> = {
  '400': errorResponse('Malformed JSON, not UTF-8, or the body breaks the schema (code `bad-request`; `field` names the first offending field).'),
  '413': errorResponse(`The body is larger than ${MAX_REQUEST_BODY_BYTES} bytes (code \`payload-too-large\`); the connection is closed.`),
};

const conflict = errorResponse('Refused: a safety check failed (code `conflict`; `checks` lists every check evaluated) or the target is busy.');

// OPERATIONS

interface OperationSpec extends Omit<OpenApiOperation, 'security'> {
  route: ApiRoute;
}

function operationSpecs(): OperationSpec[] {
  const R = API_ROUTES;
  return [
    {
      route: R.healthz,
      operationId: 'getHealthz',
      summary: 'The process is up',
      description: 'Answers 200 while the process serves requests. Needs no token.',
      responses: { '200': ok('The process is up.', 'HealthResponse') },
    },
    {
      route: R.readyz,
      operationId: 'getReadyz',
      summary: 'The desired and actual states are synced',
      description: 'Answers 200 once `statesSynced` is true, else 503. Needs no token.',
      responses: {
        '200': ok('The states are synced.', 'HealthResponse'),
        '503': errorResponse('The states are not synced yet (code `not-ready`).'),
      },
    },
    {
      route: R.snapshot,
      operationId: 'getSnapshot',
      summary: 'The whole state at one seq',
      description:
        'Keyed collections are in key order; ring buffers oldest first. Gzip-compressed when `Accept-Encoding` allows it. By default in the `compact/v2` encoding (a `CompactSnapshot`, docs/api.md "Compact snapshot"); `?encoding=full` gives a `Snapshot`.',
      parameters: [ENCODING_PARAMETER],
      responses: {
        '200': { description: 'The snapshot: a `CompactSnapshot` (default) or, with `encoding=full`, a `Snapshot`.', content: json({ oneOf: [schemaRef('CompactSnapshot'), schemaRef('Snapshot')] }) },
        '400': errorResponse('`encoding` is neither `compact` nor `full` (code `bad-request`, `field` is `encoding`).'),
      },
    },
    {
      route: SUMMARY_ROUTE,
      operationId: 'getSummary',
      summary: "The node's counts",
      description: 'Counts defined over the snapshot of the same seq, a few hundred bytes, for overviews of many nodes.',
      responses: { '200': ok('The summary.', 'AgentSummary') },
    },
    {
      route: R.events,
      operationId: 'getEvents',
      summary: 'A snapshot, then deltas',
      description:
        'A `text/event-stream`: `event: snapshot` (data: a `CompactSnapshot`, or a `Snapshot` with `encoding=full`), then one `event: delta` (data: a `Delta`) per published change, each with `id: <agent.startedAt>.<seq>`, and `: keepalive` comments when idle.',
      parameters: [
        {
          name: 'Last-Event-ID',
          in: 'header',
          required: false,
          description: 'The last id seen: the stream resumes after it when the journal still holds every delta since, else it starts with a snapshot.',
          schema: { type: 'string' },
        },
        ENCODING_PARAMETER,
      ],
      responses: {
        '200': { description: 'The event stream.', content: { 'text/event-stream': { schema: { type: 'string' } } } },
        '400': errorResponse('`encoding` is neither `compact` nor `full` (code `bad-request`, `field` is `encoding`).'),
        '503': errorResponse('The agent is shutting down (code `not-ready`).'),
      },
    },
    {
      route: R.resync,
      operationId: 'postResync',
      summary: 'Run a verification pass now',
      description: 'Rescans volume directories and the mount table and verifies attached volumes. The body is optional: empty, or the operator\'s note (incident ID, reason) for the audit entry. Rate-limited per node.',
      requestBody: { required: false, content: json(schemaRef('ResyncRequest')) },
      responses: {
        '200': ok('What the pass found.', 'ResyncResponse'),
        '400': errorResponse('A body that is not UTF-8, not JSON, or breaks the schema (code `bad-request`, `field` names it).'),
        '429': errorResponse('Too many resyncs on the node (code `rate-limited`).', {
          'Retry-After': { description: 'Seconds to wait.', schema: { type: 'string', pattern: '^[0-9]+$' } },
        }),
        '413': bodyResponses['413'] as OpenApiResponse,
      },
    },
    {
      route: R.retryOperation,
      operationId: 'postRetryOperation',
      summary: "Clear an operation's backoff",
      description: 'The reconciler retries the operation on its next pass. Rate-limited per node.',
      requestBody: { required: true, content: json(schemaRef('RetryOperationRequest')) },
      responses: {
        '200': ok("The cleared operation's key.", 'RetryOperationResponse'),
        ...bodyResponses,
        '404': errorResponse('No operation matches (code `not-found`).'),
        '409': conflict,
        '429': errorResponse('Too many retries on the node (code `rate-limited`).', {
          'Retry-After': { description: 'Seconds to wait.', schema: { type: 'string', pattern: '^[0-9]+$' } },
        }),
      },
    },
    {
      route: R.unmount,
      operationId: 'postUnmount',
      summary: "Unmount one pod's volume, after safety checks",
      description: 'Refused (409) unless the states are synced, reconstruction is done, the pod is not desired and no operation runs on the volume.',
      requestBody: { required: true, content: json(schemaRef('UnmountRequest')) },
      responses: {
        '200': ok('Every check passed and the unmount ran.', 'UnmountResponse'),
        '202': ok('Every check passed; the TearDown is still running.', 'UnmountRunningResponse'),
        ...bodyResponses,
        '404': errorResponse('The pod has no such volume mounted (code `not-found`).'),
        '409': conflict,
      },
    },
    {
      route: R.orphanCleanup,
      operationId: 'postOrphanCleanup',
      summary: 'Guarded cleanup of one orphaned pod directory (observe mode)',
      description: 'Only in observe mode (404 otherwise); needs `--allow-orphan-cleanup` (409 otherwise). `dryRun: true` answers with the plan.',
      requestBody: { required: true, content: json(schemaRef('OrphanCleanupRequest')) },
      responses: {
        '200': ok('The plan, or what was done.', 'OrphanCleanupResponse'),
        ...bodyResponses,
        '404': errorResponse('The agent is not in observe mode (code `not-found`).'),
        '409': conflict,
      },
    },
    {
      route: R.volumeBlockers,
      operationId: 'getVolumeBlockers',
      summary: "Who keeps a volume's path busy",
      description:
        "Every process with an open file, its working directory, its root or a mapped file on the volume's path, and every other mount namespace that still has it mounted, with the pod and container from each process's cgroup. With `podUid`, the pod's volume path; without, the volume's staging (device mount) path. Bounded (100 holders, 5 s); never enters the mount.",
      parameters: [
        { name: 'volume', in: 'query', required: true, description: 'The unique volume name.', schema: { type: 'string', minLength: 1 } },
        { name: 'podUid', in: 'query', required: false, description: "The pod whose mount of the volume to search; absent: the volume's staging path.", schema: { type: 'string', minLength: 1 } },
      ],
      responses: {
        '200': ok('The holders found.', 'BlockersResponse'),
        '400': errorResponse('`volume` is missing (code `bad-request`, `field` names it), or the path is outside the root dir.'),
        '404': errorResponse('No such volume, pod mount or staging path in the actual state (code `not-found`), or the agent has no blocker search.'),
      },
    },
    {
      route: R.openapi,
      operationId: 'getOpenApiDocument',
      summary: 'This document',
      description: 'The OpenAPI 3.1 document of the agent API. Needs the token, like every read beyond health.',
      responses: { '200': { description: 'The document.', content: json({ type: 'object' }) } },
    },
    {
      route: R.metrics,
      operationId: 'getMetrics',
      summary: 'Prometheus metrics',
      description: "The agent's metrics in the Prometheus text exposition format (the kubelet's volume manager metric names).",
      responses: { '200': { description: 'The metrics.', content: { 'text/plain': { schema: { type: 'string' } } } } },
    },
  ];
}

// DOCUMENT

const description = [
  "The node agent's HTTP API (docs/api.md): the volume manager's state as a snapshot and a stream of deltas, and the operator actions.",
  'Every error (4xx, 5xx) has the `ApiError` body; a known path with another method answers 405 with `Allow`, an unknown path 404.',
  'Bad input never produces a 500.',
].join(' ');

/** The OpenAPI 3.1 document of the agent API. Deterministic: the same contract gives the same JSON. */
export function buildOpenApiDocument(): OpenApiDocument {
  const paths: OpenApiDocument['paths'] = {};
  for (const { route, ...operation } of operationSpecs()) {
    const method = route.method === 'GET' ? 'get' : 'post';
    const entry = (paths[route.path] ??= {});
    entry[method] = {
      operationId: operation.operationId,
      summary: operation.summary,
      description: operation.description,
      ...(route.auth ? {} : { security: [] }),
      ...(operation.parameters === undefined ? {} : { parameters: operation.parameters }),
      ...(operation.requestBody === undefined ? {} : { requestBody: operation.requestBody }),
      responses: route.auth ? { ...operation.responses, ...withoutExisting(authResponses, operation.responses) } : operation.responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'VolumeScope agent API', version: 'v1', description },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    security: [{ bearerAuth: [] }],
    paths,
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'The static token (`--token-file`) or a cluster token checked by TokenReview.' },
      },
      schemas: buildComponentSchemas(),
    },
  };
}

function withoutExisting(extra: Record<string, OpenApiResponse>, existing: Record<string, OpenApiResponse>): Record<string, OpenApiResponse> {
  return Object.fromEntries(Object.entries(extra).filter(([status]) => !(status in existing)));
}

/** Every (method, path) the document describes, as `GET /healthz`, sorted. */
export function openApiOperationKeys(doc: OpenApiDocument): string[] {
  const keys: string[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of Object.keys(item)) keys.push(`${method.toUpperCase()} ${path}`);
  }
  return keys.sort();
}


/** The document as docs/openapi.json holds it: 2-space indented JSON and a final newline. */
export function serializeOpenApiDocument(doc: OpenApiDocument): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}

/**
 * A zod validator for a schema of the document (a `$ref` to a component, or an inline schema),
 * built from the document's JSON Schema rather than from the contract's zod schemas: it checks
 * what the document promises. zod's `fromJSONSchema` resolves only `#/$defs/…` references, so
 * the components are moved there.
 */
export function openApiSchemaValidator(doc: OpenApiDocument, schema: JsonSchema): z.ZodType {
  const rebase = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(rebase);
    if (typeof value !== 'object' || value === null) return value;
    return Object.fromEntries(
      Object.entries(value).map(([key, child]) => [
        key,
        key === '$ref' && typeof child === 'string' ? child.replace('#/components/schemas/', '#/$defs/') : rebase(child),
      ]),
    );
  };
  const root = { ...(rebase(schema) as JsonSchema), $defs: rebase(doc.components.schemas) };
  return z.fromJSONSchema(root as Parameters<typeof z.fromJSONSchema>[0]);
}
