/**
 * Test support: the manifests an agent needs for one attachable CSI volume of the csi-loop test
 * driver, as the standalone manifest source reads them: a CSIDriver object (`attachRequired:
 * true`, so the agent attaches with ControllerPublishVolume), a PersistentVolume with `spec.csi`
 * and `capacity.storage`, a PersistentVolumeClaim bound to it (`spec.volumeName`, `status.phase:
 * Bound`, `status.capacity`) and a pod that uses the claim; and, for inline ephemeral volumes, a
 * CSIDriver with the Ephemeral lifecycle mode and a pod with a `csi:` volume. Shared by `agent/csi.test.ts` and
 * `bench/agent.bench.ts`.
 */

/** The csi-loop driver's default name. */
export const csiLoopDriverName = 'csi-loop.volumescope.dev';

/**
 * The CSIDriver object: attach required (ControllerPublish/Unpublish), stage/unstage by capability.
 * `spec` adds fields, e.g. `volumeLifecycleModes` and `podInfoOnMount` for inline ephemeral volumes.
 */
export function csiDriverObject(driverName: string = csiLoopDriverName, spec: Record<string, unknown> = {}): Record<string, unknown> {
  return { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name: driverName }, spec: { attachRequired: true, ...spec } };
}

/**
 * The CSIDriver object for inline ephemeral volumes: the Ephemeral lifecycle mode, and
 * `podInfoOnMount`, without which kubelet (and the agent, as upstream) sends no
 * `csi.storage.k8s.io/ephemeral` attribute and the driver cannot tell an inline volume from a
 * persistent one. `attachRequired` stays true: inline volumes are never attached regardless.
 */
export function csiEphemeralDriverObject(driverName: string = csiLoopDriverName): Record<string, unknown> {
  return csiDriverObject(driverName, { volumeLifecycleModes: ['Ephemeral'], podInfoOnMount: true });
}

export interface CsiInlinePodOptions {
  uid: string;
  /** The pod volume's name (the spec name of the inline volume). */
  volumeName?: string;
  driverName?: string;
  namespace?: string;
  /** `csi.volumeAttributes`; csi-loop reads `capacity`. */
  volumeAttributes?: Record<string, string>;
}

/** A pod whose one container mounts an inline ephemeral CSI volume (`spec.volumes[].csi`). */
export function csiInlinePodObject(name: string, o: CsiInlinePodOptions): Record<string, unknown> {
  const volumeName = o.volumeName ?? 'scratch';
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: o.namespace ?? 'default', uid: o.uid },
    spec: {
      containers: [{ name: 'app', image: 'busybox', volumeMounts: [{ name: volumeName, mountPath: '/scratch' }] }],
      volumes: [{ name: volumeName, csi: { driver: o.driverName ?? csiLoopDriverName, volumeAttributes: o.volumeAttributes ?? {} } }],
    },
  };
}

/** The agent's unique volume name of an inline CSI volume: per pod, `kubernetes.io/csi/<podUID>-<specName>`. */
export function csiInlineUniqueVolumeName(podUid: string, volumeName: string): string {
  return `kubernetes.io/csi/${podUid}-${volumeName}`;
}

export interface CsiClaimOptions {
  /** Volume handle (the driver's volume id); the PV is `pv-<handle>`, the claim `claim-<handle>`. */
  handle: string;
  driverName?: string;
  namespace?: string;
  /** PV `capacity.storage` (what the node expands to). */
  pvCapacity?: string;
  /** PVC `status.capacity.storage` (what the node believes the filesystem has). */
  claimCapacity?: string;
}

/** The PV and its bound PVC. The driver creates the disk with `volumeAttributes.capacity` (the original size). */
export function csiClaimObjects(o: CsiClaimOptions): Record<string, unknown>[] {
  const driver = o.driverName ?? csiLoopDriverName;
  const namespace = o.namespace ?? 'default';
  const pvCapacity = o.pvCapacity ?? '64Mi';
  const claimCapacity = o.claimCapacity ?? '64Mi';
  const claimUid = `claim-${o.handle}-uid`;
  return [
    {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: `pv-${o.handle}` },
      spec: {
        accessModes: ['ReadWriteOnce'],
        capacity: { storage: pvCapacity },
        claimRef: { namespace, name: `claim-${o.handle}`, uid: claimUid },
        csi: { driver, volumeHandle: o.handle, fsType: 'ext4', volumeAttributes: { capacity: '64Mi' } },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: `claim-${o.handle}`, namespace, uid: claimUid },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: pvCapacity } }, volumeName: `pv-${o.handle}` },
      status: { phase: 'Bound', capacity: { storage: claimCapacity } },
    },
  ];
}

/** A pod whose one container mounts the claim `claim-<handle>` as volume `data`. */
export function csiPodObject(name: string, handle: string, opts: { uid?: string; namespace?: string } = {}): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: opts.namespace ?? 'default', ...(opts.uid === undefined ? {} : { uid: opts.uid }) },
    spec: {
      containers: [{ name: 'app', image: 'busybox', volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: `claim-${handle}` } }],
    },
  };
}

/** The agent's unique volume name of a csi-loop volume. */
export function csiUniqueVolumeName(handle: string, driverName: string = csiLoopDriverName): string {
  return `kubernetes.io/csi/${driverName}^${handle}`;
}
