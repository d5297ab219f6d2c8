/**
 * A plugin that does nothing, for benchmarks: the engine's fake file plugin (not attachable,
 * not device-mountable, so every (pod, volume) pair is its own volume, like emptyDir), with a
 * hook called when SetUp starts.
 */
import type { Pod } from '../lib/volume/k8s-types.ts';
import type { Mounter } from '../lib/volume/plugins.ts';
import type { Spec } from '../lib/volume/spec.ts';
import { FakeFileVolumePlugin } from '../lib/volume/testing/fake-volume-plugin.ts';

export class NoopPlugin extends FakeFileVolumePlugin {
  onSetUp: (() => void) | null = null;

  override newMounter(_spec: Spec, _pod: Pod): Mounter {
    return {
      getPath: () => '',
      setUp: () => {
        this.onSetUp?.();
        return Promise.resolve();
      },
    };
  }
}
