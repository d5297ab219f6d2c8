/**
 * `kubernetes.io/local-volume` (kubelet `pkg/volume/local`), for PersistentVolumes with
 * `spec.local.path`: SetUp bind-mounts the directory at that path onto the pod volume dir
 * (mode 0750), read-only when the spec is, with the PV's `mountOptions`. Under the unprivileged
 * mounter the bind is a symlink to the path.
 *
 * Differences from the kubelet: only directories are supported. A local PV on a block device
 * (which the kubelet formats and mounts at a node-global path first, as a device-mountable
 * plugin) is rejected, so this plugin is neither attachable nor device-mountable and its volumes
 * are named per pod. The fsGroup ownership change is not applied.
 *
 * ConstructVolumeSpec reads the bind source back from the mount table (the kubelet leaves the
 * path empty for directory-backed volumes, because cleanup does not need it).
 */
import { lstat, readlink, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { Mounter as MountUtilsMounter } from '../../../mount-utils/mounter.ts';
import type { Pod } from '../../k8s-types.ts';
import type { Mounter, MounterArgs, ReconstructedVolume, Unmounter, VolumePlugin } from '../../plugins.ts';
import { specFromPersistentVolume, specName, type Spec } from '../../spec.ts';
import { pluginName, type PodUID } from '../../types.ts';
import { hasErrnoCode, UnsupportedSpecError } from '../util/errors.ts';
import { InTreePluginBase, podUIDOf } from '../util/plugin-base.ts';
import { ensureDir, isWithin, mountsAt, mountTablePath, removeEmptyDirQuietly, tearDownVolumeDir, type RemovalContext } from '../util/volume-dir.ts';

export const LOCAL_VOLUME_PLUGIN_NAME = pluginName('kubernetes.io/local-volume');

/** Mode of the pod volume dir a local volume is bind-mounted on (upstream's). */
const LOCAL_VOLUME_DIR_MODE = 0o750;

/** The local path of a PV cannot be used (missing, empty, not a directory, a `..` element). */
export class LocalVolumePathError extends Error {
  override readonly name = 'LocalVolumePathError';
}

export function isLocalVolumePathError(err: unknown): err is LocalVolumePathError {
  return err instanceof LocalVolumePathError;
}

/** `JoinMountOptions`: the plugin's options, then the PV's, without duplicates. */
function joinMountOptions(base: readonly string[], extra: readonly string[]): string[] {
  return [...new Set([...base, ...extra])];
}

/**
 * The source of the bind mount at `volumePath`, from the mount table read now: a real bind
 * shows the source's file system and its root inside it, so the source is found through the
 * other mount of that file system whose root contains it. The unprivileged mounter's bind is a
 * symlink to the source. "" when nothing is mounted or the source cannot be located.
 */
async function bindSourceOf(mounter: MountUtilsMounter, volumePath: string): Promise<string> {
  const st = await lstat(volumePath).catch((err: unknown) => {
    if (hasErrnoCode(err, 'ENOENT')) return null;
    throw err;
  });
  if (st === null) return '';
  const table = await mounter.list();
  const at = await mountTablePath(volumePath);
  const entry = table.findLast((e) => e.mountPoint === at);
  if (entry === undefined) return '';
  if (st.isSymbolicLink()) return readlink(volumePath);
  let best: { mountPoint: string; root: string } | undefined;
  for (const e of table) {
    if (e === entry || e.major !== entry.major || e.minor !== entry.minor) continue;
    if (!isWithin(entry.root, e.root)) continue;
    if (best === undefined || e.root.length > best.root.length) best = e;
  }
  return best === undefined ? '' : join(best.mountPoint, relative(best.root, entry.root));
}

export class LocalVolumePlugin extends InTreePluginBase implements VolumePlugin {
  readonly name = LOCAL_VOLUME_PLUGIN_NAME;

  canSupport(spec: Spec): boolean {
    return spec.persistentVolume?.spec.local !== undefined;
  }

  /** The PV name, as upstream. */
  getVolumeName(spec: Spec): string {
    if (spec.persistentVolume?.spec.local === undefined) throw new UnsupportedSpecError('Spec does not reference a Local volume type');
    return specName(spec);
  }

  override supportsMountOption(): boolean {
    return true;
  }

  newMounter(spec: Spec, pod: Pod): Mounter {
    const pv = spec.persistentVolume;
    const options = joinMountOptions(['bind', ...(spec.readOnly ? ['ro'] : [])], pv?.spec.mountOptions ?? []);
    return new LocalVolumeMounter(this.volumeDir(podUIDOf(pod), specName(spec)), specName(spec), pv?.spec.local?.path ?? '', options, this.removalContext());
  }

  newUnmounter(name: string, podUID: PodUID): Unmounter {
    const dir = this.volumeDir(podUID, name);
    const removal = this.removalContext();
    return { getPath: () => dir, tearDown: () => tearDownVolumeDir(removal, dir) };
  }

  /** A Filesystem PV named `volumeName` with `local.path` = the bind source when mounted, else "". */
  async constructVolumeSpec(volumeName: string, volumePath: string): Promise<ReconstructedVolume> {
    const path = await bindSourceOf(this.deps.mounter, volumePath);
    return {
      spec: specFromPersistentVolume({ metadata: { name: volumeName }, spec: { local: { path }, volumeMode: 'Filesystem' } }),
      seLinuxMountContext: '',
    };
  }
}

export class LocalVolumeMounter implements Mounter {
  constructor(
    private readonly dir: string,
    private readonly volumeName: string,
    private readonly localPath: string,
    private readonly options: readonly string[],
    private readonly removal: RemovalContext,
  ) {}

  getPath(): string {
    return this.dir;
  }

  async setUp(_args: MounterArgs): Promise<void> {
    const source = this.localPath;
    if (source === '') throw new LocalVolumePathError(`LocalVolume volume "${this.volumeName}" path is empty`);
    if (source.split('/').includes('..')) throw new LocalVolumePathError(`invalid path: ${source} must not contain '..'`);
    await checkLocalPath(source);
    if ((await mountsAt(this.removal.mounter, this.dir)).length > 0) return;
    const created = await ensureDir(this.dir, LOCAL_VOLUME_DIR_MODE);
    try {
      await this.removal.mounter.mount(source, this.dir, '', this.options);
    } catch (err) {
      // Like upstream, do not leave the mount point of a failed mount behind.
      if (created && (await mountsAt(this.removal.mounter, this.dir)).length === 0) await removeEmptyDirQuietly(this.removal, this.dir);
      throw err;
    }
  }
}

/** The PV's path must be an existing directory (upstream's `GetFileType` texts). */
async function checkLocalPath(path: string): Promise<void> {
  let st;
  try {
    st = await stat(path);
  } catch (err) {
    if (hasErrnoCode(err, 'ENOENT')) throw new LocalVolumePathError(`path "${path}" does not exist`, { cause: err });
    throw err;
  }
  if (st.isDirectory()) return;
  if (st.isBlockDevice()) {
    throw new LocalVolumePathError(`local volume path ${path} is a block device; VolumeScope bind-mounts only directories`);
  }
  throw new LocalVolumePathError('only directory and block device are supported');
}
