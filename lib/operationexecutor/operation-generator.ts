/**
 * Operation generator (kubelet `operationexecutor/operation_generator.go`): turns a request
 * (mount this volume for that pod, unmount, attach…) into a {@link GeneratedOperations} whose
 * function performs the plugin calls and records the outcome in the actual state of world.
 *
 * Errors found while *generating* (plugin not found, unmounter cannot be created) are thrown
 * synchronously: they create no pending operation and no backoff. Errors of the operation itself
 * are returned as (eventErr, detailedErr); the detailed one drives the backoff.
 */
import type { Clock } from '../clock/clock.ts';
import {
  discardEvents,
  FailedAttachVolume,
  FailedMapVolume,
  FailedMountVolume,
  FileSystemResizeFailed,
  FileSystemResizeSuccessful,
  SuccessfulAttachVolume,
  VolumeResizeFailed,
  type EventRecorder,
  type InvolvedObject,
} from '../volume/events.ts';
import {
  errorMessage,
  isFailedPreconditionError,
  isOperationFinishedError,
  isOperationNotSupportedError,
  isUncertainProgressError,
  MountPreConditionFailedError,
  UncertainProgressError,
} from '../volume/errors.ts';
import type { Pod, PersistentVolumeClaim } from '../volume/k8s-types.ts';
import type { VolumeKubeClient } from '../volume/kube-client.ts';
import type {
  BlockVolumeMapper,
  DeviceMounter,
  NodeExpandableVolumePlugin,
  NodeResizeOptions,
  VolumePluginMgr,
} from '../volume/plugins.ts';
import { parseQuantity } from '../volume/quantity.ts';
import { isBlockSpec, specAccessModes, specName, type Spec } from '../volume/spec.ts';
import { splitUniqueName, type NodeName, type PluginName, type PodUID, type UniquePodName, type UniqueVolumeName } from '../volume/types.ts';
import { goQuote, goSlice } from '../volume/util/go-format.ts';
import { hasMountRefs } from '../volume/util/mount-refs.ts';
import {
  attachedVolumeMsg,
  errorPair,
  mountedVolumeMsg,
  volumeToAttachMsg,
  volumeToMountMsg,
  type Messages,
} from './messages.ts';
import type { GeneratedOperations, OperationResult } from './nested-pending-operations.ts';
import type {
  ActualStateOfWorldAttacherUpdater,
  ActualStateOfWorldMounterUpdater,
  ActualStateOfWorldVerifierUpdater,
  AttachedVolume,
  MarkVolumeOpts,
  MountedVolume,
  VolumeToAttach,
  VolumeToMount,
} from './types.ts';
import type { Logger } from '../volume/logger.ts';

/** Operation names (the `operation_name` label of storage_operation_duration_seconds). */
export const OperationNames = {
  attach: 'volume_attach',
  detach: 'volume_detach',
  verifyControllerAttached: 'verify_controller_attached_volume',
  mount: 'volume_mount',
  unmount: 'volume_unmount',
  unmountDevice: 'unmount_device',
  map: 'map_volume',
  unmap: 'unmap_volume',
  unmapDevice: 'unmap_device',
  expandInUse: 'volume_fs_resize',
  verifyVolumesAreAttached: 'verify_volumes_are_attached_per_node',
} as const;

/**
 * Host-side handling of block device map paths (kubelet `volumepathhandler`): global and pod
 * symlinks and bind mounts. The default does nothing, which is right for plugins whose
 * custom mapper steps do all the work.
 */
export interface BlockVolumePathHandler {
  mapBlockVolume(devicePath: string, globalMapPath: string, podVolumeMapPath: string, volumeMapName: string, podUID: PodUID): Promise<void>;
  unmapBlockVolume(globalMapPath: string, podDeviceMapPath: string, volumeMapName: string, podUID: PodUID): Promise<void>;
  /** Pod references still bound to the global map path. */
  getDeviceBindMountRefs(devicePath: string, globalMapPath: string): Promise<string[]>;
  removeMapPath(globalMapPath: string): Promise<void>;
}

const noopBlockVolumePathHandler: BlockVolumePathHandler = {
  mapBlockVolume: () => Promise.resolve(),
  unmapBlockVolume: () => Promise.resolve(),
  getDeviceBindMountRefs: () => Promise.resolve([]),
  removeMapPath: () => Promise.resolve(),
};

/** Removes subPath bind mounts of a volume before TearDown (kubelet `Subpather.CleanSubPaths`). */
export interface Subpather {
  cleanSubPaths(podDir: string, volumeName: string): Promise<void>;
}

export interface OperationGeneratorOptions {
  pluginMgr: VolumePluginMgr;
  clock: Clock;
  recorder?: EventRecorder;
  kubeClient?: VolumeKubeClient;
  blockPathHandler?: BlockVolumePathHandler;
  subpather?: Subpather;
  /** Latency hook for `volume_operation_total_seconds{operation_name="overall_volume_mount"}`. */
  observeOverallMount?: (pluginName: string, seconds: number) => void;
  logger?: Pick<Logger, 'info' | 'warn' | 'error'>;
}

/** A generated operation plus what records and metrics need to know about it. */
export interface GeneratedOperation extends GeneratedOperations {
  /** Fully qualified plugin name (`kubernetes.io/csi:<driver>` for CSI). */
  pluginName: string;
  migrated: boolean;
}

const ok: OperationResult = {};

function podObject(pod: Pod): InvolvedObject {
  return { kind: 'Pod', namespace: pod.metadata.namespace ?? 'default', name: pod.metadata.name, uid: pod.metadata.uid ?? '' };
}

function claimObject(pvc: PersistentVolumeClaim): InvolvedObject {
  return { kind: 'PersistentVolumeClaim', namespace: pvc.metadata.namespace ?? 'default', name: pvc.metadata.name, uid: pvc.metadata.uid ?? '' };
}

/** `GetFullQualifiedPluginNameForVolume`: `<plugin>` or `<plugin>:<driver>` for CSI. */
export function fullyQualifiedPluginName(pluginName: string, spec: Spec | undefined): string {
  if (pluginName !== 'kubernetes.io/csi' || spec === undefined) return pluginName;
  const driver = spec.persistentVolume?.spec.csi?.driver ?? spec.volume?.csi?.driver;
  return driver === undefined ? pluginName : `${pluginName}:${driver}`;
}

function storageOf(list: Record<string, string> | undefined): number {
  const v = list?.['storage'];
  return v === undefined ? 0 : parseQuantity(v);
}

/**
 * The kubelet's refusal of a second pod on a ReadWriteOncePod volume; the pod's FailedMount
 * event reads `MountVolume.SetUp failed for volume "<name>" : ` followed by this text.
 */
export class ReadWriteOncePodInUseError extends Error {
  override readonly name = 'ReadWriteOncePodInUseError';
  constructor() {
    super('volume uses the ReadWriteOncePod access mode and is already in use by another pod');
  }
}

export function isReadWriteOncePodInUseError(err: unknown): err is ReadWriteOncePodInUseError {
  return err instanceof ReadWriteOncePodInUseError;
}

