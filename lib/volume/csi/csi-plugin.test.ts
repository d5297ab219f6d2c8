// The kubernetes.io/csi plugin driven directly (no volume manager) against the real csi-loop
// driver: attach → stage → publish → unpublish → unstage → detach with the driver's call log and
// the vol_data.json files checked at each step, uncertain vs final errors, reconstruction,
// registration, attachment verification and expansion. With VOLUMESCOPE_MOUNT_NS=1 the driver
// makes real loop devices and mounts; otherwise it uses symlinks.
import { createHash } from 'node:crypto';
import { lstat, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { realClock } from '../../clock/clock.ts';
import { testMounter } from '../../mount-utils/testing/mount-test-env.ts';
import type { Mounter as HostMounter } from '../../mount-utils/mounter.ts';
import { readMountInfo } from '../../mount-utils/mountinfo.ts';
import {
  isFailedPreconditionError,
  isOperationFinishedError,
  isOperationNotSupportedError,
  isTransientOperationFailure,
  isUncertainProgressError,
} from '../errors.ts';
import type { Pod } from '../k8s-types.ts';
import { isAttachableVolume, isDeviceMountableVolume, VolumePluginMgr } from '../plugins.ts';
import { specFromPersistentVolume, type Spec } from '../spec.ts';
import { nodeName, podUID } from '../types.ts';
import { CsiDriverRegistry } from './csi-driver-registry.ts';
import { CsiAttacher } from './csi-attacher.ts';
import type { CsiClient } from './csi-client.ts';
import { CsiRpcError, isCsiRpcError } from './csi-errors.ts';
import { CsiMounter, CsiUnmounter } from './csi-mounter.ts';
import type { CsiPluginContext } from './csi-plugin-context.ts';
import { CsiPlugin, type CsiPluginOptions, type VolumeAttachmentReader } from './csi-plugin.ts';
import type { NodeCapability } from './csi-types.ts';
import { PLUGINS_REGISTRATION_DIR_NAME, PluginWatcher } from './plugin-watcher.ts';
import { STRIPPED } from './redact.ts';
import { CsiLoopProcess, driverMode, driverPrivileged, type FaultSpec } from './testing/csi-loop-process.ts';
import { waitFor } from '../../clock/testing/wait-for.ts';
import { DRIVER, FakeObjects, finishSuite, finishTestDir, inlineSpec, pod, pvSpec, RecordingLogger, suiteDir, testDir } from './testing/fixtures.ts';
import { attachmentName, makeVolumeHandle, podVolumeDir } from './vol-data.ts';

const NODE = nodeName('node-a');
const CSI_NODE_ID = 'csi-node-a';
const MiB = 2 ** 20;
const LIFECYCLE = ['ControllerPublishVolume', 'NodeStageVolume', 'NodePublishVolume', 'NodeUnpublishVolume', 'NodeUnstageVolume', 'ControllerUnpublishVolume'];

let suite: string;
let driver: CsiLoopProcess;
let registry: CsiDriverRegistry;
let hostMounter: HostMounter;
let dir: string;
let root: string;
let objects: FakeObjects;
let logger: RecordingLogger;
/** The registry's clients log every request (redacted) here. */
const registryLogger = new RecordingLogger();
let testCount = 0;

beforeAll(async () => {
  suite = await suiteDir('volumescope-csi-plugin-');
  driver = await CsiLoopProcess.start({
    dir: join(suite, 'driver'),
    nodeId: CSI_NODE_ID,
    registrationDir: join(suite, 'reg', PLUGINS_REGISTRATION_DIR_NAME),
  });
  registry = new CsiDriverRegistry({ clock: realClock, callTimeoutMs: 20_000, logger: registryLogger });
  expect((await registry.addDriver(DRIVER, driver.socketPath)).registered).toBe(true);
  hostMounter = testMounter(join(suite, 'mounter-state'));
});

afterAll(async () => {
  registry.close();
  await finishSuite(driver, suite);
});

beforeEach(async () => {
  dir = await testDir(suite, `t${++testCount}`);
  root = join(dir, 'root');
  objects = new FakeObjects();
  logger = new RecordingLogger();
  registryLogger.lines.length = 0;
  await driver.clearCalls();
});

afterEach(async () => {
  await driver.clearFaults();
  // After every test: no loop device of the driver's images, no mount under the test dir.
  expect(await finishTestDir(driver, dir)).toEqual({ loopDevices: [], mounts: [] });
});

function newPlugin(opts: Partial<CsiPluginOptions> = {}): CsiPlugin {
  return new CsiPlugin({ objects, registry, nodeName: NODE, rootDir: root, mounter: hostMounter, clock: realClock, logger, ...opts });
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}

async function readJson(path: string): Promise<Record<string, string>> {
  return JSON.parse(await readFile(path, 'utf8')) as Record<string, string>;
}

/** Mounted the way the driver mounts in this mode: a kernel mount point, or the driver's symlink. */
async function driverMounted(path: string): Promise<boolean> {
  if (driverPrivileged) return (await readMountInfo()).some((m) => m.mountPoint === path);
  return (await lstat(path).catch(() => null))?.isSymbolicLink() === true;
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  return p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (err: unknown) => err as Error,
  );
}

/** Runs `op` while the driver holds `method` for a while, calling `during` once the call is in flight. */
async function duringCall<T>(method: string, volumeId: string, op: () => Promise<T>, during: () => Promise<void>): Promise<T> {
  await driver.fault(method, { delayMs: 400, failNext: 1 });
  const pending = op();
  await waitFor(async () => (await driver.state()).inFlight.includes(volumeId), { what: `${method} of ${volumeId} in flight` });
  await during();
  return pending;
}

interface Up {
  staging: string;
  target: string;
}

/** attach → waitForAttach → MountDevice → SetUp. */
async function setUpVolume(plugin: CsiPlugin, spec: Spec, p: Pod): Promise<Up> {
  const attacher = plugin.newAttacher();
  await attacher.attach(spec, NODE);
  const devicePath = await attacher.waitForAttach(spec, '', p, 10_000);
  const staging = await attacher.getDeviceMountPath(spec);
  await plugin.newDeviceMounter().mountDevice(spec, devicePath, staging, { seLinuxLabel: '' });
  const mounter = plugin.newMounter(spec, p);
  await mounter.setUp({ desiredSize: null, seLinuxLabel: '' });
  return { staging, target: mounter.getPath() };
}

/** TearDown → UnmountDevice → Detach. */
async function tearDownVolume(plugin: CsiPlugin, spec: Spec, p: Pod, up: Up): Promise<void> {
  await plugin.newUnmounter(spec.persistentVolume?.metadata.name ?? '', podUID(p.metadata.uid ?? '')).tearDown();
  await plugin.newDeviceUnmounter().unmountDevice(up.staging);
  await plugin.newDetacher().detach(plugin.getVolumeName(spec), NODE);
}

