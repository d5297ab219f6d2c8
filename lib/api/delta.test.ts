import { describe, expect, it } from 'vitest';
import {
  applyDelta,
  applyDeltaIfNewer,
  computeDelta,
  DeltaSchema,
  isDeltaSequenceError,
  snapshotFieldTransport,
  type Delta,
} from './delta.ts';
import { normalizeSnapshot } from './normalize-snapshot.ts';
import {
  exampleSnapshot,
  FIXTURE_T0,
  generatedOperation,
  generatedPod,
  generatedVolume,
  generatedVolumeName,
  largeSnapshot,
} from './testing/snapshot-fixtures.ts';
import { operationKey, SnapshotSchema, type DesiredVolume, type PodMount, type RecentEvent, type Snapshot } from './snapshot.ts';

function event(n: number): RecentEvent {
  return { time: FIXTURE_T0 + n, type: 'Normal', reason: 'SuccessfulMountVolume', podUid: null, message: `event ${n}` };
}

/** The next snapshot: `change` applied to a deep copy, with `seq` advanced. */
function next(prev: Snapshot, change: (s: Snapshot) => void): Snapshot {
  const copy = structuredClone(prev);
  change(copy);
  copy.seq = prev.seq + 1;
  return copy;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

function caught(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

describe('computeDelta and applyDelta', () => {
  const base = exampleSnapshot();
  const webUid = base.desired.pods[0]?.uid ?? '';
  const dbUid = base.desired.pods[1]?.uid ?? '';
  const failing = base.operations[0];
  if (failing === undefined) throw new Error('fixture has no operation');

  it.each<{
    name: string;
    setup?: (s: Snapshot) => void;
    change: (s: Snapshot) => void;
    want: Omit<Delta, 'fromSeq' | 'seq'>;
  }>([
    {
      name: 'nothing changed gives a delta with only the sequence numbers',
      change: () => undefined,
      want: {},
    },
    {
      name: 'a pod added to the desired state travels as one upsert',
      change: (s) => s.desired.pods.push(generatedPod(7)),
      want: { desiredPods: { upsert: [generatedPod(7)] } },
    },
    {
      name: 'a pod removed from the desired state travels as its uid',
      change: (s) => s.desired.pods.splice(0, 1),
      want: { desiredPods: { remove: [webUid] } },
    },
    {
      name: 'a volume whose pod mount became uncertain is upserted whole',
      change: (s) => {
        const mount = s.actual.volumes[0]?.pods[0];
        if (mount !== undefined) mount.mountState = 'uncertain';
      },
      want: {
        actualVolumes: {
          upsert: [
            {
              ...(base.actual.volumes[0] as Snapshot['actual']['volumes'][number]),
              pods: [{ ...(base.actual.volumes[0]?.pods[0] as Snapshot['actual']['volumes'][number]['pods'][number]), mountState: 'uncertain' }],
            },
          ],
        },
      },
    },
    {
      name: 'an operation that failed again is upserted under its key',
      change: (s) => {
        const op = s.operations[0];
        if (op !== undefined) op.failures = 4;
      },
      want: { operations: { upsert: [{ ...failing, failures: 4 }] } },
    },
    {
      name: 'an operation that succeeded is removed by its key',
      change: (s) => (s.operations = []),
      want: { operations: { remove: [operationKey(failing)] } },
    },
    {
      name: 'a restarted reconstruction sets its status and removes its old results',
      change: (s) => (s.reconstruction = { state: 'running', startedAt: FIXTURE_T0 + 9, finishedAt: null, volumes: [] }),
      want: {
        set: { reconstruction: { state: 'running', startedAt: FIXTURE_T0 + 9, finishedAt: null } },
        reconstructionVolumes: { remove: [`${webUid}|data`] },
      },
    },
    {
      name: 'a new pod error travels as the pod’s whole new list',
      change: (s) => (s.podErrors[dbUid] = [...(s.podErrors[dbUid] ?? []), 'second']),
      want: { podErrors: { upsert: { [dbUid]: [...(base.podErrors[dbUid] ?? []), 'second'] } } },
    },
    {
      name: 'pod errors that were popped are removed by pod uid',
      change: (s) => (s.podErrors = {}),
      want: { podErrors: { remove: [dbUid] } },
    },
    {
      name: 'a broken manifest adds a source error keyed by file',
      change: (s) => s.sourceErrors.push({ file: '/etc/kubernetes/manifests/x.yaml', message: 'bad yaml' }),
      want: { sourceErrors: { upsert: [{ file: '/etc/kubernetes/manifests/x.yaml', message: 'bad yaml' }] } },
    },
    {
      name: 'a driver that lost its registration is upserted by name',
      change: (s) => {
        const driver = s.drivers[0];
        if (driver !== undefined) driver.registered = false;
      },
      want: { drivers: { upsert: [{ ...(base.drivers[0] as Snapshot['drivers'][number]), registered: false }] } },
    },
    {
      name: 'a new event is appended to the ring buffer',
      change: (s) => s.recentEvents.push(event(1)),
      want: { recentEvents: { append: [event(1)], length: 2 } },
    },
    {
      name: 'a full ring buffer appends and trims from the front',
      setup: (s) => (s.recentEvents = [event(1), event(2)]),
      change: (s) => (s.recentEvents = [event(2), event(3)]),
      want: { recentEvents: { append: [event(3)], length: 2 } },
    },
    {
      name: 'a ring buffer that was replaced entirely travels whole',
      change: (s) => (s.audit = []),
      want: { audit: { append: [], length: 0 } },
    },
    {
      name: 'scalars and small objects are replaced when they change',
      change: (s) => {
        s.statesSynced = false;
        s.attachVerification = { lastRunAt: FIXTURE_T0 + 70_000, checked: 2, foundDetached: ['v'] };
      },
      want: {
        set: { statesSynced: false, attachVerification: { lastRunAt: FIXTURE_T0 + 70_000, checked: 2, foundDetached: ['v'] } },
      },
    },
  ])('$name', ({ setup, change, want }) => {
    // Arrange
    const start = structuredClone(base);
    setup?.(start);
    const prev = deepFreeze(start);
    const wanted = deepFreeze(next(prev, change));
    // Act
    const delta = computeDelta(prev, wanted);
    const applied = applyDelta(prev, delta);
    // Assert
    expect(delta).toStrictEqual({ fromSeq: prev.seq, seq: wanted.seq, ...want });
    expect(applied).toStrictEqual(normalizeSnapshot(wanted));
    expect(DeltaSchema.parse(JSON.parse(JSON.stringify(delta)))).toStrictEqual(delta);
  });

  it('sorts upserts and removals by key and puts applied collections in key order', () => {
    const prev = exampleSnapshot();
    const wanted = next(prev, (s) => {
      s.desired.pods.push(generatedPod(3), generatedPod(1), generatedPod(2));
    });
    const delta = computeDelta(prev, wanted);
    expect(delta.desiredPods?.upsert?.map((p) => p.uid)).toEqual(['pod-000001', 'pod-000002', 'pod-000003']);
    const uids = applyDelta(prev, delta).desired.pods.map((p) => p.uid);
    expect(uids).toEqual([...uids].sort());
  });

  it('reuses the parts of the snapshot a delta does not touch', () => {
    const prev = normalizeSnapshot(exampleSnapshot());
    const applied = applyDelta(prev, computeDelta(prev, next(prev, (s) => (s.statesSynced = false))));
    expect(applied.actual).toBe(prev.actual);
    expect(applied.desired).toBe(prev.desired);
    expect(applied.reconstruction).toBe(prev.reconstruction);
    expect(applied.recentEvents).toBe(prev.recentEvents);
  });
});

describe('applyDelta on a normalized snapshot (the stream’s states)', () => {
  // A delta with upserts out of key order (new, changed, removed-and-upserted items, inner lists
  // out of order) and removals, at several places of a 300-pod node.
  const base = normalizeSnapshot(largeSnapshot(300));
  const podA = { ...generatedPod(1000), volumes: [{ ...(generatedPod(1000).volumes[0] as DesiredVolume), name: 'z' }, { ...(generatedPod(1001).volumes[0] as DesiredVolume), name: 'a' }] };
  const changedPod = { ...generatedPod(150), name: 'renamed' };
  const volumeB = generatedVolume(7);
  const volumeWithPods = { ...volumeB, pods: [{ ...(volumeB.pods[0] as PodMount), podUid: 'pod-zz' }, { ...(volumeB.pods[0] as PodMount), podUid: 'pod-aa' }] };
  const delta: Delta = {
    fromSeq: base.seq,
    seq: base.seq + 1,
    desiredPods: { upsert: [podA, changedPod, generatedPod(0)], remove: [generatedPod(0).uid, generatedPod(299).uid, generatedPod(42).uid, 'not-there'] },
    actualVolumes: { upsert: [volumeWithPods], remove: [generatedVolumeName(0)] },
    operations: { upsert: [generatedOperation(5, 1), generatedOperation(2, 3)] },
  };

  it('gives the same snapshot as normalizing the whole result', () => {
    // Arrange: a copy not known to be normalized takes the full path
    const unknown = { ...base };

    // Act
    const fast = applyDelta(base, delta);
    const full = applyDelta(unknown, delta);

    // Assert
    expect(fast).toStrictEqual(full);
    expect(normalizeSnapshot(fast)).toBe(fast);
    expect(fast.desired.pods.map((p) => p.uid)).toContain(generatedPod(0).uid);
    expect(fast.desired.pods.map((p) => p.uid)).not.toContain(generatedPod(42).uid);
    expect(fast.desired.pods.find((p) => p.uid === podA.uid)?.volumes.map((v) => v.name)).toEqual(['a', 'z']);
    expect(fast.actual.volumes.find((v) => v.uniqueVolumeName === volumeB.uniqueVolumeName)?.pods.map((p) => p.podUid)).toEqual(['pod-aa', 'pod-zz']);
  });

  it('keeps every pod and volume the delta does not name by reference', () => {
    const fast = applyDelta(base, delta);
    const before = new Map(base.desired.pods.map((p) => [p.uid, p]));
    const named = new Set([podA.uid, changedPod.uid, generatedPod(0).uid]);
    for (const pod of fast.desired.pods) if (!named.has(pod.uid)) expect(pod).toBe(before.get(pod.uid));
    const volume = (s: Snapshot) => s.actual.volumes.find((v) => v.uniqueVolumeName === generatedVolumeName(100));
    expect(volume(fast)).toBe(volume(base));
    expect(fast.reconstruction).toBe(base.reconstruction);
  });

  it('a chain of deltas stays on the fast path and equals the target snapshot', () => {
    let state = base;
    let target = base;
    for (let i = 1; i <= 5; i++) {
      const wanted = next(target, (s) => {
        s.operations.push(generatedOperation(i * 10, i));
        s.desired.pods = s.desired.pods.filter((p) => p.uid !== generatedPod(i).uid);
      });
      state = applyDelta(state, computeDelta(target, wanted));
      target = wanted;
    }
    expect(state).toStrictEqual(normalizeSnapshot(target));
  });
});

describe('delta sequence rules', () => {
  const prev = exampleSnapshot();
  const later = next(prev, (s) => (s.statesSynced = false));
  const delta = computeDelta(prev, later);

  it.each([
    { name: 'applying a delta twice is rejected', at: () => applyDelta(applyDelta(prev, delta), delta) },
    { name: 'a delta after a gap is rejected', at: () => applyDelta({ ...prev, seq: prev.seq - 1 }, delta) },
    { name: 'a delta that does not advance is rejected', at: () => applyDelta(prev, { fromSeq: prev.seq, seq: prev.seq }) },
    { name: 'computing a delta backwards is rejected', at: () => computeDelta(later, prev) },
    { name: 'computing a delta between equal seqs is rejected', at: () => computeDelta(prev, prev) },
    { name: 'applyDeltaIfNewer still rejects a gap', at: () => applyDeltaIfNewer({ ...prev, seq: prev.seq - 1 }, delta) },
  ])('$name', ({ at }) => {
    const err = caught(at);
    expect(isDeltaSequenceError(err)).toBe(true);
  });

  it('names both sequence numbers in the error', () => {
    expect(String(caught(() => applyDelta({ ...prev, seq: 7 }, delta)))).toContain(`delta 42->43 does not apply to snapshot 7`);
  });

  it.each([
    { name: 'a delta already applied', snapshot: () => applyDelta(prev, delta) },
    { name: 'a delta older than the snapshot', snapshot: () => ({ ...later, seq: 100 }) },
  ])('applyDeltaIfNewer ignores $name', ({ snapshot }) => {
    const current = snapshot();
    expect(applyDeltaIfNewer(current, delta)).toBe(current);
  });

  it('applyDeltaIfNewer applies the next delta', () => {
    expect(applyDeltaIfNewer(prev, delta)).toStrictEqual(normalizeSnapshot(later));
  });

  it('the delta schema rejects a delta that does not advance', () => {
    expect(DeltaSchema.safeParse({ fromSeq: 5, seq: 5 }).success).toBe(false);
  });
});

describe('delta size at 10k volumes', () => {
  const prev = largeSnapshot(10_000);

  it.each<{ name: string; change: (s: Snapshot) => void }>([
    {
      name: 'one mount turning uncertain',
      change: (s) => {
        const mount = s.actual.volumes[5_000]?.pods[0];
        if (mount !== undefined) mount.mountState = 'uncertain';
      },
    },
    { name: 'one operation going into backoff', change: (s) => s.operations.push(generatedOperation(5_000, 1)) },
    { name: 'one pod removed', change: (s) => s.desired.pods.splice(5_000, 1) },
    {
      name: 'one new pod with its mounted volume and an event',
      change: (s) => {
        s.desired.pods.push(generatedPod(10_000));
        s.actual.volumes.push(generatedVolume(10_000));
        s.recentEvents.push(event(1));
      },
    },
  ])('$name gives a delta under 2 KiB', ({ change }) => {
    const wanted = next(prev, change);
    const delta = computeDelta(prev, wanted);
    expect(JSON.stringify(delta).length).toBeLessThan(2048);
    expect(applyDelta(prev, delta)).toStrictEqual(normalizeSnapshot(wanted));
  });

  it('the full snapshot is far larger than any delta', () => {
    expect(JSON.stringify(prev).length).toBeGreaterThan(2_000_000);
  });
});

describe('snapshotFieldTransport', () => {
  it('says how every snapshot field travels', () => {
    expect(Object.keys(snapshotFieldTransport).sort()).toEqual(Object.keys(SnapshotSchema.shape).sort());
  });
});

describe('the observe section in deltas', () => {
  const observe = (planned: number): NonNullable<Snapshot['observe']> => ({
    kubeletRootDir: '/var/lib/kubelet',
    refreshedAt: FIXTURE_T0,
    refreshError: null,
    plan: Array.from({ length: planned }, (_, i) => ({
      key: `volume_mount|kubernetes.io/csi/d^v${String(i)}|uid-${String(i)}`,
      operation: 'volume_mount',
      volume: `kubernetes.io/csi/d^v${String(i)}`,
      podUid: `uid-${String(i)}`,
      pod: `default/p${String(i)}`,
      outerVolumeName: 'data',
      reason: 'desired, not mounted',
      since: FIXTURE_T0,
      kubeletBackoff: i === 0 ? { retryAt: FIXTURE_T0 + 60_000, durationBeforeRetryMs: 64_000, error: 'rpc error: code = Internal', observedAt: FIXTURE_T0, basis: 'message' as const } : null,
    })),
    orphans: [],
    orphansTruncated: false,
    truthDiff: [],
    cleanupAllowed: false,
  });

  it.each([
    { name: 'appears', before: undefined, after: observe(1) },
    { name: 'changes', before: observe(1), after: observe(2) },
    { name: 'goes away', before: observe(2), after: undefined },
  ])('travels whole in set.observe when it $name, and applyDelta reproduces the next snapshot', ({ before, after }) => {
    const prev = normalizeSnapshot({ ...exampleSnapshot(), ...(before === undefined ? {} : { observe: before }) });
    const { observe: _dropped, ...rest } = prev;
    const nextSnapshot = normalizeSnapshot({ ...rest, seq: prev.seq + 1, ...(after === undefined ? {} : { observe: after }) });
    const delta = DeltaSchema.parse(computeDelta(prev, nextSnapshot));
    expect(delta.set?.observe).toEqual(after ?? null);
    expect(applyDelta(prev, delta)).toEqual(nextSnapshot);
    expect(SnapshotSchema.parse(nextSnapshot)).toEqual(nextSnapshot);
  });

  it('leaves set.observe out when the section did not change', () => {
    const prev = normalizeSnapshot({ ...exampleSnapshot(), observe: observe(1) });
    const delta = computeDelta(prev, { ...prev, seq: prev.seq + 1, statesSynced: !prev.statesSynced });
    expect(delta.set).not.toHaveProperty('observe');
  });
});
