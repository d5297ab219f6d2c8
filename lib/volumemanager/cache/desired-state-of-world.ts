/**
 * Desired state of world (kubelet `cache/desired_state_of_world.go`): the volumes that should be
 * attached to this node and mounted into its pods. Written only by the populator; read by the
 * reconciler. Passive state: no I/O, no timers.
 */
import type { Clock } from '../../clock/clock.ts';
import type { VolumeToMount } from '../../operationexecutor/types.ts';
import type { FeatureGates } from '../../volume/features.ts';
import type { Pod, SELinuxOptions, Volume } from '../../volume/k8s-types.ts';
import { isAttachableVolume, isDeviceMountableVolume, type VolumePluginMgr } from '../../volume/plugins.ts';
import { parseQuantity } from '../../volume/quantity.ts';
import { specName, type Spec } from '../../volume/spec.ts';
import {
  uniqueVolumeNameFromPlugin,
  uniqueVolumeNameWithPod,
  type PluginName,
  type UniquePodName,
  type UniqueVolumeName,
} from '../../volume/types.ts';
import { errorMessage } from '../../volume/errors.ts';
import { goQuote } from '../../volume/util/go-format.ts';
import {
  getMountSELinuxLabel,
  volumeSupportsSELinuxMount,
  type SELinuxLabelTranslator,
} from '../../volume/util/selinux.ts';

/** `maxPodErrors`: a pod keeps at most 11 distinct error strings (insert allowed while size <= 10). */
export const maxPodErrors = 10;

/** The namespace of a pod object as the API server defaults it (`metav1.NamespaceDefault` when unset). */
export function podNamespace(pod: Pod): string {
  return pod.metadata.namespace ?? 'default';
}

interface PodToMount {
  /** Position of this (volume, pod) pair in the flat scan index. */
  pairIndex: number;
  podName: UniquePodName;
  pod: Pod;
  volumeSpec: Spec;
  outerVolumeSpecName: string;
  mountRequestTime: number;
}

interface VolumeToMountEntry {
  volumeName: UniqueVolumeName;
  podsToMount: Map<UniquePodName, PodToMount>;
  pluginIsAttachable: boolean;
  pluginIsDeviceMountable: boolean;
  volumeGidValue: string;
  reportedInUse: boolean;
  desiredSizeLimit: number | null;
  persistentVolumeSize: number | null;
  effectiveSELinuxMountFileLabel: string;
  originalSELinuxLabel: string;
  pluginName: PluginName;
}

export class SELinuxConflictError extends Error {
  override readonly name = 'SELinuxConflictError';
}

export function isSELinuxConflictError(err: unknown): err is SELinuxConflictError {
  return err instanceof SELinuxConflictError;
}

/** A read-only view of one desired volume, for snapshots. */
export interface DesiredVolumeView {
  volumeName: UniqueVolumeName;
  pluginName: PluginName;
  pluginIsAttachable: boolean;
  pluginIsDeviceMountable: boolean;
  reportedInUse: boolean;
  desiredSizeLimit: number | null;
  persistentVolumeSize: number | null;
  seLinuxLabel: string;
  pods: { podName: UniquePodName; pod: Pod; outerVolumeSpecName: string; innerVolumeSpecName: string; mountRequestTime: number }[];
}

export interface DesiredStateOfWorldOptions {
  pluginMgr: VolumePluginMgr;
  seLinuxTranslator: SELinuxLabelTranslator;
  featureGates: FeatureGates;
  clock: Clock;
}

export class DesiredStateOfWorld {
  private readonly volumesToMount = new Map<UniqueVolumeName, VolumeToMountEntry>();
  /**
   * Every (volume, pod) pair in a flat array: reconciler passes scan it linearly, which is
   * several times faster than walking nested maps at tens of thousands of entries.
   */
  private readonly pairs: { entry: VolumeToMountEntry; pod: PodToMount }[] = [];
  /** How many pairs each pod has: {@link hasPod} without a walk over the pairs. */
  private readonly pairsPerPod = new Map<UniquePodName, number>();
  private readonly podErrors = new Map<UniquePodName, Set<string>>();
  /**
   * The namespace of every pod removed from a volume, by pod: views of the actual state show a
   * departed pod's mounts until they are torn down, and only the desired state knew the pod's
   * namespace. Pruned by {@link forgetDepartedPods} (the volume manager, which sees both worlds).
   */
  private readonly departedNamespaces = new Map<UniquePodName, string>();
  private readonly listeners = new Set<(volumeName: UniqueVolumeName) => void>();
  private readonly podErrorListeners = new Set<(podName: UniquePodName) => void>();
  private readonly pluginMgr: VolumePluginMgr;
  private readonly translator: SELinuxLabelTranslator;
  private readonly gates: FeatureGates;
  private readonly clock: Clock;

