/**
 * The mounter and unmounter shared by the volumes whose contents come from API objects
 * (configmap, secret, projected, downward-api). Like the kubelet's, they wrap an emptyDir: a
 * plain directory (`disk`) or a tmpfs (`memory`, for anything that may hold secrets), into
 * which the {@link AtomicWriter} projects the payload.
 *
 * SetUp computes the payload first and only then creates the directory (and tmpfs), so a
 * missing object or key fails without leaving an orphan directory or mount behind (the kubelet
 * sets the directory up first). Every SetUp rewrites the payload when it changed: these plugins
 * say RequiresRemount, so the reconciler calls SetUp periodically and a changed source object
 * reaches the pod.
 *
 * TearDown unmounts the tmpfs (which discards its contents), then removes what the atomic
 * writer left (the `disk` medium, or the unprivileged mounter's tmpfs stand-in), then the
 * empty directory; anything the writer did not create makes TearDown refuse.
 */
import type { Clock } from '../../../clock/clock.ts';
import type { Mounter as VolumeMounter, MounterArgs, Unmounter } from '../../plugins.ts';
import { AtomicWriter, type Payload } from './atomic-writer.ts';
import { basename } from 'node:path';
import { EMPTY_DIR_MODE, EMPTY_DIR_PARENT_MODE, emptyDirMetaDir, ensureDir, ensureTmpfs, isReady, removeReady, setReady, tearDownVolumeDir, type RemovalContext } from './volume-dir.ts';

/** Where the payload lives: a plain directory, or a tmpfs (sized as the kubelet's wrapped emptyDir: `memorySize`). */
export type AtomicVolumeMedium = 'disk' | 'memory';

export interface AtomicVolumeOptions {
  dir: string;
  medium: AtomicVolumeMedium;
  /** `memory`: the tmpfs' size in bytes (null: no size option), asked at SetUp. */
  memorySize?: () => number | null;
  removal: RemovalContext;
  clock: Clock;
}

/** Computes the files of the volume; throws the plugin's (kubelet-worded) errors. */
export type PayloadSource = (args: MounterArgs) => Payload | Promise<Payload>;

/** The meta dir of the emptyDir the kubelet wraps these volumes in (`wrapped_<volume>`, with its `ready` file). */
export const wrappedMetaDir = (volumeDir: string): string => emptyDirMetaDir(volumeDir, `wrapped_${basename(volumeDir)}`);

export class AtomicWriterVolumeMounter implements VolumeMounter {
  constructor(
    private readonly o: AtomicVolumeOptions,
    private readonly source: PayloadSource,
  ) {}

  getPath(): string {
    return this.o.dir;
  }

  async setUp(args: MounterArgs): Promise<void> {
    const payload = await this.source(args);
    if (this.o.medium === 'memory') {
      const size = this.o.memorySize?.() ?? null;
      await ensureTmpfs(this.o.removal, this.o.dir, size === null ? [] : [`size=${size}`]);
    }
    else await ensureDir(this.o.dir, EMPTY_DIR_MODE, EMPTY_DIR_PARENT_MODE);
    await new AtomicWriter({ targetDir: this.o.dir, clock: this.o.clock, mounter: this.o.removal.mounter }).write(payload);
    // The kubelet's wrapped emptyDir sets its ready file only when it is not there yet. These
    // volumes are set up again periodically and after every restart: rewriting it each time (a
    // mkdir, an open, a write and a close) was about a fifth of an unchanged SetUp's file calls.
    const metaDir = wrappedMetaDir(this.o.dir);
    if (!(await isReady(metaDir))) await setReady(metaDir);
  }
}

export interface AtomicVolumeUnmounterOptions extends Omit<AtomicVolumeOptions, 'medium'> {
  /** Runs once TearDown succeeded (projected: the pod's tokens leave the token manager's cache). */
  afterTearDown?: () => void;
}

export class AtomicWriterVolumeUnmounter implements Unmounter {
  constructor(private readonly o: AtomicVolumeUnmounterOptions) {}

  getPath(): string {
    return this.o.dir;
  }

  async tearDown(): Promise<void> {
    await removeReady(this.o.removal, wrappedMetaDir(this.o.dir));
    const writer = new AtomicWriter({ targetDir: this.o.dir, clock: this.o.clock, mounter: this.o.removal.mounter });
    await tearDownVolumeDir(this.o.removal, this.o.dir, () => writer.removeAll());
    this.o.afterTearDown?.();
  }
}
