/**
 * Test support: runs the repo's CSI test driver (drivers/csi-loop) as a child process,
 * `node --import tsx drivers/csi-loop/main.ts --endpoint unix://<sock> --state-dir <dir>
 * --control 127.0.0.1:0 …`, and talks to its control API (faults, call log, state, detach).
 *
 * The driver runs privileged (loop devices, ext4, bind mounts) exactly when the tests may mount
 * (VOLUMESCOPE_MOUNT_NS=1, root, inside `unshare --mount --propagation private`); the child
 * inherits that private mount namespace. Everywhere else it runs unprivileged (directories and
 * symlinks). The mode is passed explicitly, never left to `auto`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from '../../../clock/testing/wait-for.ts';
import { execFileNoShell } from '../../../mount-utils/exec.ts';
import { realMountsAllowed } from '../../../mount-utils/testing/mount-test-env.ts';
import { mountsAtOrBelow } from '../../../mount-utils/mount-table.ts';
import { readMountInfo } from '../../../mount-utils/mountinfo.ts';

const MAIN = fileURLToPath(new URL('../../../../drivers/csi-loop/main.ts', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/** The driver runs privileged (real loop devices and mounts) in this test run. */
export const driverPrivileged = realMountsAllowed && typeof process.getuid === 'function' && process.getuid() === 0;
export const driverMode = driverPrivileged ? 'privileged' : 'unprivileged';

/** Drivers started by this process and not yet exited; killed if the test process exits first. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** One entry of `GET /calls`. */
export interface DriverCall {
  seq: number;
  /** ISO time the call arrived. */
  time: string;
  method: string;
  volumeId?: string;
  targetPath?: string;
  stagingPath?: string;
  /** gRPC status name, e.g. `OK`, `DEADLINE_EXCEEDED`. */
  code: string;
  message?: string;
  /** Time the driver spent on the call, from arrival to answer. */
  durationMs: number;
}

/** A volume in `GET /state`. */
export interface DriverVolume {
  volumeId: string;
  capacityBytes: number;
  diskPath: string;
  publishedNodes: Record<string, unknown>;
  devicePath: string | null;
  staged: { path: string } | null;
  publishedTargets: Record<string, unknown>;
}

export interface DriverState {
  driverName: string;
  nodeId: string;
  registration: { pluginRegistered: boolean; error: string } | null;
  inFlight: string[];
  volumes: Record<string, DriverVolume>;
}

/** A fault spec of the control API. */
export interface FaultSpec {
  code?: string;
  message?: string;
  delayMs?: number;
  hang?: boolean;
  failNext?: number;
}

export interface StartCsiLoopOptions {
  /** Directory for the socket and the state (created by the driver). */
  dir: string;
  nodeId: string;
  driverName?: string;
  /** Serve plugin registration on `<registrationDir>/<driver>-reg.sock`. */
  registrationDir?: string;
  /** Socket path; default `<dir>/csi.sock`. */
  socketPath?: string;
  /**
   * Backend mode; default {@link driverMode} (this run's). `privileged` is only valid where
   * {@link driverPrivileged} holds; `unprivileged` is always safe (the benchmark runs both).
   */
  mode?: 'privileged' | 'unprivileged';
  /**
   * `failed`: the driver logs only failed calls (`--log-calls failed`). For measurements: reading a
   * log line per call costs this process CPU that is not the client's. {@link logLines} then holds
   * failed calls only; the call log ({@link calls}) still has every call.
   */
  logCalls?: 'all' | 'failed';
}

export class CsiLoopProcess {
  readonly stderrLines: string[] = [];
  private exited: Promise<number | null>;
  private exitCode: number | null | undefined;

  private constructor(
    private readonly child: ChildProcess,
    readonly driverName: string,
    readonly nodeId: string,
    readonly socketPath: string,
    readonly stateDir: string,
    readonly registrationDir: string | undefined,
  ) {
    this.exited = new Promise((resolve) => {
      child.once('exit', (code) => {
        this.exitCode = code;
        resolve(code);
      });
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      this.stderrLines.push(...chunk.toString('utf8').split('\n').filter((l) => l !== ''));
    });
  }

