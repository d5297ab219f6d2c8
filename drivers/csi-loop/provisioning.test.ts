// Dynamic provisioning and expansion of the csi-loop driver (CreateVolume, DeleteVolume,
// ValidateVolumeCapabilities, GetCapacity, ControllerExpandVolume, `--strict`), through a real
// grpc-js client on its unix socket, in the mode the machine allows (see csi-loop.test.ts).
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { codeOf, control } from './csi-test-client.ts';
import { harnessPerTest, MiB, MODE, MOUNT_CAP, NODE, PRIVILEGED, waitFor, type Harness, type VolumeEntry } from './csi-test-harness.ts';
import { lstatOrNull } from './host-tools.ts';

const { NOT_FOUND, ALREADY_EXISTS, FAILED_PRECONDITION, ABORTED, OUT_OF_RANGE, INVALID_ARGUMENT } = status;

const BLOCK_CAP = { block: {}, access_mode: { mode: 'SINGLE_NODE_WRITER' } };
const XFS_CAP = { mount: { fs_type: 'xfs', mount_flags: [] }, access_mode: { mode: 'SINGLE_NODE_WRITER' } };

interface CreatedVolume {
  volume: { volume_id: string; capacity_bytes: number; volume_context: Record<string, string>; accessible_topology: unknown[] };
}

interface Expanded {
  capacity_bytes: number;
  node_expansion_required: boolean;
}

type Stats = { usage: { unit: string; total: number }[] };

const start = harnessPerTest();

function createVolume(h: Harness, name: string, extra: object = {}): Promise<CreatedVolume> {
  return h.client.controller<CreatedVolume>('CreateVolume', {
    name,
    volume_capabilities: [MOUNT_CAP],
    capacity_range: { required_bytes: 32 * MiB },
    ...extra,
  });
}

function deleteVolume(h: Harness, volumeId: string): Promise<unknown> {
  return h.client.controller('DeleteVolume', { volume_id: volumeId });
}

function controllerExpand(h: Harness, volumeId: string, requiredBytes: number, extra: object = {}): Promise<Expanded> {
  return h.client.controller<Expanded>('ControllerExpandVolume', {
    volume_id: volumeId,
    capacity_range: { required_bytes: requiredBytes },
    volume_capability: MOUNT_CAP,
    ...extra,
  });
}

async function volumeIds(h: Harness): Promise<string[]> {
  return (await h.client.controller<{ entries: VolumeEntry[] }>('ListVolumes')).entries.map((e) => e.volume.volume_id);
}

/** Size of the image file (privileged), or whether the disk directory exists (unprivileged). */
async function diskOnHost(diskPath: string): Promise<number | 'directory' | 'missing'> {
  const stat = await lstatOrNull(diskPath);
  if (stat === null) return 'missing';
  return stat.isDirectory() ? 'directory' : stat.size;
}

function filesystemBytes(stats: Stats): number {
  return stats.usage.find((u) => u.unit === 'BYTES')?.total ?? 0;
}

