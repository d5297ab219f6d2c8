/**
 * Which CSI volume capabilities csi-loop supports, in one place for CreateVolume,
 * ValidateVolumeCapabilities, GetCapacity and ControllerExpandVolume: block access, or mount
 * access with fs_type ext4 (or empty, meaning ext4), with a known access mode (any but UNKNOWN)
 * and no volume_mount_group (the driver does not offer VOLUME_MOUNT_GROUP). Multi-node modes are
 * accepted: a volume may be controller-published to several nodes but is staged on one at a time
 * (see README.md, Volumes and Several nodes).
 */
import type { VolumeCapability } from './csi-types.ts';

/** Why `capability` is not supported, or null when it is. */
export function unsupportedCapabilityReason(capability: VolumeCapability): string | null {
  if (capability.access_type === undefined) {
    return 'the volume capability has neither mount nor block access type';
  }
  const mode = capability.access_mode?.mode ?? 'UNKNOWN';
  if (mode === 'UNKNOWN') {
    return 'the volume capability has no access mode';
  }
  if (capability.access_type === 'mount') {
    const fsType = capability.mount?.fs_type ?? '';
    if (fsType !== '' && fsType !== 'ext4') {
      return `fs_type ${fsType} is not supported (only ext4)`;
    }
    if ((capability.mount?.volume_mount_group ?? '') !== '') {
      return 'volume_mount_group is not supported';
    }
  }
  return null;
}

/** The first reason any of `capabilities` is unsupported, or null when all are supported. */
export function firstUnsupportedReason(capabilities: readonly VolumeCapability[]): string | null {
  for (const capability of capabilities) {
    const reason = unsupportedCapabilityReason(capability);
    if (reason !== null) {
      return reason;
    }
  }
  return null;
}
