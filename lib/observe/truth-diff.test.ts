import { describe, expect, it } from 'vitest';
import type { MountInfo } from '../mount-utils/mountinfo.ts';
import { deviceMountPath } from '../volume/csi/vol-data.ts';
import type { PersistentVolume } from '../volume/k8s-types.ts';
import { csiUniqueVolumeName, diffNodeTruth, kubeletMountLocation } from './truth-diff.ts';
import type { AgentVolume, TruthDiffInput } from './truth-diff.ts';
import type { VolumeAttachment } from './volume-attachment.ts';

const ROOT = '/var/lib/kubelet';
const NODE = 'node-1';
const DRIVER = 'ebs.csi.aws.com';
const P1 = '11111111-aaaa-4bbb-8ccc-000000000001';
const A = csiUniqueVolumeName(DRIVER, 'vol-a');
const SECRET = `kubernetes.io/secret/${P1}-token`;
const GLOBAL_A = deviceMountPath(ROOT, DRIVER, 'vol-a');
const POD_A = `${ROOT}/pods/${P1}/volumes/kubernetes.io~csi/pvc-a/mount`;
const POD_SECRET = `${ROOT}/pods/${P1}/volumes/kubernetes.io~secret/token`;

const pvs: PersistentVolume[] = [{ metadata: { name: 'pvc-a' }, spec: { csi: { driver: DRIVER, volumeHandle: 'vol-a' } } }];

let nextId = 100;
function mount(mountPoint: string, fsType = 'ext4'): MountInfo {
  return { id: nextId++, parentId: 1, major: 259, minor: 3, root: '/', mountPoint, mountOptions: ['rw'], optionalFields: [], fsType, source: '/dev/nvme1n1', superOptions: ['rw'] };
}

function va(name: string, pvName: string, status: VolumeAttachment['status'], extra: { nodeName?: string; deletionTimestamp?: string } = {}): VolumeAttachment {
  const metadata: VolumeAttachment['metadata'] = { name };
  if (extra.deletionTimestamp !== undefined) metadata.deletionTimestamp = extra.deletionTimestamp;
  return { metadata, spec: { attacher: DRIVER, nodeName: extra.nodeName ?? NODE, source: { persistentVolumeName: pvName } }, status };
}

const desiredA = (extra: Partial<AgentVolume> = {}): AgentVolume => ({ volumeName: A, attachable: true, pods: [{ podUID: P1, specName: 'pvc-a' }], ...extra });
const actualA = (mountState: 'mounted' | 'uncertain' = 'mounted'): AgentVolume => ({ volumeName: A, attachable: true, deviceMountState: 'mounted', pods: [{ podUID: P1, specName: 'pvc-a', mountState }] });

function input(extra: Partial<TruthDiffInput>): TruthDiffInput {
  return { nodeName: NODE, rootDir: ROOT, persistentVolumes: pvs, ...extra };
}

/** `key: code, code` per row, rows in order: compact and readable in failures. */
function summary(extra: Partial<TruthDiffInput>): string[] {
  return diffNodeTruth(input(extra)).rows.map((r) => `${r.key}: ${r.findings.map((f) => f.code).join(', ')}`);
}

