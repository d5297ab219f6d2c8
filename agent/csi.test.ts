/**
 * Integration tests of the node agent PROCESS with attachable CSI volumes (project issue
 * "Attachable volumes through CSI", requirements 6 and 8): the real agent (`agent/main.ts`) talks
 * real CSI over gRPC to the real test driver (`drivers/csi-loop`, a second child process), driven
 * through manifest files and read through GET /api/v1/snapshot and the driver's call log.
 *
 * Mode: as root in a private mount namespace (VOLUMESCOPE_MOUNT_NS=1) the driver is privileged:
 * loop devices, ext4, bind mounts, and `df` can see an expansion. Elsewhere it is unprivileged
 * (directories and symlinks) and the assertions that need a filesystem read the driver's recorded
 * state instead. The branch is taken on the mode the driver itself reports in GET /state, never by
 * skipping a test.
 *
 * Every test ends with its pod gone and asserts that no loop device of the driver's images and no
 * mount below the test directory remains; the afterEach kills the agent and the driver (by their
 * own child handles) and cleans what a failed test may have left.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, lstat, mkdir, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import type { Operation, Snapshot } from '../lib/api/snapshot.ts';
import { cleanUpTempDir, makeTempDir, mountMode, realMountsAllowed } from '../lib/mount-utils/testing/mount-test-env.ts';
import { mountsAtOrBelow } from '../lib/mount-utils/mount-table.ts';
import { readMountInfo } from '../lib/mount-utils/mountinfo.ts';
import { CsiLoopProcess, driverPrivileged, type DriverCall } from '../lib/volume/csi/testing/csi-loop-process.ts';
import { AgentProcess, mountsBelow, standInMounter } from './node/testing/agent-process.ts';
import { waitFor } from '../lib/clock/testing/wait-for.ts';
import { attachmentName, makeVolumeHandle } from '../lib/volume/csi/index.ts';
import {
  csiClaimObjects,
  csiDriverObject,
  csiEphemeralDriverObject,
  csiInlinePodObject,
  csiInlineUniqueVolumeName,
  csiLoopDriverName,
  csiPodObject,
  csiUniqueVolumeName,
} from './node/testing/csi-manifests.ts';

const execFileAsync = promisify(execFile);

// FIXTURES

const NODE = 'node-a';
/** The CSI call deadline the agents of this file run with (`--csi-timeout`), so a hung call expires quickly. */
const CSI_TIMEOUT_MS = 1_000;
/** Deadline for waits that include attach + stage + publish (loop device, mkfs.ext4 in privileged mode). */
const MOUNT_DEADLINE_MS = 20_000;

/** The mutating CSI calls whose order the lifecycle is asserted on. */
const LIFECYCLE = ['ControllerPublishVolume', 'NodeStageVolume', 'NodePublishVolume', 'NodeUnpublishVolume', 'NodeUnstageVolume', 'ControllerUnpublishVolume'];

interface Env {
  base: string;
  rootDir: string;
  manifestDir: string;
  driver: CsiLoopProcess;
  agent: AgentProcess;
  /** The mode the driver reports (GET /state): privileged = loop devices, ext4, bind mounts. */
  privileged: boolean;
}

let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/**
 * A test directory with the driver running (its CSI socket below `<base>/driver`) and an agent
 * that knows it through `--csi-driver` (no plugin-watcher resync in the way of the timings).
 */
async function startEnv(extraAgentArgs: readonly string[] = []): Promise<Env> {
  const base = await makeTempDir('volumescope-csi-');
  const rootDir = join(base, 'root');
  const manifestDir = join(base, 'manifests');
  await mkdir(manifestDir, { recursive: true });
  const driver = await CsiLoopProcess.start({ dir: join(base, 'driver'), nodeId: NODE });
  cleanups.push(async () => {
    // The driver stops after the agent (reverse order); leaked mounts and loop devices are removed before the directory.
    await driver.stop();
    await driver.forceCleanUp(base);
    await cleanUpTempDir(base, realMountsAllowed ? undefined : standInMounter(rootDir));
  });
  const mode = ((await driver.control('GET', '/state')).body as { mode?: string }).mode;
  const env: Env = { base, rootDir, manifestDir, driver, agent: await startAgent(rootDir, manifestDir, driver, extraAgentArgs), privileged: mode === 'privileged' };
  // The driver's own report must match this run's mode, so a privileged run cannot silently test symlinks.
  expect(env.privileged).toBe(driverPrivileged);
  await writeManifest(env, 'csidriver.json', [csiDriverObject()]);
  return env;
}

async function startAgent(rootDir: string, manifestDir: string, driver: CsiLoopProcess, extraArgs: readonly string[]): Promise<AgentProcess> {
  const agent = await AgentProcess.start({
    rootDir,
    manifestDir,
    nodeName: NODE,
    extraArgs: ['--csi-driver', `${csiLoopDriverName}=${driver.socketPath}`, '--csi-timeout', `${CSI_TIMEOUT_MS}ms`, ...extraArgs],
  });
  cleanups.push(async () => {
    await agent.stop('SIGKILL');
  });
  await agent.waitForSnapshot('the CSI driver is registered', (s) => s.drivers.find((d) => d.name === csiLoopDriverName)?.registered, MOUNT_DEADLINE_MS);
  return agent;
}

