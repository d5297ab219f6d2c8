/**
 * `kubernetes.io/projected` (kubelet `pkg/volume/projected`): secrets, configMaps, downward API
 * items and service account tokens merged into one volume, written by the atomic writer onto a
 * tmpfs. Each source follows the rules of its own plugin (items, modes, optional, the kubelet's
 * error texts); `defaultMode` of the projected volume applies to all of them. Errors of all
 * sources are reported together (apimachinery's aggregate format) and then nothing is written.
 * RequiresRemount: the periodic SetUp writes changed sources again.
 *
 * Service account tokens (mode 0600 when fsUser or fsGroup is set, as upstream, else
 * `defaultMode`): with a token manager (`deps.serviceAccountTokens`, the agent on an API server)
 * a bound token from the TokenRequest API for the pod's service account, with the projection's
 * audience (none: the API server's audiences) and expirationSeconds, bound to the pod, as
 * kubernetes/kubernetes pkg/volume/projected/projected.go@v1.34. A failed request fails SetUp
 * with the manager's error, and nothing is rewritten (the token file already written stays).
 * Without a manager (manifest source: no API server can mint a token) the file holds
 * {@link SERVICE_ACCOUNT_TOKEN_PLACEHOLDER}; anything that authenticates with it is rejected.
 * TearDown forgets the pod's tokens (`deleteServiceAccountToken`).
 */
import type { Pod, VolumeProjection } from '../../k8s-types.ts';
import type { Mounter, MounterArgs, ReconstructedVolume, Unmounter, VolumePlugin } from '../../plugins.ts';
import { specFromVolume, specName, type Spec } from '../../spec.ts';
import { pluginName, type PodUID } from '../../types.ts';
import { getConfigMapForVolume, makeConfigMapPayload } from '../configmap/configmap.ts';
import { collectDownwardAPIData, currentPod, defaultNodeAllocatable } from '../downward-api/downward-api.ts';
import { getSecretForVolume, makeSecretPayload } from '../secret/secret.ts';
import type { Payload } from '../util/atomic-writer.ts';
import { AtomicWriterVolumeMounter, AtomicWriterVolumeUnmounter } from '../util/atomic-writer-volume.ts';
import { throwAggregate, UnsupportedSpecError } from '../util/errors.ts';
import { DEFAULT_FILE_MODE } from '../util/object-data.ts';
import { InTreePluginBase, podNamespace, podUIDOf } from '../util/plugin-base.ts';

export const PROJECTED_PLUGIN_NAME = pluginName('kubernetes.io/projected');

/** The content of a projected service account token file without a token manager: no token can be minted without an API server. */
export const SERVICE_ACCOUNT_TOKEN_PLACEHOLDER =
  'volumescope-placeholder: no service account token was minted (VolumeScope cannot call the TokenRequest API)\n';

/**
 * The service account of a pod without `spec.serviceAccountName`. The API server's
 * ServiceAccount admission plugin sets it on every pod it admits, so the kubelet passes the field
 * as is; pods the agent reads are defaulted here as that plugin would.
 */
export const DEFAULT_SERVICE_ACCOUNT_NAME = 'default';

type ServiceAccountTokenProjection = NonNullable<VolumeProjection['serviceAccountToken']>;

export class ProjectedPlugin extends InTreePluginBase implements VolumePlugin {
  readonly name = PROJECTED_PLUGIN_NAME;

  canSupport(spec: Spec): boolean {
    return spec.volume?.projected !== undefined;
  }

  getVolumeName(spec: Spec): string {
    if (spec.volume?.projected === undefined) throw new UnsupportedSpecError('Spec does not reference a projected volume type');
    return specName(spec);
  }

  override requiresRemount(_spec: Spec): boolean {
    return true;
  }

  newMounter(spec: Spec, pod: Pod): Mounter {
    const volumeName = specName(spec);
    return new AtomicWriterVolumeMounter(
      { dir: this.volumeDir(podUIDOf(pod), volumeName), medium: 'memory', memorySize: () => this.memoryVolumeSize(pod), removal: this.removalContext(), clock: this.clock },
      (args) => this.collectData(spec, pod, args),
    );
  }

