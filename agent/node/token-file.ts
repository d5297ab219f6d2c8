/**
 * The HTTP API's bearer token, kept in a file (`--token-file`, default `<root-dir>/agent-token`)
 * so the dashboard and operators read it from the same place across restarts.
 *
 * Contract: an existing file is used as is (its content, trimmed, must not be empty); a missing
 * file is created exclusively with mode 0600 holding 32 random bytes as hex and a newline. The
 * exclusive create means two agents racing on one path end up with the same token, never with a
 * half-written one.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

export class TokenFileError extends Error {
  override readonly name = 'TokenFileError';
}

export function isTokenFileError(err: unknown): err is TokenFileError {
  return err instanceof TokenFileError;
}

/** Reads the token, creating the file first when it does not exist. */
export async function ensureTokenFile(path: string): Promise<{ token: string; created: boolean }> {
  let created = false;
  try {
    await mkdir(dirname(path), { recursive: true, mode: 0o750 });
    const token = randomBytes(32).toString('hex');
    await writeFile(path, `${token}\n`, { mode: 0o600, flag: 'wx' });
    // The umask may have cleared bits we did not ask for, never added any; set it exactly anyway.
    await chmod(path, 0o600);
    created = true;
  } catch (err) {
    if (!isErrno(err, 'EEXIST')) throw new TokenFileError(`${path}: cannot create the token file: ${messageOf(err)}`, { cause: err });
  }
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new TokenFileError(`${path}: cannot read the token file: ${messageOf(err)}`, { cause: err });
  }
  const token = text.trim();
  if (token === '') throw new TokenFileError(`${path}: the token file is empty`);
  if (/\s/.test(token)) throw new TokenFileError(`${path}: the token must be one word without white space`);
  return { token, created };
}

function isErrno(err: unknown, code: string): boolean {
  return err instanceof Error && 'code' in err && err.code === code;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