describe(`kubernetes.io/csi plugin against csi-loop (${driverMode})`, () => {
  it('attaches, stages, publishes, unpublishes, unstages and detaches, with vol_data.json written before and removed after each call', async () => {
    const plugin = newPlugin();
    const vol = 'vol-lifecycle';
    const spec = pvSpec(vol);
    const p = pod('uid-lifecycle');
    const attacher = plugin.newAttacher();
    expect(plugin.getVolumeName(spec)).toBe(`${DRIVER}^${vol}`);
    expect(plugin.canAttach(spec) && plugin.canDeviceMount(spec)).toBe(true);

    // Attach: the agent's own ControllerPublishVolume, with the driver's node id.
    expect(await attacher.attach(spec, NODE)).toBe('');
    const published = (await driver.state()).volumes[vol];
    expect(Object.keys(published?.publishedNodes ?? {})).toEqual([CSI_NODE_ID]);
    const devicePath = await attacher.waitForAttach(spec, '', p, 10_000);
    expect(devicePath).toBe(attachmentName(vol, DRIVER, NODE));

    // MountDevice: the staging vol_data.json exists while NodeStageVolume runs.
    const staging = await attacher.getDeviceMountPath(spec);
    const sha = createHash('sha256').update(vol).digest('hex');
    expect(staging).toBe(join(root, 'plugins', 'kubernetes.io', 'csi', DRIVER, sha, 'globalmount'));
    const stagingData = join(dirname(staging), 'vol_data.json');
    await duringCall(
      'NodeStageVolume',
      vol,
      () => plugin.newDeviceMounter().mountDevice(spec, devicePath, staging, { seLinuxLabel: '' }),
      async () => {
        const data = await readJson(stagingData);
        expect(data).toMatchObject({ volumeHandle: vol, driverName: DRIVER });
        expect(JSON.parse(data['publishContext'] ?? '{}')).toEqual({ devicePath: published?.devicePath });
      },
    );
    expect(await driverMounted(staging)).toBe(true);

    // SetUp: the pod-level vol_data.json exists while NodePublishVolume runs.
    const mounter = plugin.newMounter(spec, p);
    const target = mounter.getPath();
    expect(target).toBe(join(root, 'pods', 'uid-lifecycle', 'volumes', 'kubernetes.io~csi', `pv-${vol}`, 'mount'));
    const podData = join(dirname(target), 'vol_data.json');
    await duringCall(
      'NodePublishVolume',
      vol,
      () => mounter.setUp({ desiredSize: null, seLinuxLabel: '' }),
      async () => {
        expect(await readJson(podData)).toEqual({
          specVolID: `pv-${vol}`,
          volumeHandle: vol,
          driverName: DRIVER,
          nodeName: NODE,
          attachmentID: attachmentName(vol, DRIVER, NODE),
          volumeLifecycleMode: 'Persistent',
        });
      },
    );
    expect(await driverMounted(target)).toBe(true);
    expect(await plugin.getDeviceMountRefs(staging)).toEqual([target]);

    // TearDown: the file stays until NodeUnpublishVolume succeeded, then file and dirs go.
    await duringCall(
      'NodeUnpublishVolume',
      vol,
      () => plugin.newUnmounter(`pv-${vol}`, podUID('uid-lifecycle')).tearDown(),
      async () => {
        expect(await exists(podData)).toBe(true);
      },
    );
    expect(await exists(dirname(target))).toBe(false);
    expect(await plugin.getDeviceMountRefs(staging)).toEqual([]);

    // UnmountDevice: likewise for the staging file.
    await duringCall(
      'NodeUnstageVolume',
      vol,
      () => plugin.newDeviceUnmounter().unmountDevice(staging),
      async () => {
        expect(await exists(stagingData)).toBe(true);
      },
    );
    expect(await exists(dirname(staging))).toBe(false);

    // Detach: ControllerUnpublishVolume.
    await plugin.newDetacher().detach(plugin.getVolumeName(spec), NODE);
    expect((await driver.state()).volumes[vol]?.publishedNodes).toEqual({});

    expect(await driver.methods(LIFECYCLE)).toEqual(LIFECYCLE);
    expect((await driver.calls()).every((c) => c.code === 'OK')).toBe(true);
    // As the kubelet: a capability probe right before stage, publish and unstage.
    const methods = await driver.methods();
    for (const m of ['NodeStageVolume', 'NodePublishVolume', 'NodeUnstageVolume']) {
      expect(methods[methods.indexOf(m) - 1]).toBe('NodeGetCapabilities');
    }
  });

  const stageFailures: { name: string; fault: FaultSpec; uncertain: boolean; kept: boolean; message: string }[] = [
    {
      name: 'a hung NodeStageVolume ends at the deadline as uncertain and keeps the staging dir and vol_data.json',
      fault: { hang: true, failNext: 1 },
      uncertain: true,
      kept: true,
      message: 'rpc error: code = DeadlineExceeded desc = context deadline exceeded',
    },
    {
      name: 'NodeStageVolume answering Aborted is uncertain and keeps them',
      fault: { code: 'ABORTED', failNext: 1 },
      uncertain: true,
      kept: true,
      message: 'rpc error: code = Aborted desc = injected fault: ABORTED',
    },
    {
      name: 'NodeStageVolume answering Internal is final and removes them',
      fault: { code: 'INTERNAL', failNext: 1 },
      uncertain: false,
      kept: false,
      message: 'rpc error: code = Internal desc = injected fault: INTERNAL',
    },
  ];

  it.each(stageFailures)('$name', async ({ fault, uncertain, kept, message }) => {
    const plugin = newPlugin({ callTimeoutMs: 1_500 });
    const vol = `vol-stage-${testCount}`;
    const spec = pvSpec(vol);
    const attacher = plugin.newAttacher();
    await attacher.attach(spec, NODE);
    const staging = await attacher.getDeviceMountPath(spec);
    await driver.fault('NodeStageVolume', fault);

    const err = await rejection(plugin.newDeviceMounter().mountDevice(spec, '', staging, { seLinuxLabel: '' }));

    expect(err.message).toBe(message);
    expect(isUncertainProgressError(err)).toBe(uncertain);
    expect(await exists(join(dirname(staging), 'vol_data.json'))).toBe(kept);
    expect(await exists(staging)).toBe(kept);
    expect(await exists(dirname(staging))).toBe(kept);

    // Clean up as the reconciler would: unstage the uncertain device (a no-op for the driver), detach.
    await waitFor(async () => !(await driver.state()).inFlight.includes(vol), { what: 'the driver to release the volume' });
    await plugin.newDeviceUnmounter().unmountDevice(staging);
    expect(await exists(dirname(staging))).toBe(false);
    await plugin.newDetacher().detach(plugin.getVolumeName(spec), NODE);
  });

  const publishFailures: { name: string; code: string; uncertain: boolean; kept: boolean }[] = [
    { name: 'a final NodePublishVolume error removes the pod volume dir and its vol_data.json', code: 'INTERNAL', uncertain: false, kept: false },
    { name: 'an uncertain NodePublishVolume error (Unavailable) keeps them for TearDown', code: 'UNAVAILABLE', uncertain: true, kept: true },
  ];

  it.each(publishFailures)('$name', async ({ code, uncertain, kept }) => {
    const plugin = newPlugin();
    const vol = `vol-publish-${testCount}`;
    const spec = pvSpec(vol);
    const p = pod(`uid-publish-${testCount}`);
    const attacher = plugin.newAttacher();
    await attacher.attach(spec, NODE);
    const staging = await attacher.getDeviceMountPath(spec);
    await plugin.newDeviceMounter().mountDevice(spec, '', staging, { seLinuxLabel: '' });
    const mounter = plugin.newMounter(spec, p);
    await driver.fault('NodePublishVolume', { code, failNext: 1 });

    const err = await rejection(mounter.setUp({ desiredSize: null, seLinuxLabel: '' }));

    expect(isCsiRpcError(err) || isCsiRpcError(err.cause)).toBe(true);
    expect(isUncertainProgressError(err)).toBe(uncertain);
    expect(await exists(join(dirname(mounter.getPath()), 'vol_data.json'))).toBe(kept);
    expect(await exists(dirname(mounter.getPath()))).toBe(kept);

    if (kept) await plugin.newUnmounter(`pv-${vol}`, podUID(p.metadata.uid ?? '')).tearDown();
    expect(await exists(dirname(mounter.getPath()))).toBe(false);
    await plugin.newDeviceUnmounter().unmountDevice(staging);
    await plugin.newDetacher().detach(plugin.getVolumeName(spec), NODE);
  });

  it('keeps vol_data.json after a failed NodeUnpublishVolume or NodeUnstageVolume and removes it after the retry', async () => {
    const plugin = newPlugin();
    const vol = 'vol-unfail';
    const spec = pvSpec(vol);
    const p = pod('uid-unfail');
    const up = await setUpVolume(plugin, spec, p);
    const unmounter = plugin.newUnmounter(`pv-${vol}`, podUID('uid-unfail'));

    await driver.fault('NodeUnpublishVolume', { code: 'INTERNAL', failNext: 1 });
    const unpublishErr = await rejection(unmounter.tearDown());
    expect(unpublishErr.message).toBe('kubernetes.io/csi: Unmounter.TearDownAt failed: rpc error: code = Internal desc = injected fault: INTERNAL');
    expect(isUncertainProgressError(unpublishErr)).toBe(false);
    expect(await exists(join(dirname(up.target), 'vol_data.json'))).toBe(true);
    await unmounter.tearDown();
    expect(await exists(dirname(up.target))).toBe(false);

    await driver.fault('NodeUnstageVolume', { code: 'UNAVAILABLE', failNext: 1 });
    const unstageErr = await rejection(plugin.newDeviceUnmounter().unmountDevice(up.staging));
    expect(unstageErr.message).toBe('kubernetes.io/csi: attacher.UnmountDevice failed: rpc error: code = Unavailable desc = injected fault: UNAVAILABLE');
    // Only NodeStage/NodePublish are classified; the executor marks the device uncertain on any UnmountDevice error.
    expect(isUncertainProgressError(unstageErr)).toBe(false);
    expect(isCsiRpcError(unstageErr.cause)).toBe(true);
    expect(await exists(join(dirname(up.staging), 'vol_data.json'))).toBe(true);
    await plugin.newDeviceUnmounter().unmountDevice(up.staging);
    expect(await exists(dirname(up.staging))).toBe(false);

    await plugin.newDetacher().detach(plugin.getVolumeName(spec), NODE);
  });

  it('reconstructs the spec of a published volume from its pod directory', async () => {
    const plugin = newPlugin();
    const vol = 'vol-reconstruct';
    const spec = pvSpec(vol);
    const p = pod('uid-reconstruct');
    const up = await setUpVolume(plugin, spec, p);

    // A restarted agent: a new plugin instance that knows nothing in memory.
    const restarted = newPlugin();
    const rebuilt = await restarted.constructVolumeSpec(`pv-${vol}`, dirname(up.target));

    expect(rebuilt.seLinuxMountContext).toBe('');
    expect(rebuilt.spec.persistentVolume?.metadata.name).toBe(`pv-${vol}`);
    expect(rebuilt.spec.persistentVolume?.spec.csi).toEqual({ driver: DRIVER, volumeHandle: vol });
    expect(restarted.getVolumeName(rebuilt.spec)).toBe(plugin.getVolumeName(spec));
    expect(await restarted.newAttacher().getDeviceMountPath(rebuilt.spec)).toBe(up.staging);
    // The publish context comes back from the staging vol_data.json, so WaitForAttach succeeds.
    expect(await restarted.newAttacher().waitForAttach(rebuilt.spec, '', p, 1_000)).toBe(attachmentName(vol, DRIVER, NODE));
    expect(restarted.newMounter(rebuilt.spec, p).getPath()).toBe(up.target);

    await tearDownVolume(restarted, rebuilt.spec, p, up);
    expect(await driver.methods(LIFECYCLE)).toEqual(LIFECYCLE);
  });

  const reconstructionCases: { name: string; file: string | null; want: (s: Spec) => void; error?: string }[] = [
    {
      name: 'an Ephemeral vol_data.json gives an inline CSI volume',
      file: JSON.stringify({ specVolID: 'scratch', volumeHandle: makeVolumeHandle('uid-r', 'scratch'), driverName: DRIVER, volumeLifecycleMode: 'Ephemeral', seLinuxMountContext: 'system_u:object_r:container_file_t:s0' }),
      want: (s) => {
        expect(s.volume).toEqual({ name: 'scratch', csi: { driver: DRIVER } });
      },
    },
    {
      name: 'a Persistent vol_data.json gives a PV with spec.csi',
      file: JSON.stringify({ specVolID: 'pv-x', volumeHandle: 'x', driverName: DRIVER, volumeLifecycleMode: 'Persistent' }),
      want: (s) => {
        expect(s.persistentVolume?.spec).toEqual({ csi: { driver: DRIVER, volumeHandle: 'x' }, volumeMode: 'Filesystem' });
      },
    },
    { name: 'a missing vol_data.json fails reconstruction', file: null, want: () => undefined, error: 'failed to open volume data file' },
    { name: 'a corrupt vol_data.json fails reconstruction', file: '{"specVolID": "pv-x", ', want: () => undefined, error: 'failed to parse volume data file' },
    {
      name: 'a vol_data.json without a volume handle fails reconstruction',
      file: JSON.stringify({ specVolID: 'pv-x', driverName: DRIVER }),
      want: () => undefined,
      error: 'specVolID, driverName and volumeHandle are required',
    },
  ];

  it.each(reconstructionCases)('$name', async ({ file, want, error }) => {
    const plugin = newPlugin();
    const volumeDir = podVolumeDir(root, 'uid-r', 'scratch');
    await mkdir(volumeDir, { recursive: true });
    if (file !== null) await writeFile(join(volumeDir, 'vol_data.json'), file);

    const result = plugin.constructVolumeSpec('scratch', volumeDir);

    if (error !== undefined) {
      const err = await rejection(result);
      expect(err.message).toContain(`kubernetes.io/csi: plugin.ConstructVolumeSpec failed loading volume data using [${volumeDir}]`);
      expect(err.message).toContain(error);
      return;
    }
    const rebuilt = await result;
    want(rebuilt.spec);
    expect(rebuilt.seLinuxMountContext).toBe((JSON.parse(file ?? '{}') as { seLinuxMountContext?: string }).seLinuxMountContext ?? '');
  });

  it('gives the transient "not registered" error until the driver registers through plugins_registry, then works', async () => {
    const unregistered = new CsiDriverRegistry({ clock: realClock, callTimeoutMs: 20_000 });
    const plugin = newPlugin({ registry: unregistered });
    const vol = 'vol-late-driver';
    const spec = pvSpec(vol);
    const p = pod('uid-late');
    const attacher = plugin.newAttacher();
    const staging = await attacher.getDeviceMountPath(spec);
    const notFound = 'driver name csi-loop.volumescope.dev not found in the list of registered CSI drivers';

    const attempts: [string, Promise<unknown>][] = [
      ['attacher.Attach failed to create newCsiDriverClient', attacher.attach(spec, NODE)],
      ['attacher.MountDevice failed to create newCsiDriverClient', plugin.newDeviceMounter().mountDevice(spec, '', staging, { seLinuxLabel: '' })],
      ['mounter.SetUpAt failed to get CSI client', plugin.newMounter(spec, p).setUp({ desiredSize: null, seLinuxLabel: '' })],
    ];
    for (const [what, attempt] of attempts) {
      const err = await rejection(attempt);
      expect(isTransientOperationFailure(err)).toBe(true);
      expect(err.message).toBe(`kubernetes.io/csi: ${what}: ${notFound}`);
    }
    expect(await driver.methods()).toEqual([]);
    expect(plugin.canDeviceMount(spec)).toBe(true);

    // The driver's registration socket is picked up from the watched directory.
    const watcher = new PluginWatcher({ dir: driver.registrationDir ?? '', registry: unregistered, clock: realClock, resyncMs: 100 });
    try {
      await watcher.start();
      await unregistered.whenRegistered(DRIVER);
      const up = await setUpVolume(plugin, spec, p);
      await tearDownVolume(plugin, spec, p, up);
    } finally {
      await watcher.stop();
      unregistered.close();
    }
    expect(await driver.methods(LIFECYCLE)).toEqual(LIFECYCLE);
  });

  it('verifies attachments with one ListVolumes call and reports a volume the node lost as detached', async () => {
    const plugin = newPlugin();
    const specs = ['vol-verify-1', 'vol-verify-2', 'vol-verify-3'].map((v) => pvSpec(v));
    const [s1, s2, s3] = specs as [Spec, Spec, Spec];
    const attacher = plugin.newAttacher();
    for (const s of specs) await attacher.attach(s, NODE);
    await driver.clearCalls();

    const before = await attacher.volumesAreAttached(specs, NODE);
    expect([...before.entries()].map(([s, v]) => [s.persistentVolume?.metadata.name, v])).toEqual([
      ['pv-vol-verify-1', true],
      ['pv-vol-verify-2', true],
      ['pv-vol-verify-3', true],
    ]);
    expect(await driver.methods()).toEqual(['ListVolumes']);

    // The node "terminated" for vol-verify-2: the driver no longer lists this node for it.
    await driver.yank('vol-verify-2');
    await driver.clearCalls();
    const after = await attacher.volumesAreAttached(specs, NODE);
    expect([after.get(s1), after.get(s2), after.get(s3)]).toEqual([true, false, true]);
    expect(await driver.methods()).toEqual(['ListVolumes']);

    // Pagination: one page per volume, the same answer.
    await driver.clearCalls();
    const paged = await newPlugin({ listVolumesPageSize: 1 }).newAttacher().volumesAreAttached(specs, NODE);
    expect([paged.get(s1), paged.get(s2), paged.get(s3)]).toEqual([true, false, true]);
    const listCalls = (await driver.methods()).filter((m) => m === 'ListVolumes').length;
    expect(listCalls).toBe(Object.keys((await driver.state()).volumes).length);

    for (const s of specs) await plugin.newDetacher().detach(plugin.getVolumeName(s), NODE);
  });

  it('expands a published volume through NodeExpandVolume with the required bytes', async () => {
    const plugin = newPlugin();
    const vol = 'vol-expand';
    const spec = pvSpec(vol);
    const p = pod('uid-expand');
    const up = await setUpVolume(plugin, spec, p);
    const client = registry.client(DRIVER);
    const totalBefore = (await client.nodeGetVolumeStats({ volume_id: vol, volume_path: up.target })).usage[0]?.total ?? 0;
    expect(plugin.requiresFSResize()).toBe(true);
    expect(plugin.requiresFSResize(spec)).toBe(true);
    await driver.clearCalls();

    const done = await plugin.nodeExpand({ volumeSpec: spec, devicePath: '', deviceMountPath: up.target, deviceStagePath: up.staging, newSize: 96 * MiB, oldSize: 64 * MiB });

    expect(done).toBe(true);
    expect((await driver.calls()).filter((c) => c.method === 'NodeExpandVolume').map((c) => [c.volumeId, c.code])).toEqual([[vol, 'OK']]);
    const request = driver.logLines('NodeExpandVolume').at(-1)?.['request'] as { capacity_range?: { required_bytes?: number }; volume_path?: string; staging_target_path?: string };
    expect(request.capacity_range?.required_bytes).toBe(96 * MiB);
    // The driver stages, so the volume path is the staging path.
    expect(request.volume_path).toBe(up.staging);
    expect(request.staging_target_path).toBe(up.staging);
    expect((await driver.state()).volumes[vol]?.capacityBytes).toBe(96 * MiB);
    if (driverPrivileged) {
      const totalAfter = (await client.nodeGetVolumeStats({ volume_id: vol, volume_path: up.target })).usage[0]?.total ?? 0;
      expect(totalAfter).toBeGreaterThan(totalBefore);
    }

    await tearDownVolume(plugin, spec, p, up);
  });

  const expandFailures: { name: string; code: string; check: (err: unknown) => boolean }[] = [
    { name: 'FailedPrecondition from NodeExpandVolume is a FailedPreconditionError', code: 'FAILED_PRECONDITION', check: isFailedPreconditionError },
    { name: 'Unimplemented from NodeExpandVolume is an OperationNotSupportedError', code: 'UNIMPLEMENTED', check: isOperationNotSupportedError },
    { name: 'Unavailable from NodeExpandVolume is a plain error (only NodeStage/NodePublish are uncertain)', code: 'UNAVAILABLE', check: (err) => !isUncertainProgressError(err) && isCsiRpcError((err as Error).cause) },
  ];

  it.each(expandFailures)('$name', async ({ code, check }) => {
    const plugin = newPlugin();
    const vol = `vol-expand-fail-${testCount}`;
    const spec = pvSpec(vol);
    const p = pod(`uid-expand-fail-${testCount}`);
    const up = await setUpVolume(plugin, spec, p);
    await driver.fault('NodeExpandVolume', { code, failNext: 1 });

    const err = await rejection(plugin.nodeExpand({ volumeSpec: spec, devicePath: '', deviceMountPath: up.target, deviceStagePath: up.staging, newSize: 80 * MiB, oldSize: 64 * MiB }));

    expect(check(err)).toBe(true);
    expect(err.message).toContain(`Expander.NodeExpand failed to expand the volume : rpc error: code = `);
    await tearDownVolume(plugin, spec, p, up);
  });

  it('resolves secrets for ControllerPublish, NodeStage and NodePublish and never logs their values', async () => {
    const plugin = newPlugin();
    const vol = 'vol-secrets';
    objects.addSecret('storage', 'creds', { password: 'p4ss-w0rd-value' });
    const ref = { name: 'creds', namespace: 'storage' };
    const spec = pvSpec(vol, { controllerPublishSecretRef: ref, nodeStageSecretRef: ref, nodePublishSecretRef: ref });
    const p = pod('uid-secrets');

    const up = await setUpVolume(plugin, spec, p);
    await tearDownVolume(plugin, spec, p, up);

    for (const method of ['ControllerPublishVolume', 'NodeStageVolume', 'NodePublishVolume']) {
      const request = driver.logLines(method).at(-1)?.['request'] as { secrets?: Record<string, string> };
      expect(request.secrets).toEqual({ password: STRIPPED });
    }
    const requestLog = registryLogger.lines.find((l) => l.includes('calling NodeStageVolume rpc'));
    expect(requestLog).toContain(`"secrets":{"password":"${STRIPPED}"}`);
    expect([...logger.lines, ...registryLogger.lines].join('\n')).not.toContain('p4ss-w0rd-value');
  });

  it('gives a transient error for a secret that does not exist, before touching the disk', async () => {
    const plugin = newPlugin();
    const vol = 'vol-missing-secret';
    const spec = pvSpec(vol, { nodeStageSecretRef: { name: 'absent', namespace: 'default' } });
    const attacher = plugin.newAttacher();
    await attacher.attach(spec, NODE);
    const staging = await attacher.getDeviceMountPath(spec);

    const err = await rejection(plugin.newDeviceMounter().mountDevice(spec, '', staging, { seLinuxLabel: '' }));

    expect(isTransientOperationFailure(err)).toBe(true);
    expect(err.message).toBe('fetching NodeStageSecretRef default/absent failed: secrets "absent" not found');
    expect(await exists(dirname(staging))).toBe(false);
    await plugin.newDetacher().detach(plugin.getVolumeName(spec), NODE);
  });

  it('publishes an inline ephemeral volume with the pod-derived handle only when the CSIDriver allows Ephemeral, and unpublishes it on TearDown', async () => {
    const plugin = newPlugin();
    const spec = inlineSpec('scratch');
    const p = pod('uid-inline');
    const mounter = plugin.newMounter(spec, p);
    const handle = makeVolumeHandle('uid-inline', 'scratch');

    const refused = await rejection(mounter.setUp({ desiredSize: null, seLinuxLabel: '' }));
    expect(isTransientOperationFailure(refused)).toBe(true);
    expect(refused.message).toBe(
      'kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: volume mode "Ephemeral" not supported by driver csi-loop.volumescope.dev (no CSIDriver object)',
    );

    objects.addCSIDriver(DRIVER, { volumeLifecycleModes: ['Persistent', 'Ephemeral'], podInfoOnMount: true });
    // csi-loop creates the ephemeral volume on this publish: no attach, no stage, no staging path.
    await mounter.setUp({ desiredSize: null, seLinuxLabel: '' });
    expect(await driverMounted(mounter.getPath())).toBe(true);
    const request = driver.logLines('NodePublishVolume').at(-1)?.['request'] as { volume_context?: Record<string, string>; staging_target_path?: string };
    expect(request.volume_context).toMatchObject({ 'csi.storage.k8s.io/pod.uid': 'uid-inline', 'csi.storage.k8s.io/ephemeral': 'true', size: '16Mi' });
    expect(request.staging_target_path ?? '').toBe('');
    expect(await readJson(join(dirname(mounter.getPath()), 'vol_data.json'))).toMatchObject({ volumeHandle: handle, volumeLifecycleMode: 'Ephemeral' });

    await plugin.newUnmounter('scratch', podUID('uid-inline')).tearDown();

    expect((await driver.calls()).filter((c) => c.volumeId !== undefined).map((c) => `${c.method} ${c.volumeId} ${c.code}`)).toEqual([
      `NodePublishVolume ${handle} OK`,
      `NodeUnpublishVolume ${handle} OK`,
    ]);
    expect(await exists(dirname(mounter.getPath()))).toBe(false);
    expect((await driver.state()).volumes[handle]).toBeUndefined();
  });

  const capabilityCases: { name: string; spec: () => Spec; csiDriver?: { attachRequired?: boolean }; attach: boolean; deviceMount: boolean }[] = [
    { name: 'a PV without a CSIDriver object is attachable and device-mountable', spec: () => pvSpec('x'), attach: true, deviceMount: true },
    { name: 'a PV whose CSIDriver says attachRequired: true is attachable', spec: () => pvSpec('x'), csiDriver: { attachRequired: true }, attach: true, deviceMount: true },
    { name: 'a PV whose CSIDriver says attachRequired: false is not attachable', spec: () => pvSpec('x'), csiDriver: { attachRequired: false }, attach: false, deviceMount: true },
    { name: 'an inline ephemeral volume is neither attachable nor device-mountable', spec: () => inlineSpec('scratch'), attach: false, deviceMount: false },
    {
      name: 'a PV of a driver that is not registered counts as device-mountable',
      spec: () => specFromPersistentVolume({ metadata: { name: 'pv-y' }, spec: { csi: { driver: 'other.example.com', volumeHandle: 'y' } } }),
      attach: true,
      deviceMount: true,
    },
  ];

  it.each(capabilityCases)('$name', ({ spec, csiDriver, attach, deviceMount }) => {
    if (csiDriver !== undefined) objects.addCSIDriver(DRIVER, csiDriver);
    const plugin = newPlugin();
    expect(plugin.canSupport(spec())).toBe(true);
    expect(plugin.canAttach(spec())).toBe(attach);
    expect(plugin.canDeviceMount(spec())).toBe(deviceMount);
  });

  it('names PV volumes <driver>^<handle> and refuses a spec-only name for inline volumes', () => {
    const plugin = newPlugin();
    expect(plugin.getVolumeName(pvSpec('h-1'))).toBe(`${DRIVER}^h-1`);
    expect(() => plugin.getVolumeName(inlineSpec('scratch'))).toThrow('kubernetes.io/csi: plugin.GetVolumeName failed to extract volume source from spec');
    expect(plugin.canSupport(specFromPersistentVolume({ metadata: { name: 'pv-hp' }, spec: { hostPath: { path: '/x' } } }))).toBe(false);
  });

  it('treats UnmountDevice of a path without vol_data.json as done, without calling the driver', async () => {
    const plugin = newPlugin();
    await plugin.newDeviceUnmounter().unmountDevice(join(root, 'plugins', 'kubernetes.io', 'csi', DRIVER, 'nothing', 'globalmount'));
    expect(await driver.methods()).toEqual([]);
  });
});