describe('diffNodeTruth', () => {
  it('finds nothing to report when every source agrees', () => {
    // Arrange
    const secret: AgentVolume = { volumeName: SECRET, expectsPodMount: true, pods: [{ podUID: P1, specName: 'token' }] };
    const secretMounted: AgentVolume = { ...secret, pods: [{ podUID: P1, specName: 'token', mountState: 'mounted' }] };

    // Act
    const diff = diffNodeTruth(
      input({
        agent: { desired: [desiredA(), secret], actual: [actualA(), secretMounted] },
        nodeStatus: { volumesInUse: [A], volumesAttached: [{ name: A, devicePath: '/dev/xvdba' }] },
        volumeAttachments: [va('csi-a', 'pvc-a', { attached: true })],
        mountInfo: [mount('/'), mount(GLOBAL_A), mount(POD_A), mount(POD_SECRET, 'tmpfs'), mount(`${ROOT}/pods/${P1}/volumes/kubernetes.io~csi/pvc-a/mount/nested`)],
      }),
    );

    // Assert
    expect(diff.nodeName).toBe(NODE);
    expect(diff.rows).toEqual([
      {
        key: A, volumeName: A, desiredPods: [P1], actualPods: [{ podUID: P1, mountState: 'mounted' }], inUse: true, attachedDevicePath: '/dev/xvdba',
        volumeAttachments: [{ name: 'csi-a', attached: true }], globalMounts: [GLOBAL_A], podMounts: [{ podUID: P1, specName: 'pvc-a', mountPoint: POD_A }], findings: [],
      },
      {
        key: SECRET, volumeName: SECRET, desiredPods: [P1], actualPods: [{ podUID: P1, mountState: 'mounted' }], inUse: false, attachedDevicePath: null,
        volumeAttachments: [], globalMounts: [], podMounts: [{ podUID: P1, specName: 'token', mountPoint: POD_SECRET }], findings: [],
      },
    ]);
  });

  it.each<{ name: string; extra: Partial<TruthDiffInput>; want: string[] }>([
    { name: 'in use but not attached', extra: { nodeStatus: { volumesInUse: [A], volumesAttached: [] } }, want: [`${A}: in-use-not-attached`] },
    { name: 'attached but not in use', extra: { nodeStatus: { volumesInUse: [], volumesAttached: [{ name: A, devicePath: '' }] } }, want: [`${A}: attached-not-in-use`] },
    {
      name: 'a VolumeAttachment attached that node status does not list',
      extra: { nodeStatus: { volumesInUse: [A] }, volumeAttachments: [va('csi-a', 'pvc-a', { attached: true })] },
      want: [`${A}: in-use-not-attached, va-attached-not-in-node-status`],
    },
    {
      name: 'a CSI volume attached in node status without a VolumeAttachment',
      extra: { nodeStatus: { volumesInUse: [A], volumesAttached: [{ name: A, devicePath: '' }] }, volumeAttachments: [] },
      want: [`${A}: attached-without-va`],
    },
    {
      name: 'an attach error',
      extra: { volumeAttachments: [va('csi-a', 'pvc-a', { attached: false, attachError: { message: 'rpc error: code = Internal desc = disk vol-a is attached to another instance' } })] },
      want: [`${A}: va-error`],
    },
    {
      name: 'a VolumeAttachment being deleted with a detach error',
      extra: { volumeAttachments: [va('csi-a', 'pvc-a', { attached: true, detachError: { message: 'node node-1 not found' } }, { deletionTimestamp: '2024-01-01T12:00:00Z' })] },
      want: [`${A}: va-error, va-deleting`],
    },
    { name: 'an attach in progress', extra: { volumeAttachments: [va('csi-a', 'pvc-a', {})] }, want: [`${A}: va-not-attached`] },
    { name: 'a VolumeAttachment whose PV is unknown', extra: { volumeAttachments: [va('csi-x', 'pvc-gone', { attached: true })] }, want: ['va:csi-x: va-unmapped'] },
    { name: "another node's VolumeAttachment", extra: { volumeAttachments: [va('csi-a', 'pvc-a', { attached: true }, { nodeName: 'node-2' })] }, want: [] },
    {
      name: 'a desired attachable volume not yet reported in use',
      extra: { agent: { desired: [desiredA({ expectsPodMount: false })], actual: [] }, nodeStatus: { volumesInUse: [], volumesAttached: [] } },
      want: [`${A}: desired-not-in-use`],
    },
    {
      name: 'a stale volumesInUse entry',
      extra: { agent: { desired: [], actual: [] }, nodeStatus: { volumesInUse: [A], volumesAttached: [{ name: A, devicePath: '' }] } },
      want: [`${A}: in-use-not-desired`],
    },
    {
      name: 'mounts that are no longer desired',
      extra: { agent: { desired: [], actual: [] }, mountInfo: [mount(GLOBAL_A), mount(POD_A)] },
      want: [`${A}: mounted-not-desired, mounted-not-desired`],
    },
    { name: 'a desired volume not mounted yet', extra: { agent: { desired: [desiredA()], actual: [] }, mountInfo: [] }, want: [`${A}: desired-not-mounted`] },
    {
      name: 'a mount that vanished behind the kubelet',
      extra: { agent: { desired: [desiredA()], actual: [actualA()] }, mountInfo: [mount(GLOBAL_A)] },
      want: [`${A}: desired-not-mounted, actual-not-mounted`],
    },
    {
      name: 'an uncertain mount that is not there (not a contradiction)',
      extra: { agent: { desired: [desiredA()], actual: [actualA('uncertain')] }, mountInfo: [] },
      want: [`${A}: desired-not-mounted`],
    },
    { name: 'a mount the actual state does not know yet', extra: { agent: { desired: [desiredA()], actual: [] }, mountInfo: [mount(POD_A)] }, want: [`${A}: mounted-not-actual`] },
    { name: 'a staging mount with no pod mount', extra: { mountInfo: [mount(GLOBAL_A)] }, want: [`${A}: global-mount-without-pod-mounts`] },
    {
      name: 'a legacy staging path named after the PV',
      extra: { mountInfo: [mount(`${ROOT}/plugins/kubernetes.io/csi/pv/pvc-a/globalmount`)] },
      want: [`${A}: global-mount-without-pod-mounts`],
    },
    {
      name: 'mounts that match no known volume',
      extra: { mountInfo: [mount(`${ROOT}/pods/${P1}/volumes/kubernetes.io~csi/pvc-zzz/mount`), mount(deviceMountPath(ROOT, DRIVER, 'vol-unknown'))] },
      want: [
        `mount:${deviceMountPath(ROOT, DRIVER, 'vol-unknown')}: mount-unmapped`,
        `mount:${ROOT}/pods/${P1}/volumes/kubernetes.io~csi/pvc-zzz/mount: mount-unmapped`,
      ],
    },
  ])('reports $name', ({ extra, want }) => {
    expect(summary(extra)).toEqual(want);
  });

  it('explains each finding in one line with the kubelet phrasing operators search for', () => {
    const diff = diffNodeTruth(input({ agent: { desired: [desiredA()], actual: [] }, nodeStatus: { volumesInUse: [A] } }));
    const texts = diff.rows.flatMap((r) => r.findings.map((f) => `${f.severity} ${f.code}: ${f.explanation}`));
    expect(texts).toEqual([
      `warning in-use-not-attached: The kubelet lists ${A} in volumesInUse, but node.status.volumesAttached does not: its mounts wait ("Volume not attached according to node status") until the attach/detach controller records the attach.`,
    ]);
    expect(texts.every((t) => !t.includes('\n'))).toBe(true);
    const notInUse = diffNodeTruth(input({ agent: { desired: [desiredA({ expectsPodMount: false })], actual: [] }, nodeStatus: {} })).rows[0]?.findings[0];
    expect(notInUse?.explanation).toContain(`"Volume has not been added to the list of VolumesInUse in the node's volume status"`);
  });

  it('maps a VolumeAttachment of a migrated in-tree volume through its inline CSI spec', () => {
    const inline: VolumeAttachment = {
      metadata: { name: 'csi-inline' },
      spec: { attacher: 'pd.csi.storage.gke.io', nodeName: NODE, source: { inlineVolumeSpec: { csi: { driver: 'pd.csi.storage.gke.io', volumeHandle: 'projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d1' } } } },
      status: { attached: true },
    };
    const name = 'kubernetes.io/csi/pd.csi.storage.gke.io^projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d1';
    expect(summary({ volumeAttachments: [inline], nodeStatus: { volumesInUse: [name], volumesAttached: [{ name, devicePath: '' }] } })).toEqual([`${name}: `]);
  });

  it('does not claim a missing VolumeAttachment while one of the same driver cannot be mapped', () => {
    const got = summary({ nodeStatus: { volumesInUse: [A], volumesAttached: [{ name: A, devicePath: '' }] }, volumeAttachments: [va('csi-x', 'pvc-gone', { attached: true })] });
    expect(got).toEqual([`${A}: `, 'va:csi-x: va-unmapped']);
  });
});

