/**
 * The minimal `storage.k8s.io/v1` VolumeAttachment shape observe mode reads, and the mapping from
 * what VolumeAttachments and PersistentVolumes say to the unique volume names the kubelet and
 * the attach/detach controller put into `node.status.volumesInUse` / `volumesAttached`.
 *
 * For CSI the unique volume name is `kubernetes.io/csi/<driver>^<volumeHandle>`: the plugin name
 * `kubernetes.io/csi`, a `/`, then the CSI plugin's `GetVolumeName` (driver and handle joined by
 * `^`, `volNameSep`). A VolumeAttachment names neither directly: its `spec.source` holds a PV
 * name (whose `spec.csi` gives driver and handle) or, for migrated in-tree volumes, an inline
 * spec whose `csi` field does.
 */
import type { CSIPersistentVolumeSource, ObjectMeta, PersistentVolume } from '../volume/k8s-types.ts';
import { CSI_PLUGIN_NAME, VOL_NAME_SEP } from '../volume/csi/vol-data.ts';

/** `storage.k8s.io/v1` `VolumeError`. */
export interface VolumeAttachmentError {
  /** RFC 3339 time the error was encountered. */
  time?: string;
  /** The driver's or attacher's message; may contain sensitive data, shown as is to operators with access. */
  message?: string;
  /** gRPC status code, when the attacher sets it. */
  errorCode?: number;
}

/** `storage.k8s.io/v1` VolumeAttachment, the fields observe mode reads. */
export interface VolumeAttachment {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta & { deletionTimestamp?: string; finalizers?: string[]; creationTimestamp?: string };
  spec: {
    /** The CSI driver name (`external-attacher` only handles its own driver's objects). */
    attacher: string;
    nodeName: string;
    source: {
      persistentVolumeName?: string;
      /** Set for in-tree volumes migrated to CSI: the translated spec. */
      inlineVolumeSpec?: { csi?: CSIPersistentVolumeSource };
    };
  };
  status?: {
    attached?: boolean;
    attachmentMetadata?: Record<string, string>;
    attachError?: VolumeAttachmentError;
    detachError?: VolumeAttachmentError;
  };
}

/** The kubelet's unique name of a CSI volume: `kubernetes.io/csi/<driver>^<volumeHandle>`. */
export function csiUniqueVolumeName(driver: string, volumeHandle: string): string {
  return `${CSI_PLUGIN_NAME}/${driver}${VOL_NAME_SEP}${volumeHandle}`;
}

/**
 * Splits a CSI unique volume name into driver and handle (at the first `^`: driver names cannot
 * contain it, handles may). Null for other names, including pod-scoped CSI names of inline
 * ephemeral volumes (`kubernetes.io/csi/<podUID>-<name>`, no `^`).
 */
export function parseCsiUniqueVolumeName(name: string): { driver: string; volumeHandle: string } | null {
  const prefix = `${CSI_PLUGIN_NAME}/`;
  if (typeof name !== 'string' || !name.startsWith(prefix)) return null;
  const rest = name.slice(prefix.length);
  const sep = rest.indexOf(VOL_NAME_SEP);
  if (sep <= 0 || sep === rest.length - 1) return null;
  return { driver: rest.slice(0, sep), volumeHandle: rest.slice(sep + 1) };
}

/** The unique volume name of a PV, for CSI PVs; null for in-tree PVs (their names depend on migration settings). */
export function persistentVolumeUniqueName(pv: PersistentVolume): string | null {
  const csi = pv.spec.csi;
  if (csi === undefined || csi.driver === '' || csi.volumeHandle === '') return null;
  return csiUniqueVolumeName(csi.driver, csi.volumeHandle);
}

/** How a VolumeAttachment maps to a unique volume name. */
export type VolumeAttachmentVolume =
  | { volumeName: string }
  /** Why it cannot be mapped (the PV is not among those given, or has no CSI source). */
  | { volumeName: null; reason: string };

/** The unique volume name a VolumeAttachment is about, using the PVs by name. */
export function volumeAttachmentVolumeName(va: VolumeAttachment, pvsByName: ReadonlyMap<string, PersistentVolume>): VolumeAttachmentVolume {
  const inline = va.spec.source.inlineVolumeSpec?.csi;
  if (inline !== undefined && inline.driver !== '' && inline.volumeHandle !== '') return { volumeName: csiUniqueVolumeName(inline.driver, inline.volumeHandle) };
  const pvName = va.spec.source.persistentVolumeName;
  if (pvName === undefined || pvName === '') return { volumeName: null, reason: 'its source names no PersistentVolume and has no inline CSI spec' };
  const pv = pvsByName.get(pvName);
  if (pv === undefined) return { volumeName: null, reason: `PersistentVolume ${pvName} was not found` };
  const name = persistentVolumeUniqueName(pv);
  if (name === null) return { volumeName: null, reason: `PersistentVolume ${pvName} has no CSI source` };
  return { volumeName: name };
}