/** The plugin as its attacher/mounter see it, with some context methods replaced (a driver misbehaving in one way). */
function withContext(plugin: CsiPlugin, overrides: Partial<CsiPluginContext>): CsiPluginContext {
  return Object.assign(Object.create(plugin) as CsiPlugin, overrides);
}

/** A context whose `n`-th NodeGetCapabilities probe fails with DeadlineExceeded; the others reach the driver. */
function probeFailsOnCall(plugin: CsiPlugin, n: number): CsiPluginContext {
  let calls = 0;
  return withContext(plugin, {
    nodeCapabilities: (driverName) =>
      ++calls === n ? Promise.reject(new CsiRpcError('NodeGetCapabilities', GrpcStatus.DEADLINE_EXCEEDED, 'context deadline exceeded')) : plugin.nodeCapabilities(driverName),
  });
}

/** A context whose driver answers OK to `method` without doing anything (the path stays mounted). */
function lyingDriver(plugin: CsiPlugin, method: 'nodeUnpublishVolume' | 'nodeUnstageVolume'): CsiPluginContext {
  const liar = Object.assign(Object.create(registry.client(DRIVER)) as CsiClient, { [method]: () => Promise.resolve() });
  return withContext(plugin, { client: () => liar });
}

const ATTACHER_OPTS = { listVolumesPageSize: 100, supportsSELinuxContextMount: (): boolean => false };
const MOUNTER_OPTS = { supportsSELinuxContextMount: (): boolean => false };

