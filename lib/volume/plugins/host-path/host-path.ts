/**
 * `kubernetes.io/host-path` (kubelet `pkg/volume/hostpath`), for inline `hostPath` volumes and
 * hostPath PersistentVolumes.
 *
 * SetUp mounts nothing, as in the kubelet: the container runtime bind-mounts the host path into
 * the container, so the mounter's `getPath()` is the host path itself. SetUp rejects a path with
 * a `..` element and runs the type check of `spec.hostPath.type` with the kubelet's texts
 * (`hostPath type check failed: /x is not a directory`, …); `DirectoryOrCreate` creates the
 * directory (0755, with parents) and `FileOrCreate` an empty file (0644), but not its parent
 * directory (upstream does not either; the parent must exist). Creating and setting the mode
 * never follow a symlink at the path itself: one planted there is refused with the type check
 * text (upstream's os.OpenFile(O_CREATE) would create the file at a dangling symlink's target).
 *
 * Unlike the kubelet, SetUp also creates an empty record directory at the pod volume dir
 * (`pods/<uid>/volumes/kubernetes.io~host-path/<name>`, mode 0750) so that reconstruction after
 * a restart finds the volume; it is the unmounter's `getPath()`, and TearDown removes it (only
 * when empty). Nothing else is written.
 */
import { constants as fsConstants } from 'node:fs';
import { lstat, mkdir, open } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Pod, Volume } from '../../k8s-types.ts';
import type { Mounter, MounterArgs, ReconstructedVolume, Unmounter, VolumePlugin } from '../../plugins.ts';
import { specFromVolume, specName, type Spec } from '../../spec.ts';
import { pluginName, type PodUID } from '../../types.ts';
import { goPathErrorText, hasErrnoCode, UnsupportedSpecError } from '../util/errors.ts';
import { InTreePluginBase, podUIDOf } from '../util/plugin-base.ts';
import type { VolumePluginDeps } from '../util/plugin-deps.ts';
import { ensureDir, tearDownVolumeDir, VOLUME_PARENT_DIR_MODE, type RemovalContext } from '../util/volume-dir.ts';
import { nodeHostUtil, type FileType, type HostUtil } from './file-type.ts';

export const HOST_PATH_PLUGIN_NAME = pluginName('kubernetes.io/host-path');

/** `v1.HostPathType`; "" (unset) skips the check. */
export type HostPathType = '' | 'DirectoryOrCreate' | 'Directory' | 'FileOrCreate' | 'File' | 'Socket' | 'CharDevice' | 'BlockDevice';

export interface HostPathPluginDeps extends VolumePluginDeps {
  /** File type checks; default the real file system. */
  hostUtil?: HostUtil;
}

/**
 * A hostPath type check failed, the path has a `..` element, or a `…OrCreate` path could not be
 * created; the message is the kubelet's (Go's `*PathError` text for creation failures).
 */
export class HostPathTypeCheckError extends Error {
  override readonly name = 'HostPathTypeCheckError';
}

export function isHostPathTypeCheckError(err: unknown): err is HostPathTypeCheckError {
  return err instanceof HostPathTypeCheckError;
}

/** What each checked type must be, and how the kubelet's message names it. */
const expected: Record<'Directory' | 'File' | 'Socket' | 'CharDevice' | 'BlockDevice', { type: FileType; description: string }> = {
  Directory: { type: 'Directory', description: 'directory' },
  File: { type: 'File', description: 'file' },
  Socket: { type: 'Socket', description: 'socket file' },
  CharDevice: { type: 'CharDevice', description: 'character device' },
  BlockDevice: { type: 'BlockDevice', description: 'block device' },
};

/**
 * The kubelet's `checkType`: verifies that `path` is of `pathType`, creating it for the
 * `…OrCreate` types when nothing exists there. An unreadable type counts as a mismatch.
 */
export async function checkHostPathType(path: string, pathType: string, hu: HostUtil = nodeHostUtil): Promise<void> {
  const exists = () => hu.pathExists(path).catch(() => false);
  const is = async (type: FileType) => (await exists()) && (await hu.getFileType(path).catch(() => null)) === type;
  let check: keyof typeof expected;
  switch (pathType) {
    case 'DirectoryOrCreate':
      if (!(await exists())) return makeDir(path);
      check = 'Directory';
      break;
    case 'FileOrCreate':
      if (!(await exists())) return makeFile(path);
      check = 'File';
      break;
    case 'Directory':
    case 'File':
    case 'Socket':
    case 'CharDevice':
    case 'BlockDevice':
      check = pathType;
      break;
    default:
      throw new HostPathTypeCheckError(`${pathType} is an invalid volume type`);
  }
  const want = expected[check];
  if (!(await is(want.type))) throw notA(path, want.description);
}

/**
 * `makeDir` (`DirectoryOrCreate`): the parents as `mkdir -p` makes them (a symlink among the
 * parents is followed, as upstream's MkdirAll follows it: `/var/run` → `/run` must keep working),
 * then the directory itself with mkdir(2), which never follows a symlink. Its mode is set to
 * exactly 0755 through a descriptor opened with O_NOFOLLOW|O_DIRECTORY, so a symlink swapped in
 * after mkdir is refused rather than followed. Something already there is accepted only when it
 * is a real directory, which is left as it is (upstream changes no mode either); a symlink there
 * (dangling or not: creating or chmod-ing through it would act on its target) is refused with
 * the kubelet's type check text.
 */