export class OperationGenerator {
  readonly pluginMgr: VolumePluginMgr;
  private readonly clock: Clock;
  private readonly recorder: EventRecorder;
  private readonly kubeClient: VolumeKubeClient | undefined;
  private readonly blockPathHandler: BlockVolumePathHandler;
  private readonly subpather: Subpather | undefined;
  private readonly observeOverallMount: ((pluginName: string, seconds: number) => void) | undefined;
  private readonly log: NonNullable<OperationGeneratorOptions['logger']>;
  /** ReadWriteOncePod PVs (by name) with a mount or map running, and the pod it runs for. */
  private readonly readWriteOncePodMounts = new Map<string, UniquePodName>();

  constructor(opts: OperationGeneratorOptions) {
    this.pluginMgr = opts.pluginMgr;
    this.clock = opts.clock;
    this.recorder = opts.recorder ?? discardEvents;
    this.kubeClient = opts.kubeClient;
    this.blockPathHandler = opts.blockPathHandler ?? noopBlockVolumePathHandler;
    this.subpather = opts.subpather;
    this.observeOverallMount = opts.observeOverallMount;
    this.log = opts.logger ?? { info: () => undefined, warn: () => undefined, error: () => undefined };
  }

  // VERIFY CONTROLLER ATTACHED

  generateVerifyControllerAttachedVolumeFunc(
    vtm: VolumeToMount,
    nodeName: NodeName,
    asw: ActualStateOfWorldAttacherUpdater & ActualStateOfWorldMounterUpdater,
  ): GeneratedOperation {
    const msgs = (p: string, s: string): Messages => volumeToMountMsg(vtm, p, s);
    let plugin;
    try {
      plugin = this.pluginMgr.findPluginBySpec(vtm.volumeSpec);
    } catch (err) {
      throw new Error(msgs('VerifyControllerAttachedVolume.FindPluginBySpec failed', `: ${errorMessage(err)}`).detailed, { cause: err });
    }
    // Attachable volumes not yet in the node informer's cache fail fast: no operation, no backoff.
    if (vtm.pluginIsAttachable) {
      const cached = this.kubeClient?.getAttachedVolumesFromNodeStatus?.() ?? null;
      if (cached !== null && !cached.has(vtm.volumeName)) {
        throw new MountPreConditionFailedError(`volume ${vtm.volumeName} is not yet in node's status`);
      }
    }
    const migrated = vtm.volumeSpec.migrated === true;
    const operationFunc = async (): Promise<OperationResult> => {
      let claimSize = asw.getClaimSize(vtm.volumeName);
      const pv = vtm.volumeSpec.persistentVolume;
      if (pv !== undefined && claimSize === null && vtm.volumeSpec.inlineVolumeSpecForCSIMigration !== true) {
        try {
          const pvc = await this.getClaimOf(pv.spec.claimRef);
          const size = pvc.status?.capacity?.['storage'];
          if (size !== undefined) claimSize = parseQuantity(size);
        } catch (err) {
          return errorPair(msgs, 'VerifyControllerAttachedVolume fetching pvc failed', err);
        }
      }
      if (!vtm.pluginIsAttachable) {
        try {
          asw.markVolumeAsAttached(vtm.volumeName, vtm.volumeSpec, nodeName, '');
        } catch (err) {
          return errorPair(msgs, 'VerifyControllerAttachedVolume.MarkVolumeAsAttachedByUniqueVolumeName failed', err);
        }
        asw.initializeClaimSize(vtm.volumeName, claimSize);
        return ok;
      }
      if (!vtm.reportedInUse) {
        return errorPair(msgs, "Volume has not been added to the list of VolumesInUse in the node's volume status");
      }
      let node;
      try {
        if (this.kubeClient?.getNode === undefined) throw new Error('no API server client: node status is not available');
        node = await this.kubeClient.getNode(nodeName);
      } catch (err) {
        return errorPair(msgs, 'VerifyControllerAttachedVolume failed fetching node from API server', err);
      }
      const attached = (node.status?.volumesAttached ?? []).find((v) => v.name === vtm.volumeName);
      if (attached !== undefined) {
        try {
          asw.markVolumeAsAttached('', vtm.volumeSpec, nodeName, attached.devicePath);
        } catch (err) {
          return errorPair(msgs, 'VerifyControllerAttachedVolume.MarkVolumeAsAttached failed', err);
        }
        this.log.info(msgs('Controller attach succeeded', `device path: ${goQuote(attached.devicePath)}`).detailed);
        asw.initializeClaimSize(vtm.volumeName, claimSize);
        return ok;
      }
      return errorPair(msgs, 'Volume not attached according to node status');
    };
    return {
      operationName: OperationNames.verifyControllerAttached,
      operationFunc,
      pluginName: fullyQualifiedPluginName(plugin.name, vtm.volumeSpec),
      migrated,
    };
  }

  // ATTACH / DETACH

  generateAttachVolumeFunc(vta: VolumeToAttach, asw: ActualStateOfWorldAttacherUpdater): GeneratedOperation {
    const msgs = (p: string, s: string): Messages => volumeToAttachMsg(vta, p, s);
    let pluginName = 'N/A';
    try {
      pluginName = this.pluginMgr.findPluginBySpec(vta.volumeSpec).name;
    } catch {
      // Reported by the operation itself.
    }
    const operationFunc = async (): Promise<OperationResult> => {
      let plugin;
      try {
        plugin = this.pluginMgr.findAttachablePluginBySpec(vta.volumeSpec);
        if (plugin === null) throw new Error('no attachable volume plugin matched');
      } catch (err) {
        return errorPair(msgs, 'AttachVolume.FindAttachablePluginBySpec failed', err);
      }
      let devicePath: string;
      try {
        devicePath = await plugin.newAttacher().attach(vta.volumeSpec, vta.nodeName);
      } catch (err) {
        asw.markVolumeAsUncertain(vta.volumeName, vta.volumeSpec, vta.nodeName);
        return errorPair(msgs, 'AttachVolume.Attach failed', err);
      }
      const simple = msgs('AttachVolume.Attach succeeded', '').simple;
      for (const pod of vta.scheduledPods) this.recorder.event(podObject(pod), 'Normal', SuccessfulAttachVolume, simple, vta.volumeName);
      this.log.info(msgs('AttachVolume.Attach succeeded', '').detailed);
      try {
        asw.markVolumeAsAttached('', vta.volumeSpec, vta.nodeName, devicePath);
      } catch (err) {
        return errorPair(msgs, 'AttachVolume.MarkVolumeAsAttached failed', err);
      }
      return ok;
    };
    return {
      operationName: OperationNames.attach,
      operationFunc,
      eventRecorderFunc: (err) => {
        if (err === undefined) return;
        for (const pod of vta.scheduledPods) this.recorder.event(podObject(pod), 'Warning', FailedAttachVolume, err.message, vta.volumeName);
      },
      pluginName: fullyQualifiedPluginName(pluginName, vta.volumeSpec),
      migrated: vta.volumeSpec.migrated === true,
    };
  }

