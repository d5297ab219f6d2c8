import type { PersistentVolume, PersistentVolumeAccessMode, Volume } from './k8s-types.ts';
import { volumeSpecName, type VolumeMode, type VolumeSpecName } from './types.ts';

/**
 * `volume.Spec`: either an inline pod volume or a PersistentVolume, never both.
 * `Name()` is the PV name for PV-backed specs, else the pod's volume name.
 */
export interface Spec {
  readonly volume?: Volume;
  readonly persistentVolume?: PersistentVolume;
  readonly readOnly: boolean;
  /** The spec was translated from an in-tree inline volume to CSI. */
  readonly inlineVolumeSpecForCSIMigration?: boolean;
  /** The spec was translated to CSI (in-tree plugin migration). */
  readonly migrated?: boolean;
}

export function specName(spec: Spec): VolumeSpecName {
  if (spec.volume !== undefined) return volumeSpecName(spec.volume.name);
  if (spec.persistentVolume !== undefined) return volumeSpecName(spec.persistentVolume.metadata.name);
  return volumeSpecName('<unknown>');
}

export function specFromVolume(volume: Volume, readOnly = false): Spec {
  return { volume: structuredClone(volume), readOnly };
}

export function specFromPersistentVolume(pv: PersistentVolume, readOnly = false): Spec {
  return { persistentVolume: structuredClone(pv), readOnly };
}

/** `volumeMode` of a spec: Block only for a PV that says so. */
export function specVolumeMode(spec: Spec): VolumeMode {
  return spec.persistentVolume?.spec.volumeMode === 'Block' ? 'Block' : 'Filesystem';
}

export function isBlockSpec(spec: Spec): boolean {
  return specVolumeMode(spec) === 'Block';
}

export function specAccessModes(spec: Spec): readonly PersistentVolumeAccessMode[] {
  return spec.persistentVolume?.spec.accessModes ?? [];
}

/**
 * `util.IsMultiAttachAllowed`: for a PV, true when its access modes include ReadWriteMany or
 * ReadOnlyMany; for inline volumes, true except for single-attach volume types (none of the
 * types modelled here is single-attach except GCE PD, which allows multi-attach read-only).
 */
export function isMultiAttachAllowed(spec: Spec): boolean {
  if (spec.persistentVolume !== undefined) {
    const modes = spec.persistentVolume.spec.accessModes ?? [];
    return modes.includes('ReadWriteMany') || modes.includes('ReadOnlyMany');
  }
  return true;
}
