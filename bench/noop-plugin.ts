/**
 * A plugin that does nothing, for benchmarks: not attachable, not device-mountable (so every
 * (pod, volume) pair is its own volume, like emptyDir), with an optional hook called when SetUp
 * starts.
 */
import type { Pod } from '../lib/volume/k8s-types.ts';
import type { Mounter, ReconstructedVolume, Unmounter, VolumeHost, VolumePlugin } from '../lib/volume/plugins.ts';
import { specFromVolume, specName, type Spec } from '../lib/volume/spec.ts';
import { pluginName, type PodUID } from '../lib/volume/types.ts';

export class NoopPlugin implements VolumePlugin {
  readonly name = pluginName('bench/noop');
  onSetUp: (() => void) | null = null;
  init(_host: VolumeHost): void {
    // Nothing to remember.
  }
  canSupport(): boolean {
    return true;
  }
  getVolumeName(spec: Spec): string {
    return specName(spec);
  }
  requiresRemount(): boolean {
    return false;
  }
  supportsMountOption(): boolean {
    return false;
  }
  supportsSELinuxContextMount(): boolean {
    return false;
  }
  newMounter(_spec: Spec, _pod: Pod): Mounter {
    return {
      getPath: () => '',
      setUp: () => {
        this.onSetUp?.();
        return Promise.resolve();
      },
    };
  }
  newUnmounter(_name: string, _podUID: PodUID): Unmounter {
    return { getPath: () => '', tearDown: () => Promise.resolve() };
  }
  constructVolumeSpec(volumeName: string): Promise<ReconstructedVolume> {
    return Promise.resolve({ spec: specFromVolume({ name: volumeName }), seLinuxMountContext: '' });
  }
}
