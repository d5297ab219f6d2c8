/**
 * Guarded cleanup of ONE orphaned pod directory (docs/safety.md, "Observe mode:
 * cleaning up an orphaned pod directory" and "Removing a pod or volume directory"). Community `rm -rf` scripts wiped live
 * volume data because a path was still mounted (kubernetes#60987); this does the opposite:
 *
 * 1. Refuse unless the pod is gone: not known to the API, not in the desired state, no running
 *    container in the runtime, and the desired state complete (reconstruction finished, no pods
 *    unresolved because of API errors). The caller answers these through {@link OrphanCleanupGuards};
 *    a guard that throws refuses too (fail closed). With mounts below the pod dir, refuse while the
 *    kubelet still tears the pod's volumes down itself (its reconstruction finds them: a kubelet
 *    that was stopped when the pod was deleted unmounts them when it starts again).
 * 2. Read the mount table fresh and check that it is the table of the root dir's mount namespace
 *    (lib/observe/mount-table-check.ts: the root dir's device as listed, every listed mount below
 *    it present with its device, every volume mount on disk listed); refuse otherwise, since a
 *    foreign table makes every mount invisible. Refuse when the pod directory is itself a mount point or lies in
 *    a mount below the kubelet root (the mount is not this pod's), when a mount under it shows
 *    the same directory as a mount in the directory of a pod that is not an orphan (refs by
 *    major:minor and root, as `GetMountRefs`), when a directory sits on another device although
 *    the table does not list it (the table cannot be trusted), or when the tree is larger than
 *    the walk limit.
 * 3. Plan: the mounts under the pod dir, deepest first (stacked mounts top-most first), then the
 *    directories that are empty or will be once their empty children and the unmounted mount
 *    points are gone, children before parents. Files are never removed, except `vol_data.json`
 *    when the caller asks for it; symlinks are never followed nor removed. A dry run ends here.
 * 4. Act, re-checking right before: the guards again (the caller answers "known to the API" with
 *    a live read, not a cache), the mount table's check again, the pod dir is still the same directory,
 *    and, before every single unmount, the mount table read again: the mount is still there and
 *    on top, and no mount appeared under the pod dir that the plan did not list (abort
 *    otherwise). Unmounts go through the Mounter, which has no lazy or forced unmount.
 * 5. Walk again (what an unmount uncovered is judged by the same rules) and remove through
 *    `safeRemove` (lib/mount-utils/safe-remove.ts), which reads the mount table again before each
 *    rmdir, stays below the root and on its filesystem, and never follows a symlink. Entering
 *    `volumes/`, `volume-subpaths/` and `volumeDevices/` is allowed only here, after step 4 has
 *    verified that nothing below the pod directory is mounted (safe-remove's
 *    `volumeDirsVerifiedUnmounted`), and even then only empty directories go.
 *
 * Holding the per-volume operation lock and writing the audit record are the caller's part; the
 * result carries every check with its outcome for that record.
 */
import { basename, dirname, join } from 'node:path';
import type { Clock } from '../clock/clock.ts';
import { DefaultKubeletPodsDirName } from '../kubelet-constants.ts';
import { mountsAt, mountsAtOrBelow, pathWithinOrEqual } from '../mount-utils/mount-table.ts';
import type { Mounter } from '../mount-utils/mounter.ts';
import type { MountInfo, MountInfoReader } from '../mount-utils/mountinfo.ts';
import { isSafeRemoveRefusedError, nodeSafeRemoveFs, safeRemove } from '../mount-utils/safe-remove.ts';
import type { SafeRemoveFs } from '../mount-utils/safe-remove.ts';
import { VOL_DATA_FILE_NAME } from '../volume/csi/vol-data.ts';
import { checkMountTableShowsRootDir } from './mount-table-check.ts';
import { nodeReadOnlyFs, walkOneFilesystem } from './pod-dir-walk.ts';
import type { WalkEntry, WalkStat } from './pod-dir-walk.ts';
import { errorMessage } from '../volume/errors.ts';

/**
 * What the caller knows about the pod; each may be async. Throwing (the API cannot be asked)
 * refuses the cleanup with `guard-check-failed`.
 */
