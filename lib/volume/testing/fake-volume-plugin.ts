/**
 * Test support: the kubelet's fake volume plugin (`pkg/volume/testing`), with its magic volume
 * names that make operations time out (uncertain) or fail (final), and call counters summed over
 * every volume object the plugin created. Attachable, device-mountable, block-mappable and
 * node-expandable. Never used outside tests and benchmarks.
 */
import { join } from 'node:path';
import { FailedPreconditionError, OperationNotSupportedError, UncertainProgressError } from '../errors.ts';
import type { Pod } from '../k8s-types.ts';
import type {
  AttachableVolumePlugin,
  Attacher,
  BlockVolumeMapper,
  BlockVolumePlugin,
  BlockVolumeUnmapper,
  Detacher,
  DeviceMounter,
  DeviceMountReconstructablePlugin,
  DeviceUnmounter,
  Mounter,
  NodeExpandableVolumePlugin,
  NodeResizeOptions,
  ReconstructedDeviceVolume,
  ReconstructedVolume,
  Unmounter,
  VolumeHost,
} from '../plugins.ts';
import { specFromPersistentVolume, specFromVolume, specName, type Spec } from '../spec.ts';
import { escapePluginName, pluginName, type NodeName, type PluginName, type PodUID } from '../types.ts';

// Magic names (matched on spec.Name()).
export const TimeoutOnMountDeviceVolumeName = 'timeout-mount-device-volume';
export const FailMountDeviceVolumeName = 'fail-mount-device-volume-name';
export const TimeoutAndFailOnMountDeviceVolumeName = 'timeout-and-fail-mount-device-name';
export const SuccessAndTimeoutDeviceName = 'success-and-timeout-device-name';
export const SuccessAndFailOnMountDeviceName = 'success-and-failed-mount-device-name';
export const TimeoutOnSetupVolumeName = 'timeout-setup-volume';
export const FailOnSetupVolumeName = 'fail-setup-volume';
export const TimeoutAndFailOnSetupVolumeName = 'timeout-and-fail-setup-volume';
export const SuccessAndTimeoutSetupVolumeName = 'success-and-timeout-setup-volume-name';
export const SuccessAndFailOnSetupVolumeName = 'success-and-failed-setup-device-name';
export const FailVolumeExpansion = 'fail-expansion-test';
export const FailWithInUseVolumeName = 'fail-expansion-in-use';
export const FailWithUnSupportedVolumeName = 'fail-expansion-unsupported';

type MountState = 'mounted' | 'uncertain' | 'not-mounted';

export interface FakeCallCounts {
  attach: number;
  waitForAttach: number;
  mountDevice: number;
  setUp: number;
  tearDown: number;
  unmountDevice: number;
  detach: number;
  mapPodDevice: number;
  setUpDevice: number;
  tearDownDevice: number;
  unmapPodDevice: number;
  nodeExpand: number;
  volumesAreAttached: number;
}

const zeroCounts = (): FakeCallCounts => ({
  attach: 0, waitForAttach: 0, mountDevice: 0, setUp: 0, tearDown: 0, unmountDevice: 0, detach: 0,
  mapPodDevice: 0, setUpDevice: 0, tearDownDevice: 0, unmapPodDevice: 0, nodeExpand: 0, volumesAreAttached: 0,
});

export interface FakeVolumePluginOptions {
  name?: string;
  /** The plugin stops being attachable (CanAttach false). */
  nonAttachable?: boolean;
  /** RequiresRemount true (scenarios d/e of the uncertain-state tables). */
  supportsRemount?: boolean;
  supportsSELinux?: boolean;
  /** Only claims specs this predicate accepts (default: every spec, as upstream). */
  canSupport?: (spec: Spec) => boolean;
}

