import { link, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isDurableWriteError } from '../../mount-utils/durable-write.ts';
import { fullFilesystem, type FullFilesystem } from '../../mount-utils/testing/full-fs-test-env.ts';
import { cleanUpTempDir, makeTempDir, mountMode } from '../../mount-utils/testing/mount-test-env.ts';
import {
  attachIntentDir,
  attachIntentPath,
  isVolumeDataError,
  listAttachIntents,
  loadAttachIntent,
  loadVolumeData,
  removeAttachIntent,
  saveAttachIntent,
  saveVolumeData,
  VOL_DATA_FILE_NAME,
} from './vol-data.ts';

let dir: string;
let tiny: FullFilesystem | null;

beforeEach(async () => {
  dir = await makeTempDir('volumescope-voldata-');
  tiny = null;
});

afterEach(async () => {
  await tiny?.release();
  expect(await cleanUpTempDir(dir)).toEqual([]);
});

describe('saveVolumeData', () => {
  it('replaces vol_data.json with a new file (never rewritten in place), mode 0640', async () => {
    // Arrange: a second link to the old file shows whether its inode was overwritten.
    await saveVolumeData(dir, { driverName: 'd', volumeHandle: 'old' });
    await link(join(dir, VOL_DATA_FILE_NAME), join(dir, 'old-link'));

    // Act
    await saveVolumeData(dir, { driverName: 'd', volumeHandle: 'new' });

    // Assert
    expect(await loadVolumeData(dir)).toEqual({ driverName: 'd', volumeHandle: 'new' });
    expect(JSON.parse(await readFile(join(dir, 'old-link'), 'utf8'))).toEqual({ driverName: 'd', volumeHandle: 'old' });
    expect((await stat(join(dir, VOL_DATA_FILE_NAME))).mode & 0o777).toBe(0o644);
    expect((await readdir(dir)).sort()).toEqual(['old-link', VOL_DATA_FILE_NAME]);
  });

  it('leaves a file that already holds the same data as it is (same inode), and replaces one that differs', async () => {
    // Arrange
    await saveVolumeData(dir, { driverName: 'd', volumeHandle: 'h' });
    const before = await stat(join(dir, VOL_DATA_FILE_NAME));

    // Act
    await saveVolumeData(dir, { driverName: 'd', volumeHandle: 'h' });
    const same = await stat(join(dir, VOL_DATA_FILE_NAME));
    await saveVolumeData(dir, { driverName: 'd', volumeHandle: 'h2' });
    const changed = await stat(join(dir, VOL_DATA_FILE_NAME));

    // Assert
    expect(same.ino).toBe(before.ino);
    expect(changed.ino).not.toBe(before.ino);
    expect(await loadVolumeData(dir)).toEqual({ driverName: 'd', volumeHandle: 'h2' });
  });

  it(`on a full disk fails with a VolumeDataError (ENOSPC) and keeps the previous file intact (${mountMode})`, async () => {
    // Arrange
    tiny = await fullFilesystem(dir);
    await saveVolumeData(tiny.dir, { driverName: 'd', volumeHandle: 'previous' });
    await tiny.fill();
    const before = (await readdir(tiny.dir)).sort();

    // Act
    const err = await saveVolumeData(tiny.dir, { driverName: 'd', volumeHandle: 'next', attachmentID: 'x'.repeat(16 * 1024) }, tiny.fs).catch((e: unknown) => e);

    // Assert
    const file = join(tiny.dir, VOL_DATA_FILE_NAME);
    expect(isVolumeDataError(err)).toBe(true);
    expect((err as Error).message).toMatch(new RegExp(`^failed to save volume data file ${file}: cannot write ${file}: writing the temporary file failed: ENOSPC: .*; the previous version is unchanged$`));
    expect(isDurableWriteError((err as Error).cause)).toBe(true);
    expect(await loadVolumeData(tiny.dir)).toEqual({ driverName: 'd', volumeHandle: 'previous' });
    expect((await readdir(tiny.dir)).sort()).toEqual(before);
  });

  it('refuses to write into a missing directory, naming the file', async () => {
    const err = await saveVolumeData(join(dir, 'missing'), { a: 'b' }).catch((e: unknown) => e);
    expect(isVolumeDataError(err)).toBe(true);
    expect((err as Error).message).toContain(join(dir, 'missing', VOL_DATA_FILE_NAME));
  });
});

describe('attach intent records', () => {
  it('saves, reads, lists (this node only, temporary files ignored) and removes a record', async () => {
    // Arrange
    const intent = { driverName: 'd.example.com', volumeHandle: 'h1', nodeName: 'node-a', controllerPublishSecretRef: { name: 's', namespace: 'ns' } };
    await saveAttachIntent(dir, intent);
    await saveAttachIntent(dir, { driverName: 'd.example.com', volumeHandle: 'h2', nodeName: 'node-b' });
    await writeFile(join(attachIntentDir(dir), '.csi-abc.json.0123.tmp'), 'half-written');

    // Act
    const listed = await listAttachIntents(dir, 'node-a');

    // Assert
    expect(listed).toEqual({ intents: [intent], invalid: [] });
    expect(await loadAttachIntent(dir, 'd.example.com', 'h1', 'node-a')).toEqual(intent);
    expect((await stat(attachIntentPath(dir, 'd.example.com', 'h1', 'node-a'))).mode & 0o777).toBe(0o640);

    // Act: removal, twice (the second finds nothing to do)
    await removeAttachIntent(dir, 'd.example.com', 'h1', 'node-a');
    await removeAttachIntent(dir, 'd.example.com', 'h1', 'node-a');

    // Assert
    expect(await loadAttachIntent(dir, 'd.example.com', 'h1', 'node-a')).toBeNull();
    expect((await listAttachIntents(dir, 'node-a')).intents).toEqual([]);
  });

  it('lists nothing when the directory does not exist, and reports a corrupt record without failing the others', async () => {
    // Arrange
    expect(await listAttachIntents(dir, 'node-a')).toEqual({ intents: [], invalid: [] });
    await saveAttachIntent(dir, { driverName: 'd', volumeHandle: 'ok', nodeName: 'node-a' });
    const corrupt = attachIntentPath(dir, 'd', 'bad', 'node-a');
    await writeFile(corrupt, '{"driverName": 1}');

    // Act
    const listed = await listAttachIntents(dir, 'node-a');

    // Assert
    expect(listed.intents.map((i) => i.volumeHandle)).toEqual(['ok']);
    expect(listed.invalid).toEqual([{ path: corrupt, reason: `failed to parse volume data file [${corrupt}]: not a JSON object of strings` }]);
    const err: unknown = await loadAttachIntent(dir, 'd', 'bad', 'node-a').catch((e: unknown) => e);
    expect(isVolumeDataError(err)).toBe(true);
  });
});
