/**
 * Integration tests of the node agent PROCESS: each test spawns `node --import tsx agent/main.ts`
 * with real directories, drives it through manifest files and signals, and reads its state
 * through the HTTP API (GET /api/v1/snapshot with the token).
 *
 * Mode: in a private mount namespace as root (VOLUMESCOPE_MOUNT_NS=1) the agent makes real tmpfs
 * mounts (emptyDir medium Memory); elsewhere it runs the unprivileged mounter and the same
 * assertions hold against its stand-in mount table. No test is skipped in either mode.
 */
import { access, mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Operation, OperationHistory, Snapshot } from '../lib/api/snapshot.ts';
import { realClock } from '../lib/clock/clock.ts';
import { cleanUpTempDir, makeTempDir, mountMode, realMountsAllowed } from '../lib/mount-utils/testing/mount-test-env.ts';
import { CsiLoopProcess } from '../lib/volume/csi/testing/csi-loop-process.ts';
import { flagSpecs } from './node/flags.ts';
import { AgentProcess, agentArgs, expectedMounterKind, mountsBelow, runAgentToExit, standInMounter } from './node/testing/agent-process.ts';
import { waitFor } from '../lib/clock/testing/wait-for.ts';
import { podManifest } from './node/testing/pod-manifest.ts';

// FIXTURES

interface TestDirs {
  base: string;
  rootDir: string;
  manifestDir: string;
}

let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** A temporary base with `root/` and `manifests/`; afterwards leaked mounts are unmounted and it is removed. */
async function testDirs(): Promise<TestDirs> {
  const base = await makeTempDir('volumescope-agent-');
  const dirs = { base, rootDir: join(base, 'root'), manifestDir: join(base, 'manifests') };
  await mkdir(dirs.manifestDir, { recursive: true });
  cleanups.push(async () => {
    await cleanUpTempDir(base, realMountsAllowed ? undefined : standInMounter(dirs.rootDir));
  });
  return dirs;
}

/** Starts an agent on the dirs; it is killed after the test if it is still running. */
async function startAgent(dirs: TestDirs, extraArgs: string[] = []): Promise<AgentProcess> {
  const agent = await AgentProcess.start({ rootDir: dirs.rootDir, manifestDir: dirs.manifestDir, extraArgs });
  cleanups.push(async () => {
    await agent.stop('SIGKILL');
  });
  return agent;
}

function configMapManifest(name: string, data: Record<string, string>): string {
  return JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' }, data });
}

/** Writes a manifest atomically (a hidden temp file, which the source ignores, then rename). */
async function writeManifest(dirs: TestDirs, file: string, text: string): Promise<void> {
  const tmp = join(dirs.manifestDir, `.${file}.tmp`);
  await writeFile(tmp, text);
  await rename(tmp, join(dirs.manifestDir, file));
}

const emptyDirPlugin = 'kubernetes.io~empty-dir';

function volumeDir(dirs: TestDirs, uid: string, escapedPlugin: string, name: string): string {
  return join(dirs.rootDir, 'pods', uid, 'volumes', escapedPlugin, name);
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** The pod's mount states by outer volume name. */
function podMounts(s: Snapshot, uid: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const v of s.actual.volumes) for (const p of v.pods) if (p.podUid === uid) out.set(p.outerVolumeName, p.mountState);
  return out;
}

/** True when every named volume of the pod is mounted (not uncertain). */
function allMounted(s: Snapshot, uid: string, names: readonly string[]): boolean {
  const mounts = podMounts(s, uid);
  return names.every((n) => mounts.get(n) === 'mounted');
}

/** Resolves once the agent has logged `n` more lines matching `pattern`: elapsed agent time, without sleeping. */
async function moreLogLines(agent: AgentProcess, pattern: RegExp, n: number): Promise<void> {
  const count = (): number => agent.logs.filter((l) => pattern.test(l.msg)).length;
  const target = count() + n;
  await waitFor(() => count() >= target, { what: `${String(n)} more log lines matching ${String(pattern)}` });
}

// TESTS