export interface OrphanCleanupGuards {
  /** True while the API server lists a pod with this UID, in any phase. */
  podKnownToApi(podUID: string): boolean | Promise<boolean>;
  /** True while the desired state of world (the agent's, or what it knows of the kubelet's) holds the pod. */
  podInDesiredState(podUID: string): boolean | Promise<boolean>;
  /** True when the container runtime reports a running container (or sandbox) of the pod. */
  podHasRunningContainers(podUID: string): boolean | Promise<boolean>;
  /**
   * Why the desired state cannot be trusted yet (reconstruction still running, pods unresolved
   * because of API errors), or null when it is complete.
   */
  desiredStateIncomplete(): string | null | Promise<string | null>;
  /**
   * The kubelet's own outstanding teardown of the pod's volumes, one line per operation (e.g.
   * `volume_unmount kubernetes.io/empty-dir/<uid>-mem`): what the observer's plan says the kubelet
   * still does for this pod because its reconstruction finds those volumes on disk. While any is
   * outstanding and something is mounted below the pod directory, nothing is unmounted
   * (`kubelet-tears-down`): the kubelet unmounts them itself, through the volume plugin (for CSI,
   * NodeUnpublishVolume, which a plain unmount would bypass), as soon as it runs; the cleanup is
   * for what it leaves behind (volumes it cannot reconstruct, empty directories). Absent: no such
   * check (callers without a plan).
   */
  kubeletTeardown?(podUID: string): readonly string[] | Promise<readonly string[]>;
  /**
   * Why the orphan's own verdict leaves the next step to the kubelet (its volumes are still
   * mounted: the kubelet's reconciler tears them down, and the cleanup must not race it), or null
   * when it does not. Absent: not checked.
   */
  kubeletMustUnmountFirst?(podUID: string): string | null | Promise<string | null>;
}

/** File system calls of the cleanup: those of `safeRemove`, with a `lstat` that also gives size and mtime. */
export type OrphanCleanupFs = Omit<SafeRemoveFs, 'lstat'> & { lstat(path: string): Promise<WalkStat> };

export interface OrphanCleanupOptions {
  /** The kubelet root dir. */
  rootDir: string;
  podUID: string;
  guards: OrphanCleanupGuards;
  /** Reads the mount table of the kubelet's mount namespace; called afresh before every step. */
  readMountTable: MountInfoReader;
  /** Unmounts one mount; the interface offers no lazy or forced unmount, on purpose. */
  mounter: Pick<Mounter, 'unmount'>;
  clock: Pick<Clock, 'now'>;
  /** Also unlink `vol_data.json` files once nothing is mounted; default false (they record the driver and handle). */
  removeMetadataFiles?: boolean;
  /** Entries walked at most; a larger tree is refused. Default 10 000. */
  maxEntries?: number;
  fs?: OrphanCleanupFs;
}

/** Stable codes of why a cleanup did not start or stopped. */
export type OrphanCleanupRefusalCode =
  | 'invalid-pod-uid'
  | 'invalid-root-dir'
  | 'pod-dir-is-symlink'
  | 'pod-dir-not-directory'
  | 'pod-dir-changed'
  | 'pod-known-to-api'
  | 'pod-in-desired-state'
  | 'pod-has-running-containers'
  | 'desired-state-incomplete'
  | 'kubelet-must-unmount'
  | 'guard-check-failed'
  | 'mount-table-unreadable'
  | 'mount-table-not-for-root-dir'
  | 'pod-dir-inside-mount'
  | 'mount-shared-with-live-pod'
  | 'unlisted-filesystem-boundary'
  | 'too-many-entries'
  | 'mounts-changed'
  | 'mounts-remain'
  | 'kubelet-tears-down';

export interface CleanupRefusal {
  code: OrphanCleanupRefusalCode;
  /** One sentence for operators. */
  message: string;
}

/** One evaluated check, for the audit record. */
export interface CleanupCheck {
  check: string;
  passed: boolean;
  detail: string;
  /** Clock time of the evaluation. */
  at: number;
}

export interface PlannedUnmount {
  mountPoint: string;
  /** mountinfo id, compared together with the mount point before unmounting. */
  id: number;
  fsType: string;
  source: string;
}

export interface PlannedRemoval {
  path: string;
  kind: 'directory' | 'metadata-file';
  /** Decided for certain only after the unmounts: a mount point, or a directory above one. */
  afterUnmount: boolean;
}

/** Stable codes of why an entry stays. */
export type KeptCode = 'file' | 'symlink' | 'special-file' | 'not-empty' | 'unreadable' | 'remove-refused';

