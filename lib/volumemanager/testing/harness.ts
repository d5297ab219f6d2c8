/**
 * Test support: a volume manager wired to in-memory pod sources, a fake API client and the fake
 * volume plugin, on a fake clock. Mirrors the fixtures of the kubelet's reconciler tests (reconciler_test.go@v1.34):
 * node `mynodename`, pod `pod1`/UID `pod1uid`, inline GCE PD `volume-name` → `fake-plugin/fake-device1`.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock, type RunUntilOptions } from '../../clock/fake-clock.ts';
import type { OperationRecord } from '../../operationexecutor/operation-executor.ts';
import type { EventRecorder, EventType, InvolvedObject } from '../../volume/events.ts';
import type { FeatureGates } from '../../volume/features.ts';
import type { Node, PersistentVolume, PersistentVolumeClaim, Pod, Volume } from '../../volume/k8s-types.ts';
import { ObjectNotFoundError, type VolumeKubeClient } from '../../volume/kube-client.ts';
import type { VolumePlugin } from '../../volume/plugins.ts';
import { FakeVolumePlugin } from '../../volume/testing/fake-volume-plugin.ts';
import { nodeName, type NodeName, type PodUID } from '../../volume/types.ts';
import type { SELinuxLabelTranslator } from '../../volume/util/selinux.ts';
import type { HostFs } from '../../volume/util/host-fs.ts';
import type { ActualStateOfWorld } from '../cache/actual-state-of-world.ts';
import type { DesiredStateOfWorld } from '../cache/desired-state-of-world.ts';
import type { NestedPendingOperations } from '../../operationexecutor/nested-pending-operations.ts';
import type { OperationExecutor } from '../../operationexecutor/operation-executor.ts';
import type { VolumePluginMgr } from '../../volume/plugins.ts';
import type { DesiredStateOfWorldPopulator } from '../populator/desired-state-of-world-populator.ts';
import type { Reconciler } from '../reconciler/reconciler.ts';
import { volumeManagerInternals } from '../internals.ts';
import { VolumeManager, type VolumeManagerOptions } from '../volume-manager.ts';

export const testNodeName: NodeName = nodeName('mynodename');

/** In-memory pods with kubelet-like lifecycle flags. */
export class FakePodSource {
  readonly pods = new Map<string, Pod>();
  /** Pods whose containers must stop (ShouldPodContainersBeTerminating). */
  readonly terminating = new Set<string>();
  /** Pods whose runtime is removed (ShouldPodRuntimeBeRemoved). */
  readonly removed = new Set<string>();
  ready = true;

  add(pod: Pod): void {
    this.pods.set(pod.metadata.uid ?? '', pod);
  }

  delete(uid: string): void {
    this.pods.delete(uid);
  }

  getPods(): Pod[] {
    return [...this.pods.values()];
  }

  getPodByUID(uid: PodUID): Pod | undefined {
    return this.pods.get(uid);
  }

  shouldPodContainersBeTerminating(uid: PodUID): boolean {
    return this.terminating.has(uid) || this.removed.has(uid) || !this.pods.has(uid);
  }

  shouldPodRuntimeBeRemoved(uid: PodUID): boolean {
    return this.removed.has(uid) || !this.pods.has(uid);
  }

  allReady(): boolean {
    return this.ready;
  }
}

/** A fake API: PVCs, PVs and this node, with switchable failures. */
export class FakeKubeClient implements VolumeKubeClient {
  readonly pvcs = new Map<string, PersistentVolumeClaim>();
  readonly pvs = new Map<string, PersistentVolume>();
  node: Node | null = null;
  failNodeGet = false;
  failClaims = false;
  /** When set, claim GETs reject with it (an API error: 500, timeout, 403…). */
  claimGetError: Error | null = null;
  nodeGets = 0;
  /** Whether getNode exists at all (false = standalone, no API server). */
  readonly getNode?: (name: NodeName) => Promise<Node>;

  constructor(withNode: boolean) {
    if (withNode) {
      this.getNode = (name: NodeName): Promise<Node> => {
        this.nodeGets++;
        if (this.failNodeGet || this.node === null) return Promise.reject(new ObjectNotFoundError('node', name));
        return Promise.resolve(structuredClone(this.node));
      };
    }
  }

  getPersistentVolumeClaim(namespace: string, name: string): Promise<PersistentVolumeClaim> {
    if (this.claimGetError !== null) return Promise.reject(this.claimGetError);
    const pvc = this.failClaims ? undefined : this.pvcs.get(`${namespace}/${name}`);
    return pvc === undefined ? Promise.reject(new ObjectNotFoundError('persistentvolumeclaims', name)) : Promise.resolve(structuredClone(pvc));
  }

