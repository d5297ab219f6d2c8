/**
 * The orphan inspector of observe mode: for every `<root>/pods/<uid>`
 * directory whose pod the API no longer knows, what is still there and why the kubelet keeps
 * logging "Orphaned pod … found, but volume paths are still present on disk".
 *
 * Each volume path (`volumes/<plugin>/<name>`, `volumeDevices/<plugin>/<name>`,
 * `volume-subpaths/<name>`) gets one state, the first that applies:
 *
 * 1. `mount-point`: something is mounted on it, below it, or on a directory of the pod between
 *    the pod dir and it (the mounts are listed), or a directory in it sits on another device
 *    although the mount table does not say so (listed as `unlistedBoundaries`);
 * 2. `symlink`: the entry is a symlink (block volumes leave these); never followed;
 * 3. `file` / `other`: the entry is a regular file (a block-device bind target) or something else;
 * 4. `non-empty`: it holds anything besides directories and its own `vol_data.json`, or the walk
 *    was cut short: possible user data, a human has to look;
 * 5. `has-vol-data`: only directories plus the CSI `vol_data.json`, whose driver and volume
 *    handle are reported (the volume could be reconstructed and unpublished through the driver);
 * 6. `empty`: only (possibly nested) empty directories.
 *
 * This module never writes: it only lstat()s, lists directories, reads links and reads
 * `vol_data.json` without following symlinks. Work is bounded (entries per path, entries in
 * total, pods), symlinks are never followed, and walks do not leave the pod directory's
 * filesystem (mount points and `st_dev` changes are reported, not entered).
 *
 * Paths in the result are resolved (the kubelet root may be a symlink, e.g. to a data disk), the
 * way the kernel writes them in mountinfo.
 */
import { basename, join } from 'node:path';
import { DefaultKubeletPodsDirName, DefaultKubeletVolumeDevicesDirName, DefaultKubeletVolumesDirName } from '../kubelet-constants.ts';
import type { Clock } from '../clock/clock.ts';
import { pathWithinOrEqual } from '../mount-utils/mount-table.ts';
import type { MountInfo } from '../mount-utils/mountinfo.ts';
import { VOL_DATA_FILE_NAME, volDataKey } from '../volume/csi/vol-data.ts';
import { nodeReadOnlyFs, walkOneFilesystem } from './pod-dir-walk.ts';
import type { ReadOnlyFs, WalkEntry, WalkEntryKind, WalkStat } from './pod-dir-walk.ts';

/** The kubelet's default `--root-dir`. */
const DEFAULT_KUBELET_ROOT_DIR = '/var/lib/kubelet';

/** The pod sub-directory holding subPath bind mounts (`config.DefaultKubeletVolumeSubpathsDirName`). */
const VOLUME_SUBPATHS_DIR_NAME = 'volume-subpaths';

export interface OrphanInspectorLimits {
  /** Pod directories inspected at most (orphans only); default 500. */
  maxPods: number;
  /** Entries walked per volume path or leftover entry; default 1000. */
  maxEntriesPerPath: number;
  /** Entries walked in the whole inspection; default 100 000. */
  maxEntriesTotal: number;
  /** Bytes of a `vol_data.json` read at most; default 64 KiB (real files are a few hundred bytes). */
  maxVolDataBytes: number;
}

const DEFAULT_ORPHAN_INSPECTOR_LIMITS: Readonly<OrphanInspectorLimits> = {
  maxPods: 500,
  maxEntriesPerPath: 1000,
  maxEntriesTotal: 100_000,
  maxVolDataBytes: 64 * 1024,
};

export interface OrphanInspectorOptions {
  /** The kubelet root dir; default {@link DEFAULT_KUBELET_ROOT_DIR}. */
  rootDir?: string;
  /** UIDs of the pods the API server lists (any phase). Every other `pods/<uid>` is an orphan. */
  knownPodUIDs: ReadonlySet<string>;
  /** The mount table, parsed from mountinfo read just before the call (of the kubelet's mount namespace). */
  mountInfo: readonly MountInfo[];
  /** For ages. */
  clock: Pick<Clock, 'now'>;
  limits?: Partial<OrphanInspectorLimits>;
  fs?: ReadOnlyFs;
}

