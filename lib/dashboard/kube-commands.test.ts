import { describe, expect, it } from 'vitest';
import { podCommands, shellQuote, volumeCommands } from './kube-commands.ts';

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
