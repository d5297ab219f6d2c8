/**
 * The real backend: each volume is a sparse image file `<state-dir>/images/<name>.img`.
 * - attach: `losetup --find --show <image>` → /dev/loopN (the publish context's devicePath);
 * - stage (mount access): `mkfs.ext4 -F -q` only when `blkid` finds no filesystem, then
 *   `mount -t ext4 <dev> <staging>`; stage (block access): nothing to do on the host;
 * - publish: `mount --bind <staging> <target>` (+ `remount,bind,ro` when read-only); block
 *   access bind-mounts the loop device onto a file at the target;
 * - growDisk (ControllerExpandVolume): grow the image, `losetup -c` when attached;
 * - expand: grow the image, `losetup -c`, `resize2fs` online; when online resizing is refused
 *   (it needs CAP_SYS_RESOURCE) the volume is briefly unmounted, checked and resized offline,
 *   then every mount is restored.
 * - ephemeral volumes (NodePublishVolume without stage): attach, format once and mount the loop
 *   device directly at the target; unpublish unmounts, detaches, and the image is deleted.
 * Mount points are always checked against a fresh /proc/self/mountinfo, loop attachments against
 * sysfs, and only directories left empty are removed (never recursively).
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { AccessType } from './csi-types.ts';
import { diskFileName, type VolumeBackend } from './backend.ts';
import type { VolumeRecord } from './state-store.ts';
import { failedPrecondition, internal } from './csi-error.ts';
import { isCommandFailedError, isMountPoint, loopBackingFile, loopDevicesOf, lstatOrNull, run } from './host-tools.ts';

export class PrivilegedBackend implements VolumeBackend {
  readonly mode = 'privileged' as const;
  private readonly imageDir: string;

  constructor(stateDir: string) {
    this.imageDir = path.join(path.resolve(stateDir), 'images');
  }

  diskPathFor(volumeId: string): string {
    return path.join(this.imageDir, `${diskFileName(volumeId)}.img`);
  }

  async ensureDisk(record: VolumeRecord): Promise<void> {
    await fs.mkdir(this.imageDir, { recursive: true });
    let handle: fs.FileHandle;
    try {
      handle = await fs.open(record.diskPath, 'wx', 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
        return;
      }
      throw err;
    }
    try {
      await handle.truncate(record.capacityBytes);
    } finally {
      await handle.close();
    }
  }

  async attach(record: VolumeRecord): Promise<string> {
    const existing = await this.attachedDevice(record);
    if (existing !== null) {
      return existing;
    }
    const [other] = await loopDevicesOf(record.diskPath);
    if (other !== undefined) {
      return other;
    }
    const { stdout } = await run('losetup', ['--find', '--show', record.diskPath]);
    const device = stdout.trim();
    if (!device.startsWith('/dev/loop')) {
      throw internal(`losetup returned no loop device for ${record.diskPath}: ${JSON.stringify(stdout)}`);
    }
    return device;
  }

  async attachedDevice(record: VolumeRecord): Promise<string | null> {
    if (record.devicePath === null) {
      return null;
    }
    return (await loopBackingFile(record.devicePath)) === record.diskPath ? record.devicePath : null;
  }

  async detach(record: VolumeRecord): Promise<void> {
    // Only devices whose backing file is this volume's image are ever detached.
    const devices = new Set(await loopDevicesOf(record.diskPath));
    const recorded = await this.attachedDevice(record);
    if (recorded !== null) {
      devices.add(recorded);
    }
    for (const device of devices) {
      try {
        await run('losetup', ['-d', device]);
      } catch (err) {
        if ((await loopBackingFile(device)) === record.diskPath) {
          throw err;
        }
      }
    }
  }

  async stage(record: VolumeRecord, stagingPath: string, accessType: AccessType, mountFlags: readonly string[]): Promise<void> {
    const device = await this.requireDevice(record);
    await fs.mkdir(stagingPath, { recursive: true });
    if (accessType === 'block' || (await isMountPoint(stagingPath))) {
      return;
    }
    if (!(await this.hasFilesystem(device))) {
      await run('mkfs.ext4', ['-F', '-q', device]);
    }
    const options = mountFlags.length > 0 ? ['-o', mountFlags.join(',')] : [];
    await run('mount', ['-t', 'ext4', ...options, device, stagingPath]);
  }

  async isStaged(_record: VolumeRecord, stagingPath: string, accessType: AccessType): Promise<boolean> {
    return accessType === 'block' ? true : isMountPoint(stagingPath);
  }

  async unstage(_record: VolumeRecord, stagingPath: string, accessType: AccessType): Promise<void> {
    if (accessType === 'mount' && (await isMountPoint(stagingPath))) {
      await run('umount', [stagingPath]);
    }
  }

  async publish(
    record: VolumeRecord,
    stagingPath: string,
    targetPath: string,
    readonly: boolean,
    accessType: AccessType,
  ): Promise<void> {
    if (await isMountPoint(targetPath)) {
      return;
    }
    let source = stagingPath;
    if (accessType === 'block') {
      source = await this.requireDevice(record);
      await fs.mkdir(path.dirname(targetPath), { recursive: true });
      await fs.writeFile(targetPath, '', { flag: 'a' });
    } else {
      await fs.mkdir(targetPath, { recursive: true });
    }
    await run('mount', ['--bind', source, targetPath]);
    if (readonly) {
      await run('mount', ['-o', 'remount,bind,ro', targetPath]);
    }
  }

  isPublished(_record: VolumeRecord, _stagingPath: string, targetPath: string): Promise<boolean> {
    return isMountPoint(targetPath);
  }

  async unpublish(_record: VolumeRecord, targetPath: string): Promise<void> {
    if (await isMountPoint(targetPath)) {
      await run('umount', [targetPath]);
    }
    await removeCreatedPath(targetPath);
  }

  async growDisk(record: VolumeRecord, newBytes: number): Promise<void> {
    if ((await fs.stat(record.diskPath)).size < newBytes) {
      await fs.truncate(record.diskPath, newBytes);
    }
    const device = await this.attachedDevice(record);
    if (device !== null) {
      await run('losetup', ['-c', device]);
    }
  }

  async expand(record: VolumeRecord, newBytes: number): Promise<void> {
    await this.growDisk(record, newBytes);
    const device = await this.attachedDevice(record);
    if (device === null) {
      return;
    }
    const staged = record.staged;
    if (staged === null || staged.accessType === 'block' || !(await isMountPoint(staged.path))) {
      return;
    }
    try {
      await run('resize2fs', [device]);
    } catch (err) {
      if (!isCommandFailedError(err)) {
        throw err;
      }
      await this.offlineResize(record, device, staged.path);
    }
  }

  async publishEphemeral(record: VolumeRecord, targetPath: string, readonly: boolean, mountFlags: readonly string[]): Promise<string> {
    await this.ensureDisk(record);
    const device = await this.attach(record);
    try {
      await fs.mkdir(targetPath, { recursive: true });
      if (await isMountPoint(targetPath)) {
        return device;
      }
      if (!(await this.hasFilesystem(device))) {
        await run('mkfs.ext4', ['-F', '-q', device]);
      }
      const flags = readonly ? ['ro', ...mountFlags] : [...mountFlags];
      const options = flags.length > 0 ? ['-o', flags.join(',')] : [];
      await run('mount', ['-t', 'ext4', ...options, device, targetPath]);
      return device;
    } catch (err) {
      // Leave no loop device behind for a volume that did not get mounted.
      if (!(await isMountPoint(targetPath))) {
        await this.detach({ ...record, devicePath: device });
      }
      throw err;
    }
  }

  async isEphemeralPublished(record: VolumeRecord, targetPath: string): Promise<boolean> {
    return (await this.attachedDevice(record)) !== null && (await isMountPoint(targetPath));
  }

  async unpublishEphemeral(record: VolumeRecord, targetPath: string): Promise<void> {
    if (await isMountPoint(targetPath)) {
      await run('umount', [targetPath]);
    }
    await removeCreatedPath(targetPath);
    await this.detach(record);
  }

  async deleteDisk(record: VolumeRecord): Promise<void> {
    await fs.rm(record.diskPath, { force: true });
  }

  async yank(record: VolumeRecord): Promise<void> {
    const paths = [...Object.keys(record.publishedTargets), ...(record.staged === null ? [] : [record.staged.path])];
    for (const p of paths) {
      if (await isMountPoint(p)) {
        await run('umount', ['-l', p]);
      }
    }
    await this.detach(record);
  }

  /** Unmounts targets and staging, resizes the filesystem offline, and restores every mount. */
  private async offlineResize(record: VolumeRecord, device: string, stagingPath: string): Promise<void> {
    const targets = Object.entries(record.publishedTargets);
    for (const [target] of targets) {
      if (await isMountPoint(target)) {
        await run('umount', [target]);
      }
    }
    await run('umount', [stagingPath]);
    try {
      await run('e2fsck', ['-f', '-p', device]).catch((err: unknown) => {
        // e2fsck exit 1 = errors corrected, which is fine before a resize.
        if (!(isCommandFailedError(err) && err.exitCode === 1)) {
          throw err;
        }
      });
      await run('resize2fs', [device]);
    } finally {
      await run('mount', ['-t', 'ext4', device, stagingPath]);
      for (const [target, info] of targets) {
        await this.publish(record, stagingPath, target, info.readonly, info.accessType);
      }
    }
  }

  private async hasFilesystem(device: string): Promise<boolean> {
    try {
      const { stdout } = await run('blkid', ['-p', '-s', 'TYPE', '-o', 'value', device]);
      return stdout.trim() !== '';
    } catch (err) {
      // blkid exits 2 when it finds no signature at all.
      if (isCommandFailedError(err) && err.exitCode === 2) {
        return false;
      }
      throw err;
    }
  }

  private async requireDevice(record: VolumeRecord): Promise<string> {
    const device = await this.attachedDevice(record);
    if (device === null) {
      throw failedPrecondition(`volume ${record.volumeId} is not attached to this node`);
    }
    return device;
  }
}

/**
 * Removes what NodePublishVolume created at `targetPath`: an empty directory (mount access) or an
 * empty regular file (block access). Anything with content is left alone and reported, because
 * removing it could destroy data.
 */
export async function removeCreatedPath(targetPath: string): Promise<void> {
  const stat = await lstatOrNull(targetPath);
  if (stat === null) {
    return;
  }
  if (await isMountPoint(targetPath)) {
    throw internal(`${targetPath} is still a mount point; not removing it`);
  }
  if (stat.isDirectory()) {
    try {
      await fs.rmdir(targetPath);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOTEMPTY') {
        throw internal(`${targetPath} is not empty after unmount; not removing it`);
      }
      throw err;
    }
  } else if (stat.isFile() && stat.size === 0) {
    await fs.unlink(targetPath);
  } else if (stat.isSymbolicLink()) {
    await fs.unlink(targetPath);
  } else {
    throw internal(`${targetPath} is not what NodePublishVolume created; not removing it`);
  }
}