/** A mount that concerns a path, as mountinfo lists it. */
export interface OrphanMount {
  mountPoint: string;
  /** mountinfo id (reused by the kernel after an unmount: identify a mount by id and mount point together). */
  id: number;
  fsType: string;
  source: string;
  /** Root of the mount inside its filesystem (`/` unless a bind mount of a sub-directory). */
  root: string;
  major: number;
  minor: number;
}

/** What a walk found, besides mounts. */
export interface ContentSummary {
  /** Regular files, excluding the volume's own `vol_data.json`. */
  files: number;
  /** Directories below the path (the path itself not counted). */
  directories: number;
  symlinks: number;
  /** Sockets, fifos, device nodes. */
  others: number;
  /** Sum of the sizes of {@link files}. */
  bytes: number;
  /** Directories that could not be listed (path and errno code). */
  unreadable: { path: string; code: string }[];
  /** The walk hit its entry budget; counts are lower bounds. */
  truncated: boolean;
}

/** `vol_data.json` of a CSI volume directory, the fields operators need. */
export interface VolDataSummary {
  path: string;
  driverName?: string;
  volumeHandle?: string;
  specVolID?: string;
  nodeName?: string;
  attachmentID?: string;
  volumeLifecycleMode?: string;
  /** Why the file could not be used (unreadable, not JSON, not a regular file, too large). */
  error?: string;
}

export type OrphanVolumeState = 'mount-point' | 'symlink' | 'file' | 'other' | 'non-empty' | 'has-vol-data' | 'empty';

/** The pod directory area a volume path lives in. */
export type OrphanVolumeArea = typeof DefaultKubeletVolumesDirName | typeof DefaultKubeletVolumeDevicesDirName | typeof VOLUME_SUBPATHS_DIR_NAME;

export interface OrphanVolumePath {
  path: string;
  area: OrphanVolumeArea;
  /** The escaped plugin directory (`kubernetes.io~csi`); absent under `volume-subpaths/`. */
  pluginDir?: string;
  /** The plugin name (`kubernetes.io/csi`); absent under `volume-subpaths/`. */
  pluginName?: string;
  /** The volume's directory name: the spec name (the PV name for PV-backed volumes). */
  volumeName: string;
  state: OrphanVolumeState;
  /** One sentence for operators. */
  explanation: string;
  kind: WalkEntryKind;
  mtimeMs: number;
  ageMs: number;
  /** Mounts at, below, or (within the pod dir) above this path. */
  mounts: OrphanMount[];
  /** Directories on another device than their parent that the mount table does not list. */
  unlistedBoundaries: string[];
  contents: ContentSummary;
  volData?: VolDataSummary;
  /** For `symlink`: the link text (not followed). */
  linkTarget?: string;
}

/** A top-level entry of the pod directory that is not a volume area (`etc-hosts`, `containers/`, `plugins/`). */
export interface OrphanLeftover {
  name: string;
  path: string;
  kind: WalkEntryKind;
  mtimeMs: number;
  ageMs: number;
  mounts: OrphanMount[];
  unlistedBoundaries: string[];
  contents: ContentSummary;
  linkTarget?: string;
}

/**
 * The pod-level verdict, the first that applies:
 * - `mounted`: a mount (or an unlisted filesystem boundary) under the pod dir; unmount first;
 * - `volume-data`: a volume path holds files, links or unreadable parts; a human must look;
 * - `vol-data-only`: volume paths hold only directories and CSI `vol_data.json` files;
 * - `empty-volume-dirs`: volume paths exist but are empty directories (the kubelet's "Orphaned pod … found" spam);
 * - `no-volume-dirs`: no volume paths left; only leftovers such as `etc-hosts`.
 */
