/**
 * What the attach/detach controller (ADC) believes, rebuilt from the API objects: per CSI
 * volume, the nodes it should be attached to (the desired state: pods scheduled there that are
 * not terminated and use the volume's claim) and the nodes it is attached to (the actual state:
 * VolumeAttachments and the Nodes' `status.volumesAttached`), with the facts of each node the
 * controller's decisions depend on (Ready, taints, the Lease, `status.volumesInUse`).
 *
 * Pure: objects and the time in, a JSON-serialisable model out. The one thing the API does not
 * show is when the ADC started waiting to detach a volume (its in-memory detachRequestedTime);
 * the model keeps it as the ADC does, from the moment a volume is first seen attached but not
 * desired, carried from one build to the next in {@link DetachRequests}.
 *
 * Upstream rules mirrored (kubernetes/kubernetes pkg/controller/volume/attachdetach@v1.34):
 * - a pod's volumes are desired while the pod is scheduled and not terminated
 *   (`util.DetermineVolumeAction` → `IsPodTerminated`: phase Failed/Succeeded, or deleted with
 *   no container running), and only for nodes that exist and carry the
 *   controller-managed-attach-detach annotation;
 * - CSI volumes need attaching unless their CSIDriver says `attachRequired: false` (no CSIDriver
 *   object: attach);
 * - `util.IsMultiAttachAllowed`: a PV with ReadWriteOnce or ReadWriteOncePod may be attached to
 *   one node only; no access modes or only ReadOnlyMany/ReadWriteMany allow several;
 * - `nodeutil.IsNodeReady`: the node's Ready condition is "True".
 */
import { ControllerManagedAttachAnnotation, TaintNodeOutOfService, csiUniqueVolumeName } from './adc-constants.ts';
import type { AttachmentObjects, CsiDriverObject, NodeObject, PodObject, VolumeAttachmentObject } from './objects.ts';
import { timestampMs } from './objects.ts';

/** A node as the ADC's decisions see it. */
export interface NodeFacts {
  readonly name: string;
  /** The Node object exists. A VolumeAttachment may outlive its node. */
  readonly exists: boolean;
  /** The Ready condition's status (`True`, `False`, `Unknown`), or `null` without one. */
  readonly ready: string | null;
  readonly readyReason: string | null;
  /** When the Ready condition last changed. */
  readonly readySinceMs: number | null;
  /** `IsNodeReady`: what the ADC calls healthy. A missing node is unhealthy. */
  readonly healthy: boolean;
  /** The node Lease's `renewTime` (the kubelet's heartbeat), or `null` without a Lease. */
  readonly leaseRenewedMs: number | null;
  /** The `node.kubernetes.io/out-of-service` taint, if set. */
  readonly outOfService: { readonly value: string; readonly effect: string; readonly sinceMs: number | null } | null;
  /** The controller-managed-attach-detach annotation is "true": the ADC attaches for this node. */
  readonly controllerManaged: boolean;
  /** The CSI drivers registered on the node (its CSINode). */
  readonly csiDrivers: readonly string[];
}

/** A pod that uses a volume on a node. */
export interface PodRef {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly phase: string;
  /** It has a deletionTimestamp. */
  readonly deleting: boolean;
  readonly deletionMs: number | null;
}

/** A VolumeAttachment as the model reads it. */
export interface AttachmentFacts {
  readonly name: string;
  readonly attached: boolean;
  readonly attachError: { readonly message: string; readonly timeMs: number | null } | null;
  readonly detachError: { readonly message: string; readonly timeMs: number | null } | null;
  readonly createdMs: number | null;
  /** Its deletionTimestamp: the ADC asked for a detach, the external-attacher has not finished. */
  readonly deletionMs: number | null;
  readonly finalizers: readonly string[];
}

/** When the ADC started waiting to detach a volume from a node. */
export interface DetachRequest {
  readonly sinceMs: number;
  /**
   * True when the volume was already attached and undesired the first time this model saw it
   * (after the dashboard server started): the real wait began earlier, `sinceMs` is a lower bound.
   */
  readonly lowerBound: boolean;
}

