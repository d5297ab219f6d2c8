/**
 * Calls into file systems that may hang, made in a child process the agent can abandon.
 *
 * Why a child process and not a worker thread or the agent's own async fs: a statfs on a FUSE
 * mount whose daemon is stopped, or on an NFS server that went away, blocks the calling thread
 * in the kernel until the server answers, which may be never. The agent's async fs calls run on
 * libuv's shared thread pool (4 threads): four hung calls there and every file read of the agent
 * (manifests, state files, mountinfo) waits behind them. A worker thread blocked in a syscall
 * cannot be terminated (`worker.terminate()` only stops JavaScript) and keeps the process from
 * exiting. A child process is killed with SIGKILL (a FUSE or NFS wait is killable), and even one
 * the kernel cannot reap yet is out of the agent's process: the agent stops waiting for it,
 * counts it as abandoned and starts a fresh child for the next request.
 *
 * One long-lived child serves many requests (a health check batch is one request), so the idle
 * cost is one process start per hang, not per check. Requests are answered strictly in order
 * (probe-child.mjs works synchronously); a request that takes longer than its timeout marks its
 * child abandoned. At most {@link FsProbeOptions.maxAbandoned} abandoned children may still be
 * alive; beyond that the probe refuses work ({@link FsProbeUnavailableError}) instead of piling
 * up stuck processes.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import type { Clock, TimerHandle } from '../../../lib/clock/clock.ts';
import type { Logger } from '../../../lib/volume/logger.ts';

/** The child's script, next to this module. */
export const PROBE_CHILD_SCRIPT = fileURLToPath(new URL('./probe-child.mjs', import.meta.url));

/** The default limit of abandoned children still alive. */
export const DEFAULT_MAX_ABANDONED = 4;

/** One statfs(2) answer, in bytes and inodes (the kubelet's `MetricsStatFS`). */
export interface StatfsUsage {
  capacityBytes: number;
  availableBytes: number;
  usedBytes: number;
  inodes: number;
  inodesFree: number;
  inodesUsed: number;
}

/** statfs numbers of one path, or why there are none. */
export type StatfsResult = { ok: true; usage: StatfsUsage; durationMs: number } | { ok: false; error: string; durationMs: number };

/** Where the volume stats get the statfs numbers of non-CSI volumes (mount-health/probe-statfs.ts). */
export interface StatfsSource {
  /** statfs of every path; numbers less than `maxAgeMs` old may be reused. Never rejects. */
  statfs(paths: readonly string[], maxAgeMs: number): Promise<Map<string, StatfsResult>>;
}

/** The answer to one path of a `check`. */
export type PathCheck =
  /**
   * statfs and stat answered: `usage` is the statfs numbers (absent from a child that sent none),
   * `durationMs` the time since the previous answer of the request (this path's share).
   */
  | { path: string; outcome: 'ok'; usage?: StatfsUsage; durationMs?: number }
  | { path: string; outcome: 'error'; code: string; message: string }
  /** No answer within the timeout: the child was abandoned. */
  | { path: string; outcome: 'hung' }
  /** Not checked: too many paths of this call hung (see `maxHungPerCall`), or the probe is unavailable. */
  | { path: string; outcome: 'skipped'; reason: string };

/** What the child reads about one process (probe-child.mjs `readProc`); null where unreadable. */
export interface ProcFacts {
  pid: number;
  /** `mnt:[4026531841]`. */
  mntns: string | null;
  cwd: string | null;
  root: string | null;
  fds: { fd: string; target: string }[];
  /** Unique paths of the process's file mappings. */
  maps: string[];
  /** Arguments joined by spaces (at most 4 KiB read). */
  cmdline: string | null;
  comm: string | null;
  cgroup: string | null;
}

/** The probe cannot start a child: too many abandoned ones are still alive, or the spawn failed. */
export class FsProbeUnavailableError extends Error {
  override readonly name = 'FsProbeUnavailableError';
}

export function isFsProbeUnavailableError(err: unknown): err is FsProbeUnavailableError {
  return err instanceof FsProbeUnavailableError;
}

/** A request got no answer within its timeout; its child was abandoned. */
export class FsProbeTimeoutError extends Error {
  override readonly name = 'FsProbeTimeoutError';
  constructor(
    readonly op: string,
    readonly timeoutMs: number,
  ) {
    super(`${op}: no answer within ${String(timeoutMs)} ms (the file system call hangs)`);
  }
}

export function isFsProbeTimeoutError(err: unknown): err is FsProbeTimeoutError {
  return err instanceof FsProbeTimeoutError;
}

export interface FsProbeOptions {
  clock: Clock;
  logger: Logger;
  /** Abandoned children that may still be alive before the probe refuses work (default 4). */
  maxAbandoned?: number;
  /** The child's script (tests); default {@link PROBE_CHILD_SCRIPT}. */
  script?: string;
}

type Answer = Record<string, unknown> & { id: number };