export interface KeptEntry {
  path: string;
  code: KeptCode;
  reason: string;
}

export interface CleanupFailure {
  path: string;
  step: 'unmount' | 'remove';
  message: string;
}

export interface OrphanCleanupPlan {
  podUID: string;
  /** The resolved root and pod dir. */
  rootDir: string;
  podDir: string;
  /** The pod dir's identity at planning time; the act refuses if the directory was replaced. */
  podDirIdentity: { dev: number; ino: number };
  plannedAt: number;
  /** In execution order: deepest first. */
  unmounts: PlannedUnmount[];
  /** In execution order: children before parents; the pod dir last when it can go. */
  removals: PlannedRemoval[];
  keep: KeptEntry[];
}

interface ResultBase {
  podUID: string;
  podDir: string;
  checks: CleanupCheck[];
}

/** The pod dir does not exist (already cleaned up): nothing to do. */
export interface OrphanCleanupNotFound extends ResultBase {
  outcome: 'not-found';
}

export interface OrphanCleanupRefused extends ResultBase {
  outcome: 'refused';
  refused: CleanupRefusal[];
}

/** A dry run, or the first half of {@link planOrphanCleanup} + {@link executeOrphanCleanup}. */
export interface OrphanCleanupPlanned extends ResultBase {
  outcome: 'planned';
  plan: OrphanCleanupPlan;
}

/**
 * `completed`: every step ran (entries may still be kept, with reasons). `aborted`: a re-check
 * or an unmount failed part-way (then nothing was removed), or a removal failed with an
 * unexpected error; what was done so far is listed either way.
 */
export interface OrphanCleanupExecuted extends ResultBase {
  outcome: 'completed' | 'aborted';
  unmounted: string[];
  removed: string[];
  kept: KeptEntry[];
  refused: CleanupRefusal[];
  failures: CleanupFailure[];
}

export type OrphanCleanupResult = OrphanCleanupNotFound | OrphanCleanupRefused | OrphanCleanupPlanned | OrphanCleanupExecuted;

/** Default of {@link OrphanCleanupOptions.maxEntries}. */
const DEFAULT_CLEANUP_MAX_ENTRIES = 10_000;

function errnoCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** A pod UID as a directory name: no separators, no dot names, nothing empty. */
function validPodUID(uid: string): boolean {
  return typeof uid === 'string' && uid !== '' && uid !== '.' && uid !== '..' && !uid.includes('/') && !uid.includes('\0');
}

/** Everything one run needs, resolved once. */
class Cleanup {
  readonly checks: CleanupCheck[] = [];
  readonly fs: OrphanCleanupFs;
  readonly maxEntries: number;

  constructor(readonly opts: OrphanCleanupOptions) {
    this.fs = opts.fs ?? { ...nodeSafeRemoveFs, lstat: (p) => nodeReadOnlyFs.lstat(p) };
    this.maxEntries = opts.maxEntries ?? DEFAULT_CLEANUP_MAX_ENTRIES;
  }

  record(check: string, passed: boolean, detail: string): void {
    this.checks.push({ check, passed, detail, at: this.opts.clock.now() });
  }

  base(podDir: string): ResultBase {
    return { podUID: this.opts.podUID, podDir, checks: this.checks };
  }

  /** Resolves root and pod dir, and checks the pod dir is a real directory. */
  async locate(): Promise<{ root: string; podDir: string; st: WalkStat } | CleanupRefusal | 'not-found'> {
    const { rootDir, podUID } = this.opts;
    if (!validPodUID(podUID)) return { code: 'invalid-pod-uid', message: `${JSON.stringify(podUID)} is not a pod UID (it must be one directory name).` };
    let root: string;
    try {
      root = await this.fs.realpath(rootDir);
    } catch (err) {
      return { code: 'invalid-root-dir', message: `The kubelet root dir ${rootDir} cannot be resolved (${errnoCode(err) ?? errorMessage(err)}).` };
    }
    if (root === '/') return { code: 'invalid-root-dir', message: 'The kubelet root dir must not be /.' };
    const podsDir = join(root, DefaultKubeletPodsDirName);
    let resolvedPods: string;
    try {
      resolvedPods = await this.fs.realpath(podsDir);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return 'not-found';
      return { code: 'invalid-root-dir', message: `${podsDir} cannot be resolved (${errnoCode(err) ?? errorMessage(err)}).` };
    }
    if (resolvedPods !== podsDir) return { code: 'invalid-root-dir', message: `${podsDir} is a symlink (to ${resolvedPods}); refusing to act through it.` };
    const podDir = join(podsDir, podUID);
    let st: WalkStat;
    try {
      st = await this.fs.lstat(podDir);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return 'not-found';
      throw err;
    }
    if (st.isSymbolicLink()) return { code: 'pod-dir-is-symlink', message: `${podDir} is a symlink; symlinks are never followed.` };
    if (!st.isDirectory()) return { code: 'pod-dir-not-directory', message: `${podDir} is not a directory.` };
    return { root, podDir, st };
  }

