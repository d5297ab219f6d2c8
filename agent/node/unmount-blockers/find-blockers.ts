/**
 * Who keeps a path busy: every process with an open file, its working directory, its root or a
 * mapped file on it, and every other mount namespace where it is still mounted — what `lsof`,
 * `fuser -m` and `grep <path> /proc/*\/mountinfo` would find, without following into the mount.
 *
 * How a process's path is matched: its links (`/proc/<pid>/cwd`, `/root`, `/fd/*`) and mapped
 * file names are read with readlink/read only, which never enter the file system they point
 * into. A path is as that process sees it (a container sees the volume at its own mount point),
 * so it is resolved through that process's mount namespace: the mount of that namespace holding
 * it (longest mount point prefix in its `/proc/<pid>/mountinfo`) gives the device and the path
 * inside the file system, and it holds the target when that is the target's device and the path
 * is at or below the target's path inside that file system. The same test on every mount of a
 * namespace (its root inside the target) finds the namespaces that still mount it.
 *
 * Every /proc read runs in an {@link FsProbe} child: reading `/proc/<pid>/cmdline` or `/maps`
 * of a process stuck in a page fault on a hung mount blocks on that process's memory lock; such
 * a process costs one per-process deadline and is named in `incomplete`, and the search goes on.
 * Bounded: at most `maxHolders` holders, at most `timeBudgetMs` in all.
 */
import { isAbsolute, normalize, relative, sep } from 'node:path';
import type { BlockersReport, Holder } from '../../../lib/api/mount-health.ts';
import type { Clock } from '../../../lib/clock/clock.ts';
import { parseMountInfo, type MountInfo } from '../../../lib/mount-utils/mountinfo.ts';
import type { Logger } from '../../../lib/volume/logger.ts';
import { BlockersTargetError } from '../../runtime.ts';
import { FsProbe, isFsProbeTimeoutError, isFsProbeUnavailableError, type ProcFacts } from '../fs-probe/fs-probe.ts';
import { containerFromCgroup } from './cgroup-container.ts';

/** Defaults: 100 holders, 5 s in all, 1 s per process. */
export const BLOCKERS_DEFAULTS = { maxHolders: 100, timeBudgetMs: 5_000, perProcessTimeoutMs: 1_000 } as const;

export interface FindBlockersOptions {
  /** The path to search for (absolute, below `rootDir`). */
  path: string;
  /** The agent's root dir (resolved); a path outside it is refused. */
  rootDir: string;
  clock: Clock;
  logger: Logger;
  maxHolders?: number;
  timeBudgetMs?: number;
  perProcessTimeoutMs?: number;
  /** The pid whose mount namespace is "here" (default: this process). */
  selfPid?: number;
}

/** The file system position of a path: device and path inside the file system. */
interface FsPosition {
  dev: string;
  inner: string;
}

function isAtOrBelow(path: string, base: string): boolean {
  return path === base || base === '/' || path.startsWith(`${base}/`);
}

/** The mount of `mounts` holding `path` (the last mounted of the longest mount point prefix). */
function mountOf(mounts: readonly MountInfo[], path: string): MountInfo | null {
  let best: MountInfo | null = null;
  for (const m of mounts) {
    if (!isAtOrBelow(path, m.mountPoint)) continue;
    if (best === null || m.mountPoint.length >= best.mountPoint.length) best = m;
  }
  return best;
}

/** Where `path` (as seen through `mounts`) is in its file system. */
function positionOf(mounts: readonly MountInfo[], path: string): FsPosition | null {
  const m = mountOf(mounts, path);
  if (m === null) return null;
  const rest = m.mountPoint === '/' ? path : path.slice(m.mountPoint.length);
  const inner = normalize(`${m.root}/${rest}`).replace(/\/+$/, '') || '/';
  return { dev: `${String(m.major)}:${String(m.minor)}`, inner };
}

/** Refuses a path that is not absolute, not normalized, or not strictly below `rootDir`. */
export function checkBlockersPath(path: string, rootDir: string): void {
  const rel = relative(rootDir, path);
  if (!isAbsolute(path) || normalize(path) !== path || rel === '' || rel.startsWith('..') || isAbsolute(rel) || rel.split(sep).includes('..')) {
    throw new BlockersTargetError('outside-root-dir', `the path "${path}" is outside the agent's root dir ${rootDir}: the blocker search only looks at paths below it`);
  }
}

