/**
 * Reconstruction helpers (kubelet `reconciler/reconstruct_common.go`): finding the volume
 * directories under `<root>/pods/<uid>/{volumes,volumeDevices}/<escaped plugin>/<name>` and
 * rebuilding one pod volume from its directory with its plugin. The flow that uses them (the
 * scan at start, node status, the cleanup of volumes that failed) is in reconstruct.ts.
 *
 * Beyond the kubelet, plugins that keep node-global state (DeviceMountReconstructablePlugin) also
 * list the volumes they may have attached or device-mounted; those no pod volume refers to enter
 * the actual state with no pods (see {@link addReconstructedDeviceVolumes}).
 */
import { join } from 'node:path';
import {
  DefaultKubeletVolumeDevicesDirName,
  DefaultKubeletVolumesDirName,
} from '../../kubelet-constants.ts';
import type { Pod } from '../../volume/k8s-types.ts';
import type { Logger } from '../../volume/logger.ts';
import {
  isDeviceMountReconstructablePlugin,
  type BlockVolumeMapper,
  type DeviceMounter,
  type Mounter,
  type ReconstructedDeviceVolume,
  type VolumePluginMgr,
} from '../../volume/plugins.ts';
import { specName, type Spec } from '../../volume/spec.ts';
import { errorMessage } from '../../volume/errors.ts';
import {
  podUID,
  uniquePodName,
  uniqueVolumeNameFromPlugin,
  uniqueVolumeNameWithPod,
  unescapePluginName,
  type NodeName,
  type PluginName,
  type UniquePodName,
  type UniqueVolumeName,
  type VolumeMode,
} from '../../volume/types.ts';
import { goQuote } from '../../volume/util/go-format.ts';
import type { HostFs } from '../../volume/util/host-fs.ts';
import type { ActualStateOfWorld } from '../cache/actual-state-of-world.ts';

/** One volume directory found on disk. */
export interface PodVolume {
  podName: UniquePodName;
  volumeSpecName: string;
  volumePath: string;
  pluginName: PluginName;
  volumeMode: VolumeMode;
}

/** What reconstruction rebuilt for one pod volume. */
export interface ReconstructedVolume {
  volumeName: UniqueVolumeName;
  podName: UniquePodName;
  volumeSpec: Spec;
  /** A placeholder (the inner name) until the desired state provides the real outer name. */
  outerVolumeSpecName: string;
  pod: Pod;
  volumeGidValue: string;
  devicePath: string;
  mounter: Mounter | null;
  deviceMounter: DeviceMounter | null;
  blockVolumeMapper: BlockVolumeMapper | null;
  seLinuxMountContext: string;
}

export class PodsDirUnreadableError extends Error {
  override readonly name = 'PodsDirUnreadableError';
}

export function isPodsDirUnreadableError(err: unknown): err is PodsDirUnreadableError {
  return err instanceof PodsDirUnreadableError;
}

/**
 * `fn` over `items` with at most `limit` calls running at once; results in item order. `fn`
 * must not reject (outcomes are values).
 */
export async function mapConcurrently<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** Pod directories listed at once by {@link getVolumesFromPodDir}. */
const podDirConcurrency = 64;

/**
 * `getVolumesFromPodDir`: lists every `<podUID>/{volumes,volumeDevices}/<plugin>/<entry>` without
 * stat-ing the entries. Throws {@link PodsDirUnreadableError} when `pods/` itself cannot be read.
 */