  /** The four guards, each recorded; returns the refusals. */
  async guards(): Promise<CleanupRefusal[]> {
    const { guards, podUID } = this.opts;
    const refused: CleanupRefusal[] = [];
    const ask = async <T>(check: string, fn: () => T | Promise<T>): Promise<{ ok: true; value: T } | { ok: false }> => {
      try {
        return { ok: true, value: await fn() };
      } catch (err) {
        this.record(check, false, `the check failed: ${errorMessage(err)}`);
        refused.push({ code: 'guard-check-failed', message: `Could not check ${check}: ${errorMessage(err)}. Refusing rather than guessing.` });
        return { ok: false };
      }
    };
    const yesNo: [OrphanCleanupRefusalCode, () => boolean | Promise<boolean>, string][] = [
      ['pod-known-to-api', () => guards.podKnownToApi(podUID), `The API server still lists pod ${podUID}; it is not an orphan.`],
      ['pod-in-desired-state', () => guards.podInDesiredState(podUID), `Pod ${podUID} is still in the desired state of world; its volumes are wanted.`],
      ['pod-has-running-containers', () => guards.podHasRunningContainers(podUID), `The container runtime reports running containers of pod ${podUID}; unmounting would pull volumes from under them.`],
    ];
    for (const [code, fn, message] of yesNo) {
      const r = await ask(code, fn);
      if (!r.ok) continue;
      this.record(code, !r.value, r.value ? 'yes' : 'no');
      if (r.value) refused.push({ code, message });
    }
    const incomplete = await ask('desired-state-incomplete', () => guards.desiredStateIncomplete());
    if (incomplete.ok) {
      this.record('desired-state-incomplete', incomplete.value === null, incomplete.value ?? 'complete');
      if (incomplete.value !== null) {
        refused.push({ code: 'desired-state-incomplete', message: `The desired state is not complete (${incomplete.value}); destructive cleanup waits until it is.` });
      }
    }
    if (guards.kubeletMustUnmountFirst !== undefined) {
      const r = await ask('kubelet-must-unmount', () => guards.kubeletMustUnmountFirst?.(podUID) ?? null);
      if (r.ok) {
        this.record('kubelet-must-unmount', r.value === null, r.value ?? 'no');
        if (r.value !== null) refused.push({ code: 'kubelet-must-unmount', message: `The orphan's verdict leaves this to the kubelet: ${r.value}` });
      }
    }
    return refused;
  }

  async table(): Promise<readonly MountInfo[] | CleanupRefusal> {
    try {
      const t = await this.opts.readMountTable();
      this.record('mount-table-read', true, `${plural(t.length, 'mount')} listed`);
      return t;
    } catch (err) {
      this.record('mount-table-read', false, errorMessage(err));
      return { code: 'mount-table-unreadable', message: `The mount table cannot be read (${errorMessage(err)}); nothing is done without it.` };
    }
  }

  /** Whether the table is the root dir's (see mount-table-check.ts); a refusal when it is not. */
  async tableShowsRoot(table: readonly MountInfo[], root: string): Promise<CleanupRefusal | null> {
    let r;
    try {
      r = await checkMountTableShowsRootDir(root, table, this.fs);
    } catch (err) {
      r = { ok: false as const, reason: `the check failed: ${errorMessage(err)}` };
    }
    this.record('mount-table-shows-root-dir', r.ok, r.ok ? r.detail : r.reason);
    return r.ok ? null : { code: 'mount-table-not-for-root-dir', message: `The mount table does not describe the kubelet root dir: ${r.reason}. Nothing is done while mounts may be invisible.` };
  }