describe(`node agent process (${mountMode})`, () => {
  it('lists every flag with its default on --help and exits 0', async () => {
    // Act
    const r = await runAgentToExit(['--help']);

    // Assert
    expect(r.code).toBe(0);
    for (const flag of flagSpecs) {
      expect(r.stdout).toContain(`--${flag.name}`);
      if (flag.default !== '') expect(r.stdout).toContain(`(default: ${flag.default})`);
    }
    for (const required of ['--node-name', '--root-dir', '--manifest-dir', '--listen', '--token-file', '--reconcile-period', '--controller-attach-detach', '--csi-driver', '--attach-verify-period']) {
      expect(r.stdout).toContain(required);
    }
    expect(r.stdout).toContain('(default: 127.0.0.1:7070)');
    expect(r.stdout).toContain('(default: 100ms)');
    expect(r.stdout).toContain('(default: 1m)');
  });

  /** The bad-flag cases run concurrently: a generous exit deadline (a safety net, not a timing check). */
  const flagExitDeadlineMs = 45_000;
  it.concurrent.each([
    { flag: '--reconcile-period', args: ['--reconcile-period', 'soon'] },
    { flag: '--reconcile-period', args: ['--reconcile-period', '0s'] },
    { flag: '--attach-verify-period', args: ['--attach-verify-period', '60'] },
    { flag: '--listen', args: ['--listen', 'localhost'] },
    { flag: '--csi-driver', args: ['--csi-driver', 'no-socket-given'] },
    { flag: '--node-name', args: ['--node-name', 'Not_A_Node'] },
    { flag: '--controller-attach-detach', args: ['--controller-attach-detach=maybe'] },
    { flag: '--no-such-flag', args: ['--no-such-flag'] },
    { flag: '--manifest-dir', args: ['--manifest-dir', '/nonexistent/volumescope-manifests'] },
  ])('exits with code 2 and names $flag when given $args', async ({ flag, args }) => {
    // Arrange: own directories, cleaned inside the test (the shared afterEach would race with the concurrent cases).
    const base = await makeTempDir('volumescope-agent-');
    try {
      const common = agentArgs({ rootDir: join(base, 'root'), manifestDir: base });

      // Act: nine agent processes start at once (node + tsx, ~2 s of CPU each); on a loaded
      // 2-core machine the last one exits well after the usual 10 s, so its deadline is longer.
      const r = await runAgentToExit([...common, ...args], flagExitDeadlineMs);

      // Assert
      expect({ code: r.code, stderr: r.stderr }).toMatchObject({ code: 2, stderr: expect.stringContaining(flag) as unknown });
    } finally {
      await cleanUpTempDir(base, realMountsAllowed ? undefined : standInMounter(join(base, 'root')));
    }
  }, flagExitDeadlineMs + 15_000);

  it("sets up a pod's volumes when its manifest appears, follows its ConfigMap, and tears them down with their directories when the manifest is removed", async () => {
    // Arrange
    const dirs = await testDirs();
    const agent = await startAgent(dirs);
    const uid = 'web-0000-uid';
    await writeManifest(dirs, 'config.json', configMapManifest('settings', { mode: 'one' }));

    // Act: the pod appears.
    await writeManifest(
      dirs,
      'web.json',
      podManifest('web', uid, { scratch: { emptyDir: {} }, memory: { emptyDir: { medium: 'Memory' } }, settings: { configMap: { name: 'settings' } } }),
    );
    const mounted = await agent.waitForSnapshot('every volume of the pod is mounted', (s) => allMounted(s, uid, ['scratch', 'memory', 'settings']) && s);

    // Assert: the state, the directories and the one real mount (tmpfs for medium Memory).
    expect(mounted.mounter.kind).toBe(expectedMounterKind);
    expect(mounted.mounter.privileged).toBe(realMountsAllowed);
    expect(mounted.desired.pods.map((p) => p.uid)).toEqual([uid]);
    expect(await exists(volumeDir(dirs, uid, emptyDirPlugin, 'scratch'))).toBe(true);
    expect(await exists(volumeDir(dirs, uid, emptyDirPlugin, 'memory'))).toBe(true);
    const settingsFile = join(volumeDir(dirs, uid, 'kubernetes.io~configmap', 'settings'), 'mode');
    expect(await readFile(settingsFile, 'utf8')).toBe('one');
    expect((await mountsBelow(dirs.rootDir)).map((m) => m.mountPoint)).toEqual([volumeDir(dirs, uid, emptyDirPlugin, 'memory')]);
    const resync = await agent.post('/api/v1/resync');
    expect(resync).toMatchObject({ status: 200, body: { rescanned: { volumes: 3, mountPoints: 1 }, changes: [] } });

    // Act: the ConfigMap changes.
    await writeManifest(dirs, 'config.json', configMapManifest('settings', { mode: 'two' }));

    // Assert
    await waitFor(async () => (await readFile(settingsFile, 'utf8').catch(() => '')) === 'two', { what: 'the configMap volume shows the new data' });

    // Act: the pod goes.
    await rm(join(dirs.manifestDir, 'web.json'));

    // Assert: nothing of it is left: state, mounts, directories.
    await agent.waitForSnapshot('the pod left both worlds', (s) => s.desired.pods.length === 0 && podMounts(s, uid).size === 0);
    await waitFor(async () => !(await exists(join(dirs.rootDir, 'pods', uid))), { what: 'the pod directory is removed' });
    expect(await mountsBelow(dirs.rootDir)).toEqual([]);
  });

  it("backs off a hostPath volume of type Directory that points nowhere (500 ms, 1 s, 2 s) with the kubelet's type-check error, and mounts it within the backoff window once the directory exists", async () => {
    // Arrange
    const dirs = await testDirs();
    const agent = await startAgent(dirs);
    const uid = 'host-0000-uid';
    const hostDir = join(dirs.base, 'host-data');

    // Act
    await writeManifest(dirs, 'host.json', podManifest('host', uid, { data: { hostPath: { path: hostDir, type: 'Directory' } } }));

    // Assert: the backoff grows 500 → 1000 → 2000 with the type-check error.
    const windows: number[] = [];
    const isMount = (o: Operation) => o.operationName === 'volume_mount' && o.podUid === uid;
    const third = await agent.waitForSnapshot('the mount failed three times', (s) => {
      const op = s.operations.find(isMount);
      if (op !== undefined && op.durationBeforeRetryMs > 0 && windows.at(-1) !== op.durationBeforeRetryMs) windows.push(op.durationBeforeRetryMs);
      return op !== undefined && op.failures >= 3 && op.state === 'backoff' ? op : undefined;
    });
    expect(windows).toEqual([500, 1000, 2000]);
    expect(third.durationBeforeRetryMs).toBe(2000);
    expect(third.lastError).toContain(`hostPath type check failed: ${hostDir} is not a directory`);
    expect(third.retryAt).toBe((third.lastErrorAt ?? 0) + 2000);
    const backoffLog = agent.logs.find((l) => l.msg.includes('No retries permitted until') && l.msg.includes('(durationBeforeRetry 2s)'));
    expect(backoffLog?.msg).toMatch(/^Operation for ".*" failed\. No retries permitted until .* \(durationBeforeRetry 2s\)\. Error: /);

    // Act: the directory appears.
    await mkdir(hostDir);
    const createdAt = realClock.now();

    // Assert: mounted at the next retry, which is at most one backoff window away.
    await agent.waitForSnapshot('the hostPath volume is mounted', (s) => allMounted(s, uid, ['data']));
    expect(realClock.now() - createdAt).toBeLessThanOrEqual(2000 + 500);
  });

  it('keeps its events, audit log and operation history across a restart: a failing mount goes on counting its attempts', async () => {
    // Arrange: a hostPath volume that keeps failing, and one audited action.
    const dirs = await testDirs();
    const uid = 'hist-0000-uid';
    const hostDir = join(dirs.base, 'host-data');
    const first = await startAgent(dirs);
    await writeManifest(dirs, 'hist.json', podManifest('hist', uid, { data: { hostPath: { path: hostDir, type: 'Directory' } } }));
    const isMount = (h: OperationHistory) => h.operationName === 'volume_mount' && h.podUid === uid;
    const before = await first.waitForSnapshot('the mount failed twice', (s) => {
      const h = s.operationHistory.find(isMount);
      return h !== undefined && h.attemptsTotal >= 2 && s.recentEvents.some((e) => e.reason === 'FailedMount' && e.podUid === uid) ? s : undefined;
    });
    expect((await first.post('/api/v1/resync')).status).toBe(200);
    const history = before.operationHistory.find(isMount);
    const failedMount = before.recentEvents.find((e) => e.reason === 'FailedMount' && e.podUid === uid);
    expect(failedMount?.volume).toBe(history?.volume);

    // Act: a clean stop, and a new agent on the same root dir.
    expect((await first.stop('SIGTERM')).code).toBe(0);
    const files = await readdir(join(dirs.rootDir, 'volumescope'));
    const second = await startAgent(dirs);

    // Assert: what the first agent saw is still there, and the count goes on from it.
    expect(files.sort()).toEqual(['audit.jsonl', 'events.jsonl', 'operation-history.jsonl']);
    const after = await second.waitForSnapshot('the mount failed again after the restart', (s) => {
      const h = s.operationHistory.find(isMount);
      return h !== undefined && h.attemptsTotal > (history?.attemptsTotal ?? 0) ? s : undefined;
    });
    expect(after.agent.startedAt).toBeGreaterThan(before.agent.startedAt);
    expect(after.operationHistory.find(isMount)?.firstFailureAt).toBe(history?.firstFailureAt);
    expect(after.recentEvents).toContainEqual(failedMount);
    expect(after.audit.map((a) => [a.caller, a.action, a.result])).toEqual([['volumescope:static-token', 'resync', 'succeeded']]);
  });

  it('re-adopts the volumes of a pod that is still present after kill -9, tears down those of a pod removed meanwhile, and reports unknown or corrupt directories as failed without deleting their data', async () => {
    // Arrange: two pods with a memory-backed and a plain emptyDir each, and a marker file in the kept tmpfs.
    const dirs = await testDirs();
    const keep = 'keep-0000-uid';
    const gone = 'gone-0000-uid';
    const volumes = { memory: { emptyDir: { medium: 'Memory' } }, scratch: { emptyDir: {} } };
    const first = await startAgent(dirs);
    await writeManifest(dirs, 'keep.json', podManifest('keep', keep, volumes));
    await writeManifest(dirs, 'gone.json', podManifest('gone', gone, volumes));
    await first.waitForSnapshot('both pods are mounted', (s) => allMounted(s, keep, ['memory', 'scratch']) && allMounted(s, gone, ['memory', 'scratch']));
    const marker = join(volumeDir(dirs, keep, emptyDirPlugin, 'memory'), 'marker');
    await writeFile(marker, 'still here');

    // Act: kill -9, then while the agent is down remove one pod and plant an unknown and a corrupt directory.
    expect(await first.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    await rm(join(dirs.manifestDir, 'gone.json'));
    const unknownDir = join(dirs.rootDir, 'pods', 'stray-0000-uid', 'volumes', 'example.com~no-such-plugin', 'thing');
    await mkdir(unknownDir, { recursive: true });
    await writeFile(join(unknownDir, 'user-data.txt'), 'do not delete');
    const corruptDir = join(dirs.rootDir, 'pods', 'stray-1111-uid', 'volumes', 'kubernetes.io~csi', 'broken');
    await mkdir(corruptDir, { recursive: true });
    await writeFile(join(dirs.rootDir, 'pods', 'stray-1111-uid', 'volumes', 'kubernetes.io~csi', 'broken', 'vol_data.json'), '{not json');
    const second = await startAgent(dirs);

    // Assert: the report lists both pods' volumes with their outcomes and the stray ones as failed.
    const report = await second.waitForSnapshot('reconstruction resolved every volume', (s) => {
      const byKey = new Map(s.reconstruction.volumes.map((v) => [`${v.podUid}/${v.volumeName}`, v]));
      const outcome = (k: string) => byKey.get(k)?.outcome;
      const resolved =
        s.reconstruction.state === 'done' &&
        outcome(`${keep}/memory`) === 'confirmed-mounted' &&
        outcome(`${keep}/scratch`) === 'confirmed-mounted' &&
        outcome(`${gone}/memory`) === 'cleaned-up' &&
        outcome(`${gone}/scratch`) === 'cleaned-up';
      return resolved ? s : undefined;
    });
    const failed = report.reconstruction.volumes.filter((v) => v.outcome === 'failed');
    expect(failed.map((v) => `${v.podUid}/${v.volumeName}`).sort()).toEqual(['stray-0000-uid/thing', 'stray-1111-uid/broken']);
    for (const f of failed) expect(f.error).toEqual(expect.any(String));
    expect(report.reconstruction.volumes).toHaveLength(6);
    expect(allMounted(report, keep, ['memory', 'scratch'])).toBe(true);

    // The removed pod's volumes and directory are gone; the kept tmpfs is the same one (its file survived).
    await waitFor(async () => !(await exists(join(dirs.rootDir, 'pods', gone))), { what: 'the removed pod directory is removed' });
    expect(await readFile(marker, 'utf8')).toBe('still here');
    expect((await mountsBelow(dirs.rootDir)).map((m) => m.mountPoint)).toEqual([volumeDir(dirs, keep, emptyDirPlugin, 'memory')]);
    // Safe removal never deletes user data: the unknown directory keeps its file.
    expect(await readFile(join(unknownDir, 'user-data.txt'), 'utf8')).toBe('do not delete');
    const resync = await second.post('/api/v1/resync');
    expect(resync.status).toBe(200);
    expect((resync.body as { changes: string[] }).changes).toEqual(
      expect.arrayContaining([expect.stringContaining('stray-0000-uid/volumes/example.com~no-such-plugin/thing')]),
    );

    // Act: the kept pod goes too (its user file first: without real mounts, TearDown refuses to delete data it did not create).
    await rm(marker);
    await rm(join(dirs.manifestDir, 'keep.json'));

    // Assert: zero leaked mounts.
    await second.waitForSnapshot('the kept pod is torn down', (s) => podMounts(s, keep).size === 0);
    await waitFor(async () => (await mountsBelow(dirs.rootDir)).length === 0, { what: 'no mount is left below the root dir' });
  });

  it('lists an invalid manifest in sourceErrors while the other manifests keep working, and keeps the pod of a file that becomes invalid', async () => {
    // Arrange
    const dirs = await testDirs();
    const uid = 'good-0000-uid';
    await writeManifest(dirs, 'good.json', podManifest('good', uid, { scratch: { emptyDir: {} } }));
    await writeManifest(dirs, 'broken.yaml', 'apiVersion: v1\nkind: Pod\nmetadata: {name: broken}\nspec: {containers: [}\n');

    // Act
    const agent = await startAgent(dirs);

    // Assert
    const s = await agent.waitForSnapshot('the good pod is mounted', (snap) => allMounted(snap, uid, ['scratch']) && snap);
    expect(s.sourceErrors).toEqual([{ file: 'broken.yaml', message: expect.stringContaining('broken.yaml') as unknown }]);
    expect(s.desired.pods.map((p) => p.uid)).toEqual([uid]);

    // Act: the good file becomes invalid too.
    await writeManifest(dirs, 'good.json', '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "good"}, "spec": {"containers": []}}');

    // Assert: both files are reported; the pod and its volume stay.
    const after = await agent.waitForSnapshot('both files are reported', (snap) => snap.sourceErrors.length === 2 && snap);
    expect(after.sourceErrors.map((e) => e.file)).toEqual(['broken.yaml', 'good.json']);
    expect(allMounted(after, uid, ['scratch'])).toBe(true);
  });

  it('tears down the volumes of a pod that reaches phase Succeeded although its manifest stays', async () => {
    // Arrange
    const dirs = await testDirs();
    const agent = await startAgent(dirs);
    const uid = 'done-0000-uid';
    await writeManifest(dirs, 'job.json', podManifest('job', uid, { scratch: { emptyDir: {} }, memory: { emptyDir: { medium: 'Memory' } } }));
    await agent.waitForSnapshot('the pod is mounted', (s) => allMounted(s, uid, ['scratch', 'memory']));

    // Act
    await writeManifest(dirs, 'job.json', podManifest('job', uid, { scratch: { emptyDir: {} }, memory: { emptyDir: { medium: 'Memory' } } }, 'Succeeded'));

    // Assert
    await agent.waitForSnapshot('the terminated pod left both worlds', (s) => s.desired.pods.length === 0 && podMounts(s, uid).size === 0);
    expect(await mountsBelow(dirs.rootDir)).toEqual([]);
    expect(await exists(volumeDir(dirs, uid, emptyDirPlugin, 'scratch'))).toBe(false);
  });

  it("refuses a second pod on a local PV with accessModes [ReadWriteOncePod] with the kubelet's text, and mounts it for that pod once the first one is gone", async () => {
    // Arrange: a local PV (a directory) bound to a claim with the only access mode ReadWriteOncePod; pod-a uses it.
    const dirs = await testDirs();
    const disk = join(dirs.base, 'disk');
    await mkdir(disk);
    await writeFile(join(disk, 'data'), 'on the disk');
    const agent = await startAgent(dirs);
    const claimUid = 'claim-local-uid';
    await writeManifest(
      dirs,
      'storage.json',
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [
          {
            apiVersion: 'v1',
            kind: 'PersistentVolume',
            metadata: { name: 'pv-local' },
            spec: { accessModes: ['ReadWriteOncePod'], capacity: { storage: '1Gi' }, claimRef: { namespace: 'default', name: 'claim-local', uid: claimUid }, local: { path: disk } },
          },
          {
            apiVersion: 'v1',
            kind: 'PersistentVolumeClaim',
            metadata: { name: 'claim-local', namespace: 'default', uid: claimUid },
            spec: { accessModes: ['ReadWriteOncePod'], resources: { requests: { storage: '1Gi' } }, volumeName: 'pv-local' },
            status: { phase: 'Bound', capacity: { storage: '1Gi' } },
          },
        ],
      }),
    );
    const claim = { data: { persistentVolumeClaim: { claimName: 'claim-local' } } };
    const uidA = 'rwop-a000-uid';
    const uidB = 'rwop-b000-uid';
    await writeManifest(dirs, 'pod-a.json', podManifest('pod-a', uidA, claim));
    await agent.waitForSnapshot('pod-a has the local volume', (s) => allMounted(s, uidA, ['data']));

    // Act
    await writeManifest(dirs, 'pod-b.json', podManifest('pod-b', uidB, claim));

    // Assert: pod-b's mount fails (and backs off) with the kubelet's text; pod-a keeps its mount.
    const refused = await agent.waitForSnapshot('pod-b is refused', (s) => {
      const op = s.operations.find((o) => o.operationName === 'volume_mount' && o.podUid === uidB);
      return op !== undefined && op.failures >= 2 && op.state === 'backoff' ? s : undefined;
    });
    const op = refused.operations.find((o) => o.operationName === 'volume_mount' && o.podUid === uidB);
    expect(op?.lastError).toContain('MountVolume.SetUp failed for volume "pv-local"');
    expect(op?.lastError).toContain(' : volume uses the ReadWriteOncePod access mode and is already in use by another pod');
    expect(podMounts(refused, uidB).size).toBe(0);
    expect(podMounts(refused, uidA).get('data')).toBe('mounted');
    expect(await exists(join(volumeDir(dirs, uidB, 'kubernetes.io~local-volume', 'pv-local'), 'data'))).toBe(false);

    // Act: pod-a goes.
    await rm(join(dirs.manifestDir, 'pod-a.json'));

    // Assert: pod-b gets the volume after pod-a's TearDown.
    await agent.waitForSnapshot('pod-b has the local volume', (s) => allMounted(s, uidB, ['data']) && podMounts(s, uidA).size === 0);
    expect(await readFile(join(volumeDir(dirs, uidB, 'kubernetes.io~local-volume', 'pv-local'), 'data'), 'utf8')).toBe('on the disk');

    // Act: pod-b goes.
    await rm(join(dirs.manifestDir, 'pod-b.json'));

    // Assert
    await agent.waitForSnapshot('pod-b left the actual state', (s) => podMounts(s, uidB).size === 0);
    expect(await mountsBelow(dirs.rootDir)).toEqual([]);
  });

  it.each(['SIGTERM', 'SIGINT'] as const)('exits 0 on %s and keeps the mounts for the next start', async (signal) => {
    // Arrange
    const dirs = await testDirs();
    const agent = await startAgent(dirs);
    const uid = 'term-0000-uid';
    await writeManifest(dirs, 'term.json', podManifest('term', uid, { memory: { emptyDir: { medium: 'Memory' } } }));
    await agent.waitForSnapshot('the pod is mounted', (s) => allMounted(s, uid, ['memory']));

    // Act
    const exit = await agent.stop(signal);

    // Assert
    expect(exit).toEqual({ code: 0, signal: null });
    expect(agent.logs.map((l) => l.msg)).toContain(`Received ${signal}; shutting down (mounts are kept)`);
    expect(agent.logs.map((l) => l.msg)).toContain('Agent stopped');
    expect((await mountsBelow(dirs.rootDir)).map((m) => m.mountPoint)).toEqual([volumeDir(dirs, uid, emptyDirPlugin, 'memory')]);
    expect(await readdir(join(dirs.rootDir, 'pods'))).toEqual([uid]);
  });

  it('registers a CSI driver that appears in plugins_registry, attaches, stages and publishes its volume for a pod, and undoes all of it when the pod goes; a --csi-driver that does not answer is listed unregistered', async () => {
    // Arrange: the agent first (its plugin watcher creates plugins_registry), then the driver registering there.
    const dirs = await testDirs();
    const driverName = 'csi-loop.volumescope.dev';
    const agent = await startAgent(dirs, ['--csi-driver', `absent.example.com=${join(dirs.base, 'absent.sock')}`]);
    const driver = await CsiLoopProcess.start({ dir: join(dirs.base, 'driver'), nodeId: 'node-a', driverName, registrationDir: join(dirs.rootDir, 'plugins_registry') });
    cleanups.push(async () => {
      await driver.stop();
      await driver.forceCleanUp(dirs.base);
    });
    const uid = 'csi-0000-uid';
    const volumeName = `kubernetes.io/csi/${driverName}^vol-data`;
    const pv = {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'pv-data' },
      spec: {
        accessModes: ['ReadWriteOnce'],
        capacity: { storage: '64Mi' },
        claimRef: { namespace: 'default', name: 'data', uid: 'claim-0000-uid' },
        csi: { driver: driverName, volumeHandle: 'vol-data', fsType: 'ext4', volumeAttributes: { capacity: '64Mi' } },
      },
    };
    const pvc = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data', namespace: 'default', uid: 'claim-0000-uid' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '64Mi' } }, volumeName: 'pv-data' },
      status: { phase: 'Bound', capacity: { storage: '64Mi' } },
    };
    await writeManifest(dirs, 'storage.json', JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [pv, pvc] }));

    // Act
    await agent.waitForSnapshot('the driver registered through plugins_registry', (s) => s.drivers.find((d) => d.name === driverName)?.registered);
    await writeManifest(dirs, 'db.json', podManifest('db', uid, { data: { persistentVolumeClaim: { claimName: 'data' } } }));

    // Assert
    const s = await agent.waitForSnapshot('the CSI volume is mounted', (snap) => allMounted(snap, uid, ['data']) && snap, 20_000);
    expect(s.actual.volumes.find((v) => v.uniqueVolumeName === volumeName)).toMatchObject({ attachState: 'attached', deviceMountState: 'mounted' });
    expect(s.drivers).toEqual([
      expect.objectContaining({ name: 'absent.example.com', registered: false, lastError: expect.any(String) as unknown }),
      expect.objectContaining({ name: driverName, registered: true, nodeId: 'node-a' }),
    ]);
    const published = (await driver.state()).volumes['vol-data'];
    expect(Object.keys(published?.publishedNodes ?? {})).toEqual(['node-a']);
    expect(published?.staged).not.toBeNull();
    expect(Object.keys(published?.publishedTargets ?? {})).toHaveLength(1);

    // Act: the pod goes.
    await rm(join(dirs.manifestDir, 'db.json'));

    // Assert: unpublished, unstaged and detached (ControllerUnpublishVolume), nothing left mounted.
    await agent.waitForSnapshot('the CSI volume left the actual state', (snap) => !snap.actual.volumes.some((v) => v.uniqueVolumeName === volumeName), 20_000);
    const after = (await driver.state()).volumes['vol-data'];
    expect({ nodes: Object.keys(after?.publishedNodes ?? {}), staged: after?.staged ?? null, targets: Object.keys(after?.publishedTargets ?? {}) }).toEqual({ nodes: [], staged: null, targets: [] });
    expect(await driver.methods(['NodeUnpublishVolume', 'NodeUnstageVolume', 'ControllerUnpublishVolume'])).toEqual(['NodeUnpublishVolume', 'NodeUnstageVolume', 'ControllerUnpublishVolume']);
    await waitFor(async () => (await mountsBelow(dirs.rootDir)).length === 0, { what: 'no mount is left below the root dir' });
  });
  it.each([
    { name: 'missing', breakPv: (file: string) => rm(file) },
    { name: 'invalid', breakPv: (file: string) => writeFile(file, '{"apiVersion": "v1", "kind": "PersistentVolume", not json') },
  ])(
    'kill -9 and restart with the PV file $name: the local volume stays mounted (uncertain, with the reason) and is confirmed once the file is valid again (kubernetes#120150)',
    async ({ breakPv }) => {
      // Arrange: pod `db` mounts claim `data` bound to the local PV `pv-local` (a bind mount of a host dir).
      const dirs = await testDirs();
      const hostDir = join(dirs.base, 'local-data');
      await mkdir(hostDir, { recursive: true });
      await writeFile(join(hostDir, 'marker'), 'written before the restart');
      const uid = 'local-0000-uid';
      const pv = JSON.stringify({
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: 'pv-local' },
        spec: { accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' }, claimRef: { namespace: 'default', name: 'data', uid: 'claim-local-uid' }, local: { path: hostDir } },
      });
      const pvc = JSON.stringify({
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: 'data', namespace: 'default', uid: 'claim-local-uid' },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, volumeName: 'pv-local' },
        status: { phase: 'Bound', capacity: { storage: '1Gi' } },
      });
      const first = await startAgent(dirs);
      await writeManifest(dirs, 'pv.json', pv);
      await writeManifest(dirs, 'pvc.json', pvc);
      await writeManifest(dirs, 'db.json', podManifest('db', uid, { data: { persistentVolumeClaim: { claimName: 'data' } } }));
      await first.waitForSnapshot('the local volume is mounted', (s) => allMounted(s, uid, ['data']));
      const mountDir = volumeDir(dirs, uid, 'kubernetes.io~local-volume', 'pv-local');
      const mountPoints = async (): Promise<string[]> => (await mountsBelow(dirs.rootDir)).map((m) => m.mountPoint);
      expect(await mountPoints()).toEqual([mountDir]);

      // Act: kill -9; the PV file is broken while the agent is down; the agent restarts.
      expect(await first.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
      await breakPv(join(dirs.manifestDir, 'pv.json'));
      const second = await startAgent(dirs);

      // Assert: kept, uncertain, with the reason; still the same bind mount.
      const kept = await second.waitForSnapshot(
        'the reconstructed volume is kept with the reason',
        (s) => s.statesSynced && (s.reconstruction.volumes.find((v) => v.podUid === uid)?.keptBecause?.includes('pv-local') ?? false) && s,
      );
      expect(kept.reconstruction.volumes.find((v) => v.podUid === uid)).toMatchObject({ outcome: 'reconstructed', volumeName: 'pv-local' });
      expect(kept.reconstruction.volumes.find((v) => v.podUid === uid)?.keptBecause).toBe(
        'data: error processing PVC default/data: failed to fetch PV pv-local from API server: persistentvolumes "pv-local" not found',
      );
      expect(kept.podErrors[uid]).toEqual(['error processing PVC default/data: failed to fetch PV pv-local from API server: persistentvolumes "pv-local" not found']);
      expect([...podMounts(kept, uid).values()]).toEqual(['uncertain']);
      // Unmounts are allowed from the populator's first full loop on; two loops after it (each
      // retries the pod and logs its error; ten reconciler passes run per loop), it is still kept.
      await waitFor(() => second.logs.some((l) => l.msg === 'Finished populating initial desired state of world'), { what: 'the populator finished its initial loop' });
      await moreLogLines(second, /^Error processing volume: /, 2);
      const later = await second.snapshot();
      expect(later.reconstruction.volumes.find((v) => v.podUid === uid)?.outcome).toBe('reconstructed');
      expect([...podMounts(later, uid).values()]).toEqual(['uncertain']);
      expect(await mountPoints()).toEqual([mountDir]);
      expect(await readFile(join(mountDir, 'marker'), 'utf8')).toBe('written before the restart');
      expect(second.logs.some((l) => /UnmountVolume|TearDown/.test(l.msg))).toBe(false);

      // Act: the PV file is valid again.
      await writeManifest(dirs, 'pv.json', pv);

      // Assert: confirmed mounted in place.
      const confirmed = await second.waitForSnapshot('the volume is confirmed mounted', (s) => s.reconstruction.volumes.find((v) => v.podUid === uid)?.outcome === 'confirmed-mounted' && s);
      expect(allMounted(confirmed, uid, ['data'])).toBe(true);
      expect(confirmed.reconstruction.volumes.find((v) => v.podUid === uid)?.keptBecause).toBeUndefined();
      expect(confirmed.podErrors[uid]).toBeUndefined();
      expect(await mountPoints()).toEqual([mountDir]);
      expect(await readFile(join(mountDir, 'marker'), 'utf8')).toBe('written before the restart');

      // Act: the pod goes; its volume is released.
      await rm(join(dirs.manifestDir, 'db.json'));
      await second.waitForSnapshot('the volume is unmounted', (s) => podMounts(s, uid).size === 0);
      await waitFor(async () => (await mountsBelow(dirs.rootDir)).length === 0, { what: 'no mount is left below the root dir' });
      expect(await readFile(join(hostDir, 'marker'), 'utf8')).toBe('written before the restart');
    },
  );
});
