// One driver on two nodes: the controller instance (node-a, the harness's driver) and a node
// instance for node-b on the same state dir, as scripts/cluster runs agent-0 and kubelet-0. A
// volume provisioned and attached through the controller is staged and published on node-b;
// staging follows the access modes (one node at a time); the disk is detached with the last node.
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { codeOf } from './csi-test-client.ts';
import { harnessPerTest, MiB, MODE, MOUNT_CAP, NODE, PRIVILEGED, type Harness, type NodeInstance, type VolumeEntry } from './csi-test-harness.ts';
import { loopDevicesOf } from './host-tools.ts';

const { FAILED_PRECONDITION, NOT_FOUND } = status;

const start = harnessPerTest();
const ROX_CAP = { ...MOUNT_CAP, access_mode: { mode: 'MULTI_NODE_READER_ONLY' } };

async function createVolume(h: Harness, name: string, capability: object = MOUNT_CAP): Promise<void> {
  await h.client.controller('CreateVolume', { name, capacity_range: { required_bytes: 16 * MiB }, volume_capabilities: [capability] });
}

function stageOn(node: NodeInstance, volumeId: string, capability: object = MOUNT_CAP): Promise<unknown> {
  return node.client.node('NodeStageVolume', { volume_id: volumeId, staging_target_path: node.staging(volumeId), volume_capability: capability });
}

function unstageOn(node: NodeInstance, volumeId: string): Promise<unknown> {
  return node.client.node('NodeUnstageVolume', { volume_id: volumeId, staging_target_path: node.staging(volumeId) });
}

async function publishedNodes(h: Harness, volumeId: string): Promise<string[]> {
  const listed = await h.client.controller<{ entries: VolumeEntry[] }>('ListVolumes');
  return listed.entries.find((e) => e.volume.volume_id === volumeId)?.status.published_node_ids ?? [];
}

/** The loop devices of the volume's image (privileged), or whether the disk directory is recorded as attached (unprivileged). */
async function attachment(h: Harness, volumeId: string): Promise<string[]> {
  return PRIVILEGED ? loopDevicesOf(await h.image(volumeId)) : (await publishedNodes(h, volumeId)).length > 0 ? ['attached'] : [];
}

describe(`csi-loop on two nodes sharing one state dir (${MODE} mode)`, () => {
  it('stages and publishes on node-b a volume provisioned and attached through the controller instance', async () => {
    const h = await start();
    const b = await h.addNode('node-b');
    const vol = 'pvc-on-b';
    await createVolume(h, vol);

    // The controller (node-a's instance) attaches for node-b: one driver, one backend.
    const published = await h.publishController(vol, { node_id: 'node-b' });
    expect(published.publish_context.devicePath ?? '').not.toBe('');
    expect(await publishedNodes(h, vol)).toEqual(['node-b']);
    expect(await b.client.node('NodeGetInfo')).toMatchObject({ node_id: 'node-b' });

    await fs.mkdir(b.staging(vol), { recursive: true });
    await stageOn(b, vol);
    await b.client.node('NodePublishVolume', { volume_id: vol, staging_target_path: b.staging(vol), target_path: b.target(vol), volume_capability: MOUNT_CAP });
    await fs.writeFile(path.join(b.target(vol), 'hello.txt'), 'written on node-b');
    expect(await fs.readFile(path.join(b.staging(vol), 'hello.txt'), 'utf8')).toBe('written on node-b');
    if (PRIVILEGED) {
      expect(await h.mountsUnderDir()).toEqual(expect.arrayContaining([b.staging(vol), b.target(vol)]));
    }
    // node-a's instance sees the volume staged on node-b, not here.
    expect((await codeOf(h.stage(vol))).code).toBe(FAILED_PRECONDITION);
    expect((await codeOf(h.client.node('NodeGetVolumeStats', { volume_id: vol, volume_path: b.target(vol) }))).code).toBe(NOT_FOUND);
    const stats = await b.client.node<{ usage: { unit: string }[] }>('NodeGetVolumeStats', { volume_id: vol, volume_path: b.target(vol) });
    expect(stats.usage.map((u) => u.unit)).toEqual(['BYTES', 'INODES']);
    // Detaching node-b while the volume is staged there is refused, as on a single node.
    const early = await codeOf(h.unpublishController(vol, 'node-b'));
    expect(early.code).toBe(FAILED_PRECONDITION);
    expect(early.details).toContain('on node node-b');

    await b.client.node('NodeUnpublishVolume', { volume_id: vol, target_path: b.target(vol) });
    await unstageOn(b, vol);
    await h.unpublishController(vol, 'node-b');
    expect(await attachment(h, vol)).toEqual([]);
    expect(await h.mountsUnderDir()).toEqual([]);
    await h.client.controller('DeleteVolume', { volume_id: vol });
    expect(await h.client.controller<{ entries: VolumeEntry[] }>('ListVolumes')).toMatchObject({ entries: [] });
  });

  it('keeps a ReadWriteOnce volume on one node: a second node is refused at ControllerPublishVolume', async () => {
    const h = await start();
    await h.addNode('node-b');
    const vol = 'pvc-rwo';
    await createVolume(h, vol);
    await h.publishController(vol, { node_id: 'node-b' });
    const second = await codeOf(h.publishController(vol));
    expect(second.code).toBe(FAILED_PRECONDITION);
    expect(second.details).toContain('already published to node node-b');
    await h.unpublishController(vol, 'node-b');
  });

  it('stages a multi-node volume on one node at a time and detaches it with the last node', async () => {
    const h = await start();
    const b = await h.addNode('node-b');
    const vol = 'pvc-rox';
    await createVolume(h, vol, ROX_CAP);
    await h.publishController(vol, { node_id: 'node-b', volume_capability: ROX_CAP });
    await h.publishController(vol, { volume_capability: ROX_CAP });
    expect(await publishedNodes(h, vol)).toEqual([NODE, 'node-b']);

    await fs.mkdir(b.staging(vol), { recursive: true });
    await fs.mkdir(h.staging(vol), { recursive: true });
    await stageOn(b, vol, ROX_CAP);
    const onA = await codeOf(h.stage(vol, { volume_capability: ROX_CAP }));
    expect(onA.code).toBe(FAILED_PRECONDITION);
    expect(onA.details).toContain('already staged on node node-b');
    // An unstage on the other node is not this node's business: OK, nothing changes.
    await h.unstage(vol);
    expect((await codeOf(h.stage(vol, { volume_capability: ROX_CAP }))).code).toBe(FAILED_PRECONDITION);

    await unstageOn(b, vol);
    await h.stage(vol, { volume_capability: ROX_CAP });
    // node-b goes away: node-a still has the volume staged, so the attachment stays.
    await h.unpublishController(vol, 'node-b');
    expect(await attachment(h, vol)).toHaveLength(1);
    expect(await publishedNodes(h, vol)).toEqual([NODE]);
    await h.unstage(vol);
    await h.unpublishController(vol);
    expect(await attachment(h, vol)).toEqual([]);
  });

  it('with --strict knows the nodes served on the state dir and no other', async () => {
    const h = await start({ strict: true });
    await h.addNode('node-b');
    const vol = 'pvc-strict';
    await createVolume(h, vol);
    expect((await h.publishController(vol, { node_id: 'node-b' })).publish_context.devicePath ?? '').not.toBe('');
    await h.unpublishController(vol, 'node-b');
    const unknown = await codeOf(h.publishController(vol, { node_id: 'node-x' }));
    expect(unknown.code).toBe(NOT_FOUND);
    expect(unknown.details).toContain('node-a, node-b');
  });
});
