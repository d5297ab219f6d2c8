import { describe, expect, it } from 'vitest';
import { jsonEqual } from '../../lib/api/json-equal.ts';
import { isTruncatedMessage, MESSAGE_LENGTH_LIMIT } from '../../lib/truncate-message.ts';
import type { OperationHistoryView, PendingOperationView, ActualVolumeView, DesiredVolumeView, ReconstructionEntry } from '../../lib/volumemanager/index.ts';
import type { Pod } from '../../lib/volume/k8s-types.ts';
import type { NodeName, PluginName, PodUID, UniquePodName, UniqueVolumeName } from '../../lib/volume/types.ts';
import {
  actualVolumeFromView,
  actualVolumeMatchesView,
  desiredVolumeFromView,
  desiredVolumeMatchesView,
  operationFromView,
  operationHistoryFromView,
  operationHistoryMatchesView,
  operationHistoryViewKey,
  operationMatchesView,
  operationViewKey,
  reconstructedVolumeFromEntry,
  reconstructedVolumeMatchesEntry,
  reconstructionEntryKey,
  nodeConditionsFromNode,
  type DesiredPodEntry,
  type NamespaceOf,
} from './snapshot-items.ts';
import { operationKey, reconstructedVolumeKey } from '../../lib/api/snapshot.ts';

// Every mutation below must leave `matches(fromView(base), mutated)` equal to
// `jsonEqual(fromView(base), fromView(mutated))`: the matcher is exactly "would build the same item".

const pod = (uid: string): ActualVolumeView['pods'][number] => ({
  podName: uid as UniquePodName,
  podUID: uid as PodUID,
  outerVolumeSpecName: 'data',
  innerVolumeSpecName: 'pv-1',
  mountState: 'VolumeMounted',
  remountRequired: false,
  foundDuringReconstruction: false,
});

const actualBase: ActualVolumeView = {
  volumeName: 'kubernetes.io/csi/d^vol-1' as UniqueVolumeName,
  pluginName: 'kubernetes.io/csi' as PluginName,
  attachability: 'True',
  devicePath: '/dev/loop3',
  deviceMountState: 'DeviceGloballyMounted',
  deviceMountPath: '/var/lib/kubelet/plugins/kubernetes.io/csi/d/x/globalmount',
  persistentVolumeSize: null,
  volumeInUseErrorForExpansion: false,
  foundDuringReconstruction: false,
  foundDetached: false,
  pods: [pod('b'), pod('a')],
};
const namespaces: NamespaceOf = (uid) => (uid === 'a' ? 'ns-a' : undefined);

describe('actualVolumeMatchesView', () => {
  it.each<{ name: string; view: ActualVolumeView; namespaceOf?: NamespaceOf; same: boolean }>([
    { name: 'the same view', view: actualBase, same: true },
    { name: 'the pods in another order', view: { ...actualBase, pods: [pod('a'), pod('b')] }, same: true },
    { name: 'a field the contract does not show (size)', view: { ...actualBase, persistentVolumeSize: 5 }, same: true },
    { name: 'another plugin', view: { ...actualBase, pluginName: 'kubernetes.io/nfs' as PluginName }, same: false },
    { name: 'attachability uncertain', view: { ...actualBase, attachability: 'Uncertain' }, same: false },
    { name: 'found detached by the attach verification', view: { ...actualBase, foundDetached: true }, same: false },
    { name: 'attachability False (still attached in the API)', view: { ...actualBase, attachability: 'False' }, same: true },
    { name: 'another device path', view: { ...actualBase, devicePath: '/dev/loop4' }, same: false },
    { name: 'device mount uncertain', view: { ...actualBase, deviceMountState: 'DeviceMountUncertain' }, same: false },
    { name: 'device not mounted', view: { ...actualBase, deviceMountState: 'DeviceNotMounted' }, same: false },
    { name: 'another device mount path', view: { ...actualBase, deviceMountPath: '' }, same: false },
    { name: 'one pod less', view: { ...actualBase, pods: [pod('a')] }, same: false },
    { name: 'another pod', view: { ...actualBase, pods: [pod('a'), pod('c')] }, same: false },
    { name: 'a pod mount uncertain', view: { ...actualBase, pods: [pod('a'), { ...pod('b'), mountState: 'VolumeMountUncertain' }] }, same: false },
    { name: 'a remount required', view: { ...actualBase, pods: [pod('a'), { ...pod('b'), remountRequired: true }] }, same: false },
    { name: 'another outer name', view: { ...actualBase, pods: [pod('a'), { ...pod('b'), outerVolumeSpecName: 'other' }] }, same: false },
    { name: 'another pod name', view: { ...actualBase, pods: [pod('a'), { ...pod('b'), podName: 'x' as UniquePodName }] }, same: false },
    { name: 'a namespace learned', view: actualBase, namespaceOf: () => 'ns', same: false },
  ])('$name: matches = $same', ({ view, namespaceOf, same }) => {
    const item = actualVolumeFromView(actualBase, namespaces);
    const now = namespaceOf ?? namespaces;

    expect(actualVolumeMatchesView(item, view, now)).toBe(same);
    expect(jsonEqual(item, actualVolumeFromView(view, now))).toBe(same);
  });
});

