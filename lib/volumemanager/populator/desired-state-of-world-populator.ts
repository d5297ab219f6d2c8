/**
 * The desired-state-of-world populator (kubelet `populator/desired_state_of_world_populator.go`):
 * every 100 ms adds the volumes of new pods to the desired state and removes those of pods whose
 * containers can no longer run. `hasAddedPods` turns true after the first full loop that began
 * with every source ready; until then the reconciler unmounts nothing.
 */
import { delayToNextTick, type Clock, type TimerHandle } from '../../clock/clock.ts';
import { specFromPersistentVolume, specFromVolume, specName, specVolumeMode, type Spec } from '../../volume/spec.ts';
import type { VolumeKubeClient } from '../../volume/kube-client.ts';
import { VolumeGidAnnotationKey, type Container, type Pod, type PersistentVolumeClaim, type SELinuxOptions, type Volume } from '../../volume/k8s-types.ts';
import { discardLogger, type Logger } from '../../volume/logger.ts';
import type { VolumePluginMgr } from '../../volume/plugins.ts';
import { parseQuantity } from '../../volume/quantity.ts';
import { errorMessage } from '../../volume/errors.ts';
import { podUID, uniquePodName, type UniquePodName, type UniqueVolumeName } from '../../volume/types.ts';
import type { ActualStateOfWorld, MountedVolumeView } from './asw-view.ts';
import type { DesiredStateOfWorld } from '../cache/desired-state-of-world.ts';
import { UnresolvedPodVolumes } from '../cache/unresolved-pod-volumes.ts';
import type { PodManager, PodStateProvider, SourcesReady } from './pod-source.ts';

/** The volume names a pod's containers use, and each volume's container SELinux options. */
export interface PodVolumeNames {
  mounts: Set<string>;
  devices: Set<string>;
  seLinuxContainerContexts: Map<string, (SELinuxOptions | undefined)[]>;
}

/** `GetPodVolumeNames`: over init, regular and ephemeral containers. */
export function getPodVolumeNames(pod: Pod): PodVolumeNames {
  const mounts = new Set<string>();
  const devices = new Set<string>();
  const seLinuxContainerContexts = new Map<string, (SELinuxOptions | undefined)[]>();
  const podOpts = pod.spec.securityContext?.seLinuxOptions;
  const visit = (c: Container): void => {
    // DetermineEffectiveSecurityContext: container options replace the pod's as a whole (no field merge).
    const own = c.securityContext?.seLinuxOptions;
    const effective = own ?? podOpts;
    for (const m of c.volumeMounts ?? []) {
      mounts.add(m.name);
      if (effective !== undefined) {
        const list = seLinuxContainerContexts.get(m.name) ?? [];
        list.push({ ...effective });
        seLinuxContainerContexts.set(m.name, list);
      }
    }
    for (const d of c.volumeDevices ?? []) devices.add(d.name);
  };
  for (const c of pod.spec.initContainers ?? []) visit(c);
  for (const c of pod.spec.containers) visit(c);
  for (const c of pod.spec.ephemeralContainers ?? []) visit(c);
  return { mounts, devices, seLinuxContainerContexts };
}

export interface DesiredStateOfWorldPopulatorOptions {
  dsw: DesiredStateOfWorld;
  asw: ActualStateOfWorld;
  podManager: PodManager;
  podStateProvider: PodStateProvider;
  kubeClient: VolumeKubeClient;
  pluginMgr: VolumePluginMgr;
  clock: Clock;
  loopSleepDurationMs: number;
  /**
   * Period of the first polls, until a loop that began with sources ready has run (which sets
   * `hasAddedPods`); default `loopSleepDurationMs`. Lets a slow steady-state loop keep the
   * kubelet's prompt start: unmounts and the reconciler's states-synced wait on that first loop.
   */
  pollPeriodMs?: number;
  /**
   * Where the volumes that `processPodVolumes` could not resolve are recorded (shared with the
   * reconciler, which unmounts nothing of such a pod); a private one when absent.
   */
  unresolved?: UnresolvedPodVolumes;
  logger?: Logger;
}

/** The mounted volumes of a pod by outer volume name (upstream's `mountedVolumesForPod` index). */
export interface MountedVolumesForPod {
  get(podName: UniquePodName): ReadonlyMap<string, MountedVolumeView> | undefined;
}

/** {@link MountedVolumesForPod} built pod by pod on first use, from the actual state at that moment. */
class LazyMountedVolumesForPod implements MountedVolumesForPod {
  private readonly byPod = new Map<UniquePodName, ReadonlyMap<string, MountedVolumeView>>();

