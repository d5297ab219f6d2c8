/**
 * Test support for the csi-loop driver's own tests: a driver started in-process on a temp dir
 * (privileged backend with VOLUMESCOPE_MOUNT_NS=1 as root, else unprivileged), a CsiTestClient on
 * its socket, CO-style paths and call helpers, and a close() that also removes what a failed test
 * left mounted or attached.
 */
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import pino from 'pino';
import { afterEach, expect } from 'vitest';
import type { LogCalls } from './args.ts';
import { control, CsiTestClient } from './csi-test-client.ts';
import { startCsiLoopDriver, type RunningDriver } from './driver.ts';
import { loopDevicesOf, readMountPoints, run } from './host-tools.ts';

export const PRIVILEGED = process.env.VOLUMESCOPE_MOUNT_NS === '1' && process.getuid?.() === 0;
export const MODE = PRIVILEGED ? 'privileged' : 'unprivileged';
export const NODE = 'node-a';
export const MiB = 2 ** 20;

export interface HarnessOptions {
  /** Serve plugin registration too. */
  registration?: boolean;
  /** Start the driver with `--strict`. */
  strict?: boolean;
  /** Start the driver with `--log-calls`. */
  logCalls?: LogCalls;
}

export const MOUNT_CAP = { mount: { fs_type: 'ext4', mount_flags: [] }, access_mode: { mode: 'SINGLE_NODE_WRITER' } };

export interface CallEntry {
  seq: number;
  method: string;
  volumeId?: string;
  code: string;
  targetPath?: string;
  stagingPath?: string;
}

export interface VolumeEntry {
  volume: { volume_id: string; capacity_bytes: number };
  status: { published_node_ids: string[] };
}

/** A further node instance on a harness's state dir (see {@link Harness.addNode}). */
export interface NodeInstance {
  readonly nodeId: string;
  readonly driver: RunningDriver;
  readonly client: CsiTestClient;
  /** CO-style paths below this node's own kubelet dir. */
  staging(volumeId: string): string;
  target(volumeId: string, pod?: string): string;
}

export class Harness {
  client: CsiTestClient;
  private readonly nodes: NodeInstance[] = [];

  private constructor(
    readonly dir: string,
    public driver: RunningDriver,
    readonly logLines: string[],
    private readonly strict: boolean,
  ) {
    this.client = new CsiTestClient(driver.endpoint);
  }