const podObject: Pod = { metadata: { name: 'web-0', namespace: 'default', uid: 'a' }, spec: { containers: [] } };
const entryBase: DesiredPodEntry = { podName: 'a' as UniquePodName, pod: podObject, outerVolumeSpecName: 'data', innerVolumeSpecName: 'pv-1', mountRequestTime: 1 };
const desiredBase: DesiredVolumeView = {
  volumeName: 'kubernetes.io/csi/d^vol-1' as UniqueVolumeName,
  pluginName: 'kubernetes.io/csi' as PluginName,
  pluginIsAttachable: true,
  pluginIsDeviceMountable: true,
  reportedInUse: false,
  desiredSizeLimit: null,
  persistentVolumeSize: null,
  seLinuxLabel: '',
  pods: [entryBase],
};

describe('desiredVolumeMatchesView', () => {
  it.each<{ name: string; view: DesiredVolumeView; entry: DesiredPodEntry; same: boolean }>([
    { name: 'the same pair', view: desiredBase, entry: entryBase, same: true },
    { name: 'a new mount request time (not shown)', view: desiredBase, entry: { ...entryBase, mountRequestTime: 9 }, same: true },
    { name: 'another outer name', view: desiredBase, entry: { ...entryBase, outerVolumeSpecName: 'x' }, same: false },
    { name: 'another unique name', view: { ...desiredBase, volumeName: 'v' as UniqueVolumeName }, entry: entryBase, same: false },
    { name: 'another plugin', view: { ...desiredBase, pluginName: 'p' as PluginName }, entry: entryBase, same: false },
    { name: 'not attachable', view: { ...desiredBase, pluginIsAttachable: false }, entry: entryBase, same: false },
    { name: 'not device-mountable', view: { ...desiredBase, pluginIsDeviceMountable: false }, entry: entryBase, same: false },
    { name: 'reported in use', view: { ...desiredBase, reportedInUse: true }, entry: entryBase, same: false },
  ])('$name: matches = $same', ({ view, entry, same }) => {
    const item = desiredVolumeFromView(desiredBase, entryBase);

    expect(desiredVolumeMatchesView(item, view, entry)).toBe(same);
    expect(jsonEqual(item, desiredVolumeFromView(view, entry))).toBe(same);
  });
});

const opBase: PendingOperationView = {
  key: { volumeName: 'v' as UniqueVolumeName, podName: 'a' as UniquePodName, nodeName: '' as NodeName },
  operationName: 'volume_mount',
  pending: false,
  failures: 2,
  startedAt: null,
  lastError: 'boom',
  lastErrorTime: 1_000,
  durationBeforeRetry: 1_000,
  retryAt: 2_000,
};