/** One volume on one node: desired, actual, and what the node reports. */
export interface VolumeOnNode {
  readonly node: string;
  /** Scheduled, not terminated pods on the node that use the volume. */
  readonly pods: readonly PodRef[];
  /** Pods on the node that use it but are terminated (they no longer keep it desired). */
  readonly terminatedPods: readonly PodRef[];
  /** The ADC wants it attached here: pods need it and the node is one the ADC attaches for. */
  readonly desired: boolean;
  readonly attachment: AttachmentFacts | null;
  /** Listed in the node's `status.volumesAttached` (the ADC's actual state, as published). */
  readonly reportedAttached: boolean;
  /** Listed in the node's `status.volumesInUse` (the kubelet says it is still mounted). */
  readonly inUse: boolean;
  /** Attached by any account: the VolumeAttachment says attached, or the node status lists it. */
  readonly attached: boolean;
  /** Set while the volume is attached here but not desired. */
  readonly detachRequest: DetachRequest | null;
}

/** One CSI persistent volume. */
export interface VolumeAttachmentState {
  readonly pv: string;
  readonly driver: string;
  readonly volumeHandle: string;
  /** `kubernetes.io/csi/<driver>^<handle>`, as in the node status. */
  readonly uniqueVolumeName: string;
  readonly accessModes: readonly string[];
  readonly multiAttachAllowed: boolean;
  readonly attachRequired: boolean;
  /** The driver has a CSIDriver object. */
  readonly csiDriverKnown: boolean;
  /** The PV object exists (a VolumeAttachment may name a deleted PV). */
  readonly pvExists: boolean;
  readonly pvPhase: string | null;
  readonly claim: { readonly namespace: string; readonly name: string } | null;
  /** Every node the volume is desired on, attached to, or reported on; sorted by name. */
  readonly nodes: readonly VolumeOnNode[];
}

export interface AttachmentModel {
  readonly builtAtMs: number;
  /** Volumes sorted by PV name. */
  readonly volumes: readonly VolumeAttachmentState[];
  /** Every node the volumes mention, by name. */
  readonly nodes: Readonly<Record<string, NodeFacts>>;
}

/** Detach requests by {@link detachRequestKey}, carried from one build to the next. */
export type DetachRequests = ReadonlyMap<string, DetachRequest>;

export function detachRequestKey(pv: string, node: string): string {
  return `${pv}\u0000${node}`;
}

export interface BuildOptions {
  readonly nowMs: number;
  /** The previous build's requests (empty on the first). */
  readonly detachRequests: DetachRequests;
  /** The first build after the informers listed: requests found now are lower bounds. */
  readonly baseline: boolean;
}

const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** `IsPodTerminated`: Failed or Succeeded, or deleted with no container running. */
export function isPodTerminated(pod: PodObject): boolean {
  const phase = pod.status?.phase;
  if (phase === 'Failed' || phase === 'Succeeded') return true;
  if (pod.metadata?.deletionTimestamp === undefined) return false;
  const statuses = pod.status?.containerStatuses ?? [];
  return statuses.every((s) => s.state?.terminated !== undefined || s.state?.waiting !== undefined);
}

/** `IsMultiAttachAllowed` for a PV: false with ReadWriteOnce or ReadWriteOncePod. */
export function isMultiAttachAllowed(accessModes: readonly string[]): boolean {
  return !accessModes.some((m) => m === 'ReadWriteOnce' || m === 'ReadWriteOncePod');
}

function nodeFacts(name: string, node: NodeObject | undefined, leaseRenewedMs: number | null, csiDrivers: readonly string[]): NodeFacts {
  const ready = node?.status?.conditions?.find((c) => c.type === 'Ready');
  const taint = node?.spec?.taints?.find((t) => t.key === TaintNodeOutOfService);
  return {
    name,
    exists: node !== undefined,
    ready: ready?.status ?? null,
    readyReason: ready?.reason ?? null,
    readySinceMs: timestampMs(ready?.lastTransitionTime),
    healthy: ready?.status === 'True',
    leaseRenewedMs,
    outOfService: taint === undefined ? null : { value: taint.value ?? '', effect: taint.effect ?? '', sinceMs: timestampMs(taint.timeAdded) },
    controllerManaged: node?.metadata?.annotations?.[ControllerManagedAttachAnnotation] === 'true',
    csiDrivers,
  };
}