interface Child {
  process: ChildProcessWithoutNullStreams;
  /** Called with each answer line of the request in progress. */
  onAnswer: ((answer: Answer) => void) | null;
  exited: boolean;
}

export class FsProbe {
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly maxAbandoned: number;
  private readonly script: string;
  private child: Child | null = null;
  private readonly abandoned = new Set<Child>();
  private nextId = 1;
  /** The tail of the request queue: requests run one at a time. */
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** Children started so far (for the benchmark and tests). */
  spawned = 0;

  constructor(opts: FsProbeOptions) {
    this.clock = opts.clock;
    this.logger = opts.logger;
    this.maxAbandoned = opts.maxAbandoned ?? DEFAULT_MAX_ABANDONED;
    this.script = opts.script ?? PROBE_CHILD_SCRIPT;
  }

  /** Abandoned children still alive. */
  abandonedAlive(): number {
    return this.abandoned.size;
  }

  /** The pid of the current child, or null (for the benchmark's CPU accounting). */
  childPid(): number | null {
    return this.child?.process.pid ?? null;
  }

  /**
   * statfs + stat of every path, in order, in one request to the child (one pipe write out, one
   * line back per path). A path with no answer within `perPathTimeoutMs` of the previous answer is
   * `hung`, its child is abandoned, and the paths after it go to a fresh child; after
   * `maxHungPerCall` hung paths the rest are `skipped`.
   */
  check(paths: readonly string[], opts: { perPathTimeoutMs: number; maxHungPerCall: number }): Promise<PathCheck[]> {
    return this.enqueue(async () => {
      const results: PathCheck[] = [];
      let hung = 0;
      let crashes = 0;
      while (results.length < paths.length) {
        const rest = paths.slice(results.length);
        if (hung >= opts.maxHungPerCall) {
          for (const path of rest) results.push({ path, outcome: 'skipped', reason: `${String(hung)} path(s) of this batch hung` });
          break;
        }
        let child: Child;
        try {
          child = this.ensureChild();
        } catch (err) {
          const reason = err instanceof Error ? err.message : String(err);
          for (const path of rest) results.push({ path, outcome: 'skipped', reason });
          break;
        }
        const answered = await this.streamCheck(child, rest, opts.perPathTimeoutMs);
        results.push(...answered.results);
        if (answered.crashed && ++crashes >= 2) {
          for (const path of paths.slice(results.length)) results.push({ path, outcome: 'skipped', reason: 'the probe process ended twice before it answered' });
          break;
        }
        if (answered.hungAt !== null) {
          results.push({ path: answered.hungAt, outcome: 'hung' });
          hung++;
        }
      }
      return results;
    });
  }

  /** The pids in /proc. */
  pids(timeoutMs: number): Promise<number[]> {
    return this.enqueue(async () => {
      const answer = await this.single({ op: 'pids' }, timeoutMs);
      return Array.isArray(answer.pids) ? answer.pids.filter((p): p is number => typeof p === 'number') : [];
    });
  }

  /** What one process holds (see {@link ProcFacts}). */
  proc(pid: number, timeoutMs: number): Promise<ProcFacts> {
    return this.enqueue(async () => {
      const answer = await this.single({ op: 'proc', pid }, timeoutMs);
      return answer.proc as ProcFacts;
    });
  }

  /** A file's text (at most `max` bytes); null when it cannot be read. */
  read(path: string, max: number, timeoutMs: number): Promise<string | null> {
    return this.enqueue(async () => {
      const answer = await this.single({ op: 'read', path, max }, timeoutMs);
      return typeof answer.text === 'string' ? answer.text : null;
    });
  }

  /**
   * Ends the current child (its stdin closes; it exits; one in the middle of a request, which may
   * hang, is killed) and refuses further requests.
   */
  close(): void {
    this.closed = true;
    const child = this.child;
    this.child = null;
    if (child === null || child.exited) return;
    if (child.onAnswer !== null) child.process.kill('SIGKILL');
    else child.process.stdin.end();
  }

  // INTERNALS

