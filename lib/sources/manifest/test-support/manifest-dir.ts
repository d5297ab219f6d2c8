/**
 * Test support for watcher tests: temporary manifest directories, atomic saves and a logger that
 * records what it is given.
 */
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SourceLogger } from '../source-logger.ts';

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

export interface LogEntry {
  level: 'info' | 'warn';
  obj: object;
  msg: string;
}

/** A SourceLogger that keeps every entry, for assertions on log lines. */
export class RecordingLogger implements SourceLogger {
  readonly entries: LogEntry[] = [];

  info(obj: object, msg: string): void {
    this.entries.push({ level: 'info', obj, msg });
  }

  warn(obj: object, msg: string): void {
    this.entries.push({ level: 'warn', obj, msg });
  }

  warnings(): LogEntry[] {
    return this.entries.filter((e) => e.level === 'warn');
  }
}
