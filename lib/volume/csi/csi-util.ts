/**
 * Helpers shared by the CSI plugin's attacher, mounter and expander (pkg/volume/csi/csi_util.go
 * and friends): reading the CSI source of a spec, building volume capabilities, resolving
 * secrets, deciding whether a path is mounted, and removing the plugin's directories safely.
 */
import { lstat, readdir, readlink, realpath } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import type { Mounter as HostMounter } from '../../mount-utils/mounter.ts';
import { isCorruptedMnt } from '../../mount-utils/mount-table.ts';
import { isDurableWriteTempName } from '../../mount-utils/durable-write.ts';
import { SafeRemoveRefusedError, safeRemove } from '../../mount-utils/safe-remove.ts';
import type { CSIPersistentVolumeSource, CSIVolumeSource, PersistentVolumeAccessMode } from '../k8s-types.ts';
import type { VolumeObjectGetter } from '../object-getter.ts';
import type { Spec } from '../spec.ts';
import { escapePluginName } from '../types.ts';
import type { CsiAccessMode, StringMap, VolumeCapability } from './csi-types.ts';
import { CSI_PLUGIN_NAME, PUBLISH_DIR_NAME, VOL_DATA_FILE_NAME, type VolumeLifecycleMode } from './vol-data.ts';

/** `log()`: every message of the plugin starts with the plugin name, as upstream. */
export function log(message: string): string {
  return `${CSI_PLUGIN_NAME}: ${message}`;
}

/** `getSourceFromSpec`: exactly one of the inline and the PV source. Throws with upstream's texts. */
export function getSourceFromSpec(spec: Spec): { volSrc: CSIVolumeSource | null; pvSrc: CSIPersistentVolumeSource | null } {
  if (spec.volume !== undefined && spec.persistentVolume !== undefined) {
    throw new Error('volume.Spec has both volume and persistent volume sources');
  }
  if (spec.volume?.csi !== undefined) return { volSrc: spec.volume.csi, pvSrc: null };
  if (spec.persistentVolume?.spec.csi !== undefined) return { volSrc: null, pvSrc: spec.persistentVolume.spec.csi };
  throw new Error('volume source not found in volume.Spec');
}

/** `getPVSourceFromSpec`: the PV's CSI source; inline volumes are refused. */
export function getPVSourceFromSpec(spec: Spec): CSIPersistentVolumeSource {
  const { volSrc, pvSrc } = getSourceFromSpec(spec);
  if (volSrc !== null || pvSrc === null) throw new Error('unexpected api.CSIVolumeSource found in volume.Spec');
  return pvSrc;
}

/** `getVolumeLifecycleMode`: inline CSI volumes are Ephemeral, PV-backed ones Persistent. */
export function getVolumeLifecycleMode(spec: Spec): VolumeLifecycleMode {
  return getSourceFromSpec(spec).volSrc !== null ? 'Ephemeral' : 'Persistent';
}

/**
 * `asCSIAccessModeV1`: Kubernetes access mode → CSI. With SINGLE_NODE_MULTI_WRITER support,
 * ReadWriteOnce becomes SINGLE_NODE_MULTI_WRITER and ReadWriteOncePod SINGLE_NODE_SINGLE_WRITER;
 * without it both are SINGLE_NODE_WRITER.
 */
export function asCSIAccessMode(mode: PersistentVolumeAccessMode, supportsSingleNodeMultiWriter: boolean): CsiAccessMode {
  switch (mode) {
    case 'ReadWriteOnce':
      return supportsSingleNodeMultiWriter ? 'SINGLE_NODE_MULTI_WRITER' : 'SINGLE_NODE_WRITER';
    case 'ReadOnlyMany':
      return 'MULTI_NODE_READER_ONLY';
    case 'ReadWriteMany':
      return 'MULTI_NODE_MULTI_WRITER';
    case 'ReadWriteOncePod':
      return supportsSingleNodeMultiWriter ? 'SINGLE_NODE_SINGLE_WRITER' : 'SINGLE_NODE_WRITER';
  }
}

/** The first access mode of a PV spec, ReadWriteOnce when none is set (upstream's TODO-default). */
export function specAccessMode(spec: Spec): PersistentVolumeAccessMode {
  return spec.persistentVolume?.spec.accessModes?.[0] ?? 'ReadWriteOnce';
}

/** A mount (file system) volume capability. */
export function mountCapability(
  fsType: string,
  mountFlags: readonly string[],
  accessMode: CsiAccessMode,
  volumeMountGroup?: string,
): VolumeCapability {
  return {
    mount: { fs_type: fsType, mount_flags: [...mountFlags], ...(volumeMountGroup === undefined ? {} : { volume_mount_group: volumeMountGroup }) },
    access_mode: { mode: accessMode },
  };
}

/** `AddSELinuxMountOption`: `context="<label>"` appended to the mount options. */
export function addSELinuxMountOption(options: readonly string[], label: string): string[] {
  return [...options, `context="${label}"`];
}

/** A secret reference could not be resolved. */
export class SecretLookupError extends Error {
  override readonly name = 'SecretLookupError';
}

export function isSecretLookupError(err: unknown): err is SecretLookupError {
  return err instanceof SecretLookupError;
}