  constructor(opts: DesiredStateOfWorldOptions) {
    this.pluginMgr = opts.pluginMgr;
    this.translator = opts.seLinuxTranslator;
    this.gates = opts.featureGates;
    this.clock = opts.clock;
  }

  /**
   * Registers a listener called after every change of the desired volumes (not of pod errors),
   * with the name of the volume that changed.
   */
  onChange(listener: (volumeName: UniqueVolumeName) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Registers a listener called after every change of the pod errors ({@link getPodErrors}), with
   * the pod whose errors changed. Adding an error a pod already has, or popping none, is no change.
   */
  onPodErrorsChange(listener: (podName: UniquePodName) => void): () => void {
    this.podErrorListeners.add(listener);
    return () => this.podErrorListeners.delete(listener);
  }

  /**
   * Adds the pod to the volume (creating the volume if needed) and returns the volume's unique
   * name. Throws with the kubelet's texts when no plugin matches, when the unique name cannot be
   * computed, or on SELinux label conflicts. Re-adding an existing pod refreshes its pod object
   * and spec (this keeps configMap/downward API contents current); its `mountRequestTime` is kept
   * unless the plugin requires remounts.
   */
  addPodToVolume(
    podName: UniquePodName,
    pod: Pod,
    volumeSpec: Spec,
    outerVolumeSpecName: string,
    volumeGidValue: string,
    seLinuxContainerContexts: readonly (SELinuxOptions | undefined)[],
  ): UniqueVolumeName {
    let plugin;
    try {
      plugin = this.pluginMgr.findPluginBySpec(volumeSpec);
    } catch (err) {
      throw new Error(`failed to get Plugin from volumeSpec for volume ${goQuote(specName(volumeSpec))} err=${errorMessage(err)}`, { cause: err });
    }

    const attachable = isAttachableVolume(volumeSpec, this.pluginMgr);
    const deviceMountable = isDeviceMountableVolume(volumeSpec, this.pluginMgr);
    let volumeName: UniqueVolumeName;
    if (attachable || deviceMountable) {
      try {
        volumeName = uniqueVolumeNameFromPlugin(plugin.name, plugin.getVolumeName(volumeSpec));
      } catch (err) {
        throw new Error(
          `failed to GetUniqueVolumeNameFromSpec for volumeSpec ${goQuote(specName(volumeSpec))} using volume plugin ${goQuote(plugin.name)} err=${errorMessage(err)}`,
        { cause: err },
      );
      }
    } else {
      volumeName = uniqueVolumeNameWithPod(plugin.name, podName, specName(volumeSpec));
    }

    const label = getMountSELinuxLabel(volumeSpec, seLinuxContainerContexts, this.pluginMgr, this.translator, this.gates);

    let entry = this.volumesToMount.get(volumeName);
    if (entry === undefined) {
      entry = {
        volumeName,
        podsToMount: new Map(),
        pluginIsAttachable: attachable,
        pluginIsDeviceMountable: deviceMountable,
        volumeGidValue,
        reportedInUse: false,
        desiredSizeLimit: desiredSizeLimit(pod, volumeSpec.volume),
        persistentVolumeSize: persistentVolumeSize(volumeSpec),
        effectiveSELinuxMountFileLabel: label.effectiveSELinuxMountFileLabel,
        originalSELinuxLabel: label.originalSELinuxLabel,
        pluginName: plugin.name,
      };
      this.volumesToMount.set(volumeName, entry);
    }

    const existing = entry.podsToMount.get(podName);
    let mountRequestTime = this.clock.now();
    if (existing !== undefined && !plugin.requiresRemount(volumeSpec)) {
      mountRequestTime = existing.mountRequestTime;
    }
    if (existing === undefined && label.pluginSupportsSELinuxContextMount) {
      // A new pod for an existing volume: every pod must agree on the label when the volume is
      // mounted with -o context (otherwise only a warning metric in the kubelet).
      if (label.originalSELinuxLabel !== entry.originalSELinuxLabel && volumeSupportsSELinuxMount(volumeSpec, this.gates)) {
        throw new SELinuxConflictError(
          `conflicting SELinux labels of volume ${specName(volumeSpec)}: ${goQuote(entry.originalSELinuxLabel)} and ${goQuote(label.originalSELinuxLabel)}`,
        );
      }
    }

    const record: PodToMount = { pairIndex: existing?.pairIndex ?? this.pairs.length, podName, pod, volumeSpec, outerVolumeSpecName, mountRequestTime };
    if (existing === undefined) {
      this.pairs.push({ entry, pod: record });
      this.pairsPerPod.set(podName, (this.pairsPerPod.get(podName) ?? 0) + 1);
    }
    else this.pairs[record.pairIndex] = { entry, pod: record };
    entry.podsToMount.set(podName, record);
    this.departedNamespaces.delete(podName);
    this.notify(volumeName);
    return volumeName;
  }

  /**
   * Removes the pod from the volume, and the volume when no pods remain. Always drops the pod's
   * errors. The pod's namespace is remembered ({@link getDepartedPodNamespace}).
   */
  deletePodFromVolume(podName: UniquePodName, volumeName: UniqueVolumeName): void {
    if (this.podErrors.delete(podName)) this.notifyPodErrors(podName);
    const entry = this.volumesToMount.get(volumeName);
    const record = entry?.podsToMount.get(podName);
    if (entry === undefined || record === undefined) return;
    entry.podsToMount.delete(podName);
    this.departedNamespaces.set(podName, podNamespace(record.pod));
    this.removePair(record.pairIndex);
    const left = (this.pairsPerPod.get(podName) ?? 1) - 1;
    if (left > 0) this.pairsPerPod.set(podName, left);
    else this.pairsPerPod.delete(podName);
    if (entry.podsToMount.size === 0) this.volumesToMount.delete(volumeName);
    this.notify(volumeName);
  }

  /** Set semantics: every volume's reportedInUse becomes (name ∈ names); unknown names are ignored. */
  markVolumesReportedInUse(reportedVolumes: readonly string[]): void {
    const reported = new Set(reportedVolumes);
    for (const entry of this.volumesToMount.values()) {
      const inUse = reported.has(entry.volumeName);
      if (entry.reportedInUse === inUse) continue;
      entry.reportedInUse = inUse;
      this.notify(entry.volumeName);
    }
  }

  /**
   * Present and, with the SELinux gate on, desired with exactly `seLinuxMountContext`: a volume
   * mounted with another label counts as not desired, so it is unmounted and mounted again.
   */
  volumeExists(volumeName: UniqueVolumeName, seLinuxMountContext: string | null): boolean {
    const entry = this.volumesToMount.get(volumeName);
    if (entry === undefined) return false;
    if (this.gates.SELinuxMountReadWriteOncePod) {
      return entry.effectiveSELinuxMountFileLabel === (seLinuxMountContext ?? '');
    }
    return true;
  }

  /** The SELinux rule of {@link volumeExists}, then pod membership. */
  podExistsInVolume(podName: UniquePodName, volumeName: UniqueVolumeName, seLinuxMountContext: string | null): boolean {
    // One lookup: this runs for every mounted entry in every reconciler pass.
    const entry = this.volumesToMount.get(volumeName);
    if (entry === undefined) return false;
    if (this.gates.SELinuxMountReadWriteOncePod && entry.effectiveSELinuxMountFileLabel !== (seLinuxMountContext ?? '')) return false;
    return entry.podsToMount.has(podName);
  }

  /** Whether the pod has a desired volume whose inner spec name is `innerSpecName`. */
  volumeExistsWithSpecName(podName: UniquePodName, innerSpecName: string): boolean {
    for (const entry of this.volumesToMount.values()) {
      const pod = entry.podsToMount.get(podName);
      if (pod !== undefined && specName(pod.volumeSpec) === innerSpecName) return true;
    }
    return false;
  }

  /** One {@link VolumeToMount} per (volume, pod). `devicePath` is empty: the reconciler fills it. */
  getVolumesToMount(): VolumeToMount[] {
    return this.collectVolumesToMount(() => true);
  }

  /**
   * The {@link VolumeToMount} records of the pairs for which `wanted` returns true. The
   * predicate sees only primitives, so a reconciler pass over a large, converged desired state
   * allocates nothing for pairs that need no action.
   */
  collectVolumesToMount(
    wanted: (volumeName: UniqueVolumeName, podName: UniquePodName, desiredSize: number, seLinuxLabel: string) => boolean,
  ): VolumeToMount[] {
    const out: VolumeToMount[] = [];
    for (const { entry, pod } of this.pairs) {
      if (wanted(entry.volumeName, pod.podName, entry.persistentVolumeSize ?? 0, entry.effectiveSELinuxMountFileLabel)) {
        out.push(this.toVolumeToMount(entry, pod));
      }
    }
    return out;
  }

  /**
   * The {@link VolumeToMount} records of the pairs for which `wanted` returns true, called for
   * every pair with its pod (not to be changed) and whether the volume's plugin is attachable;
   * nothing is allocated for the others.
   */
  collectVolumesToMountOfPods(wanted: (podName: UniquePodName, pod: Pod, pluginIsAttachable: boolean) => boolean): VolumeToMount[] {
    const out: VolumeToMount[] = [];
    for (const { entry, pod } of this.pairs) {
      if (wanted(pod.podName, pod.pod, entry.pluginIsAttachable)) out.push(this.toVolumeToMount(entry, pod));
    }
    return out;
  }

  /** {@link collectVolumesToMount} restricted to the pods of one volume, appended to `out` (returned). */
  collectVolumesToMountOf(
    volumeName: UniqueVolumeName,
    wanted: (volumeName: UniqueVolumeName, podName: UniquePodName, desiredSize: number, seLinuxLabel: string) => boolean,
    out: VolumeToMount[] = [],
  ): VolumeToMount[] {
    const entry = this.volumesToMount.get(volumeName);
    if (entry === undefined) return out;
    for (const pod of entry.podsToMount.values()) {
      if (wanted(entry.volumeName, pod.podName, entry.persistentVolumeSize ?? 0, entry.effectiveSELinuxMountFileLabel)) {
        out.push(this.toVolumeToMount(entry, pod));
      }
    }
    return out;
  }

  /**
   * Adds to `into` (a pass's scope) the volume names of the pairs at positions [start, start+count)
   * of the scan index (a sweep); returns the number of pairs.
   */
  addVolumeNamesInRange(start: number, count: number, into: { add(volumeName: UniqueVolumeName): unknown }): number {
    const end = Math.min(this.pairs.length, start + count);
    for (let i = start; i < end; i++) {
      const pair = this.pairs[i];
      if (pair !== undefined) into.add(pair.entry.volumeName);
    }
    return this.pairs.length;
  }

  /** Number of (volume, pod) pairs, without building the records. */
  countVolumesToMount(): number {
    return this.pairs.length;
  }

  /** Whether the pod has at least one desired volume. */
  hasPod(podName: UniquePodName): boolean {
    return this.pairsPerPod.has(podName);
  }

  /** The pods that have at least one desired volume. */
  getPods(): Map<UniquePodName, Pod> {
    const pods = new Map<UniquePodName, Pod>();
    for (const entry of this.volumesToMount.values()) {
      for (const pod of entry.podsToMount.values()) pods.set(pod.podName, pod.pod);
    }
    return pods;
  }

  /** Read-only views of every desired volume (snapshots). */
  getVolumes(): DesiredVolumeView[] {
    return [...this.volumesToMount.values()].map((e) => ({
      volumeName: e.volumeName,
      pluginName: e.pluginName,
      pluginIsAttachable: e.pluginIsAttachable,
      pluginIsDeviceMountable: e.pluginIsDeviceMountable,
      reportedInUse: e.reportedInUse,
      desiredSizeLimit: e.desiredSizeLimit,
      persistentVolumeSize: e.persistentVolumeSize,
      seLinuxLabel: e.effectiveSELinuxMountFileLabel,
      pods: [...e.podsToMount.values()].map((p) => ({
        podName: p.podName,
        pod: p.pod,
        outerVolumeSpecName: p.outerVolumeSpecName,
        innerVolumeSpecName: specName(p.volumeSpec),
        mountRequestTime: p.mountRequestTime,
      })),
    }));
  }

  /** Flips attachability (a plugin stopped being attachable, e.g. a CSIDriver changed). */
  markVolumeAttachability(volumeName: UniqueVolumeName, attachable: boolean): void {
    const entry = this.volumesToMount.get(volumeName);
    if (entry === undefined || entry.pluginIsAttachable === attachable) return;
    entry.pluginIsAttachable = attachable;
    this.notify(volumeName);
  }

  /** Updates the desired PV size (bytes) of an existing volume; a no-op otherwise. */
  updatePersistentVolumeSize(volumeName: UniqueVolumeName, size: number): void {
    const entry = this.volumesToMount.get(volumeName);
    if (entry === undefined || entry.persistentVolumeSize === size) return;
    entry.persistentVolumeSize = size;
    this.notify(volumeName);
  }

  /** Records an error for the pod; at most {@link maxPodErrors}+1 distinct strings are kept. */
  addErrorToPod(podName: UniquePodName, message: string): void {
    let errors = this.podErrors.get(podName);
    if (errors === undefined) {
      errors = new Set();
      this.podErrors.set(podName, errors);
    }
    if (errors.size > maxPodErrors || errors.has(message)) return;
    errors.add(message);
    this.notifyPodErrors(podName);
  }

  /** Returns the pod's errors sorted, and clears them. */
  popPodErrors(podName: UniquePodName): string[] {
    const errors = this.podErrors.get(podName);
    if (errors === undefined) return [];
    this.podErrors.delete(podName);
    if (errors.size > 0) this.notifyPodErrors(podName);
    return [...errors].sort();
  }

  /** Peeks at the pod's errors without clearing them (snapshots). */
  getPodErrors(podName: UniquePodName): string[] {
    return [...(this.podErrors.get(podName) ?? [])].sort();
  }

  getPodsWithErrors(): UniquePodName[] {
    return [...this.podErrors.keys()];
  }

  /**
   * The namespace a pod had when it was last removed from a volume, or undefined when it never
   * was (or was forgotten). For views of pods that left the desired state while the actual state
   * still holds their mounts; a pod still desired has its namespace in its pod object.
   */
  getDepartedPodNamespace(podName: UniquePodName): string | undefined {
    return this.departedNamespaces.get(podName);
  }

  /** How many departed pods' namespaces are remembered. */
  countDepartedPods(): number {
    return this.departedNamespaces.size;
  }

  /** Forgets the namespace of every departed pod for which `keep` answers false. */
  forgetDepartedPods(keep: (podName: UniquePodName) => boolean): void {
    for (const podName of [...this.departedNamespaces.keys()]) {
      if (!keep(podName)) this.departedNamespaces.delete(podName);
    }
  }

  private toVolumeToMount(entry: VolumeToMountEntry, pod: PodToMount): VolumeToMount {
    return {
      volumeName: entry.volumeName,
      podName: pod.podName,
      volumeSpec: pod.volumeSpec,
      outerVolumeSpecName: pod.outerVolumeSpecName,
      pod: pod.pod,
      pluginIsAttachable: entry.pluginIsAttachable,
      pluginIsDeviceMountable: entry.pluginIsDeviceMountable,
      volumeGidValue: entry.volumeGidValue,
      devicePath: '',
      reportedInUse: entry.reportedInUse,
      desiredSizeLimit: entry.desiredSizeLimit,
      mountRequestTime: pod.mountRequestTime,
      desiredPersistentVolumeSize: entry.persistentVolumeSize ?? 0,
      seLinuxLabel: entry.effectiveSELinuxMountFileLabel,
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

  private notifyPodErrors(podName: UniquePodName): void {
    for (const listener of this.podErrorListeners) listener(podName);
  }
}

/**
 * The desired size limit of a local ephemeral volume (disk-backed emptyDir, configMap): the
 * pod's ephemeral-storage limit, or the emptyDir's own sizeLimit when that is smaller (or the pod
 * has none). Null for every other volume.
 */
function desiredSizeLimit(pod: Pod, volume: Volume | undefined): number | null {
  if (volume === undefined) return null;
  const localEphemeral = (volume.emptyDir !== undefined && (volume.emptyDir.medium ?? '') === '') || volume.configMap !== undefined;
  if (!localEphemeral) return null;
  let limit = podEphemeralStorageLimit(pod);
  const sizeLimit = volume.emptyDir?.sizeLimit !== undefined ? parseQuantity(volume.emptyDir.sizeLimit) : 0;
  if (sizeLimit > 0 && (limit === 0 || sizeLimit < limit)) limit = sizeLimit;
  return limit;
}

/** `PodLimits` for ephemeral-storage: the sum over containers, at least the largest init container. */
function podEphemeralStorageLimit(pod: Pod): number {
  const of = (c: { resources?: { limits?: Record<string, string> } }) => {
    const v = c.resources?.limits?.['ephemeral-storage'];
    return v === undefined ? 0 : parseQuantity(v);
  };
  const sum = pod.spec.containers.reduce((acc, c) => acc + of(c), 0);
  const initMax = (pod.spec.initContainers ?? []).reduce((acc, c) => Math.max(acc, of(c)), 0);
  return Math.max(sum, initMax);
}

function persistentVolumeSize(spec: Spec): number | null {
  const storage = spec.persistentVolume?.spec.capacity?.['storage'];
  return storage === undefined ? null : parseQuantity(storage);
}