describe(`kubernetes.io/csi error semantics as upstream (${driverMode})`, () => {
  it('MountDevice: a failed STAGE_UNSTAGE_VOLUME probe is final and writes nothing, so no uncertain device lacks its vol_data.json', async () => {
    const plugin = newPlugin();
    const vol = 'vol-probe-stage';
    const spec = pvSpec(vol);
    const attacher = plugin.newAttacher();
    await attacher.attach(spec, NODE);
    const staging = await attacher.getDeviceMountPath(spec);
    await driver.fault('NodeGetCapabilities', { code: 'UNAVAILABLE', failNext: 1 });

    const err = await rejection(plugin.newDeviceMounter().mountDevice(spec, '', staging, { seLinuxLabel: '' }));

    expect(err.message).toBe('kubernetes.io/csi: attacher.MountDevice failed to check for STAGE_UNSTAGE_VOLUME capability: rpc error: code = Unavailable desc = injected fault: UNAVAILABLE');
    expect(isUncertainProgressError(err)).toBe(false);
    expect(isOperationFinishedError(err)).toBe(true);
    expect(await exists(dirname(staging))).toBe(false);
    expect(await driver.methods()).not.toContain('NodeStageVolume');
    await plugin.newDetacher().detach(plugin.getVolumeName(spec), NODE);
  });

  it('SetUpAt: a failed STAGE_UNSTAGE_VOLUME probe is final and writes nothing, so no uncertain mount lacks its vol_data.json', async () => {
    const plugin = newPlugin();
    const vol = 'vol-probe-publish';
    const spec = pvSpec(vol);
    const p = pod('uid-probe-publish');
    await plugin.newAttacher().attach(spec, NODE);
    const mounter = plugin.newMounter(spec, p);
    await driver.fault('NodeGetCapabilities', { hang: true, failNext: 1 });

    const err = await rejection(newPlugin({ callTimeoutMs: 500 }).newMounter(spec, p).setUp({ desiredSize: null, seLinuxLabel: '' }));

    expect(err.message).toBe('kubernetes.io/csi: mounter.SetUpAt failed to check for STAGE_UNSTAGE_VOLUME capability: rpc error: code = DeadlineExceeded desc = context deadline exceeded');
    expect(isUncertainProgressError(err)).toBe(false);
    expect(isOperationFinishedError(err)).toBe(true);
    expect(await exists(dirname(mounter.getPath()))).toBe(false);
    await plugin.newDetacher().detach(plugin.getVolumeName(spec), NODE);
  });

  it('MountDevice: a failed VOLUME_MOUNT_GROUP probe is transient and keeps the staging vol_data.json', async () => {
    const plugin = newPlugin();
    const vol = 'vol-probe-group-stage';
    const spec = pvSpec(vol);
    const attacher = plugin.newAttacher();
    await attacher.attach(spec, NODE);
    const staging = await attacher.getDeviceMountPath(spec);

    const err = await rejection(new CsiAttacher(probeFailsOnCall(plugin, 2), ATTACHER_OPTS).mountDevice(spec, '', staging, { seLinuxLabel: '', fsGroup: 2000 }));

    expect(err.message).toBe(
      'kubernetes.io/csi: attacher.MountDevice failed to determine if the node service has VOLUME_MOUNT_GROUP capability: rpc error: code = DeadlineExceeded desc = context deadline exceeded',
    );
    expect(isTransientOperationFailure(err)).toBe(true);
    expect(await readJson(join(dirname(staging), 'vol_data.json'))).toMatchObject({ volumeHandle: vol, driverName: DRIVER });
    expect(await driver.methods()).not.toContain('NodeStageVolume');

    await plugin.newDeviceUnmounter().unmountDevice(staging);
    expect(await exists(dirname(staging))).toBe(false);
    await plugin.newDetacher().detach(plugin.getVolumeName(spec), NODE);
  });

  it('SetUpAt: a failed VOLUME_MOUNT_GROUP probe is transient, for persistent and inline volumes, and writes no vol_data.json', async () => {
    const plugin = newPlugin();
    const vol = 'vol-probe-group-publish';
    const spec = pvSpec(vol);
    const p = pod('uid-probe-group');
    const attacher = plugin.newAttacher();
    await attacher.attach(spec, NODE);
    const staging = await attacher.getDeviceMountPath(spec);
    await plugin.newDeviceMounter().mountDevice(spec, '', staging, { seLinuxLabel: '' });
    const want = 'kubernetes.io/csi: mounter.SetUpAt failed to determine if the node service has VOLUME_MOUNT_GROUP capability: ';

    const pvErr = await rejection(new CsiMounter(probeFailsOnCall(plugin, 2), spec, p, MOUNTER_OPTS).setUp({ desiredSize: null, seLinuxLabel: '', fsGroup: 2000 }));
    expect(pvErr.message).toBe(`${want}rpc error: code = DeadlineExceeded desc = context deadline exceeded`);
    expect(isTransientOperationFailure(pvErr)).toBe(true);
    expect(await exists(podVolumeDir(root, 'uid-probe-group', `pv-${vol}`))).toBe(false);

    // An inline volume has no STAGE_UNSTAGE_VOLUME probe: its only probe is this one.
    objects.addCSIDriver(DRIVER, { volumeLifecycleModes: ['Persistent', 'Ephemeral'] });
    await driver.fault('NodeGetCapabilities', { code: 'UNAVAILABLE', failNext: 1 });
    const inlineErr = await rejection(plugin.newMounter(inlineSpec('scratch'), p).setUp({ desiredSize: null, seLinuxLabel: '' }));
    expect(inlineErr.message).toBe(`${want}rpc error: code = Unavailable desc = injected fault: UNAVAILABLE`);
    expect(isTransientOperationFailure(inlineErr)).toBe(true);
    expect(await exists(podVolumeDir(root, 'uid-probe-group', 'scratch'))).toBe(false);
    expect(await driver.methods()).not.toContain('NodePublishVolume');

    await plugin.newDeviceUnmounter().unmountDevice(staging);
    await plugin.newDetacher().detach(plugin.getVolumeName(spec), NODE);
  });

  const vaFailures: { name: string; reader: VolumeAttachmentReader; detail: string; waitTransient: boolean }[] = [
    {
      name: 'a VolumeAttachment GET error',
      reader: { getVolumeAttachment: () => Promise.reject(new Error('etcdserver: request timed out')) },
      detail: 'etcdserver: request timed out',
      waitTransient: true,
    },
    {
      name: 'a VolumeAttachment reporting an attach error',
      reader: { getVolumeAttachment: () => Promise.resolve({ attached: false, attachmentMetadata: {}, attachError: 'rpc error: code = Internal desc = no such disk' }) },
      detail: 'rpc error: code = Internal desc = no such disk',
      waitTransient: false,
    },
  ];

  it.each(vaFailures)('getPublishContext: $name is transient in MountDevice and SetUpAt and writes nothing', async ({ reader, detail, waitTransient }) => {
    const plugin = newPlugin({ volumeAttachments: reader });
    const vol = `vol-va-${testCount}`;
    const spec = pvSpec(vol);
    const p = pod(`uid-va-${testCount}`);
    const staging = await plugin.newAttacher().getDeviceMountPath(spec);

    // WaitForAttach: a GET error is transient too; an attach error is the attacher's (final) answer.
    const waitErr = await rejection(plugin.newAttacher().waitForAttach(spec, '', p, 1_000));
    expect(waitErr.message).toContain(detail);
    expect(isTransientOperationFailure(waitErr)).toBe(waitTransient);

    const stageErr = await rejection(plugin.newDeviceMounter().mountDevice(spec, '', staging, { seLinuxLabel: '' }));
    expect(isTransientOperationFailure(stageErr)).toBe(true);
    expect(stageErr.message).toContain(detail);
    expect(await exists(dirname(staging))).toBe(false);

    const mounter = plugin.newMounter(spec, p);
    const publishErr = await rejection(mounter.setUp({ desiredSize: null, seLinuxLabel: '' }));
    expect(isTransientOperationFailure(publishErr)).toBe(true);
    expect(publishErr.message).toContain('kubernetes.io/csi: mounter.SetUpAt failed to fetch publishContext: ');
    expect(publishErr.message).toContain(detail);
    expect(await exists(dirname(mounter.getPath()))).toBe(false);
    expect(await driver.methods()).not.toContain('NodeStageVolume');
  });

  it('TearDownAt: a target still mounted after a successful NodeUnpublishVolume is not an error (removeMountDir keeps it)', async () => {
    const plugin = newPlugin();
    const vol = 'vol-still-published';
    const spec = pvSpec(vol);
    const p = pod('uid-still-published');
    const up = await setUpVolume(plugin, spec, p);

    await new CsiUnmounter(lyingDriver(plugin, 'nodeUnpublishVolume'), `pv-${vol}`, podUID('uid-still-published')).tearDown();

    expect(await driverMounted(up.target)).toBe(true);
    expect(await exists(join(dirname(up.target), 'vol_data.json'))).toBe(true);
    expect(logger.lines.some((l) => l.includes(`Unmounter.TearDownAt left [${up.target}] in place: it is still mounted`))).toBe(true);
    // The mount still references the staging path, so UnmountDevice stays blocked by the reference check.
    expect(await plugin.getDeviceMountRefs(up.staging)).toEqual([up.target]);

    await tearDownVolume(plugin, spec, p, up);
  });

  it('TearDownAt after a kill during a write of vol_data.json: the writer\'s leftover temp file goes with the volume dir; a stray file keeps vol_data.json, so the retry after it is gone succeeds', async () => {
    // Arrange: a published volume whose pod volume dir holds what a SIGKILL between the temp
    // file's creation and its rename leaves (the durable writer's `.vol_data.json.<hex>.tmp`).
    const plugin = newPlugin();
    const vol = 'vol-leftover-tmp';
    const spec = pvSpec(vol);
    const p = pod('uid-leftover-tmp');
    const up = await setUpVolume(plugin, spec, p);
    const volDir = dirname(up.target);
    await writeFile(join(volDir, '.vol_data.json.0123456789ab.tmp'), '{"specVolID":');

    // Act
    await plugin.newUnmounter(`pv-${vol}`, podUID('uid-leftover-tmp')).tearDown();

    // Assert
    expect(await exists(volDir)).toBe(false);

    // Arrange: the same with a file that is not the plugin's.
    const p2 = pod('uid-stray-file');
    const up2 = await setUpVolume(plugin, spec, p2);
    const volDir2 = dirname(up2.target);
    await writeFile(join(volDir2, 'notes.txt'), 'an operator was here');

    // Act
    const err = await rejection(plugin.newUnmounter(`pv-${vol}`, podUID('uid-stray-file')).tearDown());

    // Assert: refused before vol_data.json went; once the file is gone the retry finishes.
    expect(err.message).toContain(`Unmounter.TearDownAt failed to clean mount dir [${up2.target}]: refusing to remove ${volDir2}: it is not empty (notes.txt is neither mount nor vol_data.json; vol_data.json is kept)`);
    expect(await exists(join(volDir2, 'vol_data.json'))).toBe(true);
    await rm(join(volDir2, 'notes.txt'));
    await plugin.newUnmounter(`pv-${vol}`, podUID('uid-stray-file')).tearDown();
    expect(await exists(volDir2)).toBe(false);

    await plugin.newDeviceUnmounter().unmountDevice(up2.staging);
    await plugin.newDetacher().detach(plugin.getVolumeName(spec), NODE);
  });

  it('UnmountDevice: a staging path still mounted after a successful NodeUnstageVolume is not an error (removeMountDir keeps it)', async () => {
    const plugin = newPlugin();
    const vol = 'vol-still-staged';
    const spec = pvSpec(vol);
    const p = pod('uid-still-staged');
    const up = await setUpVolume(plugin, spec, p);
    await plugin.newUnmounter(`pv-${vol}`, podUID('uid-still-staged')).tearDown();

    await new CsiAttacher(lyingDriver(plugin, 'nodeUnstageVolume'), ATTACHER_OPTS).unmountDevice(up.staging);

    expect(await driverMounted(up.staging)).toBe(true);
    expect(await exists(join(dirname(up.staging), 'vol_data.json'))).toBe(true);
    expect(logger.lines.some((l) => l.includes(`attacher.UnmountDevice left [${up.staging}] in place: it is still mounted`))).toBe(true);

    await plugin.newDeviceUnmounter().unmountDevice(up.staging);
    expect(await exists(dirname(up.staging))).toBe(false);
    await plugin.newDetacher().detach(plugin.getVolumeName(spec), NODE);
  });

  it('CanDeviceMount: every persistent volume is device-mountable whatever the driver stages or whether it registered, so its unique name never changes', () => {
    objects.addCSIDriver(DRIVER, { attachRequired: false });
    const spec = pvSpec('vol-names');
    const withoutStaging = Object.assign(Object.create(registry) as CsiDriverRegistry, {
      nodeCapabilities: (): ReadonlySet<NodeCapability> => new Set<NodeCapability>(['GET_VOLUME_STATS']),
    });
    const unregistered = new CsiDriverRegistry({ clock: realClock });
    const plugins = [newPlugin(), newPlugin({ registry: withoutStaging }), newPlugin({ registry: unregistered })];

    for (const plugin of plugins) {
      const mgr = new VolumePluginMgr([plugin], null);
      // Not attachable (attachRequired: false): only device-mountability gives the spec-derived name.
      expect(isAttachableVolume(spec, mgr)).toBe(false);
      expect(isDeviceMountableVolume(spec, mgr)).toBe(true);
      expect(plugin.canDeviceMount(inlineSpec('scratch'))).toBe(false);
    }
    unregistered.close();
  });

  it('MountDevice of a driver without STAGE_UNSTAGE_VOLUME writes only vol_data.json; UnmountDevice removes it without calling the driver', async () => {
    const plugin = newPlugin();
    const vol = 'vol-no-stage';
    const spec = pvSpec(vol);
    const attacher = plugin.newAttacher();
    await attacher.attach(spec, NODE);
    const staging = await attacher.getDeviceMountPath(spec);
    const noStaging = withContext(plugin, { nodeCapabilities: () => Promise.resolve(new Set<NodeCapability>(['GET_VOLUME_STATS'])) });
    await driver.clearCalls();

    await new CsiAttacher(noStaging, ATTACHER_OPTS).mountDevice(spec, '', staging, { seLinuxLabel: '' });
    expect(await readJson(join(dirname(staging), 'vol_data.json'))).toMatchObject({ volumeHandle: vol, driverName: DRIVER });
    await new CsiAttacher(noStaging, ATTACHER_OPTS).unmountDevice(staging);

    expect(await exists(dirname(staging))).toBe(false);
    expect(await driver.methods()).toEqual([]);
    await plugin.newDetacher().detach(plugin.getVolumeName(spec), NODE);
  });
});

