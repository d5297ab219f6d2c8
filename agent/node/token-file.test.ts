import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isDurableWriteError } from '../../lib/mount-utils/durable-write.ts';
import { fullFilesystem, type FullFilesystem } from '../../lib/mount-utils/testing/full-fs-test-env.ts';
import { mountMode } from '../../lib/mount-utils/testing/mount-test-env.ts';
import { ensureTokenFile, isTokenFileError } from './token-file.ts';

let dirs: string[] = [];
let tiny: FullFilesystem | null = null;
afterEach(async () => {
  await tiny?.release();
  tiny = null;
  for (const d of dirs) await rm(d, { recursive: true, force: true });
  dirs = [];
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'volumescope-token-'));
  dirs.push(d);
  return d;
}

describe('ensureTokenFile', () => {
  it('creates a missing file (and its directory) with mode 0600 holding 32 random bytes as hex', async () => {
    // Arrange
    const path = join(await tempDir(), 'sub', 'agent-token');

    // Act
    const first = await ensureTokenFile(path);

    // Assert
    expect(first.created).toBe(true);
    expect(first.token).toMatch(/^[0-9a-f]{64}$/);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
  });

  it('reuses an existing file as is', async () => {
    // Arrange
    const path = join(await tempDir(), 'agent-token');
    await writeFile(path, 'operator-chosen-token\n');

    // Act
    const r = await ensureTokenFile(path);

    // Assert
    expect(r).toEqual({ token: 'operator-chosen-token', created: false });
  });

  it.each([
    ['an empty file', '\n'],
    ['a token with white space', 'two words\n'],
  ])('refuses %s with a TokenFileError naming the path', async (_what, content) => {
    // Arrange
    const path = join(await tempDir(), 'agent-token');
    await writeFile(path, content);

    // Act
    const err = await ensureTokenFile(path).catch((e: unknown) => e);

    // Assert
    expect(isTokenFileError(err)).toBe(true);
    expect((err as Error).message).toContain(path);
  });

  it(`on a full disk fails with a TokenFileError naming the path and ENOSPC, and leaves no file behind (${mountMode})`, async () => {
    // Arrange: an empty token file left by a failed create would lock every client out on the next start.
    tiny = await fullFilesystem(await tempDir());
    await tiny.fill();
    const path = join(tiny.dir, 'agent-token');
    const before = (await readdir(tiny.dir)).sort();

    // Act
    const err = await ensureTokenFile(path, { fs: tiny.fs }).catch((e: unknown) => e);

    // Assert
    expect(isTokenFileError(err)).toBe(true);
    expect((err as Error).message).toMatch(new RegExp(`^${path}: cannot create the token file: cannot write ${path}: writing the temporary file failed: ENOSPC: .*; the file was not created$`));
    expect(isDurableWriteError((err as Error).cause) && (err as Error & { cause: { code?: string } }).cause.code).toBe('ENOSPC');
    expect((await readdir(tiny.dir)).sort()).toEqual(before);
  });

  it('keeps the file another agent created first (the create never replaces)', async () => {
    const path = join(await tempDir(), 'agent-token');
    const first = await ensureTokenFile(path);
    const second = await ensureTokenFile(path);
    expect(second).toEqual({ token: first.token, created: false });
  });
});
