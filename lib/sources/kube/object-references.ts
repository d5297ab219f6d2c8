/**
 * Which objects a node needs: the PersistentVolumeClaims, ConfigMaps and Secrets its pods'
 * volumes name, the PersistentVolumes those claims are bound to (cluster-scoped: namespace ""),
 * plus the Secrets the CSI PersistentVolumes of those claims name for node operations. This is
 * the set the kubelet's node authorizer lets a node read (kubernetes/kubernetes
 * plugin/pkg/auth/authorizer/node/node_authorizer.go@v1.34: `get` only, through the
 * pod → claim → volume → secret graph), and the set the API source fetches (see
 * referenced-objects.ts).
 */
import type { PersistentVolume, Pod } from '../../volume/k8s-types.ts';

export type ReferencedKind = 'PersistentVolumeClaim' | 'PersistentVolume' | 'ConfigMap' | 'Secret';

/** One object, by kind; `namespace` is "" for a PersistentVolume. */
export interface ObjectRef {
  kind: ReferencedKind;
  namespace: string;
  name: string;
}

const resourceOf: Readonly<Record<ReferencedKind, string>> = {
  PersistentVolumeClaim: 'persistentvolumeclaims',
  PersistentVolume: 'persistentvolumes',
  ConfigMap: 'configmaps',
  Secret: 'secrets',
};

/** A stable map key: `Secret prod/db-password`, `PersistentVolume /pv-1`. */
export function refKey(ref: ObjectRef): string {
  return `${ref.kind} ${ref.namespace}/${ref.name}`;
}

/** The object's API path, used as the `file` of its source errors: `/api/v1/namespaces/prod/secrets/db`. */
export function refPath(ref: ObjectRef): string {
  if (ref.kind === 'PersistentVolume') return `/api/v1/persistentvolumes/${ref.name}`;
  return `/api/v1/namespaces/${ref.namespace}/${resourceOf[ref.kind]}/${ref.name}`;
}

/**
 * The claims, config maps and secrets a pod's volumes name, in volume order, without
 * duplicates. Generic ephemeral volumes name the claim `<pod name>-<volume name>`, which the
 * ephemeral volume controller creates. Empty names (an API-invalid `configMap: {}`) are skipped.
 */
/** The reference of a PersistentVolume (cluster-scoped). */
export function persistentVolumeRef(name: string): ObjectRef {
  return { kind: 'PersistentVolume', namespace: '', name };
}

export function podReferences(pod: Pod): ObjectRef[] {
  const namespace = pod.metadata.namespace ?? 'default';
  const refs = new Map<string, ObjectRef>();
  const add = (kind: ReferencedKind, name: string | undefined) => {
    if (name === undefined || name === '') return;
    const ref: ObjectRef = { kind, namespace, name };
    refs.set(refKey(ref), ref);
  };
  for (const volume of pod.spec.volumes ?? []) {
    if (volume.persistentVolumeClaim !== undefined) add('PersistentVolumeClaim', volume.persistentVolumeClaim.claimName);
    if (volume.ephemeral !== undefined) add('PersistentVolumeClaim', `${pod.metadata.name}-${volume.name}`);
    if (volume.configMap !== undefined) add('ConfigMap', volume.configMap.name);
    if (volume.secret !== undefined) add('Secret', volume.secret.secretName);
    if (volume.csi?.nodePublishSecretRef !== undefined) add('Secret', volume.csi.nodePublishSecretRef.name);
    for (const source of volume.projected?.sources ?? []) {
      if (source.configMap !== undefined) add('ConfigMap', source.configMap.name);
      if (source.secret !== undefined) add('Secret', source.secret.name);
    }
  }
  return [...refs.values()];
}

/**
 * The secrets a CSI PersistentVolume names for node operations (stage, publish, expand). The
 * controller-side secrets are not the node's business. A reference without a namespace (the
 * API requires one) is read from "default".
 */
export function persistentVolumeSecretReferences(pv: PersistentVolume): ObjectRef[] {
  const csi = pv.spec.csi;
  if (csi === undefined) return [];
  const refs = new Map<string, ObjectRef>();
  for (const secretRef of [csi.nodeStageSecretRef, csi.nodePublishSecretRef, csi.nodeExpandSecretRef]) {
    if (secretRef === undefined || secretRef.name === '') continue;
    const ref: ObjectRef = { kind: 'Secret', namespace: secretRef.namespace ?? 'default', name: secretRef.name };
    refs.set(refKey(ref), ref);
  }
  return [...refs.values()];
}