  /** Table-based refusals: the pod dir inside a mount, mounts shared with live pods. */
  async mountRefusals(table: readonly MountInfo[], root: string, podDir: string): Promise<CleanupRefusal[]> {
    const refused: CleanupRefusal[] = [];
    const enclosing = table.filter((e) => pathWithinOrEqual(podDir, e.mountPoint) && e.mountPoint !== root && pathWithinOrEqual(e.mountPoint, root));
    this.record('pod-dir-inside-mount', enclosing.length === 0, enclosing.length === 0 ? 'no' : enclosing.map((e) => e.mountPoint).join(', '));
    for (const e of enclosing) {
      refused.push({
        code: 'pod-dir-inside-mount',
        message: e.mountPoint === podDir ? `${podDir} is itself a mount point (${e.fsType} from ${e.source}); it is not this pod's to unmount.` : `${podDir} lies inside the mount at ${e.mountPoint}; refusing to act inside another mount.`,
      });
    }
    const podsDir = dirname(podDir);
    const shared: string[] = [];
    for (const m of mountsAtOrBelow(table, podDir)) {
      const refs = table.filter((e) => e !== m && e.root === m.root && e.major === m.major && e.minor === m.minor && pathWithinOrEqual(e.mountPoint, podsDir) && !pathWithinOrEqual(e.mountPoint, podDir));
      for (const ref of refs) {
        const other = ref.mountPoint.slice(podsDir.length + 1).split('/')[0] ?? '';
        if (other === '') continue;
        let live: boolean;
        try {
          live = (await this.opts.guards.podKnownToApi(other)) || (await this.opts.guards.podInDesiredState(other));
        } catch (err) {
          refused.push({ code: 'guard-check-failed', message: `Could not check pod ${other}, which shares ${m.mountPoint}: ${errorMessage(err)}.` });
          continue;
        }
        if (live) {
          shared.push(`${m.mountPoint} ↔ ${ref.mountPoint}`);
          refused.push({
            code: 'mount-shared-with-live-pod',
            message: `The mount at ${m.mountPoint} shows the same directory as ${ref.mountPoint} of live pod ${other}; leave it to the kubelet (or the driver's NodeUnpublish).`,
          });
        }
      }
    }
    this.record('mount-shared-with-live-pod', shared.length === 0, shared.length === 0 ? 'no' : shared.join('; '));
    return refused;
  }

  /**
   * With mounts below the pod dir: refused while the kubelet has its own teardown of the pod's
   * volumes outstanding ({@link OrphanCleanupGuards.kubeletTeardown}); a guard that throws refuses.
   */
  async kubeletTeardownRefusal(table: readonly MountInfo[], podDir: string): Promise<CleanupRefusal | null> {
    const { guards } = this.opts;
    if (guards.kubeletTeardown === undefined) return null;
    const mounts = mountsAtOrBelow(table, podDir);
    let ops: readonly string[];
    try {
      ops = mounts.length === 0 ? [] : await guards.kubeletTeardown(this.opts.podUID);
    } catch (err) {
      this.record('kubelet-tears-down', false, `the check failed: ${errorMessage(err)}`);
      return { code: 'guard-check-failed', message: `Could not check whether the kubelet tears the pod's volumes down itself: ${errorMessage(err)}. Refusing rather than guessing.` };
    }
    const blocked = mounts.length > 0 && ops.length > 0;
    this.record('kubelet-tears-down', !blocked, mounts.length === 0 ? 'nothing mounted below the pod directory' : ops.length === 0 ? 'no teardown of this pod outstanding' : ops.join('; '));
    if (!blocked) return null;
    return {
      code: 'kubelet-tears-down',
      message: `${plural(mounts.length, 'mount')} below ${podDir} belong to volumes the kubelet still tears down itself (${ops.join('; ')}): it finds them on disk and unmounts them through their plugin as soon as it runs. Leave them to the kubelet; clean up what it leaves behind.`,
    };
  }

