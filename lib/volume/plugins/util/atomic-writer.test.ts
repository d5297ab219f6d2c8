import { chmod, lstat, mkdir, readdir, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { nodeDurableWriteFs, type DurableWriteFs } from '../../../mount-utils/durable-write.ts';
import { errnoError, fullFilesystem } from '../../../mount-utils/testing/full-fs-test-env.ts';
import { mountMode } from '../../../mount-utils/testing/mount-test-env.ts';
import { makePluginTestEnv, modeOf, rejectionOf, type PluginTestEnv } from '../testing/plugin-test-env.ts';
import {
  AtomicWriter,
  DATA_DIR_NAME,
  DATA_DIR_PATTERN,
  dataDirPrefix,
  isAtomicWriterConflictError,
  isInvalidPayloadPathError,
  validatePayloadPath,
  type Payload,
} from './atomic-writer.ts';
import { isTearDownRefusedError } from './errors.ts';

let env: PluginTestEnv;
let target: string;
let writer: AtomicWriter;

beforeEach(async () => {
  env = await makePluginTestEnv();
  target = join(env.root, 'target');
  await mkdir(target);
  writer = new AtomicWriter({ targetDir: target, clock: env.clock, mounter: env.mounter });
});

afterEach(async () => {
  expect(await env.cleanUp()).toEqual([]);
});

function payload(files: Record<string, string | { text: string; mode: number }>): Payload {
  return new Map(
    Object.entries(files).map(([path, f]) => [path, typeof f === 'string' ? { data: Buffer.from(f), mode: 0o644 } : { data: Buffer.from(f.text), mode: f.mode }]),
  );
}

async function entries(): Promise<string[]> {
  return (await readdir(target)).sort();
}

describe('validatePayloadPath', () => {
  it.each([
    { path: '', want: 'invalid path: must not be empty: ""' },
    { path: '/etc/passwd', want: 'invalid path: must be relative path: /etc/passwd' },
    { path: 'a/../b', want: "invalid path: must not contain '..': a/../b" },
    { path: '..', want: "invalid path: must not contain '..': .." },
    { path: '..data', want: "invalid path: must not start with '..': ..data" },
    { path: '..hidden/file', want: "invalid path: must not start with '..': ..hidden/file" },
    { path: 'x'.repeat(256), want: 'invalid path: filenames must be less than or equal to 255 characters' },
    { path: 'a/'.repeat(2049), want: 'invalid path: must be less than or equal to 4096 characters' },
  ])('rejects $path.length-character path with "$want"', ({ path, want }) => {
    let caught: unknown;
    try {
      validatePayloadPath(path);
    } catch (err) {
      caught = err;
    }
    expect(isInvalidPayloadPathError(caught)).toBe(true);
    expect((caught as Error).message).toBe(want);
  });

  it.each(['key', 'dir/key', '.hidden', 'a..b', 'dir/..x'])('accepts %s', (path) => {
    expect(() => {
      validatePayloadPath(path);
    }).not.toThrow();
  });
});

describe('AtomicWriter', () => {
  it('writes files into a timestamped data dir behind the ..data link, with top-level links and exact modes', async () => {
    // Act
    const result = await writer.write(payload({ 'a.conf': 'alpha', 'nested/dir/b.txt': { text: 'beta', mode: 0o400 } }));

    // Assert
    expect(result.written).toBe(true);
    expect(result.dataDir.startsWith(dataDirPrefix(env.clock.now()))).toBe(true);
    expect(result.dataDir).toMatch(DATA_DIR_PATTERN);
    expect(await entries()).toEqual([result.dataDir, DATA_DIR_NAME, 'a.conf', 'nested'].sort());
    expect(await readlink(join(target, DATA_DIR_NAME))).toBe(result.dataDir);
    expect(await readlink(join(target, 'a.conf'))).toBe('..data/a.conf');
    expect(await readlink(join(target, 'nested'))).toBe('..data/nested');
    expect(await readFile(join(target, 'a.conf'), 'utf8')).toBe('alpha');
    expect(await readFile(join(target, 'nested/dir/b.txt'), 'utf8')).toBe('beta');
    expect(await modeOf(join(target, result.dataDir))).toBe(0o755);
    expect(await modeOf(join(target, result.dataDir, 'a.conf'))).toBe(0o644);
    expect(await modeOf(join(target, result.dataDir, 'nested/dir/b.txt'))).toBe(0o400);
  });

  it(`keeps ..data on the complete previous version when the disk is full (ENOSPC), leaving no new data dir (${mountMode})`, async () => {
    // Arrange
    const tiny = await fullFilesystem(env.dir);
    try {
      const w = new AtomicWriter({ targetDir: tiny.dir, clock: env.clock, mounter: env.mounter, fs: tiny.fs });
      const first = await w.write(payload({ k: 'previous' }));
      await tiny.fill();
      const before = (await readdir(tiny.dir)).sort();
      await env.clock.advance(61_000);

      // Act
      const err = await rejectionOf(w.write(payload({ k: 'x'.repeat(16 * 1024), other: 'o' })));

      // Assert
      expect((err as NodeJS.ErrnoException).code).toBe('ENOSPC');
      expect(await readlink(join(tiny.dir, DATA_DIR_NAME))).toBe(first.dataDir);
      expect(await readFile(join(tiny.dir, 'k'), 'utf8')).toBe('previous');
      expect((await readdir(tiny.dir)).sort()).toEqual(before);
    } finally {
      await tiny.release();
    }
  });

  it('fsyncs every new file and directory before swapping ..data, and the target dir after; EIO from fsync leaves the previous version', async () => {
    // Arrange: record the syncs; the second write's file sync fails as a failed write-back does.
    const synced: string[] = [];
    let failSync = false;
    const fs: DurableWriteFs = {
      ...nodeDurableWriteFs,
      async createExclusive(path, mode) {
        const f = await nodeDurableWriteFs.createExclusive(path, mode);
        return {
          writeFile: (d) => f.writeFile(d),
          chmod: (m) => f.chmod(m),
          sync: () => (failSync ? Promise.reject(errnoError('EIO', 'fsync', 'i/o error')) : (synced.push(path), f.sync())),
          close: () => f.close(),
        };
      },
      async openDirectory(path) {
        const d = await nodeDurableWriteFs.openDirectory(path);
        return { writeFile: (b) => d.writeFile(b), chmod: (m) => d.chmod(m), sync: () => (synced.push(`${path}/`), d.sync()), close: () => d.close() };
      },
    };
    const w = new AtomicWriter({ targetDir: target, clock: env.clock, mounter: env.mounter, fs });

    // Act
    const first = await w.write(payload({ 'a/b/c': 'deep' }));
    const order = [...synced];
    failSync = true;
    await env.clock.advance(61_000);
    const err = await rejectionOf(w.write(payload({ 'a/b/c': 'next' })));

    // Assert
    const data = join(target, first.dataDir);
    expect(order).toEqual([join(data, 'a/b/c'), `${join(data, 'a/b')}/`, `${join(data, 'a')}/`, `${data}/`, `${target}/`]);
    expect((err as NodeJS.ErrnoException).code).toBe('EIO');
    expect(await readlink(join(target, DATA_DIR_NAME))).toBe(first.dataDir);
    expect(await readFile(join(target, 'a/b/c'), 'utf8')).toBe('deep');
    expect(await entries()).toEqual([first.dataDir, DATA_DIR_NAME, 'a'].sort());
  });

  it('writes nothing when content and modes are unchanged', async () => {
    const first = await writer.write(payload({ k: 'v' }));
    await env.clock.advance(5_000);

    const second = await writer.write(payload({ k: 'v' }));

    expect(second).toEqual({ written: false, dataDir: first.dataDir });
    expect(await entries()).toEqual([first.dataDir, DATA_DIR_NAME, 'k'].sort());
  });

  it.each<{ name: string; next: Record<string, string | { text: string; mode: number }> }>([
    { name: 'changed content', next: { k: 'v2', other: 'o' } },
    { name: 'a changed mode', next: { k: { text: 'v', mode: 0o600 }, other: 'o' } },
    { name: 'a removed file', next: { k: 'v' } },
  ])('swaps ..data to a new data dir and removes the old one for $name', async ({ next }) => {
    const first = await writer.write(payload({ k: 'v', other: 'o' }));
    await env.clock.advance(61_000);

    const second = await writer.write(payload(next));

    expect(second.written).toBe(true);
    expect(second.dataDir).not.toBe(first.dataDir);
    expect(second.dataDir.startsWith(dataDirPrefix(env.clock.now()))).toBe(true);
    expect(await readlink(join(target, DATA_DIR_NAME))).toBe(second.dataDir);
    expect(await entries()).toEqual([second.dataDir, DATA_DIR_NAME, ...Object.keys(next)].sort());
  });

  it('writes nothing for an unchanged nested payload', async () => {
    const files = { 'a/b/c': 'deep', 'a/d': { text: 'x', mode: 0o600 }, top: 't' };
    const first = await writer.write(payload(files));

    const second = await writer.write(payload(files));

    expect(second).toEqual({ written: false, dataDir: first.dataDir });
    expect(await entries()).toEqual([first.dataDir, DATA_DIR_NAME, 'a', 'top'].sort());
  });

  // The unchanged payload's check: each case is something that check must not take for "up to date".
  it.each<{ name: string; damage: (dataDir: string) => Promise<void>; written: boolean; after: (dataDir: string) => string[] }>([
    {
      name: 'a top-level link that was removed is created again (kubernetes#121472)',
      damage: async () => {
        await rm(join(target, 'k'));
      },
      written: false,
      after: (d) => [d, DATA_DIR_NAME, 'k', 'other'],
    },
    {
      name: 'a stale data dir is removed',
      damage: async () => {
        await mkdir(join(target, '..2020_01_01_00_00_00.123456'));
      },
      written: false,
      after: (d) => [d, DATA_DIR_NAME, 'k', 'other'],
    },
    {
      name: 'a file that appeared in the data dir makes a new version',
      damage: async (d) => {
        await writeFile(join(target, d, 'extra'), 'x');
      },
      written: true,
      after: () => [DATA_DIR_NAME, 'k', 'other'],
    },
    {
      name: 'a file whose mode changed on disk makes a new version',
      damage: async (d) => {
        await chmod(join(target, d, 'k'), 0o600);
      },
      written: true,
      after: () => [DATA_DIR_NAME, 'k', 'other'],
    },
    {
      name: 'a file replaced by a directory makes a new version',
      damage: async (d) => {
        await rm(join(target, d, 'other'));
        await mkdir(join(target, d, 'other'));
      },
      written: true,
      after: () => [DATA_DIR_NAME, 'k', 'other'],
    },
  ])('with the payload unchanged: $name', async ({ damage, written, after }) => {
    const files = { k: 'v', other: 'o' };
    const first = await writer.write(payload(files));
    await damage(first.dataDir);
    await env.clock.advance(61_000);

    const second = await writer.write(payload(files));

    expect(second.written).toBe(written);
    const want = after(first.dataDir);
    expect(await entries()).toEqual((written ? [second.dataDir, ...want] : want).sort());
    expect(await readFile(join(target, 'other'), 'utf8')).toBe('o');
  });

  it('removes data dirs and a ..data_tmp link left by an interrupted write', async () => {
    const first = await writer.write(payload({ k: 'v' }));
    const stale = join(target, '..2020_01_01_00_00_00.123456');
    await mkdir(join(stale, 'sub'), { recursive: true });
    await writeFile(join(stale, 'sub', 'f'), 'half');
    await symlink('..2020_01_01_00_00_00.123456', join(target, '..data_tmp'));

    const second = await writer.write(payload({ k: 'v2' }));

    expect(await entries()).toEqual([second.dataDir, DATA_DIR_NAME, 'k'].sort());
    expect(second.dataDir).not.toBe(first.dataDir);
  });

  it('finishes an interrupted removal on the next write, even when nothing changed', async () => {
    const first = await writer.write(payload({ k: 'v' }));
    const leftover = join(target, '.volumescope-removing-0123abcd');
    await mkdir(join(leftover, 'sub'), { recursive: true });
    await writeFile(join(leftover, 'sub', 'f'), 'old version');

    const again = await writer.write(payload({ k: 'v' }));

    expect(again).toEqual({ written: false, dataDir: first.dataDir });
    expect(await entries()).toEqual([first.dataDir, DATA_DIR_NAME, 'k'].sort());
  });

  it('keeps a payload key that happens to look like a removal leftover', async () => {
    const { dataDir } = await writer.write(payload({ '.volumescope-removing-abc': 'user key' }));

    await writer.write(payload({ '.volumescope-removing-abc': 'user key' }));

    expect(await entries()).toEqual([dataDir, DATA_DIR_NAME, '.volumescope-removing-abc'].sort());
    expect(await readFile(join(target, '.volumescope-removing-abc'), 'utf8')).toBe('user key');
  });

  it('rejects an invalid path before touching the disk', async () => {
    const err = await rejectionOf(writer.write(payload({ ok: 'x', '../escape': 'y' })));

    expect(isInvalidPayloadPathError(err)).toBe(true);
    expect(await entries()).toEqual([]);
  });

  it.each([
    { name: 'a regular file at a top-level name', setup: () => writeFile(join(target, 'k'), 'mine'), want: /cannot create .*\/k -> \.\.data\/k/ },
    { name: 'a directory named ..data', setup: () => mkdir(join(target, DATA_DIR_NAME)), want: /\.\.data exists and is not a symlink/ },
    { name: 'a ..data link to a foreign place', setup: () => symlink('/etc', join(target, DATA_DIR_NAME)), want: /points to \/etc, which is not a data directory/ },
  ])('refuses to write over $name', async ({ setup, want }) => {
    await setup();
    const before = await entries();

    const err = await rejectionOf(writer.write(payload({ k: 'v' })));

    expect(isAtomicWriterConflictError(err)).toBe(true);
    expect(err.message).toMatch(want);
    expect(await entries()).toEqual(before);
  });

  it('removes everything it wrote, leaving an empty target dir', async () => {
    await writer.write(payload({ a: '1', 'd/b': '2' }));
    await env.clock.advance(1_000);
    await writer.write(payload({ a: '3' }));

    await writer.removeAll();

    expect(await entries()).toEqual([]);
    expect((await lstat(target)).isDirectory()).toBe(true);
  });

  it.each([
    { name: 'a stray top-level file', setup: () => writeFile(join(target, 'stray'), 'user data'), want: 'stray' },
    { name: 'a link that does not point into ..data', setup: () => symlink('/etc/passwd', join(target, 'k2')), want: 'k2' },
  ])('refuses to remove anything when the target holds $name', async ({ setup, want }) => {
    const { dataDir } = await writer.write(payload({ k: 'v' }));
    await setup();
    const before = await entries();

    const err = await rejectionOf(writer.removeAll());

    expect(isTearDownRefusedError(err)).toBe(true);
    expect(err.message).toBe(`refusing to remove ${target}: it holds entries the atomic writer did not create: ${want}`);
    expect(await entries()).toEqual(before);
    expect(await readFile(join(target, dataDir, 'k'), 'utf8')).toBe('v');
  });

  it('refuses to remove a data dir that contains a symlink it did not create', async () => {
    const { dataDir } = await writer.write(payload({ k: 'v' }));
    await symlink('/etc', join(target, dataDir, 'escape'));

    const err = await rejectionOf(writer.removeAll());

    expect(err.message).toContain(`${dataDir}/escape`);
    expect(await readFile(join(target, 'k'), 'utf8')).toBe('v');
  });
});