/** `FakeVolumePlugin`. */
export class FakeVolumePlugin implements AttachableVolumePlugin, BlockVolumePlugin, DeviceMountReconstructablePlugin, NodeExpandableVolumePlugin {
  readonly name: PluginName;
  nonAttachable: boolean;
  supportsRemount: boolean;
  supportsSELinux: boolean;
  readonly counts: FakeCallCounts = zeroCounts();
  /** Replaces WaitForAttach's result (`WaitForAttachHook`). */
  waitForAttachHook: ((spec: Spec, devicePath: string, pod: Pod) => Promise<string>) | null = null;
  /** Runs before TearDown; a rejection fails the TearDown and leaves the volume mounted. */
  tearDownHook: ((volumeSpecName: string, podUID: PodUID) => Promise<void>) | null = null;
  /** Runs before UnmountDevice (`UnmountDeviceHook`). */
  unmountDeviceHook: ((deviceMountPath: string) => Promise<void>) | null = null;
  /** Replaces Attach's result (delay or fail an attach); the volume counts as attached only on success. */
  attachHook: ((spec: Spec, node: NodeName) => Promise<string>) | null = null;
  /** Replaces ConstructVolumeSpec (make reconstruction fail or return another spec). */
  constructVolumeSpecHook: ((volumeName: string, volumePath: string) => Promise<ReconstructedVolume>) | null = null;
  /** What `reconstructDeviceVolumes` returns (volumes known only from the plugin's global dirs). */
  deviceVolumesToReconstruct: ReconstructedDeviceVolume[] = [];
  /** Volume names attached per node, for VolumesAreAttached. */
  readonly attached = new Set<string>();
  private readonly deviceMountState = new Map<string, MountState>();
  private readonly volumeMountState = new Map<string, MountState>();
  private host: VolumeHost | null = null;
  private readonly canSupportFn: (spec: Spec) => boolean;

  constructor(opts: FakeVolumePluginOptions = {}) {
    this.name = pluginName(opts.name ?? 'fake-plugin');
    this.nonAttachable = opts.nonAttachable ?? false;
    this.supportsRemount = opts.supportsRemount ?? false;
    this.supportsSELinux = opts.supportsSELinux ?? false;
    this.canSupportFn = opts.canSupport ?? (() => true);
  }

  init(host: VolumeHost): void {
    this.host = host;
  }

  canSupport(spec: Spec): boolean {
    return this.canSupportFn(spec);
  }

  getVolumeName(spec: Spec): string {
    const pd = spec.volume?.gcePersistentDisk?.pdName ?? spec.persistentVolume?.spec.gcePersistentDisk?.pdName ?? spec.volume?.csi?.driver;
    return pd ?? specName(spec);
  }

  requiresRemount(_spec: Spec): boolean {
    return this.supportsRemount;
  }

  supportsMountOption(): boolean {
    return true;
  }

  supportsSELinuxContextMount(_spec: Spec): boolean {
    return this.supportsSELinux;
  }

  canAttach(_spec: Spec): boolean {
    return !this.nonAttachable;
  }

  canDeviceMount(_spec: Spec): boolean {
    return true;
  }

  requiresFSResize(): boolean {
    return true;
  }

  newMounter(spec: Spec, pod: Pod): Mounter {
    const name = specName(spec);
    const path = this.podVolumePath(pod.metadata.uid ?? '', name);
    return {
      getPath: () => path,
      setUp: () => {
        this.counts.setUp++;
        const err = this.setUpInternal(name);
        return err === undefined ? Promise.resolve() : Promise.reject(err);
      },
    };
  }

  newUnmounter(name: string, podUID: PodUID): Unmounter {
    const path = this.podVolumePath(podUID, name);
    return {
      getPath: () => path,
      tearDown: async () => {
        this.counts.tearDown++;
        // Upstream's TearDown keeps the volume's mount state, so a `success-and-failed-…` volume
        // mounted again after a TearDown fails as upstream's fake does (the differential tests).
        if (this.tearDownHook !== null) await this.tearDownHook(name, podUID);
      },
    };
  }

  async constructVolumeSpec(volumeName: string, volumePath: string): Promise<ReconstructedVolume> {
    if (this.constructVolumeSpecHook !== null) return this.constructVolumeSpecHook(volumeName, volumePath);
    return Promise.resolve({ spec: specFromVolume({ name: volumeName }), seLinuxMountContext: '' });
  }

  newAttacher(): Attacher {
    return this.attacher();
  }

  newDeviceMounter(): DeviceMounter {
    return this.attacher();
  }

  newDetacher(): Detacher {
    return this.detacher();
  }

  newDeviceUnmounter(): DeviceUnmounter {
    return this.detacher();
  }

  getDeviceMountRefs(_deviceMountPath: string): Promise<string[]> {
    return Promise.resolve([]);
  }

