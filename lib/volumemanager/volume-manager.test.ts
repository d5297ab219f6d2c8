import { afterEach, describe, expect, it } from 'vitest';
import { uniquePodName, uniqueVolumeName } from '../volume/types.ts';
import { gcePdVolume, Harness, makePod } from './testing/harness.ts';

describe('VolumeManager', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('attaches and mounts a new pod volume, then tears it down when the pod goes away', async () => {
    h = new Harness({ controllerAttachDetachEnabled: false });
    h.pods.add(makePod([gcePdVolume()]));
    h.start();
    const vol = uniqueVolumeName('fake-plugin/fake-device1');
    await h.until(() => h?.vm.asw.getMountedVolumes().length === 1);
    expect(h.plugin.counts).toMatchObject({ attach: 1, waitForAttach: 1, mountDevice: 1, setUp: 1 });
    expect(h.vm.asw.getVolumeMountState(vol, uniquePodName('pod1uid'))).toBe('VolumeMounted');

    h.pods.delete('pod1uid');
    await h.until(() => !h?.vm.asw.volumeExists(vol));
    expect(h.plugin.counts).toMatchObject({ tearDown: 1, unmountDevice: 1, detach: 1 });
  });
});
