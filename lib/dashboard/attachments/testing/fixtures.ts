/**
 * Test support: API objects (as plain JSON, as a WATCH delivers them) for the attachment model,
 * shaped after what the local cluster's real API server and controllers write.
 */
import { ControllerManagedAttachAnnotation, TaintNodeOutOfService, csiUniqueVolumeName } from '../adc-constants.ts';
import type {
  AttachmentObjects,
  CsiDriverObject,
  LeaseObject,
  NodeObject,
  PersistentVolumeClaimObject,
  PersistentVolumeObject,
  PodObject,
  VolumeAttachmentObject,
} from '../objects.ts';

export const DRIVER = 'csi-loop.volumescope.dev';
export const T0 = Date.parse('2026-03-01T10:00:00Z');
export const iso = (ms: number): string => new Date(ms).toISOString();

export function uniqueName(pv: string): string {
  return csiUniqueVolumeName(DRIVER, `handle-${pv}`);
}

export interface NodeOptions {
  readonly ready?: 'True' | 'False' | 'Unknown';
  readonly readySinceMs?: number;
  readonly attached?: readonly string[];
  readonly inUse?: readonly string[];
  readonly outOfService?: boolean;
  readonly managed?: boolean;
}

export function node(name: string, o: NodeOptions = {}): NodeObject {
  return {
    metadata: { name, annotations: o.managed === false ? {} : { [ControllerManagedAttachAnnotation]: 'true' } },
    spec: o.outOfService === true ? { taints: [{ key: TaintNodeOutOfService, value: 'nodeshutdown', effect: 'NoExecute', timeAdded: iso(T0) }] } : {},
    status: {
      conditions: [{ type: 'Ready', status: o.ready ?? 'True', reason: o.ready === 'Unknown' ? 'NodeStatusUnknown' : 'KubeletReady', lastTransitionTime: iso(o.readySinceMs ?? T0 - 3_600_000) }],
      volumesAttached: (o.attached ?? []).map((pv) => ({ name: uniqueName(pv), devicePath: '' })),
      volumesInUse: (o.inUse ?? []).map(uniqueName),
    },
  };
}

export function pv(name: string, accessModes: readonly string[] = ['ReadWriteOnce'], claim = `claim-${name}`): PersistentVolumeObject {
  return {
    metadata: { name },
    spec: { accessModes, csi: { driver: DRIVER, volumeHandle: `handle-${name}` }, claimRef: { namespace: 'default', name: claim } },
    status: { phase: 'Bound' },
  };
}

export function pvc(pvName: string, claim = `claim-${pvName}`): PersistentVolumeClaimObject {
  return { metadata: { name: claim, namespace: 'default' }, spec: { volumeName: pvName }, status: { phase: 'Bound' } };
}

export interface PodOptions {
  readonly phase?: string;
  readonly deletingSinceMs?: number;
  readonly running?: boolean;
}

export function pod(name: string, nodeName: string, claim: string, o: PodOptions = {}): PodObject {
  const running = o.running ?? (o.phase ?? 'Running') === 'Running';
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}`, ...(o.deletingSinceMs !== undefined ? { deletionTimestamp: iso(o.deletingSinceMs) } : {}) },
    spec: { nodeName, volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim } }, { name: 'tmp' }] },
    status: { phase: o.phase ?? 'Running', containerStatuses: [{ state: running ? { running: {} } : { terminated: {} } }] },
  };
}

export interface VaOptions {
  readonly attached?: boolean;
  readonly attachError?: string;
  readonly detachError?: string;
  readonly createdMs?: number;
  readonly deletingSinceMs?: number;
}

export function va(pvName: string, nodeName: string, o: VaOptions = {}): VolumeAttachmentObject {
  return {
    metadata: {
      name: `csi-${pvName}-${nodeName}`,
      creationTimestamp: iso(o.createdMs ?? T0 - 600_000),
      finalizers: ['external-attacher/csi-loop-volumescope-dev'],
      ...(o.deletingSinceMs !== undefined ? { deletionTimestamp: iso(o.deletingSinceMs) } : {}),
    },
    spec: { attacher: DRIVER, nodeName, source: { persistentVolumeName: pvName } },
    status: {
      attached: o.attached ?? true,
      ...(o.attachError !== undefined ? { attachError: { message: o.attachError, time: iso(T0 - 5_000) } } : {}),
      ...(o.detachError !== undefined ? { detachError: { message: o.detachError, time: iso(T0 - 5_000) } } : {}),
    },
  };
}

export function csiDriver(name = DRIVER, attachRequired = true): CsiDriverObject {
  return { metadata: { name }, spec: { attachRequired } };
}

export function lease(nodeName: string, renewedMs: number): LeaseObject {
  return { metadata: { name: nodeName, namespace: 'kube-node-lease' }, spec: { holderIdentity: nodeName, renewTime: iso(renewedMs), leaseDurationSeconds: 40 } };
}

export function objects(o: Partial<AttachmentObjects>): AttachmentObjects {
  return {
    volumeAttachments: [],
    persistentVolumes: [],
    persistentVolumeClaims: [],
    pods: [],
    nodes: [],
    csiDrivers: [csiDriver()],
    csiNodes: [],
    leases: [],
    ...o,
  };
}