  newBlockVolumeMapper(spec: Spec, pod: Pod): BlockVolumeMapper {
    const name = specName(spec);
    const podUID = pod.metadata.uid ?? '';
    return {
      getGlobalMapPath: () => Promise.resolve(this.globalMapPath()),
      getPodDeviceMapPath: () => ({ dir: this.podDeviceDir(podUID), name }),
      setUpDevice: () => {
        this.counts.setUpDevice++;
        return this.mountDeviceInternal(name, '/dev/sdb').then(() => '');
      },
      mapPodDevice: () => {
        this.counts.mapPodDevice++;
        const err = this.setUpInternal(name);
        return err === undefined ? Promise.resolve('/dev/sdb') : Promise.reject(err);
      },
    };
  }

  newBlockVolumeUnmapper(_specName: string, _podUID: PodUID): BlockVolumeUnmapper {
    return {
      unmapPodDevice: () => {
        this.counts.unmapPodDevice++;
        return Promise.resolve();
      },
      tearDownDevice: () => {
        this.counts.tearDownDevice++;
        return Promise.resolve();
      },
    };
  }

  constructBlockVolumeSpec(_podUID: PodUID, volumeName: string, _volumePath: string): Promise<Spec> {
    return Promise.resolve(
      specFromPersistentVolume({ metadata: { name: volumeName }, spec: { volumeMode: 'Block' } }),
    );
  }

  nodeExpand(options: NodeResizeOptions): Promise<boolean> {
    this.counts.nodeExpand++;
    const name = specName(options.volumeSpec);
    if (name === FailWithInUseVolumeName) return Promise.reject(new FailedPreconditionError('volume-in-use'));
    if (name === FailWithUnSupportedVolumeName) return Promise.reject(new OperationNotSupportedError('volume-unsupported'));
    if (name === FailVolumeExpansion) return Promise.reject(new Error(`fail volume expansion for volume: ${FailVolumeExpansion}`));
    return Promise.resolve(true);
  }

  /** `DeviceMountReconstructablePlugin`: returns {@link deviceVolumesToReconstruct}. */
  reconstructDeviceVolumes(): Promise<ReconstructedDeviceVolume[]> {
    return Promise.resolve([...this.deviceVolumesToReconstruct]);
  }

  /** Test hook: detach a volume behind the agent's back (a "terminated node"). */
  forceDetach(pluginVolumeName: string): void {
    this.attached.delete(pluginVolumeName);
  }

  // INTERNALS

  private attacher(): Attacher {
    return {
      attach: (spec: Spec, node: NodeName) => {
        this.counts.attach++;
        if (this.attachHook !== null) {
          return this.attachHook(spec, node).then((devicePath) => {
            this.attached.add(this.getVolumeName(spec));
            return devicePath;
          });
        }
        this.attached.add(this.getVolumeName(spec));
        return Promise.resolve('/dev/vdb-test');
      },
      volumesAreAttached: (specs: readonly Spec[], _node: NodeName) => {
        this.counts.volumesAreAttached++;
        return Promise.resolve(new Map(specs.map((s) => [s, this.attached.has(this.getVolumeName(s))])));
      },
      waitForAttach: (spec: Spec, devicePath: string, pod: Pod) => {
        this.counts.waitForAttach++;
        if (this.waitForAttachHook !== null) return this.waitForAttachHook(spec, devicePath, pod);
        return Promise.resolve('/dev/sdb');
      },
      getDeviceMountPath: () => Promise.resolve(''),
      mountDevice: (spec: Spec, devicePath: string) => this.mountDeviceInternal(specName(spec), devicePath),
    };
  }

  private detacher(): Detacher {
    return {
      detach: (volumeName: string) => {
        this.counts.detach++;
        this.attached.delete(volumeName);
        return Promise.resolve();
      },
      // Upstream's UnmountDevice counts the call before its hook and keeps the device mount state.
      unmountDevice: async (deviceMountPath: string) => {
        this.counts.unmountDevice++;
        if (this.unmountDeviceHook !== null) await this.unmountDeviceHook(deviceMountPath);
      },
    };
  }

