import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DurableFile, DurableWriteFs } from './durable-write.ts';
import { DurableWriteError, isDurableWriteError, isDurableWriteTempName, nodeDurableWriteFs, writeFileDurably } from './durable-write.ts';
import { errnoError, fullFilesystem, type FullFilesystem } from './testing/full-fs-test-env.ts';
import { cleanUpTempDir, makeTempDir, mountMode } from './testing/mount-test-env.ts';

let dir: string;
let tiny: FullFilesystem | null;

beforeEach(async () => {
  dir = await makeTempDir('volumescope-durable-');
  tiny = null;
});

afterEach(async () => {
  await tiny?.release();
  expect(await cleanUpTempDir(dir)).toEqual([]);
});

async function rejection(p: Promise<unknown>): Promise<DurableWriteError> {
  const err: unknown = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isDurableWriteError(err)) throw new Error(`expected a DurableWriteError, got ${String(err)}`);
  return err;
}

/** node:fs, recording each call in order. */
function recordingFs(calls: string[], base: DurableWriteFs = nodeDurableWriteFs): DurableWriteFs {
  const wrap = (file: DurableFile, what: string): DurableFile => ({
    writeFile: async (d) => {
      calls.push(`write ${what}`);
      await file.writeFile(d);
    },
    chmod: (m) => file.chmod(m),
    sync: async () => {
      calls.push(`fsync ${what}`);
      await file.sync();
    },
    close: () => file.close(),
  });
  return {
    createExclusive: async (p, m) => wrap(await base.createExclusive(p, m), 'file'),
    openDirectory: async (p) => wrap(await base.openDirectory(p), `dir ${p}`),
    rename: async (a, b) => {
      calls.push(`rename -> ${b}`);
      await base.rename(a, b);
    },
    link: async (a, b) => {
      calls.push(`link -> ${b}`);
      await base.link(a, b);
    },
    unlink: (p) => base.unlink(p),
  };
}

