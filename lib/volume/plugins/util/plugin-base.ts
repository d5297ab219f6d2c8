/**
 * What every in-tree plugin shares: the host from `init`, the dependencies from the
 * constructor, the pod volume dir of a (pod, spec name), and the capability answers that are
 * the same for all of them (no mount options, no SELinux context mounts, no periodic remount;
 * subclasses override what differs). None of these plugins is attachable or device-mountable, so
 * the desired state names their volumes `<plugin>/<podUID>-<spec name>`.
 */
import { dirname } from 'node:path';
import type { Clock } from '../../../clock/clock.ts';
import { realClock } from '../../../clock/clock.ts';
import type { Pod } from '../../k8s-types.ts';
import type { VolumeHost } from '../../plugins.ts';
import type { Spec } from '../../spec.ts';
import { escapePluginName, type PluginName, type PodUID } from '../../types.ts';
import { PluginNotInitializedError, VolumeSetupError } from './errors.ts';
import { emptyDirMemorySizeBytes } from './memory-size.ts';
import type { VolumePluginDeps } from './plugin-deps.ts';
import type { RemovalContext } from './volume-dir.ts';

/** The UID of a pod; plugins cannot name a volume dir without it. */
export function podUIDOf(pod: Pod): PodUID {
  const uid = pod.metadata.uid;
  if (uid === undefined || uid === '') {
    throw new VolumeSetupError(`pod ${pod.metadata.namespace ?? ''}/${pod.metadata.name} has no metadata.uid`);
  }
  return uid as PodUID;
}

/** The namespace objects of a pod are looked up in (`default` when the pod does not say). */
export function podNamespace(pod: Pod): string {
  return pod.metadata.namespace ?? 'default';
}

export abstract class InTreePluginBase {
  abstract readonly name: PluginName;
  private host: VolumeHost | null = null;

  constructor(protected readonly deps: VolumePluginDeps) {}

  init(host: VolumeHost): void {
    this.host = host;
  }

  requiresRemount(_spec: Spec): boolean {
    return false;
  }

  supportsMountOption(): boolean {
    return false;
  }

  supportsSELinuxContextMount(_spec: Spec): boolean {
    return false;
  }

  /** The size of the memory-backed emptyDir of `pod` (or the one a volume wraps), computed at SetUp. */
  protected memoryVolumeSize(pod: Pod, sizeLimitBytes: number | null = null): number | null {
    return emptyDirMemorySizeBytes(this.deps.nodeAllocatableMemoryBytes?.() ?? null, sizeLimitBytes, pod);
  }

  protected get clock(): Clock {
    return this.deps.clock ?? realClock;
  }

  protected requireHost(): VolumeHost {
    if (this.host === null) throw new PluginNotInitializedError(this.name);
    return this.host;
  }

  /** `<root>/pods/<uid>/volumes/<escaped plugin name>/<spec name>`. */
  protected volumeDir(podUID: PodUID, specName: string): string {
    return this.requireHost().getPodVolumeDir(podUID, escapePluginName(this.name), specName);
  }

  /** The mounter and the kubelet root dir, for mounts and removals. */
  protected removalContext(): RemovalContext {
    return { mounter: this.deps.mounter, rootDir: this.deps.rootDir ?? dirname(this.requireHost().getPodsDir()) };
  }
}
