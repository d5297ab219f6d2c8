/**
 * Property tests of the snapshot contract: arbitrary snapshots survive JSON, and folding
 * applyDelta over the deltas of a long random history reproduces every state exactly.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyDelta, applyDeltaIfNewer, computeDelta, DeltaSchema, isDeltaSequenceError, type Delta } from './delta.ts';
import { normalizeSnapshot } from './normalize-snapshot.ts';
import {
  actualVolumeKey,
  desiredPodKey,
  driverKey,
  operationKey,
  podMountKey,
  reconstructedVolumeKey,
  SnapshotSchema,
  sourceErrorKey,
  type ActualVolume,
  type AuditEntry,
  type DesiredPod,
  type Driver,
  type Operation,
  type PodMount,
  type ReconstructedVolume,
  type ReconstructionStatus,
  type RecentEvent,
  type Snapshot,
  type SourceError,
} from './snapshot.ts';
import {
  actualVolume,
  auditEntry,
  count,
  desiredPod,
  driver,
  operation,
  podErrorList,
  podMount,
  podUid,
  recentEvent,
  reconstructedVolume,
  reconstructionStatus,
  snapshotArb,
  sourceError,
  volumeName,
} from './testing/snapshot-arbitraries.ts';

// CHANGES
// One random change to a snapshot, as data so that a failing history prints readably.

type Change =
  | { kind: 'put-pod'; pod: DesiredPod }
  | { kind: 'put-volume'; volume: ActualVolume }
  | { kind: 'put-mount'; at: number; mount: PodMount }
  | { kind: 'put-operation'; operation: Operation }
  | { kind: 'put-reconstructed'; volume: ReconstructedVolume }
  | { kind: 'put-source-error'; error: SourceError }
  | { kind: 'put-driver'; driver: Driver }
  | { kind: 'put-pod-errors'; uid: string; errors: string[] }
  | { kind: 'remove'; collection: Collection; at: number }
  | { kind: 'event'; event: RecentEvent; max: number }
  | { kind: 'audit'; entry: AuditEntry; max: number }
  | { kind: 'reconstruction-status'; status: ReconstructionStatus }
  | { kind: 'scalars'; statesSynced: boolean; checked: number; foundDetached: string[] }
  | { kind: 'reorder' };

type Collection = 'pods' | 'volumes' | 'operations' | 'reconstructed' | 'source-errors' | 'drivers' | 'pod-errors';

const changeArb: fc.Arbitrary<Change> = fc.oneof(
  desiredPod.map((pod) => ({ kind: 'put-pod' as const, pod })),
  actualVolume.map((volume) => ({ kind: 'put-volume' as const, volume })),
  fc.tuple(fc.nat(), podMount).map(([at, mount]) => ({ kind: 'put-mount' as const, at, mount })),
  operation.map((op) => ({ kind: 'put-operation' as const, operation: op })),
  reconstructedVolume.map((volume) => ({ kind: 'put-reconstructed' as const, volume })),
  sourceError.map((error) => ({ kind: 'put-source-error' as const, error })),
  driver.map((d) => ({ kind: 'put-driver' as const, driver: d })),
  fc.tuple(podUid, podErrorList).map(([uid, errors]) => ({ kind: 'put-pod-errors' as const, uid, errors })),
  fc
    .tuple(
      fc.constantFrom<Collection>('pods', 'volumes', 'operations', 'reconstructed', 'source-errors', 'drivers', 'pod-errors'),
      fc.nat(),
    )
    .map(([collection, at]) => ({ kind: 'remove' as const, collection, at })),
  fc.tuple(recentEvent, fc.integer({ min: 0, max: 6 })).map(([event, max]) => ({ kind: 'event' as const, event, max })),
  fc.tuple(auditEntry, fc.integer({ min: 0, max: 4 })).map(([entry, max]) => ({ kind: 'audit' as const, entry, max })),
  reconstructionStatus.map((status) => ({ kind: 'reconstruction-status' as const, status })),
  fc
    .tuple(fc.boolean(), count, fc.array(volumeName, { maxLength: 2 }))
    .map(([statesSynced, checked, foundDetached]) => ({ kind: 'scalars' as const, statesSynced, checked, foundDetached })),
  fc.constant({ kind: 'reorder' as const }),
);

/** `items` with the item of the same key replaced, or the item appended. */
function put<T>(items: T[], item: T, key: (t: T) => string): T[] {
  const k = key(item);
  return items.some((i) => key(i) === k) ? items.map((i) => (key(i) === k ? item : i)) : [...items, item];
}