export async function getVolumesFromPodDir(podsDir: string, fs: HostFs): Promise<PodVolume[]> {
  let pods;
  try {
    pods = await fs.readDir(podsDir);
  } catch (err) {
    throw new PodsDirUnreadableError(`failed to read pods dir ${goQuote(podsDir)}: ${errorMessage(err)}`);
  }
  // Pods are listed concurrently for a HostFs whose reads wait (the agent's lists synchronously,
  // see nodeHostFs), the result kept in pods/ order.
  const perPod = await mapConcurrently(pods, podDirConcurrency, async (pod) => {
    const out: PodVolume[] = [];
    if (!pod.isDirectory) return out;
    const podDir = join(podsDir, pod.name);
    const modes: [string, VolumeMode][] = [
      [DefaultKubeletVolumesDirName, 'Filesystem'],
      [DefaultKubeletVolumeDevicesDirName, 'Block'],
    ];
    for (const [dirName, volumeMode] of modes) {
      const volumesDir = join(podDir, dirName);
      let pluginDirs;
      try {
        pluginDirs = await fs.readDir(volumesDir);
      } catch {
        continue; // The directory does not exist for this pod.
      }
      for (const pluginDir of pluginDirs) {
        if (!pluginDir.isDirectory) continue;
        let entries;
        try {
          entries = await fs.readDir(join(volumesDir, pluginDir.name));
        } catch {
          continue;
        }
        for (const entry of entries) {
          out.push({
            podName: uniquePodName(pod.name),
            volumeSpecName: entry.name,
            volumePath: join(volumesDir, pluginDir.name, entry.name),
            pluginName: unescapePluginName(pluginDir.name),
            volumeMode,
          });
        }
      }
    }
    return out;
  });
  return perPod.flat();
}

/**
 * `reconstructVolume`: asks the plugin (by name) to rebuild the spec from disk, then names the
 * volume the way the desired state would (spec-derived when a device-mountable or attachable
 * plugin claims the spec, pod-derived otherwise). Throws on any failure.
 */
export async function reconstructVolume(volume: PodVolume, pluginMgr: VolumePluginMgr): Promise<ReconstructedVolume> {
  const plugin = pluginMgr.findPluginByName(volume.pluginName);
  const pod: Pod = { metadata: { name: '', uid: volume.podName }, spec: { containers: [] } };
  const mapperPlugin = pluginMgr.findMapperPluginByName(volume.pluginName);
  const uid = podUID(volume.podName);
  if (volume.volumeMode === 'Block' && mapperPlugin === null) {
    throw new Error(
      `could not find block volume plugin ${goQuote(volume.pluginName)} (spec.Name: ${goQuote(volume.volumeSpecName)}) pod ${goQuote(volume.podName)} (UID: ${goQuote(uid)})`,
    );
  }
  let spec: Spec;
  let seLinuxMountContext = '';
  if (volume.volumeMode === 'Block' && mapperPlugin !== null) {
    spec = await mapperPlugin.constructBlockVolumeSpec(uid, volume.volumeSpecName, volume.volumePath);
  } else {
    const reconstructed = await plugin.constructVolumeSpec(volume.volumeSpecName, volume.volumePath);
    spec = reconstructed.spec;
    seLinuxMountContext = reconstructed.seLinuxMountContext;
  }

  // Plugins are found by spec here, not by name: only the spec tells whether this particular
  // volume is attachable (e.g. a CSI driver without attach, or an ephemeral inline volume).
  const deviceMountablePlugin = pluginMgr.findDeviceMountablePluginBySpec(spec);
  const needsNameFromSpec = deviceMountablePlugin !== null || pluginMgr.findAttachablePluginBySpec(spec) !== null;
  const volumeName = needsNameFromSpec
    ? uniqueVolumeNameFromPlugin(plugin.name, plugin.getVolumeName(spec))
    : uniqueVolumeNameWithPod(plugin.name, volume.podName, specName(spec));

  let mounter: Mounter | null = null;
  let deviceMounter: DeviceMounter | null = null;
  let blockVolumeMapper: BlockVolumeMapper | null = null;
  if (volume.volumeMode === 'Block' && mapperPlugin !== null) {
    try {
      blockVolumeMapper = mapperPlugin.newBlockVolumeMapper(spec, pod);
    } catch (err) {
      throw new Error(
        `reconstructVolume.NewBlockVolumeMapper failed for volume ${goQuote(volume.volumeSpecName)} (spec.Name: ${goQuote(volume.volumeSpecName)}) pod ${goQuote(volume.podName)} (UID: ${goQuote(uid)}) with: ${errorMessage(err)}`,
      { cause: err },
    );
    }
  } else {
    try {
      mounter = plugin.newMounter(spec, pod);
    } catch (err) {
      throw new Error(
        `reconstructVolume.NewMounter failed for volume ${goQuote(volume.volumeSpecName)} (spec.Name: ${goQuote(volume.volumeSpecName)}) pod ${goQuote(volume.podName)} (UID: ${goQuote(uid)}) with: ${errorMessage(err)}`,
      { cause: err },
    );
    }
    if (deviceMountablePlugin !== null) deviceMounter = deviceMountablePlugin.newDeviceMounter();
  }
  return {
    volumeName,
    podName: volume.podName,
    volumeSpec: spec,
    outerVolumeSpecName: volume.volumeSpecName,
    pod,
    volumeGidValue: '',
    devicePath: '',
    mounter,
    deviceMounter,
    blockVolumeMapper,
    seLinuxMountContext,
  };
}

