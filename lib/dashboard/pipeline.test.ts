import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyDelta, computeDelta, normalizeSnapshot, type ActualVolume, type DesiredVolume, type Operation, type PodMount, type Snapshot } from '../api/index.ts';
import { exampleSnapshot, generatedOperation, largeSnapshot } from '../api/testing/snapshot-fixtures.ts';
import {
  createVolumeRowsSelector,
  deriveStages,
  deriveVolumeRows,
  deriveVolumeState,
  findPod,
  firstBlockingStage,
  kubeletSummaryLine,
  volumeKnown,
  type StageId,
  type StageStatus,
} from './pipeline.ts';

const CSI: DesiredVolume = {
  name: 'data',
  uniqueVolumeName: 'kubernetes.io/csi/d^v1',
  pluginName: 'kubernetes.io/csi',
  attachable: true,
  deviceMountable: true,
  reportedInUse: true,
};
const CONFIGMAP: DesiredVolume = { ...CSI, name: 'config', uniqueVolumeName: 'kubernetes.io/configmap/u-config', pluginName: 'kubernetes.io/configmap', attachable: false, deviceMountable: false, reportedInUse: false };

function actual(overrides: Partial<ActualVolume> = {}): ActualVolume {
  return {
    uniqueVolumeName: CSI.uniqueVolumeName,
    pluginName: CSI.pluginName,
    attachState: 'attached',
    devicePath: '/dev/loop1',
    deviceMountState: 'mounted',
    deviceMountPath: '/var/lib/kubelet/plugins/x/globalmount',
    pods: [],
    ...overrides,
  };
}

function mount(mountState: PodMount['mountState'] = 'mounted'): PodMount {
  return { podUid: 'u', podName: 'u', podNamespace: 'ns', outerVolumeName: 'data', mountState, remountRequired: false };
}

function statuses(stages: ReturnType<typeof deriveStages>): Record<StageId, StageStatus> {
  return Object.fromEntries(stages.map((s) => [s.id, s.status])) as Record<StageId, StageStatus>;
}

function op(state: Operation['state']): Operation {
  return {
    operationName: 'volume_mount',
    volume: CSI.uniqueVolumeName,
    podUid: 'u',
    nodeName: null,
    state,
    failures: 2,
    lastError: 'rpc error: code = Unavailable desc = driver not ready',
    lastErrorAt: 1,
    retryAt: 1_001,
    durationBeforeRetryMs: 1_000,
    startedAt: state === 'running' ? 2 : null,
  };
}