  constructor(private readonly mountedOf: (podName: UniquePodName) => readonly MountedVolumeView[]) {}

  get(podName: UniquePodName): ReadonlyMap<string, MountedVolumeView> | undefined {
    let byOuter = this.byPod.get(podName);
    if (byOuter === undefined) {
      byOuter = new Map(this.mountedOf(podName).map((mv) => [mv.outerVolumeSpecName, mv]));
      this.byPod.set(podName, byOuter);
    }
    return byOuter.size === 0 ? undefined : byOuter;
  }
}

export class DesiredStateOfWorldPopulator {
  private readonly options: DesiredStateOfWorldPopulatorOptions;
  private readonly log: Logger;
  private readonly unresolved: UnresolvedPodVolumes;
  /** true = processed; false = seen once but must be reprocessed; absent = never processed. */
  private readonly processedPods = new Map<UniquePodName, boolean>();
  private hasAddedPodsFlag = false;
  private timer: TimerHandle | null = null;
  private stopped = false;
  private running: Promise<void> | null = null;
  private loopRequested = false;

  constructor(opts: DesiredStateOfWorldPopulatorOptions) {
    this.options = opts;
    this.log = opts.logger ?? discardLogger;
    this.unresolved = opts.unresolved ?? new UnresolvedPodVolumes();
  }

  /** The volumes of listed pods that could not be resolved (see {@link UnresolvedPodVolumes}). */
  getUnresolvedPodVolumes(): UnresolvedPodVolumes {
    return this.unresolved;
  }

