/**
 * The delta composer's contract: applying the composed delta gives exactly the state that folding
 * `applyDelta` over the deltas one by one gives. Deltas are generated directly (not only with
 * computeDelta), so the cases an agent rarely sends are covered too: an upsert and a removal of
 * the same key in one delta, removals of absent keys, ring lengths longer than what is there.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  applyDelta,
  normalizeSnapshot,
  type ActualVolume,
  type AuditEntry,
  type Delta,
  type DesiredPod,
  type Driver,
  type Operation,
  type OperationHistory,
  type ReconstructedVolume,
  type RecentEvent,
  type Snapshot,
  type SourceError,
} from '../api/index.ts';
import { exampleSnapshot } from '../api/testing/snapshot-fixtures.ts';
import { canCompose, createDeltaComposer } from './perf-delta-composer.ts';

const base = normalizeSnapshot(exampleSnapshot());

// Keys come from small pools, so changes hit the base's items, each other's, and absent keys.
const key = (prefix: string) => fc.constantFrom(...[0, 1, 2, 3].map((i) => `${prefix}-${i}`));
const version = fc.nat({ max: 3 });

const pod: fc.Arbitrary<DesiredPod> = fc.record({ uid: key('uid'), v: version }).map(({ uid, v }) => ({
  uid,
  namespace: 'ns',
  name: `pod-${v}`,
  // Out of key order on purpose: normalization sorts them.
  volumes: [
    { name: 'b', uniqueVolumeName: `vol-${v}`, pluginName: 'p', attachable: false, deviceMountable: false, reportedInUse: false },
    { name: 'a', uniqueVolumeName: 'vol-a', pluginName: 'p', attachable: true, deviceMountable: true, reportedInUse: v > 1 },
  ],
}));
const volume: fc.Arbitrary<ActualVolume> = fc.record({ name: key('vol'), v: version }).map(({ name, v }) => ({
  uniqueVolumeName: name,
  pluginName: 'p',
  attachState: v > 1 ? 'uncertain' : 'attached',
  devicePath: '',
  deviceMountState: 'not-mounted',
  deviceMountPath: '',
  pods: [
    { podUid: 'uid-2', podName: 'x', outerVolumeName: 'a', mountState: 'mounted', remountRequired: false },
    { podUid: 'uid-1', podName: 'y', outerVolumeName: 'a', mountState: v > 0 ? 'mounted' : 'uncertain', remountRequired: false },
  ],
}));
const operation: fc.Arbitrary<Operation> = fc.record({ vol: key('vol'), v: version }).map(({ vol, v }) => ({
  operationName: 'volume_mount',
  volume: vol,
  podUid: null,
  nodeName: null,
  state: v > 1 ? 'running' : 'backoff',
  failures: v,
  lastError: null,
  lastErrorAt: null,
  retryAt: null,
  durationBeforeRetryMs: 500,
  startedAt: null,
}));
const history: fc.Arbitrary<OperationHistory> = fc.record({ volume: key('vol'), v: version }).map(({ volume, v }) => ({
  operationName: 'volume_mount',
  volume,
  podUid: null,
  nodeName: null,
  firstFailureAt: 1,
  attemptsTotal: v + 1,
  attempts: [{ startedAt: 1, durationMs: v, error: v > 1 ? null : 'e' }],
  succeededAt: v > 1 ? v : null,
}));
const reconstructed: fc.Arbitrary<ReconstructedVolume> = fc.record({ uid: key('uid'), v: version }).map(({ uid, v }) => ({
  podUid: uid,
  volumeName: 'a',
  pluginName: 'p',
  outcome: v > 1 ? 'failed' : 'reconstructed',
  error: null,
  at: v,
}));
const sourceError: fc.Arbitrary<SourceError> = fc.record({ file: key('file'), v: version }).map(({ file, v }) => ({ file, message: `bad ${v}` }));
const driver: fc.Arbitrary<Driver> = fc.record({ name: key('driver'), v: version }).map(({ name, v }) => ({
  name,
  endpoint: 'unix:///x',
  registered: v > 0,
  nodeId: null,
  capabilities: [],
  lastProbeAt: null,
  lastError: null,
}));
const event: fc.Arbitrary<RecentEvent> = version.map((v) => ({ time: v, type: 'Normal', reason: `R${v}`, podUid: null, message: `m${v}` }));
const auditEntry: fc.Arbitrary<AuditEntry> = version.map((v) => ({ time: v, caller: 'c', action: 'resync', target: null, checks: [], result: 'succeeded', message: null }));

function keyed<T>(item: fc.Arbitrary<T>, keyOf: (t: T) => string, removable: fc.Arbitrary<string>) {
  return fc.record(
    { upsert: fc.uniqueArray(item, { selector: keyOf, maxLength: 3 }), remove: fc.array(removable, { maxLength: 3 }) },
    { requiredKeys: [] },
  );
}

function ring<T>(item: fc.Arbitrary<T>) {
  return fc.record({ append: fc.array(item, { maxLength: 4 }), length: fc.nat({ max: 8 }) });
}

/** A delta without its sequence numbers. */
const deltaBody = fc.record(
  {
    set: fc.record(
      {
        statesSynced: fc.boolean(),
        nodeName: fc.constantFrom('n1', 'n2'),
        reconstruction: fc.record({ state: fc.constantFrom('pending' as const, 'running' as const, 'done' as const), startedAt: fc.option(version, { nil: null }), finishedAt: fc.option(version, { nil: null }) }),
        attachVerification: fc.record({ lastRunAt: fc.option(version, { nil: null }), checked: version, foundDetached: fc.array(key('vol'), { maxLength: 2 }) }),
      },
      { requiredKeys: [] },
    ),
    desiredPods: keyed(pod, (p) => p.uid, key('uid')),
    actualVolumes: keyed(volume, (v) => v.uniqueVolumeName, key('vol')),
    operations: keyed(operation, (o) => `${o.operationName}|${o.volume}||`, key('vol').map((v) => `volume_mount|${v}||`)),
    operationHistory: keyed(history, (h) => `${h.operationName}|${h.volume}||`, key('vol').map((v) => `volume_mount|${v}||`)),
    reconstructionVolumes: keyed(reconstructed, (r) => `${r.podUid}|${r.volumeName}`, key('uid').map((u) => `${u}|a`)),
    podErrors: fc.record({ upsert: fc.dictionary(key('uid'), fc.array(fc.constantFrom('e1', 'e2'), { maxLength: 2 })), remove: fc.array(key('uid'), { maxLength: 2 }) }, { requiredKeys: [] }),
    sourceErrors: keyed(sourceError, (e) => e.file, key('file')),
    drivers: keyed(driver, (d) => d.name, key('driver')),
    recentEvents: ring(event),
    audit: ring(auditEntry),
  },
  { requiredKeys: [] },
);