describe('pipeline stages of one volume', () => {
  it.each([
    {
      name: 'a desired CSI volume not reported in use yet is blocked at reported in use',
      desired: { ...CSI, reportedInUse: false },
      actual: null,
      mount: null,
      blocking: 'reported-in-use',
      status: 'missing',
    },
    { name: 'a reported volume not attached yet is blocked at attached', desired: CSI, actual: null, mount: null, blocking: 'attached', status: 'missing' },
    { name: 'an uncertain attach blocks at attached as uncertain', desired: CSI, actual: actual({ attachState: 'uncertain' }), mount: null, blocking: 'attached', status: 'uncertain' },
    { name: 'an attached volume without its global mount is blocked at device mounted', desired: CSI, actual: actual({ deviceMountState: 'not-mounted', deviceMountPath: '' }), mount: null, blocking: 'device-mounted', status: 'missing' },
    { name: 'an uncertain device mount blocks at device mounted as uncertain', desired: CSI, actual: actual({ deviceMountState: 'uncertain' }), mount: null, blocking: 'device-mounted', status: 'uncertain' },
    { name: 'a device-mounted volume not set up for the pod is blocked at mounted into pod', desired: CSI, actual: actual(), mount: null, blocking: 'mounted', status: 'missing' },
    { name: 'an uncertain SetUp blocks at mounted into pod as uncertain', desired: CSI, actual: actual({ pods: [mount('uncertain')] }), mount: mount('uncertain'), blocking: 'mounted', status: 'uncertain' },
    { name: 'a mounted volume is ready with nothing blocking', desired: CSI, actual: actual({ pods: [mount()] }), mount: mount(), blocking: null, status: null },
    { name: 'a volume the pod no longer wants is blocked at the desired stage', desired: null, actual: actual({ pods: [mount()] }), mount: mount(), blocking: 'desired', status: 'missing' },
  ] as const)('$name', ({ desired, actual: act, mount: m, blocking, status }) => {
    // Act
    const stages = deriveStages(desired, act, m);
    const first = firstBlockingStage(stages);

    // Assert
    expect(stages.map((s) => s.id)).toEqual(['desired', 'reported-in-use', 'attached', 'device-mounted', 'mounted', 'ready']);
    expect(first?.id ?? null).toBe(blocking);
    expect(first?.status ?? null).toBe(status);
  });

  it('a configMap volume skips reported in use and device mounted, and is ready once set up', () => {
    // Arrange
    const asw = actual({ uniqueVolumeName: CONFIGMAP.uniqueVolumeName, devicePath: '', deviceMountState: 'not-mounted', deviceMountPath: '', pods: [mount()] });

    // Act
    const stages = statuses(deriveStages(CONFIGMAP, asw, mount()));

    // Assert
    expect(stages).toEqual({ desired: 'done', 'reported-in-use': 'skipped', attached: 'done', 'device-mounted': 'skipped', mounted: 'done', ready: 'done' });
  });

  it('a volume the agent attached itself skips reported in use (no attach/detach controller, no node status)', () => {
    // Act
    const stages = statuses(deriveStages({ ...CSI, reportedInUse: false }, actual({ pods: [mount()] }), mount()));

    // Assert
    expect(stages).toEqual({ desired: 'done', 'reported-in-use': 'skipped', attached: 'done', 'device-mounted': 'done', mounted: 'done', ready: 'done' });
  });

  it('the attached stage carries the device path and the device stage the global mount path', () => {
    const stages = deriveStages(CSI, actual(), null);
    expect(stages.find((s) => s.id === 'attached')?.detail).toBe('device /dev/loop1');
    expect(stages.find((s) => s.id === 'device-mounted')?.detail).toBe('/var/lib/kubelet/plugins/x/globalmount');
  });
});

describe('volume state', () => {
  it.each([
    { name: 'uncertain wins over an operation in backoff (never shown as failed)', stage: 'uncertain', operation: op('backoff'), desired: true, state: 'uncertain' },
    { name: 'uncertain wins over mounted-looking stages', stage: 'uncertain', operation: null, desired: true, state: 'uncertain' },
    { name: 'a failed operation waiting for its retry is backoff', stage: 'missing', operation: op('backoff'), desired: true, state: 'backoff' },
    { name: 'an operation running now is running', stage: 'missing', operation: op('running'), desired: true, state: 'running' },
    { name: 'a missing stage with nothing pending is waiting', stage: 'missing', operation: null, desired: true, state: 'waiting' },
    { name: 'a mount no longer desired is unmounting', stage: 'missing', operation: null, desired: false, state: 'unmounting' },
    { name: 'every stage done is ready', stage: 'done', operation: null, desired: true, state: 'ready' },
  ] as const)('$name', ({ stage, operation, desired, state }) => {
    // Arrange
    const stages = [{ id: 'mounted', status: stage, detail: null }] as const;

    // Act / Assert
    expect(deriveVolumeState(stages, operation, desired)).toBe(state);
  });
});

