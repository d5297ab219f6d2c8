/**
 * Who acted and why: every action's audit entry carries the authenticated caller's name and
 * groups and the operator's note (incident ID, reason) from the request body; the note is
 * bounded (400 naming the field), strings in entries are bounded, resync is rate-limited, and
 * reads are served from the last build (they cannot force snapshot rebuilds).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_ACTION_REASON_LENGTH, MAX_INCIDENT_ID_LENGTH } from '../../lib/api/actions.ts';
import { ApiErrorBodySchema } from '../../lib/api/api-error.ts';
import { type Snapshot } from '../../lib/api/snapshot.ts';
import { parseSnapshot } from '../../lib/api/compact-snapshot.ts';
import { FakeClock } from '../../lib/clock/fake-clock.ts';
import { discardLogger } from '../../lib/volume/logger.ts';
import { AUDIT_MAX_GROUPS, AUDIT_NAME_LIMIT, AuditLog } from './audit-log.ts';
import type { Authenticator } from './authenticator.ts';
import { startServer, type FixtureOptions, type ServerFixture } from './testing/server-fixture.ts';

/** A TokenReview-like authenticator: every request is alice, in two groups. */
const alice: Authenticator = { authenticate: () => ({ ok: true, caller: 'alice@example.com', groups: ['volumescope:operators', 'system:authenticated'] }) };

describe('action audit: names, groups and the operator note', () => {
  let fx: ServerFixture | undefined;
  afterEach(async () => {
    await fx?.close();
    fx = undefined;
  });
  const start = async (options: FixtureOptions = {}): Promise<ServerFixture> => {
    fx = await startServer({ authenticator: alice, ...options });
    return fx;
  };
  const snapshot = async (f: ServerFixture): Promise<Snapshot> => parseSnapshot((await f.client.get('/api/v1/snapshot')).json);

  it('records the caller, the groups, the incident ID and the reason of a resync', async () => {
    const f = await start();

    const res = await f.client.post('/api/v1/resync', { incidentId: 'INC-4711', reason: 'mount table looked stale\nafter a node reboot' });
    const last = (await snapshot(f)).audit.at(-1);

    expect(res.status).toBe(200);
    expect(last).toMatchObject({
      caller: 'alice@example.com',
      groups: ['volumescope:operators', 'system:authenticated'],
      incidentId: 'INC-4711',
      reason: 'mount table looked stale\nafter a node reboot',
      action: 'resync',
      result: 'succeeded',
    });
  });

  it('records null for a note not given (an empty resync body, as older clients send)', async () => {
    const f = await start();

    await f.client.post('/api/v1/resync', '');
    const last = (await snapshot(f)).audit.at(-1);

    expect(last).toMatchObject({ caller: 'alice@example.com', incidentId: null, reason: null, action: 'resync' });
  });

  it('records the note of a refused retry with its checks', async () => {
    const f = await start();

    const res = await f.client.post('/api/v1/operations/retry', { volume: 'nothing/here', incidentId: 'INC-1', reason: 'stuck mount' });
    const last = (await snapshot(f)).audit.at(-1);

    expect(res.status).toBe(404);
    expect(last).toMatchObject({ action: 'retry', result: 'refused', incidentId: 'INC-1', reason: 'stuck mount', groups: ['volumescope:operators', 'system:authenticated'] });
    expect(last?.checks.length).toBeGreaterThan(0);
  });

  it.each([
    { field: 'incidentId', body: { incidentId: 'x'.repeat(MAX_INCIDENT_ID_LENGTH + 1) } },
    { field: 'reason', body: { reason: 'x'.repeat(MAX_ACTION_REASON_LENGTH + 1) } },
    { field: 'incidentId', body: { incidentId: 'two\nlines' } },
    { field: 'reason', body: { reason: 'bell\u0007' } },
  ])('answers 400 naming $field for a note that breaks its bounds, and audits nothing', async ({ field, body }) => {
    const f = await start();

    const res = await f.client.post('/api/v1/unmount', { podUid: 'p', volume: 'v', ...body });

    expect(res.status).toBe(400);
    expect(ApiErrorBodySchema.parse(res.json).error.field).toBe(field);
    expect((await snapshot(f)).audit).toEqual([]);
  });

  it('rate-limits resync per node: the call over the limit is a 429 with Retry-After, audited as refused, and runs no pass', async () => {
    const f = await start({ server: { resyncRateLimit: { limit: 2, windowMs: 60_000 } } });

    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await f.client.post('/api/v1/resync', '')).status);
    const refused = await f.client.post('/api/v1/resync', '');
    const last = (await snapshot(f)).audit.at(-1);

    expect(statuses).toEqual([200, 200, 429]);
    expect(refused.headers.get('retry-after')).toBe('60');
    expect(f.runtime.resyncs).toBe(2);
    expect(last).toMatchObject({ action: 'resync', result: 'refused' });
    expect(last?.checks.map((c) => [c.name, c.ok])).toEqual([['rate-limit', false]]);
    await f.harness.clock.advance(60_000);
    expect((await f.client.post('/api/v1/resync', '')).status).toBe(200);
  });

  it('serves snapshot and summary reads from the last build: 200 reads between two changes cause no rebuild', async () => {
    const f = await start({ server: { minRebuildIntervalMs: 1000 } });
    f.runtime.emitEvent({ type: 'Normal', reason: 'First', podUid: null, message: '' });
    await f.harness.clock.advance(0); // published at once: nothing was built for 1 s
    const built = await snapshot(f);
    f.runtime.emitEvent({ type: 'Normal', reason: 'Second', podUid: null, message: '' }); // a change right after that build

    const seqs = new Set<number>();
    for (let i = 0; i < 100; i++) {
      seqs.add((await snapshot(f)).seq);
      seqs.add(((await f.client.get('/api/v1/summary')).json as { seq: number }).seq);
    }
    await f.harness.clock.advance(1000); // the feed's own pacing publishes it
    const after = await snapshot(f);

    expect(built.recentEvents.map((e) => e.reason)).toEqual(['First']);
    expect([...seqs]).toEqual([built.seq]);
    expect(after.seq).toBe(built.seq + 1);
    expect(after.recentEvents.map((e) => e.reason)).toEqual(['First', 'Second']);
  });
});

describe('AuditLog bounds', () => {
  it('cuts every string an entry keeps and caps groups and checks, with visible markers', () => {
    const log = new AuditLog(new FakeClock(), discardLogger, () => undefined);
    const huge = 'y'.repeat(1_000_000);

    const entry = log.record({
      caller: huge,
      groups: Array.from({ length: 1000 }, (_, i) => `g${i}-${huge}`),
      incidentId: huge,
      reason: huge,
      action: 'unmount',
      target: huge,
      checks: Array.from({ length: 1000 }, () => ({ name: huge, ok: false, detail: huge })),
      result: 'refused',
      message: huge,
    });

    expect(JSON.stringify(entry).length).toBeLessThan(200_000);
    expect(entry.caller.length).toBeLessThanOrEqual(AUDIT_NAME_LIMIT);
    expect(entry.caller).toMatch(/\[truncated [0-9]+ characters\]$/);
    expect(entry.groups).toHaveLength(AUDIT_MAX_GROUPS + 1);
    expect(entry.groups?.at(-1)).toBe(`... [${1000 - AUDIT_MAX_GROUPS} more groups]`);
    expect(entry.message?.length).toBeLessThanOrEqual(4096);
  });
});
