/**
 * The `spec` of a desired volume in the snapshot: the pod spec's volume source as written, the
 * containers' mounts of it, and the API objects it leads to (claim → PersistentVolume →
 * VolumeAttachment, CSI driver), from the desired state's pod object and unique volume name
 * only (no API calls).
 *
 * Specs are memoized per pod object and volume: the builder's "does the item still match"
 * check compares the previous item's spec with the memoized one by reference, without
 * allocating, as long as the pod object (and the few view fields a spec reads) stay the same.
 */
import type { DesiredVolumeSpec, VolumeMountSpec, VolumeSourceField } from '../../lib/api/snapshot.ts';
import { jsonEqual } from '../../lib/api/json-equal.ts';
import type { Pod, Volume } from '../../lib/volume/k8s-types.ts';
import { CSI_PLUGIN_NAME, VOL_NAME_SEP, attachmentName } from '../../lib/volume/csi/vol-data.ts';
import type { DesiredVolumeView } from '../../lib/volumemanager/index.ts';
import type { DesiredPodEntry } from './snapshot-items.ts';

/** What a spec is made from besides the pod object. */
export interface VolumeSpecInputs {
  readonly outerVolumeSpecName: string;
  readonly innerVolumeSpecName: string;
  readonly uniqueVolumeName: string;
  readonly pluginName: string;
  readonly attachable: boolean;
  /** This node's name, for the VolumeAttachment name; `''` when unknown (then none is named). */
  readonly nodeName: string;
}

/** Flattens a source's fields as written: nested objects by `.`, arrays by `[i]`. */
function flatten(value: unknown, path: string, out: VolumeSourceField[]): void {
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      flatten(item, `${path}[${i}]`, out);
    });
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) flatten(item, path === '' ? key : `${path}.${key}`, out);
  } else if (value !== undefined) {
    out.push({ path, value: typeof value === 'string' ? value : JSON.stringify(value) });
  }
}

/** The source field of `volume` (every key but `name`) and its value; `null` for a volume with none. */
function volumeSource(volume: Volume): { type: string; value: unknown } | null {
  for (const [type, value] of Object.entries(volume)) if (type !== 'name') return { type, value };
  return null;
}

function mountsOf(pod: Pod, name: string): VolumeMountSpec[] {
  const mounts: VolumeMountSpec[] = [];
  for (const containers of [pod.spec.initContainers, pod.spec.containers, pod.spec.ephemeralContainers]) {
    for (const c of containers ?? []) {
      for (const m of c.volumeMounts ?? []) {
        if (m.name !== name) continue;
        mounts.push({ container: c.name, mountPath: m.mountPath, readOnly: m.readOnly === true, ...(m.subPath !== undefined && m.subPath !== '' ? { subPath: m.subPath } : {}) });
      }
    }
  }
  return mounts;
}

/**
 * The CSI driver and volume handle of a CSI PersistentVolume from its unique volume name
 * (`kubernetes.io/csi/<driver>^<volumeHandle>`, the CSI plugin's GetVolumeName); `null` for any
 * other name.
 */
export function csiVolumeFromUniqueName(uniqueVolumeName: string): { driver: string; volumeHandle: string } | null {
  const prefix = `${CSI_PLUGIN_NAME}/`;
  if (!uniqueVolumeName.startsWith(prefix)) return null;
  const rest = uniqueVolumeName.slice(prefix.length);
  const sep = rest.indexOf(VOL_NAME_SEP);
  if (sep <= 0 || sep === rest.length - 1) return null;
  return { driver: rest.slice(0, sep), volumeHandle: rest.slice(sep + 1) };
}

