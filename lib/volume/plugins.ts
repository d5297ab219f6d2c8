/**
 * Volume plugin interfaces, split as the kubelet splits them (pkg/volume/plugins.go,
 * volume.go): a VolumePlugin mounts into pods; attachable plugins attach devices to the node;
 * device-mountable plugins mount a device once per node ("global mount" / CSI stage); block
 * plugins map devices; node-expandable plugins grow file systems. Every call that may touch
 * the disk or a driver is asynchronous.
 */
import type { Pod } from './k8s-types.ts';
import type { Spec } from './spec.ts';
import type { NodeName, PluginName, PodUID } from './types.ts';

/** What a plugin may ask of its host (the kubelet's VolumeHost). */
export interface VolumeHost {
  /** `<root>/pods`. */
  getPodsDir(): string;
  /** `<root>/pods/<uid>/volumes/<escaped plugin>/<volumeName>`. */
  getPodVolumeDir(uid: PodUID, escapedPluginName: string, volumeName: string): string;
  /** `<root>/pods/<uid>/volumeDevices/<escaped plugin>`. */
  getPodVolumeDeviceDir(uid: PodUID, escapedPluginName: string): string;
  /** `<root>/plugins/<plugin>`. */
  getPluginDir(pluginName: string): string;
  getNodeName(): NodeName;
}

/** Arguments of `Mounter.SetUp`. */
export interface MounterArgs {
  fsUser?: number;
  fsGroup?: number;
  fsGroupChangePolicy?: 'OnRootMismatch' | 'Always';
  /** emptyDir size limit in bytes, or null when none applies. */
  desiredSize: number | null;
  /** `-o context=` label, or "" for none. */
  seLinuxLabel: string;
}

/** Arguments of `DeviceMounter.MountDevice`. */
export interface DeviceMounterArgs {
  fsGroup?: number;
  seLinuxLabel: string;
}

/** `volume.Volume`: something with a path inside a pod. */
export interface MountedVolumeHandle {
  /** The path the volume is (or will be) mounted at. */
  getPath(): string;
}

/** `volume.Mounter`. */
export interface Mounter extends MountedVolumeHandle {
  /** Prepares and mounts the volume at {@link getPath}. Idempotent. */
  setUp(args: MounterArgs): Promise<void>;
}

/** `volume.Unmounter`. */
export interface Unmounter extends MountedVolumeHandle {
  /** Unmounts the volume and removes its directory. Idempotent. */
  tearDown(): Promise<void>;
}

/** `volume.DeviceMounter`. */
export interface DeviceMounter {
  /** The node-global mount path of the device; errors whose text contains "does not exist" let callers fall back to the recorded path. */
  getDeviceMountPath(spec: Spec): Promise<string>;
  mountDevice(spec: Spec, devicePath: string, deviceMountPath: string, args: DeviceMounterArgs): Promise<void>;
}

/** `volume.DeviceUnmounter`. */
export interface DeviceUnmounter {
  unmountDevice(deviceMountPath: string): Promise<void>;
}

/** `volume.Attacher`. */
export interface Attacher extends DeviceMounter {
  /** Attaches the volume to the node and returns the device path. */
  attach(spec: Spec, node: NodeName): Promise<string>;
  /** Batch check: for every spec, whether it is attached to `node` (one call for many volumes). */
  volumesAreAttached(specs: readonly Spec[], node: NodeName): Promise<Map<Spec, boolean>>;
  /** Waits until the device is usable on the node and returns its final path. */
  waitForAttach(spec: Spec, devicePath: string, pod: Pod, timeoutMs: number): Promise<string>;
}

/** `volume.Detacher`. */
export interface Detacher extends DeviceUnmounter {
  /** Detaches the plugin volume `volumeName` (the part after `<plugin>/` of the unique name). */
  detach(volumeName: string, node: NodeName): Promise<void>;
}

/** `volume.BlockVolumeMapper` (with the CustomBlockVolumeMapper steps). */
export interface BlockVolumeMapper {
  /** The node-global map path of the volume. */
  getGlobalMapPath(spec: Spec): Promise<string>;
  /** Returns (directory, file name) of the pod's device symlink. */
  getPodDeviceMapPath(): { dir: string; name: string };
  /** Stages the device (CSI NodeStage for block); returns the staging path. */
  setUpDevice(): Promise<string>;
  /** Publishes the device for the pod (CSI NodePublish for block); returns the publish path. */
  mapPodDevice(): Promise<string>;
}

/** `volume.BlockVolumeUnmapper` (with the CustomBlockVolumeUnmapper steps). */
export interface BlockVolumeUnmapper {
  unmapPodDevice(): Promise<void>;
  tearDownDevice(mapPath: string, devicePath: string): Promise<void>;
}

/** Result of `ConstructVolumeSpec`. */
export interface ReconstructedVolume {
  spec: Spec;
  /** The SELinux context the volume was mounted with, "" when none or unknown. */
  seLinuxMountContext: string;
}