  /**
   * Polls every poll period (the first poll after one period): each poll reads sources-ready
   * *before* running the loop, and the first loop that began with sources ready sets
   * `hasAddedPods`. Then loops every loop period until {@link stop}.
   */
  start(sourcesReady: SourcesReady): void {
    this.log.info('Desired state populator starts to run');
    const tick = (): void => {
      this.timer = null;
      if (this.stopped) return;
      const done = sourcesReady.allReady();
      void this.runLoop().then(() => {
        if (done && !this.hasAddedPodsFlag) {
          this.log.info('Finished populating initial desired state of world');
          this.hasAddedPodsFlag = true;
        }
        // Once populated, the loop is a safety net: on the clock's grid with the other background loops.
        if (!this.stopped) this.timer = this.options.clock.setTimeout(tick, this.hasAddedPodsFlag ? delayToNextTick(this.options.clock, this.options.loopSleepDurationMs) : pollPeriodMs);
      });
    };
    const pollPeriodMs = this.options.pollPeriodMs ?? this.options.loopSleepDurationMs;
    this.timer = this.options.clock.setTimeout(tick, pollPeriodMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) this.options.clock.clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  /** Runs a loop now (pod change notification); coalesced with a running loop. */
  kick(): void {
    if (this.stopped) return;
    if (this.running !== null) {
      this.loopRequested = true;
      return;
    }
    void this.runLoop();
  }

  hasAddedPods(): boolean {
    return this.hasAddedPodsFlag;
  }

  /** Test hook: sets hasAddedPods without running the start loop. */
  setHasAddedPods(value: boolean): void {
    this.hasAddedPodsFlag = value;
  }

  /**
   * `ReprocessPod` (`markPodProcessingFailed`): the pod's volumes are processed again on the next
   * loop (remounts). Sets the key even for a pod never seen; an orphaned key is dropped by
   * {@link findAndRemoveDeletedPods}.
   */
  reprocessPod(podName: UniquePodName): void {
    this.processedPods.set(podName, false);
  }

  /** Whether the pod is marked processed (tests). */
  podPreviouslyProcessed(podName: UniquePodName): boolean {
    return this.processedPods.get(podName) === true;
  }

  /** Whether the pod was processed at least once (tests). */
  podHasBeenSeenOnce(podName: UniquePodName): boolean {
    return this.processedPods.has(podName);
  }

  /** One `populatorLoop`: add new pods, then remove deleted ones. Loops never overlap. */
  async runLoop(): Promise<void> {
    if (this.running !== null) {
      this.loopRequested = true;
      return this.running;
    }
    const run = async (): Promise<void> => {
      do {
        this.loopRequested = false;
        await this.findAndAddNewPods();
        this.findAndRemoveDeletedPods();
      } while (this.loopRequested && !this.stopped);
    };
    this.running = run().catch((err: unknown) => {
      this.log.error(`desired state populator loop failed: ${errorMessage(err)}`);
    });
    try {
      await this.running;
    } finally {
      this.running = null;
    }
  }

  /**
   * `findAndAddNewPods`. Upstream first indexes every mounted volume by pod; that index is only
   * read for pods still to be processed, so here it is built per pod, when one is (each loop
   * every 100 ms otherwise materialised all of a node's mounted volumes for nothing).
   */
  async findAndAddNewPods(): Promise<void> {
    const mountedVolumesForPod = new LazyMountedVolumesForPod((podName) => this.options.asw.getMountedVolumesForPod(podName));
    for (const pod of this.options.podManager.getPods()) {
      const uid = podUID(pod.metadata.uid ?? '');
      // Keep consistency of adding pod during reconstruction.
      if (this.hasAddedPodsFlag && this.options.podStateProvider.shouldPodContainersBeTerminating(uid)) continue;
      // Before the first full pass, pods whose containers may still run are added so that
      // reconstruction does not tear their volumes down.
      if (!this.hasAddedPodsFlag && this.options.podStateProvider.shouldPodRuntimeBeRemoved(uid)) continue;
      // processPodVolumes' own first check, without a promise for each of a node's processed pods each loop.
      if (this.processedPods.get(uniquePodName(pod.metadata.uid ?? '')) === true) continue;
      await this.processPodVolumes(pod, mountedVolumesForPod);
    }
  }

  /**
   * `processPodVolumes`: adds every volume a container uses; errors go to the pod's errors and,
   * per volume, to the unresolved pod volumes (which keep the pod's mounts in place until the
   * volume resolves or the pod releases its volumes).
   */
  async processPodVolumes(pod: Pod, mountedVolumesForPod: MountedVolumesForPod): Promise<void> {
    const podName = uniquePodName(pod.metadata.uid ?? '');
    if (this.processedPods.get(podName) === true) return;
    let allVolumesAdded = true;
    const { mounts, devices, seLinuxContainerContexts } = getPodVolumeNames(pod);
    for (const podVolume of pod.spec.volumes ?? []) {
      if (!mounts.has(podVolume.name) && !devices.has(podVolume.name)) {
        this.log.debug('Skipping unused volume', { pod: pod.metadata.name, volumeName: podVolume.name });
        continue;
      }
      let created;
      try {
        created = await this.createVolumeSpec(podVolume, pod, mounts, devices);
      } catch (err) {
        this.log.error(`Error processing volume: ${errorMessage(err)}`, { pod: pod.metadata.name, volumeName: podVolume.name });
        this.options.dsw.addErrorToPod(podName, errorMessage(err));
        this.unresolved.markUnresolved(podName, podVolume.name, errorMessage(err));
        allVolumesAdded = false;
        continue;
      }
      let volumeName: UniqueVolumeName | null = null;
      try {
        volumeName = this.options.dsw.addPodToVolume(
          podName,
          pod,
          created.spec,
          podVolume.name,
          created.volumeGidValue,
          seLinuxContainerContexts.get(podVolume.name) ?? [],
        );
      } catch (err) {
        this.log.error(`Failed to add volume to desiredStateOfWorld: ${errorMessage(err)}`, { pod: pod.metadata.name, volumeName: podVolume.name });
        this.options.dsw.addErrorToPod(podName, errorMessage(err));
        this.unresolved.markUnresolved(podName, podVolume.name, errorMessage(err));
        allVolumesAdded = false;
      }
      if (volumeName !== null) this.unresolved.markResolved(podName, podVolume.name);
      if (volumeName !== null) this.checkVolumeFSResize(podName, podVolume, created.pvc, created.spec, volumeName, mountedVolumesForPod);
    }
    if (allVolumesAdded) {
      this.processedPods.set(podName, true);
      // A newly synced pod: remount every volume that needs it (downward API, configMap…).
      this.options.asw.markRemountRequired(podName);
      this.options.dsw.popPodErrors(podName);
      this.unresolved.forgetPod(podName);
    } else if (this.processedPods.has(podName)) {
      // Seen before: do not retry every 100 ms; ReprocessPod (each pod sync) retries it.
      this.processedPods.set(podName, true);
    }
  }

  /**
   * `checkVolumeFSResize`: for a mounted, writable PVC-backed volume, hand the PV capacity to the
   * desired state and the claim status capacity to the actual state; the reconciler then sees
   * FsResizeRequired when the first exceeds the second.
   */
  private checkVolumeFSResize(
    podName: UniquePodName,
    podVolume: Volume,
    pvc: PersistentVolumeClaim | null,
    spec: Spec,
    volumeName: UniqueVolumeName,
    mountedVolumesForPod: MountedVolumesForPod,
  ): void {
    if (spec.persistentVolume === undefined || spec.inlineVolumeSpecForCSIMigration === true || pvc === null) return;
    if (mountedVolumesForPod.get(podName)?.get(podVolume.name) === undefined) return;
    if (spec.readOnly) return;
    const pvCap = spec.persistentVolume.spec.capacity?.['storage'];
    const pvcStatusCap = pvc.status?.capacity?.['storage'];
    if (pvCap !== undefined) this.options.dsw.updatePersistentVolumeSize(volumeName, parseQuantity(pvCap));
    this.options.asw.initializeClaimSize(volumeName, pvcStatusCap === undefined ? null : parseQuantity(pvcStatusCap));
  }

  /** `createVolumeSpec`: resolves PVCs (and generic ephemeral volumes) to their PVs. */
  async createVolumeSpec(
    podVolume: Volume,
    pod: Pod,
    mounts: Set<string>,
    devices: Set<string>,
  ): Promise<{ pvc: PersistentVolumeClaim | null; spec: Spec; volumeGidValue: string }> {
    const namespace = pod.metadata.namespace ?? 'default';
    let claimName = podVolume.persistentVolumeClaim?.claimName;
    const readOnly = podVolume.persistentVolumeClaim?.readOnly ?? false;
    const isEphemeral = claimName === undefined && podVolume.ephemeral !== undefined;
    if (isEphemeral) claimName = `${pod.metadata.name}-${podVolume.name}`;
    if (claimName === undefined) {
      return { pvc: null, spec: specFromVolume(podVolume), volumeGidValue: '' };
    }
    let pvc: PersistentVolumeClaim;
    try {
      pvc = await this.getPVCExtractPV(namespace, claimName);
    } catch (err) {
      throw new Error(`error processing PVC ${namespace}/${claimName}: ${errorMessage(err)}`, { cause: err });
    }
    if (isEphemeral) {
      const owned =
        (pvc.metadata.namespace ?? 'default') === namespace &&
        (pvc.metadata.ownerReferences ?? []).some((r) => r.controller === true && r.uid === pod.metadata.uid);
      if (!owned) {
        throw new Error(
          `PVC ${pvc.metadata.namespace ?? 'default'}/${pvc.metadata.name} was not created for pod ${namespace}/${pod.metadata.name} (pod is not owner)`,
        );
      }
    }
    let spec: Spec;
    let volumeGidValue: string;
    try {
      ({ spec, volumeGidValue } = await this.getPVSpec(pvc.spec.volumeName ?? '', readOnly, pvc.metadata.uid ?? ''));
    } catch (err) {
      throw new Error(`error processing PVC ${namespace}/${claimName}: ${errorMessage(err)}`, { cause: err });
    }
    const volumeMode = specVolumeMode(spec);
    if (mounts.has(podVolume.name) && volumeMode !== 'Filesystem') {
      throw new Error(`volume ${podVolume.name} has volumeMode ${volumeMode}, but is specified in volumeMounts`);
    }
    if (devices.has(podVolume.name) && volumeMode !== 'Block') {
      throw new Error(`volume ${podVolume.name} has volumeMode ${volumeMode}, but is specified in volumeDevices`);
    }
    return { pvc, spec, volumeGidValue };
  }

  private async getPVCExtractPV(namespace: string, claimName: string): Promise<PersistentVolumeClaim> {
    let pvc: PersistentVolumeClaim;
    try {
      pvc = await this.options.kubeClient.getPersistentVolumeClaim(namespace, claimName);
    } catch (err) {
      throw new Error(`failed to fetch PVC from API server: ${errorMessage(err)}`, { cause: err });
    }
    if (pvc.metadata.deletionTimestamp !== undefined) throw new Error('PVC is being deleted');
    if (pvc.status?.phase !== 'Bound') throw new Error('PVC is not bound');
    if ((pvc.spec.volumeName ?? '') === '') throw new Error('PVC has empty pvc.Spec.VolumeName');
    return pvc;
  }

  private async getPVSpec(name: string, readOnly: boolean, expectedClaimUID: string): Promise<{ spec: Spec; volumeGidValue: string }> {
    let pv;
    try {
      pv = await this.options.kubeClient.getPersistentVolume(name);
    } catch (err) {
      throw new Error(`failed to fetch PV ${name} from API server: ${errorMessage(err)}`, { cause: err });
    }
    if (pv.spec.claimRef === undefined) {
      throw new Error(`found PV object ${name} but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim`);
    }
    if ((pv.spec.claimRef.uid ?? '') !== expectedClaimUID) {
      throw new Error(`found PV object ${name} but its pv.Spec.ClaimRef.UID ${pv.spec.claimRef.uid ?? ''} does not point to claim.UID ${expectedClaimUID}`);
    }
    return { spec: specFromPersistentVolume(pv, readOnly), volumeGidValue: pv.metadata.annotations?.[VolumeGidAnnotationKey] ?? '' };
  }

  /**
   * `findAndRemoveDeletedPods`: a pod's volumes leave the desired state only when its runtime
   * must be removed (no container can still run), and — while the pod is still known — only
   * once the volume has actually been mounted (so it gets unmounted).
   */
  findAndRemoveDeletedPods(): void {
    // Upstream walks every VolumeToMount and notes its pod (podsFromCache); only the pairs for
    // which the loop below does more than that are materialised (on a converged node: none), and
    // the desired state's own per-pod index answers for podsFromCache: the loop runs ten times a
    // second and allocates nothing on a converged node.
    const candidates = this.options.dsw.collectVolumesToMountOfPods((podName, pod, pluginIsAttachable) => {
      const uid = podUID(pod.metadata.uid ?? podName);
      return this.options.podManager.getPodByUID(uid) === undefined || pluginIsAttachable || this.options.podStateProvider.shouldPodRuntimeBeRemoved(uid);
    });
    for (const vtm of candidates) {
      const uid = podUID(vtm.pod.metadata.uid ?? vtm.podName);
      const pod = this.options.podManager.getPodByUID(uid);
      const podExists = pod !== undefined;
      if (podExists) {
        if (vtm.pluginIsAttachable) {
          let attachable: unknown = undefined;
          let lookupFailed = false;
          try {
            attachable = this.options.pluginMgr.findAttachablePluginBySpec(vtm.volumeSpec);
          } catch {
            lookupFailed = true;
          }
          if (!lookupFailed && attachable === null) {
            // Only a successful lookup returning no attachable plugin proves the change.
            this.options.dsw.markVolumeAttachability(vtm.volumeName, false);
            this.log.info('Volume changes from attachable to non-attachable', { volumeName: vtm.volumeName });
            continue;
          }
        }
        if (!this.options.podStateProvider.shouldPodRuntimeBeRemoved(uid)) continue;
      }
      if (!this.options.podStateProvider.shouldPodRuntimeBeRemoved(uid)) {
        this.log.debug('Pod still has one or more containers in the non-exited state and will not be removed from desired state', { pod: vtm.pod.metadata.name });
        continue;
      }
      const removed = this.options.asw.podRemovedFromVolume(vtm.podName, vtm.volumeName);
      if (removed && podExists) continue;
      this.log.debug('Removing volume from desired state', { pod: vtm.pod.metadata.name, volumeName: specName(vtm.volumeSpec) });
      this.options.dsw.deletePodFromVolume(vtm.podName, vtm.volumeName);
      this.processedPods.delete(vtm.podName);
    }
    // Deleting the current key while iterating a Map is safe (no copy of the keys).
    for (const podName of this.processedPods.keys()) {
      if (this.options.dsw.hasPod(podName)) continue;
      const uid = podUID(podName);
      if (this.options.podManager.getPodByUID(uid) === undefined && this.options.podStateProvider.shouldPodRuntimeBeRemoved(uid)) {
        this.processedPods.delete(podName);
      }
    }
    for (const podName of this.options.dsw.getPodsWithErrors()) {
      if (this.options.podManager.getPodByUID(podUID(podName)) === undefined) this.options.dsw.popPodErrors(podName);
    }
    // A pod releases its unresolved volumes (and so its mounts) under the same rule as its desired
    // ones: once its runtime may be removed, i.e. it is gone from its source or terminated and no
    // container of it can still run. Until then its mounts stay, whatever the API answers.
    for (const podName of this.unresolved.pods()) {
      if (this.options.podStateProvider.shouldPodRuntimeBeRemoved(podUID(podName))) {
        this.log.info('Pod released its unresolved volumes', { podName });
        this.unresolved.forgetPod(podName);
      }
    }
  }
}
