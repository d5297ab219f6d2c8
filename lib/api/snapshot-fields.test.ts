/**
 * Every top-level snapshot field travels in deltas. The table below needs an entry per field (a
 * new field without one is a type error): a change of that field alone, applied to the example
 * snapshot. Each change must make a delta with only the field's part, and applying the delta in
 * either direction must reproduce the other snapshot. This is the check behind "Adding a
 * snapshot field" in docs/api.md.
 */
import { describe, expect, it } from 'vitest';
import { applyDelta, computeDelta, DeltaSchema, snapshotFieldTransport, type Delta } from './delta.ts';
import { normalizeSnapshot } from './normalize-snapshot.ts';
import { exampleSnapshot, FIXTURE_T0, generatedOperation, generatedPod, generatedVolume } from './testing/snapshot-fixtures.ts';
import { SnapshotSchema, type Snapshot } from './snapshot.ts';

/** A change of one field, and the delta part (`set.<field>` for values replaced whole) it travels in. */
interface FieldChange {
  change: (s: Snapshot) => Partial<Snapshot>;
  part: keyof Delta | `set.${string}`;
}

const changes: Record<Exclude<keyof Snapshot, 'seq'>, FieldChange> = {
  nodeName: { change: () => ({ nodeName: 'node-b' }), part: 'set.nodeName' },
  statesSynced: { change: (s) => ({ statesSynced: !s.statesSynced }), part: 'set.statesSynced' },
  agent: { change: (s) => ({ agent: { ...s.agent, version: '0.2.0' } }), part: 'set.agent' },
  mounter: { change: (s) => ({ mounter: { ...s.mounter, privileged: !s.mounter.privileged } }), part: 'set.mounter' },
  desired: { change: (s) => ({ desired: { pods: [...s.desired.pods, generatedPod(1)] } }), part: 'desiredPods' },
  actual: { change: (s) => ({ actual: { volumes: [...s.actual.volumes, generatedVolume(1)] } }), part: 'actualVolumes' },
  operations: { change: (s) => ({ operations: [...s.operations, generatedOperation(1, 2)] }), part: 'operations' },
  operationHistory: {
    change: (s) => ({ operationHistory: s.operationHistory.map((h) => ({ ...h, attemptsTotal: h.attemptsTotal + 1, succeededAt: FIXTURE_T0 + 70_000 })) }),
    part: 'operationHistory',
  },
  reconstruction: { change: (s) => ({ reconstruction: { ...s.reconstruction, volumes: [] } }), part: 'reconstructionVolumes' },
  podErrors: { change: (s) => ({ podErrors: { ...s.podErrors, 'uid-x': ['error processing PVC ns/c: PVC is not bound'] } }), part: 'podErrors' },
  sourceErrors: { change: () => ({ sourceErrors: [{ file: 'bad.yaml', message: 'bad.yaml: not YAML' }] }), part: 'sourceErrors' },
  recentEvents: {
    change: (s) => ({ recentEvents: [...s.recentEvents, { time: FIXTURE_T0 + 70_000, type: 'Normal', reason: 'SuccessfulMountVolume', podUid: null, message: 'm' }] }),
    part: 'recentEvents',
  },
  audit: {
    change: (s) => ({ audit: [...s.audit, { time: FIXTURE_T0 + 70_000, caller: 'c', action: 'resync', target: null, checks: [], result: 'succeeded', message: null }] }),
    part: 'audit',
  },
  drivers: { change: () => ({ drivers: [] }), part: 'drivers' },
  attachVerification: { change: (s) => ({ attachVerification: { ...s.attachVerification, checked: s.attachVerification.checked + 1 } }), part: 'set.attachVerification' },
  nodeConditions: {
    change: () => ({ nodeConditions: [{ type: 'Ready', status: 'False', reason: 'KubeletNotReady', message: 'container runtime is down', lastTransitionTime: FIXTURE_T0 }] }),
    part: 'set.nodeConditions',
  },
  mountHealth: {
    change: (s) => ({ mountHealth: [...s.mountHealth, { path: '/var/lib/kubelet/plugins/x/globalmount', podUid: null, volume: 'v', kind: 'staging', state: 'hung', error: 'no answer within 5000 ms', checkedAt: FIXTURE_T0 + 70_000, since: FIXTURE_T0 + 70_000 }] }),
    part: 'mountHealth',
  },
  unmountBlockers: {
    change: () => ({
      unmountBlockers: [
        {
          operationName: 'volume_unmount',
          volume: 'v',
          podUid: 'uid-1',
          report: { path: '/p', holders: [{ pid: 42, command: 'sleep 600', kind: 'cwd', path: '/p', container: null }], truncated: false, incomplete: null, processesScanned: 9, checkedAt: FIXTURE_T0, durationMs: 3 },
        },
      ],
    }),
    part: 'unmountBlockers',
  },
  observe: {
    change: () => ({
      observe: {
        kubeletRootDir: '/var/lib/kubelet',
        refreshedAt: FIXTURE_T0,
        refreshError: null,
        plan: [],
        orphans: [],
        orphansTruncated: false,
        truthDiff: [],
        cleanupAllowed: false,
        cleanupBlocked: null,
      },
    }),
    part: 'set.observe',
  },
  csiPanel: {
    change: () => ({
      csiPanel: [
        {
          driver: 'csi-loop.volumescope.dev',
          methods: [{ method: 'NodeStageVolume', calls: 2, codes: { OK: 1, DeadlineExceeded: 1 }, buckets: [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0], totalMs: 120_050, maxMs: 120_000 }],
          recentCalls: [{ at: FIXTURE_T0, method: 'NodeStageVolume', code: 'OK', durationMs: 50, volumeId: 'vol-1', request: '{"volume_id":"vol-1","secrets":{"key":"***stripped***"}}', error: null }],
          probes: [{ at: FIXTURE_T0, method: 'Probe', code: 'OK', durationMs: 2, ready: true, vendorVersion: null, error: null }],
        },
      ],
    }),
    part: 'set.csiPanel',
  },
  operationLog: {
    change: (s) => ({ operationLog: [...s.operationLog, { operationName: 'volume_mount', volume: 'v', podUid: 'uid-a', startedAt: FIXTURE_T0, finishedAt: FIXTURE_T0 + 5, outcome: 'success', error: null }] }),
    part: 'operationLog',
  },
  volumeStats: {
    change: () => ({
      volumeStats: [
        {
          podUid: 'uid-a',
          volumeName: 'data',
          uniqueVolumeName: 'kubernetes.io/csi/csi-loop.volumescope.dev^vol-1',
          pluginName: 'kubernetes.io/csi',
          driver: 'csi-loop.volumescope.dev',
          path: '/var/lib/kubelet/pods/uid-a/volumes/kubernetes.io~csi/pv-1/mount',
          persistentVolumeClaim: { namespace: 'default', name: 'data' },
          source: 'csi',
          capacityBytes: 1024,
          availableBytes: 512,
          usedBytes: 512,
          inodes: 10,
          inodesFree: 5,
          inodesUsed: 5,
          condition: { abnormal: true, message: 'I/O error' },
          collectedAt: FIXTURE_T0,
          durationMs: 3,
          error: null,
        },
      ],
    }),
    part: 'set.volumeStats',
  },
};

