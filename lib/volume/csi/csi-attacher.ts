/**
 * The CSI attacher, device mounter, device unmounter and detacher (kubelet `csiAttacher`,
 * pkg/volume/csi/csi_attacher.go), for an agent that runs without the controller-side
 * attach/detach controller ("standalone"):
 *
 * - Attach calls the driver's ControllerPublishVolume itself, with the driver's node id from
 *   NodeGetInfo, and keeps the returned publish context. (Upstream the kubelet refuses to
 *   attach; the ADC creates a VolumeAttachment and external-attacher publishes.) A driver
 *   without PUBLISH_UNPUBLISH_VOLUME needs no controller publish: attach is a no-op.
 * - WaitForAttach has nothing to wait for: the attachment was made by our own call. It returns
 *   the attachment name (`csi-<sha256>`, as upstream returns the VolumeAttachment name) when a
 *   publish context is known, in memory or persisted in the staging vol_data.json.
 * - MountDevice = NodeStageVolume, UnmountDevice = NodeUnstageVolume, with the staging
 *   vol_data.json written before the call and removed only after it succeeded.
 * - Attach writes a durable attach intent record before ControllerPublishVolume; Detach calls
 *   ControllerUnpublishVolume and removes the record after it succeeded (see vol-data.ts), so a
 *   restarted agent can detach what it may have attached (CsiPlugin.reconstructDeviceVolumes).
 * - VolumesAreAttached asks the driver: one paginated ListVolumes when it has
 *   LIST_VOLUMES_PUBLISHED_NODES, else ControllerGetVolume per volume.
 *
 * Error contract, as upstream: only NodeStageVolume can be uncertain (a non-final gRPC error
 * becomes UncertainProgressError, the staging dir and vol_data.json stay). The STAGE_UNSTAGE_VOLUME
 * probe of MountDevice runs before anything is written and its failure is final; the
 * VOLUME_MOUNT_GROUP probe, reading the publish context (VolumeAttachment or our own attachment),
 * a driver that is not registered and a secret that cannot be read are transient
 * (TransientOperationFailure: no state change, retried). Every other call's failure is a plain
 * error. Block volumes are not supported (see README.md).
 */
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { isOperationFinishedError, TransientOperationFailure } from '../errors.ts';
import type { Pod } from '../k8s-types.ts';
import type { Attacher, DeviceMounterArgs, Detacher } from '../plugins.ts';
import type { Spec } from '../spec.ts';
import type { NodeName } from '../types.ts';
import { classifyCsiError, csiCallError, isCsiRpcError } from './csi-errors.ts';
import type { CsiPluginContext } from './csi-plugin-context.ts';
import type { ControllerVolumeStatus, NodeCapability, StringMap } from './csi-types.ts';
import {
  addSELinuxMountOption,
  asCSIAccessMode,
  getCredentialsFromSecret,
  getPVSourceFromSpec,
  log,
  mountCapability,
  removeMountDir,
  specAccessMode,
} from './csi-util.ts';
import {
  attachmentName,
  deviceMountPath,
  loadAttachIntent,
  loadVolumeData,
  removeAttachIntent,
  saveAttachIntent,
  saveVolumeData,
  VOL_NAME_SEP,
  volDataKey,
} from './vol-data.ts';

