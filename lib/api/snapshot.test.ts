import { describe, expect, it } from 'vitest';
import { normalizeSnapshot, sortByKey } from './normalize-snapshot.ts';
import { emptySnapshot, exampleSnapshot, largeSnapshot } from './testing/snapshot-fixtures.ts';
import {
  operationKey,
  reconstructedVolumeKey,
  SnapshotSchema,
  type Operation,
  type Snapshot,
} from './snapshot.ts';

describe('SnapshotSchema', () => {
  it.each([
    { name: 'an empty node', snapshot: emptySnapshot() },
    { name: 'the example node', snapshot: exampleSnapshot() },
    { name: 'a generated node', snapshot: largeSnapshot(50) },
  ])('accepts $name and gives it back unchanged after JSON', ({ snapshot }) => {
    expect(SnapshotSchema.parse(JSON.parse(JSON.stringify(snapshot)))).toStrictEqual(snapshot);
  });

  it.each<{ name: string; change: (s: Snapshot) => void; path: (string | number)[] }>([
    {
      name: 'two desired pods with the same uid',
      change: (s) => s.desired.pods.push(structuredClone(s.desired.pods[0] as Snapshot['desired']['pods'][number])),
      path: ['desired', 'pods', 2],
    },
    {
      name: 'two operations with the same key',
      change: (s) => s.operations.push({ ...(s.operations[0] as Operation), failures: 9 }),
      path: ['operations', 1],
    },
    {
      name: 'a fractional time',
      change: (s) => (s.agent.startedAt = 1.5),
      path: ['agent', 'startedAt'],
    },
    {
      name: 'an unknown mount state',
      change: (s) => Object.assign(s.actual.volumes[0]?.pods[0] ?? {}, { mountState: 'unmounted' }),
      path: ['actual', 'volumes', 0, 'pods', 0, 'mountState'],
    },
  ])('rejects $name', ({ change, path }) => {
    const snapshot = exampleSnapshot();
    change(snapshot);
    const result = SnapshotSchema.safeParse(snapshot);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.path).toEqual(path);
  });

  it('ignores fields it does not know (a newer agent may add some)', () => {
    const parsed = SnapshotSchema.parse({ ...exampleSnapshot(), futureField: 1 });
    expect(parsed).toStrictEqual(exampleSnapshot());
  });
});

describe('keys', () => {
  it.each([
    {
      name: 'an operation with pod and node',
      key: operationKey({ operationName: 'volume_mount', volume: 'v', podUid: 'p', nodeName: 'n' }),
      want: 'volume_mount|v|p|n',
    },
    {
      name: 'a volume-level operation',
      key: operationKey({ operationName: 'unmount_device', volume: 'v', podUid: null, nodeName: null }),
      want: 'unmount_device|v||',
    },
    { name: 'a reconstructed volume', key: reconstructedVolumeKey({ podUid: 'p', volumeName: 'data' }), want: 'p|data' },
  ])('builds the key of $name', ({ key, want }) => {
    expect(key).toBe(want);
  });
});

describe('normalizeSnapshot', () => {
  it('sorts keyed collections by code unit, nested ones too, and keeps ring buffers in order', () => {
    // Arrange
    const s = exampleSnapshot();
    s.desired.pods.reverse();
    s.desired.pods.forEach((p) => p.volumes.reverse());
    s.actual.volumes.reverse();
    s.recentEvents = [...s.recentEvents, { ...(s.recentEvents[0] as Snapshot['recentEvents'][number]), time: 0 }];
    s.podErrors = { b: [], B: [], a: [] };
    // Act
    const n = normalizeSnapshot(s);
    // Assert
    expect(n.desired.pods.map((p) => p.name)).toEqual(['web-0', 'db-0']);
    expect(n.desired.pods[0]?.volumes.map((v) => v.name)).toEqual(['config', 'data']);
    expect(n.actual.volumes.map((v) => v.uniqueVolumeName.split('/')[1])).toEqual(['configmap', 'csi', 'csi']);
    expect(n.recentEvents.map((e) => e.time)).toEqual(s.recentEvents.map((e) => e.time));
    expect(Object.keys(n.podErrors)).toEqual(['B', 'a', 'b']);
    expect(s.desired.pods.map((p) => p.name)).toEqual(['db-0', 'web-0']);
  });

  it('returns a normalized snapshot itself', () => {
    const once = normalizeSnapshot(exampleSnapshot());
    expect(normalizeSnapshot(once)).toBe(once);
  });

  it('sortByKey returns a sorted array itself', () => {
    const sorted = ['a', 'b', 'c'];
    expect(sortByKey(sorted, (x) => x)).toBe(sorted);
    expect(sortByKey(['b', 'a'], (x) => x)).toEqual(['a', 'b']);
  });
});