describe('operationMatchesView', () => {
  it.each<{ name: string; view: PendingOperationView; same: boolean }>([
    { name: 'the same entry', view: opBase, same: true },
    { name: 'running', view: { ...opBase, pending: true, startedAt: 3_000 }, same: false },
    { name: 'another failure count', view: { ...opBase, failures: 3 }, same: false },
    { name: 'another error', view: { ...opBase, lastError: 'bang' }, same: false },
    { name: 'another error time', view: { ...opBase, lastErrorTime: 1_001 }, same: false },
    { name: 'another backoff', view: { ...opBase, durationBeforeRetry: 2_000 }, same: false },
    { name: 'another retry time', view: { ...opBase, retryAt: 3_000 }, same: false },
    { name: 'another operation', view: { ...opBase, operationName: 'volume_unmount' }, same: false },
    { name: 'a node in the key', view: { ...opBase, key: { ...opBase.key, nodeName: 'n' as NodeName } }, same: false },
    { name: 'no pod in the key', view: { ...opBase, key: { ...opBase.key, podName: '' as UniquePodName } }, same: false },
  ])('$name: matches = $same', ({ view, same }) => {
    const item = operationFromView(opBase);

    expect(operationMatchesView(item, view)).toBe(same);
    expect(jsonEqual(item, operationFromView(view))).toBe(same);
  });

  it('shows a 1 MB last error (a driver\'s error details) cut to the message limit, and still matches its view', () => {
    const view = { ...opBase, lastError: `rpc error: code = Internal desc = ${'x'.repeat(1 << 20)}` };

    const item = operationFromView(view);

    expect(item.lastError?.length).toBeLessThanOrEqual(MESSAGE_LENGTH_LIMIT);
    expect(isTruncatedMessage(item.lastError ?? '')).toBe(true);
    expect(operationMatchesView(item, view)).toBe(true);
  });

  it.each([opBase, { ...opBase, key: { ...opBase.key, podName: '' as UniquePodName, nodeName: 'n' as NodeName } }])(
    'keys a view as operationKey keys its item',
    (view) => {
      expect(operationViewKey(view)).toBe(operationKey(operationFromView(view)));
    },
  );
});

const historyBase: OperationHistoryView = {
  operationName: 'volume_mount',
  volume: 'kubernetes.io/csi/d^vol-1',
  pod: 'a',
  node: '',
  firstFailureAt: 1_000,
  attemptsTotal: 2,
  attempts: [
    { startedAt: 900, durationMs: 100, error: 'rpc error: code = Unavailable' },
    { startedAt: 1_600, durationMs: 100, error: 'rpc error: code = Unavailable' },
  ],
  succeededAt: null,
};

describe('operationHistoryMatchesView', () => {
  // The engine replaces a history view only with another attempt (the count grows) or a new
  // episode (the first failure moves): the mutations below are the ones it can make.
  it.each<{ name: string; view: OperationHistoryView; same: boolean }>([
    { name: 'the same history', view: historyBase, same: true },
    { name: 'a copy of it', view: { ...historyBase, attempts: [...historyBase.attempts] }, same: true },
    { name: 'one more attempt', view: { ...historyBase, attemptsTotal: 3, attempts: [...historyBase.attempts, { startedAt: 2_700, durationMs: 5, error: 'x' }] }, same: false },
    { name: 'the success', view: { ...historyBase, attemptsTotal: 3, attempts: [...historyBase.attempts, { startedAt: 2_700, durationMs: 5, error: null }], succeededAt: 2_705 }, same: false },
    { name: 'a new episode', view: { ...historyBase, firstFailureAt: 9_000, attemptsTotal: 1, attempts: [{ startedAt: 8_000, durationMs: 1_000, error: 'y' }] }, same: false },
    { name: 'no pod in the key', view: { ...historyBase, pod: '' }, same: false },
    { name: 'a node in the key', view: { ...historyBase, node: 'n' }, same: false },
  ])('$name: matches = $same', ({ view, same }) => {
    const item = operationHistoryFromView(historyBase);

    expect(operationHistoryMatchesView(item, view)).toBe(same);
    expect(jsonEqual(item, operationHistoryFromView(view))).toBe(same);
  });

  it('cuts a 1 MB attempt error to the message limit and keys a view as operationKey keys its item', () => {
    const view = { ...historyBase, node: 'n', attempts: [{ startedAt: 1, durationMs: 2, error: 'x'.repeat(1 << 20) }] };

    const item = operationHistoryFromView(view);

    expect(isTruncatedMessage(item.attempts[0]?.error ?? '')).toBe(true);
    expect(item.attempts[0]?.error?.length).toBeLessThanOrEqual(MESSAGE_LENGTH_LIMIT);
    expect(operationHistoryViewKey(view)).toBe(operationKey(item));
  });
});

