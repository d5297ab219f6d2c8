import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../lib/clock/fake-clock.ts';
import { FakeApiServer } from '../../lib/sources/kube/testing/fake-apiserver.ts';
import { node } from '../../lib/sources/kube/testing/fixtures.ts';
import { fakeKubeConfig } from '../../lib/sources/kube/testing/kubeconfig-file.ts';
import type { JsonObject } from '../../lib/sources/kube/plain-json.ts';
import { discardLogger } from '../../lib/volume/logger.ts';
import { CsiNodeIdAnnotation, installDriverEntry, isCsiNodeInfoCollisionError, KubeCsiNodeInfo, nodeIdAnnotation } from './csi-node-info.ts';

// The real client against the fake API server as system:node:node-a (NodeRestriction on).
let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function setup() {
  const server = await FakeApiServer.start({ token: 't', nodeAuthorizer: 'node-a' });
  cleanups.push(() => server.close());
  const stored = server.put('nodes', node('node-a'));
  const nodeInfo = new KubeCsiNodeInfo({ kubeConfig: fakeKubeConfig({ server: server.url, token: 't' }), nodeName: 'node-a', clock: new FakeClock(), logger: discardLogger });
  const meta = (): JsonObject => (server.get('nodes', undefined, 'node-a')?.metadata ?? {}) as JsonObject;
  const drivers = (): unknown => (server.get('csinodes', undefined, 'node-a')?.spec as JsonObject | undefined)?.drivers;
  return { server, nodeInfo, nodeUid: (stored.metadata as JsonObject).uid, meta, drivers };
}

const info = { name: 'csi.example.com', nodeId: 'host-7', maxVolumesPerNode: 16, topology: { 'topology.example.com/zone': 'z1', 'topology.example.com/rack': 'r1' } };

describe('KubeCsiNodeInfo', () => {
  it('creates the CSINode owned by the Node with the driver entry, and sets the nodeid annotation and topology labels', async () => {
    const { server, nodeInfo, nodeUid, meta, drivers } = await setup();

    await nodeInfo.installDriver(info);

    expect(drivers()).toEqual([{ name: 'csi.example.com', nodeID: 'host-7', topologyKeys: ['topology.example.com/rack', 'topology.example.com/zone'], allocatable: { count: 16 } }]);
    expect((server.get('csinodes', undefined, 'node-a')?.metadata as JsonObject).ownerReferences).toEqual([{ apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: nodeUid }]);
    expect((meta().annotations as JsonObject)[CsiNodeIdAnnotation]).toBe('{"csi.example.com":"host-7"}');
    expect(meta().labels).toMatchObject({ 'topology.example.com/zone': 'z1', 'topology.example.com/rack': 'r1' });
  });

  it('writes nothing again for an unchanged driver, replaces a changed entry, and keeps other drivers', async () => {
    const { server, nodeInfo, drivers } = await setup();
    await nodeInfo.installDriver({ name: 'other.example.com', nodeId: 'n', maxVolumesPerNode: 0, topology: {} });
    await nodeInfo.installDriver(info);
    const writes = () => server.requests({ resource: 'csinodes', verb: 'update' }).length + server.requests({ resource: 'nodes', verb: 'patch' }).length;
    const before = writes();

    await nodeInfo.installDriver(info);
    expect(writes()).toBe(before);

    await nodeInfo.installDriver({ ...info, nodeId: 'host-8' });
    expect(drivers()).toEqual([
      { name: 'other.example.com', nodeID: 'n', topologyKeys: [] },
      { name: 'csi.example.com', nodeID: 'host-8', topologyKeys: ['topology.example.com/rack', 'topology.example.com/zone'], allocatable: { count: 16 } },
    ]);
  });

  it('uninstall removes the entry and the annotation; topology labels stay', async () => {
    const { nodeInfo, meta, drivers } = await setup();
    await nodeInfo.installDriver(info);

    await nodeInfo.uninstallDriver('csi.example.com');

    expect(drivers()).toEqual([]);
    expect(meta().annotations ?? {}).not.toHaveProperty(CsiNodeIdAnnotation);
    expect(meta().labels).toMatchObject({ 'topology.example.com/zone': 'z1' });
  });

  it('fails the install on a topology label collision', async () => {
    const { server, nodeInfo } = await setup();
    server.put('nodes', { ...node('node-a'), metadata: { name: 'node-a', labels: { 'topology.example.com/zone': 'z9' } } });

    const err: unknown = await nodeInfo.installDriver(info).catch((e: unknown) => e);
    expect(isCsiNodeInfoCollisionError(err)).toBe(true);
    expect(String(err)).toContain('detected topology value collision: driver reported "topology.example.com/zone":"z1" but existing label is "topology.example.com/zone":"z9"');
  });
});

describe('CSI node info helpers', () => {
  it('nodeIdAnnotation adds, keeps and removes one driver of the JSON map', () => {
    expect(nodeIdAnnotation(undefined, 'a', 'n1')).toBe('{"a":"n1"}');
    expect(nodeIdAnnotation('{"a":"n1"}', 'a', 'n1')).toBeNull();
    expect(nodeIdAnnotation('{"a":"n1"}', 'b', 'n2')).toBe('{"a":"n1","b":"n2"}');
    expect(nodeIdAnnotation('{"a":"n1","b":"n2"}', 'a', null)).toBe('{"b":"n2"}');
    expect(nodeIdAnnotation('{"b":"n2"}', 'a', null)).toBeNull();
  });

  it('installDriverEntry leaves out allocatable without a volume limit', () => {
    expect(installDriverEntry([], { name: 'd', nodeId: 'n', maxVolumesPerNode: 0, topology: {} })).toEqual([{ name: 'd', nodeID: 'n', topologyKeys: [] }]);
  });
});