  /** Walks the pod dir on its own filesystem, not entering mount points. */
  async walk(podDir: string, table: readonly MountInfo[], podsDev: number): Promise<{ entries: WalkEntry[] } | CleanupRefusal> {
    const mountPoints = new Set(table.map((e) => e.mountPoint));
    const r = await walkOneFilesystem(podDir, { fs: this.fs, isMountPoint: (p) => mountPoints.has(p), maxEntries: this.maxEntries, startParentDev: podsDev });
    if (r.truncated) {
      this.record('entry-limit', false, `more than ${this.maxEntries} entries`);
      return { code: 'too-many-entries', message: `${podDir} has more than ${this.maxEntries} entries; that is not an abandoned pod directory to clean up blindly.` };
    }
    this.record('entry-limit', true, `${r.entries.length} entries`);
    const boundaries = r.entries.filter((e) => e.unlistedBoundary).map((e) => e.path);
    this.record('unlisted-filesystem-boundary', boundaries.length === 0, boundaries.length === 0 ? 'no' : boundaries.join(', '));
    if (boundaries.length > 0) {
      return {
        code: 'unlisted-filesystem-boundary',
        message: `${boundaries.join(', ')} ${boundaries.length === 1 ? 'is' : 'are'} on another filesystem that the mount table does not list; the table cannot be trusted, so nothing is done.`,
      };
    }
    return { entries: r.entries };
  }

  /** Decides, bottom-up, what can go. Mount points count as removable directories, decided after the unmount. */
  decide(entries: readonly WalkEntry[]): { removals: PlannedRemoval[]; keep: KeptEntry[] } {
    const children = new Map<string, WalkEntry[]>();
    for (const e of entries.slice(1)) {
      const list = children.get(dirname(e.path)) ?? [];
      list.push(e);
      children.set(dirname(e.path), list);
    }
    const removals: PlannedRemoval[] = [];
    const keep: KeptEntry[] = [];
    const removeMetadata = this.opts.removeMetadataFiles === true;
    // Returns whether `e` goes, and whether that waits for an unmount.
    const visit = (e: WalkEntry): { goes: boolean; afterUnmount: boolean } => {
      if (e.mountPoint) {
        removals.push({ path: e.path, kind: 'directory', afterUnmount: true });
        return { goes: true, afterUnmount: true };
      }
      if (e.kind === 'symlink') {
        keep.push({ path: e.path, code: 'symlink', reason: 'a symlink: never followed, never removed' });
        return { goes: false, afterUnmount: false };
      }
      if (e.kind === 'other') {
        keep.push({ path: e.path, code: 'special-file', reason: 'a socket, fifo or device node' });
        return { goes: false, afterUnmount: false };
      }
      if (e.kind === 'file') {
        if (removeMetadata && basename(e.path) === VOL_DATA_FILE_NAME) {
          removals.push({ path: e.path, kind: 'metadata-file', afterUnmount: false });
          return { goes: true, afterUnmount: false };
        }
        keep.push({ path: e.path, code: 'file', reason: `a file of ${e.size} bytes: files are never deleted` });
        return { goes: false, afterUnmount: false };
      }
      if (e.error !== undefined) {
        keep.push({ path: e.path, code: 'unreadable', reason: `cannot be listed (${e.error})` });
        return { goes: false, afterUnmount: false };
      }
      let kept = 0;
      let afterUnmount = false;
      for (const c of children.get(e.path) ?? []) {
        const r = visit(c);
        if (!r.goes) kept++;
        afterUnmount ||= r.afterUnmount;
      }
      if (kept > 0) {
        keep.push({ path: e.path, code: 'not-empty', reason: `keeps ${plural(kept, 'entry', 'entries')} (see their reasons)` });
        return { goes: false, afterUnmount };
      }
      removals.push({ path: e.path, kind: 'directory', afterUnmount });
      return { goes: true, afterUnmount };
    };
    const top = entries[0];
    if (top !== undefined) visit(top);
    return { removals, keep };
  }
}

/** Mounts under the pod dir in unmount order: deepest path first; stacked mounts top-most (later in the table) first. */
function unmountOrder(table: readonly MountInfo[], podDir: string): MountInfo[] {
  const indexed = table.map((e, i) => ({ e, i })).filter(({ e }) => pathWithinOrEqual(e.mountPoint, podDir));
  indexed.sort((a, b) => b.e.mountPoint.split('/').length - a.e.mountPoint.split('/').length || b.i - a.i);
  return indexed.map(({ e }) => e);
}

/**
 * Checks everything and returns the plan (or why not). Never changes anything: this is the dry
 * run. Pass the plan to {@link executeOrphanCleanup}, which checks everything again.
 */
