/** Test support: the fake volume plugin with a TearDown that can be held at a gate or made to fail. */
import type { Unmounter } from '../../volume/plugins.ts';
import { FakeVolumePlugin } from '../../volume/testing/fake-volume-plugin.ts';
import type { PodUID } from '../../volume/types.ts';

/** The error text of a scripted TearDown failure. */
export const SCRIPTED_TEARDOWN_ERROR = 'unmount failed: target is busy';

export class ScriptedTearDownPlugin extends FakeVolumePlugin {
  /** TearDowns still to fail (each failure counts down). */
  failures = 0;
  private gate: Promise<void> | null = null;
  private open: () => void = () => undefined;

  /** Holds every TearDown until {@link release}. */
  hold(): void {
    this.gate = new Promise((resolve) => {
      this.open = resolve;
    });
  }

  release(): void {
    this.open();
    this.gate = null;
  }

  override newUnmounter(name: string, podUID: PodUID): Unmounter {
    const inner = super.newUnmounter(name, podUID);
    return {
      getPath: () => inner.getPath(),
      tearDown: async () => {
        if (this.gate !== null) await this.gate;
        if (this.failures > 0) {
          this.failures--;
          throw new Error(SCRIPTED_TEARDOWN_ERROR);
        }
        await inner.tearDown();
      },
    };
  }
}
