/**
 * Actual state of world (kubelet `cache/actual_state_of_world.go`): the volumes attached to this
 * node, their device (global) mount state, and the pods they are mounted into. Written by the
 * operation executor when operations complete, and by reconstruction; read by the reconciler.
 * Passive state: no I/O, no timers.
 */
import type {
  ActualStateOfWorldUpdater,
  AttachedVolume,
  DeviceMountState,
  MarkVolumeOpts,
  MountedVolume,
  VolumeMountState,
} from '../../operationexecutor/types.ts';
import type { BlockVolumeMapper, Mounter, VolumePluginMgr } from '../../volume/plugins.ts';
import { specName, type Spec } from '../../volume/spec.ts';
import {
  uniqueVolumeNameFromPlugin,
  type NodeName,
  type PluginName,
  type PodUID,
  type UniquePodName,
  type UniqueVolumeName,
} from '../../volume/types.ts';
import { errorMessage } from '../../volume/errors.ts';
import { goQuote } from '../../volume/util/go-format.ts';

/** Attachability of a volume: "Uncertain" for reconstructed volumes until node status is read. */
export type AttachabilityState = 'True' | 'False' | 'Uncertain';

interface MountedPod {
  /** Position of this (volume, pod) pair in the flat scan index. */
  pairIndex: number;
  podName: UniquePodName;
  podUID: PodUID;
  mounter: Mounter | null;
  blockVolumeMapper: BlockVolumeMapper | null;
  volumeSpec: Spec;
  outerVolumeSpecName: string;
  remountRequired: boolean;
  volumeGidValue: string;
  seLinuxMountContext: string;
  volumeMountStateForPod: Exclude<VolumeMountState, 'VolumeNotMounted'>;
}

interface AttachedVolumeEntry {
  volumeName: UniqueVolumeName;
  spec: Spec;
  pluginName: PluginName;
  mountedPods: Map<UniquePodName, MountedPod>;
  pluginIsAttachable: AttachabilityState;
  deviceMountState: DeviceMountState;
  devicePath: string;
  deviceMountPath: string;
  volumeInUseErrorForExpansion: boolean;
  /** Claim size in bytes (`pvc.status.capacity`), null when unknown. */
  persistentVolumeSize: number | null;
  /** null = not mounted yet; "" = mounted without `-o context`. */
  seLinuxMountContext: string | null;
  /**
   * A batched attach verification found the volume detached while pod entries or the device
   * mount were still recorded on it (see {@link ActualStateOfWorld.markVolumeAsFoundDetached}).
   * Cleared when the volume is attached again.
   */
  foundDetached: boolean;
}

// ERRORS

/** `volumeName %q does not exist in the list of attached volumes`. */
export class VolumeNotAttachedError extends Error {
  override readonly name = 'VolumeNotAttachedError';
  constructor(readonly volumeName: UniqueVolumeName) {
    super(`volumeName ${goQuote(volumeName)} does not exist in the list of attached volumes`);
  }
}
export function isVolumeNotAttachedError(err: unknown): err is VolumeNotAttachedError {
  return err instanceof VolumeNotAttachedError;
}

/** `volumeName %q is mounted to %q but should be remounted`. */
export class RemountRequiredError extends Error {
  override readonly name = 'RemountRequiredError';
  constructor(volumeName: UniqueVolumeName, podName: UniquePodName) {
    super(`volumeName ${goQuote(volumeName)} is mounted to ${goQuote(podName)} but should be remounted`);
  }
}
export function isRemountRequiredError(err: unknown): err is RemountRequiredError {
  return err instanceof RemountRequiredError;
}

/** `volumeName %q mounted to %q needs to resize file system`; carries the current size in bytes. */
export class FsResizeRequiredError extends Error {
  override readonly name = 'FsResizeRequiredError';
  constructor(
    volumeName: UniqueVolumeName,
    podName: UniquePodName,
    readonly currentSize: number,
  ) {
    super(`volumeName ${goQuote(volumeName)} mounted to ${goQuote(podName)} needs to resize file system`);
  }
}
export function isFsResizeRequiredError(err: unknown): err is FsResizeRequiredError {
  return err instanceof FsResizeRequiredError;
}

/** The volume is mounted with another SELinux label; it must be unmounted before this pod can use it. */
export class SELinuxMountMismatchError extends Error {
  override readonly name = 'SELinuxMountMismatchError';
  constructor(volumeName: UniqueVolumeName) {
    super(
      `waiting for unmount of volume ${goQuote(volumeName)}, because it is already mounted to a different pod with a different SELinux label`,
    );
  }
}
export function isSELinuxMountMismatchError(err: unknown): err is SELinuxMountMismatchError {
  return err instanceof SELinuxMountMismatchError;
}

/** A mutation named a volume or pod that is not in the actual state. */
export class ActualStateError extends Error {
  override readonly name = 'ActualStateError';
}
export function isActualStateError(err: unknown): err is ActualStateError {
  return err instanceof ActualStateError;
}

/** Result of {@link ActualStateOfWorld.podExistsInVolume}. */
export interface PodExistsResult {
  mounted: boolean;
  devicePath: string;
  err: VolumeNotAttachedError | SELinuxMountMismatchError | RemountRequiredError | FsResizeRequiredError | null;
}

/** A read-only view of one volume of the actual state, for snapshots. */
export interface ActualVolumeView {
  volumeName: UniqueVolumeName;
  pluginName: PluginName;
  attachability: AttachabilityState;
  devicePath: string;
  deviceMountState: DeviceMountState;
  deviceMountPath: string;
  persistentVolumeSize: number | null;
  volumeInUseErrorForExpansion: boolean;
  foundDuringReconstruction: boolean;
  /** A batched attach verification found it detached and it has not been attached again. */
  foundDetached: boolean;
  pods: {
    podName: UniquePodName;
    podUID: PodUID;
    outerVolumeSpecName: string;
    innerVolumeSpecName: string;
    mountState: Exclude<VolumeMountState, 'VolumeNotMounted'>;
    remountRequired: boolean;
    foundDuringReconstruction: boolean;
  }[];
}