/** `volume.NodeResizeOptions`. */
export interface NodeResizeOptions {
  volumeSpec: Spec;
  devicePath: string;
  deviceMountPath: string;
  deviceStagePath: string;
  /** Bytes. */
  newSize: number;
  /** Bytes. */
  oldSize: number;
}

/** `volume.VolumePlugin`. */
export interface VolumePlugin {
  readonly name: PluginName;
  init(host: VolumeHost): void;
  /** Whether this plugin handles the spec. Exactly one plugin must say yes. */
  canSupport(spec: Spec): boolean;
  /** The plugin's name for the volume (`GetVolumeName`); throws if the spec lacks what it needs. */
  getVolumeName(spec: Spec): string;
  /** Whether SetUp must run again periodically (configMap, secret, downwardAPI, projected). */
  requiresRemount(spec: Spec): boolean;
  supportsMountOption(): boolean;
  supportsSELinuxContextMount(spec: Spec): boolean;
  newMounter(spec: Spec, pod: Pod): Mounter;
  newUnmounter(specName: string, podUID: PodUID): Unmounter;
  /** Rebuilds a spec from the on-disk volume directory (reconstruction). */
  constructVolumeSpec(volumeName: string, volumePath: string): Promise<ReconstructedVolume>;
}

/** `volume.DeviceMountableVolumePlugin`. */
export interface DeviceMountableVolumePlugin extends VolumePlugin {
  newDeviceMounter(): DeviceMounter;
  newDeviceUnmounter(): DeviceUnmounter;
  /** Other mount points that reference the device mounted at `deviceMountPath`. */
  getDeviceMountRefs(deviceMountPath: string): Promise<string[]>;
  canDeviceMount(spec: Spec): boolean;
}

/**
 * A volume a plugin found in its own node-global state (not under any pod directory) during
 * reconstruction. See {@link DeviceMountReconstructablePlugin}.
 */
export interface ReconstructedDeviceVolume {
  /** A spec good enough to unmount the device and detach the volume (same unique name as the PV's). */
  spec: Spec;
  /** The device mount (staging) path that may still be mounted; "" when no device mount was started. */
  deviceMountPath: string;
  /** The SELinux context the device was mounted with, "" when none or unknown. */
  seLinuxMountContext: string;
  /**
   * `attached`: the attach finished (the plugin recorded what it returned). `uncertain`: an attach
   * was started and its outcome is unknown; the volume may or may not be attached.
   */
  attachState: 'attached' | 'uncertain';
}

/**
 * VolumeScope addition beyond the kubelet: a device-mountable plugin that can list, from its own
 * global directories, the volumes it may have attached or device-mounted on this node.
 *
 * Why: upstream reconstruction rebuilds the actual state only from pod volume directories
 * (kubernetes/kubernetes pkg/kubelet/volumemanager/reconciler/reconstruct.go@v1.34
 * getVolumesFromPodDir). A kubelet killed between MountDevice and the first pod mount, or after a
 * pod was unmounted but before UnmountDevice finished, and whose pod is deleted meanwhile, leaves
 * a staging mount nobody unmounts; upstream the attach/detach controller still detaches. An agent
 * that attaches volumes itself (standalone) would also leave the attachment. The reconciler adds
 * each listed volume that no pod volume refers to as attached (or attach-uncertain) with its
 * device mount Uncertain and no pods, so the normal path unmounts the device and detaches the
 * volume when no desired pod wants it, or confirms it by mounting when one does.
 */
export interface DeviceMountReconstructablePlugin extends DeviceMountableVolumePlugin {
  reconstructDeviceVolumes(): Promise<ReconstructedDeviceVolume[]>;
}

/** `volume.AttachableVolumePlugin`. */
export interface AttachableVolumePlugin extends DeviceMountableVolumePlugin {
  newAttacher(): Attacher;
  newDetacher(): Detacher;
  canAttach(spec: Spec): boolean;
}

/** `volume.BlockVolumePlugin`. */
export interface BlockVolumePlugin extends VolumePlugin {
  newBlockVolumeMapper(spec: Spec, pod: Pod): BlockVolumeMapper;
  newBlockVolumeUnmapper(specName: string, podUID: PodUID): BlockVolumeUnmapper;
  constructBlockVolumeSpec(podUID: PodUID, volumeName: string, volumePath: string): Promise<Spec>;
}

/** `volume.NodeExpandableVolumePlugin`. */
export interface NodeExpandableVolumePlugin extends VolumePlugin {
  requiresFSResize(): boolean;
  /** Grows the file system; true when done. Throws FailedPreconditionError / OperationNotSupportedError. */
  nodeExpand(options: NodeResizeOptions): Promise<boolean>;
}

function isDeviceMountablePlugin(p: VolumePlugin): p is DeviceMountableVolumePlugin {
  return 'newDeviceMounter' in p && typeof p.newDeviceMounter === 'function';
}

function isAttachablePlugin(p: VolumePlugin): p is AttachableVolumePlugin {
  return 'newAttacher' in p && typeof p.newAttacher === 'function' && isDeviceMountablePlugin(p);
}

