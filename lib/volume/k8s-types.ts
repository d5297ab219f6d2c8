/**
 * The subset of Kubernetes v1 objects the volume manager reads. These are plain structural types:
 * the engine never imports a Kubernetes client. Sources (manifest files, the API server) hand in
 * objects of these shapes; unknown fields are allowed and ignored.
 */

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  deletionTimestamp?: string;
  ownerReferences?: { apiVersion?: string; kind: string; name: string; uid: string; controller?: boolean }[];
}

export type ResourceList = Record<string, string>;

export interface SELinuxOptions {
  user?: string;
  role?: string;
  type?: string;
  level?: string;
}

export interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  subPath?: string;
}

export interface VolumeDevice {
  name: string;
  devicePath: string;
}

export interface Container {
  name: string;
  image?: string;
  volumeMounts?: VolumeMount[];
  volumeDevices?: VolumeDevice[];
  resources?: { limits?: ResourceList; requests?: ResourceList };
  securityContext?: { seLinuxOptions?: SELinuxOptions };
}

export interface KeyToPath {
  key: string;
  path: string;
  mode?: number;
}

export interface ObjectFieldSelector {
  fieldPath: string;
  apiVersion?: string;
}

export interface DownwardAPIVolumeFile {
  path: string;
  fieldRef?: ObjectFieldSelector;
  resourceFieldRef?: { containerName?: string; resource: string; divisor?: string };
  mode?: number;
}

export interface VolumeProjection {
  secret?: { name?: string; items?: KeyToPath[]; optional?: boolean };
  configMap?: { name?: string; items?: KeyToPath[]; optional?: boolean };
  downwardAPI?: { items?: DownwardAPIVolumeFile[] };
  serviceAccountToken?: { audience?: string; expirationSeconds?: number; path: string };
}

export interface CSIVolumeSource {
  driver: string;
  readOnly?: boolean;
  fsType?: string;
  volumeAttributes?: Record<string, string>;
  nodePublishSecretRef?: { name: string };
}

export interface CSIPersistentVolumeSource {
  driver: string;
  volumeHandle: string;
  readOnly?: boolean;
  fsType?: string;
  volumeAttributes?: Record<string, string>;
  controllerPublishSecretRef?: { name: string; namespace?: string };
  nodeStageSecretRef?: { name: string; namespace?: string };
  nodePublishSecretRef?: { name: string; namespace?: string };
  controllerExpandSecretRef?: { name: string; namespace?: string };
  nodeExpandSecretRef?: { name: string; namespace?: string };
}

export interface GCEPersistentDiskVolumeSource {
  pdName: string;
  fsType?: string;
  partition?: number;
  readOnly?: boolean;
}

export interface PersistentVolumeClaimSpec {
  accessModes?: PersistentVolumeAccessMode[];
  resources?: { requests?: ResourceList; limits?: ResourceList };
  volumeName?: string;
  storageClassName?: string;
  volumeMode?: 'Filesystem' | 'Block';
}

/** One entry of `pod.spec.volumes`. Exactly one source field is expected to be set. */
export interface Volume {
  name: string;
  emptyDir?: { medium?: '' | 'Memory'; sizeLimit?: string };
  hostPath?: { path: string; type?: string };
  configMap?: { name?: string; items?: KeyToPath[]; defaultMode?: number; optional?: boolean };
  secret?: { secretName?: string; items?: KeyToPath[]; defaultMode?: number; optional?: boolean };
  projected?: { sources?: VolumeProjection[]; defaultMode?: number };
  downwardAPI?: { items?: DownwardAPIVolumeFile[]; defaultMode?: number };
  persistentVolumeClaim?: { claimName: string; readOnly?: boolean };
  ephemeral?: { volumeClaimTemplate?: { metadata?: Partial<ObjectMeta>; spec: PersistentVolumeClaimSpec } };
  csi?: CSIVolumeSource;
  gcePersistentDisk?: GCEPersistentDiskVolumeSource;
}

export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';

export interface PodSecurityContext {
  seLinuxOptions?: SELinuxOptions;
  fsGroup?: number;
  runAsUser?: number;
  supplementalGroups?: number[];
  fsGroupChangePolicy?: 'OnRootMismatch' | 'Always';
}

export interface Pod {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: {
    nodeName?: string;
    /** The service account whose bound tokens projected `serviceAccountToken` sources get. */
    serviceAccountName?: string;
    volumes?: Volume[];
    containers: Container[];
    initContainers?: Container[];
    ephemeralContainers?: Container[];
    securityContext?: PodSecurityContext;
    /** The RuntimeClass overhead, counted in the pod's limits (the size of a memory-backed emptyDir). */
    overhead?: ResourceList;
  };
  status?: { phase?: PodPhase };
}

export type PersistentVolumeAccessMode = 'ReadWriteOnce' | 'ReadOnlyMany' | 'ReadWriteMany' | 'ReadWriteOncePod';

export interface NodeSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt';
  values?: string[];
}

export interface PersistentVolume {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: {
    capacity?: ResourceList;
    accessModes?: PersistentVolumeAccessMode[];
    volumeMode?: 'Filesystem' | 'Block';
    claimRef?: { namespace?: string; name?: string; uid?: string };
    mountOptions?: string[];
    storageClassName?: string;
    nodeAffinity?: { required?: { nodeSelectorTerms: { matchExpressions?: NodeSelectorRequirement[] }[] } };
    csi?: CSIPersistentVolumeSource;
    local?: { path: string; fsType?: string };
    hostPath?: { path: string; type?: string };
    gcePersistentDisk?: GCEPersistentDiskVolumeSource;
  };
  status?: { phase?: string };
}

export interface PersistentVolumeClaim {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: PersistentVolumeClaimSpec;
  status?: { phase?: 'Pending' | 'Bound' | 'Lost'; capacity?: ResourceList; accessModes?: PersistentVolumeAccessMode[] };
}

export interface ConfigMap {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
}

export interface Secret {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  type?: string;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

export interface CSIDriver {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: { attachRequired?: boolean; podInfoOnMount?: boolean; volumeLifecycleModes?: string[]; requiresRepublish?: boolean };
}

/** `node.status.volumesAttached[]`. */
export interface AttachedVolumeStatus {
  name: string;
  devicePath: string;
}

/** `node.status.conditions[]` (the fields the agent shows). */
export interface NodeCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  /** RFC 3339. */
  lastTransitionTime?: string;
}

export interface Node {
  metadata: ObjectMeta;
  status?: { volumesAttached?: AttachedVolumeStatus[]; volumesInUse?: string[]; allocatable?: ResourceList; conditions?: NodeCondition[] };
}

/** The PV annotation holding a supplemental group id (`pv.beta.kubernetes.io/gid`). */
export const VolumeGidAnnotationKey = 'pv.beta.kubernetes.io/gid';
