/**
 * The observe controller's orphan cleanup against the Kubernetes-protocol test server (the real
 * client over HTTP): "the pod is gone from the API" comes from a live read of the node's pods,
 * not from the informer, so a pod the informer has not seen is never cleaned up. And the plan's
 * handling of volumes that leave nothing on disk (hostPath).
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { realClock } from '../../lib/clock/clock.ts';
import { cleanUpTempDir, makeTempDir } from '../../lib/mount-utils/testing/mount-test-env.ts';
import { readMountInfo, type MountInfoReader } from '../../lib/mount-utils/mountinfo.ts';
import type { OrphanCleanupResult } from '../../lib/observe/orphan-cleanup.ts';
import { KubeSource } from '../../lib/sources/kube/kube-source.ts';
import { FakeApiServer } from '../../lib/sources/kube/testing/fake-apiserver.ts';
import { fakeKubeConfig } from '../../lib/sources/kube/testing/kubeconfig-file.ts';
import { waitFor } from '../../lib/clock/testing/wait-for.ts';
import { discardLogger } from '../../lib/volume/logger.ts';
import type { PlannedOperation } from '../../lib/volumemanager/index.ts';
import { podUID, uniquePodName, uniqueVolumeName } from '../../lib/volume/types.ts';
import { KubeObjects } from './kube-objects.ts';
import { ObserveController, type ObservedVolumeManager } from './observe-controller.ts';

const NODE = 'node-a';

let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** A plan-only volume manager with nothing desired (the cleanup reads only the desired pods). */
const idleVolumeManager: ObservedVolumeManager = {
  onChange: () => () => undefined,
  refreshActualState: () => Promise.resolve({ startedAt: 0, finishedAt: 0, error: null, scanned: 0, reconstructed: 0, failed: 0, added: [], removed: [], changed: [], waitingForNodeStatus: [] }),
  getPlannedOperations: () => [],
  getDesiredVolumes: () => [],
  getActualVolumes: () => [],
};

function pod(name: string, uid: string) {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'apps', uid }, spec: { nodeName: NODE, containers: [{ name: 'c', image: 'i' }] } };
}

/** An API server, a synced source whose pod watch is held (it sees no later pod), a kubelet root with one pod dir. */
async function setup(
  readTable: MountInfoReader = () => readMountInfo(),
  onChange: () => void = () => undefined,
  volumeManager: ObservedVolumeManager = idleVolumeManager,
): Promise<{ api: FakeApiServer; controller: ObserveController; rootDir: string }> {
  const base = await makeTempDir('volumescope-observe-controller-');
  cleanups.push(async () => {
    await cleanUpTempDir(base);
  });
  const rootDir = join(base, 'kubelet');
  await mkdir(join(rootDir, 'pods', 'uid-late', 'volumes', 'kubernetes.io~empty-dir', 'x'), { recursive: true });
  const procRoot = join(base, 'proc');
  await mkdir(procRoot);

  const api = await FakeApiServer.start({ token: 't' });
  cleanups.push(() => api.close());
  api.put('pods', pod('early', 'uid-early'));
  const kubeConfig = fakeKubeConfig({ server: api.url, token: 't' });
  const source = new KubeSource({ kubeConfig, nodeName: NODE, clock: realClock, claimsOnly: true });
  cleanups.push(() => source.stop());
  await source.start();
  await source.waitUntilSynced();
  // Cut the pod watch and hold the re-watch: pods written from now on reach the API only, while
  // the source stays synced and reports no error (a watch that lost events looks the same).
  const held = api.holdRequests({ resource: 'pods', verb: 'watch' });
  cleanups.push(() => {
    held.release();
    return Promise.resolve();
  });
  const watches = api.requests({ resource: 'pods', verb: 'watch' }).length;
  api.dropWatches('pods');
  await waitFor(() => api.requests({ resource: 'pods', verb: 'watch' }).length > watches, { what: 'the held re-watch' });

  const controller = new ObserveController({
    nodeName: NODE,
    rootDir,
    volumeManager,
    source,
    api: new KubeObjects(source, kubeConfig),
    readMountInfo: readTable,
    mounter: { unmount: () => Promise.reject(new Error('no unmount expected')) },
    clock: realClock,
    refreshPeriodMs: 60_000,
    allowCleanup: true,
    logger: discardLogger,
    procRoot,
    onChange,
  });
  return { api, controller, rootDir };
}