  generateDetachVolumeFunc(av: AttachedVolume, asw: ActualStateOfWorldAttacherUpdater): GeneratedOperation {
    const msgs = (p: string, s: string): Messages => attachedVolumeMsg(av, p, s);
    let plugin;
    let volumeName: string;
    try {
      plugin = this.pluginMgr.findAttachablePluginBySpec(av.volumeSpec);
      if (plugin === null) throw new Error('no attachable volume plugin matched');
    } catch (err) {
      // Without a usable spec, fall back to the unique name (plugin/volume).
      try {
        const split = splitUniqueName(av.volumeName);
        plugin = this.pluginMgr.findAttachablePluginByName(split.pluginName);
        if (plugin === null) throw err;
      } catch {
        throw new Error(msgs('DetachVolume.findDetachablePluginBySpec failed', `: ${errorMessage(err)}`).detailed);
      }
    }
    try {
      volumeName = plugin.getVolumeName(av.volumeSpec);
    } catch {
      volumeName = splitUniqueName(av.volumeName).volumeName;
    }
    const detacher = plugin.newDetacher();
    const operationFunc = async (): Promise<OperationResult> => {
      try {
        await detacher.detach(volumeName, av.nodeName);
      } catch (err) {
        asw.markVolumeAsUncertain(av.volumeName, av.volumeSpec, av.nodeName);
        return errorPair(msgs, 'DetachVolume.Detach failed', err);
      }
      this.log.info(msgs('DetachVolume.Detach succeeded', '').detailed);
      asw.markVolumeAsDetached(av.volumeName, av.nodeName);
      return ok;
    };
    return {
      operationName: OperationNames.detach,
      operationFunc,
      pluginName: fullyQualifiedPluginName(plugin.name, av.volumeSpec),
      migrated: av.volumeSpec.migrated === true,
    };
  }

  /**
   * One batched check per plugin of whether the given attached volumes are still attached to
   * `nodeName` (`VolumesAreAttached`); each volume reported detached goes to
   * `markVolumeAsFoundDetached`, which keeps every pod entry that still stands for a mount (the
   * reconciler re-attaches the volume for desired pods and tears it down for the others).
   * `onResult` receives what was found.
   */
  generateVolumesAreAttachedFunc(
    attachedVolumes: readonly AttachedVolume[],
    nodeName: NodeName,
    asw: ActualStateOfWorldVerifierUpdater,
    onResult?: (result: { checked: UniqueVolumeName[]; foundDetached: UniqueVolumeName[]; errors: string[] }) => void,
  ): GeneratedOperation {
    const operationFunc = async (): Promise<OperationResult> => {
      const byPlugin = new Map<string, AttachedVolume[]>();
      const checked: UniqueVolumeName[] = [];
      const foundDetached: UniqueVolumeName[] = [];
      const errors: string[] = [];
      for (const av of attachedVolumes) {
        try {
          const plugin = this.pluginMgr.findAttachablePluginBySpec(av.volumeSpec);
          if (plugin === null) continue;
          const list = byPlugin.get(plugin.name) ?? [];
          list.push(av);
          byPlugin.set(plugin.name, list);
        } catch (err) {
          errors.push(`VolumesAreAttached.FindAttachablePluginBySpec failed for volume ${goQuote(av.volumeName)}: ${errorMessage(err)}`);
        }
      }
      for (const [pluginName, volumes] of byPlugin) {
        const plugin = this.pluginMgr.findAttachablePluginByName(pluginName);
        if (plugin === null) continue;
        try {
          const specs = volumes.map((v) => v.volumeSpec);
          const attached = await plugin.newAttacher().volumesAreAttached(specs, nodeName);
          for (const av of volumes) {
            checked.push(av.volumeName);
            if (attached.get(av.volumeSpec) === false) {
              this.log.warn(`VerifyVolumesAreAttached determined volume ${goQuote(av.volumeName)} (spec.Name: ${goQuote(specName(av.volumeSpec))}) is no longer attached to node ${goQuote(nodeName)}, therefore it was marked as detached.`);
              asw.markVolumeAsFoundDetached(av.volumeName, nodeName);
              foundDetached.push(av.volumeName);
            }
          }
        } catch (err) {
          errors.push(`VolumesAreAttached failed for plugin ${goQuote(pluginName)} on node ${goQuote(nodeName)}: ${errorMessage(err)}`);
        }
      }
      onResult?.({ checked, foundDetached, errors });
      if (errors.length > 0) {
        const err = new Error(errors.join('; '));
        return { eventErr: err, detailedErr: err };
      }
      return ok;
    };
    return { operationName: OperationNames.verifyVolumesAreAttached, operationFunc, pluginName: 'N/A', migrated: false };
  }

  // MOUNT (FILESYSTEM)

