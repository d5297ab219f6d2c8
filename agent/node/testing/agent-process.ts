/**
 * Test support: runs the real node agent, `node --import tsx agent/main.ts …` (the node flags of
 * `npm run agent`), as a child process and reads its state through the HTTP API with the token
 * (GET /api/v1/snapshot).
 *
 * Mounting: the agent may probe for real mounts only when the tests run in a private mount
 * namespace (VOLUMESCOPE_MOUNT_NS=1, see lib/mount-utils/testing/mount-test-env.ts); the child inherits
 * that namespace. Everywhere else `--allow-mount=false` is passed, so a test run as root on a
 * host can never mount there. The mode is passed explicitly, never left to the probe alone.
 *
 * Waiting: lib/clock/testing/wait-for.ts `waitFor`, polling the snapshot every 50 ms with a
 * deadline; no test sleeps to synchronise.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Snapshot } from '../../../lib/api/snapshot.ts';
import { parseSnapshot } from '../../../lib/api/compact-snapshot.ts';
import { realClock } from '../../../lib/clock/clock.ts';
import { defaultWaitTimeoutMs, waitFor } from '../../../lib/clock/testing/wait-for.ts';
import { realMountsAllowed } from '../../../lib/mount-utils/testing/mount-test-env.ts';
import { mountsAtOrBelow } from '../../../lib/mount-utils/mount-table.ts';
import type { MountInfo } from '../../../lib/mount-utils/mountinfo.ts';
import { readMountInfo } from '../../../lib/mount-utils/mountinfo.ts';
import { UnprivilegedMounter } from '../../../lib/mount-utils/unprivileged-mounter.ts';
import { unprivilegedMounterDirName } from '../node-agent.ts';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const MAIN = join(REPO_ROOT, 'agent', 'main.ts');

/**
 * The node flags of `npm run agent` (package.json `scripts.agent`, `node <flags> agent/main.ts`),
 * so tests and the benchmark run the agent exactly as operators do, with `process.execPath` as
 * the node binary. Falls back to `--import tsx` when the script has another shape.
 */
export function agentNodeFlags(): string[] {
  const fallback = ['--import', 'tsx'];
  try {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
    const words = (pkg.scripts?.['agent'] ?? '').trim().split(/\s+/);
    if (words[0] !== 'node' || words.at(-1) !== 'agent/main.ts') return fallback;
    const flags = words.slice(1, -1);
    return flags.every((f) => /^[-\w=.:/]+$/.test(f)) ? flags : fallback;
  } catch {
    return fallback;
  }
}

/** The mounter kind the agent must report in this test run. */
export const expectedMounterKind = realMountsAllowed ? 'linux' : 'unprivileged';

/** How often the snapshot is polled, and the default deadline of a wait for the agent. */
const pollMs = 50;
export const defaultDeadlineMs = defaultWaitTimeoutMs;

/** Agents started by this process and still running; killed if the test process exits first. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export interface ExitResult {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A parsed pino line of the agent's stdout. */
export interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

export interface AgentArgs {
  rootDir: string;
  manifestDir: string;
  /** `--token-file`; default `<rootDir>/agent-token` (the agent's default). */
  tokenFile?: string;
  nodeName?: string;
  extraArgs?: readonly string[];
  /** Node flags after those of `npm run agent` (e.g. `--heapsnapshot-signal=SIGUSR2` for a heap snapshot). */
  nodeFlags?: readonly string[];
}

/** The flags every test agent gets: a free port, the test's dirs, the mount mode of this run. */
export function agentArgs(a: AgentArgs): string[] {
  const extra = a.extraArgs ?? [];
  // The manifest source unless the test asks for the API server: inside a pod (a CI runner on
  // Kubernetes), --source=auto would pick the cluster's.
  const kube = extra.some((arg) => arg === '--kubeconfig' || arg.startsWith('--kubeconfig=') || arg === '--mode=observe');
  return [
    ...(kube ? [] : ['--source=manifest']),
    '--node-name',
    a.nodeName ?? 'node-a',
    '--root-dir',
    a.rootDir,
    '--manifest-dir',
    a.manifestDir,
    ...(a.tokenFile === undefined ? [] : ['--token-file', a.tokenFile]),
    '--listen',
    '127.0.0.1:0',
    `--allow-mount=${realMountsAllowed ? 'true' : 'false'}`,
    ...(a.extraArgs ?? []),
  ];
}

