/**
 * Child processes of the demo (`npm start`) and of the e2e stack.
 *
 * Contract:
 * - Every child is ONE process (`process.execPath <args>`, or a given executable), never an npx/npm/sh chain, so its
 *   pid is the process that holds the port and a signal reaches the program itself (killing
 *   an npx pid leaves the real server orphaned, holding the port).
 * - Children run in their own process group (`detached`), so a Ctrl-C in the terminal reaches only
 *   the orchestrator, which then stops them in the order that leaves no mounts behind (the agents
 *   keep their mounts on SIGTERM by design, so they must not see the Ctrl-C first).
 * - Because they are detached, an exit hook SIGKILLs every child still running when the
 *   orchestrator exits, also after an uncaught exception; and where util-linux's setpriv exists,
 *   each child is started through `setpriv --pdeathsig SIGTERM`, which sets the parent-death
 *   signal and then execs node (same pid, still one process), so even an orchestrator killed with
 *   SIGKILL leaves no process behind holding a port.
 * - stdout and stderr go to a log file (appended); error messages quote its tail.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { createServer } from 'node:net';
import { dirname } from 'node:path';
import { errorMessage } from '../../lib/volume/errors.ts';

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ManagedProcessOptions {
  /** For messages: `agent demo-node-a`, `dashboard`. */
  name: string;
  /** Arguments after `process.execPath` (node flags, script, program flags), or after `command`. */
  args: readonly string[];
  /** An executable to run instead of node (the upstream Go components); `args` are then its own. */
  command?: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** stdout and stderr are appended here. */
  logFile: string;
}

/** util-linux setpriv, for the parent-death signal (see the module comment); undefined when missing. */
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));

/** Children started by this process and not yet exited. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * The environment for a child: the parent's, without NODE_OPTIONS (a test runner's loader hooks
 * must not leak into the agent or Next), plus `extra`.
 */
export function childEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  delete env['NODE_OPTIONS'];
  return env;
}

export class ManagedProcess {
  readonly exited: Promise<ExitInfo>;
  private exit: ExitInfo | null = null;
  private stopRequested = false;

  private constructor(
    readonly options: ManagedProcessOptions,
    private readonly child: ChildProcess,
  ) {
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        running.delete(child);
        this.exit = { code, signal };
        resolve(this.exit);
      });
    });
  }

  /** Spawns `process.execPath ...args` detached, with output to the log file. */
  static start(options: ManagedProcessOptions): ManagedProcess {
    mkdirSync(dirname(options.logFile), { recursive: true });
    const fd = openSync(options.logFile, 'a');
    let child: ChildProcess;
    try {
      const program = options.command ?? process.execPath;
      const [file, args] = SETPRIV === undefined ? [program, [...options.args]] : [SETPRIV, ['--pdeathsig', 'SIGTERM', '--', program, ...options.args]];
      child = spawn(file, args, {
        cwd: options.cwd,
        env: options.env,
        stdio: ['ignore', fd, fd],
        detached: true,
      });
    } finally {
      closeSync(fd);
    }
    running.add(child);
    // A spawn failure (ENOENT, EACCES) arrives as 'error'; 'exit' may never follow.
    const managed = new ManagedProcess(options, child);
    child.once('error', (err) => {
      running.delete(child);
      managed.exit ??= { code: -1, signal: null };
      process.stderr.write(`volumescope: cannot start ${options.name}: ${err.message}\n`);
    });
    return managed;
  }

  get name(): string {
    return this.options.name;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** The exit, or null while it runs. */
  get exitInfo(): ExitInfo | null {
    return this.exit;
  }

  /** True when it exited without being asked to (a crash, a failed start). */
  get crashed(): boolean {
    return this.exit !== null && !this.stopRequested;
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit. */
  async stop(graceMs = 15_000): Promise<ExitInfo> {
    this.stopRequested = true;
    if (this.exit !== null) return this.exit;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => {
      this.child.kill('SIGKILL');
    }, graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** SIGKILL at once (a crash on purpose: nothing runs on the way out); resolves with the exit. */
  async kill(): Promise<ExitInfo> {
    this.stopRequested = true;
    if (this.exit !== null) return this.exit;
    this.child.kill('SIGKILL');
    return this.exited;
  }

  /** The last `bytes` of the log file, for error messages. */
  async logTail(bytes = 3000): Promise<string> {
    return readTail(this.options.logFile, bytes);
  }
}

/** The last `bytes` of a file ('' when it cannot be read). */
export async function readTail(file: string, bytes: number): Promise<string> {
  try {
    const handle = await open(file, 'r');
    try {
      const { size } = await handle.stat();
      const length = Math.min(size, bytes);
      const buffer = Buffer.alloc(length);
      await handle.read(buffer, 0, length, size - length);
      return buffer.toString('utf8');
    } finally {
      await handle.close();
    }
  } catch {
    return '';
  }
}

export class StartError extends Error {
  override readonly name = 'StartError';
}

export function isStartError(err: unknown): err is StartError {
  return err instanceof StartError;
}

/** Resolves after `ms` (for polling loops only; never used to wait for an outcome). */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Polls `probe` every `intervalMs` until it returns a value other than undefined/false. Rejects
 * with a StartError after `deadlineMs`, or at once when `process` exits meanwhile; both messages
 * name `what` and quote the process's log tail.
 */
export async function waitUntil<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  opts: { deadlineMs: number; process?: ManagedProcess; intervalMs?: number },
): Promise<T> {
  const deadline = performance.now() + opts.deadlineMs;
  let lastError = '';
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      lastError = errorMessage(err);
    }
    const exit = opts.process?.exitInfo ?? null;
    if (opts.process !== undefined && exit !== null) {
      throw new StartError(
        `${opts.process.name} exited (${exit.signal ?? `code ${String(exit.code)}`}) before ${what}; log ${opts.process.options.logFile}:\n${await opts.process.logTail()}`,
      );
    }
    if (performance.now() >= deadline) {
      const tail = opts.process === undefined ? '' : `; log ${opts.process.options.logFile}:\n${await opts.process.logTail()}`;
      throw new StartError(`${what}: not reached within ${Math.round(opts.deadlineMs / 1000)} s${lastError === '' ? '' : ` (last error: ${lastError})`}${tail}`);
    }
    await pause(opts.intervalMs ?? 100);
  }
}

/** A GET that resolves with the status, or rejects when nothing answers within 2 s. */
export async function httpStatus(url: string, headers: Record<string, string> = {}): Promise<number> {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(2000) });
  await res.body?.cancel();
  return res.status;
}

/** A port somebody else holds; the message names the port and what it was meant for. */
export class PortInUseError extends StartError {}

/**
 * Fails with a {@link PortInUseError} naming the port and its purpose when `host:port` cannot be
 * bound now. (A check, not a reservation: the child binds it a moment later.)
 */
export async function assertPortFree(host: string, port: number, purpose: string): Promise<void> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      const why = err.code === 'EADDRINUSE' ? 'is already in use' : `cannot be used (${err.code ?? err.message})`;
      reject(new PortInUseError(`port ${port} on ${host} (${purpose}) ${why}; stop whatever holds it or choose another port`));
    });
    server.listen(port, host, () => {
      server.close(() => {
        resolve();
      });
    });
  });
}

/** A port the OS calls free right now on `host`. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const server = createServer();
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => {
        resolve(port);
      });
    });
  });
}
