/**
 * Test support for watcher tests: temporary manifest directories and atomic saves.
 */
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh empty directory under the OS temp dir; remove it with {@link removeDir}. */
export function makeTempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'volumescope-manifests-'));
}

export function removeDir(dir: string): Promise<void> {
  return rm(dir, { recursive: true, force: true });
}

/** Saves like editors and config tools do: write a hidden temp file, then rename it over. */
export async function writeAtomically(dir: string, name: string, text: string): Promise<void> {
  const temp = join(dir, `.${name}.tmp-${process.pid}`);
  await writeFile(temp, text);
  await rename(temp, join(dir, name));
}
