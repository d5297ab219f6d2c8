/**
 * The items of the API snapshot made from the engine's read-only views, one `…FromView` and one
 * `…MatchesView` per item type. A `…MatchesView(item, view)` answers, without allocating,
 * whether `…FromView(view)` would equal `item`; the snapshot builder uses it to keep the
 * previous object of every unchanged item. The two must agree field for field
 * (snapshot-items.test.ts checks every field).
 */
import { sortByKey } from '../../lib/api/normalize-snapshot.ts';
import {
  podMountKey,
  type ActualVolume,
  type DesiredVolume,
  type NodeCondition,
  type Operation,
  type OperationHistory,
  type PodMount,
  type ReconstructedVolume,
} from '../../lib/api/snapshot.ts';
import { type OperationHistoryView, type PendingOperationView, type DeviceMountState, type ActualVolumeView, type DesiredVolumeView, podNamespace, type ReconstructionEntry, type ReconstructionOutcome } from '../../lib/volumemanager/index.ts';
import { truncateMessage } from '../../lib/truncate-message.ts';
import type { Node } from '../../lib/volume/k8s-types.ts';
import { findByKey } from './keyed-collection.ts';
import { desiredVolumeSpec, volumeSpecMatches } from './volume-spec.ts';

/** The namespace of a pod by UID, when known. */
export type NamespaceOf = (podUid: string) => string | undefined;

/** One pod's entry of a desired volume view. */
export type DesiredPodEntry = DesiredVolumeView['pods'][number];

/** One pod of an actual volume view. */
type ActualPodView = ActualVolumeView['pods'][number];

// MAPPINGS

/** `uncertain` while attachability is unknown (reconstructed) or the volume was found detached and not attached again. */
export function attachState(view: Pick<ActualVolumeView, 'attachability' | 'foundDetached'>): ActualVolume['attachState'] {
  return view.attachability === 'Uncertain' || view.foundDetached ? 'uncertain' : 'attached';
}

export function deviceMountState(state: DeviceMountState): ActualVolume['deviceMountState'] {
  switch (state) {
    case 'DeviceGloballyMounted':
      return 'mounted';
    case 'DeviceMountUncertain':
      return 'uncertain';
    case 'DeviceNotMounted':
      return 'not-mounted';
  }
}

function mountState(state: ActualPodView['mountState']): PodMount['mountState'] {
  return state === 'VolumeMounted' ? 'mounted' : 'uncertain';
}

/**
 * The engine's reconstruction outcome in the API's terms. `skipped` means the directory belonged
 * to a volume the actual state already had (mounted through the normal path before the scan got
 * to it): for an operator that is a confirmed mount.
 */
export function reconstructionOutcome(outcome: ReconstructionOutcome): ReconstructedVolume['outcome'] {
  return outcome === 'skipped' ? 'confirmed-mounted' : outcome;
}

// DESIRED

/** The UID of the pod of a desired entry (its key in `desired.pods`). */
export function desiredPodUid(entry: DesiredPodEntry): string {
  return entry.pod.metadata.uid ?? entry.podName;
}

/** The pod's namespace as the snapshot shows it (`default` when the manifest leaves it out). */
export function desiredPodNamespace(entry: DesiredPodEntry): string {
  return podNamespace(entry.pod);
}

/** `nodeName` names the VolumeAttachment of an attachable CSI volume (volume-spec.ts); `''`: none. */
export function desiredVolumeFromView(view: DesiredVolumeView, entry: DesiredPodEntry, nodeName = ''): DesiredVolume {
  const spec = desiredVolumeSpec(view, entry, nodeName);
  return {
    name: entry.outerVolumeSpecName,
    uniqueVolumeName: view.volumeName,
    pluginName: view.pluginName,
    attachable: view.pluginIsAttachable,
    deviceMountable: view.pluginIsDeviceMountable,
    reportedInUse: view.reportedInUse,
    ...(spec !== undefined ? { spec } : {}),
  };
}

