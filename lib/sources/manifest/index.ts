/**
 * The manifest directory object source (node agent `--manifest-dir`).
 *
 * - manifest-source.ts: `ManifestSource`, the watched, debounced, always-valid view of a directory.
 * - parse-manifest-file.ts: `parseManifestFile`, the pure per-file parser and validator.
 * - k8s-schemas.ts: zod schemas for Pod, PersistentVolume, PersistentVolumeClaim, ConfigMap,
 *   Secret and CSIDriver (unknown fields stripped).
 * - manifest-snapshot.ts: merging file states (duplicates, last valid versions) and diffs.
 * - names.ts: name, uid, key and path rules (path-escape checks first).
 * - pod-uid.ts: uids for pods that declare none. `isPodTerminated` is re-exported from
 *   ../pod-lifecycle.ts, where the pod lifecycle rules of every source live.
 */
export { ManifestSource, defaultManifestDebounceMs, defaultManifestResyncIntervalMs, defaultMaxManifestFileBytes } from './manifest-source.ts';
export type { ManifestChange, ManifestChangeListener, ManifestSourceOptions } from './manifest-source.ts';
export { parseManifestFile } from './parse-manifest-file.ts';
export type { ManifestFileParseResult } from './parse-manifest-file.ts';
export type { DocumentLocation, ManifestKind, ManifestObject } from './manifest-object.ts';
export { supportedKinds } from './manifest-object.ts';
export { isManifestFileName } from './manifest-file-name.ts';
export { deriveManifestPodUID } from './pod-uid.ts';
export { isPodTerminated } from '../pod-lifecycle.ts';
export { ManifestDirError, ManifestSourceStateError, isManifestDirError, isManifestSourceStateError } from './errors.ts';
export {
  configMapSchema,
  csiDriverSchema,
  persistentVolumeClaimSchema,
  persistentVolumeSchema,
  podSchema,
  secretSchema,
} from './k8s-schemas.ts';
