/**
 * Identifiers of the volume manager. Each is a branded string so that, for example, a plain
 * string or a hostname cannot be passed where a Node.Name is expected ("we use types.NodeName
 * whenever we are referring to the Node.Name"). Build them only through the constructors below.
 */

declare const brand: unique symbol;
type Brand<T, B extends string> = T & { readonly [brand]: B };

/** The name of the Node object (`metadata.name`), not the host name. */
export type NodeName = Brand<string, 'NodeName'>;
/** `v1.UniqueVolumeName`: `<plugin>/<volume>` or `<plugin>/<podUID>-<specName>` (see {@link uniqueVolumeName}). */
export type UniqueVolumeName = Brand<string, 'UniqueVolumeName'>;
/** `types.UniquePodName`: the pod UID as a string. */
export type UniquePodName = Brand<string, 'UniquePodName'>;
/** `types.UID` of a pod. */
export type PodUID = Brand<string, 'PodUID'>;
/** `spec.Name()`: the PV name for PV-backed specs, else the pod's volume name. */
export type VolumeSpecName = Brand<string, 'VolumeSpecName'>;
/** A volume plugin name such as `kubernetes.io/csi`. */
export type PluginName = Brand<string, 'PluginName'>;

export class InvalidIdentifierError extends Error {
  override readonly name = 'InvalidIdentifierError';
  constructor(
    readonly kind: string,
    readonly value: string,
    reason: string,
  ) {
    super(`invalid ${kind} ${JSON.stringify(value)}: ${reason}`);
  }
}

export function isInvalidIdentifierError(err: unknown): err is InvalidIdentifierError {
  return err instanceof InvalidIdentifierError;
}

function nonEmpty(kind: string, value: string): string {
  if (value.length === 0) throw new InvalidIdentifierError(kind, value, 'must not be empty');
  if (value.includes('\0')) throw new InvalidIdentifierError(kind, value, 'must not contain NUL');
  return value;
}

export function nodeName(value: string): NodeName {
  return nonEmpty('NodeName', value) as NodeName;
}

export function podUID(value: string): PodUID {
  return nonEmpty('PodUID', value) as PodUID;
}

export function pluginName(value: string): PluginName {
  return nonEmpty('PluginName', value) as PluginName;
}

export function volumeSpecName(value: string): VolumeSpecName {
  return nonEmpty('VolumeSpecName', value) as VolumeSpecName;
}

/** `GetUniquePodName(pod)`: the pod UID. */
export function uniquePodName(uid: PodUID | string): UniquePodName {
  return nonEmpty('UniquePodName', uid) as UniquePodName;
}

/** Wraps an existing unique volume name string (for example one read from node status). */
export function uniqueVolumeName(value: string): UniqueVolumeName {
  return nonEmpty('UniqueVolumeName', value) as UniqueVolumeName;
}

/** `EmptyUniquePodName`: the wildcard pod key of pending operations. */
export const EmptyUniquePodName = '' as UniquePodName;
/** `EmptyUniqueVolumeName`: never matches any pending operation. */
export const EmptyUniqueVolumeName = '' as UniqueVolumeName;
/** The wildcard node key of pending operations. */
export const EmptyNodeName = '' as NodeName;

/** `GetUniqueVolumeName(pluginName, volumeName)` → `<plugin>/<volume>` (attachable or device-mountable plugins). */
export function uniqueVolumeNameFromPlugin(plugin: PluginName, pluginVolumeName: string): UniqueVolumeName {
  return uniqueVolumeName(`${plugin}/${pluginVolumeName}`);
}

/** `GetUniqueVolumeNameFromSpecWithPod` → `<plugin>/<podUID>-<specName>` (volumes never shared between pods). */
export function uniqueVolumeNameWithPod(
  plugin: PluginName,
  pod: UniquePodName,
  specName: VolumeSpecName,
): UniqueVolumeName {
  return uniqueVolumeName(`${plugin}/${pod}-${specName}`);
}

/** CSI's plugin volume name `<driver>^<volumeHandle>`. */
export function csiVolumeName(driver: string, volumeHandle: string): string {
  return `${driver}^${volumeHandle}`;
}

/** Splits a unique volume name into plugin name and plugin volume name (the inverse of {@link uniqueVolumeNameFromPlugin}). */
export function splitUniqueName(name: UniqueVolumeName): { pluginName: PluginName; volumeName: string } {
  // Plugin names contain exactly one '/' (e.g. "kubernetes.io/csi"), or none for test plugins.
  const parts = name.split('/');
  if (parts.length >= 3) {
    return { pluginName: pluginName(`${parts[0]}/${parts[1]}`), volumeName: parts.slice(2).join('/') };
  }
  if (parts.length === 2) return { pluginName: pluginName(parts[0] ?? ''), volumeName: parts[1] ?? '' };
  throw new InvalidIdentifierError('UniqueVolumeName', name, 'has no plugin part');
}

/** `EscapeQualifiedName`: the on-disk directory name of a plugin (`kubernetes.io/csi` → `kubernetes.io~csi`). */
export function escapePluginName(name: PluginName | string): string {
  return name.replaceAll('/', '~');
}

/** `UnescapeQualifiedName`: the inverse of {@link escapePluginName}. */
export function unescapePluginName(dir: string): PluginName {
  return pluginName(dir.replaceAll('~', '/'));
}

/** The volume mode of a PV or of a pod's use of it. */
export type VolumeMode = 'Filesystem' | 'Block';
