import { describe, expect, it } from 'vitest';
import { DeferredMounter, isMounterUndecidedError } from './deferred-mounter.ts';
import type { Mounter } from './mounter.ts';
import type { MountInfo } from './mountinfo.ts';

/** A mounter that records its calls. */
function recordingMounter(calls: string[]): Mounter {
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
      return Promise.resolve([] as MountInfo[]);
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

describe('DeferredMounter', () => {
  it('holds every call until the mounter is chosen, then passes each to it', async () => {
    const calls: string[] = [];
    let choose: (m: Mounter) => void = () => undefined;
    const deferred = new DeferredMounter(new Promise<Mounter>((resolve) => (choose = resolve)));

    const pending = Promise.all([
      deferred.list(),
      deferred.mount('tmpfs', '/t', 'tmpfs', ['size=1k']),
      deferred.unmount('/t'),
      deferred.isLikelyNotMountPoint('/a'),
      deferred.isMountPoint('/b'),
      deferred.getMountRefs('/c'),
    ]);
    await Promise.resolve();
    expect(calls).toEqual([]);
    expect(() => deferred.kind).toThrow(expect.objectContaining({ name: 'MounterUndecidedError' }) as Error);

    choose(recordingMounter(calls));
    expect(await pending).toEqual([[], undefined, undefined, true, false, []]);
    expect(calls).toEqual(['list', 'mount tmpfs /t tmpfs size=1k', 'unmount /t', 'isLikelyNotMountPoint /a', 'isMountPoint /b', 'getMountRefs /c']);
    expect([deferred.kind, deferred.privileged]).toEqual(['unprivileged', false]);
  });

  it('rejects every call with the error of a failed choice', async () => {
    const deferred = new DeferredMounter(Promise.reject(new Error('probe failed: mkdtemp EACCES')));

    await expect(deferred.list()).rejects.toThrow('probe failed: mkdtemp EACCES');
    await expect(deferred.unmount('/t')).rejects.toThrow('probe failed: mkdtemp EACCES');
    let caught: unknown;
    const readPrivileged = (): boolean => deferred.privileged;
    try {
      readPrivileged();
    } catch (err) {
      caught = err;
    }
    expect(isMounterUndecidedError(caught)).toBe(true);
  });
});
