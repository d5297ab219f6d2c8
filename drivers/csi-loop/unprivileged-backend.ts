/**
 * The backend for machines where the driver may not mount (non-root, or root outside a private
 * mount namespace). It runs the same state machine on plain directories and symlinks:
 * - disk: the directory `<state-dir>/disks/<name>`; its content survives unstage/restage like
 *   the content of an image file would;
 * - attach: nothing to do on the host; the publish context's devicePath is the disk directory;
 * - stage: `staging_target_path` becomes a symlink to the disk directory (an existing EMPTY
 *   directory there is replaced; a non-empty one is refused);
 * - publish: `target_path` becomes a symlink to `staging_target_path` (same rule for an existing
 *   empty directory), so target → staging → disk mirrors bind mount → staging mount → device;
 * - unpublish removes the target symlink; unstage replaces the staging symlink by an empty
 *   directory again (what a real unmount leaves behind);
 * - read-only publishes and expansion are bookkeeping only (recorded, not enforced);
 * - ephemeral volumes: `target_path` becomes a symlink straight to the disk directory (no
 *   staging); unpublish removes the symlink and the disk directory is deleted.
 * Nothing outside a symlink this backend created, or the disk directory of a deleted ephemeral
 * volume, is ever removed.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { VolumeBackend } from './backend.ts';
import { diskFileName } from './backend.ts';
import { failedPrecondition, internal } from './csi-error.ts';
import { lstatOrNull } from './host-tools.ts';
import type { VolumeRecord } from './state-store.ts';

export class UnprivilegedBackend implements VolumeBackend {
  readonly mode = 'unprivileged' as const;
  private readonly diskDir: string;

  constructor(stateDir: string) {
    this.diskDir = path.join(path.resolve(stateDir), 'disks');
  }

  diskPathFor(volumeId: string): string {
    return path.join(this.diskDir, diskFileName(volumeId));
  }

  async ensureDisk(record: VolumeRecord): Promise<void> {
    await fs.mkdir(record.diskPath, { recursive: true, mode: 0o755 });
  }

  async attach(record: VolumeRecord): Promise<string> {
    await this.ensureDisk(record);
    return record.diskPath;
  }

  async attachedDevice(record: VolumeRecord): Promise<string | null> {
    if (record.devicePath !== record.diskPath) {
      return null;
    }
    const stat = await lstatOrNull(record.diskPath);
    return stat?.isDirectory() === true ? record.diskPath : null;
  }

  async detach(): Promise<void> {
    // Nothing is attached on the host; the service clears the bookkeeping.
  }

  async stage(record: VolumeRecord, stagingPath: string): Promise<void> {
    await placeSymlink(stagingPath, record.diskPath);
  }

  async isStaged(record: VolumeRecord, stagingPath: string): Promise<boolean> {
    return (await readLinkOrNull(stagingPath)) === record.diskPath;
  }

  async unstage(record: VolumeRecord, stagingPath: string): Promise<void> {
    if ((await readLinkOrNull(stagingPath)) === record.diskPath) {
      await fs.unlink(stagingPath);
      await fs.mkdir(stagingPath, { recursive: true });
    }
  }

  async publish(_record: VolumeRecord, stagingPath: string, targetPath: string): Promise<void> {
    await placeSymlink(targetPath, stagingPath);
  }

  async isPublished(_record: VolumeRecord, stagingPath: string, targetPath: string): Promise<boolean> {
    return (await readLinkOrNull(targetPath)) === stagingPath;
  }

  async unpublish(_record: VolumeRecord, targetPath: string): Promise<void> {
    if ((await readLinkOrNull(targetPath)) !== null) {
      await fs.unlink(targetPath);
    }
  }

  async growDisk(): Promise<void> {
    // A directory has no size to grow; the service records the new capacity.
  }

  async expand(): Promise<void> {
    // A directory has no size to grow; the service records the new capacity.
  }

  async publishEphemeral(record: VolumeRecord, targetPath: string): Promise<string> {
    await this.ensureDisk(record);
    await placeSymlink(targetPath, record.diskPath);
    return record.diskPath;
  }

  async isEphemeralPublished(record: VolumeRecord, targetPath: string): Promise<boolean> {
    return (await readLinkOrNull(targetPath)) === record.diskPath;
  }

  async unpublishEphemeral(record: VolumeRecord, targetPath: string): Promise<void> {
    if ((await readLinkOrNull(targetPath)) === record.diskPath) {
      await fs.unlink(targetPath);
    }
  }

  /**
   * Removes the disk directory with its content: the one recursive removal of this backend, and
   * only of a directory it created for a volume whose lifetime has ended (ephemeral), never of a
   * path outside `<state-dir>/disks`.
   */
  async deleteDisk(record: VolumeRecord): Promise<void> {
    if (path.dirname(record.diskPath) !== this.diskDir) {
      throw internal(`refusing to delete ${record.diskPath}: not a disk directory of this driver`);
    }
    await fs.rm(record.diskPath, { recursive: true, force: true });
  }

  async yank(record: VolumeRecord): Promise<void> {
    for (const target of Object.keys(record.publishedTargets)) {
      await this.unpublish(record, target);
    }
    if (record.staged !== null) {
      await this.unstage(record, record.staged.path);
    }
  }
}

async function readLinkOrNull(p: string): Promise<string | null> {
  try {
    return await fs.readlink(p);
  } catch {
    return null;
  }
}

/** Makes `linkPath` a symlink to `destination`, replacing only an empty directory. */
async function placeSymlink(linkPath: string, destination: string): Promise<void> {
  const current = await readLinkOrNull(linkPath);
  if (current === destination) {
    return;
  }
  const stat = await lstatOrNull(linkPath);
  if (stat !== null) {
    if (!stat.isDirectory() || (await fs.readdir(linkPath)).length > 0) {
      throw failedPrecondition(`${linkPath} exists and is not an empty directory`);
    }
    await fs.rmdir(linkPath);
  }
  await fs.mkdir(path.dirname(linkPath), { recursive: true });
  await fs.symlink(destination, linkPath);
}