  getPersistentVolume(name: string): Promise<PersistentVolume> {
    const pv = this.failClaims ? undefined : this.pvs.get(name);
    return pv === undefined ? Promise.reject(new ObjectNotFoundError('persistentvolumes', name)) : Promise.resolve(structuredClone(pv));
  }

  setVolumesAttached(entries: { name: string; devicePath: string }[]): void {
    this.node = { metadata: { name: testNodeName }, status: { volumesAttached: entries } };
  }
}

export interface RecordedEvent {
  object: InvolvedObject;
  type: EventType;
  reason: string;
  message: string;
}

export interface HarnessOptions {
  controllerAttachDetachEnabled?: boolean;
  /** Provide node status through the fake API (default true). */
  withApiServer?: boolean;
  plugins?: VolumePlugin[];
  fakePlugin?: FakeVolumePlugin;
  rootDir?: string;
  hostFs?: HostFs;
  featureGates?: FeatureGates;
  seLinuxTranslator?: SELinuxLabelTranslator;
  reconcilerLoopPeriodMs?: number;
  /** Reconstruction and force-cleanup metrics hooks. */
  metrics?: VolumeManagerOptions['metrics'];
  /** Also receives every finished-operation record (after `records` got it), e.g. agent metrics. */
  onOperationRecord?: (record: OperationRecord) => void;
  /** Plan-only mode (VolumeManagerOptions.planOnly). */
  planOnly?: boolean;
  /**
   * The plugins do real I/O (real plugins over a temp root): {@link Harness.until} and
   * {@link Harness.close} let running operations finish in real time before moving the fake
   * clock, so a slow machine cannot run the fake clock past a backoff or a limit while a mount is
   * still in flight. Leave off where a test wants an operation to hang on fake time.
   */
  operationsOnRealIo?: boolean;
}

export class Harness {
  readonly clock = new FakeClock();
  readonly pods = new FakePodSource();
  readonly kube: FakeKubeClient;
  readonly plugin: FakeVolumePlugin;
  readonly vm: VolumeManager;
  /**
   * The parts behind {@link vm} (private to it), so that tests can set up states and drive
   * passes by hand as the kubelet's tests do inside the package.
   */
  readonly dsw: DesiredStateOfWorld;
  readonly asw: ActualStateOfWorld;
  readonly pendingOperations: NestedPendingOperations;
  readonly operationExecutor: OperationExecutor;
  readonly populator: DesiredStateOfWorldPopulator;
  readonly reconciler: Reconciler;
  readonly pluginMgr: VolumePluginMgr;
  readonly events: RecordedEvent[] = [];
  readonly records: OperationRecord[] = [];
  readonly rootDir: string;
  private readonly ownsRoot: boolean;
  private readonly runOptions: RunUntilOptions;

  constructor(opts: HarnessOptions = {}) {
    this.kube = new FakeKubeClient(opts.withApiServer ?? true);
    this.plugin = opts.fakePlugin ?? new FakeVolumePlugin();
    this.ownsRoot = opts.rootDir === undefined;
    this.runOptions = opts.operationsOnRealIo === true ? { holdWhile: () => this.pendingOperations.list().some((o) => o.pending) } : {};
    this.rootDir = opts.rootDir ?? mkdtempSync(join(tmpdir(), 'vs-harness-'));
    const recorder: EventRecorder = {
      event: (object, type, reason, message) => {
        this.events.push({ object, type, reason, message });
      },
    };
    this.vm = new VolumeManager({
      nodeName: testNodeName,
      rootDir: this.rootDir,
      plugins: opts.plugins ?? [this.plugin],
      podManager: this.pods,
      podStateProvider: this.pods,
      sourcesReady: this.pods,
      kubeClient: this.kube,
      clock: this.clock,
      controllerAttachDetachEnabled: opts.controllerAttachDetachEnabled ?? false,
      recorder,
      reconcilerLoopPeriodMs: opts.reconcilerLoopPeriodMs ?? 100,
      onOperationRecord: (r) => {
        this.records.push(r);
        opts.onOperationRecord?.(r);
      },
      // Synchronous disk reads by default: fake time must not race the thread pool.
      hostFs: opts.hostFs ?? syncHostFs,
      ...(opts.featureGates !== undefined ? { featureGates: opts.featureGates } : {}),
      ...(opts.seLinuxTranslator !== undefined ? { seLinuxTranslator: opts.seLinuxTranslator } : {}),
      ...(opts.metrics !== undefined ? { metrics: opts.metrics } : {}),
      ...(opts.planOnly === true ? { planOnly: true } : {}),
    });
    const parts = volumeManagerInternals(this.vm);
    this.dsw = parts.dsw;
    this.asw = parts.asw;
    this.pendingOperations = parts.pendingOperations;
    this.operationExecutor = parts.operationExecutor;
    this.populator = parts.populator;
    this.reconciler = parts.reconciler;
    this.pluginMgr = parts.pluginMgr;
  }

  start(): void {
    this.vm.start();
  }

