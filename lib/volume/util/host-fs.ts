/**
 * The little file-system access reconstruction needs (listing directories), behind an
 * interface so the engine can be driven by a fixture in tests and by the real disk in the agent.
 */
import { readdir } from 'node:fs/promises';

export interface DirEntry {
  name: string;
  isDirectory: boolean;
}

export interface HostFs {
  /** Lists a directory; throws (with the OS error) when it cannot be read. */
  readDir(path: string): Promise<DirEntry[]>;
}

export const nodeHostFs: HostFs = {
  async readDir(path) {
    const entries = await readdir(path, { withFileTypes: true });
    return entries.map((e) => ({ name: e.name, isDirectory: e.isDirectory() || e.isSymbolicLink() }));
  },
};
