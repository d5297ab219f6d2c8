/**
 * A {@link Mounter} chosen later: the agent's mount probe (detectMounter) runs mount(8) and
 * umount(8), and the volume manager need not wait for it to begin its work (reconstruction lists
 * the pod directories first). Every call waits for the choice and is then the chosen mounter's,
 * so nothing is mounted, unmounted or read from a mount table before it is known which one; when
 * the choice fails, every call rejects with that error.
 *
 * `kind` and `privileged` are known only once the choice is made: reading them earlier throws
 * {@link MounterUndecidedError} (the agent reads them after its start awaited the probe).
 */
import type { MountInfo } from './mountinfo.ts';
import type { Mounter, MounterKind } from './mounter.ts';

/** `kind` or `privileged` of a {@link DeferredMounter} was read before the mounter was chosen. */
export class MounterUndecidedError extends Error {
  override readonly name = 'MounterUndecidedError';
}

export function isMounterUndecidedError(err: unknown): err is MounterUndecidedError {
  return err instanceof MounterUndecidedError;
}

export class DeferredMounter implements Mounter {
  private chosen: Mounter | null = null;
  private readonly choice: Promise<Mounter>;

  constructor(choice: Promise<Mounter>) {
    this.choice = choice.then((mounter) => {
      this.chosen = mounter;
      return mounter;
    });
    // A failed choice is reported by each call (and by whoever awaits the probe itself).
    this.choice.catch(() => undefined);
  }

  get kind(): MounterKind {
    return this.decided().kind;
  }

  get privileged(): boolean {
    return this.decided().privileged;
  }

  async mount(source: string, target: string, fstype: string, options: readonly string[]): Promise<void> {
    return (await this.choice).mount(source, target, fstype, options);
  }

  async unmount(target: string): Promise<void> {
    return (await this.choice).unmount(target);
  }

  async list(): Promise<MountInfo[]> {
    return (await this.choice).list();
  }

  async isLikelyNotMountPoint(path: string): Promise<boolean> {
    return (await this.choice).isLikelyNotMountPoint(path);
  }

  async isMountPoint(path: string): Promise<boolean> {
    return (await this.choice).isMountPoint(path);
  }

  async getMountRefs(path: string): Promise<string[]> {
    return (await this.choice).getMountRefs(path);
  }

  private decided(): Mounter {
    if (this.chosen === null) throw new MounterUndecidedError('the mounter is not chosen yet: the mount probe has not finished');
    return this.chosen;
  }
}
