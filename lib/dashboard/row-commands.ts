/**
 * The commands of one row in view (kube-commands.ts) from what the snapshot knows about it: the
 * volume's spec from a desired pod (claim → PV → VolumeAttachment), when its trouble started
 * (the first failure of its history, else the kubelet's event, else the last error) and whether
 * the kubelet (observe mode) or the agent does the work. Pure; called on click, so a table of
 * 10,000 rows computes nothing until one is copied.
 */
import type { DesiredVolumeSpec, Operation, OperationHistory, Snapshot } from '../api/index.ts';
import type { PlannedOperation } from '../api/observe.ts';
import { operationKey } from '../api/index.ts';
import { pairFailureHistory } from './incident-history.ts';
import { operationRowCommands, volumeRowCommands } from './kube-commands.ts';
import { rowPodName, type VolumeRow } from './pipeline.ts';

/** The parts of a snapshot the row commands read. */
export type RowCommandsSnapshot = Pick<Snapshot, 'desired' | 'operationHistory' | 'observe'>;

/** The spec of the pod's volume `volumeName`, or of any desired pod's volume `uniqueVolumeName` when no pod is given. */
function specOf(snapshot: RowCommandsSnapshot, uniqueVolumeName: string, podUid: string | null, volumeName: string | null): DesiredVolumeSpec | null {
  for (const pod of snapshot.desired.pods) {
    if (podUid !== null && pod.uid !== podUid) continue;
    for (const v of pod.volumes) {
      if (v.uniqueVolumeName === uniqueVolumeName && (volumeName === null || v.name === volumeName) && v.spec !== undefined) return v.spec;
    }
  }
  return null;
}

/** When the trouble of a pair started: its history's first failure, the kubelet's event, its last error; null when unknown. */
function troubleSince(history: OperationHistory | null, op: Pick<Operation, 'lastErrorAt'> | null, kubeletEventAt: number | null): number | null {
  return history?.firstFailureAt ?? kubeletEventAt ?? op?.lastErrorAt ?? null;
}

/** The commands for one (pod, volume) row; `podName` is its `namespace/name` when known. */
export function volumeRowCommandText(node: string, row: VolumeRow, podName: string | null, snapshot: RowCommandsSnapshot): string {
  const history = pairFailureHistory(row, snapshot.operationHistory);
  return volumeRowCommands({
    node,
    podUid: row.podUid,
    podName: podName ?? (row.desired ? rowPodName(row) : null),
    volumeName: row.volumeName,
    uniqueVolumeName: row.uniqueVolumeName,
    spec: row.desired ? specOf(snapshot, row.uniqueVolumeName, row.podUid, row.volumeName) : null,
    observed: snapshot.observe !== undefined,
    since: troubleSince(history, row.operation, row.kubelet?.backoff.observedAt ?? null),
  });
}

/** The commands for one pending operation of the agent's table. */
export function operationRowCommandText(node: string, op: Operation, podName: string | null, snapshot: RowCommandsSnapshot): string {
  const history = snapshot.operationHistory.find((h) => operationKey(h) === operationKey(op)) ?? null;
  return operationRowCommands({
    node,
    op,
    podName,
    spec: specOf(snapshot, op.volume, op.podUid, null),
    observed: snapshot.observe !== undefined,
    since: troubleSince(history, op, null),
  });
}

/** The commands for one operation of the kubelet's plan (observe mode): since its event, else since it is outstanding. */
export function plannedRowCommandText(node: string, op: PlannedOperation, snapshot: RowCommandsSnapshot): string {
  return operationRowCommands({
    node,
    op: { operationName: op.operation, volume: op.volume, podUid: op.podUid },
    podName: op.pod,
    spec: specOf(snapshot, op.volume, op.podUid, op.outerVolumeName),
    observed: true,
    since: op.kubeletBackoff?.observedAt ?? op.since,
  });
}