  generateMountVolumeFunc(
    waitForAttachTimeoutMs: number,
    vtm: VolumeToMount,
    asw: ActualStateOfWorldMounterUpdater,
    isRemount: boolean,
  ): GeneratedOperation {
    const msgs = (p: string, s: string): Messages => volumeToMountMsg(vtm, p, s);
    let pluginName = 'N/A';
    try {
      pluginName = this.pluginMgr.findPluginBySpec(vtm.volumeSpec).name;
    } catch {
      // Reported by the operation itself.
    }
    const operationFunc = async (): Promise<OperationResult> => {
      let plugin;
      try {
        plugin = this.pluginMgr.findPluginBySpec(vtm.volumeSpec);
      } catch (err) {
        return errorPair(msgs, 'MountVolume.FindPluginBySpec failed', err);
      }
      const affinityErr = this.checkNodeAffinity(vtm);
      if (affinityErr !== null) return errorPair(msgs, 'MountVolume.NodeAffinity check failed', affinityErr);
      let mounter;
      try {
        mounter = plugin.newMounter(vtm.volumeSpec, vtm.pod);
      } catch (err) {
        return errorPair(msgs, 'MountVolume.NewMounter initialization failed', err);
      }
      const mountOptionErr = this.checkMountOptionSupport(vtm, plugin.supportsMountOption());
      if (mountOptionErr !== null) return errorPair(msgs, 'MountVolume.MountOptionSupport check failed', mountOptionErr);
      const rwopErr = this.claimReadWriteOncePod(vtm, plugin.name, asw);
      if (rwopErr !== null) return errorPair(msgs, 'MountVolume.SetUp failed', rwopErr);

      const attacher = this.pluginMgr.findAttachablePluginBySpec(vtm.volumeSpec)?.newAttacher() ?? null;
      const deviceMounter = this.pluginMgr.findDeviceMountablePluginBySpec(vtm.volumeSpec)?.newDeviceMounter() ?? null;
      const podSc = vtm.pod.spec.securityContext;

      let devicePath = vtm.devicePath;
      if (attacher !== null) {
        this.log.info(msgs('MountVolume.WaitForAttach entering', `DevicePath ${goQuote(vtm.devicePath)}`).detailed);
        try {
          devicePath = await attacher.waitForAttach(vtm.volumeSpec, devicePath, vtm.pod, waitForAttachTimeoutMs);
        } catch (err) {
          return errorPair(msgs, 'MountVolume.WaitForAttach failed', err);
        }
        this.log.info(msgs('MountVolume.WaitForAttach succeeded', `DevicePath ${goQuote(devicePath)}`).detailed);
      }

      const resize: NodeResizeOptions = {
        volumeSpec: vtm.volumeSpec,
        devicePath,
        deviceMountPath: '',
        deviceStagePath: '',
        newSize: 0,
        oldSize: 0,
      };
      if (deviceMounter !== null && asw.getDeviceMountState(vtm.volumeName) !== 'DeviceGloballyMounted') {
        let deviceMountPath: string;
        try {
          deviceMountPath = await deviceMounter.getDeviceMountPath(vtm.volumeSpec);
        } catch (err) {
          return errorPair(msgs, 'MountVolume.GetDeviceMountPath failed', err);
        }
        try {
          await deviceMounter.mountDevice(vtm.volumeSpec, devicePath, deviceMountPath, {
            ...(podSc?.fsGroup !== undefined ? { fsGroup: podSc.fsGroup } : {}),
            seLinuxLabel: vtm.seLinuxLabel,
          });
        } catch (err) {
          this.markDeviceErrorState(vtm, devicePath, deviceMountPath, err, asw);
          return errorPair(msgs, 'MountVolume.MountDevice failed', err);
        }
        this.log.info(msgs('MountVolume.MountDevice succeeded', `device mount path ${goQuote(deviceMountPath)}`).detailed);
        try {
          asw.markDeviceAsMounted(vtm.volumeName, devicePath, deviceMountPath, vtm.seLinuxLabel);
        } catch (err) {
          return errorPair(msgs, 'MountVolume.MarkDeviceAsMounted failed', err);
        }
        resize.deviceStagePath = deviceMountPath;
      }
      if (deviceMounter !== null && resize.deviceStagePath === '') {
        try {
          resize.deviceStagePath = await deviceMounter.getDeviceMountPath(vtm.volumeSpec);
        } catch (err) {
          return errorPair(msgs, 'MountVolume.GetDeviceMountPath failed for expansion', err);
        }
      }

      const markOpts: MarkVolumeOpts = {
        podName: vtm.podName,
        podUID: (vtm.pod.metadata.uid ?? vtm.podName) as PodUID,
        volumeName: vtm.volumeName,
        mounter,
        blockVolumeMapper: null,
        outerVolumeSpecName: vtm.outerVolumeSpecName,
        volumeGidValue: vtm.volumeGidValue,
        volumeSpec: vtm.volumeSpec,
        volumeMountState: 'VolumeMounted',
        seLinuxMountContext: vtm.seLinuxLabel,
      };
      try {
        await mounter.setUp({
          ...(podSc?.runAsUser !== undefined ? { fsUser: podSc.runAsUser } : {}),
          ...(podSc?.fsGroup !== undefined ? { fsGroup: podSc.fsGroup } : {}),
          ...(podSc?.fsGroupChangePolicy !== undefined ? { fsGroupChangePolicy: podSc.fsGroupChangePolicy } : {}),
          desiredSize: vtm.desiredSizeLimit,
          seLinuxLabel: vtm.seLinuxLabel,
        });
      } catch (err) {
        this.markVolumeErrorState(vtm, markOpts, err, asw);
        return errorPair(msgs, 'MountVolume.SetUp failed', err);
      }
      const succeeded = msgs('MountVolume.SetUp succeeded', '').detailed;
      if (isRemount) this.log.info(succeeded);
      else this.log.info(succeeded);

      resize.deviceMountPath = mounter.getPath();
      try {
        await this.expandVolumeDuringMount(vtm, asw, resize);
      } catch (err) {
        this.log.error(`MountVolume.NodeExpandVolume failed with ${errorMessage(err)}`);
        try {
          asw.markVolumeMountAsUncertain(markOpts);
        } catch (markErr) {
          this.log.error(msgs('MountVolume.MarkVolumeMountAsUncertain failed', `: ${errorMessage(markErr)}`).detailed);
        }
        return errorPair(msgs, 'MountVolume.Setup failed while expanding volume', err);
      }

      this.observeOverallMount?.(
        fullyQualifiedPluginName(plugin.name, vtm.volumeSpec),
        (this.clock.now() - vtm.mountRequestTime) / 1000,
      );
      try {
        asw.markVolumeAsMounted(markOpts);
      } catch (err) {
        return errorPair(msgs, 'MountVolume.MarkVolumeAsMounted failed', err);
      }
      return ok;
    };
    return {
      operationName: OperationNames.mount,
      operationFunc: this.releasingReadWriteOncePod(vtm, operationFunc),
      eventRecorderFunc: (err) => {
        if (err !== undefined) this.recorder.event(podObject(vtm.pod), 'Warning', FailedMountVolume, err.message, vtm.volumeName);
      },
      pluginName: fullyQualifiedPluginName(pluginName, vtm.volumeSpec),
      migrated: vtm.volumeSpec.migrated === true,
    };
  }

  // MAP (BLOCK)