/** kill -9 the agent, then start a new one over the same root dir and manifests. */
async function restartAfterKill(env: Env): Promise<void> {
  expect(await env.agent.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
  env.agent = await startAgent(env.rootDir, env.manifestDir, env.driver, []);
}

/** Writes the objects as one JSON file atomically (a hidden temp file, which the source ignores, then rename). */
async function writeManifest(env: Env, file: string, docs: readonly Record<string, unknown>[]): Promise<void> {
  const tmp = join(env.manifestDir, `.${file}.tmp`);
  await writeFile(tmp, JSON.stringify(docs.length === 1 ? docs[0] : { apiVersion: 'v1', kind: 'List', items: docs }));
  await rename(tmp, join(env.manifestDir, file));
}

/** Storage for `handle` plus a pod `<name>` (uid `<name>-uid`) using it. */
async function addPodWithVolume(env: Env, name: string, handle: string): Promise<string> {
  const uid = `${name}-uid`;
  await writeManifest(env, `storage-${handle}.json`, csiClaimObjects({ handle }));
  await writeManifest(env, `pod-${name}.json`, [csiPodObject(name, handle, { uid })]);
  return uid;
}

async function removePod(env: Env, name: string): Promise<void> {
  await rm(join(env.manifestDir, `pod-${name}.json`));
}

/** The pod-level publish path of the PV `pv-<handle>`. */
function podVolumePath(env: Env, uid: string, handle: string): string {
  return join(env.rootDir, 'pods', uid, 'volumes', 'kubernetes.io~csi', `pv-${handle}`, 'mount');
}

function actualVolume(s: Snapshot, handle: string): Snapshot['actual']['volumes'][number] | undefined {
  return s.actual.volumes.find((v) => v.uniqueVolumeName === csiUniqueVolumeName(handle));
}

/** The pod's mount state of the volume, or undefined when the pod does not have it. */
function podMountState(s: Snapshot, handle: string, uid: string): string | undefined {
  return actualVolume(s, handle)?.pods.find((p) => p.podUid === uid)?.mountState;
}

/** Resolves with the snapshot once the pod's volume is attached, device-mounted and mounted. */
function waitMounted(env: Env, handle: string, uid: string, what = 'the CSI volume is attached, staged and mounted for the pod'): Promise<Snapshot> {
  return env.agent.waitForSnapshot(
    what,
    (s) => {
      const v = actualVolume(s, handle);
      return v?.attachState === 'attached' && v.deviceMountState === 'mounted' && podMountState(s, handle, uid) === 'mounted' && s;
    },
    MOUNT_DEADLINE_MS,
  );
}

/** Resolves once the volume has left the actual state (unpublished, unstaged and detached). */
async function waitGone(env: Env, handle: string): Promise<void> {
  await env.agent.waitForSnapshot('the CSI volume left the actual state', (s) => actualVolume(s, handle) === undefined, MOUNT_DEADLINE_MS);
}

/**
 * Resolves once the driver reports the volume neither staged nor published and the agent's actual
 * state no longer has it, with nothing of it left in the CSI plugin's global dirs (staging dir,
 * attach intent record).
 */
async function waitUnstagedAndDetached(env: Env, handle: string): Promise<void> {
  await waitFor(
    async () => {
      const v = (await env.driver.state()).volumes[handle];
      return v !== undefined && v.staged === null && Object.keys(v.publishedNodes).length === 0 && callsOf(await env.driver.calls(), handle).includes('ControllerUnpublishVolume OK');
    },
    { what: 'the driver unstaged and unpublished the volume', timeoutMs: MOUNT_DEADLINE_MS },
  );
  await waitGone(env, handle);
  const csiDir = join(env.rootDir, 'plugins', 'kubernetes.io', 'csi');
  expect(await exists(join(csiDir, csiLoopDriverName, createHash('sha256').update(handle).digest('hex')))).toBe(false);
  expect(await exists(join(csiDir, '_attach-intents', `${attachmentName(handle, csiLoopDriverName, NODE)}.json`))).toBe(false);
}

/** Writes a file and fsyncs it, so the data is on the driver's disk (the ext4 image) and not only in the page cache. */
async function writeDurably(path: string, text: string): Promise<void> {
  const fh = await open(path, 'w');
  try {
    await fh.writeFile(text);
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** The calls of the log for `handle` among `methods`, as `Method CODE`. */
function callsOf(calls: readonly DriverCall[], handle: string, methods: readonly string[] = LIFECYCLE): string[] {
  return calls.filter((c) => c.volumeId === handle && methods.includes(c.method)).map((c) => `${c.method} ${c.code}`);
}

/** The path is mounted the driver's way: an ext4 mount in the kernel table (privileged) or a symlink (unprivileged). */
async function isDriverMounted(env: Env, path: string): Promise<boolean> {
  if (env.privileged) return mountsAtOrBelow(await readMountInfo(), path).some((m) => m.mountPoint === path && m.fsType === 'ext4');
  return (await lstat(path).catch(() => null))?.isSymbolicLink() === true;
}

/**
 * The end of every test: the pod directory is removed and nothing of the driver remains on the
 * host: no loop device backed by its images, no mount below the test directory (kernel table, and
 * the agent's stand-in table when unprivileged).
 */
async function expectNothingLeft(env: Env, uid: string): Promise<void> {
  await waitFor(async () => !(await exists(join(env.rootDir, 'pods', uid))), { what: 'the pod directory is removed', timeoutMs: MOUNT_DEADLINE_MS });
  expect(await env.driver.leftovers(env.base)).toEqual({ loopDevices: [], mounts: [] });
  expect(await mountsBelow(env.rootDir)).toEqual([]);
}

/**
 * The volume_mount operation (MountDevice + SetUp) of the volume in the pending-operations table.
 * Keyed by the volume alone: for attachable and device-mountable volumes the executor serialises
 * per volume, not per pod (upstream's empty podName), so its `podUid` is null.
 */
function mountOp(s: Snapshot, handle: string): Operation | undefined {
  return s.operations.find((o) => o.operationName === 'volume_mount' && o.volume === csiUniqueVolumeName(handle));
}

// TESTS

describe(`node agent with the csi-loop driver (${mountMode})`, { timeout: 40_000 }, () => {
  it('attaches, stages and publishes an attachable CSI volume for a pod, and unpublishes, unstages and detaches it in that order when the pod goes', async () => {
    // Arrange
    const env = await startEnv();

    // Act
    const uid = await addPodWithVolume(env, 'life', 'vol-life');

    // Assert: the snapshot, the host and the driver agree that the volume is in use.
    const s = await waitMounted(env, 'vol-life', uid);
    const target = podVolumePath(env, uid, 'vol-life');
    expect(actualVolume(s, 'vol-life')).toMatchObject({ pluginName: 'kubernetes.io/csi', attachState: 'attached', deviceMountState: 'mounted' });
    // The device path of a CSI volume is its attachment name (upstream: the VolumeAttachment name).
    expect(actualVolume(s, 'vol-life')?.devicePath).toMatch(/^csi-[0-9a-f]{64}$/);
    expect(s.desired.pods.find((p) => p.uid === uid)?.volumes).toEqual([expect.objectContaining({ name: 'data', attachable: true, deviceMountable: true })]);
    // The driver's attach limit as NodeGetInfo said it (csi-loop: 0, no limit).
    expect(s.drivers.find((d) => d.name === csiLoopDriverName)?.maxVolumesPerNode).toBe(0);
    expect(s.recentEvents.find((e) => e.podUid === uid)).toMatchObject({ podNamespace: 'default', podName: 'life' });
    expect(await isDriverMounted(env, target)).toBe(true);
    await writeDurably(join(target, 'hello.txt'), 'written through the pod volume');
    const published = (await env.driver.state()).volumes['vol-life'];
    expect({ nodes: Object.keys(published?.publishedNodes ?? {}), staged: published?.staged?.path, targets: Object.keys(published?.publishedTargets ?? {}) }).toEqual({
      nodes: [NODE],
      staged: actualVolume(s, 'vol-life')?.deviceMountPath,
      targets: [target],
    });

    // Act: the pod goes.
    await removePod(env, 'life');

    // Assert: the call log holds the whole lifecycle, in order, each call once and successful.
    await waitGone(env, 'vol-life');
    expect(callsOf(await env.driver.calls(), 'vol-life')).toEqual(LIFECYCLE.map((m) => `${m} OK`));
    const after = (await env.driver.state()).volumes['vol-life'];
    expect({ nodes: Object.keys(after?.publishedNodes ?? {}), staged: after?.staged ?? null, targets: Object.keys(after?.publishedTargets ?? {}) }).toEqual({ nodes: [], staged: null, targets: [] });
    await expectNothingLeft(env, uid);
  });

  it('shows every CSI call in the driver panel (secrets stripped) and csi_operations_seconds, and the volume’s NodeGetVolumeStats usage and condition in the snapshot and kubelet_volume_stats_*', async () => {
    // Arrange: stats every 200 ms; a node-stage secret on the PV.
    const env = await startEnv(['--volume-stats-agg-period', '200ms']);
    const secret = 's3cr3t-stage-value';
    await writeManifest(env, 'stage-secret.json', [{ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'stage-creds', namespace: 'default' }, data: { password: Buffer.from(secret).toString('base64') } }]);
    const storage = csiClaimObjects({ handle: 'vol-stats' }).map((o) =>
      o.kind === 'PersistentVolume' ? { ...o, spec: { ...(o.spec as object), csi: { ...((o.spec as { csi: object }).csi), nodeStageSecretRef: { name: 'stage-creds', namespace: 'default' } } } } : o,
    );
    await writeManifest(env, 'storage-vol-stats.json', storage);
    const uid = 'stats-uid';
    await writeManifest(env, 'pod-stats.json', [csiPodObject('stats', 'vol-stats', { uid })]);

    // Act + Assert: the usage of the mounted volume arrives with the next pass, healthy.
    await waitMounted(env, 'vol-stats', uid);
    const healthy = await env.agent.waitForSnapshot('the volume stats of the pod volume', (s) => s.volumeStats?.find((v) => v.podUid === uid && v.capacityBytes !== null), MOUNT_DEADLINE_MS);
    expect(healthy).toMatchObject({
      volumeName: 'data',
      source: 'csi',
      driver: csiLoopDriverName,
      path: podVolumePath(env, uid, 'vol-stats'),
      persistentVolumeClaim: { namespace: 'default', name: 'claim-vol-stats' },
      condition: { abnormal: false, message: 'volume is healthy' },
      error: null,
    });
    expect(healthy.capacityBytes).toBeGreaterThan(0);
    expect(healthy.inodes).toBeGreaterThan(0);

    // The panel: NodeStageVolume with its secret stripped, the probe history of the handshake.
    const s = await env.agent.waitForSnapshot('the driver panel lists the stage call', (x) => x.csiPanel?.find((d) => d.driver === csiLoopDriverName && d.recentCalls.some((c) => c.method === 'NodeStageVolume')));
    const stage = s.recentCalls.find((c) => c.method === 'NodeStageVolume');
    expect(stage).toMatchObject({ code: 'OK', volumeId: 'vol-stats', error: null });
    expect(stage?.request).toContain('"password":"***stripped***"');
    expect(JSON.stringify(await env.agent.snapshot())).not.toContain(secret);
    expect(s.probes.map((p) => `${p.method} ${p.code}`)).toEqual(expect.arrayContaining(['GetPluginInfo OK', 'Probe OK']));
    expect(s.probes.find((p) => p.method === 'Probe')?.ready).toBe(true);
    const statsMethod = s.methods.find((m) => m.method === 'NodeGetVolumeStats');
    expect(statsMethod?.codes.OK).toBeGreaterThan(0);
    expect(statsMethod?.buckets.reduce((a, b) => a + b, 0)).toBe(statsMethod?.calls);
    expect(s.recentCalls.some((c) => c.method === 'NodeGetVolumeStats')).toBe(false);

    // Act: the driver reports the volume abnormal.
    expect((await env.driver.control('POST', '/volume-condition', { volumeId: 'vol-stats', abnormal: true, message: 'disk read failed: I/O error' })).status).toBe(200);

    // Assert: the condition reaches the snapshot and the kubelet's metrics.
    await env.agent.waitForSnapshot('the abnormal condition', (x) => x.volumeStats?.find((v) => v.podUid === uid)?.condition?.abnormal === true, MOUNT_DEADLINE_MS);
    const metrics = await (await fetch(`${env.agent.baseUrl}/metrics`, { headers: { authorization: `Bearer ${env.agent.token}` } })).text();
    expect(metrics).toContain('kubelet_volume_stats_health_status_abnormal{namespace="default",persistentvolumeclaim="claim-vol-stats"} 1');
    expect(metrics).toMatch(/kubelet_volume_stats_capacity_bytes\{namespace="default",persistentvolumeclaim="claim-vol-stats"\} [1-9][0-9]*/);
    expect(metrics).toMatch(/kubelet_volume_stats_inodes_used\{namespace="default",persistentvolumeclaim="claim-vol-stats"\} [0-9]+/);
    expect(metrics).toMatch(/csi_operations_seconds_count\{driver_name="csi-loop\.volumescope\.dev",method_name="\/csi\.v1\.Node\/NodeStageVolume",grpc_status_code="OK",migrated="false"\} 1/);
    expect(metrics).toMatch(/csi_operations_seconds_bucket\{le="600",driver_name="csi-loop\.volumescope\.dev",method_name="\/csi\.v1\.Identity\/Probe",grpc_status_code="OK",migrated="false"\} [1-9]/);

    // Act: a failing NodeGetVolumeStats.
    await env.driver.fault('NodeGetVolumeStats', { code: 'INTERNAL', message: 'stats backend down' });

    // Assert: the failure shows on the volume, in the recent calls and in the metric's error code.
    await env.agent.waitForSnapshot('the failed stats call', (x) => x.volumeStats?.find((v) => v.podUid === uid)?.error?.includes('stats backend down'), MOUNT_DEADLINE_MS);
    const failed = await env.agent.waitForSnapshot('the failed stats call in the panel', (x) => x.csiPanel?.find((d) => d.driver === csiLoopDriverName)?.recentCalls.find((c) => c.method === 'NodeGetVolumeStats'));
    expect(failed).toMatchObject({ code: 'Internal', error: 'rpc error: code = Internal desc = stats backend down' });
    const after = await (await fetch(`${env.agent.baseUrl}/metrics`, { headers: { authorization: `Bearer ${env.agent.token}` } })).text();
    expect(after).toMatch(/csi_operations_seconds_count\{driver_name="csi-loop\.volumescope\.dev",method_name="\/csi\.v1\.Node\/NodeGetVolumeStats",grpc_status_code="Internal",migrated="false"\} [1-9]/);
    await env.driver.clearFaults();

    await removePod(env, 'stats');
    await waitUnstagedAndDetached(env, 'vol-stats');
    await expectNothingLeft(env, uid);
  });

  it('re-adopts a mounted CSI volume from vol_data.json after kill -9 without tearing it down, keeps its data, and still detaches it when the pod goes', async () => {
    // Arrange
    const env = await startEnv();
    const uid = await addPodWithVolume(env, 'keep', 'vol-keep');
    await waitMounted(env, 'vol-keep', uid);
    const target = podVolumePath(env, uid, 'vol-keep');
    await writeDurably(join(target, 'marker.txt'), 'before the crash');
    await env.driver.clearCalls();

    // Act
    await restartAfterKill(env);

    // Assert: reconstruction confirms the volume; the pod has it mounted again with the same data.
    const s = await env.agent.waitForSnapshot(
      'reconstruction confirmed the CSI volume',
      (snap) => snap.reconstruction.state === 'done' && snap.reconstruction.volumes.find((v) => v.podUid === uid)?.outcome === 'confirmed-mounted' && snap,
      MOUNT_DEADLINE_MS,
    );
    expect(s.reconstruction.volumes.filter((v) => v.podUid === uid)).toEqual([expect.objectContaining({ volumeName: `pv-vol-keep`, outcome: 'confirmed-mounted', error: null })]);
    await waitMounted(env, 'vol-keep', uid, 'the re-adopted volume is attached, staged and mounted');
    expect(await readFile(join(target, 'marker.txt'), 'utf8')).toBe('before the crash');
    expect(await isDriverMounted(env, target)).toBe(true);
    // Nothing was undone: re-adoption may repeat the idempotent stage/publish, never unpublish, unstage or detach.
    expect(callsOf(await env.driver.calls(), 'vol-keep', ['NodeUnpublishVolume', 'NodeUnstageVolume', 'ControllerUnpublishVolume'])).toEqual([]);

    // Act: the pod goes after the restart.
    await removePod(env, 'keep');

    // Assert: the restarted agent tears down what the killed one set up.
    await waitGone(env, 'vol-keep');
    expect(callsOf(await env.driver.calls(), 'vol-keep', ['NodeUnpublishVolume', 'NodeUnstageVolume', 'ControllerUnpublishVolume'])).toEqual([
      'NodeUnpublishVolume OK',
      'NodeUnstageVolume OK',
      'ControllerUnpublishVolume OK',
    ]);
    await expectNothingLeft(env, uid);
  });

  it.each([
    { method: 'NodeStageVolume', teardown: ['NodeUnstageVolume OK', 'ControllerUnpublishVolume OK'] },
    { method: 'ControllerPublishVolume', teardown: ['ControllerUnpublishVolume OK'] },
  ])('kill -9 during $method, pod removed while the agent is down: after the restart the volume is unstaged and detached, with no mount and no loop device left', async ({ method, teardown }) => {
    // Arrange: the call is held 3 s by the driver, which completes it after the agent is gone.
    const env = await startEnv();
    const handle = `vol-killed-${method.toLowerCase()}`;
    await env.driver.fault(method, { delayMs: 3_000, failNext: 1 });
    const uid = await addPodWithVolume(env, 'killed', handle);
    // In flight is per volume: the calls before it must have been answered, so that this one holds the volume.
    const before = LIFECYCLE.slice(0, LIFECYCLE.indexOf(method)).map((m) => `${m} OK`);
    await waitFor(
      async () => {
        const answered = callsOf(await env.driver.calls(), handle);
        return before.every((c) => answered.includes(c)) && (await env.driver.state()).inFlight.includes(handle);
      },
      { what: `${method} of ${handle} in flight`, timeoutMs: MOUNT_DEADLINE_MS },
    );

    // Act: kill -9, remove the pod while no agent runs, start a new agent.
    expect(await env.agent.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    await removePod(env, 'killed');
    env.agent = await startAgent(env.rootDir, env.manifestDir, env.driver, []);

    // Assert: the driver finished the killed agent's call, then the new agent undid it.
    await waitUnstagedAndDetached(env, handle);
    const calls = await env.driver.calls();
    expect(callsOf(calls, handle, [method])).toContain(`${method} OK`);
    expect(callsOf(calls, handle, ['NodePublishVolume', 'NodeUnpublishVolume'])).toEqual([]);
    expect(callsOf(calls, handle, ['NodeUnstageVolume', 'ControllerUnpublishVolume']).filter((c) => c.endsWith(' OK'))).toEqual(teardown);
    await expectNothingLeft(env, uid);
  });

  it('kill -9 during NodeUnstageVolume after the pod’s unpublish: after the restart the volume is unstaged and detached, with no mount and no loop device left', async () => {
    // Arrange: a mounted volume whose pod goes; its NodeUnstageVolume is held 3 s by the driver.
    const env = await startEnv();
    const handle = 'vol-killed-unstage';
    const uid = await addPodWithVolume(env, 'unstaged', handle);
    await waitMounted(env, handle, uid);
    await env.driver.fault('NodeUnstageVolume', { delayMs: 3_000, failNext: 1 });
    await removePod(env, 'unstaged');
    await waitFor(
      async () => callsOf(await env.driver.calls(), handle).includes('NodeUnpublishVolume OK') && (await env.driver.state()).inFlight.includes(handle),
      { what: `NodeUnstageVolume of ${handle} in flight`, timeoutMs: MOUNT_DEADLINE_MS },
    );

    // Act
    await restartAfterKill(env);

    // Assert
    await waitUnstagedAndDetached(env, handle);
    expect(callsOf(await env.driver.calls(), handle, ['NodeUnstageVolume', 'ControllerUnpublishVolume']).filter((c) => c.endsWith(' OK')).at(-1)).toBe('ControllerUnpublishVolume OK');
    await expectNothingLeft(env, uid);
  });

  it('finds a volume detached behind its back ("terminated node") at the next verification, attaches, stages and publishes it again, and the file written before is intact', async () => {
    // Arrange
    const env = await startEnv();
    const uid = await addPodWithVolume(env, 'node', 'vol-node');
    await waitMounted(env, 'vol-node', uid);
    const target = podVolumePath(env, uid, 'vol-node');
    await writeDurably(join(target, 'survivor.txt'), 'written before the node went away');
    await env.driver.clearCalls();

    // Act: the driver forgets the attachment (lazy unmounts, losetup -d), then the agent verifies at once.
    await env.driver.yank('vol-node');
    expect(await isDriverMounted(env, target)).toBe(false);
    const resync = await env.agent.post('/api/v1/resync');

    // Assert: the verification reports the volume detached; the agent sets it up again.
    expect(resync.status).toBe(200);
    const verified = await env.agent.waitForSnapshot(
      'the verification found the volume detached',
      (s) => s.attachVerification.foundDetached.includes(csiUniqueVolumeName('vol-node')) && s,
    );
    expect(verified.attachVerification.lastRunAt).toEqual(expect.any(Number));
    await waitMounted(env, 'vol-node', uid, 'the volume is attached, staged and mounted again');
    await waitFor(() => isDriverMounted(env, target), { what: 'the pod volume is the driver mount again', timeoutMs: MOUNT_DEADLINE_MS });
    expect(callsOf(await env.driver.calls(), 'vol-node', ['ControllerPublishVolume', 'NodeStageVolume', 'NodePublishVolume'])).toEqual([
      'ControllerPublishVolume OK',
      'NodeStageVolume OK',
      'NodePublishVolume OK',
    ]);
    expect(await readFile(join(target, 'survivor.txt'), 'utf8')).toBe('written before the node went away');

    // Act: the pod goes.
    await removePod(env, 'node');

    // Assert
    await waitGone(env, 'vol-node');
    await expectNothingLeft(env, uid);
  });

  it('keeps a pod whose NodeUnpublishVolume keeps failing when the verification finds its volume detached, and unpublishes, unstages and detaches it once the driver recovers', async () => {
    // Arrange: the pod goes while every NodeUnpublishVolume fails, so its TearDown is pending.
    const env = await startEnv();
    const uid = await addPodWithVolume(env, 'stuck', 'vol-stuck');
    await waitMounted(env, 'vol-stuck', uid);
    await env.driver.clearCalls();
    await env.driver.fault('NodeUnpublishVolume', { code: 'INTERNAL', message: 'unpublish refused by the test', failNext: 1_000 });
    await removePod(env, 'stuck');
    await env.agent.waitForSnapshot(
      'the TearDown failed',
      (s) => s.operations.some((o) => o.operationName === 'volume_unmount' && o.volume === csiUniqueVolumeName('vol-stuck') && o.state === 'backoff'),
      MOUNT_DEADLINE_MS,
    );

    // Act: the node loses the attachment, then the agent verifies.
    await env.driver.yank('vol-stuck');
    const resync = await env.agent.post('/api/v1/resync');

    // Assert: found detached, but the pod entry stays (uncertain) and the volume reads as uncertain.
    expect(resync.status).toBe(200);
    const verified = await env.agent.waitForSnapshot(
      'the verification found the volume detached',
      (s) => s.attachVerification.foundDetached.includes(csiUniqueVolumeName('vol-stuck')) && s,
    );
    expect(podMountState(verified, 'vol-stuck', uid)).toBe('uncertain');
    expect(actualVolume(verified, 'vol-stuck')?.attachState).toBe('uncertain');

    // Act: the driver recovers.
    await env.driver.clearFaults();

    // Assert: the pending TearDown is done, then unstage and detach; nothing is left behind.
    await waitGone(env, 'vol-stuck');
    const calls = callsOf(await env.driver.calls(), 'vol-stuck', ['NodeUnpublishVolume', 'NodeUnstageVolume', 'ControllerUnpublishVolume', 'NodePublishVolume']);
    expect(calls.filter((c) => c !== 'NodeUnpublishVolume INTERNAL').slice(-3)).toEqual(['NodeUnpublishVolume OK', 'NodeUnstageVolume OK', 'ControllerUnpublishVolume OK']);
    expect(calls).not.toContain('NodePublishVolume OK');
    await expectNothingLeft(env, uid);
  });

  it('leaves the volume unmounted after a final NodePublishVolume error, retries with a growing backoff (500 ms, 1 s, 2 s), and mounts it once the driver succeeds', async () => {
    // Arrange: the next three publishes fail with a final code (INTERNAL).
    const env = await startEnv();
    await env.driver.fault('NodePublishVolume', { code: 'INTERNAL', message: 'publish refused by the test', failNext: 3 });

    // Act
    const uid = await addPodWithVolume(env, 'retry', 'vol-retry');

    // Assert: while failing, the device is staged but the pod has no mount, and the backoff grows.
    const windows: number[] = [];
    const third = await env.agent.waitForSnapshot(
      'the publish failed three times',
      (s) => {
        const op = mountOp(s, 'vol-retry');
        if (op !== undefined && op.durationBeforeRetryMs > 0 && windows.at(-1) !== op.durationBeforeRetryMs) windows.push(op.durationBeforeRetryMs);
        if (op !== undefined && op.state === 'backoff') {
          expect(podMountState(s, 'vol-retry', uid)).toBeUndefined();
          expect(actualVolume(s, 'vol-retry')?.deviceMountState).toBe('mounted');
        }
        return op !== undefined && op.failures >= 3 && op.state === 'backoff' && s;
      },
      MOUNT_DEADLINE_MS,
    );
    expect(windows).toEqual([500, 1000, 2000]);
    expect(mountOp(third, 'vol-retry')?.lastError).toContain('publish refused by the test');
    // A final error leaves nothing at the target (the plugin removed what it created).
    expect(await isDriverMounted(env, podVolumePath(env, uid, 'vol-retry'))).toBe(false);

    // Assert: the fourth attempt succeeds.
    await waitMounted(env, 'vol-retry', uid, 'the volume is mounted after the faults ran out');
    expect(callsOf(await env.driver.calls(), 'vol-retry', ['NodePublishVolume'])).toEqual([
      'NodePublishVolume INTERNAL',
      'NodePublishVolume INTERNAL',
      'NodePublishVolume INTERNAL',
      'NodePublishVolume OK',
    ]);
    expect(mountOp(await env.agent.snapshot(), 'vol-retry')).toBeUndefined();

    // Act / Assert: the pod goes; nothing is left.
    await removePod(env, 'retry');
    await waitGone(env, 'vol-retry');
    await expectNothingLeft(env, uid);
  });

  it('marks the device uncertain when NodeStageVolume hangs past the CSI deadline, never publishes, and still calls NodeUnstageVolume (UnmountDevice) and detaches when the pod goes', async () => {
    // Arrange: every stage hangs until the agent's deadline (--csi-timeout 1s) cancels it.
    const env = await startEnv();
    await env.driver.fault('NodeStageVolume', { hang: true });

    // Act
    const uid = await addPodWithVolume(env, 'hang', 'vol-hang');

    // Assert: attached, device uncertain, the mount operation backing off with the deadline error.
    const s = await env.agent.waitForSnapshot(
      'the device mount is uncertain',
      (snap) => {
        const v = actualVolume(snap, 'vol-hang');
        const op = mountOp(snap, 'vol-hang');
        return v?.deviceMountState === 'uncertain' && op?.state === 'backoff' && snap;
      },
      MOUNT_DEADLINE_MS,
    );
    expect(actualVolume(s, 'vol-hang')).toMatchObject({ attachState: 'attached', deviceMountState: 'uncertain', pods: [] });
    expect(mountOp(s, 'vol-hang')?.lastError).toMatch(/DeadlineExceeded/);
    await waitFor(async () => callsOf(await env.driver.calls(), 'vol-hang', ['NodeStageVolume']).length > 0, { what: 'the driver logged the hung stage as given up' });
    const stages = callsOf(await env.driver.calls(), 'vol-hang', ['NodeStageVolume']);
    expect(stages.every((c) => /^NodeStageVolume (DEADLINE_EXCEEDED|CANCELLED)$/.test(c))).toBe(true);

    // Act: the pod goes while the device is uncertain.
    await removePod(env, 'hang');

    // Assert: UnmountDevice runs (NodeUnstageVolume) before the detach; NodePublish never ran.
    await waitGone(env, 'vol-hang');
    const teardown = callsOf(await env.driver.calls(), 'vol-hang', ['NodePublishVolume', 'NodeUnpublishVolume', 'NodeUnstageVolume', 'ControllerUnpublishVolume']);
    expect(teardown).toEqual(['NodeUnstageVolume OK', 'ControllerUnpublishVolume OK']);
    await expectNothingLeft(env, uid);
  });

  it('expands a mounted CSI volume online when its PV capacity grows: FsResizeRequired → NodeExpandVolume with the new size, visible to df in the volume', async () => {
    // Arrange
    const env = await startEnv();
    const uid = await addPodWithVolume(env, 'grow', 'vol-grow');
    await waitMounted(env, 'vol-grow', uid);
    const target = podVolumePath(env, uid, 'vol-grow');
    await env.driver.clearCalls();

    // Act: the PV (and the claim's request) grows to 128Mi; the claim status still says 64Mi.
    await writeManifest(env, 'storage-vol-grow.json', csiClaimObjects({ handle: 'vol-grow', pvCapacity: '128Mi', claimCapacity: '64Mi' }));

    // Assert: one successful NodeExpandVolume, and the new size where the mode can show it.
    await waitFor(async () => callsOf(await env.driver.calls(), 'vol-grow', ['NodeExpandVolume']).includes('NodeExpandVolume OK'), { what: 'NodeExpandVolume succeeded', timeoutMs: MOUNT_DEADLINE_MS });
    expect((await env.driver.state()).volumes['vol-grow']?.capacityBytes).toBe(128 * 1024 * 1024);
    if (env.privileged) {
      // df of the mounted ext4 (its total size less the filesystem's own metadata): well above 64Mi now.
      const { stdout } = await execFileAsync('df', ['-B1', '--output=size', target]);
      const size = Number(stdout.trim().split('\n').at(-1));
      expect(size).toBeGreaterThan(100 * 1024 * 1024);
      expect(size).toBeLessThanOrEqual(128 * 1024 * 1024);
    } else {
      expect(await isDriverMounted(env, target)).toBe(true);
    }
    await waitMounted(env, 'vol-grow', uid, 'the volume stays mounted after the expansion');

    // Act / Assert: the pod goes; nothing is left.
    await removePod(env, 'grow');
    await waitGone(env, 'vol-grow');
    await expectNothingLeft(env, uid);
  });

  it('mounts an inline ephemeral CSI volume without attach or stage, and unpublishes it when the pod goes', async () => {
    // Arrange: the CSIDriver allows the Ephemeral lifecycle mode (and podInfoOnMount, which carries the ephemeral flag).
    const env = await startEnv();
    await writeManifest(env, 'csidriver.json', [csiEphemeralDriverObject()]);
    const uid = 'inline-uid';
    const handle = makeVolumeHandle(uid, 'scratch');
    const unique = csiInlineUniqueVolumeName(uid, 'scratch');
    const target = join(env.rootDir, 'pods', uid, 'volumes', 'kubernetes.io~csi', 'scratch', 'mount');

    // Act
    await writeManifest(env, 'pod-inline.json', [csiInlinePodObject('inline', { uid, volumeAttributes: { capacity: '32Mi' } })]);

    // Assert: the snapshot names the volume per pod and shows it mounted for the pod, without a device mount.
    const s = await env.agent.waitForSnapshot(
      'the inline CSI volume is mounted for the pod',
      (snap) => snap.actual.volumes.find((v) => v.uniqueVolumeName === unique)?.pods.find((p) => p.podUid === uid)?.mountState === 'mounted' && snap,
      MOUNT_DEADLINE_MS,
    );
    expect(s.actual.volumes.find((v) => v.uniqueVolumeName === unique)).toMatchObject({ pluginName: 'kubernetes.io/csi', deviceMountState: 'not-mounted' });
    expect(s.desired.pods.find((p) => p.uid === uid)?.volumes).toEqual([expect.objectContaining({ name: 'scratch', attachable: false, deviceMountable: false })]);
    expect(await isDriverMounted(env, target)).toBe(true);
    await writeDurably(join(target, 'scratch.txt'), 'written in the inline volume');
    expect(await readFile(join(target, 'scratch.txt'), 'utf8')).toBe('written in the inline volume');
    // The driver created the volume from the publish: ephemeral, with the requested capacity, never attached or staged.
    const created = (await env.driver.state()).volumes[handle];
    expect({ capacity: created?.capacityBytes, nodes: Object.keys(created?.publishedNodes ?? {}), staged: created?.staged ?? null, targets: Object.keys(created?.publishedTargets ?? {}) }).toEqual({
      capacity: 32 * 1024 * 1024,
      nodes: [],
      staged: null,
      targets: [target],
    });

    // Act: the pod goes.
    await rm(join(env.manifestDir, 'pod-inline.json'));

    // Assert: exactly NodePublishVolume then NodeUnpublishVolume, and the driver deleted the volume.
    await env.agent.waitForSnapshot('the inline CSI volume left the actual state', (snap) => !snap.actual.volumes.some((v) => v.uniqueVolumeName === unique), MOUNT_DEADLINE_MS);
    // Every mutating call of the whole run, for any volume: no ControllerPublish, no NodeStage, no unstage or detach.
    const calls = (await env.driver.calls()).filter((c) => LIFECYCLE.includes(c.method));
    expect(calls.map((c) => `${c.method} ${c.volumeId} ${c.code}`)).toEqual([`NodePublishVolume ${handle} OK`, `NodeUnpublishVolume ${handle} OK`]);
    expect((await env.driver.state()).volumes[handle]).toBeUndefined();
    await expectNothingLeft(env, uid);
  });

  it.each([
    { code: 'FAILED_PRECONDITION', how: 'marks an in-use expansion error' },
    { code: 'UNIMPLEMENTED', how: 'counts the expansion as done (NotSupported)' },
  ])('calls NodeExpandVolume once and $how when the driver answers $code, without retrying and without unmounting', async ({ code }) => {
    // Arrange
    const env = await startEnv();
    const uid = await addPodWithVolume(env, 'stuck', 'vol-stuck');
    await waitMounted(env, 'vol-stuck', uid);
    await env.driver.clearCalls();
    await env.driver.fault('NodeExpandVolume', { code });

    // Act
    await writeManifest(env, 'storage-vol-stuck.json', csiClaimObjects({ handle: 'vol-stuck', pvCapacity: '128Mi', claimCapacity: '64Mi' }));

    // Assert: exactly one call with that code, then none for 2 s (20 reconciler periods and two populator passes).
    await waitFor(async () => callsOf(await env.driver.calls(), 'vol-stuck', ['NodeExpandVolume']).length > 0, { what: 'NodeExpandVolume was called', timeoutMs: MOUNT_DEADLINE_MS });
    await expect(
      waitFor(async () => callsOf(await env.driver.calls(), 'vol-stuck', ['NodeExpandVolume']).length > 1, { what: 'a second NodeExpandVolume', timeoutMs: 2_000 }),
    ).rejects.toThrow(/not reached within 2000 ms/);
    expect(callsOf(await env.driver.calls(), 'vol-stuck', ['NodeExpandVolume'])).toEqual([`NodeExpandVolume ${code}`]);
    const s = await env.agent.snapshot();
    expect(s.operations.filter((o) => o.operationName === 'volume_fs_resize')).toEqual([]);
    expect(podMountState(s, 'vol-stuck', uid)).toBe('mounted');
    expect((await env.driver.state()).volumes['vol-stuck']?.capacityBytes).toBe(64 * 1024 * 1024);

    // Act / Assert: the pod goes; nothing is left.
    await removePod(env, 'stuck');
    await waitGone(env, 'vol-stuck');
    await expectNothingLeft(env, uid);
  });
});
