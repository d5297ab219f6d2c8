/**
 * The fields of the Kubernetes objects the attachment model reads. Structural, because objects
 * arrive both as client-node's class instances (a LIST, timestamps as `Date`) and as plain JSON
 * (WATCH events and test fixtures, timestamps as strings). Nothing here runs.
 */

/** A timestamp as client-node (Date) or JSON (RFC 3339 string) carries it. */
export type Timestamp = Date | string;

export interface ObjectMeta {
  readonly name?: string;
  readonly namespace?: string;
  readonly uid?: string;
  readonly creationTimestamp?: Timestamp;
  readonly deletionTimestamp?: Timestamp;
  readonly finalizers?: readonly string[];
  readonly annotations?: Readonly<Record<string, string>>;
}

export interface VolumeError {
  readonly time?: Timestamp;
  readonly message?: string;
}

export interface VolumeAttachmentObject {
  readonly metadata?: ObjectMeta;
  readonly spec?: {
    readonly attacher?: string;
    readonly nodeName?: string;
    readonly source?: { readonly persistentVolumeName?: string };
  };
  readonly status?: {
    readonly attached?: boolean;
    readonly attachError?: VolumeError;
    readonly detachError?: VolumeError;
  };
}

export interface PersistentVolumeObject {
  readonly metadata?: ObjectMeta;
  readonly spec?: {
    readonly accessModes?: readonly string[];
    readonly csi?: { readonly driver?: string; readonly volumeHandle?: string };
    readonly claimRef?: { readonly namespace?: string; readonly name?: string; readonly uid?: string };
  };
  readonly status?: { readonly phase?: string };
}

export interface PersistentVolumeClaimObject {
  readonly metadata?: ObjectMeta;
  readonly spec?: { readonly volumeName?: string };
  readonly status?: { readonly phase?: string };
}

export interface PodVolume {
  readonly name?: string;
  readonly persistentVolumeClaim?: { readonly claimName?: string };
}

export interface PodObject {
  readonly metadata?: ObjectMeta;
  readonly spec?: {
    readonly nodeName?: string;
    readonly volumes?: readonly PodVolume[];
    readonly tolerations?: readonly { readonly key?: string; readonly operator?: string; readonly value?: string; readonly effect?: string }[];
  };
  readonly status?: {
    readonly phase?: string;
    readonly containerStatuses?: readonly { readonly state?: { readonly running?: object; readonly waiting?: object; readonly terminated?: object } }[];
    readonly initContainerStatuses?: readonly { readonly state?: { readonly running?: object; readonly waiting?: object; readonly terminated?: object } }[];
  };
}

export interface NodeCondition {
  readonly type?: string;
  readonly status?: string;
  readonly reason?: string;
  readonly lastTransitionTime?: Timestamp;
  readonly lastHeartbeatTime?: Timestamp;
}

export interface Taint {
  readonly key?: string;
  readonly value?: string;
  readonly effect?: string;
  readonly timeAdded?: Timestamp;
}

export interface NodeObject {
  readonly metadata?: ObjectMeta & { readonly resourceVersion?: string };
  readonly spec?: { readonly taints?: readonly Taint[] };
  readonly status?: {
    readonly conditions?: readonly NodeCondition[];
    readonly volumesAttached?: readonly { readonly name?: string; readonly devicePath?: string }[];
    readonly volumesInUse?: readonly string[];
  };
}

export interface CsiDriverObject {
  readonly metadata?: ObjectMeta;
  readonly spec?: { readonly attachRequired?: boolean };
}

export interface CsiNodeObject {
  readonly metadata?: ObjectMeta;
  readonly spec?: { readonly drivers?: readonly { readonly name?: string; readonly nodeID?: string }[] };
}

export interface LeaseObject {
  readonly metadata?: ObjectMeta;
  readonly spec?: { readonly holderIdentity?: string; readonly renewTime?: Timestamp; readonly leaseDurationSeconds?: number };
}

/** Everything the model is built from: the informers' current objects. */
export interface AttachmentObjects {
  readonly volumeAttachments: readonly VolumeAttachmentObject[];
  readonly persistentVolumes: readonly PersistentVolumeObject[];
  readonly persistentVolumeClaims: readonly PersistentVolumeClaimObject[];
  readonly pods: readonly PodObject[];
  readonly nodes: readonly NodeObject[];
  readonly csiDrivers: readonly CsiDriverObject[];
  readonly csiNodes: readonly CsiNodeObject[];
  /** The node Leases of namespace `kube-node-lease`. */
  readonly leases: readonly LeaseObject[];
}

/** Milliseconds since the epoch of a timestamp, or `null` when absent or unparseable. */
export function timestampMs(t: Timestamp | undefined): number | null {
  if (t === undefined) return null;
  const ms = t instanceof Date ? t.getTime() : Date.parse(t);
  return Number.isFinite(ms) ? ms : null;
}