/** Options of the attacher that callers may tune. */
export interface CsiAttacherOptions {
  /** `max_entries` of each ListVolumes page in volumesAreAttached; default 100. */
  listVolumesPageSize: number;
  /** Whether the plugin supports SELinux context mounts for a spec (CSIDriver seLinuxMount). */
  supportsSELinuxContextMount: (spec: Spec) => boolean;
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class CsiAttacher implements Attacher, Detacher {
  constructor(
    private readonly ctx: CsiPluginContext,
    private readonly opts: CsiAttacherOptions,
  ) {}

  async attach(spec: Spec, node: NodeName): Promise<string> {
    let pvSrc;
    try {
      pvSrc = getPVSourceFromSpec(spec);
    } catch (err) {
      throw new Error(log(`attacher.Attach failed to get CSIPersistentVolumeSource: ${errText(err)}`), { cause: err });
    }
    const { driver, volumeHandle } = pvSrc;
    this.requireOwnNode('attacher.Attach', node, volumeHandle);
    if (this.ctx.skipAttach(driver)) return '';
    const client = this.ctx.client(driver, 'attacher.Attach failed to create newCsiDriverClient');
    const controllerCaps = this.ctx.registry.controllerCapabilities(driver) ?? new Set();
    if (!controllerCaps.has('PUBLISH_UNPUBLISH_VOLUME')) {
      // external-attacher marks such volumes attached without calling the driver.
      this.ctx.rememberAttachment({ driverName: driver, volumeHandle, publishContext: {} });
      this.ctx.log.info(log(`attacher.Attach: driver ${driver} has no PUBLISH_UNPUBLISH_VOLUME capability, nothing to attach for volume ${volumeHandle}`));
      return '';
    }
    const nodeId = this.nodeIdOf(driver, 'attacher.Attach');
    const secretRef = pvSrc.controllerPublishSecretRef;
    const secrets = secretRef === undefined ? {} : this.secrets('ControllerPublishSecretRef', secretRef.namespace ?? 'default', secretRef.name);
    // Recorded durably before the call: a kill during it leaves a record from which a restarted
    // agent detaches the volume if no pod wants it (kept on failure too: the publish may have
    // happened; ControllerUnpublishVolume of an unpublished volume succeeds).
    try {
      await saveAttachIntent(this.ctx.rootDir, {
        driverName: driver,
        volumeHandle,
        nodeName: this.ctx.nodeName,
        ...(secretRef === undefined ? {} : { controllerPublishSecretRef: secretRef }),
      });
    } catch (err) {
      throw new Error(log(`attacher.Attach failed to record the attach of volume [${volumeHandle}]: ${errText(err)}`), { cause: err });
    }
    let publishContext: StringMap;
    try {
      const resp = await client.controllerPublishVolume(
        {
          volume_id: volumeHandle,
          node_id: nodeId,
          volume_capability: mountCapability(
            pvSrc.fsType ?? '',
            spec.persistentVolume?.spec.mountOptions ?? [],
            asCSIAccessMode(specAccessMode(spec), controllerCaps.has('SINGLE_NODE_MULTI_WRITER')),
          ),
          readonly: pvSrc.readOnly ?? false,
          secrets,
          volume_context: pvSrc.volumeAttributes ?? {},
        },
        this.ctx.callOptions(),
      );
      publishContext = resp.publish_context;
    } catch (err) {
      throw csiCallError(err, log(`attacher.Attach failed to ControllerPublishVolume [${volumeHandle}] to node ${nodeId}: `));
    }
    this.ctx.rememberAttachment({
      driverName: driver,
      volumeHandle,
      publishContext,
      ...(secretRef === undefined ? {} : { controllerPublishSecretRef: secretRef }),
    });
    this.ctx.log.info(log(`attacher.Attach finished OK for volume ${volumeHandle} on node ${node} (CSI node id ${nodeId})`));
    // As upstream: no device path; WaitForAttach returns the attachment name.
    return '';
  }

  async volumesAreAttached(specs: readonly Spec[], node: NodeName): Promise<Map<Spec, boolean>> {
    const attached = new Map<Spec, boolean>();
    const byDriver = new Map<string, { spec: Spec; handle: string }[]>();
    for (const spec of specs) {
      let pvSrc;
      try {
        pvSrc = getPVSourceFromSpec(spec);
      } catch (err) {
        attached.set(spec, false);
        this.ctx.log.error(log(`attacher.VolumesAreAttached failed to get CSIPersistentVolumeSource: ${errText(err)}`));
        continue;
      }
      if (this.ctx.skipAttach(pvSrc.driver)) {
        // Not attachable: pretend it is attached.
        attached.set(spec, true);
        continue;
      }
      const list = byDriver.get(pvSrc.driver) ?? [];
      list.push({ spec, handle: pvSrc.volumeHandle });
      byDriver.set(pvSrc.driver, list);
    }
    for (const [driver, volumes] of byDriver) {
      try {
        const published = await this.publishedOnNode(driver, volumes.map((v) => v.handle), node);
        for (const v of volumes) {
          const state = published.get(v.handle);
          if (state !== undefined) attached.set(v.spec, state);
        }
      } catch (err) {
        // Unknown state: the caller leaves these volumes as they are.
        this.ctx.log.warn(log(`attacher.VolumesAreAttached could not verify ${volumes.length} volume(s) of driver ${driver}: ${errText(err)}`));
      }
    }
    return attached;
  }

  /**
   * Whether each handle is published to `node`, per the driver. Handles whose state cannot be
   * determined are missing from the result.
   */
  private async publishedOnNode(driver: string, handles: readonly string[], node: NodeName): Promise<Map<string, boolean>> {
    const out = new Map<string, boolean>();
    if (node !== this.ctx.nodeName) {
      throw new Error(`the CSI node id of node ${node} is unknown to this agent (it runs on ${this.ctx.nodeName})`);
    }
    const client = this.ctx.client(driver, 'attacher.VolumesAreAttached failed to create newCsiDriverClient');
    const caps = this.ctx.registry.controllerCapabilities(driver) ?? new Set();
    const nodeId = this.nodeIdOf(driver, 'attacher.VolumesAreAttached');
    const isPublished = (status: ControllerVolumeStatus | null): boolean => status?.published_node_ids.includes(nodeId) === true;
    if (!caps.has('PUBLISH_UNPUBLISH_VOLUME')) {
      // Nothing is ever controller-published: attached as far as attach/detach is concerned.
      for (const h of handles) out.set(h, true);
      return out;
    }
    if (caps.has('LIST_VOLUMES') && caps.has('LIST_VOLUMES_PUBLISHED_NODES')) {
      const entries = await client.listAllVolumes(this.opts.listVolumesPageSize, this.ctx.callOptions());
      const byId = new Map(entries.filter((e) => e.volume !== null).map((e) => [e.volume?.volume_id ?? '', e.status]));
      for (const h of handles) out.set(h, byId.has(h) && isPublished(byId.get(h) ?? null));
      return out;
    }
    if (caps.has('GET_VOLUME')) {
      for (const h of handles) {
        try {
          const resp = await client.controllerGetVolume(h, this.ctx.callOptions());
          out.set(h, isPublished(resp.status));
        } catch (err) {
          if (isCsiRpcError(err) && err.code === GrpcStatus.NOT_FOUND) out.set(h, false);
          else this.ctx.log.warn(log(`attacher.VolumesAreAttached: ControllerGetVolume [${h}] failed: ${errText(err)}`));
        }
      }
      return out;
    }
    throw new Error(`driver ${driver} offers neither LIST_VOLUMES_PUBLISHED_NODES nor GET_VOLUME; attachments cannot be verified`);
  }

  async waitForAttach(spec: Spec, _devicePath: string, _pod: Pod, _timeoutMs: number): Promise<string> {
    let pvSrc;
    try {
      pvSrc = getPVSourceFromSpec(spec);
    } catch (err) {
      throw new Error(log(`attacher.WaitForAttach failed to extract CSI volume source: ${errText(err)}`), { cause: err });
    }
    const attachID = attachmentName(pvSrc.volumeHandle, pvSrc.driver, this.ctx.nodeName);
    if (this.ctx.skipAttach(pvSrc.driver)) return '';
    const publishContext = await this.ctx.publishContextFor(pvSrc.driver, pvSrc.volumeHandle);
    if (publishContext === null) {
      this.ctx.log.error(log(`attacher.WaitForAttach failed for volume [${pvSrc.volumeHandle}] attached (will continue to try)`));
      throw new Error(`volume ${pvSrc.volumeHandle} is not attached for volume attachment ${attachID}`);
    }
    return attachID;
  }

  getDeviceMountPath(spec: Spec): Promise<string> {
    try {
      const pvSrc = getPVSourceFromSpec(spec);
      if (pvSrc.driver === '') throw new Error('makeDeviceMountPath failed, csi source driver name is empty');
      if (pvSrc.volumeHandle === '') throw new Error('makeDeviceMountPath failed, CSIPersistentVolumeSource volume handle is empty');
      return Promise.resolve(deviceMountPath(this.ctx.rootDir, pvSrc.driver, pvSrc.volumeHandle));
    } catch (err) {
      return Promise.reject(new Error(log(`attacher.GetDeviceMountPath failed to make device mount path: ${errText(err)}`), { cause: err }));
    }
  }

  async mountDevice(spec: Spec, _devicePath: string, stagingPath: string, args: DeviceMounterArgs): Promise<void> {
    if (stagingPath === '') throw new Error(log('attacher.MountDevice failed, deviceMountPath is empty'));
    let pvSrc;
    try {
      pvSrc = getPVSourceFromSpec(spec);
    } catch (err) {
      throw new Error(log(`attacher.MountDevice failed to get CSIPersistentVolumeSource: ${errText(err)}`), { cause: err });
    }
    const { driver, volumeHandle } = pvSrc;
    const client = this.ctx.client(driver, 'attacher.MountDevice failed to create newCsiDriverClient');
    // Nothing is written yet: a failed probe is final (upstream returns the error as is).
    let stageUnstageSet: boolean;
    try {
      stageUnstageSet = (await this.ctx.nodeCapabilities(driver)).has('STAGE_UNSTAGE_VOLUME');
    } catch (err) {
      throw csiCallError(err, log('attacher.MountDevice failed to check for STAGE_UNSTAGE_VOLUME capability: '));
    }

    let publishContext: StringMap | null;
    try {
      publishContext = this.ctx.skipAttach(driver) ? {} : await this.ctx.publishContextFor(driver, volumeHandle);
    } catch (err) {
      // A VolumeAttachment that cannot be read now may be readable later: transient, as upstream.
      throw new TransientOperationFailure(errText(err), { cause: err });
    }
    if (publishContext === null) {
      const attachID = attachmentName(volumeHandle, driver, this.ctx.nodeName);
      throw new TransientOperationFailure(`volume ${volumeHandle} is not attached for volume attachment ${attachID}`);
    }
    let secrets: StringMap = {};
    const secretRef = pvSrc.nodeStageSecretRef;
    if (secretRef !== undefined && stageUnstageSet) {
      secrets = this.secrets('NodeStageSecretRef', secretRef.namespace ?? 'default', secretRef.name);
    }
    let mountOptions = spec.persistentVolume?.spec.mountOptions ?? [];
    let seLinuxMountContext: string | null = null;
    if (args.seLinuxLabel !== '' && this.opts.supportsSELinuxContextMount(spec)) {
      mountOptions = addSELinuxMountOption(mountOptions, args.seLinuxLabel);
      seLinuxMountContext = args.seLinuxLabel;
    }

    // Store volume metadata for UnmountDevice, and the publish context for a restarted agent.
    // Kept even when the driver does not stage: UnmountDevice still needs it.
    try {
      await mkdir(stagingPath, { recursive: true, mode: 0o750 });
    } catch (err) {
      throw new Error(log(`attacher.MountDevice failed to create dir "${stagingPath}":  ${errText(err)}`), { cause: err });
    }
    const data: Record<string, string> = {
      [volDataKey.volHandle]: volumeHandle,
      [volDataKey.driverName]: driver,
      [volDataKey.publishContext]: JSON.stringify(publishContext),
    };
    if (seLinuxMountContext !== null) data[volDataKey.seLinuxMountContext] = seLinuxMountContext;
    try {
      await saveVolumeData(dirname(stagingPath), data);
    } catch (err) {
      await this.cleanUpStaging(stagingPath);
      throw new Error(log(`failed to save volume info data: ${errText(err)}`), { cause: err });
    }

    if (!stageUnstageSet) {
      this.ctx.log.info(log('attacher.MountDevice STAGE_UNSTAGE_VOLUME capability not set. Skipping MountDevice...'));
      return;
    }
    // The second probe, as upstream (NodeSupportsVolumeMountGroup): transient, so the directory
    // and vol_data.json stay and no state changes.
    let caps: ReadonlySet<NodeCapability>;
    try {
      caps = await this.ctx.nodeCapabilities(driver);
    } catch (err) {
      throw new TransientOperationFailure(
        log(`attacher.MountDevice failed to determine if the node service has VOLUME_MOUNT_GROUP capability: ${errText(err)}`),
        { cause: err },
      );
    }
    let volumeMountGroup: string | undefined;
    if (caps.has('VOLUME_MOUNT_GROUP') && args.fsGroup !== undefined) volumeMountGroup = String(args.fsGroup);
    try {
      await client.nodeStageVolume(
        {
          volume_id: volumeHandle,
          publish_context: publishContext,
          staging_target_path: stagingPath,
          volume_capability: mountCapability(
            pvSrc.fsType ?? '',
            mountOptions,
            asCSIAccessMode(specAccessMode(spec), caps.has('SINGLE_NODE_MULTI_WRITER')),
            volumeMountGroup,
          ),
          secrets,
          volume_context: pvSrc.volumeAttributes ?? {},
        },
        this.ctx.callOptions(),
      );
    } catch (err) {
      const failure = classifyCsiError(err);
      // Only a final error proves NodeStage is not running: then the directory may go.
      if (isOperationFinishedError(failure)) await this.cleanUpStaging(stagingPath);
      throw failure;
    }
    this.ctx.log.info(log(`attacher.MountDevice successfully requested NodeStageVolume [${stagingPath}]`));
  }

  async unmountDevice(stagingPath: string): Promise<void> {
    const dataDir = dirname(stagingPath);
    let data: Record<string, string>;
    try {
      data = await loadVolumeData(dataDir);
    } catch (err) {
      if ((err as { notFound?: boolean }).notFound === true) {
        this.ctx.log.info(log(`attacher.UnmountDevice skipped because volume data file [${dataDir}] does not exist`));
        return;
      }
      throw new Error(log(`attacher.UnmountDevice failed to get driver and volume name from device mount path: ${errText(err)}`), { cause: err });
    }
    const driver = data[volDataKey.driverName] ?? '';
    const volumeHandle = data[volDataKey.volHandle] ?? '';
    if (driver === '' || volumeHandle === '') {
      throw new Error(log(`attacher.UnmountDevice failed: the volume data file in [${dataDir}] lacks ${volDataKey.driverName} or ${volDataKey.volHandle}`));
    }
    const client = this.ctx.client(driver, 'attacher.UnmountDevice failed to create newCsiDriverClient');
    let caps;
    try {
      caps = await this.ctx.nodeCapabilities(driver);
    } catch (err) {
      throw csiCallError(err, log('attacher.UnmountDevice failed to check whether STAGE_UNSTAGE_VOLUME set: '));
    }
    if (caps.has('STAGE_UNSTAGE_VOLUME')) {
      try {
        await client.nodeUnstageVolume({ volume_id: volumeHandle, staging_target_path: stagingPath }, this.ctx.callOptions());
      } catch (err) {
        throw csiCallError(err, log('attacher.UnmountDevice failed: '));
      }
    } else {
      this.ctx.log.info(log('attacher.UnmountDevice STAGE_UNSTAGE_VOLUME capability not set. Skipping UnmountDevice...'));
    }
    // Delete the global directory + json file, only now that the driver let go of it. A path the
    // driver left mounted after a successful NodeUnstage is kept with its vol_data.json and is not
    // an UnmountDevice error (upstream's removeMountDir): the driver answered for its unstage.
    let removed: boolean;
    try {
      removed = await removeMountDir(this.ctx.rootDir, this.ctx.mounter, stagingPath);
    } catch (err) {
      throw new Error(log(`failed to clean up global mount ${dataDir}: ${errText(err)}`), { cause: err });
    }
    if (!removed) this.ctx.log.warn(log(`attacher.UnmountDevice left [${stagingPath}] in place: it is still mounted`));
    this.ctx.log.info(log(`attacher.UnmountDevice successfully requested NodeUnStageVolume [${stagingPath}]`));
  }

  async detach(volumeName: string, node: NodeName): Promise<void> {
    if (volumeName === '') throw new Error('missing expected parameter volumeName');
    // volumeName is `<driver>^<volumeHandle>` (getVolumeName).
    const parts = volumeName.split(VOL_NAME_SEP);
    if (parts.length !== 2) throw new Error('volumeName missing expected data');
    const [driver = '', volumeHandle = ''] = parts;
    this.requireOwnNode('detacher.Detach', node, volumeHandle);
    const client = this.ctx.client(driver, 'detacher.Detach failed to create newCsiDriverClient');
    const controllerCaps = this.ctx.registry.controllerCapabilities(driver) ?? new Set();
    if (!controllerCaps.has('PUBLISH_UNPUBLISH_VOLUME')) {
      this.ctx.forgetAttachment(driver, volumeHandle);
      await this.removeAttachIntent(driver, volumeHandle, node);
      return;
    }
    const nodeId = this.nodeIdOf(driver, 'detacher.Detach');
    // After a restart the secret reference is only in the attach intent record.
    let secretRef = this.ctx.attachment(driver, volumeHandle)?.controllerPublishSecretRef;
    if (secretRef === undefined) {
      try {
        secretRef = (await loadAttachIntent(this.ctx.rootDir, driver, volumeHandle, node))?.controllerPublishSecretRef;
      } catch (err) {
        this.ctx.log.warn(log(`detacher.Detach could not read the attach intent of volume ${volumeHandle}: ${errText(err)}`));
      }
    }
    const secrets = secretRef === undefined ? {} : this.secrets('ControllerPublishSecretRef', secretRef.namespace ?? 'default', secretRef.name);
    try {
      await client.controllerUnpublishVolume({ volume_id: volumeHandle, node_id: nodeId, secrets }, this.ctx.callOptions());
    } catch (err) {
      throw csiCallError(err, log(`detacher.Detach failed to ControllerUnpublishVolume [${volumeHandle}] from node ${nodeId}: `));
    }
    this.ctx.forgetAttachment(driver, volumeHandle);
    await this.removeAttachIntent(driver, volumeHandle, node);
    this.ctx.log.info(log(`detacher.Detach finished OK for volume ${volumeHandle} on node ${node}`));
  }

  /**
   * Drops the attach intent record once the driver confirmed the detach. A record that cannot be
   * removed is only logged: at worst a restarted agent unpublishes the volume once more (when no
   * pod wants it), which the driver answers with success.
   */
  private async removeAttachIntent(driver: string, volumeHandle: string, node: NodeName): Promise<void> {
    try {
      await removeAttachIntent(this.ctx.rootDir, driver, volumeHandle, node);
    } catch (err) {
      this.ctx.log.warn(log(`detacher.Detach could not remove the attach intent of volume ${volumeHandle}: ${errText(err)}`));
    }
  }

  /** Removes the staging directory, its vol_data.json and parent after a final error; never throws. */
  private async cleanUpStaging(stagingPath: string): Promise<void> {
    try {
      if (!(await removeMountDir(this.ctx.rootDir, this.ctx.mounter, stagingPath))) {
        this.ctx.log.warn(log(`attacher.MountDevice left mount dir [${stagingPath}] in place: it is still mounted`));
      }
    } catch (err) {
      this.ctx.log.error(log(`attacher.MountDevice failed to remove mount dir after error [${stagingPath}]: ${errText(err)}`));
    }
  }

  private requireOwnNode(what: string, node: NodeName, volumeHandle: string): void {
    if (node !== this.ctx.nodeName) {
      throw new Error(log(`${what}: volume ${volumeHandle} on node ${node}: this agent attaches and detaches volumes of its own node ${this.ctx.nodeName} only`));
    }
  }

  private nodeIdOf(driver: string, what: string): string {
    const nodeId = this.ctx.registry.nodeId(driver);
    if (nodeId === undefined) throw new TransientOperationFailure(log(`${what}: the node id of driver ${driver} is not known yet`));
    return nodeId;
  }

  private secrets(what: string, namespace: string, name: string): StringMap {
    try {
      return getCredentialsFromSecret(this.ctx.objects, namespace, name);
    } catch (err) {
      // A secret that is not there yet may appear: transient, as upstream.
      throw new TransientOperationFailure(`fetching ${what} ${namespace}/${name} failed: ${errText(err)}`, { cause: err });
    }
  }
}