describe(`csi-loop dynamic provisioning (${MODE} mode)`, () => {
  it('creates a volume named by the CO with the requested size rounded up to 4 KiB, finds it again by name, and lists it', async () => {
    const h = await start();
    const created = await createVolume(h, 'pvc-1', { parameters: { tier: 'fast' }, capacity_range: { required_bytes: 30 * MiB + 1 } });

    expect(created.volume).toEqual({ volume_id: 'pvc-1', capacity_bytes: 30 * MiB + 4096, volume_context: { tier: 'fast' }, accessible_topology: [] });
    expect(await diskOnHost(await h.image('pvc-1'))).toBe(PRIVILEGED ? 30 * MiB + 4096 : 'directory');
    // A repeated call (the provisioner retrying) finds the same volume.
    expect(await createVolume(h, 'pvc-1', { parameters: { tier: 'fast' }, capacity_range: { required_bytes: 30 * MiB + 1 } })).toEqual(created);
    // Neither field of the capacity range set: the 64Mi default.
    expect((await createVolume(h, 'pvc-2', { capacity_range: null })).volume.capacity_bytes).toBe(64 * MiB);
    expect(await volumeIds(h)).toEqual(['pvc-1', 'pvc-2']);
  });

  it.each([
    { name: 'no name', act: (h: Harness) => createVolume(h, ''), code: INVALID_ARGUMENT },
    { name: 'no volume capabilities', act: (h: Harness) => createVolume(h, 'v', { volume_capabilities: [] }), code: INVALID_ARGUMENT },
    { name: 'fs_type xfs', act: (h: Harness) => createVolume(h, 'v', { volume_capabilities: [XFS_CAP] }), code: INVALID_ARGUMENT },
    {
      name: 'a capability without access mode',
      act: (h: Harness) => createVolume(h, 'v', { volume_capabilities: [{ mount: {} }] }),
      code: INVALID_ARGUMENT,
    },
    {
      name: 'a content source (no snapshots, no clones)',
      act: (h: Harness) => createVolume(h, 'v', { volume_content_source: { volume: { volume_id: 'other' } } }),
      code: INVALID_ARGUMENT,
    },
    { name: 'mutable parameters', act: (h: Harness) => createVolume(h, 'v', { mutable_parameters: { iops: '100' } }), code: INVALID_ARGUMENT },
    {
      name: 'required_bytes above limit_bytes',
      act: (h: Harness) => createVolume(h, 'v', { capacity_range: { required_bytes: 64 * MiB, limit_bytes: 32 * MiB } }),
      code: INVALID_ARGUMENT,
    },
    {
      name: 'a limit below the 1 MiB minimum',
      act: (h: Harness) => createVolume(h, 'v', { capacity_range: { required_bytes: 0, limit_bytes: 512 * 1024 } }),
      code: OUT_OF_RANGE,
    },
    {
      name: 'a size beyond the filesystem that holds the disks',
      act: (h: Harness) => createVolume(h, 'v', { capacity_range: { required_bytes: 2 ** 52 } }),
      code: OUT_OF_RANGE,
    },
    {
      name: 'an existing name with a size outside the new range',
      arrange: (h: Harness) => createVolume(h, 'v'),
      act: (h: Harness) => createVolume(h, 'v', { capacity_range: { required_bytes: 64 * MiB, limit_bytes: 64 * MiB } }),
      code: ALREADY_EXISTS,
    },
    {
      name: 'an existing name with other parameters',
      arrange: (h: Harness) => createVolume(h, 'v', { parameters: { tier: 'fast' } }),
      act: (h: Harness) => createVolume(h, 'v', { parameters: { tier: 'slow' } }),
      code: ALREADY_EXISTS,
    },
    {
      name: 'the name of an ephemeral volume',
      arrange: (h: Harness) =>
        h.client.node('NodePublishVolume', {
          volume_id: 'v',
          target_path: h.target('v'),
          volume_capability: MOUNT_CAP,
          volume_context: { 'csi.storage.k8s.io/ephemeral': 'true' },
        }),
      act: (h: Harness) => createVolume(h, 'v'),
      code: ALREADY_EXISTS,
    },
  ])('refuses CreateVolume with $name', async ({ arrange, act, code }) => {
    const h = await start();
    await arrange?.(h);
    const before = await h.client.controller('ListVolumes');
    const result = await codeOf(act(h));
    expect(result.code).toBe(code);
    expect(result.details).not.toBe('');
    // The refused call changed nothing.
    expect(await h.client.controller('ListVolumes')).toEqual(before);
  });

  it('keeps a provisioned volume across a driver restart: CreateVolume finds it again, with its data', async () => {
    const h = await start();
    const vol = 'pvc-restart';
    const created = await createVolume(h, vol);
    await h.setUp(vol);
    await fs.writeFile(path.join(h.target(vol), 'data'), 'provisioned');
    await h.tearDown(vol);

    await h.restart();

    expect(await createVolume(h, vol)).toEqual(created);
    await h.setUp(vol);
    expect(await fs.readFile(path.join(h.target(vol), 'data'), 'utf8')).toBe('provisioned');
    await h.tearDown(vol);
  });

  it('deletes a volume and its disk once nothing uses it, refuses while it is in use, and is idempotent', async () => {
    const h = await start();
    const vol = 'pvc-delete';
    await deleteVolume(h, 'never-created');
    await createVolume(h, vol);
    const disk = await h.image(vol);
    await h.setUp(vol);

    const inUse = await codeOf(deleteVolume(h, vol));
    expect(inUse.code).toBe(FAILED_PRECONDITION);
    expect(inUse.details).toBe(
      `volume ${vol} is in use: controller-published to node ${NODE}, staged at ${h.staging(vol)}, published at ${h.target(vol)}`,
    );
    await h.unpublish(vol);
    await h.unstage(vol);
    expect((await codeOf(deleteVolume(h, vol))).details).toBe(`volume ${vol} is in use: controller-published to node ${NODE}`);
    await h.unpublishController(vol);

    await deleteVolume(h, vol);
    expect(await diskOnHost(disk)).toBe('missing');
    expect(await volumeIds(h)).toEqual([]);
    expect((await codeOf(h.client.controller('ControllerGetVolume', { volume_id: vol }))).code).toBe(NOT_FOUND);
    await deleteVolume(h, vol);
    // The deletion is durable.
    await h.restart();
    expect(await volumeIds(h)).toEqual([]);
  });

  it('confirms supported capabilities and explains unsupported ones in ValidateVolumeCapabilities', async () => {
    const h = await start();
    await createVolume(h, 'v', { parameters: { tier: 'fast' } });
    type Validated = { confirmed: { volume_capabilities: unknown[]; parameters: Record<string, string> } | null; message: string };
    const validate = (extra: object): Promise<Validated> =>
      h.client.controller<Validated>('ValidateVolumeCapabilities', { volume_id: 'v', volume_capabilities: [MOUNT_CAP, BLOCK_CAP], ...extra });

    const ok = await validate({ parameters: { tier: 'fast' } });
    expect(ok.confirmed?.volume_capabilities).toHaveLength(2);
    expect(ok.confirmed?.parameters).toEqual({ tier: 'fast' });
    expect(await validate({ volume_capabilities: [MOUNT_CAP, XFS_CAP] })).toEqual({ confirmed: null, message: 'fs_type xfs is not supported (only ext4)' });
    expect((await validate({ parameters: { tier: 'slow' } })).confirmed).toBeNull();
    expect((await codeOf(validate({ volume_id: '' }))).code).toBe(INVALID_ARGUMENT);
    expect((await codeOf(validate({ volume_capabilities: [] }))).code).toBe(INVALID_ARGUMENT);
    expect((await codeOf(validate({ volume_id: 'ghost' }))).code).toBe(NOT_FOUND);
  });

  it('reports the free space of the filesystem holding the disks as capacity, and none for unsupported capabilities', async () => {
    const h = await start();
    type Capacity = { available_capacity: number; maximum_volume_size: { value: number } | null; minimum_volume_size: { value: number } | null };
    const capacity = await h.client.controller<Capacity>('GetCapacity', { volume_capabilities: [MOUNT_CAP] });
    const stats = await fs.statfs(h.dir);

    expect(capacity.available_capacity).toBeGreaterThan(0);
    expect(capacity.maximum_volume_size?.value).toBe(stats.blocks * stats.bsize);
    expect(capacity.available_capacity).toBeLessThanOrEqual(capacity.maximum_volume_size?.value ?? 0);
    expect(capacity.minimum_volume_size?.value).toBe(MiB);
    expect((await h.client.controller<Capacity>('GetCapacity', { volume_capabilities: [XFS_CAP] })).available_capacity).toBe(0);
  });

  it('expands the disk in ControllerExpandVolume and the filesystem in the NodeExpandVolume that follows', async () => {
    const h = await start();
    const vol = 'pvc-expand';
    await createVolume(h, vol);
    await h.setUp(vol);
    await fs.writeFile(path.join(h.target(vol), 'data'), 'survives the resize');
    const stats = (): Promise<Stats> => h.client.node<Stats>('NodeGetVolumeStats', { volume_id: vol, volume_path: h.target(vol) });
    const before = filesystemBytes(await stats());

    expect(await controllerExpand(h, vol, 96 * MiB)).toEqual({ capacity_bytes: 96 * MiB, node_expansion_required: true });
    // Repeated, or asking for less: the current size, nothing changes.
    expect(await controllerExpand(h, vol, 96 * MiB)).toEqual({ capacity_bytes: 96 * MiB, node_expansion_required: true });
    expect(await controllerExpand(h, vol, 48 * MiB)).toEqual({ capacity_bytes: 96 * MiB, node_expansion_required: true });
    expect(await diskOnHost(await h.image(vol))).toBe(PRIVILEGED ? 96 * MiB : 'directory');
    // The controller side leaves the filesystem alone.
    expect(filesystemBytes(await stats())).toBe(before);

    // kubelet then asks for the size the PV now has, which the disk already has.
    const nodeExpanded = await h.client.node('NodeExpandVolume', {
      volume_id: vol,
      volume_path: h.target(vol),
      capacity_range: { required_bytes: 96 * MiB },
      volume_capability: MOUNT_CAP,
    });
    expect(nodeExpanded).toEqual({ capacity_bytes: 96 * MiB });
    if (PRIVILEGED) {
      expect(filesystemBytes(await stats())).toBeGreaterThan(before + 48 * MiB);
    }
    expect(await fs.readFile(path.join(h.target(vol), 'data'), 'utf8')).toBe('survives the resize');
    expect((await h.client.controller<VolumeEntry>('ControllerGetVolume', { volume_id: vol })).volume.capacity_bytes).toBe(96 * MiB);
    const state = (await control(h.port, 'GET', '/state')).body as { volumes: Record<string, { nodeExpansionPending: boolean }> };
    expect(state.volumes[vol]?.nodeExpansionPending).toBe(false);
    await h.tearDown(vol);
  });

  it('needs no node expansion for a block volume', async () => {
    const h = await start();
    await createVolume(h, 'raw', { volume_capabilities: [BLOCK_CAP] });
    expect(await controllerExpand(h, 'raw', 40 * MiB, { volume_capability: BLOCK_CAP })).toEqual({
      capacity_bytes: 40 * MiB,
      node_expansion_required: false,
    });
  });

  it.each([
    { name: 'no volume id', act: (h: Harness) => controllerExpand(h, '', 64 * MiB), code: INVALID_ARGUMENT },
    { name: 'no capacity range', act: (h: Harness) => controllerExpand(h, 'v', 0, { capacity_range: null }), code: INVALID_ARGUMENT },
    { name: 'an unknown volume', act: (h: Harness) => controllerExpand(h, 'ghost', 64 * MiB), code: NOT_FOUND },
    {
      name: 'a limit below the current size (no shrinking)',
      act: (h: Harness) => controllerExpand(h, 'v', 0, { capacity_range: { required_bytes: 0, limit_bytes: 16 * MiB } }),
      code: OUT_OF_RANGE,
    },
    { name: 'fs_type xfs', act: (h: Harness) => controllerExpand(h, 'v', 64 * MiB, { volume_capability: XFS_CAP }), code: INVALID_ARGUMENT },
  ])('refuses ControllerExpandVolume with $name', async ({ act, code }) => {
    const h = await start();
    await createVolume(h, 'v');
    expect((await codeOf(act(h))).code).toBe(code);
    expect((await h.client.controller<VolumeEntry>('ControllerGetVolume', { volume_id: 'v' })).volume.capacity_bytes).toBe(32 * MiB);
  });

  it('serialises CreateVolume by name: a concurrent one for the same name gets ABORTED', async () => {
    const h = await start();
    await h.fault('CreateVolume', { delayMs: 400, failNext: 1 });
    const slow = createVolume(h, 'pvc-busy');
    await waitFor(async () => ((await control(h.port, 'GET', '/state')).body as { inFlight: string[] }).inFlight.includes('pvc-busy'));

    expect(await codeOf(createVolume(h, 'pvc-busy'))).toEqual({ code: ABORTED, details: 'an operation with the given Volume ID pvc-busy already exists' });
    expect((await slow).volume.volume_id).toBe('pvc-busy');
  });
});

