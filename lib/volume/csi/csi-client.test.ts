// The CSI client against the real csi-loop driver (a child process) over its unix socket:
// every RPC round trip, the client's own deadline, the gRPC code classification table, transport
// errors, and secrets kept out of errors and logs.
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { realClock } from '../../clock/clock.ts';
import { isUncertainProgressError } from '../errors.ts';
import { CsiClient, DEADLINE_EXCEEDED_DETAILS, unixEndpoint } from './csi-client.ts';
import { classifyCsiError, CsiRpcError, isCsiRpcError, isFinalCsiError } from './csi-errors.ts';
import { pluginCapabilityNames, rpcCapabilityTypes, type VolumeCapability } from './csi-types.ts';
import { STRIPPED } from './redact.ts';
import { CsiLoopProcess, driverMode, driverPrivileged } from './testing/csi-loop-process.ts';
import { DRIVER, finishSuite, finishTestDir, RecordingLogger, suiteDir, testDir } from './testing/fixtures.ts';

const NODE_ID = 'csi-node-a';
const CAP: VolumeCapability = { mount: { fs_type: 'ext4', mount_flags: [] }, access_mode: { mode: 'SINGLE_NODE_WRITER' } };

let suite: string;
let driver: CsiLoopProcess;
let client: CsiClient;
let dir: string;
let testCount = 0;

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error('expected the call to fail, but it succeeded');
    },
    (err: unknown) => err,
  );
}

beforeAll(async () => {
  suite = await suiteDir('volumescope-csi-client-');
  driver = await CsiLoopProcess.start({ dir: join(suite, 'driver'), nodeId: NODE_ID });
  client = new CsiClient(driver.endpoint, { clock: realClock, timeoutMs: 10_000 });
});

afterAll(async () => {
  client.close();
  await finishSuite(driver, suite);
});

afterEach(async () => {
  await driver.clearFaults();
  // Nothing may be left attached or mounted by a test.
  expect(await finishTestDir(driver, dir)).toEqual({ loopDevices: [], mounts: [] });
});

async function newTestDir(): Promise<string> {
  dir = await testDir(suite, `t${++testCount}`);
  return dir;
}

