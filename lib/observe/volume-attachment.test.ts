import { describe, expect, it } from 'vitest';
import type { PersistentVolume } from '../volume/k8s-types.ts';
import { csiUniqueVolumeName, parseCsiUniqueVolumeName, persistentVolumeUniqueName, volumeAttachmentVolumeName } from './volume-attachment.ts';
import type { VolumeAttachment } from './volume-attachment.ts';

function pv(name: string, csi?: { driver: string; volumeHandle: string }): PersistentVolume {
  return { metadata: { name }, spec: csi === undefined ? { hostPath: { path: '/data' } } : { csi } };
}

function va(source: VolumeAttachment['spec']['source']): VolumeAttachment {
  return { metadata: { name: 'csi-abc' }, spec: { attacher: 'ebs.csi.aws.com', nodeName: 'node-1', source } };
}

describe('CSI unique volume names', () => {
  it('builds the name the kubelet and the attach/detach controller use', () => {
    expect(csiUniqueVolumeName('ebs.csi.aws.com', 'vol-0abc')).toBe('kubernetes.io/csi/ebs.csi.aws.com^vol-0abc');
  });

  it.each([
    { name: 'kubernetes.io/csi/ebs.csi.aws.com^vol-0abc', want: { driver: 'ebs.csi.aws.com', volumeHandle: 'vol-0abc' } },
    { name: 'kubernetes.io/csi/pd.csi.storage.gke.io^projects/p/zones/z/disks/d', want: { driver: 'pd.csi.storage.gke.io', volumeHandle: 'projects/p/zones/z/disks/d' } },
    { name: 'kubernetes.io/csi/d^a^b', want: { driver: 'd', volumeHandle: 'a^b' } },
    { name: 'kubernetes.io/csi/6f1c-uid-inline', want: null },
    { name: 'kubernetes.io/csi/^h', want: null },
    { name: 'kubernetes.io/csi/d^', want: null },
    { name: 'kubernetes.io/secret/uid-token', want: null },
  ])('parses $name', ({ name, want }) => {
    expect(parseCsiUniqueVolumeName(name)).toEqual(want);
  });

  it('names CSI PVs and leaves in-tree PVs unnamed', () => {
    expect(persistentVolumeUniqueName(pv('pvc-1', { driver: 'd', volumeHandle: 'h' }))).toBe('kubernetes.io/csi/d^h');
    expect(persistentVolumeUniqueName(pv('local'))).toBeNull();
  });
});

describe('volumeAttachmentVolumeName', () => {
  const pvs = new Map([
    ['pvc-1', pv('pvc-1', { driver: 'ebs.csi.aws.com', volumeHandle: 'vol-1' })],
    ['local', pv('local')],
  ]);

  it.each([
    { name: 'a PV source', source: { persistentVolumeName: 'pvc-1' }, want: { volumeName: 'kubernetes.io/csi/ebs.csi.aws.com^vol-1' } },
    { name: 'a migrated inline spec', source: { inlineVolumeSpec: { csi: { driver: 'pd.csi.storage.gke.io', volumeHandle: 'projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d1' } } }, want: { volumeName: 'kubernetes.io/csi/pd.csi.storage.gke.io^projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d1' } },
    { name: 'a missing PV', source: { persistentVolumeName: 'gone' }, want: { volumeName: null, reason: 'PersistentVolume gone was not found' } },
    { name: 'a PV without CSI source', source: { persistentVolumeName: 'local' }, want: { volumeName: null, reason: 'PersistentVolume local has no CSI source' } },
    { name: 'an empty source', source: {}, want: { volumeName: null, reason: 'its source names no PersistentVolume and has no inline CSI spec' } },
  ])('maps $name', ({ source, want }) => {
    expect(volumeAttachmentVolumeName(va(source), pvs)).toEqual(want);
  });
});
