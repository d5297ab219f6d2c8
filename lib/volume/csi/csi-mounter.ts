/**
 * The CSI mounter/unmounter of one pod's volume (kubelet `csiMountMgr`,
 * pkg/volume/csi/csi_mounter.go): SetUp = NodePublishVolume, TearDown = NodeUnpublishVolume.
 *
 * SetUp writes `<pod volume dir>/vol_data.json` before the call; after a final error it removes
 * the target directory, the file and the pod volume directory; after a non-final error
 * (UncertainProgressError) it keeps them, so TearDown or reconstruction can find the volume.
 * Only NodePublishVolume can be uncertain, as upstream: the STAGE_UNSTAGE_VOLUME probe (PVs only)
 * runs before anything is written and fails final; the VOLUME_MOUNT_GROUP probe, reading the
 * publish context and secrets fail transient. So an uncertain mount always has its vol_data.json.
 * TearDown reads the file back, and removes directory and file only after NodeUnpublishVolume
 * succeeded and the target is no longer mounted; a target the driver left mounted is kept and is
 * not a TearDown error (upstream's removeMountDir).
 *
 * Not done here (see README.md): fsGroup ownership changes when the driver lacks
 * VOLUME_MOUNT_GROUP (the kubelet's SetVolumeOwnership), service account token injection.
 */
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { errorMessage, isOperationFinishedError, TransientOperationFailure } from '../errors.ts';
import type { Pod } from '../k8s-types.ts';
import type { Mounter, MounterArgs, Unmounter } from '../plugins.ts';
import { specName, type Spec } from '../spec.ts';
import type { PodUID } from '../types.ts';
import { classifyCsiError, csiCallError } from './csi-errors.ts';
import type { CsiPluginContext } from './csi-plugin-context.ts';
import type { NodeCapability, StringMap } from './csi-types.ts';
import {
  addSELinuxMountOption,
  asCSIAccessMode,
  getCredentialsFromSecret,
  getSourceFromSpec,
  log,
  mountCapability,
  removeMountDir,
  specAccessMode,
} from './csi-util.ts';
import {
  attachmentName,
  deviceMountPath,
  loadVolumeData,
  makeVolumeHandle,
  publishTargetPath,
  saveVolumeData,
  volDataKey,
  type VolumeLifecycleMode,
} from './vol-data.ts';

/** `getPodInfoAttrs`: the volume attributes a CSIDriver with `podInfoOnMount` receives. */
function podInfoAttributes(pod: Pod, mode: VolumeLifecycleMode): StringMap {
  const spec = pod.spec as Pod['spec'] & { serviceAccountName?: string };
  return {
    'csi.storage.k8s.io/pod.name': pod.metadata.name,
    'csi.storage.k8s.io/pod.namespace': pod.metadata.namespace ?? 'default',
    'csi.storage.k8s.io/pod.uid': pod.metadata.uid ?? '',
    'csi.storage.k8s.io/serviceAccount.name': spec.serviceAccountName ?? '',
    'csi.storage.k8s.io/ephemeral': String(mode === 'Ephemeral'),
  };
}

export interface CsiMountMgrOptions {
  supportsSELinuxContextMount: (spec: Spec) => boolean;
}

/** `csiMountMgr` as a Mounter (built from a spec and its pod). */
export class CsiMounter implements Mounter {
  readonly driverName: string;
  readonly volumeHandle: string;
  readonly lifecycleMode: VolumeLifecycleMode;
  readonly readOnly: boolean;
  private readonly specVolumeID: string;
  private readonly podUID: string;

  constructor(
    private readonly ctx: CsiPluginContext,
    private readonly spec: Spec,
    private readonly pod: Pod,
    private readonly opts: CsiMountMgrOptions,
  ) {
    const { volSrc, pvSrc } = getSourceFromSpec(spec);
    this.specVolumeID = specName(spec);
    this.podUID = pod.metadata.uid ?? '';
    if (volSrc !== null) {
      this.driverName = volSrc.driver;
      this.volumeHandle = makeVolumeHandle(this.podUID, this.specVolumeID);
      this.lifecycleMode = 'Ephemeral';
      this.readOnly = volSrc.readOnly ?? false;
    } else if (pvSrc !== null) {
      this.driverName = pvSrc.driver;
      this.volumeHandle = pvSrc.volumeHandle;
      this.lifecycleMode = 'Persistent';
      this.readOnly = spec.readOnly;
    } else {
      throw new Error(log('volume source not found in volume.Spec'));
    }
    if (this.podUID === '') throw new Error(log('mounter: the pod has no UID'));
  }

  getPath(): string {
    return publishTargetPath(this.ctx.rootDir, this.podUID, this.specVolumeID);
  }

