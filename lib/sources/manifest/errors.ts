import { errorMessage } from '../../volume/errors.ts';
/**
 * Errors the manifest source throws. Problems with manifest contents are not thrown: they are
 * data (`SourceError`, see lib/sources/source.ts).
 */

/**
 * The manifest directory cannot be read when the source starts (missing, not a directory, no
 * permission). After a successful start, the same condition is a source error instead, and the
 * last loaded objects stay.
 */
export class ManifestDirError extends Error {
  override readonly name = 'ManifestDirError';
  readonly dir: string;

  constructor(dir: string, cause: unknown) {
    super(`manifest directory ${dir} cannot be read: ${errorMessage(cause)}`, { cause });
    this.dir = dir;
  }
}

export function isManifestDirError(err: unknown): err is ManifestDirError {
  return err instanceof ManifestDirError;
}

/** `start()` was called twice, or after `stop()`: a source runs once. */
export class ManifestSourceStateError extends Error {
  override readonly name = 'ManifestSourceStateError';
}

export function isManifestSourceStateError(err: unknown): err is ManifestSourceStateError {
  return err instanceof ManifestSourceStateError;
}