/** The spec of the pod's volume `inputs.outerVolumeSpecName`; `undefined` when the pod spec does not list it. */
export function volumeSpecOf(pod: Pod, inputs: VolumeSpecInputs): DesiredVolumeSpec | undefined {
  const volume = pod.spec.volumes?.find((v) => v.name === inputs.outerVolumeSpecName);
  if (volume === undefined) return undefined;
  const source = volumeSource(volume);
  const fields: VolumeSourceField[] = [];
  if (source !== null) flatten(source.value, '', fields);
  const spec: { -readonly [K in keyof DesiredVolumeSpec]: DesiredVolumeSpec[K] } = {
    sourceType: source?.type ?? '',
    source: fields,
    mounts: mountsOf(pod, volume.name),
  };
  const claimName = volume.persistentVolumeClaim?.claimName ?? (volume.ephemeral !== undefined ? `${pod.metadata.name}-${volume.name}` : undefined);
  if (claimName !== undefined) {
    spec.claimName = claimName;
    // The kubelet names a claim's volume spec after the bound PV (`volume.NewSpecFromPersistentVolume`).
    if (inputs.innerVolumeSpecName !== '' && inputs.innerVolumeSpecName !== volume.name) spec.persistentVolumeName = inputs.innerVolumeSpecName;
  }
  const csiPv = inputs.pluginName === CSI_PLUGIN_NAME ? csiVolumeFromUniqueName(inputs.uniqueVolumeName) : null;
  const driver = volume.csi?.driver ?? csiPv?.driver;
  if (driver !== undefined) spec.csiDriver = driver;
  // Inline CSI volumes are never attached (the CSI plugin's CanAttach); a PV's driver decides.
  if (csiPv !== null && volume.csi === undefined && inputs.attachable && inputs.nodeName !== '') {
    spec.volumeAttachment = attachmentName(csiPv.volumeHandle, csiPv.driver, inputs.nodeName);
  }
  return spec;
}

interface Memo {
  readonly inputs: VolumeSpecInputs;
  readonly spec: DesiredVolumeSpec | undefined;
}

const memo = new WeakMap<Pod, Map<string, Memo>>();

function sameInputs(a: VolumeSpecInputs, view: DesiredVolumeView, entry: DesiredPodEntry, nodeName: string): boolean {
  return (
    a.outerVolumeSpecName === entry.outerVolumeSpecName &&
    a.innerVolumeSpecName === entry.innerVolumeSpecName &&
    a.uniqueVolumeName === view.volumeName &&
    a.pluginName === view.pluginName &&
    a.attachable === view.pluginIsAttachable &&
    a.nodeName === nodeName
  );
}

/**
 * The spec of one (volume, pod) pair of the desired state, memoized by pod object: the same
 * object while the pod object and the view's fields it reads stay the same.
 */
export function desiredVolumeSpec(view: DesiredVolumeView, entry: DesiredPodEntry, nodeName: string): DesiredVolumeSpec | undefined {
  let byVolume = memo.get(entry.pod);
  if (byVolume === undefined) {
    byVolume = new Map();
    memo.set(entry.pod, byVolume);
  }
  const hit = byVolume.get(entry.outerVolumeSpecName);
  if (hit !== undefined && sameInputs(hit.inputs, view, entry, nodeName)) return hit.spec;
  const inputs: VolumeSpecInputs = {
    outerVolumeSpecName: entry.outerVolumeSpecName,
    innerVolumeSpecName: entry.innerVolumeSpecName,
    uniqueVolumeName: view.volumeName,
    pluginName: view.pluginName,
    attachable: view.pluginIsAttachable,
    nodeName,
  };
  const spec = volumeSpecOf(entry.pod, inputs);
  byVolume.set(entry.outerVolumeSpecName, { inputs, spec });
  return spec;
}

/** True when `spec` (a previous item's) equals the pair's spec now; by reference while the memo holds. */
export function volumeSpecMatches(spec: DesiredVolumeSpec | undefined, view: DesiredVolumeView, entry: DesiredPodEntry, nodeName: string): boolean {
  const now = desiredVolumeSpec(view, entry, nodeName);
  return spec === now || (spec !== undefined && now !== undefined && jsonEqual(spec, now));
}
