/**
 * The `kubernetes.io/csi` volume plugin (kubelet `csiPlugin`, pkg/volume/csi/csi_plugin.go and
 * expander.go) for PVs with `spec.csi` and inline ephemeral CSI volumes, talking to drivers
 * found in the {@link CsiDriverRegistry}.
 *
 * - Attachable when the CSIDriver object says `attachRequired: true`, or when there is no
 *   CSIDriver object (as upstream); inline ephemeral volumes never are. Attach/detach are the
 *   agent's own ControllerPublish/Unpublish (standalone, see csi-attacher.ts).
 * - Every persistent volume is device-mountable, as upstream (`CanDeviceMount`): MountDevice
 *   writes the staging vol_data.json and skips NodeStageVolume when the driver lacks
 *   STAGE_UNSTAGE_VOLUME. The answer never depends on the driver's capabilities or on whether it
 *   registered yet, so the unique volume name (spec-derived for device-mountable volumes) is the
 *   same in the desired state, in reconstruction and across registrations. Inline ephemeral
 *   volumes are not device-mountable.
 * - Volume name `<driver>^<volumeHandle>`; unique name `kubernetes.io/csi/<driver>^<volumeHandle>`.
 *   Inline ephemeral volumes have no spec-only name: the volume manager names them
 *   `kubernetes.io/csi/<podUID>-<specName>` (not attachable, not device-mountable) and their
 *   driver handle is `csi-<sha256(podUID + specName)>` (`makeVolumeHandle`); getVolumeName
 *   throws for them, as upstream.
 * - Node expansion through NodeExpandVolume when the driver has EXPAND_VOLUME.
 * - Reconstruction from the pod-level vol_data.json, and (beyond upstream) of device mounts and
 *   standalone attachments no pod refers to, from the staging vol_data.json files and the attach
 *   intent records (reconstructDeviceVolumes).
 *
 * Block volumes (BlockVolumePlugin) are not implemented: a Block PV finds no mapper plugin and
 * fails with the engine's "could not find BlockVolumeMapper plugin" error.
 */
import { readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { status as GrpcStatus } from '@grpc/grpc-js';
import type { Clock } from '../../clock/clock.ts';
import type { Mounter as HostMounter } from '../../mount-utils/mounter.ts';
import {
  FailedPreconditionError,
  OperationNotSupportedError,
  TransientOperationFailure,
} from '../errors.ts';
import type { CSIDriver, Pod } from '../k8s-types.ts';
import { discardLogger, type Logger } from '../logger.ts';
import type { VolumeObjectGetter } from '../object-getter.ts';
import type {
  AttachableVolumePlugin,
  Attacher,
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
import { isBlockSpec, specFromPersistentVolume, specFromVolume, type Spec } from '../spec.ts';
import { nodeName as toNodeName, pluginName, type NodeName, type PluginName, type PodUID } from '../types.ts';
import { CsiAttacher } from './csi-attacher.ts';
import type { CallOptions, CsiClient } from './csi-client.ts';
import type { CsiDriverRegistry } from './csi-driver-registry.ts';
import { csiCallError, isCsiRpcError } from './csi-errors.ts';
import { CsiMounter, CsiUnmounter } from './csi-mounter.ts';
import type { CsiPluginContext, StandaloneAttachment } from './csi-plugin-context.ts';
import type { NodeCapability, StringMap } from './csi-types.ts';
import {
  asCSIAccessMode,
  getCredentialsFromSecret,
  getPVSourceFromSpec,
  getSourceFromSpec,
  getVolumeLifecycleMode,
  log,
  mountCapability,
  specAccessMode,
  symlinkMountRefs,
} from './csi-util.ts';
import {
  ATTACH_INTENT_DIR_NAME,
  attachmentName,
  CSI_PLUGIN_NAME,
  decodePublishContext,
  deviceMountPath,
  GLOBAL_MOUNT_DIR_NAME,
  isVolumeDataError,
  listAttachIntents,
  loadVolumeData,
  VOL_DATA_FILE_NAME,
  VOL_NAME_SEP,
  volDataKey,
} from './vol-data.ts';

/** Dependencies and tuning of the plugin. */
export interface CsiPluginOptions {
  objects: VolumeObjectGetter;
  registry: CsiDriverRegistry;
  nodeName: NodeName | string;
  /** The kubelet root dir (`--root-dir`); every path of the plugin lies below it. */
  rootDir: string;
  /** Mount table access for getDeviceMountRefs / isMountPoint and safe removal. */
  mounter: HostMounter;
  clock: Clock;
  logger?: Logger;
  /** Deadline of each CSI call the plugin makes; default: the registry's (2 min). */
  callTimeoutMs?: number;
  /** `max_entries` of each ListVolumes page in volumesAreAttached; default 100. */
  listVolumesPageSize?: number;
  /**
   * Reads VolumeAttachment objects. Present when the attach/detach controller attaches
   * (`--controller-attach-detach` with an API server): the publish context then comes from the
   * VolumeAttachment's `status.attachmentMetadata`, as upstream, and never from this agent's own
   * ControllerPublish.
   */
  volumeAttachments?: VolumeAttachmentReader;
}

/** What the CSI plugin reads of a `storage.k8s.io/v1` VolumeAttachment. */
export interface VolumeAttachmentStatus {
  attached: boolean;
  attachmentMetadata: Readonly<Record<string, string>>;
  /** `status.attachError.message`, when the external attacher reported one. */
  attachError?: string;
}

/** GET of a VolumeAttachment by name; resolves undefined when it does not exist. */
export interface VolumeAttachmentReader {
  getVolumeAttachment(name: string): Promise<VolumeAttachmentStatus | undefined>;
}

/** The VolumeAttachment exists but is not attached (yet), or reports an attach error. */
export class VolumeAttachmentNotAttachedError extends Error {
  override readonly name = 'VolumeAttachmentNotAttachedError';
}

export function isVolumeAttachmentNotAttachedError(err: unknown): err is VolumeAttachmentNotAttachedError {
  return err instanceof VolumeAttachmentNotAttachedError;
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The CSIDriver `seLinuxMount` field, which the engine's CSIDriver type does not declare. */
function seLinuxMountOf(driver: CSIDriver | undefined): boolean {
  return (driver?.spec as { seLinuxMount?: boolean } | undefined)?.seLinuxMount === true;
}

/**
 * The spec of a volume known only from the plugin's global directories: the PV name is unknown
 * there, so the volume handle stands in for it; the unique volume name (driver and handle) is the
 * one the PV's spec gives, which is all unmounting the device and detaching need.
 */
function deviceVolumeSpec(driver: string, volumeHandle: string): Spec {
  return specFromPersistentVolume({ metadata: { name: volumeHandle }, spec: { csi: { driver, volumeHandle }, volumeMode: 'Filesystem' } });
}

/** Names of the subdirectories of `dir`; none when it does not exist. */
async function readDirNames(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return [];
    throw err;
  }
}

export class CsiPlugin implements AttachableVolumePlugin, DeviceMountReconstructablePlugin, NodeExpandableVolumePlugin, CsiPluginContext {
  readonly name: PluginName = pluginName(CSI_PLUGIN_NAME);
  readonly objects: VolumeObjectGetter;
  readonly registry: CsiDriverRegistry;
  readonly nodeName: NodeName;
  readonly rootDir: string;
  readonly mounter: HostMounter;
  readonly clock: Clock;
  readonly log: Logger;
  private readonly callTimeoutMs: number | undefined;
  private readonly listVolumesPageSize: number;
  private readonly attachments = new Map<string, StandaloneAttachment>();
  private readonly volumeAttachments: VolumeAttachmentReader | undefined;

  constructor(opts: CsiPluginOptions) {
    this.volumeAttachments = opts.volumeAttachments;
    this.objects = opts.objects;
    this.registry = opts.registry;
    this.nodeName = toNodeName(opts.nodeName);
    this.rootDir = opts.rootDir;
    this.mounter = opts.mounter;
    this.clock = opts.clock;
    this.log = opts.logger ?? discardLogger;
    this.callTimeoutMs = opts.callTimeoutMs;
    this.listVolumesPageSize = opts.listVolumesPageSize ?? 100;
  }

  // VolumePlugin

  /** Nothing to take from the host: paths derive from `rootDir`, the node name is injected. */
  init(_host: VolumeHost): void {
    // Intentionally empty.
  }

  canSupport(spec: Spec): boolean {
    return spec.persistentVolume?.spec.csi !== undefined || spec.volume?.csi !== undefined;
  }

  /** `<driver>^<volumeHandle>`; throws for inline ephemeral volumes (named per pod, see the file comment). */
  getVolumeName(spec: Spec): string {
    let pvSrc;
    try {
      pvSrc = getPVSourceFromSpec(spec);
    } catch (err) {
      throw new Error(log(`plugin.GetVolumeName failed to extract volume source from spec: ${errText(err)}`), { cause: err });
    }
    return `${pvSrc.driver}${VOL_NAME_SEP}${pvSrc.volumeHandle}`;
  }

  /** `RequiresRemount`: the CSIDriver asks for periodic NodePublish (`requiresRepublish`). */
  requiresRemount(spec: Spec): boolean {
    try {
      return this.csiDriver(getSourceFromSpec(spec).volSrc?.driver ?? getPVSourceFromSpec(spec).driver)?.spec.requiresRepublish === true;
    } catch {
      return false;
    }
  }

  supportsMountOption(): boolean {
    return true;
  }

  /** Only when the CSIDriver object declares `seLinuxMount: true`. */
  supportsSELinuxContextMount(spec: Spec): boolean {
    try {
      const { volSrc, pvSrc } = getSourceFromSpec(spec);
      return seLinuxMountOf(this.csiDriver(volSrc?.driver ?? pvSrc?.driver ?? ''));
    } catch {
      return false;
    }
  }

  newMounter(spec: Spec, pod: Pod): Mounter {
    return new CsiMounter(this, spec, pod, { supportsSELinuxContextMount: (s) => this.supportsSELinuxContextMount(s) });
  }

  newUnmounter(specName: string, podUID: PodUID): Unmounter {
    return new CsiUnmounter(this, specName, podUID);
  }

  /**
   * `ConstructVolumeSpec`: rebuilds the spec from `<volumePath>/vol_data.json` (volumePath is the
   * pod volume directory `.../kubernetes.io~csi/<specName>`): a PV with `spec.csi` for
   * Persistent volumes, an inline CSI volume for Ephemeral ones. A missing or corrupt file, or
   * one without driver/handle/spec name, fails: the volume then fails reconstruction.
   */
  async constructVolumeSpec(volumeName: string, volumePath: string): Promise<ReconstructedVolume> {
    let data: Record<string, string>;
    try {
      data = await loadVolumeData(volumePath);
    } catch (err) {
      throw new Error(log(`plugin.ConstructVolumeSpec failed loading volume data using [${volumePath}]: ${errText(err)}`), { cause: err });
    }
    const specVolID = data[volDataKey.specVolID] ?? '';
    const driver = data[volDataKey.driverName] ?? '';
    const handle = data[volDataKey.volHandle] ?? '';
    if (specVolID === '' || driver === '' || handle === '') {
      throw new Error(
        log(`plugin.ConstructVolumeSpec failed loading volume data using [${volumePath}]: ${volDataKey.specVolID}, ${volDataKey.driverName} and ${volDataKey.volHandle} are required`),
      );
    }
    this.log.debug(log(`plugin.ConstructVolumeSpec [pv.Name=${volumeName}, path=${volumePath}]`), { data });
    const seLinuxMountContext = data[volDataKey.seLinuxMountContext] ?? '';
    if (data[volDataKey.volumeLifecycleMode] === 'Ephemeral') {
      return { spec: specFromVolume({ name: specVolID, csi: { driver } }), seLinuxMountContext };
    }
    const spec = specFromPersistentVolume({
      metadata: { name: specVolID },
      spec: { csi: { driver, volumeHandle: handle }, volumeMode: 'Filesystem' },
    });
    return { spec, seLinuxMountContext };
  }

  /**
   * `reconstructDeviceVolumes` (VolumeScope addition, see DeviceMountReconstructablePlugin):
   * the volumes this plugin may have device-mounted or attached on this node, from its global
   * directories:
   *
   * - every staging dir `plugins/kubernetes.io/csi/<driver>/<sha256(handle)>/` whose
   *   vol_data.json names that driver and handle: MountDevice wrote it before NodeStageVolume, so
   *   the volume may be staged; it was attached (MountDevice runs after the attach finished);
   * - standalone only (no VolumeAttachment reader), every attach intent record of this node with
   *   no staging dir: ControllerPublishVolume may have run, outcome unknown. With the
   *   attach/detach controller, the controller detaches.
   *
   * A corrupt or mismatched file is logged and skipped (nothing is ever unstaged on its word);
   * an unreadable plugin dir throws.
   */
  async reconstructDeviceVolumes(): Promise<ReconstructedDeviceVolume[]> {
    const found = new Map<string, ReconstructedDeviceVolume>();
    const csiDir = join(this.rootDir, 'plugins', CSI_PLUGIN_NAME);
    for (const driverDir of await readDirNames(csiDir)) {
      if (driverDir === ATTACH_INTENT_DIR_NAME) continue;
      for (const volumeDir of await readDirNames(join(csiDir, driverDir))) {
        const dir = join(csiDir, driverDir, volumeDir);
        let data: Record<string, string>;
        try {
          data = await loadVolumeData(dir);
        } catch (err) {
          // No vol_data.json: not a staging dir of ours (e.g. the block volumeDevices tree).
          if (!(isVolumeDataError(err) && err.notFound)) this.log.warn(log(`plugin.ReconstructDeviceVolumes skipped [${dir}]: ${errText(err)}`));
          continue;
        }
        const driver = data[volDataKey.driverName] ?? '';
        const handle = data[volDataKey.volHandle] ?? '';
        const stagingPath = join(dir, GLOBAL_MOUNT_DIR_NAME);
        if (driver === '' || handle === '' || deviceMountPath(this.rootDir, driver, handle) !== stagingPath) {
          this.log.warn(log(`plugin.ReconstructDeviceVolumes skipped [${dir}]: its ${VOL_DATA_FILE_NAME} does not name the driver and volume handle of this staging path`));
          continue;
        }
        found.set(`${driver}${VOL_NAME_SEP}${handle}`, {
          spec: deviceVolumeSpec(driver, handle),
          deviceMountPath: stagingPath,
          seLinuxMountContext: data[volDataKey.seLinuxMountContext] ?? '',
          attachState: 'attached',
        });
      }
    }
    if (this.volumeAttachments === undefined) {
      const { intents, invalid } = await listAttachIntents(this.rootDir, this.nodeName);
      for (const bad of invalid) this.log.warn(log(`plugin.ReconstructDeviceVolumes skipped [${bad.path}]: ${bad.reason}`));
      for (const intent of intents) {
        const key = `${intent.driverName}${VOL_NAME_SEP}${intent.volumeHandle}`;
        if (found.has(key)) continue;
        found.set(key, { spec: deviceVolumeSpec(intent.driverName, intent.volumeHandle), deviceMountPath: '', seLinuxMountContext: '', attachState: 'uncertain' });
      }
    }
    return [...found.values()];
  }

  // DeviceMountableVolumePlugin / AttachableVolumePlugin

  newDeviceMounter(): DeviceMounter {
    return this.newCsiAttacher();
  }

  newDeviceUnmounter(): DeviceUnmounter {
    return this.newCsiAttacher();
  }

  newAttacher(): Attacher {
    return this.newCsiAttacher();
  }

  newDetacher(): Detacher {
    return this.newCsiAttacher();
  }

  /**
   * Mount points (and, for symlink-publishing drivers, pod targets linking to it) that still
   * reference the staging path.
   */
  async getDeviceMountRefs(stagingPath: string): Promise<string[]> {
    const refs = new Set(await this.mounter.getMountRefs(stagingPath));
    for (const ref of await symlinkMountRefs(this.rootDir, stagingPath)) refs.add(ref);
    return [...refs].sort();
  }

  /** `CanDeviceMount`: inline ephemeral → false; every persistent volume → true (see the file comment). */
  canDeviceMount(spec: Spec): boolean {
    try {
      return getVolumeLifecycleMode(spec) === 'Persistent';
    } catch {
      return false;
    }
  }

  /** Inline ephemeral → false; PV → CSIDriver `attachRequired` (default true without the object). */
  canAttach(spec: Spec): boolean {
    try {
      const { pvSrc } = getSourceFromSpec(spec);
      if (pvSrc === null) return false;
      return !this.skipAttach(pvSrc.driver);
    } catch {
      return false;
    }
  }

  // NodeExpandableVolumePlugin

  /**
   * `RequiresFSResize`. The interface has no spec; with one, whether that volume's driver has
   * EXPAND_VOLUME (true while the driver is not registered, so expansion is attempted and gets
   * the transient error). Without one, whether any registered driver has EXPAND_VOLUME.
   */
  requiresFSResize(spec?: Spec): boolean {
    if (spec !== undefined) {
      try {
        return this.registry.nodeCapabilities(getPVSourceFromSpec(spec).driver)?.has('EXPAND_VOLUME') ?? true;
      } catch {
        return false;
      }
    }
    return this.registry.drivers().some((d) => d.registered && d.capabilities.includes('EXPAND_VOLUME'));
  }

  /**
   * `NodeExpand` → NodeExpandVolume with `required_bytes = newSize`. The volume path is the
   * staging path when the driver stages, else the publish path; `staging_target_path` is set
   * when the driver stages. FailedPrecondition → FailedPreconditionError (in use, retried
   * later), Unimplemented or a driver without EXPAND_VOLUME → OperationNotSupportedError.
   */
  async nodeExpand(options: NodeResizeOptions): Promise<boolean> {
    let pvSrc;
    try {
      pvSrc = getPVSourceFromSpec(options.volumeSpec);
    } catch (err) {
      throw new Error(log(`Expander.NodeExpand failed to get CSI persistent source: ${errText(err)}`), { cause: err });
    }
    if (isBlockSpec(options.volumeSpec)) {
      throw new OperationNotSupportedError(log('Expander.NodeExpand: block volumes are not supported by this plugin'));
    }
    const driver = pvSrc.driver;
    const client = this.client(driver, 'Expander.NodeExpand failed to get CSI client');
    let caps;
    try {
      caps = await this.nodeCapabilities(driver);
    } catch (err) {
      throw csiCallError(err, 'Expander.NodeExpand failed to check if node supports expansion : ');
    }
    if (!caps.has('EXPAND_VOLUME')) throw new OperationNotSupportedError(`NodeExpand is not supported by the CSI driver ${driver}`);
    const stages = caps.has('STAGE_UNSTAGE_VOLUME');
    const stagingPath = stages ? options.deviceStagePath || deviceMountPath(this.rootDir, driver, pvSrc.volumeHandle) : '';
    const volumePath = stages ? stagingPath : options.deviceMountPath;
    if (volumePath === '') throw new Error(log('Expander.NodeExpand failed: no volume path (the volume is neither staged nor published)'));
    let secrets: StringMap = {};
    const ref = pvSrc.nodeExpandSecretRef;
    if (ref !== undefined) {
      try {
        secrets = getCredentialsFromSecret(this.objects, ref.namespace ?? 'default', ref.name);
      } catch (err) {
        throw new Error(`expander.NodeExpand failed to get NodeExpandSecretRef ${ref.namespace ?? 'default'}/${ref.name}: ${errText(err)}`, { cause: err });
      }
    }
    try {
      await client.nodeExpandVolume(
        {
          volume_id: pvSrc.volumeHandle,
          volume_path: volumePath,
          capacity_range: { required_bytes: options.newSize },
          staging_target_path: stagingPath,
          volume_capability: mountCapability(
            pvSrc.fsType ?? '',
            options.volumeSpec.persistentVolume?.spec.mountOptions ?? [],
            asCSIAccessMode(specAccessMode(options.volumeSpec), caps.has('SINGLE_NODE_MULTI_WRITER')),
          ),
          secrets,
        },
        this.callOptions(),
      );
    } catch (err) {
      if (isCsiRpcError(err) && err.code === GrpcStatus.FAILED_PRECONDITION) {
        throw new FailedPreconditionError(`Expander.NodeExpand failed to expand the volume : ${err.message}`, { cause: err });
      }
      if (isCsiRpcError(err) && err.code === GrpcStatus.UNIMPLEMENTED) {
        throw new OperationNotSupportedError(`Expander.NodeExpand failed to expand the volume : ${err.message}`, { cause: err });
      }
      throw csiCallError(err, 'Expander.NodeExpand failed to expand the volume : ');
    }
    return true;
  }

  // CsiPluginContext

  callOptions(): CallOptions {
    return this.callTimeoutMs === undefined ? {} : { timeoutMs: this.callTimeoutMs };
  }

  client(driverName: string, what: string): CsiClient {
    try {
      return this.registry.client(driverName);
    } catch (err) {
      // Treat the absence of the CSI driver as a transient error (kubernetes#120268).
      throw new TransientOperationFailure(log(`${what}: ${errText(err)}`), { cause: err });
    }
  }

  csiDriver(driverName: string): CSIDriver | undefined {
    return this.objects.getCSIDriver(driverName);
  }

  skipAttach(driverName: string): boolean {
    return this.csiDriver(driverName)?.spec.attachRequired === false;
  }

  nodeCapabilities(driverName: string): Promise<ReadonlySet<NodeCapability>> {
    return this.registry.refreshNodeCapabilities(driverName, this.callTimeoutMs);
  }

  async publishContextFor(driverName: string, volumeHandle: string): Promise<StringMap | null> {
    if (this.volumeAttachments !== undefined) return this.publishContextFromVolumeAttachment(driverName, volumeHandle);
    const known = this.attachment(driverName, volumeHandle);
    if (known !== undefined) return { ...known.publishContext };
    try {
      const data = await loadVolumeData(dirname(deviceMountPath(this.rootDir, driverName, volumeHandle)));
      const persisted = decodePublishContext(data);
      if (persisted !== undefined) {
        this.rememberAttachment({ driverName, volumeHandle, publishContext: persisted });
        return { ...persisted };
      }
    } catch {
      // No staging file (not staged yet, or the driver does not stage): not known from disk.
    }
    const caps = this.registry.controllerCapabilities(driverName);
    if (caps !== undefined && !caps.has('PUBLISH_UNPUBLISH_VOLUME')) return {};
    return null;
  }

  /**
   * Controller-attached volumes: the VolumeAttachment `csi-<sha256(handle+driver+node)>` is read
   * on every call (upstream reads it in WaitForAttach and again in MountDevice), so a detach by
   * the controller is seen at once. Null when it does not exist or is not attached; an attach
   * error is thrown with the attacher's message; a failed GET is a TransientOperationFailure.
   */
  private async publishContextFromVolumeAttachment(driverName: string, volumeHandle: string): Promise<StringMap | null> {
    const reader = this.volumeAttachments;
    if (reader === undefined) return null;
    const caps = this.registry.controllerCapabilities(driverName);
    if (caps !== undefined && !caps.has('PUBLISH_UNPUBLISH_VOLUME')) return {};
    const name = attachmentName(volumeHandle, driverName, this.nodeName);
    let va: VolumeAttachmentStatus | undefined;
    try {
      va = await reader.getVolumeAttachment(name);
    } catch (err) {
      // The API server may answer later: transient, never a reason to change a mount's state.
      throw new TransientOperationFailure(`volume ${volumeHandle} has GET error for volume attachment ${name}: ${errText(err)}`, { cause: err });
    }
    if (va === undefined) return null;
    if (va.attachError !== undefined && va.attachError !== '') {
      throw new VolumeAttachmentNotAttachedError(`attachment for ${volumeHandle} failed: ${va.attachError}`);
    }
    return va.attached ? { ...va.attachmentMetadata } : null;
  }

  rememberAttachment(attachment: StandaloneAttachment): void {
    this.attachments.set(`${attachment.driverName}${VOL_NAME_SEP}${attachment.volumeHandle}`, attachment);
  }

  forgetAttachment(driverName: string, volumeHandle: string): void {
    this.attachments.delete(`${driverName}${VOL_NAME_SEP}${volumeHandle}`);
  }

  attachment(driverName: string, volumeHandle: string): StandaloneAttachment | undefined {
    return this.attachments.get(`${driverName}${VOL_NAME_SEP}${volumeHandle}`);
  }

  private newCsiAttacher(): CsiAttacher {
    return new CsiAttacher(this, {
      listVolumesPageSize: this.listVolumesPageSize,
      supportsSELinuxContextMount: (s) => this.supportsSELinuxContextMount(s),
    });
  }
}
