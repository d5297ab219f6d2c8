import { errorMessage } from '../../errors.ts';
/**
 * Errors of the in-tree volume plugins. Texts are the kubelet's where the kubelet has one, so a
 * MountVolume.SetUp failure reads the same in VolumeScope as in `kubectl describe pod`. No error
 * here ever carries the contents of a secret or config map: only object names, keys and paths.
 */

/**
 * A configMap or secret the volume references does not exist. The text is that of the kubelet's
 * watch-based object managers (`configmap "x" not found`, `secret "x" not found`), which use
 * the singular resource name.
 */
export class ObjectNotFoundError extends Error {
  override readonly name = 'ObjectNotFoundError';
  constructor(
    readonly resource: 'configmap' | 'secret',
    readonly objectName: string,
  ) {
    super(`${resource} "${objectName}" not found`);
  }
}

export function isObjectNotFoundError(err: unknown): err is ObjectNotFoundError {
  return err instanceof ObjectNotFoundError;
}

/**
 * An `items` entry names a key the object does not have, and the volume is not optional
 * (`configmap references non-existent config key: k`, `references non-existent secret key: k`).
 */
export class NonExistentKeyError extends Error {
  override readonly name = 'NonExistentKeyError';
  constructor(
    readonly resource: 'configmap' | 'secret',
    readonly key: string,
  ) {
    super(resource === 'configmap' ? `configmap references non-existent config key: ${key}` : `references non-existent secret key: ${key}`);
  }
}

export function isNonExistentKeyError(err: unknown): err is NonExistentKeyError {
  return err instanceof NonExistentKeyError;
}

/**
 * Several independent failures (projected sources, downward API items), formatted as
 * apimachinery's `utilerrors.NewAggregate`: one distinct message alone, several as `[a, b]`.
 */
export class AggregateVolumeError extends Error {
  override readonly name = 'AggregateVolumeError';
  constructor(readonly errors: readonly Error[]) {
    const distinct = [...new Set(errors.map((e) => e.message))];
    super(distinct.length === 1 ? (distinct[0] ?? '') : `[${distinct.join(', ')}]`);
  }
}

export function isAggregateVolumeError(err: unknown): err is AggregateVolumeError {
  return err instanceof AggregateVolumeError;
}

/** Throws nothing for no errors, the error itself for one, an {@link AggregateVolumeError} for more. */
export function throwAggregate(errors: readonly Error[]): void {
  const [first] = errors;
  if (first === undefined) return;
  if (errors.length === 1) throw first;
  throw new AggregateVolumeError(errors);
}

/**
 * TearDown (or a rewrite) found something in a volume directory that the plugin did not create,
 * or a mount it did not make, and removed nothing rather than guess (docs/safety.md). The operator inspects the path and cleans up by hand.
 */
export class TearDownRefusedError extends Error {
  override readonly name = 'TearDownRefusedError';
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`refusing to remove ${path}: ${reason}`);
  }
}

export function isTearDownRefusedError(err: unknown): err is TearDownRefusedError {
  return err instanceof TearDownRefusedError;
}

/** `GetVolumeName` of a spec the plugin does not handle (`Spec does not reference a … volume type`). */
export class UnsupportedSpecError extends Error {
  override readonly name = 'UnsupportedSpecError';
}

export function isUnsupportedSpecError(err: unknown): err is UnsupportedSpecError {
  return err instanceof UnsupportedSpecError;
}

/**
 * SetUp cannot proceed with what it was given: no object getter (the kubelet's "kube client is
 * not configured"), an unknown emptyDir medium, a pod without a UID.
 */
export class VolumeSetupError extends Error {
  override readonly name = 'VolumeSetupError';
}

export function isVolumeSetupError(err: unknown): err is VolumeSetupError {
  return err instanceof VolumeSetupError;
}

/** The mount table shows something at a volume dir that SetUp or TearDown cannot reconcile. */
export class VolumeMountStateError extends Error {
  override readonly name = 'VolumeMountStateError';
}

export function isVolumeMountStateError(err: unknown): err is VolumeMountStateError {
  return err instanceof VolumeMountStateError;
}

/** A plugin was used before `init(host)`. */
export class PluginNotInitializedError extends Error {
  override readonly name = 'PluginNotInitializedError';
  constructor(plugin: string) {
    super(`volume plugin ${plugin} was used before init(host)`);
  }
}

export function isPluginNotInitializedError(err: unknown): err is PluginNotInitializedError {
  return err instanceof PluginNotInitializedError;
}

const errnoTexts: Record<string, string> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ENOTDIR: 'not a directory',
  EISDIR: 'is a directory',
  EEXIST: 'file exists',
  EROFS: 'read-only file system',
  ELOOP: 'too many levels of symbolic links',
  ENOSPC: 'no space left on device',
};

/**
 * Go's `*fs.PathError` text (`open /x/y: no such file or directory`) for a Node fs error, so
 * failures the kubelet passes through from the os package read the same here.
 */
export function goPathErrorText(op: string, path: string, err: unknown): string {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  const text = code === undefined ? undefined : errnoTexts[code];
  return `${op} ${path}: ${text ?? (errorMessage(err))}`;
}

/** True when `err` is a Node fs error with the given code. */
export function hasErrnoCode(err: unknown, code: string): boolean {
  return (err as NodeJS.ErrnoException | null)?.code === code;
}
