/**
 * The little file-system access reconstruction needs (listing directories), behind an
 * interface so the engine can be driven by a fixture in tests and by the real disk in the agent.
 */
import { readdirSync } from 'node:fs';

export interface DirEntry {
  name: string;
  isDirectory: boolean;
}

export interface HostFs {
  /** Lists a directory; throws (with the OS error) when it cannot be read. */
  readDir(path: string): Promise<DirEntry[]>;
}

/**
 * The real disk, listed with synchronous calls: the directories are the kubelet root dir's own
 * (`pods/`, each pod's `volumes/` and plugin dirs), on its local disk, and a restart lists about
 * one per volume before anything can be set up again (the kubelet lists them in one goroutine).
 * Each readdir through libuv's thread pool would cost an event loop round trip and compete with
 * the API source's first list for the one JavaScript thread.
 */
export const nodeHostFs: HostFs = {
  // eslint-disable-next-line @typescript-eslint/require-await -- async only to turn a throw into a rejection
  async readDir(path) {
    return readdirSync(path, { withFileTypes: true }).map((e) => ({ name: e.name, isDirectory: e.isDirectory() || e.isSymbolicLink() }));
  },
};