function podRef(pod: PodObject): PodRef {
  return {
    namespace: pod.metadata?.namespace ?? '',
    name: pod.metadata?.name ?? '',
    uid: pod.metadata?.uid ?? '',
    phase: pod.status?.phase ?? '',
    deleting: pod.metadata?.deletionTimestamp !== undefined,
    deletionMs: timestampMs(pod.metadata?.deletionTimestamp),
  };
}

function attachmentFacts(va: VolumeAttachmentObject): AttachmentFacts {
  const err = (e: { message?: string; time?: Date | string } | undefined) =>
    e === undefined ? null : { message: e.message ?? '', timeMs: timestampMs(e.time) };
  return {
    name: va.metadata?.name ?? '',
    attached: va.status?.attached === true,
    attachError: err(va.status?.attachError),
    detachError: err(va.status?.detachError),
    createdMs: timestampMs(va.metadata?.creationTimestamp),
    deletionMs: timestampMs(va.metadata?.deletionTimestamp),
    finalizers: [...(va.metadata?.finalizers ?? [])],
  };
}

/** Whether the driver needs ControllerPublish (the ADC attaches): no CSIDriver or attachRequired unset/true. */
function attachRequired(driver: CsiDriverObject | undefined): boolean {
  return driver?.spec?.attachRequired !== false;
}

interface MutableVolumeOnNode {
  pods: PodRef[];
  terminatedPods: PodRef[];
  attachment: AttachmentFacts | null;
  reportedAttached: boolean;
  inUse: boolean;
}

/**
 * Builds the model and the detach requests to carry into the next build. Volumes are the CSI
 * PVs whose driver needs attaching, plus any PV (or deleted PV) a VolumeAttachment names.
 */
