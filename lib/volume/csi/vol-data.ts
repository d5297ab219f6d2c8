/**
 * The CSI plugin's on-disk layout under the kubelet root and its `vol_data.json` files
 * (pkg/volume/csi/csi_util.go, csi_mounter.go, csi_attacher.go @v1.34):
 *
 * - staging (one per volume and node):
 *   `<root>/plugins/kubernetes.io/csi/<driver>/<sha256(volumeHandle) hex>/globalmount`, with
 *   `vol_data.json` beside `globalmount` (driverName, volumeHandle, optional seLinuxMountContext
 *   and, VolumeScope only, publishContext);
 * - publish target (one per pod): `<root>/pods/<uid>/volumes/kubernetes.io~csi/<specName>/mount`,
 *   with `vol_data.json` one level up (specVolID, volumeHandle, driverName, nodeName,
 *   attachmentID, volumeLifecycleMode, optional seLinuxMountContext);
 * - attach intent (VolumeScope only, standalone attach): one file per attachment,
 *   `<root>/plugins/kubernetes.io/csi/_attach-intents/<attachment name>.json` (driverName,
 *   volumeHandle, nodeName, optional controllerPublishSecretName/Namespace), written durably
 *   before ControllerPublishVolume and removed after ControllerUnpublishVolume succeeded, so that
 *   a restarted agent knows every volume it may have attached even when it was killed during
 *   the publish, before anything else was written. `_attach-intents` cannot be a driver name
 *   (a CSI driver name begins with an alphanumeric character).
 *
 * The files are written before the driver call and removed only after it succeeded, so that
 * unpublish, unstage and reconstruction after a restart can read what was set up. Every value is
 * a string, as upstream's `map[string]string`, so files stay readable by either implementation.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { syncDirectory, writeFileDurably, type DurableWriteFs } from '../../mount-utils/durable-write.ts';
import { readFile } from '../../mount-utils/fast-read.ts';
import { escapePluginName } from '../types.ts';

/** `CSIPluginName`. */
export const CSI_PLUGIN_NAME = 'kubernetes.io/csi';
/** `volDataFileName`. */
export const VOL_DATA_FILE_NAME = 'vol_data.json';
/** `globalMountInGlobalPath`. */
export const GLOBAL_MOUNT_DIR_NAME = 'globalmount';
/** The last element of a publish target path (`GetCSIMounterPath`). */
export const PUBLISH_DIR_NAME = 'mount';
/** `volNameSep`: separates driver and volume handle in the plugin's volume name. */
export const VOL_NAME_SEP = '^';

/** `volDataKey`: the keys of vol_data.json. */
export const volDataKey = {
  specVolID: 'specVolID',
  volHandle: 'volumeHandle',
  driverName: 'driverName',
  nodeName: 'nodeName',
  attachmentID: 'attachmentID',
  volumeLifecycleMode: 'volumeLifecycleMode',
  seLinuxMountContext: 'seLinuxMountContext',
  /**
   * VolumeScope extension, staging file only: the ControllerPublishVolume publish context of a
   * standalone attach, JSON-encoded, so a restarted agent can still stage (upstream reads it
   * from the VolumeAttachment instead).
   */
  publishContext: 'publishContext',
} as const;

/** `storage.VolumeLifecycleMode`. */
export type VolumeLifecycleMode = 'Persistent' | 'Ephemeral';

function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** `getAttachmentName`: `csi-<sha256(volumeHandle + driver + nodeName)>`, the VolumeAttachment name. */
export function attachmentName(volumeHandle: string, driverName: string, nodeName: string): string {
  return `csi-${sha256Hex(`${volumeHandle}${driverName}${nodeName}`)}`;
}

/** `makeVolumeHandle`: the handle of an inline ephemeral volume, `csi-<sha256(podUID + specName)>`. */
export function makeVolumeHandle(podUID: string, specVolumeName: string): string {
  return `csi-${sha256Hex(`${podUID}${specVolumeName}`)}`;
}

/** `makeDeviceMountPath`: the staging path of a volume. */
export function deviceMountPath(rootDir: string, driverName: string, volumeHandle: string): string {
  return join(rootDir, 'plugins', CSI_PLUGIN_NAME, driverName, sha256Hex(volumeHandle), GLOBAL_MOUNT_DIR_NAME);
}

/** `getTargetPath`: `<root>/pods/<uid>/volumes/kubernetes.io~csi/<escaped specName>` (holds vol_data.json). */
export function podVolumeDir(rootDir: string, podUID: string, specVolumeName: string): string {
  return join(rootDir, 'pods', podUID, 'volumes', escapePluginName(CSI_PLUGIN_NAME), escapePluginName(specVolumeName));
}

