/**
 * Test support for the desired-state populator (kubelet `desired_state_of_world_populator_test.go`):
 * a pod state provider that is independent of the pod manager (as the kubelet's fake is), a kube
 * client whose claim lookups can be held open, the `dswp-test-*` fixture objects, and a rig that
 * wires a populator to real desired and actual states on a fake clock.
 */
import { FakeClock } from '../../clock/fake-clock.ts';
import { defaultFeatureGates, type FeatureGates } from '../../volume/features.ts';
import type { Container, PersistentVolume, PersistentVolumeClaim, Pod, Volume } from '../../volume/k8s-types.ts';
import type { VolumeKubeClient } from '../../volume/kube-client.ts';
import { VolumePluginMgr, type VolumePlugin } from '../../volume/plugins.ts';
import { FakeVolumePlugin } from '../../volume/testing/fake-volume-plugin.ts';
import { podUID, uniqueVolumeName, type PodUID, type UniqueVolumeName } from '../../volume/types.ts';
import { newSELinuxLabelTranslator, type SELinuxLabelTranslator } from '../../volume/util/selinux.ts';
import { ActualStateOfWorld } from '../cache/actual-state-of-world.ts';
import { DesiredStateOfWorld } from '../cache/desired-state-of-world.ts';
import { DesiredStateOfWorldPopulator } from '../populator/desired-state-of-world-populator.ts';
import type { PodStateProvider, SourcesReady } from '../populator/pod-source.ts';
import { FakeKubeClient, FakePodSource, testNodeName } from './harness.ts';

export const dswpPodName = 'dswp-test-pod';
export const dswpPodUID = 'dswp-test-pod-uid';
export const dswpNamespace = 'ns';
export const dswpVolumeName = 'dswp-test-volume-name';
export const dswpClaimName = 'file-bound';
/** `fake-plugin/<pv name>`: the fake plugin names PV-backed volumes after the PV. */
export const dswpUniqueVolumeName: UniqueVolumeName = uniqueVolumeName(`fake-plugin/${dswpVolumeName}`);

/**
 * The kubelet test's `fakePodStateProvider`: "removed" implies "terminating", and neither depends on
 * whether the pod manager still knows the pod.
 */
export class FakePodStateProvider implements PodStateProvider {
  readonly terminating = new Set<string>();
  readonly removed = new Set<string>();

  shouldPodContainersBeTerminating(uid: PodUID): boolean {
    return this.terminating.has(uid) || this.removed.has(uid);
  }

  shouldPodRuntimeBeRemoved(uid: PodUID): boolean {
    return this.removed.has(uid);
  }
}

/** A switchable sources-ready flag. */
export class FakeSourcesReady implements SourcesReady {
  ready = false;

  allReady(): boolean {
    return this.ready;
  }
}

/**
 * A {@link FakeKubeClient} whose PVC lookups can be held open with {@link hold}, so a test can
 * change the world while a populator loop is in progress.
 */
export class GatedKubeClient implements VolumeKubeClient {
  readonly inner = new FakeKubeClient(false);
  private gate: Promise<void> | null = null;

  /** Blocks every PVC lookup until the returned function is called. */
  hold(): () => void {
    let release: () => void = () => undefined;
    this.gate = new Promise<void>((resolve) => {
      release = () => {
        this.gate = null;
        resolve();
      };
    });
    return release;
  }

  async getPersistentVolumeClaim(namespace: string, name: string): Promise<PersistentVolumeClaim> {
    if (this.gate !== null) await this.gate;
    return this.inner.getPersistentVolumeClaim(namespace, name);
  }

  getPersistentVolume(name: string): Promise<PersistentVolume> {
    return this.inner.getPersistentVolume(name);
  }
}

/** The Filesystem (or Block) PV `dswp-test-volume-name`, bound to `ns/file-bound`. */
export function dswpPersistentVolume(opts: { mode?: 'Filesystem' | 'Block'; capacity?: string } = {}): PersistentVolume {
  return {
    metadata: { name: dswpVolumeName },
    spec: {
      claimRef: { namespace: dswpNamespace, name: dswpClaimName },
      volumeMode: opts.mode ?? 'Filesystem',
      ...(opts.capacity !== undefined ? { capacity: { storage: opts.capacity } } : {}),
    },
  };
}

/** The bound PVC `ns/file-bound` pointing at `dswp-test-volume-name`. */
export function dswpClaim(opts: { name?: string; namespace?: string; statusCapacity?: string } = {}): PersistentVolumeClaim {
  return {
    metadata: { name: opts.name ?? dswpClaimName, namespace: opts.namespace ?? dswpNamespace },
    spec: { volumeName: dswpVolumeName },
    status: { phase: 'Bound', ...(opts.statusCapacity !== undefined ? { capacity: { storage: opts.statusCapacity } } : {}) },
  };
}

/** A container that mounts (or maps, with `device`) the named volumes. */
export function dswpContainer(volumes: readonly string[], opts: { name?: string; device?: boolean; readOnly?: boolean } = {}): Container {
  return {
    name: opts.name ?? 'c',
    ...(opts.device === true
      ? { volumeDevices: volumes.map((v) => ({ name: v, devicePath: `/dev/${v}` })) }
      : { volumeMounts: volumes.map((v) => ({ name: v, mountPath: `/mnt/${v}`, ...(opts.readOnly === true ? { readOnly: true } : {}) })) }),
  };
}

