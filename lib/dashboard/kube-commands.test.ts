import { describe, expect, it } from 'vitest';
import { operationRowCommands, operationRowTargetText, podCommands, shellQuote, volumeCommands, volumeRowCommands, volumeRowTargetText } from './kube-commands.ts';

const UID = 'a7d9e3b1-6c45-4b8a-8f2d-0e1c9b7a5d33';
const PG = 'kubernetes.io/csi/csi-loop.volumescope.dev^vol-pg';

describe('podCommands', () => {
  it('describes a named pod and finds its events by UID, then the agent’s and the kubelet’s logs on its node', () => {
    expect(podCommands({ node: 'node-a', uid: UID, podName: 'default/db-0' }).split('\n')).toEqual([
      'kubectl -n default describe pod db-0',
      `kubectl -n default get events --field-selector involvedObject.uid=${UID}`,
      `kubectl -n volumescope logs $(kubectl -n volumescope get pods -l app.kubernetes.io/name=volumescope-agent --field-selector spec.nodeName=node-a -o name) | grep -F ${UID}`,
      `journalctl -u kubelet --since '1 hour ago' | grep -F ${UID}   # on node node-a`,
    ]);
  });

  it('looks a pod without a known name up by UID in every namespace, inventing no name', () => {
    const lines = podCommands({ node: 'node-a', uid: UID, podName: null }).split('\n');
    expect(lines[0]).toBe(`kubectl get events -A --field-selector involvedObject.uid=${UID}`);
    expect(lines.some((l) => l.includes('describe pod'))).toBe(false);
  });
});

describe('volumeCommands', () => {
  it('names the claim, the PV, the VolumeAttachment and the CSINode of a CSI volume', () => {
    const text = volumeCommands({
      node: 'node-a',
      uniqueVolumeName: PG,
      namespace: 'default',
      spec: { sourceType: 'persistentVolumeClaim', source: [], mounts: [], claimName: 'pgdata', persistentVolumeName: 'pv-pg', csiDriver: 'csi-loop.volumescope.dev', volumeAttachment: 'csi-abc' },
    });
    expect(text.split('\n').slice(0, 4)).toEqual([
      'kubectl -n default describe pvc pgdata',
      'kubectl describe pv pv-pg',
      'kubectl get volumeattachment csi-abc -o yaml',
      'kubectl get csinode node-a -o yaml',
    ]);
    expect(text).toContain(`journalctl -u kubelet --since '1 hour ago' | grep -F ${PG}   # on node node-a`);
  });

  it('has only the logs for a volume without a spec', () => {
    expect(volumeCommands({ node: 'node-a', uniqueVolumeName: 'kubernetes.io/host-path/data' }).split('\n')).toHaveLength(2);
  });
});

const AGENT_LOGS = 'kubectl -n volumescope logs';
const FAILED_AT = Date.parse('2026-12-02T05:41:30Z');
const PG_SPEC = { sourceType: 'persistentVolumeClaim', source: [], mounts: [], claimName: 'pgdata', persistentVolumeName: 'pv-pg', csiDriver: 'csi-loop.volumescope.dev', volumeAttachment: 'csi-abc' };

describe('volumeRowCommands (one pod volume in view)', () => {
  it('managed mode: the pod, the claim → PV → VolumeAttachment of a CSI volume, and the agent’s log about the volume since just before its first failure', () => {
    const lines = volumeRowCommands({ node: 'node-a', podUid: UID, podName: 'default/db-0', volumeName: 'pgdata', uniqueVolumeName: PG, spec: PG_SPEC, observed: false, since: FAILED_AT }).split('\n');
    expect(lines).toEqual([
      'kubectl -n default describe pod db-0',
      `kubectl -n default get events --field-selector involvedObject.uid=${UID}`,
      'kubectl -n default describe pvc pgdata',
      'kubectl describe pv pv-pg',
      'kubectl get volumeattachment csi-abc -o yaml',
      'kubectl get csinode node-a -o yaml',
      `${AGENT_LOGS} --since-time=2026-12-02T05:40:30Z $(kubectl -n volumescope get pods -l app.kubernetes.io/name=volumescope-agent --field-selector spec.nodeName=node-a -o name) | grep -F ${PG}`,
    ]);
  });

  it('observe mode: the kubelet’s journal on the node, from a minute before the trouble', () => {
    const text = volumeRowCommands({ node: 'node-o', podUid: UID, podName: 'e2e/stuck-0', volumeName: 'logs', uniqueVolumeName: `kubernetes.io/host-path/${UID}-logs`, spec: null, observed: true, since: FAILED_AT });
    expect(text.split('\n').at(-1)).toBe(`journalctl -u kubelet --since '2026-12-02 05:40:30 UTC' | grep -F kubernetes.io/host-path/${UID}-logs   # on node node-o`);
    expect(text).not.toContain(AGENT_LOGS);
    expect(volumeRowTargetText({ volumeName: 'logs', podName: 'e2e/stuck-0', podUid: UID })).toBe('volume logs of pod e2e/stuck-0');
  });

  it('a pod without a known name is looked up by UID, and without a known start the journal covers the last hour', () => {
    const text = volumeRowCommands({ node: 'node-o', podUid: UID, podName: null, volumeName: 'logs', uniqueVolumeName: 'kubernetes.io/empty-dir/x', spec: null, observed: true, since: null });
    expect(text.split('\n')).toEqual([`kubectl get events -A --field-selector involvedObject.uid=${UID}`, `journalctl -u kubelet --since '1 hour ago' | grep -F kubernetes.io/empty-dir/x   # on node node-o`]);
    expect(volumeRowTargetText({ volumeName: 'logs', podName: null, podUid: UID })).toBe(`volume logs of pod uid ${UID}`);
  });
});

describe('operationRowCommands (one pending operation in view)', () => {
  it('a pod operation: the pod, the volume’s objects and the log; named as Retry now names it', () => {
    const t = { node: 'node-a', op: { operationName: 'volume_mount', volume: PG, podUid: UID }, podName: 'default/db-0', spec: PG_SPEC, observed: false, since: FAILED_AT };
    const lines = operationRowCommands(t).split('\n');
    expect(lines[0]).toBe('kubectl -n default describe pod db-0');
    expect(lines).toContain('kubectl get volumeattachment csi-abc -o yaml');
    expect(lines.at(-1)).toContain('--since-time=2026-12-02T05:40:30Z');
    expect(operationRowTargetText(t)).toBe('mount volume vol-pg for pod default/db-0');
  });

  it('a volume-wide operation (unmount device) has no pod commands', () => {
    const lines = operationRowCommands({ node: 'node-o', op: { operationName: 'unmount_device', volume: PG, podUid: null }, podName: null, spec: null, observed: true, since: null }).split('\n');
    expect(lines).toEqual(['kubectl get csinode node-o -o yaml', `journalctl -u kubelet --since '1 hour ago' | grep -F ${PG}   # on node node-o`]);
  });
});

describe('shellQuote', () => {
  it.each([
    { s: 'db-0', quoted: 'db-0' },
    { s: 'a b', quoted: "'a b'" },
    { s: "it's", quoted: `'it'\\''s'` },
    { s: '$(rm -rf /)', quoted: "'$(rm -rf /)'" },
  ])('$s → $quoted', ({ s, quoted }) => {
    expect(shellQuote(s)).toBe(quoted);
  });
});