describe(`csi-loop --strict (${MODE} mode)`, () => {
  it('creates no volume in ControllerPublishVolume and knows no node but its own', async () => {
    const h = await start({ strict: true });
    const unknownVolume = await codeOf(h.publishController('pvc-static'));
    expect(unknownVolume).toEqual({ code: NOT_FOUND, details: 'volume pvc-static does not exist' });
    expect(await volumeIds(h)).toEqual([]);

    await createVolume(h, 'pvc-s');
    const otherNode = await codeOf(h.publishController('pvc-s', { node_id: 'node-b' }));
    expect(otherNode).toEqual({ code: NOT_FOUND, details: `node node-b not found: with --strict csi-loop knows only node(s) ${NODE}` });
    expect((await h.publishController('pvc-s')).publish_context.devicePath).not.toBe('');
    await h.unpublishController('pvc-s');
  });

  it('is off by default: ControllerPublishVolume creates an unknown volume and records another node', async () => {
    const h = await start();
    await h.publishController('pvc-static', { volume_capability: { ...MOUNT_CAP, access_mode: { mode: 'MULTI_NODE_MULTI_WRITER' } } });
    await h.publishController('pvc-static', { node_id: 'node-b', volume_capability: { ...MOUNT_CAP, access_mode: { mode: 'MULTI_NODE_MULTI_WRITER' } } });
    const listed = await h.client.controller<{ entries: VolumeEntry[] }>('ListVolumes');
    expect(listed.entries.map((e) => [e.volume.volume_id, e.status.published_node_ids])).toEqual([['pvc-static', ['node-a', 'node-b']]]);
    await h.unpublishController('pvc-static', 'node-b');
    await h.unpublishController('pvc-static');
  });
});
