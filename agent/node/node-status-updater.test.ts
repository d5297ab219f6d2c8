import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../lib/clock/fake-clock.ts';
import { discardLogger } from '../../lib/volume/logger.ts';
import type { UniqueVolumeName } from '../../lib/volume/types.ts';
import { NodeStatusUpdater } from './node-status-updater.ts';

function setup(options: { reportBeforeSync?: boolean } = {}) {
  const clock = new FakeClock();
  const patches: (string[] | null)[] = [];
  const marked: string[][] = [];
  const vm = {
    synced: false,
    volumes: [] as UniqueVolumeName[],
    getVolumesInUse: () => vm.volumes,
    reconcilerStatesHasBeenSynced: () => vm.synced,
    markVolumesAsReportedInUse: (v: readonly string[]) => {
      marked.push([...v]);
    },
  };
  const updater = new NodeStatusUpdater({
    volumeManager: vm,
    patchVolumesInUse: (volumes) => {
      patches.push(volumes === null ? null : [...volumes]);
      return Promise.resolve(volumes === null ? [] : [...volumes]);
    },
    clock,
    periodMs: 10_000,
    logger: discardLogger,
    ...options,
  });
  return { clock, patches, marked, vm, updater };
}

describe('NodeStatusUpdater', () => {
  it('without reportBeforeSync sends nothing before the volume manager synced and ignores kicks before start', async () => {
    const t = setup();
    t.updater.kick();
    await t.clock.advance(1_000);
    expect(t.patches).toEqual([]);

    t.updater.start();
    await t.clock.advance(10_000);
    expect(t.patches).toEqual([]);
    t.vm.synced = true;
    await t.clock.advance(10_000);
    expect(t.patches).toEqual([[]]);
    await t.updater.stop();
  });

  it('with reportBeforeSync reports at once and every period without volumesInUse until synced, marking nothing', async () => {
    const t = setup({ reportBeforeSync: true });
    t.updater.start();
    await t.clock.flush();
    expect(t.patches).toEqual([null]);
    await t.clock.advance(10_000);
    expect(t.patches).toEqual([null, null]);
    expect(t.marked).toEqual([]);

    t.vm.synced = true;
    t.vm.volumes = ['kubernetes.io/csi/d^v1' as UniqueVolumeName];
    t.updater.kick();
    await t.clock.advance(100);
    expect(t.patches).toEqual([null, null, ['kubernetes.io/csi/d^v1']]);
    expect(t.marked).toEqual([['kubernetes.io/csi/d^v1']]);
    await t.updater.stop();
  });
});
