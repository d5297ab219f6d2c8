import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempDir } from '../mount-utils/testing/mount-test-env.ts';
import { isPodProcessScanError, podCgroupMarkers, podHasRunningProcesses } from './pod-processes.ts';

const uid = '3f2b8c1e-6a4d-4e2f-9b7a-1c0d5e6f7a8b';

let procRoot: string;

beforeEach(async () => {
  procRoot = join(await makeTempDir('volumescope-proc-'), 'proc');
  await mkdir(procRoot);
});

afterEach(async () => {
  await rm(join(procRoot, '..'), { recursive: true, force: true });
});

/** A fake `/proc/<pid>/cgroup`; `null` makes a process directory without the file (it exited). */
async function proc(pid: string, cgroup: string | null): Promise<void> {
  await mkdir(join(procRoot, pid), { recursive: true });
  if (cgroup !== null) await writeFile(join(procRoot, pid, 'cgroup'), cgroup);
}

describe('podHasRunningProcesses', () => {
  it('names the pod UID as both cgroup drivers spell it', () => {
    expect(podCgroupMarkers(uid)).toEqual([`pod${uid}`, `pod${uid.replaceAll('-', '_')}`]);
  });

  it.each([
    { name: 'a process in the pod\'s cgroup (cgroupfs driver, cgroup v2)', cgroup: `0::/kubepods/besteffort/pod${uid}/abc123\n`, running: true },
    {
      name: 'a process in the pod\'s cgroup (systemd driver, cgroup v1)',
      cgroup: `12:memory:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${uid.replaceAll('-', '_')}.slice/cri-containerd-abc.scope\n`,
      running: true,
    },
    { name: 'only processes of other pods', cgroup: '0::/kubepods/besteffort/pod11111111-2222-3333-4444-555555555555/abc\n', running: false },
    { name: 'only host processes', cgroup: '0::/system.slice/containerd.service\n', running: false },
  ])('answers $running for $name', async ({ cgroup, running }) => {
    // Arrange
    await proc('1', '0::/init.scope\n');
    await proc('4242', cgroup);

    // Act / Assert
    expect(await podHasRunningProcesses(uid, procRoot)).toBe(running);
  });

  it('skips entries that are not processes and processes that exited during the scan', async () => {
    // Arrange: "self"-like names and a non-numeric directory hold the pod's marker, and must not count.
    await proc('self', `0::/kubepods/pod${uid}/x\n`);
    await proc('sys', `0::/kubepods/pod${uid}/x\n`);
    await proc('77', null);

    // Act / Assert
    expect(await podHasRunningProcesses(uid, procRoot)).toBe(false);
  });

  it('throws a PodProcessScanError naming the pod when /proc cannot be listed, so the caller treats the pod as possibly running', async () => {
    // Arrange
    const missing = join(procRoot, 'gone');

    // Act
    const err: unknown = await podHasRunningProcesses(uid, missing).then(
      () => null,
      (e: unknown) => e,
    );

    // Assert
    if (!isPodProcessScanError(err)) throw new Error(`expected a PodProcessScanError, got ${String(err)}`);
    expect(err.message).toMatch(new RegExp(`^cannot list ${missing} to look for processes of pod ${uid}: ENOENT`));
  });
});