function removeAt<T>(items: T[], at: number): T[] {
  return items.filter((_, i) => i !== at % Math.max(1, items.length));
}

/** The state after `change`; the input is not modified. */
function applyChange(s: Snapshot, change: Change): Snapshot {
  switch (change.kind) {
    case 'put-pod':
      return { ...s, desired: { pods: put(s.desired.pods, change.pod, desiredPodKey) } };
    case 'put-volume':
      return { ...s, actual: { volumes: put(s.actual.volumes, change.volume, actualVolumeKey) } };
    case 'put-mount': {
      const target = s.actual.volumes[change.at % Math.max(1, s.actual.volumes.length)];
      if (target === undefined) return s;
      const volume = { ...target, pods: put(target.pods, change.mount, podMountKey) };
      return { ...s, actual: { volumes: put(s.actual.volumes, volume, actualVolumeKey) } };
    }
    case 'put-operation':
      return { ...s, operations: put(s.operations, change.operation, operationKey) };
    case 'put-reconstructed':
      return {
        ...s,
        reconstruction: { ...s.reconstruction, volumes: put(s.reconstruction.volumes, change.volume, reconstructedVolumeKey) },
      };
    case 'put-source-error':
      return { ...s, sourceErrors: put(s.sourceErrors, change.error, sourceErrorKey) };
    case 'put-driver':
      return { ...s, drivers: put(s.drivers, change.driver, driverKey) };
    case 'put-pod-errors':
      return { ...s, podErrors: { ...s.podErrors, [change.uid]: change.errors } };
    case 'remove':
      switch (change.collection) {
        case 'pods':
          return { ...s, desired: { pods: removeAt(s.desired.pods, change.at) } };
        case 'volumes':
          return { ...s, actual: { volumes: removeAt(s.actual.volumes, change.at) } };
        case 'operations':
          return { ...s, operations: removeAt(s.operations, change.at) };
        case 'reconstructed':
          return { ...s, reconstruction: { ...s.reconstruction, volumes: removeAt(s.reconstruction.volumes, change.at) } };
        case 'source-errors':
          return { ...s, sourceErrors: removeAt(s.sourceErrors, change.at) };
        case 'drivers':
          return { ...s, drivers: removeAt(s.drivers, change.at) };
        case 'pod-errors':
          return { ...s, podErrors: Object.fromEntries(removeAt(Object.entries(s.podErrors), change.at)) };
      }
      break;
    case 'event':
      return { ...s, recentEvents: [...s.recentEvents, change.event].slice(-change.max || s.recentEvents.length + 1) };
    case 'audit':
      return { ...s, audit: [...s.audit, change.entry].slice(-change.max || s.audit.length + 1) };
    case 'reconstruction-status':
      return { ...s, reconstruction: { ...s.reconstruction, ...change.status } };
    case 'scalars':
      return {
        ...s,
        statesSynced: change.statesSynced,
        attachVerification: { ...s.attachVerification, checked: change.checked, foundDetached: change.foundDetached },
      };
    case 'reorder':
      return {
        ...s,
        desired: { pods: [...s.desired.pods].reverse().map((p) => ({ ...p, volumes: [...p.volumes].reverse() })) },
        actual: { volumes: [...s.actual.volumes].reverse() },
        operations: [...s.operations].reverse(),
        drivers: [...s.drivers].reverse(),
        podErrors: Object.fromEntries(Object.entries(s.podErrors).reverse()),
      };
  }
  return s;
}