/** A volume a plugin listed from its node-global state, under the name the desired state gives it. */
export interface DeviceOnlyVolume extends ReconstructedDeviceVolume {
  volumeName: UniqueVolumeName;
  pluginName: PluginName;
}

/**
 * Asks every plugin that implements `reconstructDeviceVolumes` for the volumes it may have
 * attached or device-mounted, named as the desired state names them (spec-derived). A plugin that
 * fails is logged and skipped: its volumes stay as they are on the node, as before this step.
 */
export async function reconstructDeviceVolumes(pluginMgr: VolumePluginMgr, log: Logger): Promise<DeviceOnlyVolume[]> {
  const out: DeviceOnlyVolume[] = [];
  for (const plugin of pluginMgr.list()) {
    if (!isDeviceMountReconstructablePlugin(plugin)) continue;
    let found: ReconstructedDeviceVolume[];
    try {
      found = await plugin.reconstructDeviceVolumes();
    } catch (err) {
      log.error(`Could not reconstruct device mounts of plugin ${goQuote(plugin.name)}: ${errorMessage(err)}`);
      continue;
    }
    for (const v of found) {
      try {
        out.push({ ...v, pluginName: plugin.name, volumeName: uniqueVolumeNameFromPlugin(plugin.name, plugin.getVolumeName(v.spec)) });
      } catch (err) {
        log.error(`Could not name reconstructed device volume ${goQuote(specName(v.spec))} of plugin ${goQuote(plugin.name)}: ${errorMessage(err)}`);
      }
    }
  }
  return out;
}

/**
 * Adds the device-only volumes that are not in `asw` yet (no pod volume directory refers to them)
 * as attach-Uncertain volumes with no pods: device mount Uncertain when a device mount was started,
 * and reading as not attached when the attach itself is uncertain. Returns their names, which, like
 * every reconstructed volume, wait for their attachability to be resolved (node status, or the
 * plugin in standalone mode) before anything is unmounted. A volume a pod volume refers to is
 * already there with its device Uncertain and is left alone.
 */
export function addReconstructedDeviceVolumes(
  asw: ActualStateOfWorld,
  nodeName: NodeName,
  volumes: readonly DeviceOnlyVolume[],
  log: Logger,
): UniqueVolumeName[] {
  const names: UniqueVolumeName[] = [];
  for (const v of volumes) {
    if (asw.volumeExists(v.volumeName)) continue;
    try {
      asw.addAttachUncertainReconstructedVolume(v.volumeName, v.spec, nodeName, '');
      if (v.deviceMountPath !== '') asw.markDeviceAsUncertain(v.volumeName, '', v.deviceMountPath, v.seLinuxMountContext);
      if (v.attachState === 'uncertain') asw.markVolumeAttachUncertainViaReconstruction(v.volumeName);
    } catch (err) {
      log.error(`Could not add device volume information to actual state of world: ${errorMessage(err)}`, { volumeName: v.volumeName });
      continue;
    }
    log.info('Reconstructed a volume no pod directory refers to', {
      volumeName: v.volumeName,
      deviceMountPath: v.deviceMountPath,
      attachState: v.attachState,
    });
    names.push(v.volumeName);
  }
  return names;
}