  async setUp(args: MounterArgs): Promise<void> {
    const dir = this.getPath();
    const client = this.ctx.client(this.driverName, 'mounter.SetUpAt failed to get CSI client');
    const modeError = this.supportsVolumeLifecycleMode();
    if (modeError !== null) throw new TransientOperationFailure(log(`mounter.SetupAt failed to check volume lifecycle mode: ${modeError}`));

    let fsType = '';
    let volAttribs: StringMap = {};
    let secretRef: { name: string; namespace: string } | undefined;
    let mountOptions: string[] = [];
    let stagingPath = '';
    let publishContext: StringMap = {};
    const { volSrc, pvSrc } = getSourceFromSpec(this.spec);
    if (volSrc !== null) {
      fsType = volSrc.fsType ?? '';
      volAttribs = { ...volSrc.volumeAttributes };
      if (volSrc.nodePublishSecretRef !== undefined) {
        secretRef = { name: volSrc.nodePublishSecretRef.name, namespace: this.pod.metadata.namespace ?? 'default' };
      }
    } else if (pvSrc !== null) {
      fsType = pvSrc.fsType ?? '';
      volAttribs = { ...pvSrc.volumeAttributes };
      if (pvSrc.nodePublishSecretRef !== undefined) {
        secretRef = { name: pvSrc.nodePublishSecretRef.name, namespace: pvSrc.nodePublishSecretRef.namespace ?? 'default' };
      }
      mountOptions = [...(this.spec.persistentVolume?.spec.mountOptions ?? [])];
      // Nothing is written yet: a failed probe is final.
      let stageUnstageSet: boolean;
      try {
        stageUnstageSet = (await this.ctx.nodeCapabilities(this.driverName)).has('STAGE_UNSTAGE_VOLUME');
      } catch (err) {
        throw csiCallError(err, log('mounter.SetUpAt failed to check for STAGE_UNSTAGE_VOLUME capability: '));
      }
      if (stageUnstageSet) stagingPath = deviceMountPath(this.ctx.rootDir, this.driverName, this.volumeHandle);
      if (!this.ctx.skipAttach(this.driverName)) {
        let known: StringMap | null;
        try {
          known = await this.ctx.publishContextFor(this.driverName, this.volumeHandle);
        } catch (err) {
          // We could have a transient error associated with fetching the publish context (upstream).
          throw new TransientOperationFailure(log(`mounter.SetUpAt failed to fetch publishContext: ${errorMessage(err)}`), { cause: err });
        }
        if (known === null) {
          const attachID = attachmentName(this.volumeHandle, this.driverName, this.ctx.nodeName);
          throw new TransientOperationFailure(
            log(`mounter.SetUpAt failed to fetch publishContext: volume ${this.volumeHandle} is not attached for volume attachment ${attachID}`),
          );
        }
        publishContext = known;
      }
    }

    // The second probe, as upstream (NodeSupportsVolumeMountGroup), transient. It runs
    // before the pod volume directory is created (upstream: just after), so a failed probe leaves
    // nothing behind.
    let caps: ReadonlySet<NodeCapability>;
    try {
      caps = await this.ctx.nodeCapabilities(this.driverName);
    } catch (err) {
      throw new TransientOperationFailure(
        log(`mounter.SetUpAt failed to determine if the node service has VOLUME_MOUNT_GROUP capability: ${errorMessage(err)}`),
        { cause: err },
      );
    }

    const parentDir = dirname(dir);
    try {
      await mkdir(parentDir, { recursive: true, mode: 0o750 });
    } catch (err) {
      throw new Error(log(`mounter.SetUpAt failed to create dir "${parentDir}":  ${errorMessage(err)}`), { cause: err });
    }

    let secrets: StringMap = {};
    if (secretRef !== undefined) {
      try {
        secrets = getCredentialsFromSecret(this.ctx.objects, secretRef.namespace, secretRef.name);
      } catch (err) {
        throw new TransientOperationFailure(`fetching NodePublishSecretRef ${secretRef.namespace}/${secretRef.name} failed: ${errorMessage(err)}`, { cause: err });
      }
    }
    if (this.ctx.csiDriver(this.driverName)?.spec.podInfoOnMount === true) {
      volAttribs = { ...volAttribs, ...podInfoAttributes(this.pod, this.lifecycleMode) };
    }
    let volumeMountGroup: string | undefined;
    if (caps.has('VOLUME_MOUNT_GROUP') && args.fsGroup !== undefined) volumeMountGroup = String(args.fsGroup);
    let seLinuxMountContext: string | null = null;
    if (args.seLinuxLabel !== '' && this.opts.supportsSELinuxContextMount(this.spec)) {
      mountOptions = addSELinuxMountOption(mountOptions, args.seLinuxLabel);
      seLinuxMountContext = args.seLinuxLabel;
    }

    // Persist volume info for TearDown and reconstruction, before the driver sees the target.
    const volData: Record<string, string> = {
      [volDataKey.specVolID]: this.specVolumeID,
      [volDataKey.volHandle]: this.volumeHandle,
      [volDataKey.driverName]: this.driverName,
      [volDataKey.nodeName]: this.ctx.nodeName,
      [volDataKey.volumeLifecycleMode]: this.lifecycleMode,
      [volDataKey.attachmentID]: attachmentName(this.volumeHandle, this.driverName, this.ctx.nodeName),
    };
    if (seLinuxMountContext !== null) volData[volDataKey.seLinuxMountContext] = seLinuxMountContext;
    try {
      await saveVolumeData(parentDir, volData);
    } catch (err) {
      await this.cleanUp(dir);
      throw new TransientOperationFailure(log(`mounter.SetUpAt failed to save volume info data: ${errorMessage(err)}`), { cause: err });
    }

    try {
      await client.nodePublishVolume(
        {
          volume_id: this.volumeHandle,
          publish_context: publishContext,
          staging_target_path: stagingPath,
          target_path: dir,
          volume_capability: mountCapability(
            fsType,
            mountOptions,
            asCSIAccessMode(volSrc !== null ? 'ReadWriteOnce' : specAccessMode(this.spec), caps.has('SINGLE_NODE_MULTI_WRITER')),
            volumeMountGroup,
          ),
          readonly: this.readOnly,
          secrets,
          volume_context: volAttribs,
        },
        this.ctx.callOptions(),
      );
    } catch (err) {
      const failure = classifyCsiError(err);
      // If the operation finished with an error, the mount directory can go.
      if (isOperationFinishedError(failure)) await this.cleanUp(dir);
      throw failure;
    }
    this.ctx.log.info(log(`mounter.SetUp successfully requested NodePublish [${dir}]`));
  }

