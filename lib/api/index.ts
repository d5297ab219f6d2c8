/**
 * VolumeScope's agent API contract: snapshot and delta schemas, pure delta functions, the SSE
 * format, request/response bodies and the error shape. Depends on zod only, so the agent and
 * the browser dashboard share it. See docs/api.md.
 */
export * from './actions.ts';
export * from './agent-stream.ts';
export * from './api-error.ts';
export * from './compact-snapshot.ts';
export * from './delta.ts';
export * from './json-equal.ts';
export * from './normalize-snapshot.ts';
export * from './openapi.ts';
export * from './request-body.ts';
export * from './routes.ts';
export * from './snapshot.ts';
export * from './sse.ts';
export * from './summary.ts';
export * from './summary-metrics.ts';
export * from './mount-health.ts';
