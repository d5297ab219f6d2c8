/**
 * What the torture campaigns share: a node made of the real CSI test driver (drivers/csi-loop)
 * and a real agent process (`agent/main.ts --source=manifest`) over one work directory, started
 * with the test helpers the integration tests use (lib/volume/csi/testing, agent/node/testing),
 * manifest writes, and the leak checks of a campaign's end.
 *
 * Layout below a node's `base`: `driver/` (socket, state, disk images), `root/` (the agent's
 * kubelet root), `manifests/` (its pod source). Mounts are real only inside a private mount
 * namespace (VOLUMESCOPE_MOUNT_NS=1, set by `scripts/torture/run.ts` as root); elsewhere the
 * agent and the driver run their unprivileged stand-ins, as in the tests.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Snapshot } from '../../lib/api/snapshot.ts';
import { CsiLoopProcess, driverPrivileged } from '../../lib/volume/csi/testing/csi-loop-process.ts';
import { AgentProcess, mountsBelow, standInMounter, type LogLine } from '../../agent/node/testing/agent-process.ts';
import { cleanUpTempDir, realMountsAllowed } from '../../lib/mount-utils/testing/mount-test-env.ts';
import { CSI_DRIVER_NAME, writeManifest, type KubeObject } from '../demo/manifests.ts';

export { CSI_DRIVER_NAME };

/** Resolves after `ms`; for polling loops and the churn's random pacing, never to wait for an outcome. */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A small deterministic PRNG (mulberry32), so a failing run can be replayed from its seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The `q`-quantile (0..1) of `values` (nearest rank); 0 for none. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? 0;
}

export interface NodeOptions {
  /** Directory the node owns; created. */
  base: string;
  nodeName: string;
  /** Flags added to every agent start (e.g. `--csi-timeout 1s`). */
  agentArgs?: readonly string[];
}

/** One node: the driver, the current agent process, their directories. */
export class TortureNode {
  agent: AgentProcess | null = null;
  /** Every agent process started on this node, oldest first (their logs outlive a kill). */
  private readonly agents: AgentProcess[] = [];
  private starts = 0;

  private constructor(
    readonly options: NodeOptions,
    readonly driver: CsiLoopProcess,
  ) {}

  get rootDir(): string {
    return join(this.options.base, 'root');
  }

  get manifestDir(): string {
    return join(this.options.base, 'manifests');
  }

  /** Starts the driver, writes the CSIDriver object, and starts the first agent. */
  static async start(options: NodeOptions): Promise<TortureNode> {
    await mkdir(join(options.base, 'manifests'), { recursive: true });
    const driver = await CsiLoopProcess.start({ dir: join(options.base, 'driver'), nodeId: options.nodeName });
    const node = new TortureNode(options, driver);
    try {
      await node.write('csidriver.yaml', [{ apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name: CSI_DRIVER_NAME }, spec: { attachRequired: true } }]);
      await node.startAgent();
    } catch (err) {
      await node.destroy();
      throw err;
    }
    return node;
  }

  /** The driver makes real loop devices and mounts (root, inside the private mount namespace). */
  get driverPrivileged(): boolean {
    return driverPrivileged;
  }

  /** How many agent processes were started on this node. */
  get agentStarts(): number {
    return this.starts;
  }

  /** Starts an agent over the node's directories and waits until the CSI driver is registered. */
  async startAgent(): Promise<AgentProcess> {
    this.starts++;
    const agent = await AgentProcess.start({
      rootDir: this.rootDir,
      manifestDir: this.manifestDir,
      nodeName: this.options.nodeName,
      extraArgs: ['--csi-driver', `${CSI_DRIVER_NAME}=${this.driver.socketPath}`, ...(this.options.agentArgs ?? [])],
    });
    this.agent = agent;
    this.agents.push(agent);
    await agent.waitForSnapshot('the CSI driver is registered', (s) => s.drivers.find((d) => d.name === CSI_DRIVER_NAME)?.registered, 30_000);
    return agent;
  }

  /** The log lines of every agent process of this node that match, in start order. */
  agentLogs(match: (line: LogLine) => boolean): LogLine[] {
    return this.agents.flatMap((a) => a.logs.filter(match));
  }

  /** The running agent; throws when none is. */
  get live(): AgentProcess {
    if (this.agent === null || this.agent.hasExited) throw new Error(`no agent runs on ${this.options.nodeName}`);
    return this.agent;
  }

  snapshot(): Promise<Snapshot> {
    return this.live.snapshot();
  }

  /** Writes `objects` as one manifest file (a List when several), atomically. */
  async write(file: string, objects: readonly KubeObject[]): Promise<void> {
    const object = objects.length === 1 && objects[0] !== undefined ? objects[0] : { apiVersion: 'v1', kind: 'List', items: objects };
    await writeManifest(this.manifestDir, file, object);
  }

  /** Mount points at or below the agent's root dir (kernel table in the namespace, stand-ins elsewhere). */
  async mountsBelowRoot(): Promise<string[]> {
    return (await mountsBelow(this.rootDir)).map((m) => m.mountPoint);
  }

  /**
   * What the node leaves behind: mounts below its whole directory (agent root, driver state) and
   * loop devices still backed by the driver's images.
   */
  async leftovers(): Promise<{ mounts: string[]; loopDevices: string[] }> {
    const driverSide = await this.driver.leftovers(this.options.base);
    const agentSide = realMountsAllowed ? [] : await this.mountsBelowRoot();
    return { mounts: [...new Set([...driverSide.mounts, ...agentSide])], loopDevices: driverSide.loopDevices };
  }

  /** Volume ids the driver still has published to a node, staged or published to a target. */
  async busyDriverVolumes(): Promise<string[]> {
    const state = await this.driver.state();
    return Object.values(state.volumes)
      .filter((v) => Object.keys(v.publishedNodes).length > 0 || v.staged !== null || Object.keys(v.publishedTargets).length > 0)
      .map((v) => v.volumeId);
  }

  /** SIGTERM the agent (it keeps its mounts), then the driver. */
  async stop(): Promise<void> {
    if (this.agent !== null) await this.agent.stop('SIGTERM');
    await this.driver.stop();
  }

  /** Kills whatever still runs and removes what a failed run left (mounts, loop devices), then the directory. */
  async destroy(): Promise<void> {
    if (this.agent !== null) await this.agent.stop('SIGKILL');
    await this.driver.stop();
    await this.driver.forceCleanUp(this.options.base);
    await cleanUpTempDir(this.options.base, realMountsAllowed ? undefined : standInMounter(this.rootDir));
  }
}

/** The agent's resident set size in bytes (`VmRSS` of /proc/<pid>/status). */
export async function rssBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const m = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
  if (m === null) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(m[1]) * 1024;
}