const reconBase: ReconstructionEntry = {
  podName: 'a' as UniquePodName,
  volumeSpecName: 'data',
  pluginName: 'kubernetes.io/csi' as PluginName,
  volumeMode: 'Filesystem',
  keptBecause: null,
  volumePath: '/p',
  volumeName: null,
  outcome: 'reconstructed',
  error: null,
  scannedAt: 100,
  resolvedAt: null,
};

describe('reconstructedVolumeMatchesEntry', () => {
  it.each<{ name: string; entry: ReconstructionEntry; same: boolean }>([
    { name: 'the same entry', entry: reconBase, same: true },
    { name: 'another path (not shown)', entry: { ...reconBase, volumePath: '/q' }, same: true },
    { name: 'resolved', entry: { ...reconBase, outcome: 'confirmed-mounted', resolvedAt: 200 }, same: false },
    { name: 'resolved at the scan time', entry: { ...reconBase, outcome: 'confirmed-mounted', resolvedAt: 100 }, same: false },
    { name: 'skipped (shown as confirmed)', entry: { ...reconBase, outcome: 'skipped', resolvedAt: 100 }, same: false },
    { name: 'failed', entry: { ...reconBase, outcome: 'failed', error: 'x' }, same: false },
    { name: 'another plugin', entry: { ...reconBase, pluginName: 'p' as PluginName }, same: false },
    { name: 'kept because its pod has unresolved volumes', entry: { ...reconBase, keptBecause: 'data: error processing PVC ns/c: failed to fetch PVC from API server: boom' }, same: false },
  ])('$name: matches = $same', ({ entry, same }) => {
    const item = reconstructedVolumeFromEntry(reconBase);

    expect(reconstructedVolumeMatchesEntry(item, entry)).toBe(same);
    expect(jsonEqual(item, reconstructedVolumeFromEntry(entry))).toBe(same);
    expect(reconstructionEntryKey(entry)).toBe(reconstructedVolumeKey(reconstructedVolumeFromEntry(entry)));
  });
});

describe('nodeConditionsFromNode', () => {
  it('keeps the Node’s conditions in order, transition times as epoch ms, empty reasons left out', () => {
    const conditions = nodeConditionsFromNode({
      status: {
        conditions: [
          { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory', message: 'kubelet has sufficient memory available', lastTransitionTime: '2026-11-30T08:00:00Z' },
          { type: 'Ready', status: 'False', reason: '', lastTransitionTime: 'not a time' },
        ],
      },
    });
    expect(conditions).toEqual([
      { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory', message: 'kubelet has sufficient memory available', lastTransitionTime: Date.UTC(2026, 10, 30, 8) },
      { type: 'Ready', status: 'False', lastTransitionTime: null },
    ]);
  });

  it('is null while the Node is not known, and empty for a Node without conditions', () => {
    expect(nodeConditionsFromNode(undefined)).toBeNull();
    expect(nodeConditionsFromNode({})).toEqual([]);
  });
});
