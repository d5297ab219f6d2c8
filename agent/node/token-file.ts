/**
 * The HTTP API's bearer token, kept in a file (`--token-file`, default `<root-dir>/agent-token`)
 * so the dashboard and operators read it from the same place across restarts.
 *
 * Contract: an existing file is used as is (its content, trimmed, must not be empty); a missing
 * file is created with mode 0600 holding 32 random bytes as hex and a newline, durably and
 * atomically (lib/mount-utils/durable-write.ts: written and fsynced under a temporary name, then
 * linked to the path, which fails when the path exists). So two agents racing on one path end up
 * with the same token, and a full disk or an I/O error leaves no file (never an empty or
 * half-written one that would lock the dashboard out on the next start) and a clear error.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { isDurableWriteError, writeFileDurably, type DurableWriteFs } from '../../lib/mount-utils/durable-write.ts';
import { errorMessage } from '../../lib/volume/errors.ts';

export class TokenFileError extends Error {
  override readonly name = 'TokenFileError';
}

export function isTokenFileError(err: unknown): err is TokenFileError {
  return err instanceof TokenFileError;
}

/** Reads the token, creating the file first when it does not exist. `fs`: the durable writer's file system (tests inject failures). */
export async function ensureTokenFile(path: string, options: { fs?: DurableWriteFs } = {}): Promise<{ token: string; created: boolean }> {
  let created = false;
  try {
    await mkdir(dirname(path), { recursive: true, mode: 0o750 });
    const token = randomBytes(32).toString('hex');
    await writeFileDurably(path, `${token}\n`, { mode: 0o600, exclusive: true, ...(options.fs === undefined ? {} : { fs: options.fs }) });
    created = true;
  } catch (err) {
    const exists = isDurableWriteError(err) ? err.step === 'link' && err.code === 'EEXIST' : isErrno(err, 'EEXIST');
    if (!exists) throw new TokenFileError(`${path}: cannot create the token file: ${errorMessage(err)}`, { cause: err });
  }
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new TokenFileError(`${path}: cannot read the token file: ${errorMessage(err)}`, { cause: err });
  }
  const token = text.trim();
  if (token === '') throw new TokenFileError(`${path}: the token file is empty`);
  if (/\s/.test(token)) throw new TokenFileError(`${path}: the token must be one word without white space`);
  return { token, created };
}

function isErrno(err: unknown, code: string): boolean {
  return err instanceof Error && 'code' in err && err.code === code;
}