/** The parts a delta carries, `set` split by field. */
function partsOf(delta: Delta): string[] {
  return Object.keys(delta)
    .filter((k) => k !== 'fromSeq' && k !== 'seq')
    .flatMap((k) => (k === 'set' ? Object.keys(delta.set ?? {}).map((f) => `set.${f}`) : [k]));
}

describe('every snapshot field travels in deltas', () => {
  it('has a change for every field that is not the sequence number', () => {
    expect(Object.keys(changes).sort()).toEqual(Object.keys(snapshotFieldTransport).filter((f) => snapshotFieldTransport[f as keyof Snapshot] !== 'seq').sort());
  });

  it.each(Object.entries(changes).map(([field, c]) => ({ field, ...c })))(
    'a change of $field alone travels in $part and applies both ways',
    ({ change, part }) => {
      // Arrange
      const base = normalizeSnapshot(exampleSnapshot());
      const changed = SnapshotSchema.parse(normalizeSnapshot({ ...base, ...change(base), seq: base.seq + 1 }));
      const back = { ...base, seq: base.seq + 2 };

      // Act
      const forward = DeltaSchema.parse(computeDelta(base, changed));
      const backward = DeltaSchema.parse(computeDelta(changed, back));

      // Assert
      expect(changed).not.toEqual({ ...base, seq: changed.seq });
      expect(partsOf(forward)).toEqual([part]);
      expect(partsOf(backward)).toEqual([part]);
      expect(applyDelta(base, forward)).toEqual(changed);
      expect(applyDelta(changed, backward)).toEqual(normalizeSnapshot(back));
    },
  );
});