/** One uncertain part of a volume (see {@link ActualStateOfWorld.getUncertainEntries}). */
export interface UncertainEntry {
  volumeName: UniqueVolumeName;
  /** attach: the attachment is Uncertain or was found detached; device: DeviceMountUncertain; mount: a pod's VolumeMountUncertain. */
  kind: 'attach' | 'device' | 'mount';
  /** The pod of a `mount` entry; null for the volume's own attach and device parts. */
  podUID: PodUID | null;
}

export interface ActualStateOfWorldOptions {
  nodeName: NodeName;
  pluginMgr: VolumePluginMgr;
  /** SELinuxMountReadWriteOncePod gate: whether mount contexts are recorded and compared. */
  seLinuxEnabled: boolean;
}

/**
 * Whether two entries of one volume are alike for every decision and view: the volume's own
 * fields, its pods (by name) and the reconstruction marks. Mounters and specs are compared by
 * what is read from them (the spec name), not by identity.
 */
function sameVolumeState(
  a: AttachedVolumeEntry,
  aFound: Map<UniquePodName, PodUID> | undefined,
  b: AttachedVolumeEntry,
  bFound: Map<UniquePodName, PodUID> | undefined,
): boolean {
  if (
    a.pluginName !== b.pluginName ||
    specName(a.spec) !== specName(b.spec) ||
    a.pluginIsAttachable !== b.pluginIsAttachable ||
    a.deviceMountState !== b.deviceMountState ||
    a.devicePath !== b.devicePath ||
    a.deviceMountPath !== b.deviceMountPath ||
    a.volumeInUseErrorForExpansion !== b.volumeInUseErrorForExpansion ||
    a.persistentVolumeSize !== b.persistentVolumeSize ||
    a.seLinuxMountContext !== b.seLinuxMountContext ||
    a.foundDetached !== b.foundDetached ||
    a.mountedPods.size !== b.mountedPods.size ||
    (aFound === undefined) !== (bFound === undefined)
  ) {
    return false;
  }
  for (const [podName, p] of a.mountedPods) {
    const q = b.mountedPods.get(podName);
    if (
      q === undefined ||
      p.podUID !== q.podUID ||
      specName(p.volumeSpec) !== specName(q.volumeSpec) ||
      p.outerVolumeSpecName !== q.outerVolumeSpecName ||
      p.remountRequired !== q.remountRequired ||
      p.volumeGidValue !== q.volumeGidValue ||
      p.seLinuxMountContext !== q.seLinuxMountContext ||
      p.volumeMountStateForPod !== q.volumeMountStateForPod ||
      (aFound?.has(podName) ?? false) !== (bFound?.has(podName) ?? false)
    ) {
      return false;
    }
  }
  return true;
}

// CLASS

export class ActualStateOfWorld implements ActualStateOfWorldUpdater {
  private readonly attachedVolumes = new Map<UniqueVolumeName, AttachedVolumeEntry>();
  /** Every (volume, pod) entry in a flat array, scanned linearly by reconciler passes. */
  private readonly pairs: { entry: AttachedVolumeEntry; pod: MountedPod }[] = [];
  private readonly foundDuringReconstruction = new Map<UniqueVolumeName, Map<UniquePodName, PodUID>>();
  /**
   * The volumes each pod has an entry on (the inverse of `mountedPods`), so that per-pod
   * questions cost the pod's volumes rather than the node's.
   */
  private readonly volumesOfPod = new Map<UniquePodName, Map<UniqueVolumeName, AttachedVolumeEntry>>();
  private readonly listeners = new Set<(volumeName: UniqueVolumeName) => void>();
  private readonly nodeName: NodeName;
  private readonly pluginMgr: VolumePluginMgr;
  private readonly seLinuxEnabled: boolean;

  private readonly opts: ActualStateOfWorldOptions;

  constructor(opts: ActualStateOfWorldOptions) {
    this.opts = opts;
    this.nodeName = opts.nodeName;
    this.pluginMgr = opts.pluginMgr;
    this.seLinuxEnabled = opts.seLinuxEnabled;
  }

