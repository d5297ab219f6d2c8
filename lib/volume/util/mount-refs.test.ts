import { describe, expect, it } from 'vitest';
import { hasMountRefs } from './mount-refs.ts';

const STAGING = '/var/lib/kubelet/plugins/kubernetes.io/csi/csi.example.com/0123abcd/globalmount';

describe('HasMountRefs', () => {
  const cases: { name: string; mountPath: string; refs: string[]; want: boolean }[] = [
    { name: 'no references', mountPath: STAGING, refs: [], want: false },
    {
      name: 'the root dir seen under another prefix is the kubelet\'s own',
      mountPath: STAGING,
      refs: ['/home/somewhere/var/lib/kubelet/plugins/kubernetes.io/csi/csi.example.com/0123abcd/globalmount'],
      want: false,
    },
    {
      name: 'the root dir bind-mounted elsewhere (visible under two paths) does not block UnmountDevice',
      mountPath: STAGING,
      refs: ['/mnt/kubelet-alias/plugins/kubernetes.io/csi/csi.example.com/0123abcd/globalmount'],
      want: false,
    },
    {
      name: 'a pod publish target is a reference',
      mountPath: STAGING,
      refs: ['/var/lib/kubelet/pods/uid-1/volumes/kubernetes.io~csi/pv-1/mount'],
      want: true,
    },
    { name: 'a manual mount is a reference', mountPath: STAGING, refs: ['/data/local/some/manual/mount'], want: true },
    {
      name: 'one foreign reference among the kubelet\'s own counts',
      mountPath: STAGING,
      refs: ['/mnt/kubelet-alias/plugins/kubernetes.io/csi/csi.example.com/0123abcd/globalmount', '/data/local/some/manual/mount'],
      want: true,
    },
    {
      name: 'another volume of the same plugin is a reference',
      mountPath: STAGING,
      refs: ['/mnt/kubelet-alias/plugins/kubernetes.io/csi/csi.example.com/ffff/globalmount'],
      want: true,
    },
    { name: 'a path without the plugin prefix is searched whole: a sub-path is not a reference', mountPath: '/mnt/disks/d1', refs: ['/mnt/disks/d1/sub'], want: false },
    { name: 'a path without the plugin prefix: another prefix is a reference', mountPath: '/mnt/disks/d1', refs: ['/alias/mnt/disks/d2'], want: true },
  ];

  it.each(cases)('$name', ({ mountPath, refs, want }) => {
    expect(hasMountRefs(mountPath, refs)).toBe(want);
  });
});