  /** `supportsVolumeLifecycleMode`: null when supported, else why not. */
  private supportsVolumeLifecycleMode(): string | null {
    const driver = this.ctx.csiDriver(this.driverName);
    if (driver === undefined) {
      return this.lifecycleMode === 'Persistent' ? null : `volume mode "${this.lifecycleMode}" not supported by driver ${this.driverName} (no CSIDriver object)`;
    }
    const modes = driver.spec.volumeLifecycleModes ?? ['Persistent'];
    if (modes.includes(this.lifecycleMode)) return null;
    return `volume mode "${this.lifecycleMode}" not supported by driver ${this.driverName} (only supports ${JSON.stringify(modes)})`;
  }

  private async cleanUp(dir: string): Promise<void> {
    try {
      if (!(await removeMountDir(this.ctx.rootDir, this.ctx.mounter, dir))) {
        this.ctx.log.warn(log(`mounter.SetupAt left mount dir [${dir}] in place after a NodePublish() error: it is mounted`));
      }
    } catch (err) {
      this.ctx.log.error(log(`mounter.SetupAt failed to remove mount dir after a NodePublish() error [${dir}]: ${errorMessage(err)}`));
    }
  }
}

/** `csiMountMgr` as an Unmounter (built from the spec name and pod UID; the rest comes from vol_data.json). */
export class CsiUnmounter implements Unmounter {
  constructor(
    private readonly ctx: CsiPluginContext,
    private readonly specVolumeID: string,
    private readonly podUID: PodUID,
  ) {}

  getPath(): string {
    return publishTargetPath(this.ctx.rootDir, this.podUID, this.specVolumeID);
  }

  async tearDown(): Promise<void> {
    const dir = this.getPath();
    const dataDir = dirname(dir);
    let data: Record<string, string>;
    try {
      data = await loadVolumeData(dataDir);
    } catch (err) {
      throw new Error(log(`unmounter failed to load volume data file [${dir}]: ${errorMessage(err)}`), { cause: err });
    }
    const driver = data[volDataKey.driverName] ?? '';
    const volumeHandle = data[volDataKey.volHandle] ?? '';
    if (driver === '' || volumeHandle === '') {
      throw new Error(log(`unmounter failed to load volume data file [${dir}]: it lacks ${volDataKey.driverName} or ${volDataKey.volHandle}`));
    }
    const client = this.ctx.client(driver, 'Unmounter.TearDownAt failed to get CSI client');
    try {
      await client.nodeUnpublishVolume({ volume_id: volumeHandle, target_path: dir }, this.ctx.callOptions());
    } catch (err) {
      throw csiCallError(err, log('Unmounter.TearDownAt failed: '));
    }
    // The driver must remove the target itself (CSI spec); the plugin removes only what it
    // created (vol_data.json, the pod volume dir) plus an empty, unmounted target left behind.
    let removed: boolean;
    try {
      removed = await removeMountDir(this.ctx.rootDir, this.ctx.mounter, dir);
    } catch (err) {
      throw new Error(log(`Unmounter.TearDownAt failed to clean mount dir [${dir}]: ${errorMessage(err)}`), { cause: err });
    }
    if (!removed) this.ctx.log.warn(log(`Unmounter.TearDownAt left [${dir}] in place: it is still mounted after NodeUnpublishVolume succeeded`));
    this.ctx.log.info(log(`Unmounter.TearDownAt successfully unmounted dir [${dir}]`));
  }
}