/** Deltas that follow `from` one after the other. */
function chain(from: Snapshot, bodies: readonly Omit<Delta, 'fromSeq' | 'seq'>[]): Delta[] {
  return bodies.map((body, i) => ({ ...body, fromSeq: from.seq + i, seq: from.seq + i + 1 }));
}

function composeAll(from: Snapshot, deltas: readonly Delta[]): Delta | null {
  const composer = createDeltaComposer(from);
  for (const d of deltas) composer.add(d);
  return composer.compose();
}

describe('composing stream deltas', () => {
  it('applying the composed delta equals applying the deltas one by one', () => {
    fc.assert(
      fc.property(fc.array(deltaBody, { minLength: 1, maxLength: 8 }), (bodies) => {
        // Arrange
        const deltas = chain(base, bodies);
        const sequential = deltas.reduce(applyDelta, base);

        // Act
        const composed = composeAll(base, deltas);

        // Assert
        expect(composed).not.toBeNull();
        if (composed === null) return;
        expect(composed.fromSeq).toBe(base.seq);
        expect(composed.seq).toBe(sequential.seq);
        const result = applyDelta(base, composed);
        expect(result).toEqual(sequential);
        expect(Object.keys(result.podErrors)).toEqual(Object.keys(sequential.podErrors));
      }),
      { numRuns: 400 },
    );
  });

  it('a ring trimmed short and then appended to keeps only what the sequential trims keep', () => {
    // Arrange: three events, trimmed to 1, then 1 appended with a length of 3 (more than is left)
    const e = (n: number): RecentEvent => ({ time: n, type: 'Normal', reason: `R${n}`, podUid: null, message: '' });
    const from = { ...base, recentEvents: [e(1), e(2), e(3)] };
    const deltas = chain(from, [{ recentEvents: { append: [], length: 1 } }, { recentEvents: { append: [e(4)], length: 3 } }]);

    // Act
    const result = applyDelta(from, composeAll(from, deltas) as Delta);

    // Assert: only e(3) survived the first trim; e(2) must not come back
    expect(result.recentEvents).toEqual([e(3), e(4)]);
    expect(result.recentEvents).toEqual(deltas.reduce(applyDelta, from).recentEvents);
  });

  it('within one delta an upsert wins over a removal of the same key; a later removal wins over both', () => {
    const op = base.operations[0] as Operation;
    const key = `${op.operationName}|${op.volume}|${op.podUid ?? ''}|${op.nodeName ?? ''}`;
    const changed = { ...op, failures: op.failures + 1 };
    const upsertAndRemove = chain(base, [{ operations: { upsert: [changed], remove: [key] } }]);
    expect(applyDelta(base, composeAll(base, upsertAndRemove) as Delta).operations).toEqual([changed]);
    const thenRemove = chain(base, [{ operations: { upsert: [changed], remove: [key] } }, { operations: { remove: [key] } }]);
    expect(applyDelta(base, composeAll(base, thenRemove) as Delta).operations).toEqual([]);
  });

  it('no deltas compose to nothing', () => {
    expect(composeAll(base, [])).toBeNull();
  });

  it('a delta that upserts one key twice cannot be composed (applyDelta would keep both items)', () => {
    const op = base.operations[0] as Operation;
    expect(canCompose({ fromSeq: 1, seq: 2, operations: { upsert: [op, { ...op, failures: 9 }] } })).toBe(false);
    expect(canCompose({ fromSeq: 1, seq: 2, operations: { upsert: [op] }, drivers: { remove: ['x', 'x'] } })).toBe(true);
  });
});