/** `createPodWithVolume`: pod `dswp-test-pod` whose volume `dswp-test-volume-name` refers to `file-bound`. */
export function dswpPod(
  opts: { volumes?: Volume[]; containers?: Container[]; claimReadOnly?: boolean; name?: string; uid?: string; namespace?: string } = {},
): Pod {
  const volumes = opts.volumes ?? [
    { name: dswpVolumeName, persistentVolumeClaim: { claimName: dswpClaimName, ...(opts.claimReadOnly === true ? { readOnly: true } : {}) } },
  ];
  return {
    metadata: { name: opts.name ?? dswpPodName, uid: opts.uid ?? dswpPodUID, namespace: opts.namespace ?? dswpNamespace },
    spec: { volumes, containers: opts.containers ?? [dswpContainer([dswpVolumeName])] },
    status: { phase: 'Running' },
  };
}

/**
 * `createEphemeralVolumeObjects`: a pod with a generic ephemeral volume, its PVC
 * `<pod>-<volume>` (owned by the pod when `owned`) and the PV.
 */
export function dswpEphemeralObjects(opts: { owned: boolean; mode?: 'Filesystem' | 'Block'; capacity?: string }): {
  pod: Pod;
  pv: PersistentVolume;
  pvc: PersistentVolumeClaim;
} {
  const namespace = 'dswp-test';
  const pod: Pod = {
    metadata: { name: dswpPodName, uid: dswpPodUID, namespace },
    spec: {
      volumes: [{ name: dswpVolumeName, ephemeral: { volumeClaimTemplate: { spec: {} } } }],
      containers: [dswpContainer([dswpVolumeName], { device: opts.mode === 'Block' })],
    },
    status: { phase: 'Running' },
  };
  const capacity = opts.capacity ?? '1Gi';
  const pv = dswpPersistentVolume({ capacity, ...(opts.mode !== undefined ? { mode: opts.mode } : {}) });
  const pvc = dswpClaim({ name: `${dswpPodName}-${dswpVolumeName}`, namespace, statusCapacity: capacity });
  if (opts.owned) pvc.metadata.ownerReferences = [{ kind: 'Pod', name: dswpPodName, uid: dswpPodUID, controller: true }];
  return { pod, pv, pvc };
}

export interface PopulatorRigOptions {
  plugins?: VolumePlugin[];
  featureGates?: FeatureGates;
  seLinuxTranslator?: SELinuxLabelTranslator;
  /** The populator's periods (default: a 100 ms loop, and polls at the loop period). */
  loopSleepDurationMs?: number;
  pollPeriodMs?: number;
}

/** A populator wired by hand, as `createDswpWithVolume` does. */
export class PopulatorRig {
  readonly clock = new FakeClock();
  readonly plugin = new FakeVolumePlugin();
  readonly podManager = new FakePodSource();
  readonly podState = new FakePodStateProvider();
  readonly client = new GatedKubeClient();
  readonly pluginMgr: VolumePluginMgr;
  readonly dsw: DesiredStateOfWorld;
  readonly asw: ActualStateOfWorld;
  readonly populator: DesiredStateOfWorldPopulator;

  constructor(opts: PopulatorRigOptions = {}) {
    const gates = opts.featureGates ?? defaultFeatureGates;
    this.pluginMgr = new VolumePluginMgr(opts.plugins ?? [this.plugin], null);
    this.dsw = new DesiredStateOfWorld({
      pluginMgr: this.pluginMgr,
      seLinuxTranslator: opts.seLinuxTranslator ?? newSELinuxLabelTranslator(false),
      featureGates: gates,
      clock: this.clock,
    });
    this.asw = new ActualStateOfWorld({ nodeName: testNodeName, pluginMgr: this.pluginMgr, seLinuxEnabled: gates.SELinuxMountReadWriteOncePod });
    this.populator = new DesiredStateOfWorldPopulator({
      dsw: this.dsw,
      asw: this.asw,
      podManager: this.podManager,
      podStateProvider: this.podState,
      kubeClient: this.client,
      pluginMgr: this.pluginMgr,
      clock: this.clock,
      loopSleepDurationMs: opts.loopSleepDurationMs ?? 100,
      ...(opts.pollPeriodMs !== undefined ? { pollPeriodMs: opts.pollPeriodMs } : {}),
    });
  }

  /** The fake API objects (`pvcs` keyed by `namespace/name`). */
  get kube(): FakeKubeClient {
    return this.client.inner;
  }

  /** Serves the PV and its PVC from the fake API. */
  serve(pv: PersistentVolume, pvc: PersistentVolumeClaim): void {
    this.kube.pvs.set(pv.metadata.name, pv);
    this.kube.pvcs.set(`${pvc.metadata.namespace ?? 'default'}/${pvc.metadata.name}`, pvc);
  }

  /**
   * `reconcileASW`: records every desired (volume, pod) as attached and Mounted, as a successful
   * reconciler pass would.
   */
  reconcileASW(): void {
    for (const vtm of this.dsw.getVolumesToMount()) {
      this.asw.markVolumeAsAttached(vtm.volumeName, vtm.volumeSpec, testNodeName, '');
      this.asw.markVolumeAsMounted({
        podName: vtm.podName,
        podUID: podUID(vtm.pod.metadata.uid ?? ''),
        volumeName: vtm.volumeName,
        mounter: null,
        blockVolumeMapper: null,
        outerVolumeSpecName: vtm.outerVolumeSpecName,
        volumeGidValue: vtm.volumeGidValue,
        volumeSpec: vtm.volumeSpec,
        volumeMountState: 'VolumeMounted',
        seLinuxMountContext: vtm.seLinuxLabel,
      });
    }
  }

  /** `clearASW`: unmounts and detaches every desired volume in the actual state. */
  clearASW(): void {
    for (const vtm of this.dsw.getVolumesToMount()) this.asw.markVolumeAsUnmounted(vtm.podName, vtm.volumeName);
    for (const vtm of this.dsw.getVolumesToMount()) this.asw.markVolumeAsDetached(vtm.volumeName, testNodeName);
  }
}