  generateMapVolumeFunc(waitForAttachTimeoutMs: number, vtm: VolumeToMount, asw: ActualStateOfWorldMounterUpdater): GeneratedOperation {
    const msgs = (p: string, s: string): Messages => volumeToMountMsg(vtm, p, s);
    let plugin;
    try {
      plugin = this.pluginMgr.findMapperPluginBySpec(vtm.volumeSpec);
    } catch (err) {
      throw new Error(msgs('MapVolume.FindMapperPluginBySpec failed', `: ${errorMessage(err)}`).detailed, { cause: err });
    }
    if (plugin === null) {
      throw new Error(msgs('MapVolume.FindMapperPluginBySpec failed to find BlockVolumeMapper plugin. Volume plugin is nil.', '').detailed);
    }
    const affinityErr = this.checkNodeAffinity(vtm);
    if (affinityErr !== null) {
      const pair = errorPair(msgs, 'MapVolume.NodeAffinity check failed', affinityErr);
      this.recorder.event(podObject(vtm.pod), 'Warning', FailedMountVolume, pair.eventErr.message, vtm.volumeName);
      throw pair.detailedErr;
    }
    let mapper: BlockVolumeMapper;
    try {
      mapper = plugin.newBlockVolumeMapper(vtm.volumeSpec, vtm.pod);
    } catch (err) {
      const pair = errorPair(msgs, 'MapVolume.NewBlockVolumeMapper initialization failed', err);
      this.recorder.event(podObject(vtm.pod), 'Warning', FailedMapVolume, pair.eventErr.message, vtm.volumeName);
      throw pair.detailedErr;
    }
    const attacher = this.pluginMgr.findAttachablePluginBySpec(vtm.volumeSpec)?.newAttacher() ?? null;
    const podUID = (vtm.pod.metadata.uid ?? vtm.podName) as PodUID;

    const operationFunc = async (): Promise<OperationResult> => {
      const rwopErr = this.claimReadWriteOncePod(vtm, plugin.name, asw);
      if (rwopErr !== null) return errorPair(msgs, 'MapVolume.SetUpDevice failed', rwopErr);
      let globalMapPath: string;
      try {
        globalMapPath = await mapper.getGlobalMapPath(vtm.volumeSpec);
      } catch (err) {
        return errorPair(msgs, 'MapVolume.GetGlobalMapPath failed', err);
      }
      let devicePath = vtm.devicePath;
      if (attacher !== null) {
        try {
          devicePath = await attacher.waitForAttach(vtm.volumeSpec, vtm.devicePath, vtm.pod, waitForAttachTimeoutMs);
        } catch (err) {
          return errorPair(msgs, 'MapVolume.WaitForAttach failed', err);
        }
      }
      let stagingPath = '';
      if (asw.getDeviceMountState(vtm.volumeName) !== 'DeviceGloballyMounted') {
        try {
          stagingPath = await mapper.setUpDevice();
        } catch (err) {
          this.markDeviceErrorState(vtm, devicePath, globalMapPath, err, asw);
          return errorPair(msgs, 'MapVolume.SetUpDevice failed', err);
        }
      }
      try {
        asw.markDeviceAsMounted(vtm.volumeName, devicePath, globalMapPath, '');
      } catch (err) {
        return errorPair(msgs, 'MapVolume.MarkDeviceAsMounted failed', err);
      }
      const markOpts: MarkVolumeOpts = {
        podName: vtm.podName,
        podUID,
        volumeName: vtm.volumeName,
        mounter: null,
        blockVolumeMapper: mapper,
        outerVolumeSpecName: vtm.outerVolumeSpecName,
        volumeGidValue: vtm.volumeGidValue,
        volumeSpec: vtm.volumeSpec,
        volumeMountState: 'VolumeMounted',
        seLinuxMountContext: '',
      };
      let pluginDevicePath: string;
      try {
        pluginDevicePath = await mapper.mapPodDevice();
      } catch (err) {
        this.markVolumeErrorState(vtm, markOpts, err, asw);
        return errorPair(msgs, 'MapVolume.MapPodDevice failed', err);
      }
      // From here on the device is mapped: any failure leaves the pod Uncertain so it is unmapped later.
      const failAfterMap = (prefix: string, err: unknown): OperationResult => {
        const pair = errorPair(msgs, prefix, err);
        this.markVolumeErrorState(vtm, markOpts, new UncertainProgressError(pair.eventErr.message), asw);
        return pair;
      };
      if (pluginDevicePath !== '') devicePath = pluginDevicePath;
      if (devicePath === '') return failAfterMap('MapVolume failed', new Error('device path of the volume is empty'));
      const { dir, name } = mapper.getPodDeviceMapPath();
      try {
        await this.blockPathHandler.mapBlockVolume(devicePath, globalMapPath, dir, name, podUID);
      } catch (err) {
        return failAfterMap('MapVolume.MapBlockVolume failed', err);
      }
      try {
        await this.expandVolumeDuringMount(vtm, asw, {
          volumeSpec: vtm.volumeSpec,
          devicePath,
          deviceMountPath: '',
          deviceStagePath: stagingPath,
          newSize: 0,
          oldSize: 0,
        });
      } catch (err) {
        const pair = errorPair(msgs, 'MapVolume.MarkVolumeAsMounted failed while expanding volume', err);
        try {
          asw.markVolumeMountAsUncertain(markOpts);
        } catch (markErr) {
          this.log.error(msgs('MountVolume.MarkVolumeMountAsUncertain failed', `: ${errorMessage(markErr)}`).detailed);
        }
        return pair;
      }
      try {
        asw.markVolumeAsMounted(markOpts);
      } catch (err) {
        return failAfterMap('MapVolume.MarkVolumeAsMounted failed', err);
      }
      return ok;
    };
    return {
      operationName: OperationNames.map,
      operationFunc: this.releasingReadWriteOncePod(vtm, operationFunc),
      eventRecorderFunc: (err) => {
        if (err !== undefined) this.recorder.event(podObject(vtm.pod), 'Warning', FailedMapVolume, err.message, vtm.volumeName);
      },
      pluginName: fullyQualifiedPluginName(plugin.name, vtm.volumeSpec),
      migrated: vtm.volumeSpec.migrated === true,
    };
  }

  // UNMOUNT / UNMAP

  generateUnmountVolumeFunc(mv: MountedVolume, asw: ActualStateOfWorldMounterUpdater, podsDir: string): GeneratedOperation {
    const msgs = (p: string, s: string): Messages => mountedVolumeMsg(mv, p, s);
    let unmounter;
    let pluginName: string;
    try {
      const plugin = this.pluginMgr.findPluginByName(mv.pluginName);
      pluginName = plugin.name;
      try {
        unmounter = plugin.newUnmounter(mv.innerVolumeSpecName, mv.podUID);
      } catch (err) {
        throw new Error(msgs('UnmountVolume.NewUnmounter failed', `: ${errorMessage(err)}`).detailed, { cause: err });
      }
    } catch (err) {
      if (err instanceof Error && err.message.startsWith('UnmountVolume.')) throw err;
      throw new Error(msgs('UnmountVolume.FindPluginByName failed', `: ${errorMessage(err)}`).detailed, { cause: err });
    }
    const operationFunc = async (): Promise<OperationResult> => {
      try {
        await this.subpather?.cleanSubPaths(`${podsDir}/${mv.podUID}`, mv.innerVolumeSpecName);
      } catch (err) {
        return errorPair(msgs, 'error cleaning subPath mounts', err);
      }
      try {
        await unmounter.tearDown();
      } catch (err) {
        try {
          asw.markVolumeMountAsUncertain({
            podName: mv.podName,
            podUID: mv.podUID,
            volumeName: mv.volumeName,
            mounter: null,
            blockVolumeMapper: null,
            outerVolumeSpecName: mv.outerVolumeSpecName,
            volumeGidValue: mv.volumeGidValue,
            volumeSpec: mv.volumeSpec,
            volumeMountState: 'VolumeMountUncertain',
            seLinuxMountContext: mv.seLinuxMountContext ?? '',
          });
        } catch (markErr) {
          this.log.error(msgs('UnmountVolume.MarkVolumeMountAsUncertain failed', `: ${errorMessage(markErr)}`).detailed);
        }
        return errorPair(msgs, 'UnmountVolume.TearDown failed', err);
      }
      this.log.info(
        `UnmountVolume.TearDown succeeded for volume ${goQuote(mv.volumeName)} (OuterVolumeSpecName: ${goQuote(mv.outerVolumeSpecName)}) pod ${goQuote(mv.podName)} (UID: ${goQuote(mv.podUID)}). InnerVolumeSpecName ${goQuote(mv.innerVolumeSpecName)}. PluginName ${goQuote(mv.pluginName)}, VolumeGidValue ${goQuote(mv.volumeGidValue)}`,
      );
      try {
        asw.markVolumeAsUnmounted(mv.podName, mv.volumeName);
      } catch (err) {
        this.log.error(msgs('UnmountVolume.MarkVolumeAsUnmounted failed', `: ${errorMessage(err)}`).detailed);
      }
      return ok;
    };
    return {
      operationName: OperationNames.unmount,
      operationFunc,
      pluginName: fullyQualifiedPluginName(pluginName, mv.volumeSpec),
      migrated: mv.volumeSpec.migrated === true,
    };
  }

