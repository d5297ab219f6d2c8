/**
 * SELinux mount labels (kubelet `volume/util/selinux.go`): which `-o context=` label a volume is
 * mounted with, computed from the SELinux options of the containers that use it.
 */
import type { FeatureGates } from '../features.ts';
import type { SELinuxOptions } from '../k8s-types.ts';
import type { VolumePluginMgr } from '../plugins.ts';
import { specName, type Spec } from '../spec.ts';
import { goQuote } from './go-format.ts';

/** Turns container SELinux options into a file label; knows whether the host enforces SELinux. */
export interface SELinuxLabelTranslator {
  seLinuxEnabled(): boolean;
  seLinuxOptionsToFileLabel(opts: SELinuxOptions | undefined): string;
}

/**
 * The default translator: a container's process type (`container_t`) maps to the file type
 * `container_file_t`; missing user/role fall back to `system_u`/`object_r`. An empty options
 * object yields "" (no label requested).
 */
export function newSELinuxLabelTranslator(enabled: boolean): SELinuxLabelTranslator {
  return {
    seLinuxEnabled: () => enabled,
    seLinuxOptionsToFileLabel: (opts) => {
      if (opts === undefined || (!opts.user && !opts.role && !opts.type && !opts.level)) return '';
      return `${opts.user || 'system_u'}:${opts.role || 'object_r'}:container_file_t:${opts.level || 's0'}`;
    },
  };
}

export class MultipleSELinuxLabelsError extends Error {
  override readonly name = 'MultipleSELinuxLabelsError';
  constructor(volume: string, labels: readonly string[]) {
    super(`volume ${volume} is used with two different SELinux contexts in the same pod: ${labels.map(goQuote).join(', ')}`);
  }
}

export function isMultipleSELinuxLabelsError(err: unknown): err is MultipleSELinuxLabelsError {
  return err instanceof MultipleSELinuxLabelsError;
}

export interface SELinuxLabelInfo {
  /** The label the containers ask for ("" when none, or when the plugin cannot mount with `-o context`). */
  originalSELinuxLabel: string;
  /** The label actually used with `-o context`: {@link originalSELinuxLabel} when the access mode allows it, else "". */
  effectiveSELinuxMountFileLabel: string;
  pluginSupportsSELinuxContextMount: boolean;
}

/** `VolumeSupportsSELinuxMount`: RWOP PVs (SELinuxMountReadWriteOncePod), or any single-mode PV (SELinuxMount). */
export function volumeSupportsSELinuxMount(spec: Spec, gates: FeatureGates): boolean {
  if (!gates.SELinuxMountReadWriteOncePod) return false;
  const modes = spec.persistentVolume?.spec.accessModes;
  if (modes === undefined || modes.length !== 1) return false;
  if (gates.SELinuxMount) return true;
  return modes.includes('ReadWriteOncePod');
}

/**
 * The desired world's SELinux label of a volume for one pod (v1.30 `getSELinuxLabel`).
 * Throws {@link MultipleSELinuxLabelsError} when containers of the pod disagree on a volume that
 * supports `-o context` mounts.
 */
export function getMountSELinuxLabel(
  spec: Spec,
  containerContexts: readonly (SELinuxOptions | undefined)[],
  pluginMgr: VolumePluginMgr,
  translator: SELinuxLabelTranslator,
  gates: FeatureGates,
): SELinuxLabelInfo {
  const info: SELinuxLabelInfo = { originalSELinuxLabel: '', effectiveSELinuxMountFileLabel: '', pluginSupportsSELinuxContextMount: false };
  if (!gates.SELinuxMountReadWriteOncePod || !translator.seLinuxEnabled()) return info;
  info.pluginSupportsSELinuxContextMount = pluginMgr.findPluginBySpec(spec).supportsSELinuxContextMount(spec);
  if (!info.pluginSupportsSELinuxContextMount) return info;
  // Containers are checked in order and the first label wins. A different label is an error only
  // when the volume can be mounted with -o context; otherwise the kubelet only bumps a warning metric.
  const supported = volumeSupportsSELinuxMount(spec, gates);
  let label = '';
  for (const context of containerContexts) {
    const next = translator.seLinuxOptionsToFileLabel(context);
    if (label === '') {
      label = next;
    } else if (next !== label && supported) {
      throw new MultipleSELinuxLabelsError(specName(spec), [label, next]);
    }
  }
  info.originalSELinuxLabel = label;
  info.effectiveSELinuxMountFileLabel = supported ? label : '';
  return info;
}