describe('rows of a snapshot', () => {
  it('the example node has one row per pod volume plus none for unmounted orphans, with the stuck database volume uncertain', () => {
    // Act
    const rows = deriveVolumeRows(exampleSnapshot());

    // Assert
    expect(rows.map((r) => [r.podName, r.volumeName, r.state])).toEqual([
      ['web-0', 'config', 'ready'],
      ['web-0', 'data', 'ready'],
      ['db-0', 'pgdata', 'uncertain'],
    ]);
    const db = rows[2];
    expect(db?.blocking?.id).toBe('device-mounted');
    expect(db?.operation?.lastError).toContain('DeadlineExceeded');
  });

  it('a mount of a pod that left the desired world becomes an unmounting row', () => {
    // Arrange
    const s = exampleSnapshot();
    const gone: Snapshot = { ...s, desired: { pods: s.desired.pods.filter((p) => p.name !== 'web-0') } };

    // Act
    const rows = deriveVolumeRows(gone);

    // Assert
    const orphans = rows.filter((r) => !r.desired);
    expect(orphans.map((r) => [r.volumeName, r.state, r.namespace])).toEqual([
      ['data', 'unmounting', 'default'],
      ['config', 'unmounting', 'default'],
    ]);
  });

  it('rows whose inputs did not change keep their identity across a delta, so memoized rows skip rendering', () => {
    // Arrange
    const before = largeSnapshot(50);
    const volume = before.actual.volumes[7];
    if (volume === undefined) throw new Error('fixture');
    const after: Snapshot = {
      ...before,
      seq: 2,
      actual: { volumes: before.actual.volumes.map((v) => (v === volume ? { ...v, deviceMountState: 'uncertain' } : v)) },
    };
    const applied = applyDelta(before, computeDelta(before, after));
    const select = createVolumeRowsSelector();

    // Act
    const first = select(before);
    const second = select(applied);

    // Assert
    const changed = second.filter((row, i) => row !== first[i]);
    expect(changed.map((r) => r.podName)).toEqual(['load-7']);
    expect(changed[0]?.state).toBe('uncertain');
  });

  it('a pod whose desired volume changed gets new rows that reflect the change', () => {
    // Arrange
    const before = exampleSnapshot();
    const after: Snapshot = {
      ...before,
      seq: 43,
      desired: { pods: before.desired.pods.map((p) => (p.name === 'db-0' ? { ...p, volumes: p.volumes.map((v) => ({ ...v, reportedInUse: false })) } : p)) },
      actual: { volumes: before.actual.volumes.filter((v) => !v.uniqueVolumeName.endsWith('vol-pg')) },
      operations: [],
    };
    const select = createVolumeRowsSelector();
    const first = select(before);

    // Act
    const second = select(after);

    // Assert
    const db = second.find((r) => r.podName === 'db-0');
    expect(db?.blocking?.id).toBe('reported-in-use');
    expect(db?.state).toBe('waiting');
    expect(second.filter((r) => r.podName === 'web-0')).toEqual(first.filter((r) => r.podName === 'web-0'));
    expect(second.filter((r, i) => r === first[i]).map((r) => r.podName)).toEqual(['web-0', 'web-0']);
  });

  it('the same snapshot twice returns the same array', () => {
    const select = createVolumeRowsSelector();
    const s = exampleSnapshot();
    expect(select(s)).toBe(select(s));
  });

  it('a delta that only touches operations rebuilds only the rows of the volumes it touched', () => {
    // Arrange
    const before = normalizeSnapshot(largeSnapshot(50));
    const after: Snapshot = { ...before, seq: 2, operations: [generatedOperation(3, 1), { ...generatedOperation(9, 2), state: 'running', podUid: null }] };
    const applied = applyDelta(before, computeDelta(before, after));
    const select = createVolumeRowsSelector();
    const first = select(before);

    // Act
    const second = select(applied);

    // Assert
    expect(second.filter((row, i) => row !== first[i]).map((r) => [r.podName, r.state])).toEqual([
      ['load-3', 'backoff'],
      ['load-9', 'running'],
    ]);
    expect(second).toEqual(deriveVolumeRows(applied));
  });

  it('successive snapshots give the rows a fresh derivation gives, whatever changed', () => {
    // Arrange: a node with desired pods and mounts no longer desired (the example's), plus 12 generated pods
    const large = largeSnapshot(12);
    const ex = normalizeSnapshot(exampleSnapshot());
    const start = normalizeSnapshot({ ...ex, desired: { pods: [...ex.desired.pods, ...large.desired.pods] }, actual: { volumes: [...ex.actual.volumes, ...large.actual.volumes] } });
    const step = fc.record({ kind: fc.constantFrom('op', 'op', 'op', 'drop-op', 'volume', 'pod'), n: fc.nat({ max: 11 }), m: fc.nat({ max: 3 }) });
    /** The next snapshot after one change (as the agent would publish it). */
    const next = (s: Snapshot, c: { kind: string; n: number; m: number }): Snapshot => {
      const volume = large.actual.volumes[c.n] as ActualVolume;
      if (c.kind === 'op') {
        const op: Operation = { ...generatedOperation(c.n, 1 + c.m), state: c.m === 3 ? 'running' : 'backoff', podUid: c.m === 2 ? null : `pod-${String(c.n).padStart(6, '0')}` };
        return { ...s, operations: [...s.operations.filter((o) => o.volume !== op.volume || o.podUid !== op.podUid), op] };
      }
      if (c.kind === 'drop-op') return { ...s, operations: s.operations.filter((o) => o.volume !== volume.uniqueVolumeName) };
      if (c.kind === 'volume') {
        return { ...s, actual: { volumes: s.actual.volumes.map((v) => (v.uniqueVolumeName === volume.uniqueVolumeName ? { ...v, pods: v.pods.map((p) => ({ ...p, mountState: c.m > 1 ? 'uncertain' : 'mounted' })) } : v)) } };
      }
      return { ...s, desired: { pods: s.desired.pods.filter((p) => p.uid !== `pod-${String(c.n).padStart(6, '0')}`) } };
    };

    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 15 }), (steps) => {
        const select = createVolumeRowsSelector();
        let s = start;
        expect(select(s)).toEqual(deriveVolumeRows(s));
        for (const c of steps) {
          const n = normalizeSnapshot({ ...next(s, c), seq: s.seq + 1 });
          // Through a delta, as the dashboard gets it: unchanged parts keep their identity.
          s = applyDelta(s, computeDelta(s, n));
          expect(select(s)).toEqual(deriveVolumeRows(s));
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('pods and volumes by id', () => {
  it('a pod known only from its errors is still found', () => {
    const s = { ...exampleSnapshot(), podErrors: { 'only-errors': ['bad spec'] } };
    const pod = findPod(s, 'only-errors');
    expect(pod).toMatchObject({ uid: 'only-errors', name: 'only-errors', desired: false, errors: ['bad spec'] });
  });

  it('an unknown pod is null', () => {
    expect(findPod(exampleSnapshot(), 'nope')).toBeNull();
  });

  it.each([
    ['kubernetes.io/csi/csi-loop.volumescope.dev^vol-pg', true],
    ['kubernetes.io/csi/csi-loop.volumescope.dev^vol-nope', false],
  ])('volume %s known: %s', (volume, known) => {
    expect(volumeKnown(exampleSnapshot(), volume)).toBe(known);
  });
});

describe('the kubelet-style summary line', () => {
  it('lists the unmounted and unattached volumes of a stuck pod, sorted', () => {
    // Arrange
    const s = exampleSnapshot();
    const pods = s.desired.pods.map((p) => (p.name === 'db-0' ? { ...p, volumes: [...p.volumes, { ...CSI, name: 'cache', uniqueVolumeName: 'kubernetes.io/csi/d^cache' }] } : p));
    const rows = deriveVolumeRows({ ...s, desired: { pods } }).filter((r) => r.podName === 'db-0');

    // Act
    const line = kubeletSummaryLine(rows);

    // Assert
    expect(line).toBe('unmounted volumes=[cache pgdata], unattached volumes=[cache]');
  });

  it('an uncertain mount counts as unmounted, as in GetMountedVolumesForPod', () => {
    const rows = deriveVolumeRows(exampleSnapshot()).filter((r) => r.podName === 'db-0');
    expect(kubeletSummaryLine(rows)).toBe('unmounted volumes=[pgdata], unattached volumes=[]');
  });

  it('a pod with every volume mounted has empty lists', () => {
    const rows = deriveVolumeRows(exampleSnapshot()).filter((r) => r.podName === 'web-0');
    expect(kubeletSummaryLine(rows)).toBe('unmounted volumes=[], unattached volumes=[]');
  });
});
