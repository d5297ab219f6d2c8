/**
 * Kubernetes objects for an agent's manifest directory (the standalone object source,
 * lib/sources/manifest), written as YAML, and the writes themselves.
 *
 * What the source accepts (lib/sources/manifest/k8s-schemas.ts): Pods, PersistentVolumes,
 * PersistentVolumeClaims (a claim is used only with `status.phase: Bound`), ConfigMaps, Secrets
 * (`data` base64) and CSIDriver objects (`storage.k8s.io/v1`); a `List` may hold several. Files
 * must end in `.yaml`/`.yml`/`.json`; dotfiles are ignored, which is what makes the atomic write
 * (a hidden temporary file renamed into place) invisible until complete.
 */
import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';

/** The CSI test driver's name (drivers/csi-loop default). */
export const CSI_DRIVER_NAME = 'csi-loop.volumescope.dev';

/** A Kubernetes object as plain data. */
export type KubeObject = Record<string, unknown>;

/** A volume of a pod, without its name (`{ emptyDir: {} }`, `{ configMap: { name } }`, …). */
export type VolumeSource = Record<string, unknown>;

export interface PodOptions {
  name: string;
  namespace: string;
  uid: string;
  /** Volume name → source; one container mounts all of them. */
  volumes: Record<string, VolumeSource>;
  /** `Succeeded`/`Failed` make the agent tear the volumes down although the file stays. */
  phase?: string;
}

export function pod(o: PodOptions): KubeObject {
  const names = Object.keys(o.volumes);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: o.name, namespace: o.namespace, uid: o.uid },
    spec: {
      containers: [{ name: 'app', image: 'busybox', volumeMounts: names.map((n) => ({ name: n, mountPath: `/mnt/${n}` })) }],
      volumes: names.map((n) => ({ name: n, ...o.volumes[n] })),
    },
    ...(o.phase === undefined ? {} : { status: { phase: o.phase } }),
  };
}

export function configMap(namespace: string, name: string, data: Record<string, string>): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data };
}

export function secret(namespace: string, name: string, data: Record<string, string>): KubeObject {
  const encoded = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')]));
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace }, type: 'Opaque', data: encoded };
}

/** The CSIDriver object of the test driver: attach required, so the agent attaches (ControllerPublish). */
export function csiDriverObject(): KubeObject {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'CSIDriver',
    metadata: { name: CSI_DRIVER_NAME },
    spec: { attachRequired: true, podInfoOnMount: false, volumeLifecycleModes: ['Persistent'] },
  };
}

export interface CsiClaimOptions {
  namespace: string;
  /** Claim name; the PV is `pv-<namespace>-<claim>`. */
  claim: string;
  /** Volume handle at the driver (unique per node, so two nodes never share a disk). */
  volumeHandle: string;
  /** A uid for the claim (the PV's claimRef names it). */
  claimUid: string;
  capacity?: string;
}

/** A bound PV + PVC pair for the CSI test driver, as one `List`. */
export function csiClaim(o: CsiClaimOptions): KubeObject {
  const capacity = o.capacity ?? '64Mi';
  const pvName = `pv-${o.namespace}-${o.claim}`;
  const pv = {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: pvName },
    spec: {
      accessModes: ['ReadWriteOnce'],
      capacity: { storage: capacity },
      claimRef: { namespace: o.namespace, name: o.claim, uid: o.claimUid },
      csi: { driver: CSI_DRIVER_NAME, volumeHandle: o.volumeHandle, fsType: 'ext4', volumeAttributes: { capacity } },
    },
    status: { phase: 'Bound' },
  };
  const pvc = {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: o.claim, namespace: o.namespace, uid: o.claimUid },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: capacity } }, volumeName: pvName },
    status: { phase: 'Bound', capacity: { storage: capacity } },
  };
  return { apiVersion: 'v1', kind: 'List', items: [pv, pvc] };
}

/** Prefix of the files that hold pods, so teardown can remove exactly those. */
export const POD_FILE_PREFIX = 'pod-';

/** The file name of a pod's manifest. */
export function podFileName(namespace: string, name: string): string {
  return `${POD_FILE_PREFIX}${namespace}-${name}.yaml`;
}

/**
 * Writes `object` as YAML to `<dir>/<file>` atomically: the source sees the file only once it is
 * complete (a hidden temporary file, then a rename within the directory).
 */
export async function writeManifest(dir: string, file: string, object: KubeObject): Promise<void> {
  await mkdir(dir, { recursive: true });
  const tmp = join(dir, `.${file}.tmp`);
  await writeFile(tmp, `# written by VolumeScope's demo/e2e orchestration\n${stringify(object)}`);
  await rename(tmp, join(dir, file));
}

/** Removes a manifest file; a missing one counts as removed. */
export async function removeManifest(dir: string, file: string): Promise<void> {
  await rm(join(dir, file), { force: true });
}

/** Removes every pod manifest (files named by {@link podFileName}) from `dir`; returns their names. */
export async function removePodManifests(dir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const pods = names.filter((n) => n.startsWith(POD_FILE_PREFIX));
  for (const n of pods) await removeManifest(dir, n);
  return pods;
}