  generateUnmapVolumeFunc(mv: MountedVolume, asw: ActualStateOfWorldMounterUpdater): GeneratedOperation {
    const msgs = (p: string, s: string): Messages => mountedVolumeMsg(mv, p, s);
    let plugin;
    try {
      plugin = this.pluginMgr.findMapperPluginByName(mv.pluginName);
    } catch (err) {
      throw new Error(msgs('UnmapVolume.FindMapperPluginByName failed', `: ${errorMessage(err)}`).detailed, { cause: err });
    }
    if (plugin === null) {
      throw new Error(msgs('UnmapVolume.FindMapperPluginByName failed to find BlockVolumeMapper plugin. Volume plugin is nil.', '').detailed);
    }
    let unmapper;
    try {
      unmapper = plugin.newBlockVolumeUnmapper(mv.innerVolumeSpecName, mv.podUID);
    } catch (err) {
      throw new Error(msgs('UnmapVolume.NewUnmapper failed', `: ${errorMessage(err)}`).detailed, { cause: err });
    }
    const operationFunc = async (): Promise<OperationResult> => {
      const markOpts: MarkVolumeOpts = {
        podName: mv.podName,
        podUID: mv.podUID,
        volumeName: mv.volumeName,
        mounter: null,
        blockVolumeMapper: null,
        outerVolumeSpecName: mv.outerVolumeSpecName,
        volumeGidValue: mv.volumeGidValue,
        volumeSpec: mv.volumeSpec,
        volumeMountState: 'VolumeMountUncertain',
        seLinuxMountContext: '',
      };
      // Uncertain until every step below succeeded, so a failure leads to another unmap.
      try {
        asw.markVolumeMountAsUncertain(markOpts);
      } catch (err) {
        return errorPair(msgs, 'UnmapVolume.MarkDeviceAsUncertain failed', err);
      }
      try {
        await this.blockPathHandler.unmapBlockVolume(mv.deviceMountPath, '', mv.innerVolumeSpecName, mv.podUID);
      } catch (err) {
        return errorPair(msgs, 'UnmapVolume.UnmapBlockVolume failed', err);
      }
      try {
        await unmapper.unmapPodDevice();
      } catch (err) {
        return errorPair(msgs, 'UnmapVolume.UnmapPodDevice failed', err);
      }
      try {
        asw.markVolumeAsUnmounted(mv.podName, mv.volumeName);
      } catch (err) {
        return errorPair(msgs, 'UnmapVolume.MarkVolumeAsUnmounted failed', err);
      }
      return ok;
    };
    return {
      operationName: OperationNames.unmap,
      operationFunc,
      pluginName: fullyQualifiedPluginName(plugin.name, mv.volumeSpec),
      migrated: mv.volumeSpec.migrated === true,
    };
  }

  // UNMOUNT DEVICE / UNMAP DEVICE

  generateUnmountDeviceFunc(av: AttachedVolume, asw: ActualStateOfWorldMounterUpdater): GeneratedOperation {
    const msgs = (p: string, s: string): Messages => attachedVolumeMsg(av, p, s);
    let plugin;
    try {
      plugin = this.pluginMgr.findDeviceMountablePluginByName(av.pluginName);
    } catch (err) {
      throw new Error(msgs('UnmountDevice.FindDeviceMountablePluginByName failed', `: ${errorMessage(err)}`).detailed, { cause: err });
    }
    if (plugin === null) {
      throw new Error(msgs('UnmountDevice.FindDeviceMountablePluginByName failed', '').detailed);
    }
    const deviceUnmounter = plugin.newDeviceUnmounter();
    const deviceMounter: DeviceMounter = plugin.newDeviceMounter();
    const operationFunc = async (): Promise<OperationResult> => {
      let deviceMountPath: string;
      try {
        deviceMountPath = await deviceMounter.getDeviceMountPath(av.volumeSpec);
      } catch (err) {
        if (!errorMessage(err).includes('does not exist')) return errorPair(msgs, 'GetDeviceMountPath failed', err);
        this.log.warn(`GetDeviceMountPath failed, but unmount operation will proceed using deviceMountPath=${av.deviceMountPath}: ${errorMessage(err)}`);
        deviceMountPath = av.deviceMountPath;
      }
      let refs: string[];
      try {
        refs = await plugin.getDeviceMountRefs(deviceMountPath);
      } catch (err) {
        return errorPair(msgs, 'GetDeviceMountRefs check failed', err);
      }
      if (hasMountRefs(deviceMountPath, refs)) {
        return errorPair(
          msgs,
          'GetDeviceMountRefs check failed',
          new Error(`the device mount path ${goQuote(deviceMountPath)} is still mounted by other references ${goSlice(refs)}`),
        );
      }
      try {
        await deviceUnmounter.unmountDevice(deviceMountPath);
      } catch (err) {
        try {
          asw.markDeviceAsUncertain(av.volumeName, av.devicePath, deviceMountPath, av.seLinuxMountContext ?? '');
        } catch (markErr) {
          this.log.error(msgs('UnmountDevice.MarkDeviceAsUncertain failed', `: ${errorMessage(markErr)}`).detailed);
        }
        return errorPair(msgs, 'UnmountDevice failed', err);
      }
      this.log.info(msgs('UnmountDevice succeeded', '').detailed);
      try {
        asw.markDeviceAsUnmounted(av.volumeName);
      } catch (err) {
        return errorPair(msgs, 'MarkDeviceAsUnmounted failed', err);
      }
      return ok;
    };
    return {
      operationName: OperationNames.unmountDevice,
      operationFunc,
      pluginName: fullyQualifiedPluginName(plugin.name, av.volumeSpec),
      migrated: av.volumeSpec.migrated === true,
    };
  }

  generateUnmapDeviceFunc(av: AttachedVolume, asw: ActualStateOfWorldMounterUpdater): GeneratedOperation {
    const msgs = (p: string, s: string): Messages => attachedVolumeMsg(av, p, s);
    let plugin;
    try {
      plugin = this.pluginMgr.findMapperPluginByName(av.pluginName);
    } catch (err) {
      throw new Error(msgs('UnmapDevice.FindMapperPluginByName failed', `: ${errorMessage(err)}`).detailed, { cause: err });
    }
    if (plugin === null) {
      throw new Error(msgs('UnmapDevice.FindMapperPluginByName failed to find BlockVolumeMapper plugin. Volume plugin is nil.', '').detailed);
    }
    let unmapper;
    try {
      unmapper = plugin.newBlockVolumeUnmapper(specName(av.volumeSpec), '' as PodUID);
    } catch (err) {
      throw new Error(msgs('UnmapDevice.NewUnmapper failed', `: ${errorMessage(err)}`).detailed, { cause: err });
    }
    const operationFunc = async (): Promise<OperationResult> => {
      const globalMapPath = av.deviceMountPath;
      let refs: string[];
      try {
        refs = await this.blockPathHandler.getDeviceBindMountRefs(av.devicePath, globalMapPath);
      } catch (err) {
        return errorPair(msgs, 'UnmapDevice.GetDeviceBindMountRefs check failed', err);
      }
      if (refs.length > 0) {
        return errorPair(msgs, 'UnmapDevice failed', new Error(`the device ${goQuote(globalMapPath)} is still referenced from other Pods ${goSlice(refs)}`));
      }
      try {
        asw.markDeviceAsUncertain(av.volumeName, av.devicePath, globalMapPath, '');
      } catch (err) {
        return errorPair(msgs, 'UnmapDevice.MarkDeviceAsUncertain failed', err);
      }
      try {
        await unmapper.tearDownDevice(globalMapPath, av.devicePath);
      } catch (err) {
        return errorPair(msgs, 'UnmapDevice.TearDownDevice failed', err);
      }
      try {
        await this.blockPathHandler.removeMapPath(globalMapPath);
      } catch (err) {
        return errorPair(msgs, 'UnmapDevice.RemoveMapPath failed', err);
      }
      this.log.info(msgs('UnmapDevice succeeded', '').detailed);
      try {
        asw.markDeviceAsUnmounted(av.volumeName);
      } catch (err) {
        return errorPair(msgs, 'MarkDeviceAsUnmounted failed', err);
      }
      return ok;
    };
    return {
      operationName: OperationNames.unmapDevice,
      operationFunc,
      pluginName: fullyQualifiedPluginName(plugin.name, av.volumeSpec),
      migrated: av.volumeSpec.migrated === true,
    };
  }

