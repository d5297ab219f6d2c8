/**
 * The node diagnostics in the agent PROCESS (agent/node/node-diagnostics.ts): the mount health
 * of a pod's volumes in the snapshot and the metrics, the blocker search of
 * `GET /api/v1/volumes/blockers` naming a process with its cwd in a pod's volume, and, with real
 * mounts, the blocker report attached to the TearDown that fails because that process keeps the
 * tmpfs busy; the TearDown succeeds once it exits. Both mounter modes (see agent.test.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BlockersResponseSchema } from '../lib/api/mount-health.ts';
import { cleanUpTempDir, makeTempDir, mountMode, realMountsAllowed } from '../lib/mount-utils/testing/mount-test-env.ts';
import { AgentProcess, standInMounter } from './node/testing/agent-process.ts';
import { podManifest } from './node/testing/pod-manifest.ts';

let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

describe(`node diagnostics of the agent process (${mountMode})`, () => {
  it('reports mount health, names the process that blocks an unmount, and attaches it to the busy TearDown', async () => {
    // Arrange: an agent with fast health checks and a pod with a memory-backed emptyDir
    const base = await makeTempDir('volumescope-diag-');
    const rootDir = join(base, 'root');
    const manifestDir = join(base, 'manifests');
    await mkdir(manifestDir, { recursive: true });
    cleanups.push(() => cleanUpTempDir(base, realMountsAllowed ? undefined : standInMounter(rootDir)).then(() => undefined));
    const agent = await AgentProcess.start({ rootDir, manifestDir, extraArgs: ['--mount-health-period=100ms', '--mount-health-timeout=2s'] });
    cleanups.push(() => agent.stop('SIGKILL').then(() => undefined));
    const uid = '7d3c5a10-4b2e-4f6a-9c81-0e5d2b7f3a94';
    await writeFile(join(manifestDir, '.web.json.tmp'), podManifest('web', uid, { memory: { emptyDir: { medium: 'Memory' } } }));
    await rename(join(manifestDir, '.web.json.tmp'), join(manifestDir, 'web.json'));
    const volumePath = join(rootDir, 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'memory');

    // Assert: healthy, in the snapshot and the metrics
    const health = await agent.waitForSnapshot('the pod volume checked', (s) => s.mountHealth.find((h) => h.podUid === uid));
    expect(health).toMatchObject({ path: volumePath, kind: 'pod', state: 'healthy', error: null });
    const metrics = await fetch(`${agent.baseUrl}/metrics`, { headers: { authorization: `Bearer ${agent.token}` } }).then((r) => r.text());
    expect(metrics).toMatch(/^volumescope_mount_health_mounts\{kind="pod",state="healthy"\} 1$/m);

    // Act: a process with its cwd in the volume; the on-demand search
    const sleeper: ChildProcess = spawn('sleep', ['600'], { cwd: volumePath, stdio: 'ignore' });
    cleanups.push(() => {
      if (sleeper.exitCode === null && sleeper.signalCode === null) sleeper.kill('SIGKILL');
      return Promise.resolve();
    });
    const volume = health.volume;
    const found = await agent.get(`/api/v1/volumes/blockers?volume=${encodeURIComponent(volume)}&podUid=${uid}`);

    // Assert
    expect(found.status).toBe(200);
    const report = BlockersResponseSchema.parse(found.body);
    expect(report.holders).toContainEqual({ pid: sleeper.pid, command: 'sleep 600', kind: 'cwd', path: volumePath, container: null });
    expect((await agent.get(`/api/v1/volumes/blockers?volume=nope&podUid=${uid}`)).status).toBe(404);

    // Act: the pod goes away while the sleeper keeps the volume busy
    await rm(join(manifestDir, 'web.json'));
    if (realMountsAllowed) {
      // Assert: the TearDown fails as busy, with the blocker report attached
      const blocked = await agent.waitForSnapshot('the busy TearDown with its blockers', (s) => s.unmountBlockers.find((b) => b.podUid === uid));
      expect(blocked.operationName).toBe('volume_unmount');
      expect(blocked.report.holders).toContainEqual(expect.objectContaining({ pid: sleeper.pid, kind: 'cwd' }));
    }
    const exited = new Promise((resolve) => sleeper.once('exit', resolve));
    sleeper.kill('SIGTERM');
    await exited;

    // Assert: the unmount succeeds, and its health entry and blocker report go
    const after = await agent.waitForSnapshot('the volume torn down', (s) => s.actual.volumes.length === 0 && s.unmountBlockers.length === 0 && s.mountHealth.length === 0 && s);
    expect(after.operations).toEqual([]);
  });
});