function refusalCodes(r: OrphanCleanupResult): string[] {
  return 'refused' in r ? r.refused.map((x) => x.code) : [];
}

describe('ObserveController change notifications', { timeout: 30_000 }, () => {
  it('drops its section and notifies when the source changes, so the snapshot sees the change without a poll', async () => {
    // Arrange: a controller whose first refresh is done, and its section read
    let notified = 0;
    const { api, controller } = await setup(undefined, () => {
      notified++;
    });
    controller.start();
    cleanups.push(() => controller.stop());
    await waitFor(() => notified === 1, { what: 'the first refresh' });
    const before = controller.section();

    // Act: the node object changes in the API (the source's node watch sees it)
    api.put('nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: NODE }, status: { volumesAttached: [], volumesInUse: [] } });
    await waitFor(() => notified > 1, { what: 'a notification for the source change' });

    // Assert: a new section object (rebuilt from the changed source), with no refresh run meanwhile
    expect(controller.section()).not.toBe(before);
    expect(controller.section().refreshedAt).toBe(before.refreshedAt);
  });
});

describe('ObserveController orphan cleanup: pod gone is decided live', { timeout: 30_000 }, () => {
  it('refuses a pod the API server has but the informer has not seen (live GET of the node\'s pods)', async () => {
    // Arrange
    const { api, controller } = await setup();
    api.put('pods', pod('late', 'uid-late'));
    api.clearRequests();

    // Act
    const result = await controller.cleanupOrphan('uid-late', true);

    // Assert
    expect(result.outcome).toBe('refused');
    expect(refusalCodes(result)).toEqual(['pod-known-to-api']);
    expect(result.checks.find((c) => c.check === 'desired-state-incomplete')?.passed).toBe(true);
    const lists = api.requests({ resource: 'pods', verb: 'list' });
    expect(lists.map((r) => [r.path, r.query['fieldSelector']])).toEqual([['/api/v1/pods', `spec.nodeName=${NODE}`]]);
  });

  it('plans the cleanup once the live read does not list the pod either', async () => {
    const { api, controller } = await setup();
    api.clearRequests();

    const result = await controller.cleanupOrphan('uid-late', true);

    expect(result.outcome).toBe('planned');
    expect(result.checks.find((c) => c.check === 'pod-known-to-api')).toMatchObject({ passed: true, detail: 'no' });
    expect(result.checks.find((c) => c.check === 'mount-table-shows-root-dir')?.passed).toBe(true);
    expect(api.requests({ resource: 'pods', verb: 'list' })).toHaveLength(1);
  });

  it('refuses when the live read fails, rather than trusting the informer', async () => {
    const { api, controller } = await setup();
    api.failRequests({ resource: 'pods', verb: 'list', status: 503, message: 'the server is currently unable to handle the request' });

    const result = await controller.cleanupOrphan('uid-late', true);

    expect(refusalCodes(result)).toEqual(['guard-check-failed']);
    expect('refused' in result && result.refused[0]?.message).toContain('the server is currently unable to handle the request');
  });
});

describe('ObserveController orphan cleanup: the mount table must be the root dir\'s', { timeout: 30_000 }, () => {
  it('shows why every cleanup is refused in the snapshot section and refuses it, when --mountinfo is another namespace\'s table', async () => {
    // Arrange: the real table with the root dir's filesystem on another device, as in another mount namespace.
    let root = '';
    const foreign: MountInfoReader = async () => (await readMountInfo()).map((e) => (root.startsWith(`${e.mountPoint === '/' ? '' : e.mountPoint}/`) ? { ...e, major: e.major + 1000 } : e));
    const { controller, rootDir } = await setup(foreign);
    root = rootDir;
    expect(controller.section().cleanupBlocked).toMatch(/has not been checked/);

    // Act
    await controller.refresh();
    const result = await controller.cleanupOrphan('uid-late', true);

    // Assert
    expect(controller.section().cleanupBlocked).toMatch(new RegExp(`^the mount table does not describe the kubelet root dir: the mount table given with --mountinfo says ${rootDir} is on device \\d+:\\d+ .*: the table is another mount namespace's$`));
    expect(refusalCodes(result)).toEqual(['mount-table-not-for-root-dir']);
  });

  it('clears the block once a refresh reads the right table', async () => {
    const { controller } = await setup();
    await controller.refresh();
    expect(controller.section()).toMatchObject({ cleanupAllowed: true, cleanupBlocked: null });
  });
});

describe('ObserveController plan: a hostPath volume leaves nothing on disk', { timeout: 30_000 }, () => {
  /** The plan-only engine's volume_mount of volume `name` of a pod (kind `host-path` or `empty-dir`). */
  const mountOp = (uid: string, plugin: 'host-path' | 'empty-dir', name: string): PlannedOperation => ({
    operationName: 'volume_mount',
    volumeName: uniqueVolumeName(`kubernetes.io/${plugin}/${uid}-${name}`),
    podName: uniquePodName(uid),
    podUid: podUID(uid),
    outerVolumeSpecName: name,
    reason: 'mount-required',
    state: 'VolumeNotMounted',
    reconstructed: false,
    step: 1,
    firstPlannedAt: 1000,
    lastPlannedAt: 1000,
  });

  /** The verification the engine plans before the mount (volume-wide: no pod). */
  const verifyOp = (uid: string, plugin: 'host-path' | 'empty-dir', name: string): PlannedOperation => ({
    ...mountOp(uid, plugin, name),
    operationName: 'verify_controller_attached_volume',
    podName: null,
    podUid: null,
    outerVolumeSpecName: null,
    reason: 'attach-verification-required',
    state: 'VolumeNotAttached',
  });

  it('drops the verification and mount of a hostPath volume of a Running pod (the kubelet set it up before starting containers) and keeps it, saying why, for a pod that is not Running', async () => {
    // Arrange: two pods in the API, one Running, one Pending, and the engine's plan for both
    const api = await FakeApiServer.start({ token: 't' });
    cleanups.push(() => api.close());
    api.put('pods', { ...pod('running', 'uid-running'), status: { phase: 'Running' } });
    api.put('pods', { ...pod('pending', 'uid-pending'), status: { phase: 'Pending' } });
    const kubeConfig = fakeKubeConfig({ server: api.url, token: 't' });
    const source = new KubeSource({ kubeConfig, nodeName: NODE, clock: realClock, claimsOnly: true });
    cleanups.push(() => source.stop());
    await source.start();
    await source.waitUntilSynced();
    const plan = [
      verifyOp('uid-running', 'host-path', 'logs'),
      mountOp('uid-running', 'host-path', 'logs'),
      mountOp('uid-running', 'empty-dir', 'cache'),
      verifyOp('uid-pending', 'host-path', 'logs'),
      mountOp('uid-pending', 'host-path', 'logs'),
    ];
    // The desired state: each volume wanted by its pod (the verification names no pod).
    const desired = plan.filter((op) => op.operationName === 'volume_mount').map((op) => ({ volumeName: op.volumeName, pods: [{ pod: { metadata: { uid: op.podUid ?? '' } } }] }));
    const controller = new ObserveController({
      nodeName: NODE,
      rootDir: '/nonexistent/kubelet',
      volumeManager: { ...idleVolumeManager, getPlannedOperations: () => plan, getDesiredVolumes: () => desired as unknown as ReturnType<ObservedVolumeManager['getDesiredVolumes']> },
      source,
      api: new KubeObjects(source, kubeConfig),
      readMountInfo: () => readMountInfo(),
      mounter: { unmount: () => Promise.reject(new Error('no unmount expected')) },
      clock: realClock,
      refreshPeriodMs: 60_000,
      allowCleanup: false,
      logger: discardLogger,
      onChange: () => undefined,
    });

    // Act
    const section = controller.section();

    // Assert: the Running pod's emptyDir (it has a directory the disk would show) stays planned
    expect(section.plan.map((p) => [p.operation, p.volume])).toEqual([
      ['verify_controller_attached_volume', 'kubernetes.io/host-path/uid-pending-logs'],
      ['volume_mount', 'kubernetes.io/empty-dir/uid-running-cache'],
      ['volume_mount', 'kubernetes.io/host-path/uid-pending-logs'],
    ]);
    expect(section.plan[1]?.reason).toBe('desired by the pod, not mounted');
    expect(section.plan[2]?.reason).toMatch(/^desired by the pod, not mounted; the kubelet leaves nothing on disk for a hostPath volume, so only the pod tells: outstanding until the pod is Running/);
  });
});

describe('ObserveController: the kubelet’s evidence', { timeout: 30_000 }, () => {
  const SCRATCH = uniqueVolumeName('kubernetes.io/empty-dir/uid-early-scratch');
  const plannedOp = (operationName: string, pod: boolean, step: number): PlannedOperation => ({
    operationName,
    volumeName: SCRATCH,
    podName: pod ? uniquePodName('uid-early') : null,
    podUid: pod ? podUID('uid-early') : null,
    outerVolumeSpecName: pod ? 'scratch' : null,
    reason: pod ? 'mount-required' : 'attach-verification-required',
    state: 'VolumeNotAttached',
    reconstructed: false,
    step,
    firstPlannedAt: 1_000,
    lastPlannedAt: 1_000,
  });
  const planning: ObservedVolumeManager = { ...idleVolumeManager, getPlannedOperations: () => [plannedOp('verify_controller_attached_volume', false, 1), plannedOp('volume_mount', true, 2)] };
  const failedEvent = (step: string) => ({
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: 'early.1', namespace: 'apps' },
    involvedObject: { kind: 'Pod', namespace: 'apps', name: 'early', uid: 'uid-early' },
    reason: 'FailedMount',
    type: 'Warning',
    count: 3,
    lastTimestamp: '2031-01-02T03:04:05Z',
    message: `${step} failed for volume "scratch" (UniqueName: "${SCRATCH}") pod "early" (UID: "uid-early") : mkdir: no space left on device`,
  });

  it('a SetUp-failed event leaves only the pod’s mount in the plan, names the failed step, and is listed as a recent event', async () => {
    const { api, controller } = await setup(undefined, undefined, planning);
    api.put('events', failedEvent('MountVolume.SetUp'));

    await controller.refresh();

    const plan = controller.section().plan;
    expect(plan.map((p) => p.operation)).toEqual(['volume_mount']);
    expect(plan[0]?.kubeletBackoff).toMatchObject({ operation: 'MountVolume.SetUp', reason: 'FailedMount', count: 3, basis: 'event-count' });
    expect(plan[0]?.reason).toBe('desired by the pod, not mounted; the kubelet’s event shows it got as far as this pod’s own mount (SetUp), which failed');
    expect(controller.events()).toEqual([
      { time: Date.parse('2031-01-02T03:04:05Z'), type: 'Warning', reason: 'FailedMount', podUid: 'uid-early', message: failedEvent('MountVolume.SetUp').message, volume: SCRATCH, count: 3 },
    ]);
    expect(controller.events()).toBe(controller.events());
  });

  it('keeps the earlier steps when the failed step is the device mount', async () => {
    const { api, controller } = await setup(undefined, undefined, planning);
    api.put('events', failedEvent('MountVolume.MountDevice'));

    await controller.refresh();

    expect(controller.section().plan.map((p) => p.operation)).toEqual(['verify_controller_attached_volume', 'volume_mount']);
    expect(controller.section().plan.find((p) => p.operation === 'volume_mount')?.reason).toContain('step 2 (after the steps before it succeed)');
  });
});