export function desiredVolumeMatchesView(volume: DesiredVolume, view: DesiredVolumeView, entry: DesiredPodEntry, nodeName = ''): boolean {
  return (
    volume.name === entry.outerVolumeSpecName &&
    volume.uniqueVolumeName === view.volumeName &&
    volume.pluginName === view.pluginName &&
    volume.attachable === view.pluginIsAttachable &&
    volume.deviceMountable === view.pluginIsDeviceMountable &&
    volume.reportedInUse === view.reportedInUse &&
    volumeSpecMatches(volume.spec, view, entry, nodeName)
  );
}

// ACTUAL

function podMountFromView(pod: ActualPodView, namespaceOf: NamespaceOf): PodMount {
  const namespace = namespaceOf(pod.podUID);
  return {
    podUid: pod.podUID,
    podName: pod.podName,
    ...(namespace !== undefined ? { podNamespace: namespace } : {}),
    outerVolumeName: pod.outerVolumeSpecName,
    mountState: mountState(pod.mountState),
    remountRequired: pod.remountRequired,
  };
}

function podMountMatchesView(mount: PodMount, pod: ActualPodView, namespaceOf: NamespaceOf): boolean {
  return (
    mount.podUid === pod.podUID &&
    mount.podName === pod.podName &&
    mount.podNamespace === namespaceOf(pod.podUID) &&
    mount.outerVolumeName === pod.outerVolumeSpecName &&
    mount.mountState === mountState(pod.mountState) &&
    mount.remountRequired === pod.remountRequired
  );
}

export function actualVolumeFromView(view: ActualVolumeView, namespaceOf: NamespaceOf): ActualVolume {
  const pods = view.pods.map((pod) => podMountFromView(pod, namespaceOf));
  return {
    uniqueVolumeName: view.volumeName,
    pluginName: view.pluginName,
    attachState: attachState(view),
    devicePath: view.devicePath,
    deviceMountState: deviceMountState(view.deviceMountState),
    deviceMountPath: view.deviceMountPath,
    pods: pods.length > 1 ? sortByKey(pods, podMountKey) : pods,
  };
}

/**
 * Whether {@link actualVolumeFromView} would equal `volume`. The pods of a view have distinct
 * UIDs (the actual state keys them by pod), so equal counts plus every view pod found equal
 * means the same set.
 */
export function actualVolumeMatchesView(volume: ActualVolume, view: ActualVolumeView, namespaceOf: NamespaceOf): boolean {
  if (
    volume.uniqueVolumeName !== view.volumeName ||
    volume.pluginName !== view.pluginName ||
    volume.attachState !== attachState(view) ||
    volume.devicePath !== view.devicePath ||
    volume.deviceMountState !== deviceMountState(view.deviceMountState) ||
    volume.deviceMountPath !== view.deviceMountPath ||
    volume.pods.length !== view.pods.length
  ) {
    return false;
  }
  for (const pod of view.pods) {
    const mount = findByKey(volume.pods, pod.podUID, podMountKey);
    if (mount === undefined || !podMountMatchesView(mount, pod, namespaceOf)) return false;
  }
  return true;
}

// OPERATIONS

export function operationFromView(op: PendingOperationView): Operation {
  return {
    operationName: op.operationName,
    volume: op.key.volumeName,
    podUid: op.key.podName === '' ? null : op.key.podName,
    nodeName: op.key.nodeName === '' ? null : op.key.nodeName,
    state: op.pending ? 'running' : 'backoff',
    failures: op.failures,
    lastError: op.lastError === null ? null : truncateMessage(op.lastError),
    lastErrorAt: op.lastErrorTime,
    retryAt: op.retryAt,
    durationBeforeRetryMs: op.durationBeforeRetry,
    startedAt: op.startedAt,
  };
}

export function operationMatchesView(operation: Operation, op: PendingOperationView): boolean {
  return (
    operation.operationName === op.operationName &&
    operation.volume === op.key.volumeName &&
    operation.podUid === (op.key.podName === '' ? null : op.key.podName) &&
    operation.nodeName === (op.key.nodeName === '' ? null : op.key.nodeName) &&
    operation.state === (op.pending ? 'running' : 'backoff') &&
    operation.failures === op.failures &&
    operation.lastError === (op.lastError === null ? null : truncateMessage(op.lastError)) &&
    operation.lastErrorAt === op.lastErrorTime &&
    operation.retryAt === op.retryAt &&
    operation.durationBeforeRetryMs === op.durationBeforeRetry &&
    operation.startedAt === op.startedAt
  );
}