  // EXPANSION

  generateExpandInUseVolumeFunc(vtm: VolumeToMount, asw: ActualStateOfWorldMounterUpdater, currentSize: number): GeneratedOperation {
    const msgs = (p: string, s: string): Messages => volumeToMountMsg(vtm, p, s);
    let plugin;
    try {
      plugin = this.pluginMgr.findPluginBySpec(vtm.volumeSpec);
    } catch (err) {
      throw new Error(msgs('NodeExpandVolume.FindPluginBySpec failed', `: ${errorMessage(err)}`).detailed, { cause: err });
    }
    const operationFunc = async (): Promise<OperationResult> => {
      if (currentSize === 0 || vtm.desiredPersistentVolumeSize === 0) {
        return errorPair(msgs, 'NodeExpandvolume.expansion failed', new Error('current or new size of the volume is not set'));
      }
      const resize: NodeResizeOptions = {
        volumeSpec: vtm.volumeSpec,
        devicePath: vtm.devicePath,
        deviceMountPath: '',
        deviceStagePath: '',
        oldSize: currentSize,
        newSize: vtm.desiredPersistentVolumeSize,
      };
      if (!isBlockSpec(vtm.volumeSpec)) {
        try {
          resize.deviceMountPath = plugin.newMounter(vtm.volumeSpec, vtm.pod).getPath();
        } catch (err) {
          return errorPair(msgs, 'NodeExpandVolume.NewMounter initialization failed', err);
        }
        const deviceMounter = this.pluginMgr.findDeviceMountablePluginBySpec(vtm.volumeSpec)?.newDeviceMounter() ?? null;
        if (deviceMounter !== null) {
          try {
            resize.deviceStagePath = await deviceMounter.getDeviceMountPath(vtm.volumeSpec);
          } catch (err) {
            return errorPair(msgs, 'NodeExpandVolume.GetDeviceMountPath failed', err);
          }
        }
      }
      let done: boolean;
      try {
        done = await this.nodeExpandVolume(vtm, asw, resize);
      } catch (err) {
        const pair = errorPair(msgs, 'NodeExpandVolume.NodeExpandVolume failed', err);
        this.log.error(pair.detailedErr.message);
        return pair;
      }
      if (!done) {
        return errorPair(msgs, 'NodeExpandVolume.NodeExpandVolume failed to resize volume', new Error('volume resizing failed for unknown reason'));
      }
      if (!asw.markVolumeAsResized(vtm.volumeName, resize.newSize)) {
        return errorPair(msgs, 'NodeExpandVolume.MarkVolumeAsResized failed', new Error('unable to mark volume as resized'));
      }
      return ok;
    };
    return {
      operationName: OperationNames.expandInUse,
      operationFunc,
      eventRecorderFunc: (err) => {
        if (err !== undefined) this.recorder.event(podObject(vtm.pod), 'Warning', VolumeResizeFailed, err.message, vtm.volumeName);
      },
      pluginName: fullyQualifiedPluginName(plugin.name, vtm.volumeSpec),
      migrated: vtm.volumeSpec.migrated === true,
    };
  }

  // HELPERS

  /**
   * `markDeviceErrorState`: a final error on an Uncertain device marks it not mounted (unless it
   * was reconstructed, which keeps it Uncertain); an uncertain error on a NotMounted device
   * marks it Uncertain. A GloballyMounted device is never downgraded.
   */
  private markDeviceErrorState(vtm: VolumeToMount, devicePath: string, deviceMountPath: string, err: unknown, asw: ActualStateOfWorldMounterUpdater): void {
    const state = asw.getDeviceMountState(vtm.volumeName);
    if (isOperationFinishedError(err) && state === 'DeviceMountUncertain') {
      if (asw.isVolumeDeviceReconstructed(vtm.volumeName)) {
        this.log.info(`MountVolume.markDeviceErrorState leaving volume uncertain: ${vtm.volumeName}`);
        return;
      }
      asw.markDeviceAsUnmounted(vtm.volumeName);
      return;
    }
    if (isUncertainProgressError(err) && state === 'DeviceNotMounted') {
      asw.markDeviceAsUncertain(vtm.volumeName, devicePath, deviceMountPath, vtm.seLinuxLabel);
    }
  }

  /** `markVolumeErrorState`: the same rules for the pod's mount entry. */
  private markVolumeErrorState(vtm: VolumeToMount, opts: MarkVolumeOpts, err: unknown, asw: ActualStateOfWorldMounterUpdater): void {
    const state = asw.getVolumeMountState(vtm.volumeName, opts.podName);
    if (isOperationFinishedError(err) && state === 'VolumeMountUncertain') {
      if (asw.isVolumeReconstructed(vtm.volumeName, vtm.podName)) {
        this.log.info(`MountVolume.markVolumeErrorState leaving volume uncertain: ${vtm.volumeName}`);
        return;
      }
      asw.markVolumeAsUnmounted(vtm.podName, vtm.volumeName);
      return;
    }
    if (isUncertainProgressError(err) && state === 'VolumeNotMounted') {
      asw.markVolumeMountAsUncertain(opts);
    }
  }