  private mountDeviceInternal(name: string, devicePath: string): Promise<void> {
    const old = this.deviceMountState.get(name);
    switch (name) {
      case TimeoutOnMountDeviceVolumeName:
        this.deviceMountState.set(name, 'uncertain');
        return Promise.reject(new UncertainProgressError('mount failed'));
      case FailMountDeviceVolumeName:
        this.deviceMountState.set(name, 'not-mounted');
        return Promise.reject(new Error(`error mounting disk: ${devicePath}`));
      case TimeoutAndFailOnMountDeviceVolumeName:
        if (old === undefined) {
          this.deviceMountState.set(name, 'uncertain');
          return Promise.reject(new UncertainProgressError('timed out mounting error'));
        }
        // Every later attempt fails for good, as upstream's fake does (never succeeds).
        this.deviceMountState.set(name, 'not-mounted');
        return Promise.reject(new Error(`error mounting disk: ${devicePath}`));
      case SuccessAndTimeoutDeviceName:
        if (old === 'mounted') return Promise.reject(new UncertainProgressError('error mounting state'));
        if (old === undefined) this.deviceMountState.set(name, 'mounted');
        break;
      case SuccessAndFailOnMountDeviceName:
        if (old !== undefined) return Promise.reject(new Error(`error mounting disk: ${devicePath}`));
        this.deviceMountState.set(name, 'mounted');
        break;
    }
    this.counts.mountDevice++;
    return Promise.resolve();
  }

  /** Returns the error SetUp (or MapPodDevice) fails with, or undefined on success. */
  private setUpInternal(name: string): Error | undefined {
    const old = this.volumeMountState.get(name);
    switch (name) {
      case TimeoutOnSetupVolumeName:
        this.volumeMountState.set(name, 'uncertain');
        return new UncertainProgressError('time out on setup');
      case FailOnSetupVolumeName:
        this.volumeMountState.set(name, 'not-mounted');
        return new Error('mounting volume failed');
      case TimeoutAndFailOnSetupVolumeName:
        if (old === undefined) {
          this.volumeMountState.set(name, 'uncertain');
          return new UncertainProgressError('time out on setup');
        }
        this.volumeMountState.set(name, 'not-mounted');
        return new Error('mounting volume failed');
      case SuccessAndFailOnSetupVolumeName:
        if (old !== undefined) {
          this.volumeMountState.set(name, 'not-mounted');
          return new Error('mounting volume failed');
        }
        break;
      case SuccessAndTimeoutSetupVolumeName:
        if (old !== undefined) {
          this.volumeMountState.set(name, 'uncertain');
          return new UncertainProgressError('time out on setup');
        }
        break;
    }
    this.volumeMountState.set(name, 'mounted');
    return undefined;
  }

  private podVolumePath(podUID: string, name: string): string {
    return this.host === null ? `/pods/${podUID}/volumes/${escapePluginName(this.name)}/${name}` : this.host.getPodVolumeDir(podUID as PodUID, escapePluginName(this.name), name);
  }

  private podDeviceDir(podUID: string): string {
    return this.host === null ? `/pods/${podUID}/volumeDevices/${escapePluginName(this.name)}` : this.host.getPodVolumeDeviceDir(podUID as PodUID, escapePluginName(this.name));
  }

  private globalMapPath(): string {
    const pluginDir = this.host === null ? `/plugins/${escapePluginName(this.name)}` : this.host.getPluginDir(escapePluginName(this.name));
    return join(pluginDir, 'volumeDevices', 'pluginDependentPath');
  }
}

/** `FakeFileVolumePlugin`: a plain filesystem plugin (no attach, no device mount, no block). */
export class FakeFileVolumePlugin {
  readonly name = pluginName('fake-file-plugin');
  init(_host: VolumeHost): void {
    // Nothing to remember.
  }
  canSupport(): boolean {
    return true;
  }
  getVolumeName(spec: Spec): string {
    return specName(spec);
  }
  requiresRemount(): boolean {
    return false;
  }
  supportsMountOption(): boolean {
    return false;
  }
  supportsSELinuxContextMount(): boolean {
    return false;
  }
  newMounter(_spec: Spec, _pod: Pod): Mounter {
    return { getPath: () => '', setUp: () => Promise.resolve() };
  }
  newUnmounter(_name: string, _podUID: PodUID): Unmounter {
    return { getPath: () => '', tearDown: () => Promise.resolve() };
  }
  constructVolumeSpec(volumeName: string): Promise<ReconstructedVolume> {
    return Promise.resolve({ spec: specFromVolume({ name: volumeName }), seLinuxMountContext: '' });
  }
}
