/**
 * Test support for "the disk is full" and "the disk fails". With real mounts allowed (root in
 * the test runner's private mount namespace) a tiny tmpfs is mounted and filled until the
 * kernel answers ENOSPC; everywhere else the same tests run against a {@link DurableWriteFs}
 * that fails the way the kernel does (the write stores part of the data, then ENOSPC), so no
 * test is skipped and each still fails if the code under test writes in place.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DurableFile, DurableWriteFs } from '../durable-write.ts';
import { nodeDurableWriteFs } from '../durable-write.ts';
import { LinuxMounter } from '../linux-mounter.ts';
import { realMountsAllowed } from './mount-test-env.ts';

/** Size of the tiny tmpfs, in KiB. */
export const TINY_TMPFS_KIB = 64;

/** An errno error as node:fs raises it. */
export function errnoError(code: string, syscall: string, text: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${text}, ${syscall}`), { code, syscall });
}

export interface FullFilesystem {
  /** A directory on the filesystem that will be full; the test writes its "previous version" here first. */
  dir: string;
  /** Fills the filesystem: every later write of data fails with ENOSPC. */
  fill(): Promise<void>;
  /** The fs to hand to the code under test: the real one on the real tmpfs, an injecting one otherwise. */
  fs: DurableWriteFs;
  /** True when `dir` is a real tmpfs of {@link TINY_TMPFS_KIB} KiB. */
  real: boolean;
  /** Unmounts the tmpfs (no-op without real mounts). */
  release(): Promise<void>;
}

/** A filesystem below `base` that can be filled (see the module comment). */
export async function fullFilesystem(base: string): Promise<FullFilesystem> {
  const dir = join(base, 'tiny-fs');
  await mkdir(dir);
  if (realMountsAllowed) {
    const mounter = new LinuxMounter();
    await mounter.mount('tmpfs', dir, 'tmpfs', [`size=${TINY_TMPFS_KIB}k`, 'mode=0755']);
    return {
      dir,
      fs: nodeDurableWriteFs,
      real: true,
      async fill() {
        const filler = join(dir, 'filler');
        const err = await writeFile(filler, Buffer.alloc(TINY_TMPFS_KIB * 2 * 1024, 0x61)).then(
          () => new Error(`writing ${TINY_TMPFS_KIB * 2} KiB into a ${TINY_TMPFS_KIB} KiB tmpfs succeeded`),
          (e: unknown) => e,
        );
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
      },
      release: () => mounter.unmount(dir),
    };
  }
  let full = false;
  return {
    dir,
    fs: failingWriteFs(() => (full ? errnoError('ENOSPC', 'write', 'no space left on device') : null)),
    real: false,
    fill() {
      full = true;
      return Promise.resolve();
    },
    release: () => Promise.resolve(),
  };
}

/**
 * node:fs, except that a file's write stores the first half of the data and then throws what
 * `failure()` returns (when it returns an error), as a disk that runs out of space does.
 */
export function failingWriteFs(failure: () => Error | null, base: DurableWriteFs = nodeDurableWriteFs): DurableWriteFs {
  return {
    ...base,
    async createExclusive(path, mode) {
      const file = await base.createExclusive(path, mode);
      const wrapped: DurableFile = {
        async writeFile(data) {
          const err = failure();
          if (err === null) return file.writeFile(data);
          await file.writeFile(data.subarray(0, Math.floor(data.length / 2)));
          throw err;
        },
        chmod: (m) => file.chmod(m),
        sync: () => file.sync(),
        close: () => file.close(),
      };
      return wrapped;
    },
  };
}