  /**
   * `ReadWriteOncePod`, for every plugin. Upstream refuses the mount when
   * `IsVolumeMountedElsewhere` (by unique volume name) and the PV's only access mode is
   * ReadWriteOncePod, and leaves the rest to the scheduler: a plugin that names its volumes per
   * pod (local, hostPath, CSI without attach and stage) never sees the other pod. Here the PV is
   * also looked up by name among the other pods' entries, and a mount or map of the same PV
   * already running for another pod counts as a use (such operations have different keys and
   * may run together). When the mount may go on, the PV is claimed for this pod until the
   * operation ends ({@link releasingReadWriteOncePod}) and null is returned.
   */
  private claimReadWriteOncePod(vtm: VolumeToMount, plugin: PluginName, asw: ActualStateOfWorldMounterUpdater): ReadWriteOncePodInUseError | null {
    const modes = specAccessModes(vtm.volumeSpec);
    // With several modes the pod's intent is unknown (upstream's reason too).
    if (modes.length !== 1 || modes[0] !== 'ReadWriteOncePod') return null;
    const pvName = vtm.volumeSpec.persistentVolume?.metadata.name ?? '';
    const runningFor = this.readWriteOncePodMounts.get(pvName);
    if (
      asw.isVolumeMountedElsewhere(vtm.volumeName, vtm.podName) ||
      asw.isPersistentVolumeMountedElsewhere(pvName, plugin, vtm.podName) ||
      (runningFor !== undefined && runningFor !== vtm.podName)
    ) {
      return new ReadWriteOncePodInUseError();
    }
    this.readWriteOncePodMounts.set(pvName, vtm.podName);
    return null;
  }

  /** Wraps a mount or map operation so that its ReadWriteOncePod claim ends with it. */
  private releasingReadWriteOncePod(vtm: VolumeToMount, operationFunc: () => Promise<OperationResult>): () => Promise<OperationResult> {
    const pvName = vtm.volumeSpec.persistentVolume?.metadata.name ?? '';
    return async () => {
      try {
        return await operationFunc();
      } finally {
        if (this.readWriteOncePodMounts.get(pvName) === vtm.podName) this.readWriteOncePodMounts.delete(pvName);
      }
    };
  }

  /** PV node affinity against the node's labels is not modelled here: nodes carry no labels in the engine. */
  private checkNodeAffinity(_vtm: VolumeToMount): Error | null {
    return null;
  }

  private checkMountOptionSupport(vtm: VolumeToMount, pluginSupportsMountOptions: boolean): Error | null {
    const options = vtm.volumeSpec.persistentVolume?.spec.mountOptions ?? [];
    if (options.length > 0 && !pluginSupportsMountOptions) {
      return new Error(`mount options are not supported for this volume type`);
    }
    return null;
  }

  private async getClaimOf(claimRef: { namespace?: string; name?: string } | undefined): Promise<PersistentVolumeClaim> {
    if (this.kubeClient === undefined) throw new Error('no client to fetch the PersistentVolumeClaim');
    if (claimRef?.name === undefined) throw new Error('PersistentVolume has no claimRef');
    return this.kubeClient.getPersistentVolumeClaim(claimRef.namespace ?? 'default', claimRef.name);
  }

  private expandablePlugin(vtm: VolumeToMount): NodeExpandableVolumePlugin | null {
    if (vtm.volumeSpec.inlineVolumeSpecForCSIMigration === true) return null;
    let plugin;
    try {
      plugin = this.pluginMgr.findNodeExpandablePluginBySpec(vtm.volumeSpec);
    } catch {
      return null;
    }
    if (plugin === null || !plugin.requiresFSResize() || vtm.volumeSpec.persistentVolume === undefined) return null;
    return plugin;
  }

  /** Offline expansion while mounting: only when the claim's status is smaller than the PV. */
  private async expandVolumeDuringMount(vtm: VolumeToMount, asw: ActualStateOfWorldMounterUpdater, resize: NodeResizeOptions): Promise<boolean> {
    const plugin = this.expandablePlugin(vtm);
    const pv = vtm.volumeSpec.persistentVolume;
    if (plugin === null || pv === undefined) return true;
    let pvc: PersistentVolumeClaim;
    try {
      pvc = await this.getClaimOf(pv.spec.claimRef);
    } catch (err) {
      throw new Error(`mountVolume.NodeExpandVolume get PVC failed : ${errorMessage(err)}`, { cause: err });
    }
    const pvcStatusCap = storageOf(pvc.status?.capacity);
    const pvSpecCap = storageOf(pv.spec.capacity);
    if (pvcStatusCap >= pvSpecCap) return true;
    return this.callNodeExpandOnPlugin(vtm, asw, plugin, pvc, { ...resize, newSize: pvSpecCap, oldSize: pvcStatusCap });
  }

  /** Online expansion (`nodeExpandVolume`), using the sizes handed over by the caller. */
  private async nodeExpandVolume(vtm: VolumeToMount, asw: ActualStateOfWorldMounterUpdater, resize: NodeResizeOptions): Promise<boolean> {
    const plugin = this.expandablePlugin(vtm);
    const pv = vtm.volumeSpec.persistentVolume;
    if (plugin === null || pv === undefined || resize.newSize <= resize.oldSize) return true;
    let pvc: PersistentVolumeClaim;
    try {
      pvc = await this.getClaimOf(pv.spec.claimRef);
    } catch (err) {
      throw new Error(`mountVolume.NodeExpandVolume get PVC failed : ${errorMessage(err)}`, { cause: err });
    }
    return this.callNodeExpandOnPlugin(vtm, asw, plugin, pvc, resize);
  }

  /** `legacyCallNodeExpandOnPlugin`: FailedPrecondition stops further resizes; NotSupported counts as done. */
  private async callNodeExpandOnPlugin(
    vtm: VolumeToMount,
    asw: ActualStateOfWorldMounterUpdater,
    plugin: NodeExpandableVolumePlugin,
    pvc: PersistentVolumeClaim,
    resize: NodeResizeOptions,
  ): Promise<boolean> {
    // A read-only volume is never resized: events say so, and the step counts as done.
    if (vtm.volumeSpec.readOnly) {
      const simple = volumeToMountMsg(vtm, 'MountVolume.NodeExpandVolume failed', 'requested read-only file system').simple;
      this.recorder.event(podObject(vtm.pod), 'Warning', FileSystemResizeFailed, simple, vtm.volumeName);
      this.recorder.event(claimObject(pvc), 'Warning', FileSystemResizeFailed, simple, vtm.volumeName);
      return true;
    }
    try {
      await plugin.nodeExpand(resize);
    } catch (err) {
      if (isFailedPreconditionError(err)) {
        asw.markForInUseExpansionError(vtm.volumeName);
        this.log.error(volumeToMountMsg(vtm, 'MountVolume.NodeExapndVolume failed with', `: ${errorMessage(err)}`).detailed);
        return true;
      }
      if (isOperationNotSupportedError(err)) {
        this.log.info(volumeToMountMsg(vtm, 'MountVolume.NodeExpandVolume failed', `: ${errorMessage(err)}`).detailed);
        return true;
      }
      throw err;
    }
    const m = volumeToMountMsg(vtm, 'MountVolume.NodeExpandVolume succeeded', vtm.pod.spec.nodeName ?? '');
    this.recorder.event(podObject(vtm.pod), 'Normal', FileSystemResizeSuccessful, m.simple, vtm.volumeName);
    this.recorder.event(claimObject(pvc), 'Normal', FileSystemResizeSuccessful, m.simple, vtm.volumeName);
    this.log.info(m.detailed);
    try {
      await this.kubeClient?.markFSResizeFinished?.(pvc, resize.newSize);
    } catch (err) {
      throw new Error(`mountVolume.NodeExpandVolume update PVC status failed : ${errorMessage(err)}`, { cause: err });
    }
    return true;
  }
}
