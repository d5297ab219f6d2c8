/** The JSON examples of docs/api.md must fit the schemas exactly (no unknown or misspelled fields). */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  HealthResponseSchema,
  ResyncResponseSchema,
  RetryOperationRequestSchema,
  RetryOperationResponseSchema,
  UnmountRequestSchema,
  UnmountResponseSchema,
  UnmountRunningResponseSchema,
} from './actions.ts';
import { ApiErrorBodySchema } from './api-error.ts';
import { applyDelta, DeltaSchema } from './delta.ts';
import { jsonEqual } from './json-equal.ts';
import { CompactSnapshotSchema, parseSnapshot } from './compact-snapshot.ts';
import { SnapshotSchema } from './snapshot.ts';
import { BlockersResponseSchema } from './mount-health.ts';

const doc = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
const examples = [...doc.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');

const schemas: [string, z.ZodType][] = [
  ['snapshot', SnapshotSchema],
  ['compact snapshot', CompactSnapshotSchema],
  ['delta', DeltaSchema],
  ['health', HealthResponseSchema],
  ['resync response', ResyncResponseSchema],
  ['retry request', RetryOperationRequestSchema],
  ['retry response', RetryOperationResponseSchema],
  ['unmount request', UnmountRequestSchema],
  ['unmount response', UnmountResponseSchema],
  ['unmount running response', UnmountRunningResponseSchema],
  ['error', ApiErrorBodySchema],
  ['blockers response', BlockersResponseSchema],
];

/** The name of the first schema that parses `json` to an equal value (nothing stripped). */
function schemaOf(json: unknown): string | null {
  for (const [name, schema] of schemas) {
    const parsed = schema.safeParse(json);
    if (parsed.success && jsonEqual(parsed.data, json)) return name;
  }
  return null;
}

describe('docs/api.md', () => {
  it('has JSON examples', () => {
    expect(examples.length).toBeGreaterThanOrEqual(10);
  });

  it.each(examples.map((text, index) => ({ index, text })))('example $index fits a schema', ({ text }) => {
    expect(schemaOf(JSON.parse(text))).not.toBeNull();
  });

  it('its compact snapshot example decodes to a snapshot', () => {
    const compact = examples.find((t) => schemaOf(JSON.parse(t)) === 'compact snapshot');
    expect(parseSnapshot(JSON.parse(compact ?? '')).desired.pods[0]?.volumes[0]?.uniqueVolumeName).toMatch(/^kubernetes\.io\/empty-dir\/.+-cache$/);
  });

  it('its delta example applies to its snapshot example', () => {
    const snapshot = SnapshotSchema.parse(JSON.parse(examples.find((t) => schemaOf(JSON.parse(t)) === 'snapshot') ?? ''));
    const delta = DeltaSchema.parse(JSON.parse(examples.find((t) => schemaOf(JSON.parse(t)) === 'delta') ?? ''));
    expect(applyDelta(snapshot, delta).seq).toBe(delta.seq);
  });
});