describe('kubeletMountLocation', () => {
  it.each([
    { path: POD_A, want: { kind: 'pod', podUID: P1, pluginDir: 'kubernetes.io~csi', specName: 'pvc-a' } },
    { path: POD_SECRET, want: { kind: 'pod', podUID: P1, pluginDir: 'kubernetes.io~secret', specName: 'token' } },
    { path: GLOBAL_A, want: { kind: 'csi-global', driver: DRIVER, handleSha256: GLOBAL_A.split('/').at(-2) } },
    { path: `${ROOT}/plugins/kubernetes.io~csi/${DRIVER}/${'0'.repeat(64)}/globalmount`, want: { kind: 'csi-global', driver: DRIVER, handleSha256: '0'.repeat(64) } },
    { path: `${ROOT}/plugins/kubernetes.io/csi/pv/pvc-a/globalmount`, want: { kind: 'csi-global-legacy', pvName: 'pvc-a' } },
    { path: `${ROOT}/pods/${P1}/volumes/kubernetes.io~csi/pvc-a`, want: null },
    { path: `${ROOT}/pods/${P1}/volumes/kubernetes.io~secret/token/inner`, want: null },
    { path: `${ROOT}/pods/${P1}/volume-subpaths/v/c/0`, want: null },
    { path: `${ROOT}/plugins/kubernetes.io/csi/${DRIVER}/not-a-hash/globalmount`, want: null },
    { path: `${ROOT}/plugins/kubernetes.io/csi/${DRIVER}/${'0'.repeat(64)}/globalmount/sub`, want: null },
    { path: '/var/lib/kubelet-other/pods/x/volumes/p/s', want: null },
    { path: ROOT, want: null },
  ])('places $path', ({ path, want }) => {
    expect(kubeletMountLocation(ROOT, path)).toEqual(want);
  });
});
