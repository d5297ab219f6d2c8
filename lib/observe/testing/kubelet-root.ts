/**
 * Test fixtures for observe mode: a kubelet-style root dir built from real files, and a snapshot
 * of a tree to prove that an operation changed nothing.
 */
import { lstat, mkdir, readdir, readFile, readlink, symlink, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';

/**
 * Creates files, directories and symlinks below `base`. A path ending in `/` is a directory; a
 * `path -> target` entry is a symlink; anything else a file with `content` (default `x`).
 */
export async function layout(base: string, paths: readonly string[], content = 'x'): Promise<void> {
  for (const p of paths) {
    const link = /^(.*) -> (.*)$/.exec(p);
    if (link !== null) {
      const [, at = '', target = ''] = link;
      await mkdir(dirname(join(base, at)), { recursive: true });
      await symlink(target, join(base, at));
    } else if (p.endsWith('/')) {
      await mkdir(join(base, p), { recursive: true });
    } else {
      await mkdir(dirname(join(base, p)), { recursive: true });
      await writeFile(join(base, p), content);
    }
  }
}

/** Writes a CSI publish-side `vol_data.json` into `<volumeDir>` (created with its `mount/` dir). */
export async function csiVolumeDir(volumeDir: string, data: { driverName: string; volumeHandle: string; specVolID: string; nodeName?: string }): Promise<string> {
  await mkdir(join(volumeDir, 'mount'), { recursive: true });
  await writeFile(
    join(volumeDir, 'vol_data.json'),
    JSON.stringify({ ...data, nodeName: data.nodeName ?? 'node-1', attachmentID: '', volumeLifecycleMode: 'Persistent' }),
  );
  return join(volumeDir, 'mount');
}

/**
 * Every entry below `dir` (relative path → kind, size, mtime, content or link text), read with
 * lstat so symlinks are not followed. Two equal snapshots mean nothing was created, removed or
 * modified.
 */
export async function snapshotTree(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  async function visit(p: string): Promise<void> {
    const st = await lstat(p);
    const rel = relative(dir, p) || '.';
    if (st.isSymbolicLink()) out[rel] = `link ${await readlink(p)}`;
    else if (st.isFile()) out[rel] = `file ${st.size} ${st.mtimeMs} ${await readFile(p, 'utf8')}`;
    else if (st.isDirectory()) {
      out[rel] = `dir ${st.mtimeMs}`;
      for (const name of (await readdir(p)).sort()) await visit(join(p, name));
    } else out[rel] = 'other';
  }
  await visit(dir);
  return out;
}