  private enqueue<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private ensureChild(): Child {
    if (this.closed) throw new FsProbeUnavailableError('the file system probe is closed');
    if (this.child !== null && !this.child.exited) return this.child;
    if (this.abandoned.size >= this.maxAbandoned) {
      throw new FsProbeUnavailableError(`${String(this.abandoned.size)} earlier probe process(es) still hang in the kernel; no new one is started until they exit`);
    }
    const proc = spawn(process.execPath, ['--max-old-space-size=64', this.script], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.spawned++;
    const child: Child = { process: proc, onAnswer: null, exited: false };
    createInterface({ input: proc.stdout }).on('line', (line) => {
      let answer: Answer;
      try {
        answer = JSON.parse(line) as Answer;
      } catch {
        this.logger.warn('file system probe: unreadable answer', { line: line.slice(0, 200) });
        return;
      }
      child.onAnswer?.(answer);
    });
    let stderr = '';
    proc.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 4096) stderr += chunk.toString('utf8');
    });
    proc.on('error', (err) => {
      this.logger.warn('file system probe process failed', { err: err.message });
    });
    proc.on('exit', (code, signal) => {
      child.exited = true;
      this.abandoned.delete(child);
      if (this.child === child) this.child = null;
      if (code !== 0 && signal !== 'SIGKILL') this.logger.warn('file system probe process ended', { code, signal, stderr: stderr.slice(0, 1000) });
      // A request in progress on a child that died gets its answer from the timeout path.
      child.onAnswer?.({ id: -1, exited: true });
    });
    // The agent's exit never waits for a probe (a hung one could hold it forever).
    proc.unref();
    for (const stream of [proc.stdin, proc.stdout, proc.stderr] as unknown as { unref?: () => void }[]) stream.unref?.();
    this.child = child;
    return child;
  }

  /** Abandons `child`: SIGKILL, and it is no longer used (it may stay alive while the kernel holds it). */
  private abandon(child: Child): void {
    child.onAnswer = null;
    if (this.child === child) this.child = null;
    if (child.exited) return;
    this.abandoned.add(child);
    child.process.kill('SIGKILL');
  }

  private streamCheck(child: Child, paths: readonly string[], perPathTimeoutMs: number): Promise<{ results: PathCheck[]; hungAt: string | null; crashed: boolean }> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      const results: PathCheck[] = [];
      let timer: TimerHandle | null = null;
      // One watchdog timer per request, not one per answer: an answer only moves `lastAnswerAt`,
      // and the timer, when it fires early, re-arms for what is left of the path's timeout.
      let lastAnswerAt = this.clock.monotonic();
      const finish = (hungAt: string | null, crashed = false): void => {
        if (timer !== null) this.clock.clearTimeout(timer);
        timer = null;
        child.onAnswer = null;
        resolve({ results, hungAt, crashed });
      };
      const watch = (delayMs: number): void => {
        timer = this.clock.setTimeout(() => {
          timer = null;
          const idle = this.clock.monotonic() - lastAnswerAt;
          if (idle < perPathTimeoutMs) {
            watch(perPathTimeoutMs - idle);
            return;
          }
          const hungAt = paths[results.length] ?? null;
          this.abandon(child);
          finish(hungAt);
        }, delayMs);
      };
      child.onAnswer = (answer) => {
        if (answer.exited === true) {
          // The child died (not by our kill): the paths not answered are checked by the next child.
          finish(null, true);
          return;
        }
        if (answer.id !== id) return;
        if (answer.end === true) {
          finish(null);
          return;
        }
        const now = this.clock.monotonic();
        const durationMs = now - lastAnswerAt;
        lastAnswerAt = now;
        const path = paths[results.length] ?? '';
        if (typeof answer.code === 'string') {
          results.push({ path, outcome: 'error', code: answer.code, message: String(answer.message) });
        } else {
          const usage = statfsUsage(answer.s);
          results.push(usage === null ? { path, outcome: 'ok', durationMs } : { path, outcome: 'ok', usage, durationMs });
        }
      };
      watch(perPathTimeoutMs);
      child.process.stdin.write(`${JSON.stringify({ id, op: 'check', paths })}\n`);
    });
  }

  private single(request: Record<string, unknown>, timeoutMs: number): Promise<Answer> {
    const child = this.ensureChild();
    const id = this.nextId++;
    const op = String(request.op);
    return new Promise((resolve, reject) => {
      const timer = this.clock.setTimeout(() => {
        this.abandon(child);
        reject(new FsProbeTimeoutError(op, timeoutMs));
      }, timeoutMs);
      child.onAnswer = (answer) => {
        if (answer.exited === true) {
          this.clock.clearTimeout(timer);
          child.onAnswer = null;
          reject(new FsProbeUnavailableError(`${op}: the probe process ended before it answered`));
          return;
        }
        if (answer.id !== id) return;
        this.clock.clearTimeout(timer);
        child.onAnswer = null;
        resolve(answer);
      };
      child.process.stdin.write(`${JSON.stringify({ id, ...request })}\n`);
    });
  }
}

/** The child's `s` (`[bsize, blocks, bfree, bavail, files, ffree]`) as bytes and inodes; null when absent or malformed. */
export function statfsUsage(s: unknown): StatfsUsage | null {
  if (!Array.isArray(s) || s.length !== 6 || !s.every((n) => typeof n === 'number' && Number.isFinite(n))) return null;
  const [bsize, blocks, bfree, bavail, files, ffree] = s as [number, number, number, number, number, number];
  return {
    capacityBytes: blocks * bsize,
    availableBytes: bavail * bsize,
    usedBytes: (blocks - bfree) * bsize,
    inodes: files,
    inodesFree: ffree,
    inodesUsed: files - ffree,
  };
}
