/**
 * Runs a program without a shell. Mount helpers use this seam so their argument handling and
 * error texts can be tested without privileges.
 */
import { execFile } from 'node:child_process';

/** Outcome of a finished (or failed to start) program. Never rejects. */
export interface ExecResult {
  /** Exit status; null if killed by a signal or not started. */
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  /** Set when the program could not be started (e.g. ENOENT: not installed). */
  spawnError?: Error;
}

/** Runs `file` with `args` (an argument array, no shell) and resolves with its outcome. */
export type ExecFn = (file: string, args: readonly string[]) => Promise<ExecResult>;

/** The real runner: child_process.execFile, `LC_ALL=C` so messages stay in English for logs and matching. */
export const execFileNoShell: ExecFn = (file, args) =>
  new Promise((resolve) => {
    execFile(
      file,
      [...args],
      { encoding: 'utf8', env: { ...process.env, LC_ALL: 'C' }, maxBuffer: 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error === null) {
          resolve({ exitCode: 0, signal: null, stdout, stderr });
          return;
        }
        const code = (error as NodeJS.ErrnoException).code;
        if (typeof code === 'string') {
          resolve({ exitCode: null, signal: null, stdout, stderr, spawnError: error });
          return;
        }
        resolve({
          exitCode: typeof error.code === 'number' ? error.code : null,
          signal: error.signal ?? null,
          stdout,
          stderr,
        });
      },
    );
  });