/** The NodePublishVolume `target_path` of a pod's volume. */
export function publishTargetPath(rootDir: string, podUID: string, specVolumeName: string): string {
  return join(podVolumeDir(rootDir, podUID, specVolumeName), PUBLISH_DIR_NAME);
}

/** vol_data.json is missing, unreadable or not a JSON object of strings. */
export class VolumeDataError extends Error {
  override readonly name = 'VolumeDataError';
  constructor(
    readonly path: string,
    readonly notFound: boolean,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export function isVolumeDataError(err: unknown): err is VolumeDataError {
  return err instanceof VolumeDataError;
}

/**
 * `saveVolumeData`: writes `<dir>/vol_data.json`. `dir` must exist. The write is atomic and
 * durable (a full disk or an I/O error leaves the previous file intact), because unpublish,
 * unstage and reconstruction after a restart depend on it. A file that already holds exactly this
 * text is left as it is: it was written by the same durable write, and a SetUp after a restart
 * (every CSI volume is confirmed through it) would otherwise rewrite and fsync each file for
 * nothing. `fs`: for tests that inject failures.
 */
export async function saveVolumeData(dir: string, data: Readonly<Record<string, string>>, fs?: DurableWriteFs): Promise<void> {
  const file = join(dir, VOL_DATA_FILE_NAME);
  const text = JSON.stringify(data);
  // Any read error (missing, unreadable) just means the file is written.
  if ((await readFile(file, 'utf8').catch(() => null)) === text) return;
  try {
    // 0644: the kubelet's saveVolumeData uses os.Create (0666 less its umask 022).
    await writeFileDurably(file, text, { mode: 0o644, ...(fs === undefined ? {} : { fs }) });
  } catch (err) {
    throw new VolumeDataError(file, false, `failed to save volume data file ${file}: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * `loadVolumeData`: reads `<dir>/vol_data.json`. Throws {@link VolumeDataError} (`notFound` set
 * for ENOENT) when the file is missing, unreadable or not a JSON object whose values are strings.
 */
export async function loadVolumeData(dir: string): Promise<Record<string, string>> {
  return loadJsonStringMap(join(dir, VOL_DATA_FILE_NAME));
}

/** Reads a JSON object of strings; throws {@link VolumeDataError} as {@link loadVolumeData}. */
async function loadJsonStringMap(file: string): Promise<Record<string, string>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const notFound = (err as NodeJS.ErrnoException).code === 'ENOENT';
    throw new VolumeDataError(file, notFound, `failed to open volume data file [${file}]: ${(err as Error).message}`, { cause: err });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new VolumeDataError(file, false, `failed to parse volume data file [${file}]: ${(err as Error).message}`, { cause: err });
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed) || !Object.values(parsed).every((v) => typeof v === 'string')) {
    throw new VolumeDataError(file, false, `failed to parse volume data file [${file}]: not a JSON object of strings`);
  }
  return parsed as Record<string, string>;
}

/** Decodes the publishContext value of a staging vol_data.json; undefined when absent or malformed. */
export function decodePublishContext(data: Readonly<Record<string, string>>): Record<string, string> | undefined {
  const raw = data[volDataKey.publishContext];
  if (raw === undefined) return undefined;
  try {
    const v: unknown = JSON.parse(raw);
    if (v === null || typeof v !== 'object' || Array.isArray(v) || !Object.values(v).every((x) => typeof x === 'string')) return undefined;
    return v as Record<string, string>;
  } catch {
    return undefined;
  }
}

/** The directory of attach intent records (see the file comment). */
export const ATTACH_INTENT_DIR_NAME = '_attach-intents';

/** What an attach intent record holds. */
export interface AttachIntent {
  driverName: string;
  volumeHandle: string;
  nodeName: string;
  /** The PV's controllerPublishSecretRef, needed by ControllerUnpublishVolume after a restart. */
  controllerPublishSecretRef?: { name: string; namespace?: string };
}

export function attachIntentDir(rootDir: string): string {
  return join(rootDir, 'plugins', CSI_PLUGIN_NAME, ATTACH_INTENT_DIR_NAME);
}

/** `<root>/plugins/kubernetes.io/csi/_attach-intents/csi-<sha256(handle + driver + node)>.json`. */
export function attachIntentPath(rootDir: string, driverName: string, volumeHandle: string, nodeName: string): string {
  return join(attachIntentDir(rootDir), `${attachmentName(volumeHandle, driverName, nodeName)}.json`);
}

/**
 * Writes the attach intent record durably (atomic, fsynced, directory fsynced), creating its
 * directory. Throws {@link VolumeDataError} naming the file when it cannot: the caller must not
 * attach then, or a kill during the attach would leave an attachment no record knows of.
 */
export async function saveAttachIntent(rootDir: string, intent: AttachIntent, fs?: DurableWriteFs): Promise<void> {
  const file = attachIntentPath(rootDir, intent.driverName, intent.volumeHandle, intent.nodeName);
  const data: Record<string, string> = {
    [volDataKey.driverName]: intent.driverName,
    [volDataKey.volHandle]: intent.volumeHandle,
    [volDataKey.nodeName]: intent.nodeName,
  };
  const ref = intent.controllerPublishSecretRef;
  if (ref !== undefined) {
    data[attachIntentKey.secretName] = ref.name;
    if (ref.namespace !== undefined) data[attachIntentKey.secretNamespace] = ref.namespace;
  }
  try {
    await mkdir(attachIntentDir(rootDir), { recursive: true, mode: 0o750 });
    await writeFileDurably(file, JSON.stringify(data), { mode: 0o640, ...(fs === undefined ? {} : { fs }) });
  } catch (err) {
    throw new VolumeDataError(file, false, `failed to save attach intent file ${file}: ${(err as Error).message}`, { cause: err });
  }
}

/** Removes the attach intent record (absent: nothing to do) and fsyncs its directory. */
export async function removeAttachIntent(rootDir: string, driverName: string, volumeHandle: string, nodeName: string): Promise<void> {
  const file = attachIntentPath(rootDir, driverName, volumeHandle, nodeName);
  try {
    await unlink(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new VolumeDataError(file, false, `failed to remove attach intent file ${file}: ${(err as Error).message}`, { cause: err });
  }
  await syncDirectory(attachIntentDir(rootDir));
}

/** The extra keys of an attach intent record. */
export const attachIntentKey = {
  secretName: 'controllerPublishSecretName',
  secretNamespace: 'controllerPublishSecretNamespace',
} as const;

function toAttachIntent(data: Readonly<Record<string, string>>): AttachIntent | null {
  const driverName = data[volDataKey.driverName] ?? '';
  const volumeHandle = data[volDataKey.volHandle] ?? '';
  const nodeName = data[volDataKey.nodeName] ?? '';
  if (driverName === '' || volumeHandle === '' || nodeName === '') return null;
  const secretName = data[attachIntentKey.secretName];
  const secretNamespace = data[attachIntentKey.secretNamespace];
  return {
    driverName,
    volumeHandle,
    nodeName,
    ...(secretName === undefined ? {} : { controllerPublishSecretRef: { name: secretName, ...(secretNamespace === undefined ? {} : { namespace: secretNamespace }) } }),
  };
}

/** Reads one attach intent record; null when absent. Throws {@link VolumeDataError} when corrupt. */
export async function loadAttachIntent(rootDir: string, driverName: string, volumeHandle: string, nodeName: string): Promise<AttachIntent | null> {
  const file = attachIntentPath(rootDir, driverName, volumeHandle, nodeName);
  let data: Record<string, string>;
  try {
    data = await loadJsonStringMap(file);
  } catch (err) {
    if (isVolumeDataError(err) && err.notFound) return null;
    throw err;
  }
  const intent = toAttachIntent(data);
  if (intent === null) throw new VolumeDataError(file, false, `attach intent file [${file}] lacks ${volDataKey.driverName}, ${volDataKey.volHandle} or ${volDataKey.nodeName}`);
  return intent;
}

/**
 * Every attach intent record of `nodeName`, and the files that could not be used (corrupt, or of
 * a name that does not match their content) with the reason. Temporary files of an interrupted
 * write (`.<name>.<hex>.tmp`) are ignored.
 */
export async function listAttachIntents(rootDir: string, nodeName: string): Promise<{ intents: AttachIntent[]; invalid: { path: string; reason: string }[] }> {
  const dir = attachIntentDir(rootDir);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { intents: [], invalid: [] };
    throw new VolumeDataError(dir, false, `failed to read attach intent dir [${dir}]: ${(err as Error).message}`, { cause: err });
  }
  const intents: AttachIntent[] = [];
  const invalid: { path: string; reason: string }[] = [];
  for (const name of names.sort()) {
    if (name.startsWith('.') || !name.endsWith('.json')) continue;
    const file = join(dir, name);
    let intent: AttachIntent | null;
    try {
      intent = toAttachIntent(await loadJsonStringMap(file));
    } catch (err) {
      invalid.push({ path: file, reason: (err as Error).message });
      continue;
    }
    if (intent === null || attachIntentPath(rootDir, intent.driverName, intent.volumeHandle, intent.nodeName) !== file) {
      invalid.push({ path: file, reason: `attach intent file [${file}] does not name the attachment it is stored as` });
      continue;
    }
    if (intent.nodeName === nodeName) intents.push(intent);
  }
  return { intents, invalid };
}
