/**
 * A {@link Mounter} for tests that records every call in `calls` (one line each: the method and
 * its arguments) and changes nothing: mount and unmount succeed, `list` answers `table`, no path
 * is a mount point.
 */
import type { Mounter } from '../mounter.ts';
import type { MountInfo } from '../mountinfo.ts';

export function recordingMounter(calls: string[], table: readonly MountInfo[] = []): Mounter {
  return {
    kind: 'unprivileged',
    privileged: false,
    mount: (source, target, fstype, options) => {
      calls.push(`mount ${source} ${target} ${fstype} ${options.join(',')}`);
      return Promise.resolve();
    },
    unmount: (target) => {
      calls.push(`unmount ${target}`);
      return Promise.resolve();
    },
    list: () => {
      calls.push('list');
      return Promise.resolve([...table]);
    },
    isLikelyNotMountPoint: (path) => {
      calls.push(`isLikelyNotMountPoint ${path}`);
      return Promise.resolve(true);
    },
    isMountPoint: (path) => {
      calls.push(`isMountPoint ${path}`);
      return Promise.resolve(false);
    },
    getMountRefs: (path) => {
      calls.push(`getMountRefs ${path}`);
      return Promise.resolve([]);
    },
  };
}
