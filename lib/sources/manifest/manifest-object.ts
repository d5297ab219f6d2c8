/**
 * The objects a manifest directory yields, tagged with their kind and the place in the file they
 * came from, plus the identity rules used to detect duplicates.
 */
import type {
  ConfigMap,
  CSIDriver,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  Secret,
} from '../../volume/k8s-types.ts';

/** Where an object sits in its file: the 0-based YAML document, and the item of a `List`. */
export interface DocumentLocation {
  document: number;
  /** Index in the `items` of a `List` document; absent for a plain object document. */
  item?: number;
}

interface Located {
  location: DocumentLocation;
}

/**
 * One validated object. Objects are deeply frozen: consumers share them and must copy before
 * changing anything. Namespaced objects always carry `metadata.namespace` (default "default");
 * pods always carry `metadata.uid` and `spec.nodeName`.
 */
export type ManifestObject = Located &
  (
    | { kind: 'Pod'; object: Pod }
    | { kind: 'PersistentVolume'; object: PersistentVolume }
    | { kind: 'PersistentVolumeClaim'; object: PersistentVolumeClaim }
    | { kind: 'ConfigMap'; object: ConfigMap }
    | { kind: 'Secret'; object: Secret }
    | { kind: 'CSIDriver'; object: CSIDriver }
  );

export type ManifestKind = ManifestObject['kind'];

/** The apiVersion each supported kind must declare. */
export const supportedKinds: Readonly<Record<ManifestKind, { apiVersion: string; namespaced: boolean }>> = {
  Pod: { apiVersion: 'v1', namespaced: true },
  PersistentVolume: { apiVersion: 'v1', namespaced: false },
  PersistentVolumeClaim: { apiVersion: 'v1', namespaced: true },
  ConfigMap: { apiVersion: 'v1', namespaced: true },
  Secret: { apiVersion: 'v1', namespaced: true },
  CSIDriver: { apiVersion: 'storage.k8s.io/v1', namespaced: false },
};

export function isManifestKind(kind: string): kind is ManifestKind {
  return Object.hasOwn(supportedKinds, kind);
}

/** "document 2" or "document 0 items[3]". */
export function formatLocation(location: DocumentLocation): string {
  return location.item === undefined ? `document ${location.document}` : `document ${location.document} items[${location.item}]`;
}

/** "Pod default/web", "PersistentVolume pv-1". */
export function describeObject(o: ManifestObject): string {
  const { name, namespace } = o.object.metadata;
  return namespace === undefined ? `${o.kind} ${name}` : `${o.kind} ${namespace}/${name}`;
}

/** The identity of an object for duplicate detection: kind, namespace (if any) and name. */
export function objectKey(o: ManifestObject): string {
  return describeObject(o);
}