/** Searches every process for holders of `opts.path`; see the module comment. */
export async function findUnmountBlockers(opts: FindBlockersOptions): Promise<BlockersReport> {
  checkBlockersPath(opts.path, opts.rootDir);
  const { clock } = opts;
  const maxHolders = opts.maxHolders ?? BLOCKERS_DEFAULTS.maxHolders;
  const budget = opts.timeBudgetMs ?? BLOCKERS_DEFAULTS.timeBudgetMs;
  const perProcess = opts.perProcessTimeoutMs ?? BLOCKERS_DEFAULTS.perProcessTimeoutMs;
  const selfPid = opts.selfPid ?? process.pid;
  const started = clock.monotonic();
  const checkedAt = Math.floor(clock.now());
  const left = (): number => budget - (clock.monotonic() - started);
  const probe = new FsProbe({ clock, logger: opts.logger });
  const holders: Holder[] = [];
  const problems: string[] = [];
  let scanned = 0;
  let truncated = false;
  try {
    const selfFacts = await probe.proc(selfPid, perProcess);
    const selfNs = selfFacts.mntns;
    const selfMounts = parseMountInfo((await probe.read(`/proc/${String(selfPid)}/mountinfo`, 16 * 1024 * 1024, perProcess)) ?? '');
    const target = positionOf(selfMounts, opts.path);
    /** Mounts of each namespace seen (null: unreadable), by namespace link. */
    const namespaces = new Map<string, readonly MountInfo[] | null>();
    if (selfNs !== null) namespaces.set(selfNs, selfMounts);
    const holds = (mounts: readonly MountInfo[] | null, path: string): boolean => {
      if (target === null || mounts === null) return isAtOrBelow(path, opts.path);
      const at = positionOf(mounts, path);
      return at !== null && at.dev === target.dev && isAtOrBelow(at.inner, target.inner);
    };
    const pids = await probe.pids(Math.max(1, Math.min(perProcess, left())));
    for (const pid of pids) {
      if (left() <= 0) {
        problems.push(`the time budget of ${String(budget)} ms ran out after ${String(scanned)} of ${String(pids.length)} processes`);
        break;
      }
      if (pid === probe.childPid()) continue;
      let facts: ProcFacts;
      try {
        facts = await probe.proc(pid, Math.max(1, Math.min(perProcess, left())));
      } catch (err) {
        if (isFsProbeTimeoutError(err)) {
          problems.push(`pid ${String(pid)} did not answer within ${String(err.timeoutMs)} ms (it may itself hang on a mount)`);
          continue;
        }
        if (isFsProbeUnavailableError(err)) {
          problems.push(err.message);
          break;
        }
        throw err;
      }
      scanned++;
      let mounts: readonly MountInfo[] | null = null;
      let newNamespace = false;
      if (facts.mntns !== null) {
        if (!namespaces.has(facts.mntns)) {
          newNamespace = true;
          const text = await probe.read(`/proc/${String(pid)}/mountinfo`, 16 * 1024 * 1024, Math.max(1, Math.min(perProcess, left()))).catch(() => null);
          namespaces.set(facts.mntns, text === null ? null : parseMountInfo(text));
        }
        mounts = namespaces.get(facts.mntns) ?? null;
      }
      const command = facts.cmdline !== null && facts.cmdline !== '' ? facts.cmdline : (facts.comm ?? `pid ${String(pid)}`);
      const container = facts.cgroup === null ? null : containerFromCgroup(facts.cgroup);
      const found: Holder[] = [];
      const add = (kind: Holder['kind'], path: string): void => {
        found.push({ pid, command, kind, path, container });
      };
      if (facts.cwd !== null && holds(mounts, facts.cwd)) add('cwd', facts.cwd);
      if (facts.root !== null && holds(mounts, facts.root)) add('root', facts.root);
      for (const fd of facts.fds) if (holds(mounts, fd.target.replace(/ \(deleted\)$/, ''))) add('fd', fd.target);
      for (const mapped of facts.maps) if (holds(mounts, mapped.replace(/ \(deleted\)$/, ''))) add('mmap', mapped);
      if (newNamespace && facts.mntns !== selfNs && mounts !== null && target !== null) {
        for (const m of mounts) {
          if (`${String(m.major)}:${String(m.minor)}` === target.dev && isAtOrBelow(m.root, target.inner)) add('mount-namespace', m.mountPoint);
        }
      }
      for (const h of found) {
        if (holders.length >= maxHolders) {
          truncated = true;
          break;
        }
        holders.push(h);
      }
      if (truncated) break;
    }
  } catch (err) {
    if (err instanceof BlockersTargetError) throw err;
    problems.push(`/proc could not be read: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    probe.close();
  }
  return {
    path: opts.path,
    holders,
    truncated,
    incomplete: problems.length === 0 ? null : problems.slice(0, 5).join('; ') + (problems.length > 5 ? ` (and ${String(problems.length - 5)} more)` : ''),
    processesScanned: scanned,
    checkedAt,
    durationMs: Math.max(0, Math.round(clock.monotonic() - started)),
  };
}
