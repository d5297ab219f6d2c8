import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../lib/clock/fake-clock.ts';
import { KubeApiRequestError } from '../../lib/kube-client/api-errors.ts';
import type { Pod } from '../../lib/volume/k8s-types.ts';
import { discardLogger } from '../../lib/volume/logger.ts';
import { PodDeleter } from './pod-deleter.ts';

function pod(uid: string, options: { deleting?: boolean; mirror?: boolean } = {}): Pod {
  return {
    metadata: {
      name: `pod-${uid}`,
      namespace: 'apps',
      uid,
      ...(options.deleting === true ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
      ...(options.mirror === true ? { annotations: { 'kubernetes.io/config.mirror': 'hash' } } : {}),
    },
    spec: { containers: [{ name: 'c' }] },
  };
}

function setup(pods: Pod[]) {
  const mounted = new Set<string>();
  const deletes: string[] = [];
  let synced = true;
  let answer: () => Promise<void> = () => Promise.resolve();
  const clock = new FakeClock();
  const deleter = new PodDeleter({
    listPods: () => pods,
    hasPossiblyMountedVolumes: (uid) => mounted.has(uid),
    volumeStatesSynced: () => synced,
    deletePod: (namespace, name, uid) => {
      deletes.push(`${namespace}/${name} ${uid}`);
      return answer();
    },
    clock,
    logger: discardLogger,
  });
  return {
    deleter,
    clock,
    mounted,
    deletes,
    setSynced: (value: boolean) => {
      synced = value;
    },
    setAnswer: (fn: () => Promise<void>) => {
      answer = fn;
    },
  };
}

describe('PodDeleter', () => {
  it('deletes a pod being deleted once its volumes are unmounted, and only once', async () => {
    const t = setup([pod('a', { deleting: true }), pod('b')]);
    t.mounted.add('a');

    expect(t.deleter.sync()).toEqual([]);
    t.mounted.delete('a');
    expect(t.deleter.sync()).toEqual(['a']);
    await t.clock.flush();
    expect(t.deleter.sync()).toEqual([]);
    expect(t.deletes).toEqual(['apps/pod-a a']);
  });

  it('deletes nothing before the volume manager synced its states (reconstruction may not have found the mounts yet)', () => {
    const t = setup([pod('a', { deleting: true })]);
    t.setSynced(false);
    expect(t.deleter.sync()).toEqual([]);
    t.setSynced(true);
    expect(t.deleter.sync()).toEqual(['a']);
  });

  it('leaves mirror pods alone', () => {
    const t = setup([pod('m', { deleting: true, mirror: true })]);
    expect(t.deleter.sync()).toEqual([]);
  });

  it('retries a failed DELETE at the next sync; a 409 (another pod now has the name) or 404 ends the work', async () => {
    const t = setup([pod('a', { deleting: true }), pod('b', { deleting: true })]);
    t.setAnswer(() => Promise.reject(new KubeApiRequestError('HTTP 500', 500, undefined)));
    expect(t.deleter.sync()).toEqual(['a', 'b']);
    await t.clock.flush();
    t.setAnswer(() => Promise.reject(new KubeApiRequestError('Precondition failed', 409, undefined)));
    expect(t.deleter.sync()).toEqual(['a', 'b']);
    await t.clock.flush();
    expect(t.deleter.sync()).toEqual([]);
  });

  it('coalesces the sync requests of a burst of changes into one walk of the pods, on the next timer turn', async () => {
    let walks = 0;
    const t = setup([]);
    const list = [pod('a', { deleting: true }), pod('b')];
    const counted = new PodDeleter({
      listPods: () => {
        walks++;
        return list;
      },
      hasPossiblyMountedVolumes: () => false,
      volumeStatesSynced: () => true,
      deletePod: (namespace, name, uid) => {
        t.deletes.push(`${namespace}/${name} ${uid}`);
        return Promise.resolve();
      },
      clock: t.clock,
      logger: discardLogger,
    });

    for (let i = 0; i < 1000; i++) counted.requestSync();
    expect(walks).toBe(0);
    await t.clock.advance(0);

    expect(walks).toBe(1);
    expect(t.deletes).toEqual(['apps/pod-a a']);
    counted.requestSync();
    await counted.stop();
    expect(t.clock.pendingTimers()).toBe(0);
  });

  it('syncs on its period as a safety net and stops', async () => {
    const t = setup([pod('a', { deleting: true })]);
    t.mounted.add('a');
    t.deleter.start();
    t.mounted.delete('a');
    await t.clock.advance(10_000);
    expect(t.deletes).toEqual(['apps/pod-a a']);
    await t.deleter.stop();
    expect(t.clock.pendingTimers()).toBe(0);
  });
});