export async function planOrphanCleanup(opts: OrphanCleanupOptions): Promise<OrphanCleanupNotFound | OrphanCleanupRefused | OrphanCleanupPlanned> {
  const c = new Cleanup(opts);
  const loc = await c.locate();
  const fallbackDir = join(opts.rootDir, DefaultKubeletPodsDirName, opts.podUID);
  if (loc === 'not-found') return { outcome: 'not-found', ...c.base(fallbackDir) };
  if ('code' in loc) return { outcome: 'refused', refused: [loc], ...c.base(fallbackDir) };
  const { root, podDir, st } = loc;
  const refused = await c.guards();
  const table = await c.table();
  if ('code' in table) return { outcome: 'refused', refused: [...refused, table], ...c.base(podDir) };
  const foreign = await c.tableShowsRoot(table, root);
  if (foreign !== null) refused.push(foreign);
  refused.push(...(await c.mountRefusals(table, root, podDir)));
  const teardown = await c.kubeletTeardownRefusal(table, podDir);
  if (teardown !== null) refused.push(teardown);
  const podsStat = await c.fs.lstat(dirname(podDir));
  const walk = await c.walk(podDir, table, podsStat.dev);
  if ('code' in walk) refused.push(walk);
  if (refused.length > 0 || 'code' in walk) return { outcome: 'refused', refused, ...c.base(podDir) };
  const { removals, keep } = c.decide(walk.entries);
  const plan: OrphanCleanupPlan = {
    podUID: opts.podUID,
    rootDir: root,
    podDir,
    podDirIdentity: { dev: st.dev, ino: st.ino },
    plannedAt: opts.clock.now(),
    unmounts: unmountOrder(table, podDir).map((e) => ({ mountPoint: e.mountPoint, id: e.id, fsType: e.fsType, source: e.source })),
    removals,
    keep,
  };
  return { outcome: 'planned', plan, ...c.base(podDir) };
}

/**
 * Carries out a plan from {@link planOrphanCleanup} for the same options, re-checking the guards,
 * the pod dir's identity and the mount table first, and the mount table again before every
 * unmount. Mounts that are gone already are skipped; a mount the plan did not list aborts.
 */