export function isDeviceMountReconstructablePlugin(p: VolumePlugin): p is DeviceMountReconstructablePlugin {
  return isDeviceMountablePlugin(p) && 'reconstructDeviceVolumes' in p && typeof p.reconstructDeviceVolumes === 'function';
}

function isBlockVolumePlugin(p: VolumePlugin): p is BlockVolumePlugin {
  return 'newBlockVolumeMapper' in p && typeof p.newBlockVolumeMapper === 'function';
}

function isNodeExpandablePlugin(p: VolumePlugin): p is NodeExpandableVolumePlugin {
  return 'nodeExpand' in p && typeof p.nodeExpand === 'function';
}

export class PluginNotFoundError extends Error {
  override readonly name = 'PluginNotFoundError';
}

export function isPluginNotFoundError(err: unknown): err is PluginNotFoundError {
  return err instanceof PluginNotFoundError;
}

/**
 * `VolumePluginMgr`: finds plugins by spec or by name. Lookups by spec require exactly one
 * plugin to claim the spec; the capability lookups return null (not an error) when the plugin
 * found does not have the capability for this spec.
 */
export class VolumePluginMgr {
  private readonly plugins = new Map<PluginName, VolumePlugin>();

  constructor(plugins: readonly VolumePlugin[], host: VolumeHost | null) {
    for (const plugin of plugins) {
      if (this.plugins.has(plugin.name)) {
        throw new Error(`volume plugin ${JSON.stringify(plugin.name)} was registered more than once`);
      }
      if (host !== null) plugin.init(host);
      this.plugins.set(plugin.name, plugin);
    }
  }

  /** All registered plugins. */
  list(): VolumePlugin[] {
    return [...this.plugins.values()];
  }

  findPluginBySpec(spec: Spec | undefined): VolumePlugin {
    if (spec === undefined) throw new PluginNotFoundError('could not find plugin because volume spec is nil');
    // Called several times per volume and reconciler pass: no array is built unless two match.
    let match: VolumePlugin | null = null;
    let more: string[] | null = null;
    for (const plugin of this.plugins.values()) {
      if (!plugin.canSupport(spec)) continue;
      if (match === null) match = plugin;
      else (more ??= [match.name]).push(plugin.name);
    }
    if (match === null) throw new PluginNotFoundError('no volume plugin matched');
    if (more !== null) throw new PluginNotFoundError(`multiple volume plugins matched: ${more.join(',')}`);
    return match;
  }

  findPluginByName(name: string): VolumePlugin {
    const plugin = this.plugins.get(name as PluginName);
    if (plugin === undefined) throw new PluginNotFoundError(`no volume plugin matched name: ${name}`);
    return plugin;
  }

  findAttachablePluginBySpec(spec: Spec): AttachableVolumePlugin | null {
    const plugin = this.findPluginBySpec(spec);
    return isAttachablePlugin(plugin) && plugin.canAttach(spec) ? plugin : null;
  }

  findAttachablePluginByName(name: string): AttachableVolumePlugin | null {
    const plugin = this.findPluginByName(name);
    return isAttachablePlugin(plugin) ? plugin : null;
  }

  findDeviceMountablePluginBySpec(spec: Spec): DeviceMountableVolumePlugin | null {
    const plugin = this.findPluginBySpec(spec);
    return isDeviceMountablePlugin(plugin) && plugin.canDeviceMount(spec) ? plugin : null;
  }

  findDeviceMountablePluginByName(name: string): DeviceMountableVolumePlugin | null {
    const plugin = this.findPluginByName(name);
    return isDeviceMountablePlugin(plugin) ? plugin : null;
  }

  findMapperPluginBySpec(spec: Spec): BlockVolumePlugin | null {
    const plugin = this.findPluginBySpec(spec);
    return isBlockVolumePlugin(plugin) ? plugin : null;
  }

  findMapperPluginByName(name: string): BlockVolumePlugin | null {
    const plugin = this.findPluginByName(name);
    return isBlockVolumePlugin(plugin) ? plugin : null;
  }

  findNodeExpandablePluginBySpec(spec: Spec): NodeExpandableVolumePlugin | null {
    const plugin = this.findPluginBySpec(spec);
    return isNodeExpandablePlugin(plugin) ? plugin : null;
  }

  findNodeExpandablePluginByName(name: string): NodeExpandableVolumePlugin | null {
    const plugin = this.findPluginByName(name);
    return isNodeExpandablePlugin(plugin) ? plugin : null;
  }
}

/** `util.IsAttachableVolume`. */
export function isAttachableVolume(spec: Spec, mgr: VolumePluginMgr): boolean {
  try {
    const plugin = mgr.findAttachablePluginBySpec(spec);
    if (plugin === null) return false;
    plugin.newAttacher();
    return true;
  } catch {
    return false;
  }
}

/** `util.IsDeviceMountableVolume`. */
export function isDeviceMountableVolume(spec: Spec, mgr: VolumePluginMgr): boolean {
  try {
    const plugin = mgr.findDeviceMountablePluginBySpec(spec);
    if (plugin === null) return false;
    plugin.newDeviceMounter();
    return true;
  } catch {
    return false;
  }
}
