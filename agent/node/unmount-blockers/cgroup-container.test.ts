/** Container and pod from a process's cgroup file, for the kubelet's cgroup layouts. */
import { describe, expect, it } from 'vitest';
import { containerFromCgroup } from './cgroup-container.ts';

const ID = 'a'.repeat(64);
const UID = '5c0a4c2e-0d3b-4f0e-9a51-2f6f1f3c7e10';

describe('containerFromCgroup', () => {
  it.each([
    ['systemd driver, containerd', `0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${UID.replaceAll('-', '_')}.slice/cri-containerd-${ID}.scope\n`, { podUid: UID, containerId: ID, runtime: 'containerd' }],
    ['systemd driver, CRI-O', `0::/kubepods.slice/kubepods-pod${UID.replaceAll('-', '_')}.slice/crio-${ID}.scope\n`, { podUid: UID, containerId: ID, runtime: 'cri-o' }],
    ['cgroupfs driver', `0::/kubepods/besteffort/pod${UID}/${ID}\n`, { podUid: UID, containerId: ID, runtime: null }],
    ['cgroup v1, first hierarchy naming a pod', `12:pids:/\n11:memory:/kubepods/burstable/pod${UID}/${ID}\n`, { podUid: UID, containerId: ID, runtime: null }],
    ["the pod's own cgroup", `0::/kubepods.slice/kubepods-pod${UID.replaceAll('-', '_')}.slice\n`, { podUid: UID, containerId: null, runtime: null }],
    ['docker outside kubepods', `0::/system.slice/docker-${ID}.scope\n`, { podUid: null, containerId: ID, runtime: 'docker' }],
  ])('%s', (_name, text, expected) => {
    expect(containerFromCgroup(text)).toEqual(expected);
  });

  it('is null for a host process', () => {
    expect(containerFromCgroup('0::/user.slice/user-0.slice/session-1.scope\n')).toBeNull();
    expect(containerFromCgroup('0::/\n')).toBeNull();
  });
});
