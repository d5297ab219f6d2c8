import { link, readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isDurableWriteError } from '../../mount-utils/durable-write.ts';
import { fullFilesystem, type FullFilesystem } from '../../mount-utils/testing/full-fs-test-env.ts';
import { cleanUpTempDir, makeTempDir, mountMode } from '../../mount-utils/testing/mount-test-env.ts';
import { isVolumeDataError, loadVolumeData, saveVolumeData, VOL_DATA_FILE_NAME } from './vol-data.ts';

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
    expect((await stat(join(dir, VOL_DATA_FILE_NAME))).mode & 0o777).toBe(0o640);
    expect((await readdir(dir)).sort()).toEqual(['old-link', VOL_DATA_FILE_NAME]);
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