export function buildAttachmentModel(objects: AttachmentObjects, options: BuildOptions): { model: AttachmentModel; detachRequests: Map<string, DetachRequest> } {
  const nodesByName = new Map<string, NodeObject>();
  for (const n of objects.nodes) if (n.metadata?.name !== undefined) nodesByName.set(n.metadata.name, n);
  const drivers = new Map<string, CsiDriverObject>();
  for (const d of objects.csiDrivers) if (d.metadata?.name !== undefined) drivers.set(d.metadata.name, d);
  const leases = new Map<string, number | null>();
  for (const l of objects.leases) if (l.metadata?.name !== undefined) leases.set(l.metadata.name, timestampMs(l.spec?.renewTime));
  const csiNodes = new Map<string, string[]>();
  for (const c of objects.csiNodes) {
    if (c.metadata?.name !== undefined) csiNodes.set(c.metadata.name, (c.spec?.drivers ?? []).map((d) => d.name ?? '').filter((d) => d !== ''));
  }
  // claim namespace/name → PV name (bound claims only: spec.volumeName set).
  const claimVolume = new Map<string, string>();
  for (const c of objects.persistentVolumeClaims) {
    const volume = c.spec?.volumeName ?? '';
    if (volume !== '') claimVolume.set(`${c.metadata?.namespace ?? ''}/${c.metadata?.name ?? ''}`, volume);
  }

  // Per PV, per node.
  const perVolume = new Map<string, Map<string, MutableVolumeOnNode>>();
  const slot = (pv: string, node: string): MutableVolumeOnNode => {
    let nodes = perVolume.get(pv);
    if (nodes === undefined) perVolume.set(pv, (nodes = new Map<string, MutableVolumeOnNode>()));
    let s = nodes.get(node);
    if (s === undefined) nodes.set(node, (s = { pods: [], terminatedPods: [], attachment: null, reportedAttached: false, inUse: false }));
    return s;
  };

  const pvs = new Map<string, (typeof objects.persistentVolumes)[number]>();
  const uniqueToPv = new Map<string, string>();
  for (const pv of objects.persistentVolumes) {
    const name = pv.metadata?.name;
    const csi = pv.spec?.csi;
    if (name === undefined || csi?.driver === undefined || csi.volumeHandle === undefined) continue;
    pvs.set(name, pv);
    uniqueToPv.set(csiUniqueVolumeName(csi.driver, csi.volumeHandle), name);
  }
  const tracked = (pvName: string): boolean => {
    const driver = pvs.get(pvName)?.spec?.csi?.driver;
    return driver !== undefined && attachRequired(drivers.get(driver));
  };

  for (const pod of objects.pods) {
    const node = pod.spec?.nodeName ?? '';
    if (node === '') continue;
    const ns = pod.metadata?.namespace ?? '';
    const seen = new Set<string>();
    for (const v of pod.spec?.volumes ?? []) {
      const claim = v.persistentVolumeClaim?.claimName;
      if (claim === undefined) continue;
      const pvName = claimVolume.get(`${ns}/${claim}`);
      if (pvName === undefined || seen.has(pvName) || !tracked(pvName)) continue;
      seen.add(pvName);
      const s = slot(pvName, node);
      (isPodTerminated(pod) ? s.terminatedPods : s.pods).push(podRef(pod));
    }
  }

  const vaDriver = new Map<string, string>();
  for (const va of objects.volumeAttachments) {
    const pvName = va.spec?.source?.persistentVolumeName;
    const node = va.spec?.nodeName;
    if (pvName === undefined || node === undefined) continue;
    slot(pvName, node).attachment = attachmentFacts(va);
    if (va.spec?.attacher !== undefined) vaDriver.set(pvName, va.spec.attacher);
  }

  for (const [nodeName, node] of nodesByName) {
    for (const a of node.status?.volumesAttached ?? []) {
      const pvName = a.name === undefined ? undefined : uniqueToPv.get(a.name);
      if (pvName !== undefined && tracked(pvName)) slot(pvName, nodeName).reportedAttached = true;
    }
    for (const u of node.status?.volumesInUse ?? []) {
      const pvName = uniqueToPv.get(u);
      // In use only matters where the volume is attached or desired; other PVs stay out.
      if (pvName !== undefined && perVolume.get(pvName)?.has(nodeName) === true) slot(pvName, nodeName).inUse = true;
    }
  }

  const nodeNames = new Set<string>();
  const detachRequests = new Map<string, DetachRequest>();
  const volumes: VolumeAttachmentState[] = [];
  for (const [pvName, nodes] of perVolume) {
    const pv = pvs.get(pvName);
    const driver = pv?.spec?.csi?.driver ?? vaDriver.get(pvName) ?? '';
    const handle = pv?.spec?.csi?.volumeHandle ?? '';
    const accessModes = [...(pv?.spec?.accessModes ?? [])];
    const claimRef = pv?.spec?.claimRef;
    const states: VolumeOnNode[] = [...nodes.entries()]
      .sort(([a], [b]) => byString(a, b))
      .map(([nodeName, s]) => {
        nodeNames.add(nodeName);
        const node = nodesByName.get(nodeName);
        const managed = node?.metadata?.annotations?.[ControllerManagedAttachAnnotation] === 'true';
        const desired = s.pods.length > 0 && node !== undefined && managed;
        const attached = s.attachment?.attached === true || s.reportedAttached;
        let detachRequest: DetachRequest | null = null;
        if (attached && !desired) {
          const key = detachRequestKey(pvName, nodeName);
          detachRequest = options.detachRequests.get(key) ?? { sinceMs: options.nowMs, lowerBound: options.baseline };
          detachRequests.set(key, detachRequest);
        }
        return { node: nodeName, pods: s.pods, terminatedPods: s.terminatedPods, desired, attachment: s.attachment, reportedAttached: s.reportedAttached, inUse: s.inUse, attached, detachRequest };
      });
    volumes.push({
      pv: pvName,
      driver,
      volumeHandle: handle,
      uniqueVolumeName: driver !== '' && handle !== '' ? csiUniqueVolumeName(driver, handle) : '',
      accessModes,
      multiAttachAllowed: isMultiAttachAllowed(accessModes),
      attachRequired: attachRequired(drivers.get(driver)),
      csiDriverKnown: drivers.has(driver),
      pvExists: pv !== undefined,
      pvPhase: pv?.status?.phase ?? null,
      claim: claimRef?.name === undefined ? null : { namespace: claimRef.namespace ?? '', name: claimRef.name },
      nodes: states,
    });
  }
  volumes.sort((a, b) => byString(a.pv, b.pv));

  const nodes: Record<string, NodeFacts> = {};
  for (const name of [...nodeNames].sort(byString)) {
    nodes[name] = nodeFacts(name, nodesByName.get(name), leases.get(name) ?? null, csiNodes.get(name) ?? []);
  }
  return { model: { builtAtMs: options.nowMs, volumes, nodes }, detachRequests };
}