export type OrphanPodVerdict = 'mounted' | 'volume-data' | 'vol-data-only' | 'empty-volume-dirs' | 'no-volume-dirs';

export interface OrphanPod {
  podUID: string;
  path: string;
  mtimeMs: number;
  ageMs: number;
  verdict: OrphanPodVerdict;
  explanation: string;
  volumes: OrphanVolumePath[];
  leftovers: OrphanLeftover[];
  /** Every mount at or below the pod dir. */
  mounts: OrphanMount[];
  /** Some walk of this pod hit its entry budget, so counts are lower bounds (a cut volume walk makes the volume `non-empty`). */
  truncated: boolean;
}

export interface OrphanInspection {
  /** The resolved kubelet root. */
  rootDir: string;
  inspectedAt: number;
  orphans: OrphanPod[];
  /** Pod directories skipped because the API knows the pod. */
  knownPodDirs: number;
  /** Entries of `pods/` that are not directories (or are symlinks), not inspected. */
  skipped: { name: string; reason: string }[];
  /** `maxPods` or `maxEntriesTotal` stopped the inspection early. */
  truncated: boolean;
}

/** The kubelet root or its `pods/` directory cannot be read. */
export class OrphanInspectionError extends Error {
  override readonly name = 'OrphanInspectionError';
  constructor(
    message: string,
    readonly path: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export function isOrphanInspectionError(err: unknown): err is OrphanInspectionError {
  return err instanceof OrphanInspectionError;
}

function errnoCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

/** The kubelet's `UnescapeQualifiedName`: `kubernetes.io~csi` → `kubernetes.io/csi`. */
function unescapePluginDir(dir: string): string {
  return dir.replaceAll('~', '/');
}

function toOrphanMount(e: MountInfo): OrphanMount {
  return { mountPoint: e.mountPoint, id: e.id, fsType: e.fsType, source: e.source, root: e.root, major: e.major, minor: e.minor };
}

/**
 * The mounts that concern `path` inside `podDir`: those at or below it, and those on `podDir` or
 * a directory between `podDir` and `path` (the path then lies inside them).
 */
function mountsConcerning(table: readonly MountInfo[], path: string, podDir: string): MountInfo[] {
  return table.filter((e) => pathWithinOrEqual(e.mountPoint, path) || (pathWithinOrEqual(path, e.mountPoint) && pathWithinOrEqual(e.mountPoint, podDir)));
}

/** Shared state of one inspection: budgets and the mount table as a set. */
class Inspector {
  readonly limits: OrphanInspectorLimits;
  readonly fs: ReadOnlyFs;
  readonly mountPoints: ReadonlySet<string>;
  readonly now: number;
  remaining: number;

  constructor(readonly opts: OrphanInspectorOptions) {
    this.limits = { ...DEFAULT_ORPHAN_INSPECTOR_LIMITS, ...opts.limits };
    this.fs = opts.fs ?? nodeReadOnlyFs;
    this.mountPoints = new Set(opts.mountInfo.map((e) => e.mountPoint));
    this.now = opts.clock.now();
    this.remaining = this.limits.maxEntriesTotal;
  }

  async walk(path: string, parentDev: number): Promise<{ entries: WalkEntry[]; truncated: boolean }> {
    const budget = Math.max(1, Math.min(this.limits.maxEntriesPerPath, this.remaining));
    const r = await walkOneFilesystem(path, { fs: this.fs, isMountPoint: (p) => this.mountPoints.has(p), maxEntries: budget, startParentDev: parentDev });
    this.remaining -= r.entries.length;
    return r;
  }

  async inspectPod(podUID: string, podDir: string, podStat: WalkStat, rootDev: number): Promise<OrphanPod> {
    const table = this.opts.mountInfo;
    const podMounts = table.filter((e) => pathWithinOrEqual(e.mountPoint, podDir));
    const volumes: OrphanVolumePath[] = [];
    const leftovers: OrphanLeftover[] = [];
    let truncated = false;
    const podIsBoundary = podStat.dev !== rootDev && !this.mountPoints.has(podDir);
    const names = podMounts.some((e) => e.mountPoint === podDir) || podIsBoundary ? [] : (await this.fs.readdir(podDir)).sort();
    for (const name of names) {
      const path = join(podDir, name);
      const st = await lstatOrNull(this.fs, path);
      if (st === null) continue;
      const area = volumeArea(name);
      if (area !== null && st.isDirectory() && !this.mountPoints.has(path) && st.dev === podStat.dev) {
        for (const v of await this.volumePaths(area, path, st.dev)) {
          const inspected = await this.inspectVolume(v.area, v.path, v.pluginDir, podDir, v.parentDev);
          if (inspected === null) continue;
          truncated ||= inspected.contents.truncated;
          volumes.push(inspected);
        }
        // The area directory itself is not a leftover: its volume paths are reported.
        continue;
      }
      const left = await this.inspectLeftover(name, path, podDir, podStat.dev);
      if (left === null) continue;
      truncated ||= left.contents.truncated;
      leftovers.push(left);
    }
    const { verdict, explanation } = podVerdict(volumes, leftovers, podMounts, podIsBoundary);
    return {
      podUID,
      path: podDir,
      mtimeMs: podStat.mtimeMs,
      ageMs: Math.max(0, this.now - podStat.mtimeMs),
      verdict,
      explanation,
      volumes,
      leftovers,
      mounts: podMounts.map(toOrphanMount),
      truncated,
    };
  }

  /** The volume paths of one area: `<area>/<plugin>/<name>`, or `<area>/<name>` under volume-subpaths. */
  private async volumePaths(area: OrphanVolumeArea, areaDir: string, areaDev: number): Promise<{ area: OrphanVolumeArea; path: string; pluginDir?: string; parentDev: number }[]> {
    const out: { area: OrphanVolumeArea; path: string; pluginDir?: string; parentDev: number }[] = [];
    const first = await readdirOrEmpty(this.fs, areaDir);
    for (const name of first.sort()) {
      const path = join(areaDir, name);
      if (area === VOLUME_SUBPATHS_DIR_NAME) {
        out.push({ area, path, parentDev: areaDev });
        continue;
      }
      const st = await lstatOrNull(this.fs, path);
      if (st === null) continue;
      if (!st.isDirectory() || this.mountPoints.has(path) || st.dev !== areaDev) {
        // A plugin "directory" that is a file, link or mount: report it as a volume path of its own.
        out.push({ area, path, pluginDir: name, parentDev: areaDev });
        continue;
      }
      for (const volume of (await readdirOrEmpty(this.fs, path)).sort()) out.push({ area, path: join(path, volume), pluginDir: name, parentDev: st.dev });
    }
    return out;
  }

  private async inspectVolume(area: OrphanVolumeArea, path: string, pluginDir: string | undefined, podDir: string, parentDev: number): Promise<OrphanVolumePath | null> {
    const walk = await this.walk(path, parentDev);
    const top = walk.entries[0];
    if (top === undefined) return null;
    const mounts = mountsConcerning(this.opts.mountInfo, path, podDir);
    const contents = summarize(walk.entries, walk.truncated, top.kind === 'directory' ? join(path, VOL_DATA_FILE_NAME) : null);
    const unlistedBoundaries = walk.entries.filter((e) => e.unlistedBoundary).map((e) => e.path);
    const out: OrphanVolumePath = {
      path,
      area,
      volumeName: basename(path),
      state: 'empty',
      explanation: '',
      kind: top.kind,
      mtimeMs: top.mtimeMs,
      ageMs: Math.max(0, this.now - top.mtimeMs),
      mounts: mounts.map(toOrphanMount),
      unlistedBoundaries,
      contents,
    };
    if (pluginDir !== undefined) {
      out.pluginDir = pluginDir;
      out.pluginName = unescapePluginDir(pluginDir);
    }
    if (top.kind === 'symlink') out.linkTarget = await this.fs.readlink(path).catch((err: unknown) => `? (${errnoCode(err) ?? String(err)})`);
    const volDataEntry = walk.entries.find((e) => e.path === join(path, VOL_DATA_FILE_NAME));
    // Read only when the file is on the pod's own filesystem: the walk does not enter mounts below
    // the path, but a mount on the path or above it would make the file someone's volume data.
    const enclosed = mounts.some((m) => pathWithinOrEqual(path, m.mountPoint));
    if (volDataEntry !== undefined && !enclosed && !top.mountPoint && !top.unlistedBoundary) out.volData = await this.readVolData(volDataEntry);
    [out.state, out.explanation] = volumeState(out, top);
    return out;
  }

  private async inspectLeftover(name: string, path: string, podDir: string, podDev: number): Promise<OrphanLeftover | null> {
    const walk = await this.walk(path, podDev);
    const top = walk.entries[0];
    if (top === undefined) return null;
    const out: OrphanLeftover = {
      name,
      path,
      kind: top.kind,
      mtimeMs: top.mtimeMs,
      ageMs: Math.max(0, this.now - top.mtimeMs),
      mounts: mountsConcerning(this.opts.mountInfo, path, podDir).map(toOrphanMount),
      unlistedBoundaries: walk.entries.filter((e) => e.unlistedBoundary).map((e) => e.path),
      contents: summarize(walk.entries, walk.truncated, null),
    };
    if (top.kind === 'symlink') out.linkTarget = await this.fs.readlink(path).catch((err: unknown) => `? (${errnoCode(err) ?? String(err)})`);
    return out;
  }

  private async readVolData(entry: WalkEntry): Promise<VolDataSummary> {
    const out: VolDataSummary = { path: entry.path };
    if (entry.kind !== 'file') {
      out.error = `${VOL_DATA_FILE_NAME} is not a regular file (${entry.kind})`;
      return out;
    }
    let text: string;
    try {
      const r = await this.fs.readFileNoFollow(entry.path, this.limits.maxVolDataBytes);
      if (r.truncated) {
        out.error = `${VOL_DATA_FILE_NAME} is larger than ${this.limits.maxVolDataBytes} bytes`;
        return out;
      }
      text = r.text;
    } catch (err) {
      out.error = `cannot read ${VOL_DATA_FILE_NAME}: ${errnoCode(err) ?? String(err)}`;
      return out;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      out.error = `${VOL_DATA_FILE_NAME} is not valid JSON`;
      return out;
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      out.error = `${VOL_DATA_FILE_NAME} is not a JSON object`;
      return out;
    }
    const data = parsed as Record<string, unknown>;
    const str = (key: string): string | undefined => (typeof data[key] === 'string' ? data[key] : undefined);
    const fields: [keyof VolDataSummary, string][] = [
      ['driverName', volDataKey.driverName],
      ['volumeHandle', volDataKey.volHandle],
      ['specVolID', volDataKey.specVolID],
      ['nodeName', volDataKey.nodeName],
      ['attachmentID', volDataKey.attachmentID],
      ['volumeLifecycleMode', volDataKey.volumeLifecycleMode],
    ];
    for (const [field, key] of fields) {
      const v = str(key);
      if (v !== undefined) out[field] = v;
    }
    return out;
  }
}

function volumeArea(name: string): OrphanVolumeArea | null {
  if (name === DefaultKubeletVolumesDirName || name === DefaultKubeletVolumeDevicesDirName || name === VOLUME_SUBPATHS_DIR_NAME) return name;
  return null;
}

async function lstatOrNull(fs: ReadOnlyFs, path: string): Promise<WalkStat | null> {
  try {
    return await fs.lstat(path);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return null;
    throw err;
  }
}

async function readdirOrEmpty(fs: ReadOnlyFs, path: string): Promise<string[]> {
  try {
    return await fs.readdir(path);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') return [];
    throw err;
  }
}

/** Counts what a walk saw below its start; `volDataPath` (the volume's own metadata file) is not counted as a file. */
function summarize(entries: readonly WalkEntry[], truncated: boolean, volDataPath: string | null): ContentSummary {
  const out: ContentSummary = { files: 0, directories: 0, symlinks: 0, others: 0, bytes: 0, unreadable: [], truncated };
  for (const [i, e] of entries.entries()) {
    if (e.error !== undefined) out.unreadable.push({ path: e.path, code: e.error });
    if (i === 0) continue;
    if (e.kind === 'directory') out.directories++;
    else if (e.kind === 'symlink') out.symlinks++;
    else if (e.kind === 'other') out.others++;
    else if (e.path !== volDataPath) {
      out.files++;
      out.bytes += e.size;
    }
  }
  return out;
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

function describeContents(c: ContentSummary): string {
  const parts: string[] = [];
  if (c.files > 0) parts.push(`${plural(c.files, 'file')} (${c.bytes} bytes)`);
  if (c.symlinks > 0) parts.push(plural(c.symlinks, 'symlink'));
  if (c.others > 0) parts.push(plural(c.others, 'special file'));
  if (c.unreadable.length > 0) parts.push(plural(c.unreadable.length, 'unreadable directory', 'unreadable directories'));
  const text = parts.join(', ');
  return c.truncated ? `${text === '' ? 'many entries' : `at least ${text}`} (walk stopped at its entry limit)` : text;
}

function volumeState(v: OrphanVolumePath, top: WalkEntry): [OrphanVolumeState, string] {
  if (v.mounts.length > 0 || v.unlistedBoundaries.length > 0) {
    const where = v.mounts.map((m) => `${m.fsType} on ${m.mountPoint}`);
    const unlisted = v.unlistedBoundaries.map((p) => `another filesystem at ${p} (not in the mount table)`);
    return ['mount-point', `Still mounted: ${[...where, ...unlisted].join('; ')}. It must be unmounted (by the kubelet, or the driver's NodeUnpublish) before anything is removed.`];
  }
  if (top.kind === 'symlink') return ['symlink', `A symlink to ${v.linkTarget ?? '?'}; never followed. Block volumes leave these behind; check the target before removing the link by hand.`];
  if (top.kind === 'file') return ['file', `A regular file of ${top.size} bytes, not a directory (a block volume bind target leaves one).`];
  if (top.kind === 'other') return ['other', 'A special file (socket, fifo or device node), not a directory.'];
  const c = v.contents;
  if (c.files > 0 || c.symlinks > 0 || c.others > 0 || c.unreadable.length > 0 || c.truncated) {
    return ['non-empty', `Not mounted, but holds ${describeContents(c)}: possibly volume data written after an unmount. Look before deleting anything.`];
  }
  if (v.volData !== undefined) {
    const vd = v.volData;
    const what = vd.error !== undefined ? `an unusable ${VOL_DATA_FILE_NAME} (${vd.error})` : `${VOL_DATA_FILE_NAME} for driver ${vd.driverName ?? '?'}, volume handle ${vd.volumeHandle ?? '?'}`;
    return ['has-vol-data', `Not mounted and otherwise empty; holds ${what}. The kubelet could reconstruct it and unpublish through the driver; the directories can then go.`];
  }
  return ['empty', c.directories > 0 ? `Only ${plural(c.directories, 'empty directory', 'empty directories')}; safe to remove with rmdir.` : 'An empty directory; safe to remove with rmdir.'];
}

function podVerdict(
  volumes: readonly OrphanVolumePath[],
  leftovers: readonly OrphanLeftover[],
  podMounts: readonly MountInfo[],
  podIsBoundary: boolean,
): { verdict: OrphanPodVerdict; explanation: string } {
  const unlisted = podIsBoundary || volumes.some((v) => v.unlistedBoundaries.length > 0) || leftovers.some((l) => l.unlistedBoundaries.length > 0);
  if (podMounts.length > 0 || unlisted) {
    const n = podMounts.length;
    const what = n > 0 ? `${plural(n, 'mount')} under the pod directory` : 'a filesystem boundary the mount table does not list';
    return { verdict: 'mounted', explanation: `The pod is gone but ${what} remain${n === 1 ? 's' : ''}; the kubelet has to unmount before the directory can go. Never rm -rf it: that deletes volume data through the mount.` };
  }
  const data = volumes.filter((v) => v.state === 'non-empty' || v.state === 'symlink' || v.state === 'file' || v.state === 'other');
  if (data.length > 0) {
    return { verdict: 'volume-data', explanation: `${plural(data.length, 'volume path')} hold${data.length === 1 ? 's' : ''} files, links or more entries than inspected; the kubelet keeps the pod directory and a human has to decide.` };
  }
  if (volumes.some((v) => v.state === 'has-vol-data')) {
    return { verdict: 'vol-data-only', explanation: `Nothing is mounted; only CSI ${VOL_DATA_FILE_NAME} files and empty directories are left. Unpublish through the driver if the backend still has the volume published, then remove the empty directories.` };
  }
  if (volumes.length > 0) {
    return { verdict: 'empty-volume-dirs', explanation: `Nothing is mounted and the ${plural(volumes.length, 'volume path')} ${volumes.length === 1 ? 'is' : 'are'} empty: this is what keeps the kubelet logging "Orphaned pod … found, but volume paths are still present on disk". Removing the empty directories is safe.` };
  }
  return { verdict: 'no-volume-dirs', explanation: 'No volume paths are left; the kubelet removes the remaining pod directory at its next housekeeping pass.' };
}

/**
 * Inspects every orphaned pod directory under `<root>/pods`. Throws {@link OrphanInspectionError}
 * when the root cannot be resolved or `pods/` cannot be listed (a missing `pods/` gives an empty
 * result). Orphans are sorted by UID.
 */
export async function inspectOrphanedPods(opts: OrphanInspectorOptions): Promise<OrphanInspection> {
  const inspector = new Inspector(opts);
  const fs = inspector.fs;
  const rootDir = opts.rootDir ?? DEFAULT_KUBELET_ROOT_DIR;
  let root: string;
  let rootStat: WalkStat;
  try {
    root = await fs.realpath(rootDir);
    rootStat = await fs.lstat(root);
  } catch (err) {
    throw new OrphanInspectionError(`cannot resolve the kubelet root dir ${rootDir}: ${errnoCode(err) ?? String(err)}`, rootDir, { cause: err });
  }
  const podsDir = join(root, DefaultKubeletPodsDirName);
  const result: OrphanInspection = { rootDir: root, inspectedAt: inspector.now, orphans: [], knownPodDirs: 0, skipped: [], truncated: false };
  let names: string[];
  try {
    names = await fs.readdir(podsDir);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return result;
    throw new OrphanInspectionError(`cannot list ${podsDir}: ${errnoCode(err) ?? String(err)}`, podsDir, { cause: err });
  }
  const podsStat = await lstatOrNull(fs, podsDir);
  for (const uid of names.sort()) {
    if (opts.knownPodUIDs.has(uid)) {
      result.knownPodDirs++;
      continue;
    }
    const podDir = join(podsDir, uid);
    const st = await lstatOrNull(fs, podDir);
    if (st === null) continue;
    if (!st.isDirectory()) {
      result.skipped.push({ name: uid, reason: st.isSymbolicLink() ? 'a symlink, not followed' : 'not a directory' });
      continue;
    }
    if (result.orphans.length >= inspector.limits.maxPods || inspector.remaining <= 0) {
      result.truncated = true;
      break;
    }
    result.orphans.push(await inspector.inspectPod(uid, podDir, st, podsStat?.dev ?? rootStat.dev));
  }
  return result;
}