describe(`CsiClient against csi-loop (${driverMode})`, () => {
  it('round-trips every RPC of the client in lifecycle order', async () => {
    const root = await newTestDir();
    const staging = join(root, 'plugins', 'globalmount');
    const target = join(root, 'pods', 'uid-1', 'volumes', 'v', 'mount');
    const vol = 'client-roundtrip';
    await driver.clearCalls();

    // Each step: the call, then what its answer must show.
    const steps: { name: string; run: () => Promise<unknown> }[] = [
      { name: 'GetPluginInfo names the driver', run: async () => { expect((await client.getPluginInfo()).name).toBe(DRIVER); } },
      {
        name: 'GetPluginCapabilities offers the controller service and online expansion',
        run: async () => { expect(pluginCapabilityNames(await client.getPluginCapabilities())).toEqual(['CONTROLLER_SERVICE', 'VOLUME_EXPANSION_ONLINE']); },
      },
      { name: 'Probe is ready', run: async () => { expect((await client.probe()).ready).toEqual({ value: true }); } },
      { name: 'NodeGetInfo returns the node id', run: async () => { expect(await client.nodeGetInfo()).toMatchObject({ node_id: NODE_ID, max_volumes_per_node: 0 }); } },
      {
        name: 'NodeGetCapabilities lists stage, expand and stats',
        run: async () => { expect(rpcCapabilityTypes(await client.nodeGetCapabilities())).toEqual(['STAGE_UNSTAGE_VOLUME', 'EXPAND_VOLUME', 'GET_VOLUME_STATS', 'VOLUME_CONDITION']); },
      },
      {
        name: 'ControllerGetCapabilities lists create/delete, publish, list (with published nodes), capacity, expand and get',
        run: async () => { expect(rpcCapabilityTypes(await client.controllerGetCapabilities())).toEqual([
            'CREATE_DELETE_VOLUME',
            'PUBLISH_UNPUBLISH_VOLUME',
            'LIST_VOLUMES',
            'GET_CAPACITY',
            'EXPAND_VOLUME',
            'LIST_VOLUMES_PUBLISHED_NODES',
            'GET_VOLUME',
          ]); },
      },
      {
        name: 'ControllerPublishVolume returns a publish context with the device path',
        run: async () => {
          const resp = await client.controllerPublishVolume({ volume_id: vol, node_id: NODE_ID, volume_capability: CAP, readonly: false, volume_context: { capacity: '32Mi' } });
          expect(resp.publish_context['devicePath']).toMatch(driverPrivileged ? /^\/dev\/loop[0-9]+$/ : /disks/);
        },
      },
      {
        name: 'ListVolumes reports the volume published to this node',
        run: async () => {
          const entries = await client.listAllVolumes();
          const entry = entries.find((e) => e.volume?.volume_id === vol);
          expect(entry?.volume?.capacity_bytes).toBe(32 * 2 ** 20);
          expect(entry?.status?.published_node_ids).toEqual([NODE_ID]);
        },
      },
      { name: 'ControllerGetVolume reports the same', run: async () => { expect((await client.controllerGetVolume(vol)).status?.published_node_ids).toEqual([NODE_ID]); } },
      { name: 'NodeStageVolume stages', run: () => client.nodeStageVolume({ volume_id: vol, staging_target_path: staging, volume_capability: CAP }) },
      {
        name: 'NodePublishVolume publishes',
        run: () => client.nodePublishVolume({ volume_id: vol, staging_target_path: staging, target_path: target, volume_capability: CAP, readonly: false }),
      },
      {
        name: 'NodeGetVolumeStats reports byte and inode usage',
        run: async () => {
          const stats = await client.nodeGetVolumeStats({ volume_id: vol, volume_path: target });
          expect(stats.usage.map((u) => u.unit)).toEqual(['BYTES', 'INODES']);
          expect(stats.usage[0]?.total).toBeGreaterThan(0);
        },
      },
      {
        name: 'NodeExpandVolume grows the volume to the required bytes',
        run: async () => {
          const resp = await client.nodeExpandVolume({ volume_id: vol, volume_path: staging, staging_target_path: staging, capacity_range: { required_bytes: 48 * 2 ** 20 } });
          expect(resp.capacity_bytes).toBe(48 * 2 ** 20);
        },
      },
      { name: 'NodeUnpublishVolume unpublishes', run: () => client.nodeUnpublishVolume({ volume_id: vol, target_path: target }) },
      { name: 'NodeUnstageVolume unstages', run: () => client.nodeUnstageVolume({ volume_id: vol, staging_target_path: staging }) },
      { name: 'ControllerUnpublishVolume detaches', run: () => client.controllerUnpublishVolume({ volume_id: vol, node_id: NODE_ID }) },
    ];
    for (const step of steps) {
      await step.run().catch((err: unknown) => {
        throw new Error(`step "${step.name}" failed: ${String(err)}`, { cause: err });
      });
    }

    const calls = await driver.calls();
    expect(calls.map((c) => `${c.method} ${c.code}`)).toEqual(
      [
        'GetPluginInfo',
        'GetPluginCapabilities',
        'Probe',
        'NodeGetInfo',
        'NodeGetCapabilities',
        'ControllerGetCapabilities',
        'ControllerPublishVolume',
        'ListVolumes',
        'ControllerGetVolume',
        'NodeStageVolume',
        'NodePublishVolume',
        'NodeGetVolumeStats',
        'NodeExpandVolume',
        'NodeUnpublishVolume',
        'NodeUnstageVolume',
        'ControllerUnpublishVolume',
      ].map((m) => `${m} OK`),
    );
    // The published_node_ids no longer list this node.
    expect((await client.controllerGetVolume(vol)).status?.published_node_ids).toEqual([]);
  });

  it('turns an expired deadline into DeadlineExceeded, which is uncertain', async () => {
    await newTestDir();
    await driver.fault('Probe', { hang: true, failNext: 1 });
    const started = performance.now();

    const err = await rejection(client.probe({ timeoutMs: 200 }));

    expect(performance.now() - started).toBeLessThan(5_000);
    expect(err).toBeInstanceOf(CsiRpcError);
    expect(err).toMatchObject({ code: status.DEADLINE_EXCEEDED, codeName: 'DeadlineExceeded', details: DEADLINE_EXCEEDED_DETAILS });
    expect((err as Error).message).toBe('rpc error: code = DeadlineExceeded desc = context deadline exceeded');
    expect(isFinalCsiError(err)).toBe(false);
    expect(isUncertainProgressError(classifyCsiError(err))).toBe(true);
    // The driver saw the call end when the client gave up.
    const probe = (await driver.calls()).filter((c) => c.method === 'Probe').at(-1);
    expect(['DEADLINE_EXCEEDED', 'CANCELLED']).toContain(probe?.code);
  });

  // Injected by the driver's control API, answered over real gRPC.
  const codes: { code: keyof typeof status; goName: string; final: boolean }[] = [
    { code: 'CANCELLED', goName: 'Canceled', final: false },
    { code: 'UNKNOWN', goName: 'Unknown', final: true },
    { code: 'INVALID_ARGUMENT', goName: 'InvalidArgument', final: true },
    { code: 'DEADLINE_EXCEEDED', goName: 'DeadlineExceeded', final: false },
    { code: 'NOT_FOUND', goName: 'NotFound', final: true },
    { code: 'ALREADY_EXISTS', goName: 'AlreadyExists', final: true },
    { code: 'PERMISSION_DENIED', goName: 'PermissionDenied', final: true },
    { code: 'RESOURCE_EXHAUSTED', goName: 'ResourceExhausted', final: false },
    { code: 'FAILED_PRECONDITION', goName: 'FailedPrecondition', final: true },
    { code: 'ABORTED', goName: 'Aborted', final: false },
    { code: 'OUT_OF_RANGE', goName: 'OutOfRange', final: true },
    { code: 'UNIMPLEMENTED', goName: 'Unimplemented', final: true },
    { code: 'INTERNAL', goName: 'Internal', final: true },
    { code: 'UNAVAILABLE', goName: 'Unavailable', final: false },
    { code: 'DATA_LOSS', goName: 'DataLoss', final: true },
    { code: 'UNAUTHENTICATED', goName: 'Unauthenticated', final: true },
  ];

  it.each(codes)('classifies $code as $goName, final=$final', async ({ code, goName, final }) => {
    await newTestDir();
    await driver.fault('NodeGetInfo', { code, failNext: 1 });

    const err = await rejection(client.nodeGetInfo());

    expect(isCsiRpcError(err) && err.code).toBe(status[code]);
    expect((err as Error).message).toBe(`rpc error: code = ${goName} desc = injected fault: ${code}`);
    expect(isFinalCsiError(err)).toBe(final);
    expect(isUncertainProgressError(classifyCsiError(err))).toBe(!final);
  });

  it('treats a socket nobody listens on as Unavailable, which is uncertain', async () => {
    const root = await newTestDir();
    const nobody = new CsiClient(join(root, 'nobody.sock'), { clock: realClock, timeoutMs: 5_000 });
    try {
      const err = await rejection(nobody.probe());
      expect(err).toMatchObject({ code: status.UNAVAILABLE });
      expect(isFinalCsiError(err)).toBe(false);
    } finally {
      nobody.close();
    }
  });

  it('keeps secret values out of error messages and logs, also when the driver echoes them', async () => {
    const root = await newTestDir();
    const logger = new RecordingLogger();
    const secretClient = new CsiClient(driver.endpoint, { clock: realClock, timeoutMs: 10_000, logger });
    const password = 'hunter2-very-secret';
    await driver.fault('NodeStageVolume', { code: 'INTERNAL', message: `cannot log in with password ${password}`, failNext: 1 });
    try {
      const err = await rejection(
        secretClient.nodeStageVolume({
          volume_id: 'client-secret',
          staging_target_path: join(root, 'staging'),
          volume_capability: CAP,
          secrets: { password },
        }),
      );
      expect((err as Error).message).toBe(`rpc error: code = Internal desc = cannot log in with password ${STRIPPED}`);
      expect(logger.lines.some((l) => l.includes('calling NodeStageVolume rpc') && l.includes(`"password":"${STRIPPED}"`))).toBe(true);
      expect(logger.lines.join('\n')).not.toContain(password);
    } finally {
      secretClient.close();
    }
  });

  it.each([
    { name: 'an absolute path becomes a unix:// endpoint', input: '/run/csi.sock', want: 'unix:///run/csi.sock' },
    { name: 'a unix:// endpoint stays as it is', input: 'unix:///run/csi.sock', want: 'unix:///run/csi.sock' },
  ])('$name', async ({ input, want }) => {
    await newTestDir();
    expect(unixEndpoint(input)).toBe(want);
  });

  it('refuses a relative socket path', async () => {
    await newTestDir();
    expect(() => unixEndpoint('csi.sock')).toThrow('is neither unix://<path> nor an absolute socket path');
  });
});
