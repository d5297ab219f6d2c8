// The registry's CSINode hook (csi-node-info.ts): installed after NodeGetInfo and before the
// driver counts as registered, a failed install fails the registration, a deregistration
// uninstalls. Drivers are in-process fake gRPC servers.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock/fake-clock.ts';
import { CsiDriverRegistry } from './csi-driver-registry.ts';
import type { CsiNodeDriverInfo, CsiNodeInfoManager } from './csi-node-info.ts';
import { FakeCsiServer, handshakeHandlers } from './testing/fake-csi-server.ts';
import { RecordingLogger } from './testing/fixtures.ts';

const NAME = 'topo.example.com';

/** Records calls; `failInstall` makes installs reject. */
class RecordingNodeInfo implements CsiNodeInfoManager {
  readonly installed: CsiNodeDriverInfo[] = [];
  readonly uninstalled: string[] = [];
  registeredDuringInstall: boolean | null = null;
  failInstall: string | null = null;
  constructor(private readonly registry: () => CsiDriverRegistry) {}

  installDriver(info: CsiNodeDriverInfo): Promise<void> {
    this.registeredDuringInstall = this.registry().isRegistered(info.name);
    if (this.failInstall !== null) return Promise.reject(new Error(this.failInstall));
    this.installed.push(info);
    return Promise.resolve();
  }

  uninstallDriver(name: string): Promise<void> {
    this.uninstalled.push(name);
    return Promise.resolve();
  }
}

let dir: string;
let registry: CsiDriverRegistry;
let nodeInfo: RecordingNodeInfo;
let server: FakeCsiServer | null = null;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vs-csi-nodeinfo-'));
  nodeInfo = new RecordingNodeInfo(() => registry);
  registry = new CsiDriverRegistry({ clock: new FakeClock(1_000), logger: new RecordingLogger(), callTimeoutMs: 10_000, nodeInfo });
  server = await FakeCsiServer.start(join(dir, 'csi.sock'), {
    ...handshakeHandlers(NAME, 'node-7'),
    NodeGetInfo: () => ({ node_id: 'node-7', max_volumes_per_node: 16, accessible_topology: { segments: { 'topology.example.com/rack': 'r1' } } }),
  });
});

afterEach(async () => {
  registry.close();
  await server?.stop();
  server = null;
  await rm(dir, { recursive: true, force: true });
});

describe('CsiDriverRegistry with a CSI node info manager', () => {
  it('installs the driver with its NodeGetInfo answer before it counts as registered, and uninstalls it on deregistration', async () => {
    const socket = join(dir, 'reg.sock');
    await registry.registerPlugin(NAME, join(dir, 'csi.sock'), socket);

    expect(nodeInfo.installed).toEqual([{ name: NAME, nodeId: 'node-7', maxVolumesPerNode: 16, topology: { 'topology.example.com/rack': 'r1' } }]);
    expect(nodeInfo.registeredDuringInstall).toBe(false);
    expect(registry.isRegistered(NAME)).toBe(true);

    registry.deregisterPlugin(NAME, socket);
    expect(nodeInfo.uninstalled).toEqual([NAME]);
  });

  it('fails the registration when the install fails, and registers on the next attempt once it works', async () => {
    const socket = join(dir, 'reg.sock');
    nodeInfo.failInstall = 'nodes "node-7" not found';
    await expect(registry.registerPlugin(NAME, join(dir, 'csi.sock'), socket)).rejects.toThrow(/InstallCSIDriver \(CSINode update\) failed: nodes "node-7" not found/);
    expect(registry.isRegistered(NAME)).toBe(false);

    nodeInfo.failInstall = null;
    await registry.registerPlugin(NAME, join(dir, 'csi.sock'), socket);
    expect(registry.isRegistered(NAME)).toBe(true);
    expect(nodeInfo.installed.map((i) => i.nodeId)).toEqual(['node-7']);
  });

  it('does not uninstall a driver whose registration never completed', async () => {
    const socket = join(dir, 'reg.sock');
    nodeInfo.failInstall = 'API server unavailable';
    await expect(registry.registerPlugin(NAME, join(dir, 'csi.sock'), socket)).rejects.toThrow(/API server unavailable/);

    registry.deregisterPlugin(NAME, socket);
    expect(nodeInfo.uninstalled).toEqual([]);
  });
});