  /** Stops loops, lets running operations finish on fake time, removes the temp root. */
  async close(): Promise<void> {
    await this.vm.stop();
    await this.clock.runUntil(() => this.pendingOperations.list().every((o) => !o.pending), 600_000, 1_000, this.runOptions);
    if (this.ownsRoot) rmSync(this.rootDir, { recursive: true, force: true });
  }

  /** Advances fake time until `cond` holds (default limit: 60 s of fake time). */
  until(cond: () => boolean, limitMs = 60_000, stepMs = 10): Promise<void> {
    return this.clock.runUntil(cond, limitMs, stepMs, this.runOptions);
  }

  /**
   * Advances fake time until `promise` settles (default limit: 60 s of fake time) and returns its
   * outcome together with the fake time it took.
   */
  async settle<T>(promise: Promise<T>, limitMs = 60_000, stepMs = 10): Promise<{ result: PromiseSettledResult<T>; elapsedMs: number }> {
    const startedAt = this.clock.now();
    let result: PromiseSettledResult<T> | null = null;
    promise.then(
      (value) => {
        result = { status: 'fulfilled', value };
      },
      (reason: unknown) => {
        result = { status: 'rejected', reason };
      },
    );
    await this.until(() => result !== null, limitMs, stepMs);
    return { result: result as unknown as PromiseSettledResult<T>, elapsedMs: this.clock.now() - startedAt };
  }
}

/**
 * The real disk, read synchronously: reconstruction then finishes at the fake instant it starts,
 * instead of after however many fake-time steps the thread pool needs.
 */
export const syncHostFs: HostFs = {
  readDir(path) {
    try {
      const entries = readdirSync(path, { withFileTypes: true });
      return Promise.resolve(entries.map((e) => ({ name: e.name, isDirectory: e.isDirectory() || e.isSymbolicLink() })));
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  },
};

/**
 * A temp kubelet root with `pods/` and one directory per `pods/<path>` (e.g.
 * `pod1/volumes/fake-plugin/pvc-abcdef`), as the kubelet's reconstruction tests create it.
 * The caller removes it.
 */
export function makeKubeletDir(volumePaths: readonly string[]): string {
  const root = mkdtempSync(join(tmpdir(), 'vs-kubelet-'));
  mkdirSync(join(root, 'pods'), { recursive: true });
  for (const p of volumePaths) mkdirSync(join(root, 'pods', p), { recursive: true });
  return root;
}

/** The default pod: `pod1`/`pod1uid` with the given volumes, each mounted by its one container. */
export function makePod(volumes: Volume[], opts: { name?: string; uid?: string; namespace?: string; devices?: boolean } = {}): Pod {
  return {
    metadata: { name: opts.name ?? 'pod1', uid: opts.uid ?? 'pod1uid', namespace: opts.namespace ?? 'default' },
    spec: {
      nodeName: testNodeName,
      volumes,
      containers: [
        {
          name: 'c',
          ...(opts.devices === true
            ? { volumeDevices: volumes.map((v) => ({ name: v.name, devicePath: `/dev/${v.name}` })) }
            : { volumeMounts: volumes.map((v) => ({ name: v.name, mountPath: `/mnt/${v.name}` })) }),
        },
      ],
    },
  };
}

/** The inline GCE PD `volume-name` (PD `fake-device1`) of the kubelet fixtures. */
export function gcePdVolume(name = 'volume-name', pdName = 'fake-device1'): Volume {
  return { name, gcePersistentDisk: { pdName } };
}

/** A PV plus its bound PVC `pvc` in namespace `default`. */
export function pvWithClaim(
  pvName: string,
  opts: { capacity?: string; claimCapacity?: string; mode?: 'Filesystem' | 'Block'; accessModes?: PersistentVolume['spec']['accessModes']; gcePd?: string } = {},
): { pv: PersistentVolume; pvc: PersistentVolumeClaim } {
  const pv: PersistentVolume = {
    metadata: { name: pvName },
    spec: {
      capacity: { storage: opts.capacity ?? '10G' },
      accessModes: opts.accessModes ?? ['ReadWriteOnce'],
      volumeMode: opts.mode ?? 'Filesystem',
      claimRef: { namespace: 'default', name: 'pvc', uid: 'pvcuid' },
      ...(opts.gcePd !== undefined ? { gcePersistentDisk: { pdName: opts.gcePd } } : {}),
    },
  };
  const pvc: PersistentVolumeClaim = {
    metadata: { name: 'pvc', namespace: 'default', uid: 'pvcuid' },
    spec: { volumeName: pvName, accessModes: pv.spec.accessModes ?? [], volumeMode: opts.mode ?? 'Filesystem' },
    status: { phase: 'Bound', capacity: { storage: opts.claimCapacity ?? opts.capacity ?? '10G' } },
  };
  return { pv, pvc };
}