/** One step of history: one to three changes and a seq that grows by one to three. */
const stepArb = fc.tuple(fc.array(changeArb, { minLength: 1, maxLength: 3 }), fc.integer({ min: 1, max: 3 }));

function throwsSequenceError(fn: () => unknown): boolean {
  try {
    fn();
  } catch (err) {
    return isDeltaSequenceError(err);
  }
  return false;
}

/**
 * Plays a history: the agent applies each step's changes and publishes a delta, the client
 * applies the delta's wire copy. After every step the client equals the agent's normalized
 * state, the same delta again is rejected, and stale deltas are ignored.
 */
function replay(initial: Snapshot, steps: [Change[], number][]): void {
  let agent = initial;
  let client = normalizeSnapshot(initial);
  let previous: Delta | null = null;
  steps.forEach(([changes, advance], index) => {
    // Act
    const next = { ...changes.reduce(applyChange, agent), seq: agent.seq + advance };
    const delta = computeDelta(agent, next);
    const received = DeltaSchema.parse(JSON.parse(JSON.stringify(delta)));
    client = applyDelta(client, received);
    agent = next;
    // Assert
    try {
      expect(client).toStrictEqual(normalizeSnapshot(agent));
      expect(throwsSequenceError(() => applyDelta(client, received))).toBe(true);
      expect(applyDeltaIfNewer(client, received)).toBe(client);
      if (previous !== null) expect(applyDeltaIfNewer(client, previous)).toBe(client);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      throw new Error(`step ${index} (${JSON.stringify(changes)}): ${message}`, { cause: err });
    }
    previous = received;
  });
  expect(SnapshotSchema.parse(client)).toStrictEqual(normalizeSnapshot(agent));
}

// PROPERTIES

describe('snapshot properties', () => {
  it('a snapshot survives a JSON round trip through the schema', () => {
    fc.assert(
      fc.property(snapshotArb, (s) => {
        expect(SnapshotSchema.parse(JSON.parse(JSON.stringify(s)))).toStrictEqual(s);
      }),
      { numRuns: 300 },
    );
  });

  it('normalizing is idempotent and keeps a normalized snapshot as is', () => {
    fc.assert(
      fc.property(snapshotArb, (s) => {
        const once = normalizeSnapshot(s);
        expect(normalizeSnapshot(once)).toBe(once);
        expect(SnapshotSchema.parse(once)).toStrictEqual(once);
      }),
      { numRuns: 300 },
    );
  });

  it('the delta between any two snapshots takes the first to the second', () => {
    fc.assert(
      fc.property(snapshotArb, snapshotArb, (a, b) => {
        const later = { ...b, seq: a.seq + 1 };
        expect(applyDelta(a, computeDelta(a, later))).toStrictEqual(normalizeSnapshot(later));
      }),
      { numRuns: 300 },
    );
  });

  it('folding applyDelta over 1,000 random changes reproduces every state', () => {
    fc.assert(
      fc.property(snapshotArb, fc.array(stepArb, { minLength: 1_000, maxLength: 1_000 }), replay),
      // A fixed-length history cannot shrink in length and shrinking it can take minutes; past
      // the limit the simplest history found so far is reported (the short-history property
      // below gives minimal counterexamples).
      { numRuns: 10, plugins: [fc.interruptAfterTimeLimit(30_000)] },
    );
  }, 60_000);

  it('folding applyDelta over short random histories reproduces every state', () => {
    fc.assert(fc.property(snapshotArb, fc.array(stepArb, { maxLength: 30 }), replay), { numRuns: 300 });
  });

  it('a reordered snapshot gives a delta without changes', () => {
    fc.assert(
      fc.property(snapshotArb, (s) => {
        const reordered = { ...applyChange(s, { kind: 'reorder' }), seq: s.seq + 1 };
        expect(computeDelta(s, reordered)).toStrictEqual({ fromSeq: s.seq, seq: s.seq + 1 });
      }),
      { numRuns: 200 },
    );
  });
});