export async function makeDir(path: string): Promise<void> {
  try {
    await mkdir(dirname(path), { recursive: true, mode: 0o755 });
  } catch (err) {
    throw new HostPathTypeCheckError(goPathErrorText('mkdir', dirname(path), err), { cause: err });
  }
  try {
    await mkdir(path, 0o755);
  } catch (err) {
    if (!hasErrnoCode(err, 'EEXIST')) throw new HostPathTypeCheckError(goPathErrorText('mkdir', path, err), { cause: err });
    if (!(await lstat(path)).isDirectory()) throw notA(path, 'directory');
    return;
  }
  await chmodNoFollow(path, fsConstants.O_RDONLY | fsConstants.O_DIRECTORY, 0o755, 'directory');
}

/**
 * `makeFile` (`FileOrCreate`): an empty file, created with O_CREAT|O_EXCL|O_NOFOLLOW (which
 * never follows a symlink, dangling or not), its mode set to exactly 0644 on that descriptor; the
 * parent directory must exist (upstream does not create it either). Something already there is
 * accepted only when it is not a symlink (upstream: "whether a file or directory, no error");
 * a symlink is refused with the kubelet's type check text, and neither it nor its target is
 * touched.
 */
export async function makeFile(path: string): Promise<void> {
  let handle;
  try {
    handle = await open(path, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, 0o644);
  } catch (err) {
    if (!hasErrnoCode(err, 'EEXIST')) throw new HostPathTypeCheckError(goPathErrorText('open', path, err), { cause: err });
    if ((await lstat(path)).isSymbolicLink()) throw notA(path, 'file');
    return;
  }
  try {
    await handle.chmod(0o644);
  } catch (err) {
    throw new HostPathTypeCheckError(goPathErrorText('chmod', path, err), { cause: err });
  } finally {
    await handle.close();
  }
}

/** Sets the mode of what `path` names itself, never of a symlink's target. */
async function chmodNoFollow(path: string, flags: number, mode: number, description: string): Promise<void> {
  let handle;
  try {
    handle = await open(path, flags | fsConstants.O_NOFOLLOW);
  } catch (err) {
    // ELOOP: a symlink; ENOTDIR: something else replaced the directory.
    if (hasErrnoCode(err, 'ELOOP') || hasErrnoCode(err, 'ENOTDIR')) throw notA(path, description);
    throw new HostPathTypeCheckError(goPathErrorText('open', path, err), { cause: err });
  }
  try {
    await handle.chmod(mode);
  } catch (err) {
    throw new HostPathTypeCheckError(goPathErrorText('chmod', path, err), { cause: err });
  } finally {
    await handle.close();
  }
}

function notA(path: string, description: string): HostPathTypeCheckError {
  return new HostPathTypeCheckError(`hostPath type check failed: ${path} is not a ${description}`);
}

type HostPathVolumeSource = NonNullable<Volume['hostPath']>;

function hostPathSource(spec: Spec): HostPathVolumeSource | undefined {
  return spec.volume?.hostPath ?? spec.persistentVolume?.spec.hostPath;
}

export class HostPathPlugin extends InTreePluginBase implements VolumePlugin {
  readonly name = HOST_PATH_PLUGIN_NAME;
  private readonly hostUtil: HostUtil;

  constructor(deps: HostPathPluginDeps) {
    super(deps);
    this.hostUtil = deps.hostUtil ?? nodeHostUtil;
  }

  canSupport(spec: Spec): boolean {
    return hostPathSource(spec) !== undefined;
  }

  /** The host path, as upstream. */
  getVolumeName(spec: Spec): string {
    const source = hostPathSource(spec);
    if (source === undefined) throw new UnsupportedSpecError('spec does not reference an HostPath volume type');
    return source.path;
  }

  newMounter(spec: Spec, pod: Pod): Mounter {
    const source = hostPathSource(spec) ?? { path: '' };
    return new HostPathMounter(source.path, source.type ?? '', this.volumeDir(podUIDOf(pod), specName(spec)), this.hostUtil);
  }

  newUnmounter(name: string, podUID: PodUID): Unmounter {
    const dir = this.volumeDir(podUID, name);
    const removal: RemovalContext = this.removalContext();
    return { getPath: () => dir, tearDown: () => tearDownVolumeDir(removal, dir) };
  }

  /**
   * `{name, hostPath: {path: <volumeName>}}`, exactly as the kubelet (which cannot know the
   * host path after a restart either and puts the volume name there).
   */
  constructVolumeSpec(volumeName: string, _volumePath: string): Promise<ReconstructedVolume> {
    return Promise.resolve({ spec: specFromVolume({ name: volumeName, hostPath: { path: volumeName } }), seLinuxMountContext: '' });
  }
}

export class HostPathMounter implements Mounter {
  constructor(
    private readonly path: string,
    private readonly pathType: string,
    /** The empty record directory that lets reconstruction find the volume. */
    readonly recordDir: string,
    private readonly hostUtil: HostUtil,
  ) {}

  /** The host path: what the container runtime bind-mounts into the container. */
  getPath(): string {
    return this.path;
  }

  async setUp(_args: MounterArgs): Promise<void> {
    if (this.path.split('/').includes('..')) {
      throw new HostPathTypeCheckError(`invalid HostPath \`${this.path}\`: must not contain '..'`);
    }
    if (this.pathType !== '') await checkHostPathType(this.path, this.pathType, this.hostUtil);
    await ensureDir(this.recordDir, VOLUME_PARENT_DIR_MODE);
  }
}