/**
 * `getCredentialsFromSecret`: the secret's data, base64-decoded (`stringData` entries, which
 * manifest files may use, override them as the API server would). Throws
 * {@link SecretLookupError} when the secret does not exist or a value is not valid base64.
 */
export function getCredentialsFromSecret(objects: VolumeObjectGetter, namespace: string, name: string): StringMap {
  const secret = objects.getSecret(namespace, name);
  if (secret === undefined) throw new SecretLookupError(`secrets "${name}" not found`);
  const out: StringMap = {};
  for (const [key, value] of Object.entries(secret.data ?? {})) {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(value) || value.length % 4 !== 0) {
      throw new SecretLookupError(`secret ${namespace}/${name}: the value of key ${JSON.stringify(key)} is not valid base64`);
    }
    out[key] = Buffer.from(value, 'base64').toString('utf8');
  }
  for (const [key, value] of Object.entries(secret.stringData ?? {})) out[key] = value;
  return out;
}

/**
 * Whether `path` is mounted as far as the plugin is concerned:
 * - missing → false;
 * - a symlink → true: the unprivileged csi-loop driver (and other symlink-based drivers)
 *   "mount" by making the staging/target path a symlink; nothing else makes one there;
 * - a mount point in the fresh mount table → true;
 * - a corrupted mount (ENOTCONN, ESTALE, …) → true, so it is never removed as a plain directory.
 */
export async function isMounted(mounter: HostMounter, path: string): Promise<boolean> {
  let st;
  try {
    st = await lstat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    if (isCorruptedMnt(err)) return true;
    throw err;
  }
  if (st.isSymbolicLink()) return true;
  try {
    return await mounter.isMountPoint(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    if (isCorruptedMnt(err)) return true;
    throw err;
  }
}

/**
 * `removeMountDir`: when `mountPath` is not mounted, removes it (an empty directory),
 * `vol_data.json` beside it and their parent directory, through the safe-removal helper (fresh
 * mount table, never recursive, never across file systems). Returns false, removing nothing,
 * when the path is still mounted. Throws when a removal is refused (e.g. the directory is not
 * empty): the caller reports the volume as not cleaned up.
 *
 * Two differences from upstream, both so that a refused removal can be retried:
 * - the temporary files of an interrupted durable write of `vol_data.json` (the agent killed
 *   between creating and renaming it) are the plugin's own and are removed with it; upstream
 *   writes the file in place and leaves no such file;
 * - an entry of the parent directory that is none of these (and not `mountPath`) is refused
 *   before anything is removed. Upstream removes `vol_data.json` first and then fails to remove
 *   the directory, after which every retry fails with "unmounter failed to load volume data
 *   file" and nothing can finish the TearDown; here `vol_data.json` stays, and the retry after
 *   the stray entry is gone succeeds.
 */
export async function removeMountDir(rootDir: string, mounter: HostMounter, mountPath: string): Promise<boolean> {
  if (await isMounted(mounter, mountPath)) return false;
  const volPath = dirname(mountPath);
  const opts = { root: rootDir, mounter };
  const entries = await readdir(volPath).catch((err: unknown) => {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  });
  const leftovers = entries.filter((name) => isDurableWriteTempName(name, VOL_DATA_FILE_NAME));
  const strangers = entries.filter((name) => name !== basename(mountPath) && name !== VOL_DATA_FILE_NAME && !leftovers.includes(name));
  if (strangers.length > 0) {
    throw new SafeRemoveRefusedError(volPath, `refusing to remove ${volPath}: it is not empty (${strangers.sort().join(', ')} is neither ${basename(mountPath)} nor ${VOL_DATA_FILE_NAME}; ${VOL_DATA_FILE_NAME} is kept)`);
  }
  await safeRemove(mountPath, opts);
  for (const name of leftovers) await safeRemove(join(volPath, name), { ...opts, allowFiles: [name] });
  await safeRemove(join(volPath, VOL_DATA_FILE_NAME), opts);
  await safeRemove(volPath, opts);
  return true;
}

/**
 * Pod publish targets that are symlinks to `deviceMountPath` (or resolve to the same place):
 * the "mount references" of a staging path when a driver publishes with symlinks, which the
 * mount table cannot show. Scans `<root>/pods/<uid>/volumes/kubernetes.io~csi/<name>/mount`.
 */
export async function symlinkMountRefs(rootDir: string, deviceMountPath: string): Promise<string[]> {
  const podsDir = join(rootDir, 'pods');
  const refs: string[] = [];
  const list = async (dir: string): Promise<string[]> => readdir(dir).catch(() => []);
  const stagingReal = await realpath(deviceMountPath).catch(() => null);
  for (const uid of await list(podsDir)) {
    const pluginDir = join(podsDir, uid, 'volumes', escapePluginName(CSI_PLUGIN_NAME));
    for (const name of await list(pluginDir)) {
      const target = join(pluginDir, name, PUBLISH_DIR_NAME);
      const link = await readlink(target).catch(() => null);
      if (link === null) continue;
      const sameText = resolve(dirname(target), link) === deviceMountPath;
      const sameReal = stagingReal !== null && (await realpath(target).catch(() => null)) === stagingReal;
      if (sameText || sameReal) refs.push(target);
    }
  }
  return refs;
}