/** The API key of a table entry without building the item (`operationKey`). */
export function operationViewKey(op: PendingOperationView): string {
  return `${op.operationName}|${op.key.volumeName}|${op.key.podName}|${op.key.nodeName}`;
}

// OPERATION HISTORY

/** The API item of one key's history; error texts cut as `lastError` is. */
export function operationHistoryFromView(view: OperationHistoryView): OperationHistory {
  return {
    operationName: view.operationName,
    volume: view.volume,
    podUid: view.pod === '' ? null : view.pod,
    nodeName: view.node === '' ? null : view.node,
    firstFailureAt: view.firstFailureAt,
    attemptsTotal: view.attemptsTotal,
    attempts: view.attempts.map((a) => ({ startedAt: a.startedAt, durationMs: a.durationMs, error: a.error === null ? null : truncateMessage(a.error) })),
    succeededAt: view.succeededAt,
  };
}

/**
 * Whether {@link operationHistoryFromView} would equal `item`. Within one key, a history only
 * changes by another attempt (`attemptsTotal` grows, `succeededAt` may be set) or by a new
 * episode (`firstFailureAt` moves on), so these fields decide it without comparing attempts.
 */
export function operationHistoryMatchesView(item: OperationHistory, view: OperationHistoryView): boolean {
  return (
    item.operationName === view.operationName &&
    item.volume === view.volume &&
    item.podUid === (view.pod === '' ? null : view.pod) &&
    item.nodeName === (view.node === '' ? null : view.node) &&
    item.firstFailureAt === view.firstFailureAt &&
    item.attemptsTotal === view.attemptsTotal &&
    item.succeededAt === view.succeededAt
  );
}

/** The API key of a history without building the item (`operationKey`). */
export function operationHistoryViewKey(view: OperationHistoryView): string {
  return `${view.operationName}|${view.volume}|${view.pod}|${view.node}`;
}

// RECONSTRUCTION

export function reconstructedVolumeFromEntry(entry: ReconstructionEntry): ReconstructedVolume {
  return {
    podUid: entry.podName,
    volumeName: entry.volumeSpecName,
    pluginName: entry.pluginName,
    outcome: reconstructionOutcome(entry.outcome),
    error: entry.error,
    ...(entry.keptBecause === null ? {} : { keptBecause: entry.keptBecause }),
    at: entry.resolvedAt ?? entry.scannedAt,
  };
}

export function reconstructedVolumeMatchesEntry(volume: ReconstructedVolume, entry: ReconstructionEntry): boolean {
  return (
    volume.podUid === entry.podName &&
    volume.volumeName === entry.volumeSpecName &&
    volume.pluginName === entry.pluginName &&
    volume.outcome === reconstructionOutcome(entry.outcome) &&
    volume.error === entry.error &&
    (volume.keptBecause ?? null) === entry.keptBecause &&
    volume.at === (entry.resolvedAt ?? entry.scannedAt)
  );
}

/** The API key of a reconstruction entry without building the item (`reconstructedVolumeKey`). */
export function reconstructionEntryKey(entry: ReconstructionEntry): string {
  return `${entry.podName}|${entry.volumeSpecName}`;
}

// NODE

/**
 * The snapshot's `nodeConditions` from the Node object: its conditions in order, transition
 * times as epoch ms (`null` when absent or unparsable); null when the Node is not known.
 */
export function nodeConditionsFromNode(node: Pick<Node, 'status'> | undefined): NodeCondition[] | null {
  if (node === undefined) return null;
  return (node.status?.conditions ?? []).map((c) => {
    const at = c.lastTransitionTime === undefined ? Number.NaN : Date.parse(c.lastTransitionTime);
    return {
      type: c.type,
      status: c.status,
      ...(c.reason === undefined || c.reason === '' ? {} : { reason: c.reason }),
      ...(c.message === undefined || c.message === '' ? {} : { message: truncateMessage(c.message) }),
      lastTransitionTime: Number.isFinite(at) && at >= 0 ? Math.floor(at) : null,
    };
  });
}
