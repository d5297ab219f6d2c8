/**
 * `kubernetes.io/secret` (kubelet `pkg/volume/secret`): the keys of a Secret as files, written
 * by the atomic writer onto a tmpfs so that secret data never reaches a disk (under the
 * unprivileged mounter the tmpfs is a plain directory: VolumeScope cannot do better without
 * privileges). `data` values are base64 as in the API; `stringData` values (which a manifest may
 * carry, and the API server would have merged into `data`) are plain text and win over `data`.
 * RequiresRemount: the periodic SetUp writes a changed Secret again.
 *
 * Errors, as the kubelet words them: `secret "x" not found` (not optional),
 * `references non-existent secret key: k`. No error or log line carries secret data.
 */
import type { KeyToPath, Pod, Secret } from '../../k8s-types.ts';
import type { Mounter, ReconstructedVolume, Unmounter, VolumePlugin } from '../../plugins.ts';
import { specFromVolume, specName, type Spec } from '../../spec.ts';
import { pluginName, type PodUID } from '../../types.ts';
import type { Payload } from '../util/atomic-writer.ts';
import { AtomicWriterVolumeMounter, AtomicWriterVolumeUnmounter } from '../util/atomic-writer-volume.ts';
import { NonExistentKeyError, ObjectNotFoundError, UnsupportedSpecError, VolumeSetupError } from '../util/errors.ts';
import { decodeBase64Value, DEFAULT_FILE_MODE } from '../util/object-data.ts';
import { InTreePluginBase, podNamespace, podUIDOf } from '../util/plugin-base.ts';
import type { VolumePluginDeps } from '../util/plugin-deps.ts';

export const SECRET_PLUGIN_NAME = pluginName('kubernetes.io/secret');

/** The decoded values of a Secret: `data` (base64) overlaid with `stringData` (plain). */
function secretValues(secret: Secret): Map<string, Buffer> {
  const values = new Map<string, Buffer>();
  for (const [key, value] of Object.entries(secret.data ?? {})) {
    values.set(key, decodeBase64Value(value, `secret "${secret.metadata.name}" data key "${key}"`));
  }
  for (const [key, value] of Object.entries(secret.stringData ?? {})) values.set(key, Buffer.from(value, 'utf8'));
  return values;
}

/**
 * The kubelet's `secret.MakePayload`: files for `items` (or every key), each with the item's
 * mode or `defaultMode`. Throws {@link NonExistentKeyError} for a missing key unless `optional`.
 */
export function makeSecretPayload(items: readonly KeyToPath[] | undefined, secret: Secret, defaultMode: number, optional: boolean): Payload {
  const values = secretValues(secret);
  const payload: Payload = new Map();
  if (items === undefined || items.length === 0) {
    for (const [key, data] of values) payload.set(key, { data, mode: defaultMode });
    return payload;
  }
  for (const item of items) {
    const data = values.get(item.key);
    if (data === undefined) {
      if (optional) continue;
      throw new NonExistentKeyError('secret', item.key);
    }
    payload.set(item.path, { data, mode: item.mode ?? defaultMode });
  }
  return payload;
}

/** Fetches a Secret for a volume: the object, an empty one when missing and optional, or `secret "x" not found`. */
export async function getSecretForVolume(deps: VolumePluginDeps, namespace: string, name: string, optional: boolean, volumeName: string): Promise<Secret> {
  if (deps.objects === undefined) {
    throw new VolumeSetupError(`cannot setup secret volume ${volumeName} because kube client is not configured`);
  }
  // A getter that reads lazily answers once its first read ended: never "not found" for "not read yet".
  const secret = deps.objects.awaitSecret !== undefined ? await deps.objects.awaitSecret(namespace, name) : deps.objects.getSecret(namespace, name);
  if (secret !== undefined) return secret;
  if (optional) return { metadata: { name, namespace } };
  throw new ObjectNotFoundError('secret', name);
}

export class SecretPlugin extends InTreePluginBase implements VolumePlugin {
  readonly name = SECRET_PLUGIN_NAME;

  canSupport(spec: Spec): boolean {
    return spec.volume?.secret !== undefined;
  }

  /** The Secret's name, as upstream. */
  getVolumeName(spec: Spec): string {
    const source = spec.volume?.secret;
    if (source === undefined) throw new UnsupportedSpecError('Spec does not reference a Secret volume type');
    return source.secretName ?? '';
  }

  override requiresRemount(_spec: Spec): boolean {
    return true;
  }

  newMounter(spec: Spec, pod: Pod): Mounter {
    const source = spec.volume?.secret ?? {};
    const volumeName = specName(spec);
    const optional = source.optional === true;
    return new AtomicWriterVolumeMounter(
      { dir: this.volumeDir(podUIDOf(pod), volumeName), medium: 'memory', memorySize: () => this.memoryVolumeSize(pod), removal: this.removalContext(), clock: this.clock },
      async () => {
        const secret = await getSecretForVolume(this.deps, podNamespace(pod), source.secretName ?? '', optional, volumeName);
        return makeSecretPayload(source.items, secret, source.defaultMode ?? DEFAULT_FILE_MODE, optional);
      },
    );
  }

  newUnmounter(name: string, podUID: PodUID): Unmounter {
    return new AtomicWriterVolumeUnmounter({ dir: this.volumeDir(podUID, name), removal: this.removalContext(), clock: this.clock });
  }

  /** `{name, secret: {secretName: <volumeName>}}`, as upstream (the Secret's name is not on disk). */
  constructVolumeSpec(volumeName: string, _volumePath: string): Promise<ReconstructedVolume> {
    return Promise.resolve({ spec: specFromVolume({ name: volumeName, secret: { secretName: volumeName } }), seLinuxMountContext: '' });
  }
}