describe('writeFileDurably', () => {
  it('replaces the file: temp file in the same directory, write, fsync, rename, fsync of the directory', async () => {
    // Arrange
    const path = join(dir, 'state.json');
    await writeFile(path, 'old');
    const calls: string[] = [];

    // Act
    await writeFileDurably(path, 'new', { mode: 0o640, fs: recordingFs(calls) });

    // Assert
    expect(calls).toEqual(['write file', 'fsync file', `rename -> ${path}`, `fsync dir ${dir}`]);
    expect(await readFile(path, 'utf8')).toBe('new');
    expect((await stat(path)).mode & 0o777).toBe(0o640);
    expect(await readdir(dir)).toEqual(['state.json']);
  });

  it('sets the mode exactly, whatever the umask', async () => {
    const path = join(dir, 'token');
    const previous = process.umask(0o077);
    try {
      await writeFileDurably(path, 'x', { mode: 0o644 });
    } finally {
      process.umask(previous);
    }
    expect((await stat(path)).mode & 0o777).toBe(0o644);
  });

  it(`fails with ENOSPC on a full filesystem and leaves the previous version and no temporary file (${mountMode})`, async () => {
    // Arrange: the previous version on a tiny filesystem, then the filesystem filled up.
    tiny = await fullFilesystem(dir);
    const path = join(tiny.dir, 'vol_data.json');
    await writeFile(path, '{"version":"previous"}');
    await tiny.fill();
    const before = (await readdir(tiny.dir)).sort();

    // Act: a new version larger than any space a partial page could still hold.
    const err = await rejection(writeFileDurably(path, JSON.stringify({ version: 'next', pad: 'x'.repeat(16 * 1024) }), { fs: tiny.fs }));

    // Assert
    expect(err).toMatchObject({ path, step: 'write', code: 'ENOSPC', committed: false });
    expect(err.message).toMatch(new RegExp(`^cannot write ${path}: writing the temporary file failed: ENOSPC: .*; the previous version is unchanged$`));
    expect(await readFile(path, 'utf8')).toBe('{"version":"previous"}');
    expect((await readdir(tiny.dir)).sort()).toEqual(before);
  });

  it('fails with EIO when fsync reports a write error, and leaves the previous version and no temporary file', async () => {
    // Arrange: fsync(2) is where a failed write-back shows up.
    const path = join(dir, 'mountinfo');
    await writeFile(path, 'previous');
    const eio: DurableWriteFs = {
      ...nodeDurableWriteFs,
      async createExclusive(p, m) {
        const file = await nodeDurableWriteFs.createExclusive(p, m);
        return { ...bind(file), sync: () => Promise.reject(errnoError('EIO', 'fsync', 'i/o error')) };
      },
    };

    // Act
    const err = await rejection(writeFileDurably(path, 'next', { fs: eio }));

    // Assert
    expect(err).toMatchObject({ path, step: 'fsync', code: 'EIO', committed: false });
    expect(err.message).toBe(`cannot write ${path}: syncing the temporary file to disk failed: EIO: i/o error, fsync; the previous version is unchanged`);
    expect(await readFile(path, 'utf8')).toBe('previous');
    expect(await readdir(dir)).toEqual(['mountinfo']);
  });

  it('fails with EIO when the rename fails, and leaves the previous version and no temporary file', async () => {
    const path = join(dir, 'f');
    await writeFile(path, 'previous');
    const err = await rejection(writeFileDurably(path, 'next', { fs: { ...nodeDurableWriteFs, rename: () => Promise.reject(errnoError('EIO', 'rename', 'i/o error')) } }));
    expect(err).toMatchObject({ step: 'rename', code: 'EIO', committed: false });
    expect(await readFile(path, 'utf8')).toBe('previous');
    expect(await readdir(dir)).toEqual(['f']);
  });

  it('reports a failed directory fsync as committed: the new content is in place', async () => {
    const path = join(dir, 'f');
    await writeFile(path, 'previous');
    const fs: DurableWriteFs = {
      ...nodeDurableWriteFs,
      async openDirectory(p) {
        const d = await nodeDurableWriteFs.openDirectory(p);
        return { ...bind(d), sync: () => Promise.reject(errnoError('EIO', 'fsync', 'i/o error')) };
      },
    };
    const err = await rejection(writeFileDurably(path, 'next', { fs }));
    expect(err).toMatchObject({ step: 'fsync-directory', code: 'EIO', committed: true });
    expect(err.message).toMatch(/the new content is in place but may not survive a crash$/);
    expect(await readFile(path, 'utf8')).toBe('next');
    expect(await readdir(dir)).toEqual(['f']);
  });

  it('exclusive: creates a missing file through link(2), and never replaces an existing one', async () => {
    // Arrange
    const path = join(dir, 'agent-token');
    const calls: string[] = [];

    // Act
    await writeFileDurably(path, 'first', { exclusive: true, fs: recordingFs(calls) });
    const err = await rejection(writeFileDurably(path, 'second', { exclusive: true }));

    // Assert
    expect(calls).toEqual(['write file', 'fsync file', `link -> ${path}`, `fsync dir ${dir}`]);
    expect(err).toMatchObject({ step: 'link', code: 'EEXIST', committed: false });
    expect(err.message).toMatch(/the file already exists and was not changed$/);
    expect(await readFile(path, 'utf8')).toBe('first');
    expect(await readdir(dir)).toEqual(['agent-token']);
  });

  it('names the path when the directory does not exist', async () => {
    const path = join(dir, 'missing', 'f');
    const err = await rejection(writeFileDurably(path, 'x'));
    expect(err).toMatchObject({ path, step: 'create', code: 'ENOENT' });
    expect(err.message).toContain(`cannot write ${path}: creating the temporary file failed: ENOENT`);
  });
});

/** The methods of a handle bound to it, so they can be spread into an overriding object. */
function bind(file: DurableFile): DurableFile {
  return { writeFile: (d) => file.writeFile(d), chmod: (m) => file.chmod(m), sync: () => file.sync(), close: () => file.close() };
}

describe('isDurableWriteTempName', () => {
  it('recognises the temporary name of a write that never reached its rename, for that target only', async () => {
    // Arrange: the rename fails, as if the process had died before it.
    let created = '';
    const crashing: DurableWriteFs = {
      ...nodeDurableWriteFs,
      createExclusive: (path, mode) => {
        created = path;
        return nodeDurableWriteFs.createExclusive(path, mode);
      },
      rename: () => Promise.reject(errnoError('EIO', 'rename', 'input/output error')),
    };

    // Act
    await rejection(writeFileDurably(join(dir, 'vol_data.json'), '{}', { fs: crashing }));
    const name = created.slice(dir.length + 1);

    // Assert
    expect(isDurableWriteTempName(name, 'vol_data.json')).toBe(true);
    expect(isDurableWriteTempName(name, 'data.json')).toBe(false);
    expect(isDurableWriteTempName('vol_data.json', 'vol_data.json')).toBe(false);
    expect(isDurableWriteTempName('.vol_data.json.0123456789ab.tmp.bak', 'vol_data.json')).toBe(false);
    expect(isDurableWriteTempName('.vol_data.json.XYZ456789abc.tmp', 'vol_data.json')).toBe(false);
  });
});