  /** Starts the driver and waits for its "started" line (which carries the control port). */
  static async start(opts: StartCsiLoopOptions): Promise<CsiLoopProcess> {
    // Never mount outside a private mount namespace: privileged only where this run may mount.
    if (opts.mode === 'privileged' && !driverPrivileged) throw new Error('the csi-loop driver may run privileged only as root in a private mount namespace (VOLUMESCOPE_MOUNT_NS=1)');
    const driverName = opts.driverName ?? 'csi-loop.volumescope.dev';
    const socketPath = opts.socketPath ?? join(opts.dir, 'csi.sock');
    const stateDir = join(opts.dir, 'state');
    const args = [
      '--import',
      'tsx',
      MAIN,
      '--endpoint',
      `unix://${socketPath}`,
      '--state-dir',
      stateDir,
      '--control',
      '127.0.0.1:0',
      '--driver-name',
      driverName,
      '--node-id',
      opts.nodeId,
      '--mode',
      opts.mode ?? driverMode,
      ...(opts.registrationDir === undefined ? [] : ['--registration-dir', opts.registrationDir]),
      ...(opts.logCalls === undefined ? [] : ['--log-calls', opts.logCalls]),
    ];
    const child = spawn(process.execPath, args, { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    running.add(child);
    child.once('exit', () => running.delete(child));
    const driver = new CsiLoopProcess(child, driverName, opts.nodeId, socketPath, stateDir, opts.registrationDir);
    try {
      await waitFor(() => driver.controlPortOrNull() !== null || driver.exitCode !== undefined, { what: 'the csi-loop driver to start', timeoutMs: 20_000 });
    } catch (err) {
      child.kill('SIGKILL');
      throw new Error(`${(err as Error).message}; stderr: ${driver.stderrLines.join('\n')}`, { cause: err });
    }
    if (driver.exitCode !== undefined) throw new Error(`the csi-loop driver exited with ${String(driver.exitCode)}: ${driver.stderrLines.join('\n')}`);
    return driver;
  }

  get endpoint(): string {
    return `unix://${this.socketPath}`;
  }

  get controlPort(): number {
    const port = this.controlPortOrNull();
    if (port === null) throw new Error('the driver has not reported its control port');
    return port;
  }

  private controlPortOrNull(): number | null {
    for (const line of this.stderrLines) {
      if (!line.includes('csi-loop driver started')) continue;
      const parsed = JSON.parse(line) as { controlPort?: number };
      if (typeof parsed.controlPort === 'number') return parsed.controlPort;
    }
    return null;
  }

  /** JSON request to the control endpoint. */
  async control(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
    const res = await fetch(`http://127.0.0.1:${this.controlPort}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as unknown };
  }

  async calls(): Promise<DriverCall[]> {
    return (await this.control('GET', '/calls')).body as DriverCall[];
  }

  /** The methods of the call log, optionally only those in `methods`. */
  async methods(methods?: readonly string[]): Promise<string[]> {
    return (await this.calls()).map((c) => c.method).filter((m) => methods === undefined || methods.includes(m));
  }

  async clearCalls(): Promise<void> {
    await this.control('DELETE', '/calls');
  }

  async fault(method: string, spec: FaultSpec): Promise<void> {
    const res = await this.control('PUT', `/faults/${method}`, spec);
    if (res.status !== 200) throw new Error(`setting a fault on ${method} failed: ${JSON.stringify(res.body)}`);
  }

  async clearFaults(): Promise<void> {
    await this.control('DELETE', '/faults');
  }

  async state(): Promise<DriverState> {
    return (await this.control('GET', '/state')).body as DriverState;
  }

  /** `POST /detach`: the driver forgets the volume's attachment to this node ("terminated node"). */
  async yank(volumeId: string): Promise<void> {
    const res = await this.control('POST', '/detach', { volumeId });
    if (res.status !== 200) throw new Error(`POST /detach ${volumeId} failed: ${JSON.stringify(res.body)}`);
  }

  /** The driver's JSON log lines for `method` (requests have their secrets stripped by the driver). */
  logLines(method: string): Record<string, unknown>[] {
    return this.stderrLines
      .filter((l) => l.includes(`"method":"${method}"`))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  /** SIGTERM, then waits for the exit (the driver removes its sockets). */
  async stop(): Promise<void> {
    if (this.exitCode === undefined) this.child.kill('SIGTERM');
    await this.exited;
  }

  /**
   * What a test left behind: loop devices still backed by the driver's images (privileged mode,
   * `losetup -j` lines) and mount points at or below `dir`.
   */
  async leftovers(dir: string): Promise<{ loopDevices: string[]; mounts: string[] }> {
    const loopDevices = (await this.loopDevices()).map((d) => d.line);
    const mounts = mountsAtOrBelow(await readMountInfo(), dir).map((m) => m.mountPoint);
    return { loopDevices, mounts };
  }

  /**
   * Removes what a failed test may have left, so a failure does not leak into the host or into
   * later runs: lazily unmounts every mount at or below `dir` (deepest first), then detaches the
   * loop devices of the driver's images. Call after {@link stop}, before deleting `dir`.
   */
  async forceCleanUp(dir: string): Promise<void> {
    const mounts = mountsAtOrBelow(await readMountInfo(), dir).sort((a, b) => b.mountPoint.length - a.mountPoint.length);
    for (const m of mounts) await execFileNoShell('umount', ['-l', '--', m.mountPoint]);
    for (const d of await this.loopDevices()) await execFileNoShell('losetup', ['-d', d.device]);
  }

  private async loopDevices(): Promise<{ device: string; line: string }[]> {
    const out: { device: string; line: string }[] = [];
    const images = join(this.stateDir, 'images');
    for (const image of await readdir(images).catch(() => [])) {
      const r = await execFileNoShell('losetup', ['-j', join(images, image)]);
      for (const line of r.stdout.split('\n')) {
        const device = line.split(':')[0]?.trim() ?? '';
        if (device !== '') out.push({ device, line: line.trim() });
      }
    }
    return out;
  }
}
