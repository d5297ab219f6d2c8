/**
 * `kubernetes.io/configmap` (kubelet `pkg/volume/configmap`): the keys of a ConfigMap as files,
 * written by the atomic writer into a plain directory (the kubelet's configMap volume wraps a
 * disk-backed emptyDir). `items` select keys and name their paths and modes; without `items`
 * every key of `data` and `binaryData` becomes a file named after it. RequiresRemount: the
 * periodic SetUp writes a changed ConfigMap again.
 *
 * Errors, as the kubelet words them: `configmap "x" not found` (not optional),
 * `configmap references non-existent config key: k` (an item's key is missing and the volume is
 * not optional). A missing optional ConfigMap gives an empty volume; a missing key of an
 * optional one is skipped.
 */
import type { ConfigMap, KeyToPath, Pod } from '../../k8s-types.ts';
import type { ReconstructedVolume, Unmounter, VolumePlugin, Mounter } from '../../plugins.ts';
import { specFromVolume, specName, type Spec } from '../../spec.ts';
import { pluginName, type PodUID } from '../../types.ts';
import type { Payload } from '../util/atomic-writer.ts';
import { AtomicWriterVolumeMounter, AtomicWriterVolumeUnmounter } from '../util/atomic-writer-volume.ts';
import { NonExistentKeyError, ObjectNotFoundError, UnsupportedSpecError, VolumeSetupError } from '../util/errors.ts';
import { decodeBase64Value, DEFAULT_FILE_MODE, ownValue } from '../util/object-data.ts';
import { InTreePluginBase, podNamespace, podUIDOf } from '../util/plugin-base.ts';
import type { VolumePluginDeps } from '../util/plugin-deps.ts';

export const CONFIGMAP_PLUGIN_NAME = pluginName('kubernetes.io/configmap');

/**
 * The kubelet's `configmap.MakePayload`: files for `items` (or every key), each with the item's
 * mode or `defaultMode`. Throws {@link NonExistentKeyError} for a missing key unless `optional`.
 */
export function makeConfigMapPayload(items: readonly KeyToPath[] | undefined, configMap: ConfigMap, defaultMode: number, optional: boolean): Payload {
  const what = (key: string) => `configmap "${configMap.metadata.name}" binaryData key "${key}"`;
  const payload: Payload = new Map();
  if (items === undefined || items.length === 0) {
    for (const [key, value] of Object.entries(configMap.data ?? {})) payload.set(key, { data: Buffer.from(value, 'utf8'), mode: defaultMode });
    for (const [key, value] of Object.entries(configMap.binaryData ?? {})) payload.set(key, { data: decodeBase64Value(value, what(key)), mode: defaultMode });
    return payload;
  }
  for (const item of items) {
    const text = ownValue(configMap.data, item.key);
    const binary = ownValue(configMap.binaryData, item.key);
    let data: Buffer;
    if (text !== undefined) data = Buffer.from(text, 'utf8');
    else if (binary !== undefined) data = decodeBase64Value(binary, what(item.key));
    else if (optional) continue;
    else throw new NonExistentKeyError('configmap', item.key);
    payload.set(item.path, { data, mode: item.mode ?? defaultMode });
  }
  return payload;
}

/**
 * Fetches a ConfigMap for a volume: the object, an empty one when it is missing and optional,
 * or `configmap "x" not found`.
 */
export async function getConfigMapForVolume(deps: VolumePluginDeps, namespace: string, name: string, optional: boolean, volumeName: string): Promise<ConfigMap> {
  if (deps.objects === undefined) {
    throw new VolumeSetupError(`cannot setup configMap volume ${volumeName} because kube client is not configured`);
  }
  // A getter that reads lazily answers once its first read ended: never "not found" for "not read yet".
  const configMap = deps.objects.awaitConfigMap !== undefined ? await deps.objects.awaitConfigMap(namespace, name) : deps.objects.getConfigMap(namespace, name);
  if (configMap !== undefined) return configMap;
  if (optional) return { metadata: { name, namespace } };
  throw new ObjectNotFoundError('configmap', name);
}

export class ConfigMapPlugin extends InTreePluginBase implements VolumePlugin {
  readonly name = CONFIGMAP_PLUGIN_NAME;

  canSupport(spec: Spec): boolean {
    return spec.volume?.configMap !== undefined;
  }

  /** `<spec name>/<configMap name>`, as upstream. */
  getVolumeName(spec: Spec): string {
    const source = spec.volume?.configMap;
    if (source === undefined) throw new UnsupportedSpecError('Spec does not reference a ConfigMap volume type');
    return `${specName(spec)}/${source.name ?? ''}`;
  }

  override requiresRemount(_spec: Spec): boolean {
    return true;
  }

  newMounter(spec: Spec, pod: Pod): Mounter {
    const source = spec.volume?.configMap ?? {};
    const volumeName = specName(spec);
    const optional = source.optional === true;
    return new AtomicWriterVolumeMounter(
      { dir: this.volumeDir(podUIDOf(pod), volumeName), medium: 'disk', removal: this.removalContext(), clock: this.clock },
      async () => {
        const configMap = await getConfigMapForVolume(this.deps, podNamespace(pod), source.name ?? '', optional, volumeName);
        return makeConfigMapPayload(source.items, configMap, source.defaultMode ?? DEFAULT_FILE_MODE, optional);
      },
    );
  }

  newUnmounter(name: string, podUID: PodUID): Unmounter {
    return new AtomicWriterVolumeUnmounter({ dir: this.volumeDir(podUID, name), removal: this.removalContext(), clock: this.clock });
  }

  /** `{name, configMap: {}}`: the ConfigMap's name is not on disk (upstream leaves it empty too). */
  constructVolumeSpec(volumeName: string, _volumePath: string): Promise<ReconstructedVolume> {
    return Promise.resolve({ spec: specFromVolume({ name: volumeName, configMap: {} }), seLinuxMountContext: '' });
  }
}
