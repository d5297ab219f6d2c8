import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Pod } from '../../volume/k8s-types.ts';
import type { Mounter } from '../../volume/plugins.ts';
import { specFromVolume } from '../../volume/spec.ts';
import { FakeFileVolumePlugin } from '../../volume/testing/fake-volume-plugin.ts';
import { podUID, uniquePodName, type UniqueVolumeName } from '../../volume/types.ts';
import { Harness } from '../testing/harness.ts';

/** A file plugin that counts SetUp calls. */
class CountingFilePlugin extends FakeFileVolumePlugin {
  setUps = 0;
  override newMounter(): Mounter {
    return {
      getPath: () => '',
      setUp: () => {
        this.setUps++;
        return Promise.resolve();
      },
    };
  }
}

/** Puts `count` pods with one mounted volume each straight into both worlds. */
function populate(h: Harness, count: number): UniqueVolumeName[] {
  const names: UniqueVolumeName[] = [];
  for (let i = 0; i < count; i++) {
    const volume = { name: 'data', emptyDir: {} };
    const pod: Pod = {
      metadata: { name: `p${i}`, namespace: 'default', uid: `uid-${i}` },
      spec: { volumes: [volume], containers: [{ name: 'c', volumeMounts: [{ name: 'data', mountPath: '/d' }] }] },
    };
    h.pods.add(pod);
    const podName = uniquePodName(`uid-${i}`);
    const spec = specFromVolume(volume);
    const volumeName = h.dsw.addPodToVolume(podName, pod, spec, 'data', '', []);
    h.asw.markVolumeAsAttached(volumeName, spec, h.vm.nodeName, '');
    h.asw.markVolumeAsMounted({
      podName,
      podUID: podUID(podName),
      volumeName,
      mounter: null,
      blockVolumeMapper: null,
      outerVolumeSpecName: 'data',
      volumeGidValue: '',
      volumeSpec: spec,
      volumeMountState: 'VolumeMounted',
      seLinuxMountContext: '',
    });
    names.push(volumeName);
  }
  return names;
}

describe('reconciler pass scope', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  function setUp(count: number): { h: Harness; plugin: CountingFilePlugin; names: UniqueVolumeName[] } {
    const plugin = new CountingFilePlugin();
    h = new Harness({ plugins: [plugin] });
    const names = populate(h, count);
    h.populator.setHasAddedPods(true);
    return { h, plugin, names };
  }

  it('passes after nothing changed examine one sweep slice per 10 passes, not every settled volume', async () => {
    // Arrange
    const { h } = setUp(1000);
    await h.reconciler.reconcile(); // the first pass scans everything
    const checks = vi.spyOn(h.asw, 'isMountedAndCurrent');

    // Act: nine passes without the slice, the tenth with it
    const perPass: number[] = [];
    for (let i = 0; i < 10; i++) {
      checks.mockClear();
      await h.reconciler.reconcile();
      perPass.push(checks.mock.calls.length);
    }

    // Assert
    expect(perPass.slice(0, 9)).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0]);
    expect(perPass[9]).toBeGreaterThan(0);
    expect(perPass[9]).toBeLessThanOrEqual(256);
  });

  it('the first pass and every pass after readyToUnmount flips scan every volume', async () => {
    // Arrange
    const { h } = setUp(1000);
    const checks = vi.spyOn(h.asw, 'isMountedAndCurrent');

    // Act + Assert
    await h.reconciler.reconcile();
    expect(checks.mock.calls.length).toBe(1000);
    checks.mockClear();
    h.populator.setHasAddedPods(false);
    await h.reconciler.reconcile();
    expect(checks.mock.calls.length).toBe(1000);
  });

  it('a changed volume is acted on in the next pass even though it was settled', async () => {
    // Arrange
    const { h, plugin, names } = setUp(1000);
    await h.reconciler.reconcile();
    await h.reconciler.reconcile();
    const target = names[777];
    if (target === undefined) throw new Error('fixture');

    // Act: the volume's mount is lost (reported through the actual state's change listener)
    h.asw.markVolumeAsUnmounted(uniquePodName('uid-777'), target);
    await h.reconciler.reconcile();
    await h.clock.flush();

    // Assert
    expect(plugin.setUps).toBe(1);
    expect(h.asw.getVolumeMountState(target, uniquePodName('uid-777'))).toBe('VolumeMounted');
  });

  it('a change that was never reported is still found by the rotating sweep', async () => {
    // Arrange
    const { h, plugin, names } = setUp(1000);
    await h.reconciler.reconcile();
    const target = names[500];
    if (target === undefined) throw new Error('fixture');
    const markDirty = vi.spyOn(h.reconciler, 'markDirty').mockImplementation(() => undefined);

    // Act: lose a mount without telling the reconciler, then run passes
    h.asw.markVolumeAsUnmounted(uniquePodName('uid-500'), target);
    let passes = 0;
    while (plugin.setUps === 0 && passes < 100) {
      await h.reconciler.reconcile();
      await h.clock.flush();
      passes++;
    }

    // Assert: 1000 entries, 256 per slice, a slice every 10 passes: found within (⌈1000/256⌉ + 1) × 10 passes
    expect(markDirty).toHaveBeenCalled();
    expect(plugin.setUps).toBe(1);
    expect(passes).toBeLessThanOrEqual(50);
  });

  it('a volume that still needs action stays in scope every pass until it is settled', async () => {
    // Arrange: one desired volume that cannot mount (plugin SetUp fails)
    const { h, plugin } = setUp(10);
    let fail = true;
    vi.spyOn(plugin, 'newMounter').mockImplementation(() => ({
      getPath: () => '',
      setUp: () => {
        plugin.setUps++;
        return fail ? Promise.reject(new Error('boom')) : Promise.resolve();
      },
    }));
    await h.reconciler.reconcile();
    const lost = h.dsw.getVolumesToMount().find((v) => v.podName === uniquePodName('uid-3'));
    if (lost === undefined) throw new Error('fixture');
    h.asw.markVolumeAsUnmounted(lost.podName, lost.volumeName);

    // Act: passes across the 500 ms backoff, without any world change in between
    await h.reconciler.reconcile();
    await h.clock.flush();
    expect(plugin.setUps).toBe(1);
    fail = false;
    await h.clock.advance(501);
    await h.reconciler.reconcile();
    await h.clock.flush();

    // Assert
    expect(plugin.setUps).toBe(2);
    expect(h.asw.getMountedVolumes()).toHaveLength(10);
  });
});