describe(`kubernetes.io/csi attach intents and reconstructDeviceVolumes (${driverMode})`, () => {
  const intentFile = (vol: string): string => join(root, 'plugins', 'kubernetes.io', 'csi', '_attach-intents', `${attachmentName(vol, DRIVER, NODE)}.json`);

  it('Attach records the attach intent durably before ControllerPublishVolume; Detach removes it only after ControllerUnpublishVolume', async () => {
    const plugin = newPlugin();
    const vol = 'vol-intent';
    const spec = pvSpec(vol, { controllerPublishSecretRef: { name: 'publish-secret', namespace: 'ns1' } });
    objects.addSecret('ns1', 'publish-secret', { token: 's3cret' });

    await duringCall('ControllerPublishVolume', vol, () => plugin.newAttacher().attach(spec, NODE), async () => {
      expect(await readJson(intentFile(vol))).toEqual({
        driverName: DRIVER,
        volumeHandle: vol,
        nodeName: NODE,
        controllerPublishSecretName: 'publish-secret',
        controllerPublishSecretNamespace: 'ns1',
      });
    });
    // Detached by a restarted agent: the secret reference comes from the record.
    const restarted = newPlugin();
    await duringCall('ControllerUnpublishVolume', vol, () => restarted.newDetacher().detach(restarted.getVolumeName(spec), NODE), async () => {
      expect(await exists(intentFile(vol))).toBe(true);
    });

    expect(await exists(intentFile(vol))).toBe(false);
    const request = driver.logLines('ControllerUnpublishVolume').at(-1)?.['request'] as { secrets?: Record<string, string> };
    expect(request.secrets).toEqual({ token: STRIPPED });
    expect((await driver.state()).volumes[vol]?.publishedNodes).toEqual({});
  });

  it('Attach does not call ControllerPublishVolume when the attach intent cannot be recorded', async () => {
    const plugin = newPlugin();
    const vol = 'vol-intent-fails';
    await mkdir(join(root, 'plugins', 'kubernetes.io', 'csi'), { recursive: true });
    await writeFile(join(root, 'plugins', 'kubernetes.io', 'csi', '_attach-intents'), 'not a directory');

    const err = await rejection(plugin.newAttacher().attach(pvSpec(vol), NODE));

    expect(err.message).toContain(`kubernetes.io/csi: attacher.Attach failed to record the attach of volume [${vol}]: failed to save attach intent file ${intentFile(vol)}`);
    expect(await driver.methods(['ControllerPublishVolume'])).toEqual([]);
  });

  it('after a restart lists a staged volume as attached and an attach intent with nothing staged as uncertain, and nothing once both are unstaged and detached', async () => {
    const before = newPlugin();
    const staged = 'vol-staged';
    const attachedOnly = 'vol-attached-only';
    const attacher = before.newAttacher();
    await attacher.attach(pvSpec(staged), NODE);
    const staging = await attacher.getDeviceMountPath(pvSpec(staged));
    await before.newDeviceMounter().mountDevice(pvSpec(staged), '', staging, { seLinuxLabel: '' });
    await attacher.attach(pvSpec(attachedOnly), NODE);

    // A restarted agent: a new plugin with no memory of either attachment.
    const plugin = newPlugin();
    const found = await plugin.reconstructDeviceVolumes();

    expect(found.map((v) => ({ name: plugin.getVolumeName(v.spec), deviceMountPath: v.deviceMountPath, attachState: v.attachState }))).toEqual([
      { name: `${DRIVER}^${staged}`, deviceMountPath: staging, attachState: 'attached' },
      { name: `${DRIVER}^${attachedOnly}`, deviceMountPath: '', attachState: 'uncertain' },
    ]);
    expect(plugin.canAttach(found[0]?.spec ?? pvSpec('x')) && plugin.canDeviceMount(found[0]?.spec ?? pvSpec('x'))).toBe(true);
    // With the attach/detach controller only the staging dir counts: the controller detaches.
    const controllerMode = newPlugin({ volumeAttachments: { getVolumeAttachment: () => Promise.resolve(undefined) } });
    expect((await controllerMode.reconstructDeviceVolumes()).map((v) => v.attachState)).toEqual(['attached']);

    // The reconciler's path for them: UnmountDevice, then Detach (no publish context in memory).
    await plugin.newDeviceUnmounter().unmountDevice(staging);
    await plugin.newDetacher().detach(`${DRIVER}^${staged}`, NODE);
    await plugin.newDetacher().detach(`${DRIVER}^${attachedOnly}`, NODE);

    expect(await plugin.reconstructDeviceVolumes()).toEqual([]);
    const volumes = (await driver.state()).volumes;
    expect([volumes[staged]?.publishedNodes, volumes[attachedOnly]?.publishedNodes]).toEqual([{}, {}]);
  });

  it('skips, with a warning, a staging vol_data.json that does not name its own path and an unreadable attach intent', async () => {
    const plugin = newPlugin();
    const csiDir = join(root, 'plugins', 'kubernetes.io', 'csi');
    const stray = join(csiDir, DRIVER, 'not-the-hash-of-the-handle');
    await mkdir(join(stray, 'globalmount'), { recursive: true });
    await writeFile(join(stray, 'vol_data.json'), JSON.stringify({ driverName: DRIVER, volumeHandle: 'vol-x' }));
    await mkdir(join(csiDir, '_attach-intents'), { recursive: true });
    await writeFile(intentFile('vol-y'), '{not json');
    await writeFile(join(csiDir, '_attach-intents', `${attachmentName('vol-z', DRIVER, NODE)}.json`), JSON.stringify({ driverName: DRIVER, volumeHandle: 'vol-other', nodeName: NODE }));

    expect(await plugin.reconstructDeviceVolumes()).toEqual([]);
    const warnings = logger.lines.filter((l) => l.includes('plugin.ReconstructDeviceVolumes skipped'));
    expect(warnings).toHaveLength(3);
    expect(warnings.join('\n')).toContain('does not name the driver and volume handle of this staging path');
    expect(warnings.join('\n')).toContain('does not name the attachment it is stored as');
  });
});
