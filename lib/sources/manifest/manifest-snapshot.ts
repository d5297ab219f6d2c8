/**
 * The merged, immutable view of a manifest directory at one moment, built purely from the state
 * of each file, and the difference between two such views.
 */
import { isDeepStrictEqual } from 'node:util';
import type {
  ConfigMap,
  CSIDriver,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  Secret,
} from '../../volume/k8s-types.ts';
import { describeObject, formatLocation, objectKey } from './manifest-object.ts';
import type { SourceError } from '../source.ts';
import type { DocumentLocation, ManifestObject } from './manifest-object.ts';

/** What the source knows about one file. */
export interface ManifestFileState {
  /** Path relative to the manifest directory. */
  file: string;
  /** The objects of the file's last valid version; empty if it has never been valid. */
  objects: readonly ManifestObject[];
  /** Problems of the file's current version (parse or read errors); empty when it is valid. */
  errors: readonly SourceError[];
}

/**
 * All objects the directory currently provides, keyed for lookup, plus every source error.
 * Pods are keyed by uid, PVs and CSIDrivers by name, the namespaced kinds by "namespace/name".
 * Map iteration follows file order, then document order.
 */
export interface ManifestSnapshot {
  readonly pods: ReadonlyMap<string, Pod>;
  readonly persistentVolumes: ReadonlyMap<string, PersistentVolume>;
  readonly persistentVolumeClaims: ReadonlyMap<string, PersistentVolumeClaim>;
  readonly configMaps: ReadonlyMap<string, ConfigMap>;
  readonly secrets: ReadonlyMap<string, Secret>;
  readonly csiDrivers: ReadonlyMap<string, CSIDriver>;
  /** Sorted by file (directory-level errors, file ".", first), in order within a file. */
  readonly errors: readonly SourceError[];
}

/** The key of a namespaced object in a {@link ManifestSnapshot} map. */
export function namespacedKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export const emptyManifestSnapshot: ManifestSnapshot = buildManifestSnapshot([]);

/** Code-unit order, independent of locale: "B.yaml" < "a.yaml" < "b.yaml". */
function compareFileNames(a: string, b: string): number {
  if (a === b) return 0;
  return a < b ? -1 : 1;
}

/**
 * Merges file states into a snapshot. Every file contributes its last valid objects, so a file
 * that became invalid keeps providing what it held. An object whose identity (kind, namespace,
 * name) or pod uid was already provided by a file earlier in code-unit order is dropped, and the
 * later file gets a source error naming the winner; the rest of that file still counts.
 * `extraErrors` (e.g. the directory being unreadable) are listed with the file errors.
 */
export function buildManifestSnapshot(files: Iterable<ManifestFileState>, extraErrors: readonly SourceError[] = []): ManifestSnapshot {
  const pods = new Map<string, Pod>();
  const persistentVolumes = new Map<string, PersistentVolume>();
  const persistentVolumeClaims = new Map<string, PersistentVolumeClaim>();
  const configMaps = new Map<string, ConfigMap>();
  const secrets = new Map<string, Secret>();
  const csiDrivers = new Map<string, CSIDriver>();
  const errors: SourceError[] = [...extraErrors];

  const owners = new Map<string, { file: string; location: DocumentLocation }>();
  const podOwners = new Map<string, { file: string; object: ManifestObject }>();
  const sorted = [...files].sort((a, b) => compareFileNames(a.file, b.file));
  for (const state of sorted) {
    errors.push(...state.errors);
    for (const o of state.objects) {
      const where = `${state.file}: ${formatLocation(o.location)} (${describeObject(o)})`;
      const key = objectKey(o);
      const owner = owners.get(key);
      if (owner !== undefined) {
        errors.push({ file: state.file, message: `${where}: ignored: ${owner.file} (${formatLocation(owner.location)}) already defines it` });
        continue;
      }
      if (o.kind === 'Pod') {
        const uid = o.object.metadata.uid ?? '';
        const podOwner = podOwners.get(uid);
        if (podOwner !== undefined) {
          errors.push({
            file: state.file,
            message: `${where}: ignored: metadata.uid ${uid} is already used by ${describeObject(podOwner.object)} in ${podOwner.file} (${formatLocation(podOwner.object.location)})`,
          });
          continue;
        }
        podOwners.set(uid, { file: state.file, object: o });
      }
      owners.set(key, { file: state.file, location: o.location });
      add(o);
    }
  }
  errors.sort((a, b) => compareFileNames(a.file, b.file));
  return { pods, persistentVolumes, persistentVolumeClaims, configMaps, secrets, csiDrivers, errors };

  function add(o: ManifestObject): void {
    const { name, namespace = '' } = o.object.metadata;
    switch (o.kind) {
      case 'Pod':
        pods.set(o.object.metadata.uid ?? '', o.object);
        break;
      case 'PersistentVolume':
        persistentVolumes.set(name, o.object);
        break;
      case 'PersistentVolumeClaim':
        persistentVolumeClaims.set(namespacedKey(namespace, name), o.object);
        break;
      case 'ConfigMap':
        configMaps.set(namespacedKey(namespace, name), o.object);
        break;
      case 'Secret':
        secrets.set(namespacedKey(namespace, name), o.object);
        break;
      case 'CSIDriver':
        csiDrivers.set(name, o.object);
        break;
    }
  }
}

/** What changed between two snapshots. Uid lists are in snapshot order. */
export interface ManifestDiff {
  pods: { added: string[]; updated: string[]; removed: string[] };
  /** Any PV, PVC, ConfigMap, Secret or CSIDriver was added, changed or removed. */
  objectsChanged: boolean;
  /** The list of source errors differs. */
  errorsChanged: boolean;
}

export function diffManifestSnapshots(prev: ManifestSnapshot, next: ManifestSnapshot): ManifestDiff {
  const added: string[] = [];
  const updated: string[] = [];
  const removed: string[] = [];
  for (const [uid, pod] of next.pods) {
    const old = prev.pods.get(uid);
    if (old === undefined) added.push(uid);
    else if (old !== pod && !isDeepStrictEqual(old, pod)) updated.push(uid);
  }
  for (const uid of prev.pods.keys()) {
    if (!next.pods.has(uid)) removed.push(uid);
  }
  const objectsChanged =
    !sameEntries(prev.persistentVolumes, next.persistentVolumes) ||
    !sameEntries(prev.persistentVolumeClaims, next.persistentVolumeClaims) ||
    !sameEntries(prev.configMaps, next.configMaps) ||
    !sameEntries(prev.secrets, next.secrets) ||
    !sameEntries(prev.csiDrivers, next.csiDrivers);
  return { pods: { added, updated, removed }, objectsChanged, errorsChanged: !isDeepStrictEqual(prev.errors, next.errors) };
}

export function isEmptyDiff(diff: ManifestDiff): boolean {
  const { added, updated, removed } = diff.pods;
  return added.length === 0 && updated.length === 0 && removed.length === 0 && !diff.objectsChanged && !diff.errorsChanged;
}

function sameEntries<T>(a: ReadonlyMap<string, T>, b: ReadonlyMap<string, T>): boolean {
  if (a.size !== b.size) return false;
  for (const [key, value] of a) {
    if (!b.has(key)) return false;
    const other = b.get(key);
    if (other !== value && !isDeepStrictEqual(other, value)) return false;
  }
  return true;
}
