import { describe, expect, it } from 'vitest';
import { DeferredMounter, isMounterUndecidedError } from './deferred-mounter.ts';
import type { Mounter } from './mounter.ts';
import { recordingMounter } from './testing/recording-mounter.ts';

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
