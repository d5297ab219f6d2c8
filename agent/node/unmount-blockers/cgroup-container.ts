/**
 * The container and pod of a process, read from its `/proc/<pid>/cgroup`, for the layouts the
 * kubelet creates (pkg/kubelet/cm/cgroup_manager_linux.go@v1.34.x):
 * - systemd driver: `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid with _>.slice/cri-containerd-<id>.scope`
 *   (`crio-<id>.scope` for CRI-O, `docker-<id>.scope` for Docker/cri-dockerd);
 * - cgroupfs driver: `/kubepods/burstable/pod<uid>/<id>`.
 * cgroup v2 has one line `0::<path>`; with v1 every hierarchy has a line, and the first line
 * naming a pod wins.
 */
import type { HolderContainer } from '../../../lib/api/mount-health.ts';

const POD = /(?:^|[/-])pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})(?:\.slice)?(?:\/|$)/;
const SCOPE = /(?:^|\/)(cri-containerd|crio|docker)-([0-9a-f]{64})\.scope(?:\/|$)/;
const BARE_ID = /\/pod[0-9a-f_-]{36}\/([0-9a-f]{64})(?:\/|$)/;

const runtimes = { 'cri-containerd': 'containerd', crio: 'cri-o', docker: 'docker' } as const;

/** The container of a process with this cgroup file, or null for a process outside any pod and container scope. */
export function containerFromCgroup(cgroupText: string): HolderContainer | null {
  let scopeOnly: HolderContainer | null = null;
  for (const line of cgroupText.split('\n')) {
    // `hierarchy-ID:controllers:path`; the path may contain colons.
    const path = line.split(':').slice(2).join(':');
    if (path === '') continue;
    const pod = POD.exec(path);
    const scope = SCOPE.exec(path);
    const runtime = scope === null ? null : runtimes[scope[1] as keyof typeof runtimes];
    if (pod !== null) {
      const containerId = scope?.[2] ?? BARE_ID.exec(path)?.[1] ?? null;
      return { podUid: (pod[1] ?? '').replaceAll('_', '-'), containerId, runtime };
    }
    // A container outside kubepods (docker run, nerdctl): no pod, but the container is known.
    if (scope !== null && scopeOnly === null) scopeOnly = { podUid: null, containerId: scope[2] ?? null, runtime };
  }
  return scopeOnly;
}
