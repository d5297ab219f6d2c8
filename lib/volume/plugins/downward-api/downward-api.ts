/**
 * `kubernetes.io/downward-api` (kubelet `pkg/volume/downwardapi`): facts about the pod as files,
 * written by the atomic writer onto a tmpfs (the kubelet wraps a Memory emptyDir here too).
 * `fieldRef` gives metadata.name/namespace/uid/labels/annotations (labels and annotations as
 * sorted `key="value"` lines); `resourceFieldRef` gives a container's limits and requests
 * divided by `divisor`. RequiresRemount: the periodic SetUp rewrites the files, reading the pod
 * again from the object getter when it can (`getPodByUID`), so label and annotation changes
 * reach the volume.
 *
 * All items are evaluated; their errors are reported together (apimachinery's aggregate
 * format) and then nothing is written.
 */
import { availableParallelism, totalmem } from 'node:os';
import { posix } from 'node:path';
import type { DownwardAPIVolumeFile, Pod, ResourceList } from '../../k8s-types.ts';
import type { Mounter, ReconstructedVolume, Unmounter, VolumePlugin } from '../../plugins.ts';
import { specFromVolume, specName, type Spec } from '../../spec.ts';
import { pluginName, type PodUID } from '../../types.ts';
import type { Payload } from '../util/atomic-writer.ts';
import { AtomicWriterVolumeMounter, AtomicWriterVolumeUnmounter } from '../util/atomic-writer-volume.ts';
import { throwAggregate, UnsupportedSpecError } from '../util/errors.ts';
import { DEFAULT_FILE_MODE } from '../util/object-data.ts';
import { InTreePluginBase, podUIDOf } from '../util/plugin-base.ts';
import type { VolumePluginDeps } from '../util/plugin-deps.ts';
import { byteOrder, extractFieldPathAsString } from './field-path.ts';
import { extractResourceValueByContainerName } from './resource-field.ts';

export const DOWNWARD_API_PLUGIN_NAME = pluginName('kubernetes.io/downward-api');

/** This machine's CPUs and memory, standing in for node allocatable when none is configured. */
export function defaultNodeAllocatable(): ResourceList {
  return { cpu: String(availableParallelism()), memory: String(totalmem()) };
}

/** The kubelet's `sortLines`: the lines of a value in Go string order. */
function sortLines(value: string): string {
  return value.split('\n').sort(byteOrder).join('\n');
}

/**
 * The kubelet's `downwardapi.CollectData`: one file per item (path cleaned, the item's mode or
 * `defaultMode`). Throws the items' errors together.
 */
export function collectDownwardAPIData(items: readonly DownwardAPIVolumeFile[], pod: Pod, defaultMode: number, allocatable: ResourceList): Payload {
  const payload: Payload = new Map();
  const errors: Error[] = [];
  for (const item of items) {
    let text = '';
    try {
      if (item.fieldRef !== undefined) text = sortLines(extractFieldPathAsString(pod, item.fieldRef.fieldPath));
      else if (item.resourceFieldRef !== undefined) text = sortLines(extractResourceValueByContainerName(item.resourceFieldRef, pod, allocatable));
    } catch (err) {
      errors.push(err instanceof Error ? err : new Error(String(err)));
    }
    payload.set(posix.normalize(item.path), { data: Buffer.from(text, 'utf8'), mode: item.mode ?? defaultMode });
  }
  throwAggregate(errors);
  return payload;
}

/** The pod as the object getter has it now, else the pod the mounter was made for. */
export function currentPod(deps: VolumePluginDeps, pod: Pod): Pod {
  const uid = pod.metadata.uid;
  return (uid === undefined ? undefined : deps.objects?.getPodByUID?.(uid)) ?? pod;
}

export class DownwardAPIPlugin extends InTreePluginBase implements VolumePlugin {
  readonly name = DOWNWARD_API_PLUGIN_NAME;

  canSupport(spec: Spec): boolean {
    return spec.volume?.downwardAPI !== undefined;
  }

  getVolumeName(spec: Spec): string {
    if (spec.volume?.downwardAPI === undefined) throw new UnsupportedSpecError('Spec does not reference a DownwardAPI volume type');
    return specName(spec);
  }

  override requiresRemount(_spec: Spec): boolean {
    return true;
  }

  newMounter(spec: Spec, pod: Pod): Mounter {
    const source = spec.volume?.downwardAPI ?? {};
    const volumeName = specName(spec);
    return new AtomicWriterVolumeMounter(
      { dir: this.volumeDir(podUIDOf(pod), volumeName), medium: 'memory', memorySize: () => this.memoryVolumeSize(pod), removal: this.removalContext(), clock: this.clock },
      () =>
        collectDownwardAPIData(
          source.items ?? [],
          currentPod(this.deps, pod),
          source.defaultMode ?? DEFAULT_FILE_MODE,
          this.deps.nodeAllocatable ?? defaultNodeAllocatable(),
        ),
    );
  }

  newUnmounter(name: string, podUID: PodUID): Unmounter {
    return new AtomicWriterVolumeUnmounter({ dir: this.volumeDir(podUID, name), removal: this.removalContext(), clock: this.clock });
  }

  /** `{name, downwardAPI: {}}`, as upstream (the items are not on disk). */
  constructVolumeSpec(volumeName: string, _volumePath: string): Promise<ReconstructedVolume> {
    return Promise.resolve({ spec: specFromVolume({ name: volumeName, downwardAPI: {} }), seLinuxMountContext: '' });
  }
}