  newUnmounter(name: string, podUID: PodUID): Unmounter {
    const tokens = this.deps.serviceAccountTokens;
    return new AtomicWriterVolumeUnmounter({
      dir: this.volumeDir(podUID, name),
      removal: this.removalContext(),
      clock: this.clock,
      // The kubelet's projectedVolumeUnmounter.TearDownAt: the pod's tokens leave the cache once the volume is gone.
      ...(tokens === undefined ? {} : {
            afterTearDown: () => {
              tokens.deleteServiceAccountToken(podUID);
            },
          }),
    });
  }

  /** `{name, projected: {}}`, as upstream (the sources are not on disk). */
  constructVolumeSpec(volumeName: string, _volumePath: string): Promise<ReconstructedVolume> {
    return Promise.resolve({ spec: specFromVolume({ name: volumeName, projected: {} }), seLinuxMountContext: '' });
  }

  /** The kubelet's `collectData`: every source in order, later files overriding earlier ones at the same path. */
  private async collectData(spec: Spec, pod: Pod, args: MounterArgs): Promise<Payload> {
    const source = spec.volume?.projected ?? {};
    const volumeName = specName(spec);
    const defaultMode = source.defaultMode ?? DEFAULT_FILE_MODE;
    const namespace = podNamespace(pod);
    const payload: Payload = new Map();
    const errors: Error[] = [];
    const add = async (part: () => Payload | Promise<Payload>) => {
      try {
        for (const [path, file] of await part()) payload.set(path, file);
      } catch (err) {
        errors.push(err instanceof Error ? err : new Error(String(err)));
      }
    };
    for (const projection of source.sources ?? []) {
      const { secret, configMap, downwardAPI, serviceAccountToken } = projection;
      if (secret !== undefined) {
        const optional = secret.optional === true;
        await add(async () => makeSecretPayload(secret.items, await getSecretForVolume(this.deps, namespace, secret.name ?? '', optional, volumeName), defaultMode, optional));
      } else if (configMap !== undefined) {
        const optional = configMap.optional === true;
        await add(async () =>
          makeConfigMapPayload(configMap.items, await getConfigMapForVolume(this.deps, namespace, configMap.name ?? '', optional, volumeName), defaultMode, optional),
        );
      } else if (downwardAPI !== undefined) {
        await add(() =>
          collectDownwardAPIData(downwardAPI.items ?? [], currentPod(this.deps, pod), defaultMode, this.deps.nodeAllocatable ?? defaultNodeAllocatable()),
        );
      } else if (serviceAccountToken !== undefined) {
        // When fsUser or fsGroup is set the kubelet writes 0600 and relies on ownership changes.
        const mode = args.fsUser !== undefined || args.fsGroup !== undefined ? 0o600 : defaultMode;
        await add(async () => new Map([[serviceAccountToken.path, { data: Buffer.from(await this.serviceAccountToken(pod, serviceAccountToken), 'utf8'), mode }]]));
      }
    }
    throwAggregate(errors);
    return payload;
  }

  /** The token for one `serviceAccountToken` projection (the placeholder without a token manager). */
  private async serviceAccountToken(pod: Pod, projection: ServiceAccountTokenProjection): Promise<string> {
    const tokens = this.deps.serviceAccountTokens;
    if (tokens === undefined) return SERVICE_ACCOUNT_TOKEN_PLACEHOLDER;
    const audience = projection.audience ?? '';
    const account = pod.spec.serviceAccountName ?? '';
    const tr = await tokens.getServiceAccountToken(podNamespace(pod), account === '' ? DEFAULT_SERVICE_ACCOUNT_NAME : account, {
      spec: {
        audiences: audience === '' ? [] : [audience],
        ...(projection.expirationSeconds === undefined ? {} : { expirationSeconds: projection.expirationSeconds }),
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata.name, uid: podUIDOf(pod) },
      },
    });
    return tr.status.token;
  }
}
