/**
 * A VolumeScope stack on one machine: the CSI test driver, N node agents and the dashboard, each
 * one node process (see process.ts). `npm start` (scripts/demo/main.ts) and the e2e global setup
 * (e2e/global-setup.ts) both run it; they differ only in ports and directories.
 *
 * Layout below `baseDir`:
 *   driver/csi.sock, driver/state/     the driver's socket and disks (socket moved to the temp dir
 *                                      when the path is too long for a unix socket)
 *   <node>/root/                       the agent's kubelet root (token file `agent-token` in it)
 *   <node>/manifests/                  the agent's manifest directory (its pod source)
 *
 * Mounting: `mountsAllowed` is true only inside a private mount namespace (VOLUMESCOPE_MOUNT_NS=1,
 * set by the wrappers that run `unshare --mount --propagation private`). Then the agents probe and
 * mount for real and the driver runs privileged (as root); otherwise the agents get
 * `--allow-mount=false` and the driver `--mode unprivileged`, so nothing can ever mount in the
 * host's namespace, whoever runs this.
 *
 * Teardown ({@link Stack.teardown}) is ordered so that nothing stays mounted although agents keep
 * their mounts on SIGTERM: remove the pods, wait until every agent reports an empty actual state,
 * detach what the driver still holds, stop agents → driver → dashboard, then check the mount table
 * and unmount leftovers through lib/mount-utils.
 */
import { mkdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { type Snapshot } from '../../lib/api/snapshot.ts';
import { parseSnapshot } from '../../lib/api/compact-snapshot.ts';
import { CSI_DRIVER_NAME, removePodManifests } from './manifests.ts';
import { findLeftoverMounts, loopDevicesBackedBelow, unmountLeftovers, type LeftoverMount } from './mount-check.ts';
import { startDashboard, type DashboardAgent } from './dashboard.ts';
import { ManagedProcess, assertPortFree, childEnv, httpStatus, pause, waitUntil, type ExitInfo } from './process.ts';
import { errorMessage } from '../../lib/volume/errors.ts';

export const LOOPBACK = '127.0.0.1';

/** True when this process may make real mounts (inside the private mount namespace). */
export function mountsAllowedHere(): boolean {
  return process.env['VOLUMESCOPE_MOUNT_NS'] === '1';
}

export function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

export interface NodeSpec {
  name: string;
  /** The agent's API port on 127.0.0.1. */
  port: number;
}

export interface StackOptions {
  repoRoot: string;
  baseDir: string;
  logDir: string;
  nodes: readonly NodeSpec[];
  driverControlPort: number;
  /** The driver's node id (NodeGetInfo); the agents attach to it. */
  driverNodeId: string;
  dashboardHost: string;
  dashboardPort: number;
  mountsAllowed: boolean;
  /** Progress lines for the operator; default: none. */
  progress?: (message: string) => void;
  /** Agents started elsewhere that the dashboard should list too (e.g. an observe-mode agent). */
  extraAgents?: readonly { name: string; url: string; tokenFile: string }[];
}

export interface NodeDirs {
  rootDir: string;
  manifestDir: string;
  tokenFile: string;
}

export function nodeDirs(baseDir: string, node: string): NodeDirs {
  const rootDir = join(baseDir, node, 'root');
  return { rootDir, manifestDir: join(baseDir, node, 'manifests'), tokenFile: join(rootDir, 'agent-token') };
}

/** Longest unix socket path we use (sun_path holds 108 bytes including the terminator). */
const MAX_SOCKET_PATH = 100;

/** The driver's socket: below `baseDir`, or in the temp dir when that path would be too long. */
export function driverSocketPath(baseDir: string): string {
  const preferred = join(baseDir, 'driver', 'csi.sock');
  if (Buffer.byteLength(preferred) <= MAX_SOCKET_PATH) return preferred;
  const tag = createHash('sha256').update(baseDir).digest('hex').slice(0, 12);
  return join(tmpdir(), `volumescope-${tag}`, 'csi.sock');
}

/** One running agent: its process, directories and API. */
export class AgentHandle {
  readonly url: string;
  readonly dirs: NodeDirs;
  private proc: ManagedProcess | null = null;
  private restarts = 0;

  constructor(
    readonly spec: NodeSpec,
    private readonly stack: StackOptions,
    private readonly socketPath: string,
  ) {
    this.url = `http://${LOOPBACK}:${spec.port}`;
    this.dirs = nodeDirs(stack.baseDir, spec.name);
  }

  get name(): string {
    return this.spec.name;
  }

  get process(): ManagedProcess | null {
    return this.proc;
  }

  get running(): boolean {
    return this.proc !== null && this.proc.exitInfo === null;
  }

  /** The flags of `npm run agent` for this node (agent/node/flags.ts). */
  args(): string[] {
    return [
      '--import',
      'tsx',
      join(this.stack.repoRoot, 'agent', 'main.ts'),
      '--node-name',
      this.spec.name,
      '--root-dir',
      this.dirs.rootDir,
      // Explicit: inside a pod, --source=auto would pick the cluster's API server.
      '--source=manifest',
      '--manifest-dir',
      this.dirs.manifestDir,
      '--listen',
      `${LOOPBACK}:${this.spec.port}`,
      '--token-file',
      this.dirs.tokenFile,
      '--csi-driver',
      `${CSI_DRIVER_NAME}=${this.socketPath}`,
      `--allow-mount=${this.stack.mountsAllowed ? 'true' : 'false'}`,
      '--shutdown-grace-period',
      '5s',
    ];
  }

  /** Starts the agent and waits until it serves its API. */
  async start(): Promise<void> {
    await mkdir(this.dirs.manifestDir, { recursive: true });
    const suffix = this.restarts === 0 ? '' : `.${this.restarts}`;
    this.proc = ManagedProcess.start({
      name: `agent ${this.spec.name}`,
      args: this.args(),
      cwd: this.stack.repoRoot,
      env: childEnv(),
      logFile: join(this.stack.logDir, `agent-${this.spec.name}${suffix}.log`),
    });
    await waitUntil(`agent ${this.spec.name} answers on ${this.url}/healthz`, async () => (await httpStatus(`${this.url}/healthz`)) === 200, {
      deadlineMs: 60_000,
      process: this.proc,
    });
  }

  /** SIGTERM (the agent keeps its mounts), then SIGKILL after the grace period. */
  async stop(): Promise<ExitInfo | null> {
    return this.proc === null ? null : this.proc.stop(15_000);
  }

  /** SIGTERM, wait for the exit, start again on the same port and directories. */
  async restart(): Promise<void> {
    await this.stop();
    this.restarts++;
    await this.start();
  }

  async token(): Promise<string> {
    return (await readFile(this.dirs.tokenFile, 'utf8')).trim();
  }

  /** GET /api/v1/snapshot, validated against the API schema. */
  async snapshot(): Promise<Snapshot> {
    const res = await fetch(`${this.url}/api/v1/snapshot`, {
      headers: { authorization: `Bearer ${await this.token()}` },
      signal: AbortSignal.timeout(10_000),
    });
    if (res.status !== 200) throw new Error(`GET ${this.url}/api/v1/snapshot: ${res.status} ${await res.text()}`);
    return parseSnapshot(await res.json());
  }
}

/** The CSI test driver process and its control API. */
export class DriverHandle {
  readonly controlUrl: string;
  readonly stateDir: string;
  private proc: ManagedProcess | null = null;

  constructor(
    private readonly stack: StackOptions,
    readonly socketPath: string,
  ) {
    this.controlUrl = `http://${LOOPBACK}:${stack.driverControlPort}`;
    this.stateDir = join(stack.baseDir, 'driver', 'state');
  }

  /** `privileged` (loop devices, ext4, bind mounts) only as root inside the private namespace. */
  get mode(): 'privileged' | 'unprivileged' {
    return this.stack.mountsAllowed && isRoot() ? 'privileged' : 'unprivileged';
  }

  get process(): ManagedProcess | null {
    return this.proc;
  }

  async start(): Promise<void> {
    await mkdir(join(this.socketPath, '..'), { recursive: true });
    this.proc = ManagedProcess.start({
      name: 'CSI test driver',
      args: [
        '--import',
        'tsx',
        join(this.stack.repoRoot, 'drivers', 'csi-loop', 'main.ts'),
        '--endpoint',
        `unix://${this.socketPath}`,
        '--state-dir',
        this.stateDir,
        '--control',
        `${LOOPBACK}:${this.stack.driverControlPort}`,
        '--node-id',
        this.stack.driverNodeId,
        '--mode',
        this.mode,
      ],
      cwd: this.stack.repoRoot,
      env: childEnv(),
      logFile: join(this.stack.logDir, 'csi-driver.log'),
    });
    await waitUntil(`the CSI test driver answers on ${this.controlUrl}/healthz`, async () => (await httpStatus(`${this.controlUrl}/healthz`)) === 200, {
      deadlineMs: 60_000,
      process: this.proc,
    });
  }

  async stop(): Promise<ExitInfo | null> {
    return this.proc === null ? null : this.proc.stop(10_000);
  }

  /** A control API call; resolves with status and parsed JSON body (null when empty). */
  async control(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
    const res = await fetch(`${this.controlUrl}${path}`, {
      method,
      signal: AbortSignal.timeout(10_000),
      ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
    });
    const text = await res.text();
    return { status: res.status, body: text === '' ? null : (JSON.parse(text) as unknown) };
  }

  /** Volume ids the driver still has attached, staged or published anywhere. */
  async busyVolumes(): Promise<string[]> {
    const { status, body } = await this.control('GET', '/state');
    if (status !== 200 || typeof body !== 'object' || body === null || !('volumes' in body)) return [];
    const volumes = (body as { volumes: Record<string, { publishedNodes?: object; staged?: unknown; publishedTargets?: object }> }).volumes;
    return Object.entries(volumes)
      .filter(([, v]) => Object.keys(v.publishedNodes ?? {}).length > 0 || (v.staged ?? null) !== null || Object.keys(v.publishedTargets ?? {}).length > 0)
      .map(([id]) => id);
  }
}

export interface TeardownOptions {
  /** How long the agents get to unmount everything after the pods are removed. */
  drainMs?: number;
}

export interface TeardownReport {
  /** Every running agent reported an empty actual state in time. */
  drained: boolean;
  /** Per agent that did not drain: what it still had. */
  notDrained: string[];
  /** Driver volumes that had to be detached through its control API. */
  detached: string[];
  /** Mounts found after everything stopped (before cleanup). */
  leftovers: LeftoverMount[];
  /** Leftovers that could not be unmounted. */
  unmountFailures: { mountPoint: string; error: string }[];
  /** Loop devices still backed by files below the base dir. */
  loopDevices: string[];
}

/** True when the report shows nothing left behind. */
export function teardownClean(r: TeardownReport): boolean {
  return r.leftovers.length === 0 && r.unmountFailures.length === 0 && r.loopDevices.length === 0;
}

export class Stack {
  readonly driver: DriverHandle;
  readonly agents: readonly AgentHandle[];
  readonly dashboardUrl: string;
  private dashboard: ManagedProcess | null = null;
  private tornDown: Promise<TeardownReport> | null = null;

  private constructor(readonly options: StackOptions) {
    const socket = driverSocketPath(options.baseDir);
    this.driver = new DriverHandle(options, socket);
    this.agents = options.nodes.map((n) => new AgentHandle(n, options, socket));
    this.dashboardUrl = `http://${options.dashboardHost}:${options.dashboardPort}`;
  }

  /**
   * Checks every port, then starts driver → agents → dashboard and waits for each. On a failure
   * whatever started is stopped again (and drained) before the error is rethrown.
   */
  static async start(options: StackOptions): Promise<Stack> {
    const say = options.progress ?? (() => undefined);
    await assertPortFree(options.dashboardHost, options.dashboardPort, 'the dashboard');
    for (const n of options.nodes) await assertPortFree(LOOPBACK, n.port, `the API of agent ${n.name}`);
    await assertPortFree(LOOPBACK, options.driverControlPort, 'the CSI test driver’s control API');

    // Logs are per run: the previous run's go (the directory belongs to the stack).
    await rm(options.logDir, { recursive: true, force: true });
    const stack = new Stack(options);
    try {
      say(`starting the CSI test driver (${stack.driver.mode})…`);
      await stack.driver.start();
      say(`starting the agents ${options.nodes.map((n) => `${n.name} (${LOOPBACK}:${n.port})`).join(', ')}…`);
      await Promise.all(stack.agents.map((a) => a.start()));
      say('starting the dashboard…');
      await stack.startDashboard();
    } catch (err) {
      await stack.teardown({ drainMs: 20_000 }).catch(() => undefined);
      throw err;
    }
    return stack;
  }

  agent(name: string): AgentHandle {
    const agent = this.agents.find((a) => a.name === name);
    if (agent === undefined) throw new Error(`no agent named ${name}`);
    return agent;
  }

  /** The agents the dashboard lists: this stack's, then the extra ones. */
  dashboardAgents(): DashboardAgent[] {
    return [...this.agents.map((a) => ({ name: a.name, url: a.url, tokenFile: a.dirs.tokenFile })), ...(this.options.extraAgents ?? [])];
  }

  private async startDashboard(): Promise<void> {
    const { repoRoot, dashboardHost, dashboardPort, logDir } = this.options;
    this.dashboard = await startDashboard({ repoRoot, host: dashboardHost, port: dashboardPort, logFile: join(logDir, 'dashboard.log'), agents: this.dashboardAgents() });
  }

  /** The processes of the stack that exited although nobody stopped them. */
  crashed(): ManagedProcess[] {
    const procs = [this.driver.process, ...this.agents.map((a) => a.process), this.dashboard];
    return procs.filter((p): p is ManagedProcess => p !== null && p.crashed);
  }

  /** Runs the teardown once; later calls get the same report. See the module comment for the order. */
  teardown(opts: TeardownOptions = {}): Promise<TeardownReport> {
    this.tornDown ??= this.runTeardown(opts);
    return this.tornDown;
  }

  private async runTeardown(opts: TeardownOptions): Promise<TeardownReport> {
    const say = this.options.progress ?? (() => undefined);
    const report: TeardownReport = { drained: true, notDrained: [], detached: [], leftovers: [], unmountFailures: [], loopDevices: [] };

    // 1. The pods go; the agents unmount, unstage and detach their volumes.
    for (const a of this.agents) await removePodManifests(a.dirs.manifestDir);
    const live = this.agents.filter((a) => a.running);
    if (live.length > 0) say('removing the pods and waiting for the agents to unmount their volumes…');
    const deadline = performance.now() + (opts.drainMs ?? 60_000);
    await Promise.all(
      live.map(async (a) => {
        let last: string;
        for (;;) {
          try {
            const s = await a.snapshot();
            if (s.desired.pods.length === 0 && s.actual.volumes.length === 0) return;
            last = `${s.desired.pods.length} pods, ${s.actual.volumes.length} volumes: ${s.actual.volumes.map((v) => v.uniqueVolumeName).join(', ')}`;
          } catch (err) {
            last = errorMessage(err);
            if (!a.running) break;
          }
          if (performance.now() >= deadline) break;
          await pause(200);
        }
        report.drained = false;
        report.notDrained.push(`${a.name}: ${last}`);
      }),
    );

    // 2. Whatever the driver still holds (an agent that did not drain) is detached by the driver itself.
    if (this.driver.process?.exitInfo === null) {
      try {
        for (const id of await this.driver.busyVolumes()) {
          const r = await this.driver.control('POST', '/detach', { volumeId: id });
          if (r.status === 200) report.detached.push(id);
        }
      } catch {
        // The driver's state is best effort here; the mount check below is authoritative.
      }
    }

    // 3. Stop agents, driver, dashboard.
    say('stopping the agents, the CSI test driver and the dashboard…');
    await Promise.all(this.agents.map((a) => a.stop()));
    await this.driver.stop();
    if (this.dashboard !== null) await this.dashboard.stop(10_000);

    // 4. Nothing may stay mounted below the base dir.
    report.leftovers = await findLeftoverMounts(
      this.options.baseDir,
      this.agents.map((a) => a.dirs.rootDir),
    );
    if (report.leftovers.length > 0) {
      say(`unmounting ${report.leftovers.length} leftover mount(s)…`);
      report.unmountFailures = (await unmountLeftovers(report.leftovers)).failed;
    }
    report.loopDevices = await loopDevicesBackedBelow(this.options.baseDir);
    return report;
  }
}

/** A one-paragraph account of a teardown report for the operator or a test failure. */
export function describeTeardown(r: TeardownReport): string {
  const lines: string[] = [];
  if (!r.drained) lines.push(`agents that did not finish unmounting in time: ${r.notDrained.join('; ')}`);
  if (r.detached.length > 0) lines.push(`detached through the driver: ${r.detached.join(', ')}`);
  if (r.leftovers.length > 0) lines.push(`leftover mounts (unmounted now): ${r.leftovers.map((m) => `${m.mountPoint} [${m.kind}]`).join(', ')}`);
  for (const f of r.unmountFailures) lines.push(`could NOT unmount ${f.mountPoint}: ${f.error}`);
  if (r.loopDevices.length > 0) lines.push(`loop devices still attached (detach with losetup -d): ${r.loopDevices.join(', ')}`);
  return lines.length === 0 ? 'nothing left mounted' : lines.join('\n');
}