  /** Registers a listener called after every change, with the name of the volume that changed. */
  onChange(listener: (volumeName: UniqueVolumeName) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  // WHOLE-WORLD COPIES (plan-only mode)

  /** A new, empty actual state with the same options and no listeners (a scratch world). */
  newEmpty(): ActualStateOfWorld {
    return new ActualStateOfWorld(this.opts);
  }

  /**
   * A copy of the given volumes (all of them when null) with their pods and reconstruction
   * marks, and no listeners, for projections that must not touch this world. Entries are new
   * objects; specs, mounters and mappers are shared (this class never mutates them).
   */
  cloneVolumes(volumeNames: ReadonlySet<UniqueVolumeName> | null): ActualStateOfWorld {
    const copy = this.newEmpty();
    const copyPods = (clone: AttachedVolumeEntry, pod: MountedPod): void => {
      const podClone: MountedPod = { ...pod, pairIndex: copy.pairs.length };
      clone.mountedPods.set(pod.podName, podClone);
      copy.indexPod(clone, pod.podName);
      copy.pairs.push({ entry: clone, pod: podClone });
    };
    const copyVolume = (entry: AttachedVolumeEntry): AttachedVolumeEntry => {
      const clone: AttachedVolumeEntry = { ...entry, mountedPods: new Map() };
      copy.attachedVolumes.set(entry.volumeName, clone);
      const found = this.foundDuringReconstruction.get(entry.volumeName);
      if (found !== undefined) copy.foundDuringReconstruction.set(entry.volumeName, new Map(found));
      return clone;
    };
    if (volumeNames !== null) {
      // A few volumes: cost proportional to them, not to the world.
      for (const name of volumeNames) {
        const entry = this.attachedVolumes.get(name);
        if (entry === undefined) continue;
        const clone = copyVolume(entry);
        for (const pod of entry.mountedPods.values()) copyPods(clone, pod);
      }
      return copy;
    }
    const copied = new Map<UniqueVolumeName, AttachedVolumeEntry>();
    for (const entry of this.attachedVolumes.values()) copied.set(entry.volumeName, copyVolume(entry));
    // Pairs in this world's scan order, so that both worlds list entries alike.
    for (const { entry, pod } of this.pairs) {
      const clone = copied.get(entry.volumeName);
      if (clone !== undefined) copyPods(clone, pod);
    }
    return copy;
  }

  /**
   * Replaces this world's whole content with `source`'s, which is emptied (its entries move
   * here). Listeners hear of every volume whose state differs (added, removed, or changed in
   * any field a decision or a view reads); an unchanged volume is not announced, although its
   * entry is now `source`'s (fresh mounters).
   */
  replaceContent(source: ActualStateOfWorld): { added: UniqueVolumeName[]; removed: UniqueVolumeName[]; changed: UniqueVolumeName[] } {
    const before = new Map(this.attachedVolumes);
    const foundBefore = new Map(this.foundDuringReconstruction);
    this.attachedVolumes.clear();
    this.foundDuringReconstruction.clear();
    this.pairs.length = 0;
    this.volumesOfPod.clear();
    for (const [name, entry] of source.attachedVolumes) this.attachedVolumes.set(name, entry);
    for (const [podName, volumes] of source.volumesOfPod) this.volumesOfPod.set(podName, volumes);
    for (const [name, pods] of source.foundDuringReconstruction) this.foundDuringReconstruction.set(name, pods);
    // Pair indexes stay valid: the pairs keep their positions.
    for (const pair of source.pairs) this.pairs.push(pair);
    source.attachedVolumes.clear();
    source.foundDuringReconstruction.clear();
    source.pairs.length = 0;
    source.volumesOfPod.clear();

    const added: UniqueVolumeName[] = [];
    const removed: UniqueVolumeName[] = [];
    const changed: UniqueVolumeName[] = [];
    for (const [name, entry] of this.attachedVolumes) {
      const old = before.get(name);
      if (old === undefined) added.push(name);
      else if (!sameVolumeState(old, foundBefore.get(name), entry, this.foundDuringReconstruction.get(name))) changed.push(name);
    }
    for (const name of before.keys()) if (!this.attachedVolumes.has(name)) removed.push(name);
    added.sort();
    removed.sort();
    changed.sort();
    for (const name of [...removed, ...added, ...changed]) this.notify(name);
    return { added, removed, changed };
  }

  // MUTATORS

  /**
   * Records the volume as attached (attachability True when an attachable plugin claims the
   * spec, else False). A new volume starts with its device not mounted; an existing volume only
   * gets its device path overwritten. `volumeName` "" means: compute it from the spec.
   */
  markVolumeAsAttached(volumeName: UniqueVolumeName | '', spec: Spec, _nodeName: NodeName, devicePath: string): void {
    let attachable = false;
    try {
      attachable = this.pluginMgr.findAttachablePluginBySpec(spec) !== null;
    } catch {
      // A failed lookup means "not attachable"; addVolume reports the lookup error.
    }
    this.addVolume(volumeName, spec, devicePath, attachable ? 'True' : 'False');
  }

  /** Like {@link markVolumeAsAttached} with attachability Uncertain (reconstruction). */
  addAttachUncertainReconstructedVolume(volumeName: UniqueVolumeName, spec: Spec, _nodeName: NodeName, devicePath: string): void {
    this.addVolume(volumeName, spec, devicePath, 'Uncertain');
  }

  /**
   * VolumeScope addition: a volume found by a plugin's own reconstruction whose attach was started
   * but may not have finished (standalone attach intent). It stays in the actual state, so the
   * reconciler detaches it when no pod wants it, and reads as not attached (as after
   * {@link markVolumeAsFoundDetached}), so a pod that wants it gets it attached again rather than
   * mounted on an attachment that may not exist. No-op when the volume is absent.
   */
  markVolumeAttachUncertainViaReconstruction(volumeName: UniqueVolumeName): void {
    const entry = this.attachedVolumes.get(volumeName);
    if (entry === undefined || entry.foundDetached) return;
    entry.foundDetached = true;
    this.notify(volumeName);
  }

  /** A no-op, as in the kubelet: a failed attach leaves the actual state unchanged. */
  markVolumeAsUncertain(_volumeName: UniqueVolumeName, _spec: Spec, _nodeName: NodeName): void {
    // Intentionally empty.
  }

  /** `DeleteVolume`: removes the volume; no-op if absent; throws while pods are still mounted. */
  markVolumeAsDetached(volumeName: UniqueVolumeName, _nodeName: NodeName): void {
    this.deleteVolume(volumeName);
  }

  deleteVolume(volumeName: UniqueVolumeName): void {
    const entry = this.attachedVolumes.get(volumeName);
    if (entry === undefined) return;
    if (entry.mountedPods.size > 0) {
      throw new ActualStateError(
        `failed to DeleteVolume ${goQuote(volumeName)}, it still has ${entry.mountedPods.size} mountedPods`,
      );
    }
    this.attachedVolumes.delete(volumeName);
    this.foundDuringReconstruction.delete(volumeName);
    this.notify(volumeName);
  }

  /**
   * A batched attach verification (`VolumesAreAttached`) found the volume detached. The
   * kubelet's `MarkVolumeAsDetached` is `DeleteVolume`, which refuses while pods are mounted and
   * would drop a volume whose device is still mounted. Here:
   * - a volume with no pod entry and no device mount leaves, as with `DeleteVolume`;
   * - otherwise the volume stays with every pod entry, because each one stands for a mount that
   *   may still exist on the node and must be torn down (or set up again) by the reconciler.
   *   Its pods and its device mount become Uncertain ("may not be mounted, must be unmounted"),
   *   and until it is attached again {@link podExistsInVolume} reports it not attached. So a
   *   desired pod gets its volume re-attached (or its controller attachment verified) and
   *   mounted again, while a pod whose TearDown is pending or failing keeps its entry and is
   *   torn down, then the device is unmounted and the volume detached or marked detached.
   * No entry is ever dropped with its mounts left behind. No-op when the volume is absent.
   */
  markVolumeAsFoundDetached(volumeName: UniqueVolumeName, _nodeName: NodeName): void {
    const entry = this.attachedVolumes.get(volumeName);
    if (entry === undefined) return;
    if (entry.mountedPods.size === 0 && entry.deviceMountState === 'DeviceNotMounted') {
      this.deleteVolume(volumeName);
      return;
    }
    entry.foundDetached = true;
    for (const pod of entry.mountedPods.values()) pod.volumeMountStateForPod = 'VolumeMountUncertain';
    if (entry.deviceMountState === 'DeviceGloballyMounted') entry.deviceMountState = 'DeviceMountUncertain';
    this.notify(volumeName);
  }

  /** Whether a batched attach verification found the volume detached and it was not attached again since. */
  isVolumeFoundDetached(volumeName: UniqueVolumeName): boolean {
    return this.attachedVolumes.get(volumeName)?.foundDetached ?? false;
  }

  /** In the actual state and not found detached since its last attach (node-status reporting, wait errors). */
  isVolumeAttached(volumeName: UniqueVolumeName): boolean {
    const entry = this.attachedVolumes.get(volumeName);
    return entry !== undefined && !entry.foundDetached;
  }

  /** `AddPodToVolume` with the state given in `opts` (Mounted or Uncertain). */
  markVolumeAsMounted(opts: MarkVolumeOpts): void {
    this.addPodToVolume(opts);
  }

  /** The same as {@link markVolumeAsMounted} with the state forced to Uncertain. */
  markVolumeMountAsUncertain(opts: MarkVolumeOpts): void {
    this.addPodToVolume({ ...opts, volumeMountState: 'VolumeMountUncertain' });
  }

  /**
   * Adds or refreshes the pod's entry. A new pod, or an existing Uncertain one, gets a fresh
   * entry from `opts`; `remountRequired` is always reset. Throws when the volume is absent.
   */
  addPodToVolume(opts: MarkVolumeOpts): void {
    const entry = this.attachedVolumes.get(opts.volumeName);
    if (entry === undefined) {
      throw new ActualStateError(`no volume with the name ${goQuote(opts.volumeName)} exists in the list of attached volumes`);
    }
    if (opts.volumeMountState === 'VolumeNotMounted') {
      throw new ActualStateError(`cannot record volume ${goQuote(opts.volumeName)} as mounted with state VolumeNotMounted`);
    }
    // A mount that finishes while the volume is known detached (it started before the
    // verification) is not certain: it is set up again once the volume is attached.
    const state = entry.foundDetached ? 'VolumeMountUncertain' : opts.volumeMountState;
    let pod = entry.mountedPods.get(opts.podName);
    if (pod === undefined || pod.volumeMountStateForPod === 'VolumeMountUncertain') {
      const existing = pod;
      pod = {
        pairIndex: existing?.pairIndex ?? this.pairs.length,
        podName: opts.podName,
        podUID: opts.podUID,
        mounter: opts.mounter,
        blockVolumeMapper: opts.blockVolumeMapper,
        volumeSpec: opts.volumeSpec,
        outerVolumeSpecName: opts.outerVolumeSpecName,
        remountRequired: false,
        volumeGidValue: opts.volumeGidValue,
        seLinuxMountContext: opts.seLinuxMountContext,
        volumeMountStateForPod: state,
      };
      if (existing === undefined) {
        this.pairs.push({ entry, pod });
        this.indexPod(entry, opts.podName);
      }
      else this.pairs[pod.pairIndex] = { entry, pod };
      entry.mountedPods.set(opts.podName, pod);
    }
    pod.remountRequired = false;
    pod.volumeMountStateForPod = state;
    if (state === 'VolumeMounted') {
      this.foundDuringReconstruction.get(opts.volumeName)?.delete(opts.podName);
    }
    if (opts.mounter !== null) pod.mounter = opts.mounter;
    if (this.seLinuxEnabled && entry.seLinuxMountContext === null) {
      entry.seLinuxMountContext = opts.seLinuxMountContext;
    }
    this.notify(opts.volumeName);
  }

  /** `DeletePodFromVolume`: removes the pod's entry. Throws when the volume is absent. */
  markVolumeAsUnmounted(podName: UniquePodName, volumeName: UniqueVolumeName): void {
    const entry = this.attachedVolumes.get(volumeName);
    if (entry === undefined) {
      throw new ActualStateError(`no volume with the name ${goQuote(volumeName)} exists in the list of attached volumes`);
    }
    const pod = entry.mountedPods.get(podName);
    if (pod !== undefined) {
      entry.mountedPods.delete(podName);
      this.removePair(pod.pairIndex);
      const volumes = this.volumesOfPod.get(podName);
      volumes?.delete(volumeName);
      if (volumes?.size === 0) this.volumesOfPod.delete(podName);
    }
    this.foundDuringReconstruction.get(volumeName)?.delete(podName);
    this.notify(volumeName);
  }

  /**
   * Sets the device mount state. The device path is overwritten only when non-empty (so
   * MarkDeviceAsUnmounted keeps it for a later WaitForAttach); the SELinux context only when
   * non-empty.
   */
  setDeviceMountState(
    volumeName: UniqueVolumeName,
    state: DeviceMountState,
    devicePath: string,
    deviceMountPath: string,
    seLinuxMountContext: string,
  ): void {
    const entry = this.attachedVolumes.get(volumeName);
    if (entry === undefined) {
      throw new ActualStateError(`no volume with the name ${goQuote(volumeName)} exists in the list of attached volumes`);
    }
    // Likewise a device mount that finishes while the volume is known detached.
    entry.deviceMountState = entry.foundDetached && state === 'DeviceGloballyMounted' ? 'DeviceMountUncertain' : state;
    entry.deviceMountPath = deviceMountPath;
    if (devicePath !== '') entry.devicePath = devicePath;
    if (this.seLinuxEnabled && seLinuxMountContext !== '') entry.seLinuxMountContext = seLinuxMountContext;
    this.notify(volumeName);
  }

  markDeviceAsMounted(volumeName: UniqueVolumeName, devicePath: string, deviceMountPath: string, seLinuxMountContext: string): void {
    this.setDeviceMountState(volumeName, 'DeviceGloballyMounted', devicePath, deviceMountPath, seLinuxMountContext);
  }

  markDeviceAsUncertain(volumeName: UniqueVolumeName, devicePath: string, deviceMountPath: string, seLinuxMountContext: string): void {
    this.setDeviceMountState(volumeName, 'DeviceMountUncertain', devicePath, deviceMountPath, seLinuxMountContext);
  }

  /** Device not mounted; the device path is preserved. */
  markDeviceAsUnmounted(volumeName: UniqueVolumeName): void {
    this.setDeviceMountState(volumeName, 'DeviceNotMounted', '', '', '');
  }

  /** Sets the device path of a reconstructed volume, only while its device state is Uncertain. */
  updateReconstructedDevicePath(volumeName: UniqueVolumeName, devicePath: string): void {
    const entry = this.attachedVolumes.get(volumeName);
    if (entry === undefined || entry.deviceMountState !== 'DeviceMountUncertain') return;
    entry.devicePath = devicePath;
    this.notify(volumeName);
  }

  /** Resolves the attachability of a reconstructed volume, only while it is Uncertain. */
  updateReconstructedVolumeAttachability(volumeName: UniqueVolumeName, attachable: boolean): void {
    const entry = this.attachedVolumes.get(volumeName);
    if (entry === undefined || entry.pluginIsAttachable !== 'Uncertain') return;
    entry.pluginIsAttachable = attachable ? 'True' : 'False';
    this.notify(volumeName);
  }

  /** Flags every entry of the pod whose plugin requires remounts (configMap, secret, …). */
  markRemountRequired(podName: UniquePodName): void {
    for (const entry of this.entriesOfPod(podName)) {
      const pod = entry.mountedPods.get(podName);
      if (pod === undefined) continue;
      let plugin;
      try {
        plugin = this.pluginMgr.findPluginBySpec(pod.volumeSpec);
      } catch {
        continue;
      }
      if (plugin.requiresRemount(pod.volumeSpec) && !pod.remountRequired) {
        pod.remountRequired = true;
        this.notify(entry.volumeName);
      }
    }
  }

  /** Records a successful resize (bytes); false when the volume is absent. */
  markVolumeAsResized(volumeName: UniqueVolumeName, claimSize: number): boolean {
    const entry = this.attachedVolumes.get(volumeName);
    if (entry === undefined) return false;
    entry.persistentVolumeSize = claimSize;
    this.notify(volumeName);
    return true;
  }

  /** Node expansion failed with FailedPrecondition: stop requesting file-system resizes. */
  markForInUseExpansionError(volumeName: UniqueVolumeName): void {
    const entry = this.attachedVolumes.get(volumeName);
    if (entry === undefined) return;
    entry.volumeInUseErrorForExpansion = true;
    this.notify(volumeName);
  }

  /** Sets the claim size only while it is unknown. */
  initializeClaimSize(volumeName: UniqueVolumeName, claimSize: number | null): void {
    const entry = this.attachedVolumes.get(volumeName);
    if (entry === undefined || entry.persistentVolumeSize !== null || claimSize === null) return;
    entry.persistentVolumeSize = claimSize;
    this.notify(volumeName);
  }

  /**
   * Reconstruction: if the volume exists and the pod is not in it, adds the pod as Uncertain,
   * records it as found during reconstruction and returns true; otherwise false.
   */
  checkAndMarkVolumeAsUncertainViaReconstruction(opts: MarkVolumeOpts): boolean {
    const entry = this.attachedVolumes.get(opts.volumeName);
    if (entry === undefined || entry.mountedPods.has(opts.podName)) return false;
    this.addPodToVolume({ ...opts, volumeMountState: 'VolumeMountUncertain' });
    let pods = this.foundDuringReconstruction.get(opts.volumeName);
    if (pods === undefined) {
      pods = new Map();
      this.foundDuringReconstruction.set(opts.volumeName, pods);
    }
    pods.set(opts.podName, opts.podUID);
    this.notify(opts.volumeName);
    return true;
  }

  /** Reconstruction: marks the device Uncertain at `deviceMountPath`, only from NotMounted. */
  checkAndMarkDeviceUncertainViaReconstruction(volumeName: UniqueVolumeName, deviceMountPath: string): boolean {
    const entry = this.attachedVolumes.get(volumeName);
    if (entry === undefined || entry.deviceMountState !== 'DeviceNotMounted') return false;
    entry.deviceMountState = 'DeviceMountUncertain';
    entry.deviceMountPath = deviceMountPath;
    this.notify(volumeName);
    return true;
  }

  // QUERIES

  /**
   * Whether the pod has the volume mounted, with the kubelet's decision order: volume absent →
   * VolumeNotAttachedError; SELinux context mismatch → SELinuxMountMismatchError; pod present
   * and Uncertain → not mounted (retry the mount); remount required → RemountRequiredError;
   * expansion needed → FsResizeRequiredError; otherwise (pod present, devicePath).
   */
  podExistsInVolume(
    podName: UniquePodName,
    volumeName: UniqueVolumeName,
    desiredVolumeSize: number,
    seLinuxLabel: string,
  ): PodExistsResult {
    const entry = this.attachedVolumes.get(volumeName);
    if (entry === undefined || entry.foundDetached) {
      return { mounted: false, devicePath: entry?.devicePath ?? '', err: new VolumeNotAttachedError(volumeName) };
    }
    if (this.seLinuxEnabled && entry.seLinuxMountContext !== null && entry.seLinuxMountContext !== seLinuxLabel) {
      return { mounted: false, devicePath: entry.devicePath, err: new SELinuxMountMismatchError(volumeName) };
    }
    const pod = entry.mountedPods.get(podName);
    if (pod !== undefined) {
      if (pod.volumeMountStateForPod === 'VolumeMountUncertain') {
        return { mounted: false, devicePath: entry.devicePath, err: null };
      }
      if (pod.remountRequired) {
        return { mounted: true, devicePath: entry.devicePath, err: new RemountRequiredError(volumeName, podName) };
      }
      const currentSize = entry.persistentVolumeSize ?? 0;
      if (this.volumeNeedsExpansion(entry, desiredVolumeSize)) {
        return { mounted: true, devicePath: entry.devicePath, err: new FsResizeRequiredError(volumeName, podName, currentSize) };
      }
    }
    return { mounted: pod !== undefined, devicePath: entry.devicePath, err: null };
  }

  /**
   * True exactly when {@link podExistsInVolume} would answer (mounted, no error): the pod's
   * mount is certain, current and needs neither remount nor resize. Allocation-free, for the
   * reconciler's scan of a converged state.
   */
  isMountedAndCurrent(podName: UniquePodName, volumeName: UniqueVolumeName, desiredVolumeSize: number, seLinuxLabel: string): boolean {
    const entry = this.attachedVolumes.get(volumeName);
    if (entry === undefined || entry.foundDetached) return false;
    if (this.seLinuxEnabled && entry.seLinuxMountContext !== null && entry.seLinuxMountContext !== seLinuxLabel) return false;
    const pod = entry.mountedPods.get(podName);
    if (pod === undefined || pod.volumeMountStateForPod === 'VolumeMountUncertain' || pod.remountRequired) return false;
    return !this.volumeNeedsExpansion(entry, desiredVolumeSize);
  }

  /**
   * Mounted and Uncertain entries for which `wanted` returns true; the predicate sees only
   * primitives so entries that are not wanted cost no allocation.
   */
  collectMountedVolumes(
    wanted: (podName: UniquePodName, volumeName: UniqueVolumeName, seLinuxMountContext: string | null) => boolean,
  ): MountedVolume[] {
    const out: MountedVolume[] = [];
    for (const { entry, pod } of this.pairs) {
      if (wanted(pod.podName, entry.volumeName, entry.seLinuxMountContext)) out.push(this.toMountedVolume(entry, pod));
    }
    return out;
  }

  /**
   * {@link collectMountedVolumes} restricted to one volume, appended to `out` (returned): a pass
   * collects the volumes of its scope into one array instead of one per volume.
   */
  collectMountedVolumesOf(
    volumeName: UniqueVolumeName,
    wanted: (podName: UniquePodName, volumeName: UniqueVolumeName, seLinuxMountContext: string | null) => boolean,
    out: MountedVolume[] = [],
  ): MountedVolume[] {
    const entry = this.attachedVolumes.get(volumeName);
    if (entry === undefined) return out;
    for (const pod of entry.mountedPods.values()) {
      if (wanted(pod.podName, entry.volumeName, entry.seLinuxMountContext)) out.push(this.toMountedVolume(entry, pod));
    }
    return out;
  }

  /** The volume when it exists and no pod entry is left on it (a candidate for UnmountDevice/detach), else null. */
  getUnmountedVolume(volumeName: UniqueVolumeName): AttachedVolume | null {
    const entry = this.attachedVolumes.get(volumeName);
    return entry === undefined || entry.mountedPods.size > 0 ? null : this.toAttachedVolume(entry);
  }

  /**
   * Adds to `into` (a pass's scope) the volume names of the (volume, pod) entries at positions
   * [start, start+count) of the scan index (a sweep); returns the number of entries.
   */
  addVolumeNamesInRange(start: number, count: number, into: { add(volumeName: UniqueVolumeName): unknown }): number {
    const end = Math.min(this.pairs.length, start + count);
    for (let i = start; i < end; i++) {
      const pair = this.pairs[i];
      if (pair !== undefined) into.add(pair.entry.volumeName);
    }
    return this.pairs.length;
  }

  /** True when the volume or the pod is absent; false while the pod is Mounted or Uncertain. */
  podRemovedFromVolume(podName: UniquePodName, volumeName: UniqueVolumeName): boolean {
    const entry = this.attachedVolumes.get(volumeName);
    if (entry === undefined) return true;
    return !entry.mountedPods.has(podName);
  }

  /** Some other pod has the volume mounted or possibly mounted. */
  isVolumeMountedElsewhere(volumeName: UniqueVolumeName, podName: UniquePodName): boolean {
    const entry = this.attachedVolumes.get(volumeName);
    if (entry === undefined) return false;
    for (const pod of entry.mountedPods.values()) {
      if (pod.podName !== podName) return true;
    }
    return false;
  }

  /**
   * Some other pod has the PersistentVolume `pvName` of plugin `pluginName` mounted or possibly
   * mounted, whatever the unique volume name: plugins that are neither attachable nor
   * device-mountable (local, hostPath, CSI without attach and stage) name their volumes per pod,
   * so {@link isVolumeMountedElsewhere} cannot see the other pods of such a PV. An entry found
   * by reconstruction may carry an inline spec; it counts when its spec name (the PV name of its
   * directory) and plugin match. Scans every entry: for ReadWriteOncePod checks only.
   */
  isPersistentVolumeMountedElsewhere(pvName: string, pluginName: PluginName, podName: UniquePodName): boolean {
    for (const { entry, pod } of this.pairs) {
      if (pod.podName === podName) continue;
      const pv = pod.volumeSpec.persistentVolume;
      if (pv !== undefined) {
        if (pv.metadata.name === pvName && entry.pluginName === pluginName) return true;
      } else if (entry.pluginName === pluginName && specName(pod.volumeSpec) === pvName && this.foundDuringReconstruction.get(entry.volumeName)?.has(pod.podName) === true) {
        return true;
      }
    }
    return false;
  }

  volumeExists(volumeName: UniqueVolumeName): boolean {
    return this.attachedVolumes.has(volumeName);
  }

  volumeExistsWithSpecName(podName: UniquePodName, innerSpecName: string): boolean {
    for (const entry of this.entriesOfPod(podName)) {
      const pod = entry.mountedPods.get(podName);
      if (pod !== undefined && specName(pod.volumeSpec) === innerSpecName) return true;
    }
    return false;
  }

  /** The pod is Uncertain and was found during reconstruction. */
  isVolumeReconstructed(volumeName: UniqueVolumeName, podName: UniquePodName): boolean {
    const pod = this.attachedVolumes.get(volumeName)?.mountedPods.get(podName);
    if (pod?.volumeMountStateForPod !== 'VolumeMountUncertain') return false;
    return this.foundDuringReconstruction.get(volumeName)?.has(podName) ?? false;
  }

  isVolumeDeviceReconstructed(volumeName: UniqueVolumeName): boolean {
    return this.foundDuringReconstruction.has(volumeName);
  }

  getDeviceMountState(volumeName: UniqueVolumeName): DeviceMountState {
    return this.attachedVolumes.get(volumeName)?.deviceMountState ?? 'DeviceNotMounted';
  }

  getVolumeMountState(volumeName: UniqueVolumeName, podName: UniquePodName): VolumeMountState {
    return this.attachedVolumes.get(volumeName)?.mountedPods.get(podName)?.volumeMountStateForPod ?? 'VolumeNotMounted';
  }

  /** The tri-state attachability of the volume; null when absent. */
  getAttachability(volumeName: UniqueVolumeName): AttachabilityState | null {
    return this.attachedVolumes.get(volumeName)?.pluginIsAttachable ?? null;
  }

  getClaimSize(volumeName: UniqueVolumeName): number | null {
    return this.attachedVolumes.get(volumeName)?.persistentVolumeSize ?? null;
  }

  /** (volume, pod) entries in state Mounted. */
  getMountedVolumes(): MountedVolume[] {
    return this.collectMounted((p) => p.volumeMountStateForPod === 'VolumeMounted');
  }

  /** Mounted entries of one pod. */
  getMountedVolumesForPod(podName: UniquePodName): MountedVolume[] {
    return this.collectMountedOfPod(podName, (p) => p.volumeMountStateForPod === 'VolumeMounted');
  }

  /** Mounted and Uncertain entries. */
  getAllMountedVolumes(): MountedVolume[] {
    return this.collectMounted(() => true);
  }

  /** Mounted and Uncertain entries of one pod. */
  getPossiblyMountedVolumesForPod(podName: UniquePodName): MountedVolume[] {
    return this.collectMountedOfPod(podName, () => true);
  }

  /** Volumes whose device is globally mounted. */
  getGloballyMountedVolumes(): AttachedVolume[] {
    return this.collectAttached((e) => e.deviceMountState === 'DeviceGloballyMounted');
  }

  /** Volumes with no pod entries (any device state). */
  getUnmountedVolumes(): AttachedVolume[] {
    return this.collectAttached((e) => e.mountedPods.size === 0);
  }

  getAttachedVolumes(): AttachedVolume[] {
    return this.collectAttached(() => true);
  }

  /** One attached volume, re-read at the moment of use. */
  getAttachedVolume(volumeName: UniqueVolumeName): AttachedVolume | null {
    const entry = this.attachedVolumes.get(volumeName);
    return entry === undefined ? null : this.toAttachedVolume(entry);
  }

  /** Number of (volume, pod) entries in state Mounted, without building records. */
  countMountedVolumes(): number {
    let n = 0;
    for (const entry of this.attachedVolumes.values()) {
      for (const pod of entry.mountedPods.values()) if (pod.volumeMountStateForPod === 'VolumeMounted') n++;
    }
    return n;
  }

  /**
   * The uncertain parts of every volume, in volume order (attach, device, then the pods' mounts).
   * Allocates only for what it returns: a /metrics scrape reads it, and on a converged node it
   * is empty however many volumes there are.
   */
  getUncertainEntries(): UncertainEntry[] {
    const out: UncertainEntry[] = [];
    for (const e of this.attachedVolumes.values()) {
      if (e.pluginIsAttachable === 'Uncertain' || e.foundDetached) out.push({ volumeName: e.volumeName, kind: 'attach', podUID: null });
      if (e.deviceMountState === 'DeviceMountUncertain') out.push({ volumeName: e.volumeName, kind: 'device', podUID: null });
      for (const p of e.mountedPods.values()) {
        if (p.volumeMountStateForPod === 'VolumeMountUncertain') out.push({ volumeName: e.volumeName, kind: 'mount', podUID: p.podUID });
      }
    }
    return out;
  }

  /** Read-only views of every volume (snapshots). */
  getVolumes(): ActualVolumeView[] {
    return [...this.attachedVolumes.values()].map((e) => {
      const found = this.foundDuringReconstruction.get(e.volumeName);
      return {
        volumeName: e.volumeName,
        pluginName: e.pluginName,
        attachability: e.pluginIsAttachable,
        devicePath: e.devicePath,
        deviceMountState: e.deviceMountState,
        deviceMountPath: e.deviceMountPath,
        persistentVolumeSize: e.persistentVolumeSize,
        volumeInUseErrorForExpansion: e.volumeInUseErrorForExpansion,
        foundDuringReconstruction: found !== undefined,
        foundDetached: e.foundDetached,
        pods: [...e.mountedPods.values()].map((p) => ({
          podName: p.podName,
          podUID: p.podUID,
          outerVolumeSpecName: p.outerVolumeSpecName,
          innerVolumeSpecName: specName(p.volumeSpec),
          mountState: p.volumeMountStateForPod,
          remountRequired: p.remountRequired,
          foundDuringReconstruction: found?.has(p.podName) ?? false,
        })),
      };
    });
  }

  // INTERNALS

  private addVolume(volumeName: UniqueVolumeName | '', spec: Spec, devicePath: string, attachability: AttachabilityState): void {
    let plugin;
    try {
      plugin = this.pluginMgr.findPluginBySpec(spec);
    } catch (err) {
      throw new ActualStateError(`failed to get Plugin from volumeSpec for volume ${goQuote(specName(spec))} err=${errorMessage(err)}`, { cause: err });
    }
    let name = volumeName;
    if (name === '') {
      try {
        name = uniqueVolumeNameFromPlugin(plugin.name, plugin.getVolumeName(spec));
      } catch (err) {
        throw new ActualStateError(
          `failed to GetUniqueVolumeNameFromSpec for volumeSpec ${goQuote(specName(spec))} using volume plugin ${goQuote(plugin.name)} err=${errorMessage(err)}`,
          { cause: err },
        );
      }
    }
    const existing = this.attachedVolumes.get(name);
    if (existing === undefined) {
      this.attachedVolumes.set(name, {
        volumeName: name,
        spec,
        pluginName: plugin.name,
        mountedPods: new Map(),
        pluginIsAttachable: attachability,
        deviceMountState: 'DeviceNotMounted',
        devicePath,
        deviceMountPath: '',
        volumeInUseErrorForExpansion: false,
        persistentVolumeSize: null,
        seLinuxMountContext: null,
        foundDetached: false,
      });
    } else {
      existing.devicePath = devicePath;
      // Attached again (attach, controller attach verified, or reconstruction).
      existing.foundDetached = false;
    }
    this.notify(name);
  }

  private volumeNeedsExpansion(entry: AttachedVolumeEntry, desiredSize: number): boolean {
    if (entry.volumeInUseErrorForExpansion) return false;
    if (entry.persistentVolumeSize === null || desiredSize === 0) return false;
    if (desiredSize <= entry.persistentVolumeSize) return false;
    let plugin;
    try {
      plugin = this.pluginMgr.findNodeExpandablePluginBySpec(entry.spec);
    } catch {
      return false;
    }
    return plugin !== null && plugin.requiresFSResize();
  }

  /** The volumes the pod has an entry on, in attach order. */
  private entriesOfPod(podName: UniquePodName): Iterable<AttachedVolumeEntry> {
    return this.volumesOfPod.get(podName)?.values() ?? [];
  }

  private indexPod(entry: AttachedVolumeEntry, podName: UniquePodName): void {
    let volumes = this.volumesOfPod.get(podName);
    if (volumes === undefined) {
      volumes = new Map();
      this.volumesOfPod.set(podName, volumes);
    }
    volumes.set(entry.volumeName, entry);
  }

  /** {@link collectMounted} for one pod, in the same (scan index) order, at the cost of the pod's entries. */
  private collectMountedOfPod(podName: UniquePodName, filter: (pod: MountedPod) => boolean): MountedVolume[] {
    const pairs: { entry: AttachedVolumeEntry; pod: MountedPod }[] = [];
    for (const entry of this.entriesOfPod(podName)) {
      const pod = entry.mountedPods.get(podName);
      if (pod !== undefined && filter(pod)) pairs.push({ entry, pod });
    }
    pairs.sort((a, b) => a.pod.pairIndex - b.pod.pairIndex);
    return pairs.map(({ entry, pod }) => this.toMountedVolume(entry, pod));
  }

  private collectMounted(filter: (pod: MountedPod) => boolean): MountedVolume[] {
    const out: MountedVolume[] = [];
    for (const { entry, pod } of this.pairs) {
      if (filter(pod)) out.push(this.toMountedVolume(entry, pod));
    }
    return out;
  }

  private toMountedVolume(entry: AttachedVolumeEntry, pod: MountedPod): MountedVolume {
    return {
          podName: pod.podName,
          volumeName: entry.volumeName,
          innerVolumeSpecName: specName(pod.volumeSpec),
          outerVolumeSpecName: pod.outerVolumeSpecName,
          pluginName: entry.pluginName,
          podUID: pod.podUID,
          mounter: pod.mounter,
          blockVolumeMapper: pod.blockVolumeMapper,
          volumeGidValue: pod.volumeGidValue,
          volumeSpec: pod.volumeSpec,
          deviceMountPath: entry.deviceMountPath,
          seLinuxMountContext: entry.seLinuxMountContext,
          volumeMountState: pod.volumeMountStateForPod,
    };
  }

  private collectAttached(filter: (entry: AttachedVolumeEntry) => boolean): AttachedVolume[] {
    const out: AttachedVolume[] = [];
    for (const entry of this.attachedVolumes.values()) {
      if (filter(entry)) out.push(this.toAttachedVolume(entry));
    }
    return out;
  }

  private toAttachedVolume(entry: AttachedVolumeEntry): AttachedVolume {
    return {
      volumeName: entry.volumeName,
      volumeSpec: entry.spec,
      nodeName: this.nodeName,
      pluginIsAttachable: entry.pluginIsAttachable === 'True',
      devicePath: entry.devicePath,
      deviceMountPath: entry.deviceMountPath,
      pluginName: entry.pluginName,
      seLinuxMountContext: entry.seLinuxMountContext,
      deviceMountState: entry.deviceMountState,
    };
  }

  /** Swap-removes a pair from the scan index, keeping the moved pair's position current. */
  private removePair(index: number): void {
    const last = this.pairs.pop();
    if (last === undefined || index >= this.pairs.length) return;
    this.pairs[index] = last;
    last.pod.pairIndex = index;
  }

  private notify(volumeName: UniqueVolumeName): void {
    for (const listener of this.listeners) listener(volumeName);
  }
}
