/**
 * The volume manager's own metric (kubelet `volumemanager/metrics/metrics.go`): the number of
 * volumes in each world by plugin, read at scrape time as `volume_manager_total_volumes`. The
 * engine counts; the caller owns the collector (the agent's Prometheus registry).
 */
import { fullyQualifiedPluginName } from '../operationexecutor/operation-generator.ts';
import type { VolumePluginMgr } from '../volume/plugins.ts';
import type { ActualStateOfWorld } from './cache/actual-state-of-world.ts';
import type { DesiredStateOfWorld } from './cache/desired-state-of-world.ts';

/** `plugin_name` when the plugin of a volume cannot be determined (kubelet `pluginNameNotAvailable`). */
export const pluginNameNotAvailable = 'N/A';

/** The `state` label values of `volume_manager_total_volumes` (kubelet `actualStateKey`, `desiredStateKey`). */
export const totalVolumesStates = {
  actual: 'actual_state_of_world',
  desired: 'desired_state_of_world',
} as const;

/** Counts by state label, then by fully qualified plugin name. */
export type VolumeCount = Map<string, Map<string, number>>;

/**
 * `getVolumeCount`: mounted (volume, pod) pairs of the actual state and (volume, pod) pairs of
 * the desired state, by plugin. A desired volume whose plugin cannot be found counts under
 * {@link pluginNameNotAvailable}, as in the kubelet.
 */
export function getVolumeCount(dsw: DesiredStateOfWorld, asw: ActualStateOfWorld, pluginMgr: VolumePluginMgr): VolumeCount {
  const counts: VolumeCount = new Map();
  const add = (state: string, plugin: string): void => {
    let byPlugin = counts.get(state);
    if (byPlugin === undefined) {
      byPlugin = new Map();
      counts.set(state, byPlugin);
    }
    byPlugin.set(plugin, (byPlugin.get(plugin) ?? 0) + 1);
  };
  for (const mounted of asw.getMountedVolumes()) {
    const name = fullyQualifiedPluginName(mounted.pluginName, mounted.volumeSpec);
    add(totalVolumesStates.actual, name === '' ? pluginNameNotAvailable : name);
  }
  for (const toMount of dsw.getVolumesToMount()) {
    let name = pluginNameNotAvailable;
    try {
      name = fullyQualifiedPluginName(pluginMgr.findPluginBySpec(toMount.volumeSpec).name, toMount.volumeSpec);
    } catch {
      // As the kubelet: a volume whose plugin cannot be found counts under "N/A".
    }
    add(totalVolumesStates.desired, name);
  }
  return counts;
}
