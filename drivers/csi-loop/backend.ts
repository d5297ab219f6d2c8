/**
 * What the CSI state machine (csi-service.ts) asks of the host. Two implementations:
 * - PrivilegedBackend: sparse image + loop device + ext4 + real mounts (root, private mount ns);
 * - UnprivilegedBackend: the same steps on plain directories and symlinks.
 * The service owns the bookkeeping (state.json); a backend only changes the host and answers
 * questions about it. Every method is idempotent.
 */
import { createHash } from 'node:crypto';
import type { AccessType } from './csi-types.ts';
import type { DriverMode, VolumeRecord } from './state-store.ts';

export interface VolumeBackend {
  readonly mode: DriverMode;

  /** Where the disk of `volumeId` lives (image file or data directory). */
  diskPathFor(volumeId: string): string;

  /** Creates the disk with `capacityBytes` if it does not exist yet. */
  ensureDisk(record: VolumeRecord): Promise<void>;

  /** Attaches the disk to this node and returns the device path for the publish context. */
  attach(record: VolumeRecord): Promise<string>;

  /** The device path if `record.devicePath` is really attached to this record's disk, else null. */
  attachedDevice(record: VolumeRecord): Promise<string | null>;

  /** Detaches every attachment of the disk from this node. */
  detach(record: VolumeRecord): Promise<void>;

  /** Makes the attached disk available at `stagingPath` (format once, mount). */
  stage(record: VolumeRecord, stagingPath: string, accessType: AccessType, mountFlags: readonly string[]): Promise<void>;

  /** Whether the disk is (still) staged at `stagingPath` on the host. */
  isStaged(record: VolumeRecord, stagingPath: string, accessType: AccessType): Promise<boolean>;

  unstage(record: VolumeRecord, stagingPath: string, accessType: AccessType): Promise<void>;

  /** Makes the staged volume available at `targetPath` (bind mount or symlink). */
  publish(
    record: VolumeRecord,
    stagingPath: string,
    targetPath: string,
    readonly: boolean,
    accessType: AccessType,
  ): Promise<void>;

  /** Whether `targetPath` is (still) published on the host. */
  isPublished(record: VolumeRecord, stagingPath: string, targetPath: string): Promise<boolean>;

  /** Undoes publish and removes what publish created at `targetPath`. */
  unpublish(record: VolumeRecord, targetPath: string): Promise<void>;

  /**
   * ControllerExpandVolume: grows the disk to `newBytes` (never shrinks it) and lets an attached
   * device see the new size; the filesystem on it is left alone (that is NodeExpandVolume's part).
   */
  growDisk(record: VolumeRecord, newBytes: number): Promise<void>;

  /** Grows the disk and, when staged with a filesystem, the filesystem to `newBytes`. */
  expand(record: VolumeRecord, newBytes: number): Promise<void>;

  /**
   * CSI ephemeral volumes (no controller publish, no stage): attaches the disk if needed, formats
   * it once and makes it available directly at `targetPath` (ext4 mount of the loop device, or a
   * symlink to the disk directory). Returns the attachment (loop device / disk directory). On
   * failure nothing it attached stays attached.
   */
  publishEphemeral(record: VolumeRecord, targetPath: string, readonly: boolean, mountFlags: readonly string[]): Promise<string>;

  /** Whether the ephemeral volume is (still) available at `targetPath` on the host. */
  isEphemeralPublished(record: VolumeRecord, targetPath: string): Promise<boolean>;

  /** Undoes publishEphemeral: unmounts/unlinks `targetPath`, removes what it created there, detaches. */
  unpublishEphemeral(record: VolumeRecord, targetPath: string): Promise<void>;

  /** Deletes the disk of a volume that is neither attached nor published any more (ephemeral end of life). */
  deleteDisk(record: VolumeRecord): Promise<void>;

  /**
   * The "terminated node" simulation: drops every mount of the volume lazily (the way a vanished
   * node loses them) and detaches the disk, without asking anyone.
   */
  yank(record: VolumeRecord): Promise<void>;
}

/**
 * A file-system-safe, unique name for a volume id: the id's safe characters (up to 40) plus a
 * hash of the full id, so "a/b" and "a_b" never share a disk.
 */
export function diskFileName(volumeId: string): string {
  const safe = volumeId.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 40);
  const hash = createHash('sha256').update(volumeId).digest('hex').slice(0, 12);
  return `${safe}-${hash}`;
}