export async function executeOrphanCleanup(plan: OrphanCleanupPlan, opts: OrphanCleanupOptions): Promise<OrphanCleanupNotFound | OrphanCleanupRefused | OrphanCleanupExecuted> {
  const c = new Cleanup(opts);
  const loc = await c.locate();
  if (loc === 'not-found') return { outcome: 'not-found', ...c.base(plan.podDir) };
  if ('code' in loc) return { outcome: 'refused', refused: [loc], ...c.base(plan.podDir) };
  const { root, podDir, st } = loc;
  const refused = await c.guards();
  const same = podDir === plan.podDir && root === plan.rootDir && opts.podUID === plan.podUID && st.dev === plan.podDirIdentity.dev && st.ino === plan.podDirIdentity.ino;
  c.record('pod-dir-unchanged', same, same ? 'same directory as planned' : 'replaced or different');
  if (!same) refused.push({ code: 'pod-dir-changed', message: `${podDir} is not the directory that was planned for (it was replaced, or the plan is for another pod).` });
  const table = await c.table();
  if ('code' in table) return { outcome: 'refused', refused: [...refused, table], ...c.base(podDir) };
  const foreign = await c.tableShowsRoot(table, root);
  if (foreign !== null) refused.push(foreign);
  refused.push(...(await c.mountRefusals(table, root, podDir)));
  const teardown = await c.kubeletTeardownRefusal(table, podDir);
  if (teardown !== null) refused.push(teardown);
  const planned = new Set(plan.unmounts.map((u) => `${u.id} ${u.mountPoint}`));
  const unplanned = mountsAtOrBelow(table, podDir).filter((e) => !planned.has(`${e.id} ${e.mountPoint}`));
  c.record('mounts-as-planned', unplanned.length === 0, unplanned.length === 0 ? 'yes' : `new: ${unplanned.map((e) => e.mountPoint).join(', ')}`);
  if (unplanned.length > 0) {
    refused.push({ code: 'mounts-changed', message: `${plural(unplanned.length, 'mount')} appeared under the pod directory since the plan (${unplanned.map((e) => `${e.fsType} on ${e.mountPoint}`).join(', ')}); plan again.` });
  }
  if (refused.length > 0) return { outcome: 'refused', refused, ...c.base(podDir) };

  const done: OrphanCleanupExecuted = { outcome: 'completed', unmounted: [], removed: [], kept: [], refused: [], failures: [], ...c.base(podDir) };
  const abort = (r: CleanupRefusal): OrphanCleanupExecuted => {
    done.outcome = 'aborted';
    done.refused.push(r);
    return done;
  };

  for (const u of plan.unmounts) {
    // Right before each unmount: the table again, the mount still there and on top, nothing new.
    const now = await c.table();
    if ('code' in now) return abort(now);
    const extra = mountsAtOrBelow(now, podDir).filter((e) => !planned.has(`${e.id} ${e.mountPoint}`));
    if (extra.length > 0) return abort({ code: 'mounts-changed', message: `A mount appeared under the pod directory while unmounting (${extra.map((e) => `${e.fsType} on ${e.mountPoint}`).join(', ')}); stopped.` });
    const stack = mountsAt(now, u.mountPoint);
    if (!stack.some((e) => e.id === u.id)) {
      c.record(`unmount ${u.mountPoint}`, true, 'already unmounted');
      continue;
    }
    if (stack.at(-1)?.id !== u.id) return abort({ code: 'mounts-changed', message: `Another mount is stacked on top of ${u.mountPoint}; stopped.` });
    try {
      await opts.mounter.unmount(u.mountPoint);
      done.unmounted.push(u.mountPoint);
      c.record(`unmount ${u.mountPoint}`, true, `${u.fsType} from ${u.source} unmounted`);
    } catch (err) {
      c.record(`unmount ${u.mountPoint}`, false, errorMessage(err));
      done.failures.push({ path: u.mountPoint, step: 'unmount', message: errorMessage(err) });
      done.outcome = 'aborted';
      return done;
    }
  }

  const after = await c.table();
  if ('code' in after) return abort(after);
  const remaining = mountsAtOrBelow(after, podDir);
  c.record('no-mounts-left', remaining.length === 0, remaining.length === 0 ? 'none' : remaining.map((e) => e.mountPoint).join(', '));
  if (remaining.length > 0) return abort({ code: 'mounts-remain', message: `Still mounted after unmounting: ${remaining.map((e) => e.mountPoint).join(', ')}; nothing is removed.` });
  const podsStat = await c.fs.lstat(dirname(podDir));
  const walk = await c.walk(podDir, after, podsStat.dev);
  if ('code' in walk) return abort(walk);
  const { removals, keep } = c.decide(walk.entries);
  done.kept.push(...keep);
  const removedSet = new Set<string>();
  for (const r of removals) {
    // A parent whose child could not be removed stays: rmdir would only fail with ENOTEMPTY.
    const blockedChild = done.kept.find((k) => dirname(k.path) === r.path && !removedSet.has(k.path));
    if (r.kind === 'directory' && blockedChild !== undefined) {
      done.kept.push({ path: r.path, code: 'not-empty', reason: `keeps ${blockedChild.path} (see its reason)` });
      continue;
    }
    try {
      const res = await safeRemove(r.path, {
        root,
        mountInfo: opts.readMountTable,
        allowFiles: opts.removeMetadataFiles === true ? [VOL_DATA_FILE_NAME] : [],
        fs: c.fs,
      });
      for (const p of res.removed) {
        done.removed.push(p);
        removedSet.add(p);
      }
    } catch (err) {
      if (isSafeRemoveRefusedError(err)) {
        done.kept.push({ path: r.path, code: 'remove-refused', reason: err.reason });
      } else {
        done.failures.push({ path: r.path, step: 'remove', message: errorMessage(err) });
        done.kept.push({ path: r.path, code: 'remove-refused', reason: `removal failed: ${errorMessage(err)}` });
      }
    }
  }
  if (done.failures.length > 0) done.outcome = 'aborted';
  return done;
}

/**
 * Plans and, unless `dryRun`, executes the cleanup of `<root>/pods/<podUID>`. A dry run returns
 * the plan (`outcome: 'planned'`) and changes nothing.
 */
export async function cleanupOrphanPodDir(opts: OrphanCleanupOptions & { dryRun?: boolean }): Promise<OrphanCleanupResult> {
  const planned = await planOrphanCleanup(opts);
  if (planned.outcome !== 'planned' || opts.dryRun === true) return planned;
  const executed = await executeOrphanCleanup(planned.plan, opts);
  return { ...executed, checks: [...planned.checks, ...executed.checks] };
}
