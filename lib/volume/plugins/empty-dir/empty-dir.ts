/**
 * `kubernetes.io/empty-dir` (kubelet `pkg/volume/emptydir`): a directory under the pod's volumes
 * dir that lives as long as the pod.
 *
 * - Default medium: a plain directory with mode 0777. A size limit (`sizeLimit`, or the
 *   desired size the volume manager computes) is recorded on the mounter
 *   ({@link EmptyDirMounter.sizeLimitBytes}) but not enforced: the kubelet enforces it with
 *   project quotas or eviction, neither of which VolumeScope has.
 * - `medium: Memory`: a tmpfs, `mount -t tmpfs -o size=<bytes>` with the size from
 *   `MounterArgs.desiredSize` when positive, else the kubelet's (util/memory-size.ts: the node's
 *   allocatable memory lowered to the pod's memory limit and to `sizeLimit`), else (none of
 *   them known) no size option, the kernel's default of half the RAM; plus `noswap` on kernels
 *   that take it, as the kubelet.
 *
 * A SetUp that succeeded writes the kubelet's readiness file,
 * `pods/<uid>/plugins/kubernetes.io~empty-dir/<name>/ready` (volumeutil.SetReady); TearDown
 * removes it first.
 *
 * TearDown unmounts a tmpfs (its contents go with it) and removes the directory only when it is
 * empty. Unlike the kubelet, which deletes an emptyDir recursively, VolumeScope refuses to
 * delete files it did not create (docs/safety.md): a disk-backed emptyDir that
 * containers wrote into must be emptied by hand, and so must a Memory one under the unprivileged
 * mounter, whose tmpfs is a plain directory. Hugepages are not supported.
 */
import { basename } from 'node:path';
import { parseQuantity } from '../../quantity.ts';
import type { Pod } from '../../k8s-types.ts';
import type { Mounter, MounterArgs, ReconstructedVolume, Unmounter, VolumePlugin } from '../../plugins.ts';
import { specFromVolume, specName, type Spec } from '../../spec.ts';
import { pluginName, type PodUID } from '../../types.ts';
import { UnsupportedSpecError, VolumeSetupError } from '../util/errors.ts';
import { InTreePluginBase, podUIDOf } from '../util/plugin-base.ts';
import { EMPTY_DIR_MODE, EMPTY_DIR_PARENT_MODE, emptyDirMetaDir, ensureDir, ensureTmpfs, isReady, mountsAt, removeReady, setReady, tearDownVolumeDir, topMountAt, type RemovalContext } from '../util/volume-dir.ts';

export const EMPTY_DIR_PLUGIN_NAME = pluginName('kubernetes.io/empty-dir');

export class EmptyDirPlugin extends InTreePluginBase implements VolumePlugin {
  readonly name = EMPTY_DIR_PLUGIN_NAME;

  canSupport(spec: Spec): boolean {
    return spec.volume?.emptyDir !== undefined;
  }

  /** The spec name: emptyDirs are never shared between pods. */
  getVolumeName(spec: Spec): string {
    if (spec.volume?.emptyDir === undefined) throw new UnsupportedSpecError('Spec does not reference an EmptyDir volume type');
    return specName(spec);
  }

  newMounter(spec: Spec, pod: Pod): EmptyDirMounter {
    const source = spec.volume?.emptyDir ?? {};
    return new EmptyDirMounter(
      this.volumeDir(podUIDOf(pod), specName(spec)),
      source.medium ?? '',
      source.sizeLimit ?? null,
      this.removalContext(),
      (sizeLimit) => this.memoryVolumeSize(pod, sizeLimit),
    );
  }

  newUnmounter(name: string, podUID: PodUID): Unmounter {
    const dir = this.volumeDir(podUID, name);
    const removal = this.removalContext();
    return {
      getPath: () => dir,
      // The ready file first, as the kubelet's TearDownAt.
      tearDown: async () => {
        await removeReady(removal, emptyDirMetaDir(dir, name));
        await tearDownVolumeDir(removal, dir);
      },
    };
  }

  /** `{name, emptyDir: {}}`, with `medium: Memory` when the directory is a tmpfs mount point now. */
  async constructVolumeSpec(volumeName: string, volumePath: string): Promise<ReconstructedVolume> {
    const top = await topMountAt(this.deps.mounter, volumePath);
    const emptyDir = top?.fsType === 'tmpfs' ? { medium: 'Memory' as const } : {};
    return { spec: specFromVolume({ name: volumeName, emptyDir }), seLinuxMountContext: '' };
  }
}

export class EmptyDirMounter implements Mounter {
  /** The size limit of the last SetUp in bytes (enforced only for `Memory`), null when none. */
  sizeLimitBytes: number | null = null;

  constructor(
    private readonly dir: string,
    private readonly medium: string,
    /** `sizeLimit` as written in the spec; parsed at SetUp so that NewMounter never fails on it. */
    private readonly specSizeLimit: string | null,
    private readonly removal: RemovalContext,
    /** `Memory`: the kubelet's size for the tmpfs given the spec's limit (util/memory-size.ts). */
    private readonly memorySize: (sizeLimitBytes: number | null) => number | null = (sizeLimit) => sizeLimit,
  ) {}

  getPath(): string {
    return this.dir;
  }

  /**
   * As the kubelet's SetUpAt: a volume whose ready file is present is already set up when its
   * directory exists (default medium) or is a tmpfs mount point (`Memory`), and nothing is
   * written again (a restart confirms thousands of volumes this way). A ready file without its
   * directory (removed by hand) does not count: the volume is set up anew.
   */
  async setUp(args: MounterArgs): Promise<void> {
    const fromSpec = this.specSizeLimit === null ? 0 : parseQuantity(this.specSizeLimit);
    const limit = args.desiredSize !== null && args.desiredSize > 0 ? args.desiredSize : fromSpec > 0 ? fromSpec : null;
    const metaDir = emptyDirMetaDir(this.dir, basename(this.dir));
    const ready = await isReady(metaDir);
    switch (this.medium) {
      case '': {
        const created = await ensureDir(this.dir, EMPTY_DIR_MODE, EMPTY_DIR_PARENT_MODE);
        if (ready && !created) {
          this.sizeLimitBytes = limit;
          return;
        }
        // A ready file without its directory is stale: the directory is new, the file written again.
        break;
      }
      case 'Memory': {
        const size = args.desiredSize !== null && args.desiredSize > 0 ? args.desiredSize : this.memorySize(fromSpec > 0 ? fromSpec : null);
        if (ready && (await mountsAt(this.removal.mounter, this.dir)).at(-1)?.fsType === 'tmpfs') {
          this.sizeLimitBytes = size;
          return;
        }
        await ensureTmpfs(this.removal, this.dir, size === null ? [] : [`size=${size}`]);
        this.sizeLimitBytes = size;
        await setReady(metaDir);
        return;
      }
      default:
        throw new VolumeSetupError(`unknown storage medium "${this.medium}"`);
    }
    this.sizeLimitBytes = limit;
    await setReady(metaDir);
  }
}