function spawnAgent(args: readonly string[], nodeFlags: readonly string[] = []): ChildProcess {
  const child = spawn(process.execPath, [...agentNodeFlags(), ...nodeFlags, MAIN, ...args], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

/** Runs the agent to completion (flags that make it exit): exit code and output. */
export async function runAgentToExit(args: readonly string[], deadlineMs = defaultDeadlineMs): Promise<ExitResult & { stdout: string; stderr: string }> {
  const child = spawnAgent(args);
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<ExitResult>((resolve) => {
    child.once('exit', (code, signal) => {
      resolve({ code, signal });
    });
  });
  const timer = realClock.setTimeout(() => {
    child.kill('SIGKILL');
  }, deadlineMs);
  const result = await exited;
  realClock.clearTimeout(timer);
  return { ...result, stdout, stderr };
}

/** A running agent process. */
export class AgentProcess {
  readonly logs: LogLine[] = [];
  private readonly logListeners = new Set<(line: LogLine) => void>();
  stderr = '';
  readonly exited: Promise<ExitResult>;
  private exit: ExitResult | null = null;
  private constructor(
    readonly child: ChildProcess,
    readonly args: AgentArgs,
  ) {
    let buffered = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        if (line.trim() === '') continue;
        let parsed: LogLine;
        try {
          parsed = JSON.parse(line) as LogLine;
        } catch {
          parsed = { level: 0, msg: line };
        }
        this.logs.push(parsed);
        for (const listener of this.logListeners) listener(parsed);
      }
    });
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (this.stderr += d));
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        resolve(this.exit);
      }),
    );
  }

  baseUrl = '';
  token = '';

  /** Starts an agent and waits until it serves its API (its "Serving the agent API" log line). */
  static async start(a: AgentArgs): Promise<AgentProcess> {
    const agent = new AgentProcess(spawnAgent(agentArgs(a), a.nodeFlags), a);
    const serving = await waitFor(
      () => {
        if (agent.exit !== null) throw new Error(`the agent exited early (${JSON.stringify(agent.exit)}): ${agent.stderr}`);
        return agent.logs.find((l) => typeof l['port'] === 'number' && l.msg.startsWith('Serving the agent API'));
      },
      { what: 'the agent serves its API', timeoutMs: 20_000, pollMs, describe: () => `stderr: ${agent.stderr.slice(-2000)}` },
    );
    agent.baseUrl = `http://127.0.0.1:${String(serving['port'])}`;
    agent.token = (await readFile(a.tokenFile ?? join(a.rootDir, 'agent-token'), 'utf8')).trim();
    return agent;
  }

  /** Calls `listener` for every later log line; returns the function that unregisters it. */
  onLog(listener: (line: LogLine) => void): () => void {
    this.logListeners.add(listener);
    return () => this.logListeners.delete(listener);
  }

  get pid(): number {
    if (this.child.pid === undefined) throw new Error('the agent has no pid');
    return this.child.pid;
  }

  get hasExited(): boolean {
    return this.exit !== null;
  }

  /** GET /api/v1/snapshot, validated against the API schema. */
  async snapshot(): Promise<Snapshot> {
    const res = await fetch(`${this.baseUrl}/api/v1/snapshot`, { headers: { authorization: `Bearer ${this.token}` } });
    if (res.status !== 200) throw new Error(`GET /api/v1/snapshot: ${res.status} ${await res.text()}`);
    return parseSnapshot(await res.json());
  }

  /** An authenticated POST; resolves with status and parsed body. */
  async post(path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
    const res = await fetch(`${this.baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as unknown };
  }

  /** An authenticated GET; resolves with status and parsed body. */
  async get(path: string): Promise<{ status: number; body: unknown }> {
    const res = await fetch(`${this.baseUrl}${path}`, { headers: { authorization: `Bearer ${this.token}` } });
    return { status: res.status, body: (await res.json()) as unknown };
  }

  /** Polls the snapshot until `probe` returns something (see `waitFor`). */
  async waitForSnapshot<T>(what: string, probe: (s: Snapshot) => T | undefined | false, deadlineMs?: number): Promise<T> {
    let last: Snapshot | null = null;
    return waitFor(
      async () => {
        last = await this.snapshot();
        return probe(last);
      },
      { what, ...(deadlineMs !== undefined ? { timeoutMs: deadlineMs } : {}), pollMs, describe: () => summarise(last) },
    );
  }

  /** Sends a signal and waits for the exit. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', deadlineMs = 15_000): Promise<ExitResult> {
    if (this.exit !== null) return this.exit;
    this.child.kill(signal);
    const timer = realClock.setTimeout(() => this.child.kill('SIGKILL'), deadlineMs);
    const result = await this.exited;
    realClock.clearTimeout(timer);
    return result;
  }
}

/** A short account of a snapshot for timeout messages. */
function summarise(s: Snapshot | null): string {
  if (s === null) return 'no snapshot yet';
  return JSON.stringify({
    statesSynced: s.statesSynced,
    desired: s.desired.pods.map((p) => `${p.uid}:${p.volumes.map((v) => v.name).join(',')}`),
    actual: s.actual.volumes.map((v) => `${v.uniqueVolumeName}:${v.pods.map((p) => `${p.podUid}=${p.mountState}`).join(',')}`),
    operations: s.operations.map((o) => `${o.operationName} ${o.volume} ${o.state} ${o.failures} ${o.lastError ?? ''}`),
    reconstruction: s.reconstruction,
    podErrors: s.podErrors,
    sourceErrors: s.sourceErrors,
  });
}

/**
 * The mounts at or below `dir` as this run's agent makes them: the kernel's table in a private
 * mount namespace (shared with the agent), else the unprivileged mounter's stand-in table in
 * the agent's state dir below `rootDir`.
 */
export async function mountsBelow(rootDir: string, dir: string = rootDir): Promise<MountInfo[]> {
  if (realMountsAllowed) return mountsAtOrBelow(await readMountInfo(), dir);
  return mountsAtOrBelow(await standInMounter(rootDir).list(), dir);
}

/** The unprivileged mounter over the agent's stand-in table (for listing and cleanup). */
export function standInMounter(rootDir: string): UnprivilegedMounter {
  return new UnprivilegedMounter({ stateDir: join(rootDir, unprivilegedMounterDirName), systemMountInfoPath: null });
}
