import { describe, expect, it } from 'vitest';
import type { Operation, Snapshot } from '../api/index.ts';
import { observedSnapshot, SCRATCH, SCRATCH_FAILED_AT } from '../api/testing/observe-fixtures.ts';
import { exampleSnapshot, FIXTURE_T0 } from '../api/testing/snapshot-fixtures.ts';
import { deriveVolumeRows, type VolumeRow } from './pipeline.ts';
import { operationRowCommandText, plannedRowCommandText, volumeRowCommandText } from './row-commands.ts';

const DB_UID = 'a7d9e3b1-6c45-4b8a-8f2d-0e1c9b7a5d33';
const CSI_PG = 'kubernetes.io/csi/csi-loop.volumescope.dev^vol-pg';

/** The example with db-0's pgdata spec filled as the agent builds it (claim → PV → VolumeAttachment). */
function withPgSpec(): Snapshot {
  const s = exampleSnapshot();
  const spec = { sourceType: 'persistentVolumeClaim', source: [], mounts: [], claimName: 'pgdata', persistentVolumeName: 'pv-pg', csiDriver: 'csi-loop.volumescope.dev', volumeAttachment: 'csi-abc' };
  return { ...s, desired: { pods: s.desired.pods.map((p) => (p.uid === DB_UID ? { ...p, volumes: p.volumes.map((v) => (v.uniqueVolumeName === CSI_PG ? { ...v, spec } : v)) } : p)) } };
}

describe('row commands from the snapshot', () => {
  it('a pod’s volume (managed mode): its pod, claim, PV, VolumeAttachment, and the agent’s log from a minute before its first failure', () => {
    const snapshot = withPgSpec();
    const row = deriveVolumeRows(snapshot).find((r) => r.podUid === DB_UID && r.uniqueVolumeName === CSI_PG) as VolumeRow;
    const lines = volumeRowCommandText('node-a', row, null, snapshot).split('\n');
    expect(lines.slice(0, 5)).toEqual(['kubectl -n default describe pod db-0', `kubectl -n default get events --field-selector involvedObject.uid=${DB_UID}`, 'kubectl -n default describe pvc pgdata', 'kubectl describe pv pv-pg', 'kubectl get volumeattachment csi-abc -o yaml']);
    // The history's first failure is FIXTURE_T0 + 59 s.
    expect(lines.at(-1)).toContain(`--since-time=${new Date(FIXTURE_T0 - 1_000).toISOString().slice(0, 19)}Z`);
    expect(lines.at(-1)).toContain(`grep -F ${CSI_PG}`);
  });

  it('a pending operation: the same objects, found through any desired pod of its volume', () => {
    const snapshot = withPgSpec();
    const op = snapshot.operations[0] as Operation;
    const text = operationRowCommandText('node-a', op, 'default/db-0', snapshot);
    expect(text).toContain('kubectl get volumeattachment csi-abc -o yaml');
    expect(text).toContain('kubectl -n default describe pod db-0');
  });

  it('observe mode: a plan row’s log is the kubelet’s journal from a minute before its event', () => {
    const snapshot = observedSnapshot();
    const op = snapshot.observe?.plan.find((p) => p.volume === SCRATCH);
    if (op === undefined) throw new Error('fixture: no plan row for scratch');
    const last = plannedRowCommandText('observer', op, snapshot).split('\n').at(-1);
    const from = new Date(SCRATCH_FAILED_AT - 60_000).toISOString().slice(0, 19).replace('T', ' ');
    expect(last).toBe(`journalctl -u kubelet --since '${from} UTC' | grep -F ${SCRATCH}   # on node observer`);
    const row = deriveVolumeRows(snapshot).find((r) => r.uniqueVolumeName === SCRATCH) as VolumeRow;
    expect(volumeRowCommandText('observer', row, null, snapshot)).toContain('journalctl -u kubelet');
  });
});