  static async start(options: HarnessOptions = {}): Promise<Harness> {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'csi-loop-test-'));
    const logLines: string[] = [];
    const driver = await Harness.startDriver(dir, logLines, options);
    return new Harness(dir, driver, logLines, options.strict ?? false);
  }

  private static startDriver(dir: string, logLines: string[], options: HarnessOptions): Promise<RunningDriver> {
    const sink = new PassThrough();
    sink.on('data', (chunk: Buffer) => logLines.push(...chunk.toString('utf8').split('\n').filter((l) => l !== '')));
    return startCsiLoopDriver({
      socketPath: path.join(dir, 'csi.sock'),
      stateDir: path.join(dir, 'state'),
      driverName: 'csi-loop.volumescope.dev',
      nodeId: NODE,
      mode: MODE,
      controlPort: 0,
      ...(options.registration === true ? { registrationDir: path.join(dir, 'plugins_registry') } : {}),
      strict: options.strict ?? false,
      ...(options.logCalls === undefined ? {} : { logCalls: options.logCalls }),
      logger: pino(sink),
    });
  }

  /**
   * Starts another driver on this harness's state dir for node `nodeId` (own socket, no control
   * endpoint), as a node plugin of the same driver on another node; closed with the harness.
   */
  async addNode(nodeId: string): Promise<NodeInstance> {
    const driver = await startCsiLoopDriver({
      socketPath: path.join(this.dir, `csi-${nodeId}.sock`),
      stateDir: path.join(this.dir, 'state'),
      driverName: 'csi-loop.volumescope.dev',
      nodeId,
      mode: MODE,
      logger: pino(new PassThrough()),
    });
    const kubeletDir = path.join(this.dir, `kubelet-${nodeId}`);
    const node: NodeInstance = {
      nodeId,
      driver,
      client: new CsiTestClient(driver.endpoint),
      staging: (volumeId) => path.join(kubeletDir, 'plugins', volumeId, 'globalmount'),
      target: (volumeId, pod = 'pod-1') => path.join(kubeletDir, 'pods', pod, 'volumes', volumeId, 'mount'),
    };
    this.nodes.push(node);
    return node;
  }

  /** Stops the driver and starts a new one on the same state dir (a driver restart). */
  async restart(): Promise<void> {
    this.client.close();
    await this.driver.close();
    this.driver = await Harness.startDriver(this.dir, this.logLines, { strict: this.strict });
    this.client = new CsiTestClient(this.driver.endpoint);
  }

  get port(): number {
    const port = this.driver.controlPort;
    if (port === undefined) throw new Error('no control port');
    return port;
  }

  staging(volumeId: string): string {
    return path.join(this.dir, 'kubelet', 'plugins', volumeId, 'globalmount');
  }

  target(volumeId: string, pod = 'pod-1'): string {
    return path.join(this.dir, 'kubelet', 'pods', pod, 'volumes', volumeId, 'mount');
  }

  async image(volumeId: string): Promise<string> {
    const state = (await control(this.port, 'GET', '/state')).body as { volumes: Record<string, { diskPath: string }> };
    const record = state.volumes[volumeId];
    if (record === undefined) throw new Error(`no volume ${volumeId}`);
    return record.diskPath;
  }

  async calls(): Promise<CallEntry[]> {
    return (await control(this.port, 'GET', '/calls')).body as CallEntry[];
  }

  async fault(method: string, spec: object): Promise<void> {
    const res = await control(this.port, 'PUT', `/faults/${method}`, spec);
    expect(res.status).toBe(200);
  }

  publishController(volumeId: string, extra: object = {}): Promise<{ publish_context: Record<string, string> }> {
    return this.client.controller('ControllerPublishVolume', { volume_id: volumeId, node_id: NODE, volume_capability: MOUNT_CAP, ...extra });
  }

  stage(volumeId: string, extra: object = {}): Promise<unknown> {
    return this.client.node('NodeStageVolume', {
      volume_id: volumeId,
      staging_target_path: this.staging(volumeId),
      volume_capability: MOUNT_CAP,
      ...extra,
    });
  }

  publish(volumeId: string, extra: object = {}): Promise<unknown> {
    return this.client.node('NodePublishVolume', {
      volume_id: volumeId,
      staging_target_path: this.staging(volumeId),
      target_path: this.target(volumeId),
      volume_capability: MOUNT_CAP,
      ...extra,
    });
  }

  unpublish(volumeId: string, targetPath = this.target(volumeId)): Promise<unknown> {
    return this.client.node('NodeUnpublishVolume', { volume_id: volumeId, target_path: targetPath });
  }

  unstage(volumeId: string): Promise<unknown> {
    return this.client.node('NodeUnstageVolume', { volume_id: volumeId, staging_target_path: this.staging(volumeId) });
  }

  unpublishController(volumeId: string, nodeId = NODE): Promise<unknown> {
    return this.client.controller('ControllerUnpublishVolume', { volume_id: volumeId, node_id: nodeId });
  }

  /** ControllerPublish → NodeStage → NodePublish. */
  async setUp(volumeId: string): Promise<void> {
    await fs.mkdir(this.staging(volumeId), { recursive: true });
    await this.publishController(volumeId);
    await this.stage(volumeId);
    await this.publish(volumeId);
  }

  /** NodeUnpublish → NodeUnstage → ControllerUnpublish. */
  async tearDown(volumeId: string): Promise<void> {
    await this.unpublish(volumeId);
    await this.unstage(volumeId);
    await this.unpublishController(volumeId);
  }

  async mountsUnderDir(): Promise<string[]> {
    return (await readMountPoints()).filter((p) => p.startsWith(`${this.dir}/`));
  }

  /** Stops everything; in privileged mode also removes leftovers of a failed test, then the dir. */
  async close(): Promise<void> {
    for (const node of this.nodes.splice(0)) {
      node.client.close();
      await node.driver.close();
    }
    this.client.close();
    await this.driver.close();
    if (PRIVILEGED) {
      for (const mount of (await this.mountsUnderDir()).sort((a, b) => b.length - a.length)) {
        await run('umount', ['-l', mount]);
      }
      const images = path.join(this.dir, 'state', 'images');
      for (const image of await fs.readdir(images).catch(() => [])) {
        for (const device of await loopDevicesOf(path.join(images, image))) {
          await run('losetup', ['-d', device]);
        }
      }
    }
    await fs.rm(this.dir, { recursive: true, force: true });
  }
}

export async function waitFor(condition: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error('condition not met before the deadline');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * The `start` of a test file: starts a Harness for the current test and registers an afterEach
 * that closes it (one harness per test).
 */
export function harnessPerTest(): (options?: HarnessOptions) => Promise<Harness> {
  let current: Harness | undefined;
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
  return async (options = {}) => {
    current = await Harness.start(options);
    return current;
  };
}
