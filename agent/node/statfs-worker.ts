/**
 * statfs(2) of many paths without ever blocking the agent on a hung mount: the calls run
 * synchronously in a worker thread, never on the event loop or in libuv's small thread pool (four
 * statfs calls stuck on dead NFS or FUSE mounts there would stall every file operation of the
 * agent). A path that does not answer within the timeout is reported as such, its worker is left
 * behind (a thread stuck in a system call cannot be stopped), and a new worker goes on with the
 * paths after it. While that abandoned worker is still stuck, its path is not tried again — at
 * most one stuck thread per hung path, however many passes run. The path becomes eligible again
 * once the stuck call returns (the worker exits).
 *
 * Cost: one worker start per pass (tens of milliseconds of CPU), then one statfs per path.
 */
import { Worker } from 'node:worker_threads';
import type { Clock, TimerHandle } from '../../lib/clock/clock.ts';

/** One statfs answer, in bytes and inodes (the kubelet's `MetricsStatFS`). */
export interface StatfsUsage {
  capacityBytes: number;
  availableBytes: number;
  usedBytes: number;
  inodes: number;
  inodesFree: number;
  inodesUsed: number;
}

export type StatfsResult = { ok: true; usage: StatfsUsage; durationMs: number } | { ok: false; error: string; durationMs: number };

/** Plain JavaScript: the worker runs as `eval` code, with no loader or TypeScript involved. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
for (const path of workerData) {
  const started = performance.now();
  try {
    const s = fs.statfsSync(path);
    parentPort.postMessage({ ok: true, durationMs: performance.now() - started, bsize: s.bsize, blocks: s.blocks, bfree: s.bfree, bavail: s.bavail, files: s.files, ffree: s.ffree });
  } catch (err) {
    parentPort.postMessage({ ok: false, durationMs: performance.now() - started, error: String(err && err.message || err) });
  }
}
`;

interface WorkerAnswer {
  ok: boolean;
  durationMs: number;
  error?: string;
  bsize?: number;
  blocks?: number;
  bfree?: number;
  bavail?: number;
  files?: number;
  ffree?: number;
}

export class WorkerStatfs {
  /** Paths whose statfs has not returned yet, with the time it was sent. */
  private readonly stuck = new Map<string, number>();

  constructor(
    private readonly clock: Clock,
    private readonly timeoutMs: number,
  ) {}

  /** statfs of every path; resolves within about `timeoutMs` per hung path. */
  async statfsAll(paths: readonly string[]): Promise<Map<string, StatfsResult>> {
    const out = new Map<string, StatfsResult>();
    let queue: string[] = [];
    for (const path of paths) {
      const since = this.stuck.get(path);
      if (since === undefined) queue.push(path);
      else out.set(path, { ok: false, durationMs: 0, error: `statfs of ${path} has not returned since ${new Date(since).toISOString()} (hung mount?); not retried until it does` });
    }
    while (queue.length > 0) {
      const answered = await this.batch(queue, out);
      queue = queue.slice(answered);
    }
    return out;
  }

  /** Runs one worker over `paths`; resolves with how many paths got a result (all, or up to and including the hung one). */
  private batch(paths: readonly string[], out: Map<string, StatfsResult>): Promise<number> {
    return new Promise((resolve) => {
      const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: paths });
      let next = 0;
      let settled = false;
      let timer: TimerHandle | null = null;
      const finish = (count: number): void => {
        if (settled) return;
        settled = true;
        if (timer !== null) this.clock.clearTimeout(timer);
        resolve(count);
      };
      const hung = (): void => {
        const path = paths[next];
        if (path === undefined || settled) return;
        out.set(path, { ok: false, durationMs: this.timeoutMs, error: `statfs of ${path} did not answer within ${this.timeoutMs} ms (hung mount?)` });
        this.stuck.set(path, this.clock.now() - this.timeoutMs);
        worker.removeAllListeners('message');
        worker.once('exit', () => this.stuck.delete(path));
        worker.unref();
        void worker.terminate();
        finish(next + 1);
      };
      const arm = (): void => {
        if (timer !== null) this.clock.clearTimeout(timer);
        timer = this.clock.setTimeout(hung, this.timeoutMs);
      };
      // The per-path deadline starts once the worker runs: its start-up (a loaded machine can take
      // longer than a statfs timeout for it) is not a hung mount. A worker that does not start at
      // all fails the batch after a generous start-up deadline.
      timer = this.clock.setTimeout(() => {
        if (next > 0 || settled) return;
        for (const path of paths) out.set(path, { ok: false, durationMs: 0, error: 'statfs worker did not start' });
        worker.unref();
        void worker.terminate();
        finish(paths.length);
      }, Math.max(10 * this.timeoutMs, 10_000));
      worker.once('online', arm);
      worker.on('message', (answer: WorkerAnswer) => {
        const path = paths[next];
        if (path === undefined) return;
        out.set(path, toResult(answer));
        next++;
        arm();
        if (next === paths.length) finish(next);
      });
      worker.once('error', (err: Error) => {
        // The worker itself failed (not a statfs error, which it reports): fail the rest of this batch.
        for (const path of paths.slice(next)) out.set(path, { ok: false, durationMs: 0, error: `statfs worker failed: ${err.message}` });
        finish(paths.length);
      });
      worker.once('exit', () => {
        if (!settled) {
          for (const path of paths.slice(next)) out.set(path, { ok: false, durationMs: 0, error: 'statfs worker exited early' });
          finish(paths.length);
        }
      });
    });
  }
}

function toResult(a: WorkerAnswer): StatfsResult {
  const durationMs = Math.round(a.durationMs);
  if (!a.ok) return { ok: false, durationMs, error: a.error ?? 'statfs failed' };
  const bsize = a.bsize ?? 0;
  const blocks = a.blocks ?? 0;
  const files = a.files ?? 0;
  const ffree = a.ffree ?? 0;
  return {
    ok: true,
    durationMs,
    usage: {
      capacityBytes: blocks * bsize,
      availableBytes: (a.bavail ?? 0) * bsize,
      usedBytes: (blocks - (a.bfree ?? 0)) * bsize,
      inodes: files,
      inodesFree: ffree,
      inodesUsed: files - ffree,
    },
  };
}
